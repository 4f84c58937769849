"""Plan: decide which services get a dev version, and why (Kardinal's algorithm, deterministic).

1. Targets are the services the flow gives an image or env overrides.
2. Every stateful service reachable downstream of a target gets a dev version.
3. Parents of non-HTTP stateful services on that path get dev versions.
4. Services carrying an external plugin reached from a target get dev versions.
5. Routing `none`: services on a path from an entry point to a dev service get dev versions.
5b. Every dev copy, whatever made it one, gets its own stores: its stateful dependencies get dev versions.
6. Shared services use the `shared` version; non-HTTP shared services share their parents.
7. Jobs and CronJobs whose pods read the address of a service with a dev version (a migration
   against the dev database) get dev versions; so does every other Service on a dev workload.
8. Cycles (seat <-> travel) plan as one strongly connected component: "downstream" and "on the path" are
   walks that take each node once, and the lane's requests start at its entries and at its dev services,
   so a member that calls a dev member of its cycle gets a copy wherever only a copy would reach it
   (routing none; a TCP callee on a mesh). A cycle is refused only where a shared member calls a dev one
   that no header routes: one copy for every flow cannot reach one flow's dev version.
Every dev service then runs all of its plugins; each plugin instance runs once per flow with all
of its dependents, in a fixed order (annotation order, then service name).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field, replace
from typing import Literal

from ...core.k8s import map_matches, pod_template
from ...core.names import SHARED, flow_uuid
from ...core.references import Target, Targets
from ...errors import Diagnostics, Problem, Where
from ..inputs.document import Document
from ..model.address_reads import config_reads, data_refs, pod_slots
from ..model.cycles import Cycle, cycles
from ..model.port_protocols import routed_by_header
from ..model.records import WORKLOAD_KINDS, Model, ServiceNode
from ..settings.repo_config import Routing
from .flow_spec import FlowSpec, ServiceOverride
from .neighbourhood import NOT_AFFECTED

Kind = Literal["service", "external"]
Version = Literal["dev", "shared", "baseline"]


@dataclass(frozen=True)
class Decision:
    name: str
    kind: Kind
    version: Version
    reasons: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "version": self.version, "reasons": list(self.reasons)}


@dataclass
class _Draft:
    """A decision while planning: rules add reasons and the shared rule changes the version."""

    kind: Kind
    version: Version
    reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PluginInstance:
    servicename: str
    flow_id: str  # the flow id, or "shared" for shared dependents
    dependents: tuple[str, ...]

    @property
    def flow_uuid(self) -> str:
        return flow_uuid(self.servicename, self.flow_id)


@dataclass(frozen=True)
class Plan:
    flow_id: str
    routing: Routing
    decisions: dict[str, Decision]
    instances: list[PluginInstance]
    overrides: dict[str, ServiceOverride] = field(default_factory=dict)  # flow targets by node key

    def dev_services(self) -> list[str]:
        return sorted(n for n, d in self.decisions.items() if d.kind == "service" and d.version != "baseline")

    def lane(self) -> list[str]:
        """Every service and external node with a version of the flow (dev or shared): what review surfaces show."""
        return sorted(n for n, d in self.decisions.items() if d.version != "baseline")

    def version_of(self, name: str) -> str:
        d = self.decisions.get(name)
        return d.version if d else "baseline"

    def as_dict(self) -> dict:
        return {
            "flow": self.flow_id,
            "routing": self.routing,
            "services": [self.decisions[n].as_dict() for n in sorted(self.decisions)],
            "plugins": [{"instance": i.servicename, "flowUuid": i.flow_uuid, "dependents": list(i.dependents)}
                        for i in self.instances],
        }


class _Graph:
    """Adjacency of the topology, built once per plan."""

    def __init__(self, model: Model):
        self.out: dict[str, list[str]] = {n: model.edges(n) for n in sorted(model.services)}
        self.parents: dict[str, list[str]] = defaultdict(list)
        for n, deps in self.out.items():
            for d in deps:
                self.parents[d].append(n)
        self.cycles = cycles(self.out)
        self.cycle_of = {m: c for c in self.cycles for m in c.members}

    def reachable(self, start: str, within: set[str] | None = None) -> list[str]:
        """Nodes reachable from `start` (excluding it), in deterministic DFS order; with `within`, only through
        those nodes. With `within=reaching(dev)` that is the nodes on a path from `start` to a dev service, in
        the unrestricted walk's order: whatever a node outside `reaching` leads to is outside it too."""
        seen: set[str] = {start}
        order: list[str] = []
        stack = [start]
        while stack:
            node = stack.pop()
            for nxt in reversed(self.out.get(node, [])):
                if nxt not in seen and (within is None or nxt in within):
                    seen.add(nxt)
                    order.append(nxt)
                    stack.append(nxt)
        return order

    def reached(self, starts: list[str]) -> set[str]:
        """Nodes reachable from any of `starts`, the starts included: one walk, however many starts share it."""
        seen = set(starts)
        stack = list(starts)
        while stack:
            for nxt in self.out.get(stack.pop(), []):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    def reaching(self, targets: set[str]) -> set[str]:
        """Nodes from which some node of `targets` is reachable (including the targets)."""
        seen = set(targets)
        stack = list(targets)
        while stack:
            node = stack.pop()
            for p in self.parents.get(node, []):
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        return seen


