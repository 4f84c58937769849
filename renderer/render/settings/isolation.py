"""Where a flow's dev copies live and what they are called: the isolation mode.

- `suffix` (the default): `<name>-<flowId>` beside the baseline, in its namespace; pod label values that
  a selector uses get the suffix too, and references to services with a dev version are rewritten.
- `namespace`: the same names and labels (plus `devlane.dev/flow`) in a flow namespace per baseline
  namespace (`namespaceTemplate`, default `{namespace}-{flow}`); every baseline Service of that namespace
  without a dev copy gets an `ExternalName` alias there, so a short name resolves by DNS alone to the
  dev copy or to the baseline, even one compiled into an image. Only references that name a namespace
  (`svc.ns`, `svc.ns.svc.cluster.local`) are rewritten, to the flow namespace.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ...core.names import MAX_NAME, dev_name, suffixed
from .repo_config import Isolation

DEFAULT_TEMPLATE = "{namespace}-{flow}"


@dataclass(frozen=True)
class Lane:
    isolation: Isolation = "suffix"
    template: str = DEFAULT_TEMPLATE
    cluster_domain: str = "cluster.local"
    mirror: str | None = None  # the replicator that fills mirrors of Secrets dev pods read (`secrets.mirror`)

    @property
    def by_namespace(self) -> bool:
        return self.isolation == "namespace"

    def name(self, name: str, version: str) -> str:
        """A dev copy's name: the baseline's own in a flow namespace, else `<name>-<flowId>`."""
        return name if self.by_namespace else dev_name(name, version)

    def namespace(self, namespace: str | None, version: str) -> str | None:
        """A dev copy's namespace: the flow namespace of its baseline's, else the baseline's own."""
        if not self.by_namespace or namespace is None:
            return namespace
        return flow_namespace(self.template, namespace, version)


def flow_namespace(template: str, namespace: str, version: str) -> str:
    """`template` filled in, a DNS label of at most 63 characters: past that, shortened with a stable hash
    (keeping the flow id at the end when the template ends with it, as dev names do)."""
    full = template.format(namespace=namespace, flow=version)
    if len(full) <= MAX_NAME:
        return full
    if template.endswith("-{flow}"):
        return suffixed(template[: -len("-{flow}")].format(namespace=namespace, flow=version), version)
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[: MAX_NAME - len(digest) - 1].rstrip('-')}-{digest}"
