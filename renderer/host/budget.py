"""Time limits: each plugin call's own limit, inside the whole command's `--timeout` budget."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

from ..errors import DevlaneError, PluginTimeout, RenderTimeout, Where, fail
from .manifest import Manifest

DEFAULT_PLUGIN_TIMEOUT = 60.0


def default_jobs() -> int:
    """Plugin instances run at once when `--jobs` is not given: the CPUs, at most 8."""
    return min(8, os.cpu_count() or 2)


@dataclass(frozen=True)
class Budget:
    """Per-call limits inside a whole-command budget (`--timeout`), counted from `started`."""

    flag: float | None = None  # --plugin-timeout: overrides every plugin's own limit
    config: float | None = None  # .devlane.yaml plugins.timeoutSeconds
    total: float | None = None  # --timeout
    started: float = field(default_factory=time.monotonic)
    by: str = "--timeout"  # what set `total` (the Argo CD CMP: ARGOCD_EXEC_TIMEOUT)

    def limit(self, manifest: Manifest) -> tuple[float, str]:
        """A call's own limit and who set it (flag, plugin.yaml, .devlane.yaml or the default)."""
        if self.flag:
            return float(self.flag), "--plugin-timeout"
        if manifest.timeout_seconds:
            return float(manifest.timeout_seconds), "plugin.yaml"
        if self.config:
            return float(self.config), ".devlane.yaml"
        return DEFAULT_PLUGIN_TIMEOUT, "default"

    def for_call(self, manifest: Manifest, where: Where) -> float:
        limit = self.limit(manifest)[0]
        left = self.left()
        if left <= 0:
            raise fail(f"timed out after {self.total:g} s before this plugin ran: the whole command's budget "
                       f"({self.by}) ran out", where, f"raise {self.by}, or make the plugins faster", "render-timeout",
                       RenderTimeout)
        return float(min(limit, left))

    def explain(self, exc: DevlaneError) -> DevlaneError:
        """A call that timed out as the whole budget ran out says so: --plugin-timeout would not help."""
        if not isinstance(exc, PluginTimeout) or self.total is None or self.left() > 0:
            return exc
        why = (f" (the rest of the {self.by} budget of {self.total:g} s for the whole render: the render timed out "
               f"after {self.total:g} s)")
        hint = f"raise {self.by}, or make the plugins faster"
        return exc.with_problems([replace(p, message=p.message + why, hint=hint) for p in exc.problems])

    def left(self) -> float:
        """Seconds left of the whole budget (infinite without `--timeout`)."""
        return float("inf") if self.total is None else self.total - (time.monotonic() - self.started)