def make_plan(model: Model, flow: FlowSpec, routing: Routing) -> tuple[Plan, list[Problem]]:
    """The plan of `flow` on `model`, and the problems found making it (an error: the flow cannot render)."""
    diags = Diagnostics()
    graph = _Graph(model)
    decisions: dict[str, _Draft] = {}

    def mark(name: str, reason: str, kind: Kind = "service") -> None:
        d = decisions.setdefault(name, _Draft(kind, "dev"))
        if reason not in d.reasons:
            d.reasons.append(reason)

    overrides = _targets(model, flow, diags)
    targets = list(overrides)
    for t in targets:
        mark(t, "target")
        reach = graph.reachable(t)
        downstream = set(reach)
        for s in reach:
            node = model.services.get(s)
            if node is not None and node.stateful:
                mark(s, f"stateful downstream of {t}")
                if not node.http:
                    for p in graph.parents.get(s, []):
                        mark(p, f"parent of TCP stateful {s}")
        for e in [t, *reach]:
            if e in model.externals:
                for p in model.externals[e]:
                    if p == t or p in downstream:
                        mark(p, f"carries external {e} downstream of {t}")
    if routing == "none":
        _routing_paths(model, graph, decisions, mark)
    else:
        _tcp_callers(model, graph, decisions, mark)
    _own_stores(model, graph, decisions, mark)
    _apply_shared(model, graph, decisions, set(targets))
    _ambiguous_cycles(model, graph, decisions, routing, flow.id, diags)
    _jobs(model, decisions, mark, diags)
    _same_workload(model, decisions)
    _unservable(model, decisions, diags)
    _check_reachable(model, graph, decisions, targets, diags)
    instances = _instances(model, decisions, flow.id)
    for inst in instances:
        if model.plugin_defs[inst.servicename].type == "external":
            mark(inst.servicename, f"external plugin runs for {', '.join(inst.dependents)}", "external")
    in_cycle = _baseline_reasons(graph, decisions, routing)
    for name in model.services:
        if name not in decisions:
            decisions[name] = _Draft("service", "baseline", [in_cycle.get(name, NOT_AFFECTED)])
    for cycle in graph.cycles:
        for name in cycle.members:
            reasons = decisions[name].reasons
            if decisions[name].version != "baseline" and not any("in cycle " in r for r in reasons):
                reasons.append(f"in cycle {cycle.describe()}")
    for ext in model.externals:
        decisions.setdefault(ext, _Draft("external", "baseline", ["no dev dependent"]))
    final = {n: Decision(n, d.kind, d.version, tuple(d.reasons)) for n, d in decisions.items()}
    return Plan(flow.id, routing, final, instances, overrides), diags.problems


