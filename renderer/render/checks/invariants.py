"""Isolation invariants, checked on every render; a violation is an error, never a warning.

1. No baseline selector (Service, or workload matchLabels/matchExpressions) matches a dev pod.
2. No reference a dev pod inherited (env, command, args, init containers, the ConfigMaps it reads)
   still names a baseline service that has a dev version (what counts as a reference is defined
   once, in `core.references`, and where a pod reads one, in `model.address_reads`).
3. Dev objects never reuse a baseline object's name, and never collide with each other.
4. No dev pod mounts a baseline PersistentVolumeClaim unless its Service says `devlane.dev/volume: shared`.
5. Isolation `namespace` (`check_lane`): no rendered object in a baseline namespace; every dependency a dev pod
   names by a short name resolves, in its flow namespace, to a dev copy or an alias; no alias points at a
   service that has a dev version; every ConfigMap and claim of the repository a dev pod uses is beside it.

All of them run on the dev copies before plugins (`before_plugins`); 1, 3 and 4 run again on the final
object set, after plugins and post-render steps (`after_plugins`), naming the plugin that added or last
changed an offending object (each plugin call was already checked by `plugins.output_policy`).

And the wiring check: every dependency edge between two services with dev versions is wired (a
reference in the dev caller points at the dev callee) or warned (an error under `policy.strict`).
"""

from __future__ import annotations

from collections.abc import Iterator

from ...core.k8s import (
    CLUSTER_SCOPED,
    all_containers,
    identity,
    namespace_key,
    pod_spec,
)
from ...core.names import DEVLANE
from ...core.references import Target, Targets
from ...core.secrets_mask import excerpt
from ...errors import Diagnostics, Problem, Where
from ..copies.clone import VOLUME, volume_mode
from ..copies.dev_set import DevSet, DevWorkload
from ..model.address_reads import Slot, config_reads, data_refs, pod_slots, pod_values
from ..model.port_protocols import routed_by_header
from ..model.records import Model
from ..model.repo_index import claim_mounts, pod_items


def check_selectors(model: Model, dev: DevSet, diags: Diagnostics) -> None:
    items = [(dw.namespace, dw.pod_labels, dw) for dw in dev.unique_workloads()]
    for doc, dw in model.index.selector_index.hits(items):
        diags.error(
            f"isolation violated: the selector of baseline {doc.ref} matches the pods of dev workload {dw.name}",
            doc.where(),
            hint="report this as a devlane bug; meanwhile add a distinguishing label to the selector",
            code="isolation",
        )


def _found(model: Model, dev: DevSet, dw: DevWorkload, targets: Targets) -> Iterator[str]:
    """Where the dev pod reads a reference to one of `targets`: its own spec and the ConfigMaps it reads. Lazily,
    each place masked only when it is asked for: the wiring check needs only whether there is one (at 1,000 dev
    copies, masking every address it finds to throw the text away is most of a render's checks)."""
    skip = frozenset().union(*(n.no_rewrite for n in model.nodes_on(dw.baseline)))
    for slot in pod_slots(dw.pod_spec, targets, skip):
        if not _own_address(dev, dw, slot):
            yield f"{slot.where} = {excerpt(slot.value, slot.refs[0].start)!r}"
    for read in config_reads(dw.pod_spec):
        if read.kind != "ConfigMap":
            continue
        obj = dev.find("ConfigMap", dw.namespace, read.name)
        if obj is None:
            doc = model.find("ConfigMap", dw.namespace, read.name)
            obj = doc.obj if doc is not None else None
        if obj is not None:
            for key, refs in data_refs(obj, targets, None, skip).items():
                if not _own(dev, dw, f"ConfigMap {read.name} key {key}", refs):
                    yield f"ConfigMap {read.name} key {key}"


def _own_address(dev: DevSet, dw: DevWorkload, slot: Slot) -> bool:
    return _own(dev, dw, slot.where, slot.refs)


def _own(dev: DevSet, dw: DevWorkload, where: str, refs: list) -> bool:
    """The pod's own address, kept on purpose while it registers with a shared registry (and nothing else)."""
    return (dw.namespace, dw.name, where) in dev.own_addresses and all(r.target.key == dw.service for r in refs)


