"""Dapr as a state boundary: the Components a dev pod's Dapr sidecar loads, and the stores they address.

Why a check of its own: a Dapr app names no store in its pod. Its sidecar (`dapr.io/enabled: "true"`) loads every
Component (`dapr.io/v1alpha1`, kind Component) of its namespace that is unscoped or whose `scopes` list its app-id
(`dapr.io/app-id`, by default the workload's name), and the app reaches the state store, pub/sub broker, binding or
configuration store those Components address (`redisHost`, `brokers`, `connectionString`...). A dev copy that keeps
its app-id loads the baseline's Components: it writes the baseline's state (the key prefix is the app-id) and
competes with the baseline for its messages (the consumer group is the app-id). Nothing of that shows in the pod's
values, which the rest of the reach reads: this module reads the Components, for `checks.reach`.

Under an app-id of the lane's own (`copies.dapr_lane`), a state store keyed by the app-id (or the lane's copy,
keyed by its namespace) holds the lane's own keys: listed as shared on purpose. A pub/sub broker still carries
what the lane publishes to the baseline's topics, and a binding what it sends: named.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...core.references import Targets
from ...core.secrets_mask import excerpt
from ...core.stores import find_addresses
from ..model.dapr_apps import app_id, kind_of, loads, metadata_value
from ..model.records import Model

# (class, target, kind, sign, (object, container, field, value))
Hit = tuple[str, str, str, str, tuple[str, str | None, str, str]]


def reached(model: Model, pod: dict, baseline_app: str | None, namespace: str | None,
            found: list[tuple[dict, bool]], targets: Targets) -> Iterator[Hit]:
    """The stores the Components the dev pod `pod` loads address (`found`: each Component, and whether it is the
    lane's copy): a repository Service (by its key: a baseline store), else a host outside it; a Component whose
    address is not in its plain metadata (a Secret holds it) is named itself. `namespace`: where the dev pod runs
    (Components are namespaced: a flow namespace holds only the lane's copies)."""
    app = app_id(pod)
    if app is None:
        return
    obj = f"{pod.get('kind')}/{pod['metadata']['name']}"
    own_app = app != baseline_app
    for c, lane_copy in found:
        meta = c.get("metadata") or {}
        if (meta.get("namespace") or model.default_namespace) != namespace or not loads(c, app):
            continue
        kind = kind_of(c)
        name = str(meta.get("name", ""))
        sign = f"Dapr Component {name} ({kind}), which the sidecar of {obj} loads as app-id {app}"
        cls_of_store = _own_state(c, kind, lane_copy, own_app, app)
        if cls_of_store is None and kind.startswith("pubsub.") and (lane_copy or own_app):
            sign += "; its consumer group is the lane's, but what the lane publishes reaches the baseline's topics"
        elif cls_of_store is not None:
            sign += f"; {cls_of_store}"
        yield from _addresses(model, c, name, kind, sign, "shared" if cls_of_store else None, targets)


def _own_state(c: dict, kind: str, lane_copy: bool, own_app: bool, app: str) -> str | None:
    """Why the state store holds the lane's own keys, or None: a lane copy (keyed by the lane's app-id or
    namespace), or the baseline's Component keyed by the app-id, which is the lane's."""
    if not kind.startswith("state."):
        return None
    prefix = metadata_value(c, "keyPrefix")
    if lane_copy:
        by = "its namespace and app-id" if prefix == "namespace" else f"app-id {app}"
        return f"the lane's own copy: its keys are prefixed by {by}"
    if own_app and prefix in (None, "appid"):
        return f"its keys are prefixed by the lane's app-id {app}"
    return None


def _addresses(model: Model, c: dict, name: str, kind: str, sign: str, cls: str | None,
               targets: Targets) -> Iterator[Hit]:
    spec = c.get("spec") if isinstance(c.get("spec"), dict) else {}
    named = False
    for item in spec.get("metadata") or []:
        if not isinstance(item, dict) or not isinstance(item.get("value"), str):
            continue
        key, value = str(item.get("name", "")), item["value"]
        for address in find_addresses(value, key):
            named = True
            service = targets.resolve(address.host)
            where = (f"Component/{name}", None, f"metadata {key}", excerpt(value, address.start))
            if service is not None:  # a repository Service: the baseline's store, or shared on purpose
                node = model.services[service.key]
                yield cls or ("shared" if node.shared else "baseline-store"), node.ref, address.kind, sign, where
            else:
                target = f"{address.host}:{address.port}" if address.port else address.host
                yield cls or "outside-store", target, address.kind, sign, where
    if not named and kind.split(".")[0] in ("state", "pubsub", "bindings", "configuration"):
        yield cls or "outside-store", f"Component/{name}", kind, sign + " (its address is not in its plain " \
            "metadata)", (f"Component/{name}", None, "spec.metadata", "(not shown)")
