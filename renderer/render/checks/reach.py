"""The lane's reach: which state outside the lane its dev pods can use, computed from the dev copies as rendered.

Every address a dev pod can use (env values, `command` and `args`, the ConfigMaps and Secrets it reads, whole
files included) is resolved to one of: the lane's own copy (not reported); a baseline service that holds no
state (shared by design, not reported); a **baseline store** (a repository Service `model.store_signs` finds
stateful, annotated or not); a **registry** (service discovery, in the repository or outside it); or a **store
outside the repository** (a datastore address whose host no object of the repository defines). Kardinal trusts
its annotations; this reads the addresses, so a store the annotations miss is still named, with the evidence.
A store marked shared (an intended shared read) is listed as `shared` and never warned about.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ...core import deadline
from ...core.k8s import all_containers, pod_spec
from ...core.references import Targets
from ...core.secrets_mask import excerpt
from ...core.stores import find_addresses, image_kind
from ...errors import Diagnostics, Problem, Where
from ..copies.dev_set import DevSet, DevWorkload
from ..model.address_reads import ConfigRead, config_reads, data_of, data_refs, pod_slots, pod_values
from ..model.dapr_apps import app_id, is_component
from ..model.records import Model
from ..model.store_signs import store_sign
from ..plan.planner import service_targets
from . import dapr

Class = Literal["baseline-store", "registry", "outside-store", "shared"]
_LOCAL = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "::1"})
_NOT_HOSTS = frozenset({"tcp", "udp", "unix", "http", "https", "grpc"})  # `=tcp:3306`: a listener, not a host
_WORD = re.compile(r"[A-Za-z0-9-]+")


@dataclass(frozen=True, order=True)
class Evidence:
    """Where a dev pod names the address: the object, the container (None: a ConfigMap or Secret entry), the
    field (`env X`, `args[2]`, `key application.yml`) and the value around the address, its secrets masked and
    at most 120 characters long (`secrets_mask.excerpt`); a Secret's value is never shown: `(secret)`."""

    object: str
    container: str | None
    field: str
    value: str

    def as_dict(self) -> dict:
        return {"object": self.object, **({"container": self.container} if self.container else {}),
                "field": self.field, "value": self.value}


@dataclass(frozen=True)
class Reached:
    """One piece of state outside the lane that a dev pod can reach."""

    cls: Class
    target: str  # the Service (`ns/name`) or, outside the repository, `host[:port]`
    kind: str  # mysql, kafka, eureka, volume, database, ...
    sign: str  # why it is a store or a registry
    evidence: tuple[Evidence, ...] = field(default=())
    # a baseline store's annotations as they are: whether it is stateful, and the dev services that name it without
    # listing it in their dependencies (the fix never proposes an annotation that is already there)
    stateful: bool = False
    undeclared_by: tuple[str, ...] = ()

    @property
    def fix(self) -> str:
        if self.cls == "shared":
            return "none: marked shared (an intended shared read)"
        if self.sign.startswith("Dapr Component"):
            return ("give the lane its own app-ids and Components (.devlane.yaml dapr: {isolation: app-id}: state "
                    "keyed by the lane's app-id, a consumer group of its own); what it publishes to a topic or sends "
                    "through a binding still reaches the baseline's: give the broker a plugin, or mark the store "
                    "shared (kardinal.dev.service/shared, or sharedStores) if lanes may use it on purpose")
        if self.cls == "baseline-store":
            return self._store_fix()
        if self.cls == "registry":
            return (f"copy the registry into the lane (annotate {self.target} kardinal.dev.service/stateful: "
                    "\"true\" and a dependency of its clients): a dev pod registered with the baseline's registry is "
                    "handed to baseline callers, whatever the isolation mode")
        return (f"declare {self.target} as a kardinal.dev.service/external Service with a plugin that gives the "
                "lane its own copy, or list it in .devlane.yaml sharedStores if lanes may use it on purpose")

    def _store_fix(self) -> str:
        shared = ("or mark it kardinal.dev.service/shared: \"true\" if lanes may use the baseline's on purpose")
        callers = ", ".join(self.undeclared_by)
        if not self.stateful:
            add = (f" and add it to the kardinal.dev.service/dependencies of {callers}" if callers else "")
            return (f"annotate {self.target} kardinal.dev.service/stateful: \"true\"{add} (the lane then gets a dev "
                    f"copy, or a plugin's), {shared}")
        if callers:
            return (f"add {self.target} (already stateful) to the kardinal.dev.service/dependencies of {callers}: "
                    f"the lane then gives them its dev copy, {shared}")
        return (f"{self.target} is stateful and a declared dependency, yet the dev pod names the baseline's: a "
                "value devlane does not rewrite (another namespace's name, an address built at run time) or a "
                f"plugin that keeps it (a read-through overlay); write the Service's own name, {shared}")

    def as_dict(self) -> dict:
        return {"class": self.cls, "target": self.target, "kind": self.kind, "sign": self.sign,
                "evidence": [e.as_dict() for e in self.evidence], "fix": self.fix}