def check_references(model: Model, dev: DevSet, diags: Diagnostics) -> None:
    """Run after rewriting and before plugins: inherited references must point at dev Services."""
    for dw in dev.unique_workloads():
        baseline = dev.reference_targets(model, dw.version, dw.namespace)
        if not baseline:
            continue
        for where in _found(model, dev, dw, baseline):
            diags.error(
                f"isolation violated: dev workload {dw.name} still reads the address of a baseline service that "
                f"has a dev version ({where})",
                dw.baseline.where(),
                hint="list the variable or key in devlane.dev/no-rewrite if it is not an address",
                code="isolation",
            )


def check_volumes(model: Model, dev: DevSet, diags: Diagnostics) -> None:
    """No dev pod mounts a baseline PersistentVolumeClaim, unless shared on purpose."""
    claims = {(model.namespace_of(d), d.name) for d in model.documents if d.kind == "PersistentVolumeClaim"}
    for dw in dev.unique_workloads():
        nodes = model.nodes_on(dw.baseline)
        for vol in dw.pod_spec.get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName") if isinstance(vol, dict) else None
            if claim and (dw.namespace, claim) in claims and volume_mode(nodes, claim, Diagnostics())[0] != "shared":
                diags.error(f"isolation violated: dev workload {dw.name} mounts the baseline PersistentVolumeClaim "
                            f"{claim}", dw.baseline.where(), hint=f"annotate its Service with {VOLUME}: shared to "
                            "share the volume on purpose", code="isolation")


def check_wiring(model: Model, dev: DevSet, diags: Diagnostics, strict: bool = False) -> None:
    """Every dependency edge between two dev versions must be wired (found) or warned (strict: an error)."""
    for key in sorted(dev.workloads):
        dw, node = dev.workloads[key], model.services[key]
        for dep, _port in node.dependencies:
            callee = model.services.get(dep)
            if dep not in dev.dev_names or callee is None or not callee.is_service or dep not in dev.workloads:
                continue
            if dev.versions.get(dep) != dw.version and dev.versions.get(dep) != "shared":
                continue
            if dev.lane.by_namespace and callee.namespace == node.namespace:
                continue  # a short name resolves to the dev copy in the flow namespace: wired by DNS
            if dep in dev.by_header:
                continue  # the mesh routes it by the flow header (proved by `route_proof`)
            callee_ns = dev.lane.namespace(callee.namespace, dev.versions[dep])  # where its dev copy lives
            wired = Targets([Target(dep, dev.dev_names[dep], callee_ns, callee.port_names)], dw.namespace)
            if next(_found(model, dev, dw, wired), None) is not None:
                continue
            looked = ", ".join(f"ConfigMap {r.name}" for r in config_reads(dw.pod_spec) if r.kind == "ConfigMap")
            (diags.error if strict else diags.warn)(
                f"edge {node.ref} -> {callee.ref} is not wired: dev workload {dw.name} has no reference to "
                f"{dev.dev_names[dep]} (looked in env, command, args{', ' + looked if looked else ''}), so it "
                f"probably still calls the baseline {callee.name}: the address is hard-coded in the image or "
                "comes from somewhere devlane cannot see",
                node.doc.where(),
                hint=f"pass the address of {callee.name} through env or a ConfigMap; or use --isolation namespace "
                "(short names then resolve to the dev copies by DNS) or a mesh routing mode (--routing "
                "gateway-api|istio)",
                code="unwired",
            )