def _unservable(model: Model, decisions: dict[str, _Draft], diags: Diagnostics, shown: int = 3) -> None:
    """A service that needs a dev version but has no one workload to copy is an error; more than `shown` of them
    (a long cycle of selector-less Services) are one error that counts them, so the output stays readable."""
    missing: list[ServiceNode] = []
    for name, d in decisions.items():
        node = model.services.get(name)
        if node is not None and node.ambiguous:
            workloads = ", ".join(sorted(w.doc.ref for w in node.ambiguous))
            diags.error(f"Service {node.ref} needs a dev version ({'; '.join(d.reasons)}) but its selector matches "
                        f"{len(node.ambiguous)} workloads ({workloads})", node.doc.where(),
                        hint="pick one with the annotation devlane.dev/workload: NAME, or narrow the selector",
                        code="ambiguous-workload")
        elif node is not None and node.workload is None and not node.external:
            missing.append(node)
    hint = ("give it a workload, mark it kardinal.dev.service/external with a plugin, or drop "
            "kardinal.dev.service/stateful")
    if len(missing) <= shown:
        for node in missing:
            diags.error(f"Service {node.ref} needs a dev version ({'; '.join(decisions[node.key].reasons)}) but no "
                        "Deployment or StatefulSet selects it", node.doc.where(), hint=hint, code="no-workload")
    else:
        refs = [n.ref for n in missing]
        diags.error(f"{len(refs):,} Services need a dev version but no Deployment or StatefulSet selects them: "
                    f"{', '.join(refs[:10])}{', ...' if len(refs) > 10 else ''}; Service {refs[0]} needs one because: "
                    f"{'; '.join(decisions[missing[0].key].reasons)}", missing[0].doc.where(), hint=hint,
                    code="no-workload")


def _targets(model: Model, flow: FlowSpec, diags: Diagnostics) -> dict[str, ServiceOverride]:
    """The flow's targets by node key: `NAME`, or `NAMESPACE/NAME` where a name is ambiguous."""
    out: dict[str, ServiceOverride] = {}
    for s in flow.services:
        keys = model.lookup(s.name)
        if len(keys) > 1:  # only a node with pods can take an image: a Service selecting nothing is not a candidate
            keys = [k for k in keys if model.services[k].workload or model.services[k].ambiguous] or keys
        if not keys:
            hint = "services in the repository: " + (", ".join(sorted(model.services)) or "(none)")
            if s.name in model.plugin_defs:
                hint = f"{s.name} is a plugin definition, not a service"
            diags.error(f"flow target {s.name!r} is not a Service or workload in the repository", Where(), hint,
                        "bad-target")
        elif len(keys) > 1:
            refs = ", ".join(f"{model.services[k].doc.kind} {model.services[k].ref}" for k in keys)
            diags.error(f"flow target {s.name!r} is ambiguous: {refs}", Where(),
                        f"name one as NAMESPACE/NAME, e.g. --service {keys[0]}=IMAGE", "bad-target")
        else:
            node = model.services[keys[0]]
            stale = _stale_workload(model, node) if node.workload is None and not node.ambiguous else None
            if stale is not None:
                diags.error(f"flow target {s.name!r}: the {stale.kind} {stale.name} it selects has apiVersion "
                            f"{stale.api_version}, which Kubernetes no longer serves, so it is no workload (and a "
                            "cluster refuses it)", stale.where(),
                            f"use apiVersion: {WORKLOAD_KINDS[stale.kind]} (with spec.selector, which it requires)",
                            "bad-target")
            elif node.workload is None and not node.ambiguous:
                diags.error(f"flow target {s.name!r} has no Deployment or StatefulSet selecting it, so its image "
                            "cannot change", node.doc.where(), code="bad-target")
            else:
                out[keys[0]] = replace(s, name=keys[0])
    return out


def _stale_workload(model: Model, node: ServiceNode) -> Document | None:
    """A workload kind of an apiVersion Kubernetes removed (extensions/v1beta1 Deployments, say) whose pods the
    Service `node` selects: why it has no workload. Only on this error path, so a scan is cheap enough."""
    spec = node.doc.obj.get("spec")
    selector = spec.get("selector") if isinstance(spec, dict) else None
    if not isinstance(selector, dict) or not selector:
        return None
    for doc in model.documents:
        if (doc.kind in WORKLOAD_KINDS and doc.api_version != WORKLOAD_KINDS[doc.kind]
                and model.namespace_of(doc) == node.namespace
                and map_matches(selector, (pod_template(doc.obj).get("metadata") or {}).get("labels") or {})):
            return doc
    return None