def lane_reach(model: Model, dev: DevSet, shared_stores: frozenset[str] = frozenset(),
               before_plugins: bool = False, isolated: Mapping[str, Mapping[str, str]] | None = None) -> list[Reached]:
    """Every baseline store, registry and outside store the lane's dev pods can reach, with the evidence; those
    marked shared (`kardinal.dev.service/shared` on the Service, `sharedStores` in .devlane.yaml for a host
    outside the repository) in class `shared`. `before_plugins` (`plan`): the plugins bound to a dev service have
    not run, so the variables their definitions name (`env_var: DATABASE_URL`, `host_env: DB_HOST`), which they
    rewire, are left to `render`; every other address is judged as `render` judges it. `isolated`: per dev
    service, the store kinds a plugin that ran for it gives the lane its own state of (`spec.isolates`: kafka-topic's
    topics on the shared cluster), by plugin: such an address is the lane's on purpose, class `shared`."""
    found: dict[tuple[Class, str], tuple[str, str, set[Evidence]]] = {}
    workloads = sorted(dev.unique_workloads(), key=lambda w: (w.namespace or "", w.name))
    # only the Services a dev pod mentions become targets: a target's ports come from its object, which a warm
    # render has not decoded (the stored model holds its passes), and most of a repository is never named here
    pods = [_pod(model, dev, dw) for dw in workloads]
    words = {w for pod in pods for text in pod.texts() for w in _WORD.findall(text)}
    repo = Targets(service_targets(model, model.named(words)))
    # the lane's copies, and the hosts of declared external services (their plugins give the lane its own; the
    # invariants name a value a plugin left as it was)
    known = frozenset(dev.dev_names.values()) | model.external_hosts
    for pod in pods:
        pending = _left_to_plugins(model, pod.dw.service) if before_plugins else frozenset()
        for cls, target, kind, sign, evidence in _reached_by(model, dev, pod, repo, known, pending):
            if cls in ("outside-store", "registry") and _listed(target, shared_stores):
                cls = "shared"
            by = (isolated or {}).get(pod.dw.service, {}).get(kind)
            if by is not None and cls in ("outside-store", "baseline-store"):
                cls, sign = "shared", f"{sign}; plugin {by} gives the lane its own {kind} state there"
            entry = found.setdefault((cls, target), (kind, sign, set()))
            entry[2].add(evidence)
    for cls, target, kind, sign, where in _dapr_reached(model, dev, workloads):
        if cls == "outside-store" and _listed(target, shared_stores):
            cls = "shared"
        found.setdefault((cls, target), (kind, sign, set()))[2].add(Evidence(*where))
    return [_annotated(model, dev, Reached(cls, target, kind, sign, tuple(sorted(evidence))))
            for (cls, target), (kind, sign, evidence) in sorted(found.items())]


def _dapr_reached(model: Model, dev: DevSet, workloads: list[DevWorkload]) -> Iterator[dapr.Hit]:
    """The stores the Dapr Components a dev pod's sidecar loads address (`checks.dapr`): the baseline's
    Components of its namespace, and the lane's copies (`copies.dapr_lane`)."""
    found = [(d.obj, False) for d in model.dapr_components]
    found += [(o.obj, True) for o in dev.objects if is_component(o.obj)]
    if not found:
        return
    words = {w for c, _ in found for item in ((c.get("spec") or {}).get("metadata") or [])
             if isinstance(item, dict) for w in _WORD.findall(str(item.get("value", "")))}
    repo = Targets(service_targets(model, model.named(words)))
    for dw in workloads:
        yield from dapr.reached(model, dw.obj, app_id(dw.baseline.obj), dw.namespace or model.default_namespace,
                                found, repo.at(_home(model, dw)))