def check_names(model: Model, objects: list[dict], diags: Diagnostics, owners: dict | None = None) -> None:
    """Dev objects never reuse a baseline object's name nor each other's; `owners` names the plugin that
    added or last changed an object."""
    baseline = {(d.kind, namespace_key(d.kind, model.namespace_of(d)), d.name): d for d in model.documents}
    seen: set[tuple] = set()
    for obj in objects:
        key = identity(obj, model.default_namespace)
        kind, _, name = key
        owner = (owners or {}).get(key)
        by = f" (added or changed by plugin {owner})" if owner else ""
        if key in baseline:
            diags.error(f"isolation violated: dev {kind}/{name}{by} reuses the name of a baseline object",
                        Where(object=f"{kind}/{name}", plugin=owner) if owner else baseline[key].where(),
                        hint="rename the object for the flow (<name>-<flowId>)" if owner else
                        "rename the baseline object or pick another flow id", code="isolation")
        if key in seen:
            diags.error(f"two rendered objects are both {kind}/{name}{by}", Where(plugin=owner), code="duplicate")
        seen.add(key)


def after_plugins(model: Model, dev: DevSet, objects: list[dict], owners: dict) -> list[Problem]:
    """The invariants again, on the final object set (the dev copies as plugins and post-render steps left
    them, and what those added): no baseline selector matches a pod, no pod mounts a baseline claim that its
    dev copy did not mount on purpose (`devlane.dev/volume: shared`), no name is reused. A violation names
    the plugin that added or last changed the object.

    References are not checked again: rewriting happens before plugins, and what a plugin changes in a pod
    spec is final (a Redis write overlay reads the baseline Redis on purpose)."""
    diags = Diagnostics()
    default = model.default_namespace

    def where(obj: dict) -> tuple[str, Where | None]:
        key = identity(obj, default)
        owner = owners.get(key)
        return (f" (added or changed by plugin {owner})" if owner else "",
                Where(object=f"{key[0]}/{key[2]}", plugin=owner) if owner else None)

    for doc, obj in model.index.selector_index.hits(pod_items(objects, default)):
        by, at = where(obj)
        diags.error(f"isolation violated: the selector of baseline {doc.ref} matches the pods of "
                    f"{obj['kind']}/{obj['metadata']['name']}{by}", at or doc.where(),
                    hint="give the pods labels no baseline selector uses" if at else
                    "report this as a devlane bug; meanwhile add a distinguishing label to the selector",
                    code="isolation")
    claims = model.index.claims
    shared = {(identity(dw.obj, default), c) for dw in dev.unique_workloads()
              for c in claim_mounts(dw.obj, default, claims)}
    for obj in objects:
        for claim in claim_mounts(obj, default, claims):
            if (identity(obj, default), claim) not in shared:
                by, at = where(obj)
                diags.error(f"isolation violated: {obj['kind']}/{obj['metadata']['name']}{by} mounts the baseline "
                            f"PersistentVolumeClaim {claim}", at, hint="give the pods a claim of their own",
                            code="isolation")
    check_names(model, objects, diags, owners)
    check_lane(model, dev, objects, diags, owners)
    return diags.problems


def _strings(spec: dict) -> dict[tuple[str, str], str]:
    """(container, slot) -> value of every env value, command and args entry of a pod spec."""
    return {(container, slot): value for container, slot, _, value in pod_values(spec)}


def unpinned_images(before: DevSet, after: DevSet, instances: list[tuple[str, list[str]]],
                    strict: bool = False) -> list[Problem]:
    """After plugins: an image a plugin set on a dev pod by tag (`kurtosistech/redis-proxy-overlay:latest`), not
    by digest. A tag can move under a running lane, so a lane would not be what was reviewed: a warning, refused
    under strict. Images devlane set (a flow's target, `--service NAME=IMAGE`) are the user's and not checked."""
    diags = Diagnostics()
    for instance, dependents in instances:
        for dependent in dependents:
            old, new = before.workloads.get(dependent), after.workloads.get(dependent)
            if old is None or new is None:
                continue
            had = {c.get("name"): c.get("image") for c in all_containers(old.pod_spec)}
            for c in all_containers(new.pod_spec):
                image = str(c.get("image") or "")
                if image and had.get(c.get("name")) != image and "@" not in image:
                    (diags.error if strict else diags.warn)(
                        f"plugin instance {instance} set image {image} on container {c.get('name')} of "
                        f"{new.obj['kind']}/{new.name}, which is not pinned by digest: the tag can move under a "
                        "running lane", Where(object=f"{new.obj['kind']}/{new.name}", plugin=instance),
                        hint=f"pin it: set the plugin's image arg to {_repository(image)}@sha256:<digest> "
                             f"(`crane digest {image}` resolves it)", code="unpinned-image")
    return diags.problems


