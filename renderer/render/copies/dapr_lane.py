"""A lane's own Dapr (`.devlane.yaml` `dapr: {isolation: app-id}`): its dev copies run under app-ids of the lane's
own, and the lane gets copies of the Components they load.

Why: a dev copy that keeps the baseline's app-id loads the baseline's Components and shares their state (Dapr
prefixes state keys with the app-id) and their messages (the consumer group is the app-id). Dapr keys both by the
app-id, so a lane app-id is most of the isolation:

- suffix isolation (one namespace): the dev copy's `dapr.io/app-id` becomes `<app-id>-<flowId>`; each Component a
  dev copy loaded is copied as `<name>-<flowId>`, scoped to the lane's app-ids, its state keyed by the app-id
  (`keyPrefix: appid`) and its pub/sub consumer group the app-id (`consumerID: {appID}`); a dev pod's env value
  that is a dev copy's app-id (`ORDERS_APP_ID: orders`) or a copied Component's name (`STATESTORE: statestore`)
  becomes the lane's, so callers in the lane invoke the lane's apps.
- namespace isolation: app-ids stay (a namespace is Dapr's own boundary between them); the Components are copied
  into the flow namespace under their names, state keyed by namespace and app-id (`keyPrefix: namespace`), the
  consumer group `{namespace}-{appID}` (Dapr fills both in when the sidecar starts).

What Dapr cannot isolate by configuration, devlane does not claim: the topics a lane publishes to are the
baseline's (they are in the app's code), and bindings and other stores address what they address; the reach
(`checks.dapr`) names them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

from ...core.k8s import all_containers, pod_template
from ...core.names import flow_labels
from ..model.dapr_apps import APP_ID, app_id, kind_of, loads
from ..model.records import Model
from .dev_set import DevObject, DevSet, Rewrite

STATE_KEY = {False: "appid", True: "namespace"}  # keyPrefix, by namespace isolation
CONSUMER = {False: "{appID}", True: "{namespace}-{appID}"}  # consumerID, by namespace isolation


def isolate(model: Model, dev: DevSet, mode: str) -> DevSet:
    """`dev` with its Dapr apps under the lane's app-ids and the Components they load copied (mode `app-id`), or
    as it is (mode `none`)."""
    if mode != "app-id":
        return dev
    found = model.dapr_components
    if not found:
        return dev
    by_ns = dev.lane.by_namespace
    renamed: dict[str, str] = {}  # baseline app-id -> the lane's
    loaders: dict[int, set[str]] = {}  # id(component) -> the lane app-ids that load it
    version_of: dict[int, str] = {}
    for dw in dev.unique_workloads():
        app = app_id(dw.baseline.obj)
        if app is None:
            continue
        lane_app = app if by_ns else dev.lane.name(app, dw.version)
        renamed[app] = lane_app
        pod_template(dw.obj).setdefault("metadata", {}).setdefault("annotations", {})[APP_ID] = lane_app
        home = model.namespace_of(dw.baseline)
        for c in found:
            if model.namespace_of(c) == home and loads(c.obj, app):
                loaders.setdefault(id(c), set()).add(lane_app)
                version_of.setdefault(id(c), dw.version)
    copies = [_copy(c, dev, sorted(loaders[id(c)]), version_of[id(c)], model.namespace_of(c))
              for c in found if id(c) in loaders]
    names = {} if by_ns else {c.name: dev.lane.name(c.name, version_of[id(c)]) for c in found
                              if id(c) in loaders}
    rewrites = [] if by_ns else _rewrite_env(dev, {**renamed, **names})
    return replace(dev, objects=[*dev.objects, *copies], rewrites=[*dev.rewrites, *rewrites])


def report_unloaded(model: Model, dev: DevSet, mode: str, warn: Callable[..., None]) -> None:
    """In a flow namespace without the lane's own Dapr (mode `none`), each dev sidecar finds none of the Components
    it loads at home (Components are namespaced): its state, pub/sub and binding calls fail. Named, with the fix."""
    if mode == "app-id" or not dev.lane.by_namespace:
        return
    found = model.dapr_components
    for dw in dev.unique_workloads() if found else []:
        app = app_id(dw.baseline.obj)
        home = model.namespace_of(dw.baseline)
        missing = sorted(c.name for c in found if app is not None and model.namespace_of(c) == home
                         and loads(c.obj, app))
        if missing:
            warn(f"dev workload {dw.name} in {dw.namespace} runs a Dapr sidecar (app-id {app}) that loads Component"
                 f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} in {home}: Components are namespaced, so "
                 f"the flow namespace has none and its Dapr calls to them fail", dw.baseline.where(),
                 hint="set `dapr: {isolation: app-id}` in .devlane.yaml: devlane then copies the Components into the "
                      "flow namespace, state keyed by namespace and pub/sub in the lane's consumer group",
                 code="namespace-missing")


def _copy(component, dev: DevSet, lane_apps: list[str], version: str, namespace: str | None) -> DevObject:
    by_ns = dev.lane.by_namespace
    obj = copy.deepcopy(component.obj)
    meta = obj.setdefault("metadata", {})
    for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "ownerReferences"):
        meta.pop(key, None)
    meta["name"] = component.name if by_ns else dev.lane.name(component.name, version)
    if namespace:
        meta["namespace"] = dev.lane.namespace(namespace, version)
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(version)}
    if not by_ns:
        obj["scopes"] = lane_apps  # the lane's apps only: the baseline's never load the copy
    kind = kind_of(obj).split(".")[0]
    if kind == "state":
        _set(obj, "keyPrefix", STATE_KEY[by_ns])
    elif kind == "pubsub":
        _set(obj, "consumerID", CONSUMER[by_ns])
    return DevObject(component, obj, version)


def _set(obj: dict, name: str, value: str) -> None:
    spec = obj.setdefault("spec", {})
    items = [i for i in spec.get("metadata") or [] if not (isinstance(i, dict) and i.get("name") == name)]
    spec["metadata"] = [*items, {"name": name, "value": value}]


def _rewrite_env(dev: DevSet, names: dict[str, str]) -> list[Rewrite]:
    """A dev pod's env value that is exactly a renamed app-id or Component name becomes the lane's (a value that
    merely contains one is left: an app-id is a plain word, often part of others)."""
    done = []
    for dw in dev.unique_workloads():
        for c in all_containers(pod_template(dw.obj).get("spec") or {}):
            for e in c.get("env") or []:
                value = e.get("value") if isinstance(e, dict) else None
                if isinstance(value, str) and value in names and names[value] != value:
                    e["value"] = names[value]
                    done.append(Rewrite(f"{dw.obj['kind']}/{dw.name}", str(c.get("name")), "env",
                                        str(e.get("name")), value, names[value]))
    return done