def _annotated(model: Model, dev: DevSet, r: Reached) -> Reached:
    """`r` with what the baseline store's annotations say (stateful; which dev services naming it do not list it)."""
    if r.cls != "baseline-store":
        return r
    key = model.keys_by_ref.get(r.target)
    if key is None:
        return r
    node = model.services[key]
    naming = {e.object for e in r.evidence}
    by = sorted({model.services[dw.service].ref for dw in dev.unique_workloads()
                 if f"{dw.obj.get('kind')}/{dw.name}" in naming and dw.service in model.services
                 and key not in model.edges(dw.service) and dw.service != key})
    return replace(r, stateful=node.stateful, undeclared_by=tuple(by))


WHAT = {"baseline-store": "baseline store", "registry": "registry", "outside-store": "store outside the repository",
        "shared": "shared on purpose"}


def line(record: dict) -> str:
    """One reach entry (as `Reached.as_dict` writes it into flow.metadata) in one line, for every front door:
    what, target, why it is one, and where the first dev pod names it."""
    e = record["evidence"][0]
    where = f"{e['object']}{' container ' + e['container'] if e.get('container') else ''} {e['field']}"
    more = f" (and {len(record['evidence']) - 1} more)" if len(record["evidence"]) > 1 else ""
    return (f"{WHAT[record['class']]} {record['target']} ({record['kind']}: {record['sign']}): {where} = "
            f"{e['value']}{more}")


def problems(reach: list[Reached], strict: bool = False) -> list[Problem]:
    """One warning per piece of state reached (an error under --strict), but for what is marked shared."""
    diags = Diagnostics()
    for r in reach:
        if r.cls != "shared":
            (diags.error if strict else diags.warn)(
                f"the lane reaches the {line(r.as_dict())}; a dev pod could read or write the baseline's state",
                Where(object=r.evidence[0].object), hint=r.fix, code=f"reach-{r.cls}")
    return diags.problems


def lint_units(model: Model) -> list[str]:
    """The services whose reach `undeclared` checks, in order: each workload once, by the first of its services."""
    seen: set[int] = set()
    units = []
    for key, node in sorted(model.services.items()):
        if node.workload is not None and id(node.workload) not in seen:
            seen.add(id(node.workload))
            units.append(key)
    return units


def undeclared(model: Model, shared_stores: frozenset[str] = frozenset(), units: Sequence[str] | None = None
               ) -> list[Problem]:
    """For `lint`, which renders no flow: each service whose pods read a store, registry or outside store that
    its annotations do not declare (a stateful dependency gets a lane's copy; anything else a lane that gives the
    service a dev version would reach), named once per service and store. `units`: a share of `lint_units` (each
    unit's problems depend on it alone, so shares checked apart and joined in order say the same)."""
    diags = Diagnostics()
    for key in lint_units(model) if units is None else units:
        node = model.services[key]
        doc = node.workload.doc  # type: ignore[union-attr]
        dw = DevWorkload(key, "baseline", doc, doc.obj, node.container)
        deps = {model.services[d].ref: model.services[d] for d, _ in node.dependencies if d in model.services}
        for r in lane_reach(model, DevSet(workloads={key: dw}), shared_stores):
            dep = deps.get(r.target)
            if r.cls == "shared" or r.target == node.ref or (dep is not None and (dep.stateful or dep.plugins)):
                continue
            said = "list as a dependency but not as stateful or with a plugin" if dep else "do not declare"
            diags.warn(f"{node.ref} reads the {line(r.as_dict())}, which its annotations {said}: a lane that gives "
                       f"{node.name} a dev version would reach it", doc.where(), hint=r.fix, code=f"undeclared-{r.cls}")
    return diags.problems


@dataclass(frozen=True)
class _Pod:
    """A dev pod as the reach reads it, walked once: its values, and the ConfigMaps and Secrets it reads."""

    dw: DevWorkload
    home: str | None  # the baseline namespace: where its short names resolve (a flow namespace aliases them)
    values: list[tuple[str, str, str, str]]  # (container, field, key, value), see `_values`
    reads: list[tuple[ConfigRead, dict, dict[str, str]]]  # (read, object, its entries as text)

    def texts(self) -> Iterator[str]:
        yield from (value for *_, value in self.values)
        for read, _, data in self.reads:
            yield from (v for k, v in data.items() if read.keys is None or k in read.keys)