def _repository(image: str) -> str:
    """The image reference without its tag (`repo/name:tag` -> `repo/name`; a registry's port is kept)."""
    head, _, last = image.rpartition("/")
    return f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]


def external_addresses(model: Model, dev: DevSet, instances: list[tuple[str, list[str]]],
                       strict: bool = False) -> list[Problem]:
    """After plugins: the plugin of an external service ran for a dependent, yet the dependent's dev version
    still carries, unchanged from its baseline, a value naming the external's own address (its ExternalName
    host), e.g. a DATABASE_URL the plugin did not set because it wrote another variable. That dev version
    would reach the baseline's database, queue or API: devlane cannot prove otherwise, so it says so.
    `instances`: (plugin instance, dependents) of the calls that ran."""
    diags = Diagnostics()
    for instance, dependents in instances:
        node = model.services.get(instance)
        host = str((node.doc.obj.get("spec") or {}).get("externalName") or "").lower().rstrip(".") \
            if node is not None and node.external else ""
        if not host:
            continue
        for dependent in dependents:
            dw = dev.workloads.get(dependent)
            if dw is None:
                continue
            before = _strings(pod_spec(dw.baseline.obj))
            for (container, slot), value in sorted(_strings(dw.pod_spec).items()):
                if host in value.lower() and before.get((container, slot)) == value:
                    (diags.error if strict else diags.warn)(
                        f"dev workload {dw.name} still names {host}, the address of external service {node.name}, "
                        f"in container {container} {slot}, after plugin instance {instance} ran: the dev version "
                        f"may reach the baseline's {node.name}",
                        Where(object=f"{dw.obj['kind']}/{dw.name}", plugin=instance),
                        hint=f"have the plugin set this value (the built-ins take the variable's name as an arg, "
                        f"e.g. env_var or *_env), or stop passing {host} to the app here",
                        code="external-reached",
                    )
    return diags.problems


def check_lane(model: Model, dev: DevSet, objects: list[dict], diags: Diagnostics, owners: dict | None = None) -> None:
    """Isolation `namespace`, on the final object set (what plugins added included)."""
    if not dev.lane.by_namespace:
        return
    flow_namespaces = set(dev.namespaces.values())
    present: set[tuple[str, str | None, str]] = set()
    for obj in objects:
        kind, ns, name = identity(obj)
        present.add((kind, ns, name))
        owner = (owners or {}).get(identity(obj, model.default_namespace))
        at = Where(object=f"{kind}/{name}", plugin=owner)
        if (kind == "Namespace" and name not in flow_namespaces) or (kind not in CLUSTER_SCOPED and ns not in \
                flow_namespaces):
            diags.error(f"isolation violated: {kind}/{name} is rendered in namespace {ns or '(none)'}, outside the "
                        f"flow's namespaces ({', '.join(sorted(flow_namespaces))})", at,
                        hint="plugins add objects to the dev workload's namespace (leave metadata.namespace unset)",
                        code="isolation")
        alias = ((obj.get("metadata") or {}).get("annotations") or {}).get(DEVLANE + "alias-of")
        if kind == "Service" and alias and tuple(alias.split("/", 1)) in dev.renamed:
            diags.error(f"isolation violated: alias {ns}/{name} points at the baseline {alias}, which has a dev "
                        "version in the flow", at, hint="report this as a devlane bug", code="isolation")
    for dw in dev.unique_workloads():
        home = model.namespace_of(dw.baseline)
        for node in model.nodes_on(dw.baseline):
            for dep, _port in node.dependencies:
                callee = model.services.get(dep)
                if callee is None or not callee.is_service or model.namespace_of(callee.doc) != home:
                    continue
                if ("Service", dw.namespace, callee.name) not in present:
                    diags.error(f"isolation violated: dev workload {dw.namespace}/{dw.name} depends on {callee.name}, "
                                f"which resolves to nothing in {dw.namespace} (neither a dev copy nor an alias)",
                                dw.baseline.where(), hint="report this as a devlane bug", code="isolation")
        for read in config_reads(dw.pod_spec):
            if read.kind == "ConfigMap" and model.find("ConfigMap", home, read.name) is not None and \
                    ("ConfigMap", dw.namespace, read.name) not in present:
                diags.error(f"isolation violated: dev workload {dw.namespace}/{dw.name} reads ConfigMap {read.name}, "
                            f"which is not in {dw.namespace}", dw.baseline.where(),
                            hint="report this as a devlane bug", code="isolation")