def service_targets(model: Model, keys) -> list[Target]:
    """Reference targets for the Services among `keys` (a lone workload has no DNS name)."""
    return [Target(k, model.services[k].name, model.services[k].namespace, model.services[k].port_names)
            for k in keys if k in model.services and model.services[k].is_service]


def _jobs(model: Model, decisions: dict[str, _Draft], mark, diags: Diagnostics) -> None:
    """Jobs and CronJobs reading the address of a service with a dev version get dev versions too."""
    jobs = [key for key, node in model.services.items()
            if node.doc.kind in ("Job", "CronJob") and key not in decisions and node.workload is not None]
    dev = Targets(service_targets(model, sorted(n for n, d in decisions.items() if d.version == "dev"))) \
        if jobs else None
    if not dev:
        return
    for key in sorted(jobs):
        node = model.services[key]
        targets = dev.at(node.namespace)
        found = reads_of(model, node, targets)
        if found:
            mark(key, f"reads {found}, which has a dev version")
        elif secret := _secret_read(model, node, targets):
            diags.warn(f"{node.doc.ref} reads the address of {secret}; devlane never copies Secret values, so it "
                       "cannot give the flow a safe copy of this Job: it keeps running against the baseline only",
                       node.doc.where(), hint="pass the address through env or a ConfigMap so the flow gets its "
                       "own copy of the Job", code="secret-reference")


def reads_of(model: Model, node: ServiceNode, targets: Targets) -> str | None:
    """Where the node's pods read a reference to one of `targets` ("service (where)"), if anywhere."""
    spec = node.workload.pod_template.get("spec") or {} if node.workload else {}
    for slot in pod_slots(spec, targets, node.no_rewrite):
        return f"{slot.refs[0].target.key} ({slot.where})"
    for read in config_reads(spec):
        doc = model.find(read.kind, node.namespace, read.name)
        if doc is not None and read.kind == "ConfigMap":
            for key, refs in data_refs(doc, targets, read.keys, node.no_rewrite).items():
                return f"{refs[0].target.key} (ConfigMap {read.name} key {key})"
    return None


def _secret_read(model: Model, node: ServiceNode, targets: Targets) -> str | None:
    spec = node.workload.pod_template.get("spec") or {} if node.workload else {}
    for read in config_reads(spec):
        doc = model.find(read.kind, node.namespace, read.name) if read.kind == "Secret" else None
        for key, refs in data_refs(doc, targets, read.keys).items() if doc is not None else ():
            return f"{refs[0].target.key} from Secret {read.name} key {key}"
    return None


def _same_workload(model: Model, decisions: dict[str, _Draft]) -> None:
    """A second Service on a dev workload (`frontend-external`) gets its dev copy too, and says so."""
    for key in sorted(decisions):
        node = model.services.get(key)
        if node is None or node.workload is None or decisions[key].kind != "service":
            continue
        for other in model.nodes_on(node.workload.doc):
            if other.key not in decisions:
                decisions[other.key] = _Draft("service", decisions[key].version,
                                              [f"selects the dev workload of {key}"])


def _check_reachable(model: Model, graph: _Graph, decisions: dict[str, _Draft], targets: list[str],
                     diags: Diagnostics) -> None:
    """A target Service nothing reaches renders, with a warning saying how to reach it."""
    reached = graph.reached([b for entry in model.entries for b in entry.backends])
    for t in targets:
        node = model.services[t]
        parents = [p for p in graph.parents.get(t, []) if p in decisions]
        if not node.is_service or node.stateful or t in reached or parents:
            continue
        diags.warn(f"nothing in the flow reaches {node.ref}: no entry point routes to it and no service with a dev "
                   "version depends on it", node.doc.where(),
                   hint="annotate the Ingress or HTTPRoute that leads to it with kardinal.dev.service/ingress: "
                   '"true" and its callers with kardinal.dev.service/dependencies; or reach the dev Service '
                   "with kubectl port-forward", code="unreachable")