def _pod(model: Model, dev: DevSet, dw: DevWorkload) -> _Pod:
    home = _home(model, dw)
    reads = [(read, doc, data_of(doc)) for read, doc in _reads(model, dev, dw, home)]
    return _Pod(dw, home, list(_values(dw.pod_spec)), reads)


def _home(model: Model, dw: DevWorkload) -> str | None:
    """The baseline namespace of the dev pod: where its short names resolve (a flow namespace aliases them)."""
    return dw.baseline.obj.get("metadata", {}).get("namespace") or model.default_namespace


def _reads(model: Model, dev: DevSet, dw: DevWorkload, home: str | None) -> Iterator[tuple[ConfigRead, dict]]:
    """The ConfigMaps and Secrets the dev pod reads: the lane's copies, else the baseline's."""
    for read in config_reads(dw.pod_spec):
        doc = dev.find(read.kind, dw.namespace, read.name) or _baseline_doc(model, read.kind, home, read.name)
        if doc is not None:
            yield read, doc


def _left_to_plugins(model: Model, service: str) -> frozenset[str]:
    """The variables the plugins bound to `service` will set: every text value of their definitions' args (a
    plugin names the variable it rewires, `env_var: DATABASE_URL`); an argument that is no variable name matches
    no variable."""
    node = model.services[service]
    return frozenset(str(v) for p in node.plugins if p in model.plugin_defs
                     for v in model.plugin_defs[p].args.values() if isinstance(v, str))


def _reached_by(model: Model, dev: DevSet, pod: _Pod, repo: Targets, known: frozenset[str],
                pending: frozenset[str] = frozenset()) -> Iterator[tuple[Class, str, str, str, Evidence]]:
    dw = pod.dw
    obj = f"{dw.obj.get('kind')}/{dw.name}"
    targets = repo.at(pod.home)
    own_kinds = {image_kind(str(c.get("image") or "")) for c in all_containers(dw.pod_spec)}
    for slot in pod_slots(dw.pod_spec, targets):
        for ref in slot.refs:
            hit = _baseline(model, dev, dw, ref.target.key, slot.value[ref.start:ref.end], slot.value, ref.namespace)
            if hit is not None:
                field_ = f"env {slot.label}" if slot.field == "env" else f"{slot.field}[{slot.label}]"
                yield (*hit, Evidence(obj, slot.container, field_, excerpt(slot.value, ref.start)))
    # a value devlane or a plugin set is the lane's own (a plugin's dev database URL); every value left as the
    # manifest has it is judged on its own: a rewritten variable never vouches for another beside it
    # lint reads the baseline's own pod (no copy): its values are the ones already walked
    before = {(c, f): v for c, f, _, v in (pod.values if dw.obj is dw.baseline.obj else _values(pod_spec(
        dw.baseline.obj)))}
    kept = [(c, f, k, v) for c, f, k, v in pod.values if before.get((c, f)) == v and k not in pending]
    for container, field_, key, value in kept:
        for line_key, line in _lines(key, value):
            yield from _outside(known, targets, own_kinds, line_key, line, (obj, container, field_))
    for read, doc, data in pod.reads:
        source = f"{read.kind}/{read.name}"
        secret = read.kind == "Secret"
        for key, refs in data_refs(doc, targets, read.keys).items():
            for ref in refs:
                value = data[key]
                hit = _baseline(model, dev, dw, ref.target.key, value[ref.start:ref.end], value, ref.namespace)
                if hit is not None:
                    shown = "(secret)" if secret else excerpt(value, ref.start)
                    yield (*hit, Evidence(source, None, f"key {key}", shown))
        for key, value in data.items():
            if read.keys is not None and key not in read.keys:
                continue
            for line_key, line in _lines(key, value):
                yield from _outside(known, targets, own_kinds, line_key, line, (source, None, f"key {key}"), secret)


def _baseline(model: Model, dev: DevSet, dw: DevWorkload, key: str, host: str, value: str,
              ns_span: tuple[int, int] | None) -> tuple[Class, str, str, str] | None:
    """A reference to repository service `key` that reaches the baseline's copy of a store or registry."""
    node = model.services.get(key)
    if node is None or node.external or key in dev.by_header:
        return None
    if key in dev.versions and dev.lane.by_namespace:
        named = value[ns_span[0]:ns_span[1]] if ns_span else None
        if named is None or named == dw.namespace:
            return None  # the short name resolves to the dev copy in the flow namespace
    elif key in dev.versions and host != node.name:
        return None
    sign = store_sign(node)
    if sign is None:
        return None
    cls: Class = "shared" if node.shared else "registry" if sign.role == "registry" else "baseline-store"
    return cls, node.ref, sign.kind, sign.reason