def before_plugins(model: Model, dev: DevSet, strict: bool = False) -> list[Problem]:
    """The invariants on the dev copies as cloned: what a plugin returns afterwards is final."""
    diags = Diagnostics()
    check_references(model, dev, diags)
    check_selectors(model, dev, diags)
    check_volumes(model, dev, diags)
    check_wiring(model, dev, diags, strict)
    return diags.problems


def flow_risks(model: Model) -> list[Problem]:
    """What a render fails on once a flow needs the service (for `lint`, which renders no flow)."""
    diags = Diagnostics()
    for key in sorted(model.services):
        node = model.services[key]
        if node.ambiguous:
            names = ", ".join(sorted(w.doc.ref for w in node.ambiguous))
            diags.warn(f"selector of {node.ref} matches {len(node.ambiguous)} workloads ({names}): a flow that needs "
                       f"its dev version fails", node.doc.where(),
                       hint="pick one with the annotation devlane.dev/workload: NAME, or narrow the selector",
                       code="ambiguous-workload")
        spec = node.workload.pod_template.get("spec") or {} if node.workload else {}
        for vol in spec.get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName") if isinstance(vol, dict) else None
            if (isinstance(claim, str) and model.find("PersistentVolumeClaim", node.namespace, claim) is None
                    and volume_mode(model.nodes_on(node.workload.doc), claim, diags)[0] == "copy"):
                diags.warn(f"{node.workload.doc.ref} mounts PersistentVolumeClaim {claim}, which is not in the "
                           f"repository: a flow that gives {node.ref} a dev version fails", node.doc.where(),
                           hint=f"add the claim to the repository, or annotate {node.ref} with {VOLUME}: emptyDir "
                           "(or shared)", code="volume")
    return diags.problems


def unwirable_edges(model: Model, on_mesh: bool = False) -> list[Problem]:
    """Dependency edges whose caller reads no address of the callee (env, command, args, its ConfigMaps): the
    address is compiled into the image, so suffix isolation can never rewrite it; `lint` suggests namespace
    isolation, where the short name resolves to the dev copy by DNS. On a mesh an HTTP or gRPC callee is reached
    by the flow header, whatever address the caller uses, so only TCP callees count (and a mesh cannot be
    combined with namespace isolation)."""
    diags = Diagnostics()
    for key in sorted(model.services):
        node = model.services[key]
        if node.workload is None:
            continue
        spec = node.workload.pod_template.get("spec") or {}
        home = model.namespace_of(node.workload.doc)
        for dep, _port in node.dependencies:
            callee = model.services.get(dep)
            if callee is None or not callee.is_service or (on_mesh and routed_by_header(model, dep)):
                continue
            targets = Targets([Target(dep, callee.name, callee.namespace, callee.port_names)], home)
            if next(pod_slots(spec, targets), None) is not None:
                continue
            docs = [model.find(r.kind, home, r.name) for r in config_reads(spec)]
            if any(d is not None and data_refs(d, targets, None, frozenset()) for d in docs):
                continue
            diags.warn(f"edge {node.ref} -> {callee.ref}: {node.ref} reads no address of {callee.name} (env, command, "
                       "args, ConfigMaps), so it is compiled into the image: in a flow that copies both, suffix "
                       "isolation cannot wire it", node.doc.where(),
                       hint="pass the address through env or a ConfigMap" if on_mesh else
                       f"use isolation: namespace (the short name {callee.name} then resolves to the dev copy by "
                       "DNS), or pass the address through env or a ConfigMap", code="unwirable")
    return diags.problems