def _routing_paths(model: Model, graph: _Graph, decisions: dict[str, _Draft], mark) -> None:
    """Routing `none` has no mesh: callers on a path from an entry to a dev service need copies, and so does every
    member of a cycle with a dev member (dev seat -> travel -> seat needs a dev travel, or the lane's requests
    come back to the baseline seat)."""
    dev = {n for n, d in decisions.items() if n in model.services}
    if not dev:
        return
    reaching = graph.reaching(dev)
    for entry in model.entries:
        for backend in entry.backends:
            if backend not in reaching:
                continue  # no path from it leads to a dev service
            for n in [backend, *graph.reachable(backend, reaching)]:  # only the paths to dev: the rest marks nothing
                if n in reaching and n not in dev and n in model.services:
                    mark(n, f"routing: on path from entry {entry.doc.ref} to a dev service")
    for cycle in graph.cycles:  # the lane's requests pass a dev member and come back to it through the others
        dev_members = [m for m in cycle.members if m in dev]
        for n in cycle.members if dev_members else ():
            if n not in decisions:
                mark(n, f"routing: in cycle {cycle.describe()}, on the path from dev {dev_members[0]} back to it")


def _tcp_callers(model: Model, graph: _Graph, decisions: dict[str, _Draft], mark) -> None:
    """On a mesh, a dev version the mesh cannot route by the header (no HTTP or gRPC port) is reached only through
    its callers' rewritten references, so each caller the flow's requests pass (one reachable from an entry) needs a
    dev copy, and so on up while those callers are TCP too. Kardinal's rule covers stateful services; a changed TCP
    service has the same need. In a cycle, a TCP dev member's callers are on the lane's path even when no entry
    reaches them: the lane's requests leave the dev member and come back to it through them."""
    on_paths = graph.reached([b for e in model.entries for b in e.backends])
    queue = deque(sorted(n for n in decisions if n in model.services))
    seen = set(queue)
    while queue:
        name = queue.popleft()
        if routed_by_header(model, name):
            continue
        for parent in sorted(graph.parents.get(name, [])):
            same_cycle = name in graph.cycle_of and graph.cycle_of.get(parent) is graph.cycle_of[name]
            if (parent not in on_paths and not same_cycle) or parent not in model.services:
                continue
            if f"parent of TCP stateful {name}" not in decisions.get(parent, _Draft("service", "dev")).reasons:
                mark(parent, f"parent of TCP {name}: the mesh routes only HTTP and gRPC by the header")
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)


def _own_stores(model: Model, graph: _Graph, decisions: dict[str, _Draft], mark) -> None:
    """Every dev copy gets its own stores, whatever made it one (a path from an entry, a cycle, a TCP callee): the
    stateful services it depends on get dev versions (a copy, or their plugin's), as a target's do; their own
    stateful dependencies too. Without this a copy made for the path kept reading and writing the baseline's
    state, and `--strict` could never pass for it."""
    queue = deque(sorted(n for n in decisions if n in model.services))
    while queue:
        name = queue.popleft()
        for child in graph.out.get(name, []):
            node = model.services.get(child)
            if node is not None and node.stateful and child not in decisions:
                mark(child, f"stateful dependency of dev copy {name}")
                queue.append(child)


def _apply_shared(model: Model, graph: _Graph, decisions: dict[str, _Draft], targets: set[str]) -> None:
    """Shared services use one `shared` copy; non-HTTP ones pull their dev parents along."""
    queue = deque((n, "kardinal.dev.service/shared") for n in sorted(decisions)
                  if n in model.services and model.services[n].shared)
    while queue:
        name, reason = queue.popleft()
        d = decisions[name]
        if d.version == SHARED:
            continue
        if name in targets:
            d.reasons.append("shared ignored: it is a flow target")
            continue
        d.version = SHARED
        d.reasons.append(reason)
        if not model.services[name].http:
            for p in sorted(graph.parents.get(name, [])):
                if p in decisions and decisions[p].version == "dev" and p not in targets:
                    queue.append((p, f"parent of non-HTTP shared {name}"))


def _ambiguous_cycles(model: Model, graph: _Graph, decisions: dict[str, _Draft], routing: Routing, flow_id: str,
                      diags: Diagnostics) -> None:
    """The one case a cycle cannot plan: a shared member calls a dev member that no header routes to. A shared
    copy serves every flow, so it calls the baseline; the lane's requests that pass it leave the lane."""
    for cycle in graph.cycles:
        for caller in cycle.members:
            if decisions.get(caller, _Draft("service", "baseline")).version != SHARED:
                continue
            for callee in _unroutable_callees(model, graph, cycle, caller, routing):
                if decisions.get(callee, _Draft("service", "baseline")).version == "dev":
                    diags.error(f"dependency cycle {cycle.describe()} is ambiguous in flow {flow_id}: {caller} is "
                                f"shared (one copy for every flow), so its call {caller} -> {callee} cannot reach "
                                f"this flow's dev {callee}; the lane's requests through {caller} would come back "
                                f"to the baseline {callee}", model.services[caller].doc.where(),
                                _cycle_hint(caller, callee, routing), "ambiguous-cycle")


