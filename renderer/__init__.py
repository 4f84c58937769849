"""devlane: render per-pull-request dev lanes from Kardinal-annotated manifests, offline.

The library API is `renderer.api` (its names are also reachable here, and `__version__`); all of
them are imported on first use, so that plugin processes importing `renderer.sdk` load nothing
else of devlane.
"""

from typing import Any

__all__ = ["DevlaneError", "FlowRequest", "Options", "Problem", "UsageError", "__version__", "delete", "lint",
           "plan", "provision", "render", "resolve"]
_ERRORS = ("DevlaneError", "Problem", "UsageError")


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .core.version import VERSION

        return VERSION
    if name in _ERRORS:
        from . import errors

        return getattr(errors, name)
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