def _outside(known: frozenset[str], targets: Targets, own_kinds: set[str | None], key: str, value: str,
             where: tuple[str, str | None, str], secret: bool = False
             ) -> Iterator[tuple[Class, str, str, str, Evidence]]:
    """Datastore and registry addresses whose host no object of the repository (nor the lane) defines, each with
    the evidence `where` (object, container, field) shows: the value around the address, or `(secret)`."""
    for address in find_addresses(value, key):
        first = address.host.split(".", 1)[0]
        if address.host in _NOT_HOSTS or targets.resolve(address.host) is not None or first in known \
                or address.host in known:
            continue
        if address.host in _LOCAL and address.kind in own_kinds:
            continue  # the pod's own container: copied with the pod
        host = f"[{address.host}]" if ":" in address.host else address.host  # an IPv6 address, as URLs write it
        target = f"{host}:{address.port}" if address.port else host
        cls: Class = "registry" if address.role == "registry" else "outside-store"
        yield cls, target, address.kind, address.evidence, Evidence(*where, "(secret)" if secret else
                                                                     excerpt(value, address.start))


def _listed(target: str, shared: frozenset[str]) -> bool:
    """`host:port` or `host` listed in `sharedStores` (a host listed alone covers every port)."""
    return target in shared or target.rsplit(":", 1)[0] in shared


_SQL = frozenset({"mysql", "postgres", "sqlserver", "oracle", "cockroachdb", "database"})


def _values(spec: dict) -> Iterator[tuple[str, str, str, str]]:
    """`pod_values`, with a `KEY=VALUE` or `--flag=VALUE` argument read as VALUE under KEY."""
    for container, field_, key, value in pod_values(spec):
        if field_.startswith(("command[", "args[")):
            flag, sep, rest = value.lstrip("-").partition("=")
            key, value = (flag, rest) if sep else ("", value)
        yield container, field_, key, value


def _lines(key: str, value: str) -> Iterator[tuple[str, str]]:
    """A config entry as (key, value) pairs: itself, or each `k=v` / `k: v` / `k = v` line of a file, its key
    prefixed with the sections and mappings it sits in (`[redis]` then `host = cache`, or YAML's `redis:` then an
    indented `host: cache`, or JSON's `"redis": {`: `redis.host`), so a store's name in a parent key counts; a
    line without a key is the value of its sections and mappings."""
    deadline.check()
    if "\n" not in value:
        yield key, value
        return
    parents: list[tuple[int, str]] = []  # (indent, key) of the open mappings
    section = ""
    for line in value.splitlines():
        text = line.strip()
        if not text or text.startswith(("#", ";", "//")):
            continue
        if text.startswith("[") and text.endswith("]"):  # an INI or TOML section
            section, parents = text.strip("[] "), []
            continue
        indent = len(line) - len(line.lstrip())
        while parents and parents[-1][0] >= indent:
            parents.pop()
        if text in ("{", "}", "},", "]", "],"):
            continue
        k, sep, v = _split(text[2:].lstrip() if text.startswith("- ") else text)  # a YAML list item: its entry
        if sep and v in ("", "{", "["):
            parents.append((indent, k))
            continue
        # A line without a key (a host alone, a YAML list item) stands under the key path it sits in, as
        # `[redis_servers]` then `cache.example.com` in an inventory, or `hosts:` then `- db1.example.com`.
        yield ".".join(p for p in (section, *(name for _, name in parents), k) if p), v


def _split(text: str) -> tuple[str, str, str]:
    m = re.match(r"""["']?([\w.\-\[\]]+)["']?\s*(=|:(?=\s|$))\s*(.*?)[,;]?$""", text)
    return (m.group(1), m.group(2), m.group(3).strip("\"' ")) if m else ("", "", text)


def _baseline_doc(model: Model, kind: str, home: str | None, name: str) -> dict | None:
    doc = model.find(kind, home, name)
    return doc.obj if doc is not None else None