def _unroutable_callees(model: Model, graph: _Graph, cycle: Cycle, caller: str, routing: Routing) -> list[str]:
    """Members of `cycle` that `caller` calls and that no flow header routes to (routing none, or a TCP callee)."""
    return [d for d in graph.out.get(caller, []) if d in graph.cycle_of and graph.cycle_of[d] is cycle
            and (routing == "none" or not routed_by_header(model, d))]


def _cycle_hint(caller: str, callee: str, routing: Routing) -> str:
    hint = (f"drop kardinal.dev.service/shared from {caller} (the lane then gets its own copy), or drop {callee} "
            f"from {caller}'s kardinal.dev.service/dependencies if {caller} never calls it")
    if routing == "none":
        return hint + f"; or route by the flow header (routing: gateway-api or istio), {callee} with an HTTP port"
    return hint + f"; or give {callee} an HTTP or gRPC port so the mesh routes it by the flow header"


def _baseline_reasons(graph: _Graph, decisions: dict[str, _Draft], routing: Routing) -> dict[str, str]:
    """Why a member of a cycle with a dev member stays baseline (the mesh brings its calls back to the lane), by
    member: one text per cycle, as a cycle may have thousands of members."""
    out: dict[str, str] = {}
    for cycle in graph.cycles:
        dev = [m for m in cycle.members if m in decisions and decisions[m].version != "baseline"]
        if dev:
            names = ", ".join(dev[:5]) + (f" and {len(dev) - 5:,} more" if len(dev) > 5 else "")
            why = (f"in cycle {cycle.describe()} with dev {names}: stays baseline, the mesh routes its calls to "
                   f"{'it' if len(dev) == 1 else 'them'} by the flow header" if routing != "none"
                   else f"in cycle {cycle.describe()} with dev {names}: no flow request reaches it")
            out.update(dict.fromkeys(cycle.members, why))
    return out


def cycle_risks(model: Model, routing: Routing) -> list[Problem]:
    """For `lint`, which renders no flow: each cycle (a note: it plans as one component), and each shared member's
    call into its cycle that no header routes (a warning: a flow giving the callee a dev version fails)."""
    diags = Diagnostics()
    graph = _Graph(model)
    for cycle in graph.cycles:
        first = model.services[cycle.members[0]]
        diags.problems.append(Problem(
            f"dependency cycle: {cycle.describe()}; a flow plans it as one component (a member that needs a dev "
            "version brings the members on the lane's path)", first.doc.where(), severity="info", code="cycle"))
        for caller in cycle.members:
            if not model.services[caller].shared:
                continue
            for callee in _unroutable_callees(model, graph, cycle, caller, routing):
                if not model.services[callee].shared:
                    diags.warn(f"dependency cycle {cycle.describe()}: {caller} is shared and calls {callee}, which "
                               f"no flow header routes to, so a flow that gives {callee} a dev version fails "
                               "(one shared copy cannot reach one flow's dev version)",
                               model.services[caller].doc.where(), _cycle_hint(caller, callee, routing),
                               "ambiguous-cycle")
    return diags.problems


def _instances(model: Model, decisions: dict[str, _Draft], flow_id: str) -> list[PluginInstance]:
    by_key: dict[tuple[str, str], list[str]] = {}
    order: list[tuple[str, str]] = []
    for name in sorted(decisions):
        node = model.services.get(name)
        if node is None or decisions[name].version == "baseline":
            continue
        version = SHARED if decisions[name].version == SHARED else flow_id
        for p in node.plugins:
            if p not in model.plugin_defs:
                continue
            key = (p, version)
            if key not in by_key:
                by_key[key] = []
                order.append(key)
            by_key[key].append(name)
    return [PluginInstance(*k, tuple(by_key[k])) for k in order]
