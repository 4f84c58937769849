"""Dapr as a state boundary: the Components a dev pod's Dapr sidecar loads, and the stores they address.

Why a check of its own: a Dapr app names no store in its pod. Its sidecar (`dapr.io/enabled: "true"`) loads every
Component (`dapr.io/v1alpha1`, kind Component) of its namespace that is unscoped or whose `scopes` list its app-id
(`dapr.io/app-id`, by default the workload's name), and the app reaches the state store, pub/sub broker, binding or
configuration store those Components address (`redisHost`, `brokers`, `connectionString`...). A dev copy keeps its
app-id, so it loads the baseline's Components: it writes the baseline's state (the key prefix is the app-id) and
competes with the baseline for its messages (the consumer group is the app-id). Nothing of that shows in the
pod's values, which the rest of the reach reads: this module reads the Components, for `checks.reach`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...core.references import Targets
from ...core.secrets_mask import excerpt
from ...core.stores import find_addresses
from ..copies.dev_set import DevWorkload
from ..inputs.document import Document

ENABLED, APP_ID = "dapr.io/enabled", "dapr.io/app-id"
# (class, target, kind, sign, (object, container, field, value))
Hit = tuple[str, str, str, str, tuple[str, str | None, str, str]]


def components(documents: list[Document]) -> list[Document]:
    """The repository's Dapr Components."""
    return [d for d in documents if d.kind == "Component" and d.api_version.startswith("dapr.io/")]


def app_id(dw: DevWorkload) -> str | None:
    """The baseline app-id of the dev pod's Dapr sidecar, or None without one."""
    meta = ((dw.baseline.obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
    ann = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    if str(ann.get(ENABLED, "")).lower() != "true":
        return None
    return str(ann.get(APP_ID) or dw.baseline.name)


def loads(component: Document, app: str) -> bool:
    """Whether a sidecar with app-id `app` loads `component` (unscoped, or scoped to it)."""
    scopes = component.obj.get("scopes")
    return not scopes or (isinstance(scopes, list) and app in [str(s) for s in scopes])


def reached(dw: DevWorkload, namespace: str | None, found: list[Document], default_ns: str | None,
            targets: Targets) -> Iterator[Hit]:
    """The stores the baseline Components the dev pod `dw` loads address: a repository Service (a baseline store),
    else a host outside it; a Component whose address is not in its plain metadata (a Secret holds it) is named
    itself. `namespace`: where the dev pod runs (Components are namespaced: a lane namespace holds none of the
    baseline's)."""
    app = app_id(dw)
    if app is None:
        return
    obj = f"{dw.obj.get('kind')}/{dw.name}"
    for c in found:
        if (c.namespace or default_ns) != namespace or not loads(c, app):
            continue
        spec = c.obj.get("spec") if isinstance(c.obj.get("spec"), dict) else {}
        kind = str(spec.get("type") or "component")
        sign = f"Dapr Component {c.name} ({kind}), which the sidecar of {obj} loads as app-id {app}"
        named = False
        for item in spec.get("metadata") or []:
            if not isinstance(item, dict) or not isinstance(item.get("value"), str):
                continue
            key, value = str(item.get("name", "")), item["value"]
            for address in find_addresses(value, key):
                named = True
                service = targets.resolve(address.host)
                where = (c.ref, None, f"metadata {key}", excerpt(value, address.start))
                if service is not None:  # the Service's key: the caller names it as the model does
                    yield "baseline-store", service.key, address.kind, sign, where
                else:
                    target = f"{address.host}:{address.port}" if address.port else address.host
                    yield "outside-store", target, address.kind, sign, where
        if not named and kind.split(".")[0] in ("state", "pubsub", "bindings", "configuration"):
            yield "outside-store", f"Component/{c.name}", kind, sign + " (its address is not in its plain " \
                "metadata)", (c.ref, None, "spec.metadata", "(not shown)")
