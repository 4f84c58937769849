"""A small model of cluster DNS, and a checker of flows rendered in `namespace` isolation built on it. Neither
trusts devlane: they read the objects as they would exist in one cluster (baseline and flow together) and ask
what each name a dev pod uses resolves to, the way a pod's resolv.conf search path and the cluster DNS
(CoreDNS's `kubernetes` plugin) would answer it. This module imports nothing from `renderer`.

    violations = check_namespace_flow(baseline_objects, load_flow(out / "flows" / "pr-1"), "pr-1")

Each `Violation` (the class of `support.isolation`) has a `kind`:
- `dns`: a dependency edge of a dev pod, spelled the way code spells it (`svc`, or `svc.ns` for another
  namespace), or a host the dev pod reads (env, command/args, ConfigMaps), does not resolve, or resolves
  elsewhere than to the dev version of its Service when the flow has one, else to the baseline Service;
- `alias`: an ExternalName alias in a flow namespace points at a Service with a dev version, at no baseline
  Service, at another Service than its namesake in the baseline namespace, or has other ports than its baseline;
  a baseline Service of a namespace the flow touches has neither a dev version nor an alias; two rendered
  Services share a name;
- `placement`: a rendered object is outside the flow namespaces (in a baseline one, say), a flow namespace that
  holds objects is not rendered as a valid Namespace, or a dev pod mounts a claim or reads a ConfigMap that its
  own namespace does not hold.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .isolation import (
    WORKLOAD_KINDS,
    Key,
    Objects,
    Violation,
    dependency_keys,
    describe,
    name_of,
    namespace_of,
    object_refs,
    pod_labels,
    pod_reads,
    pod_spec,
    pod_template,
    service_selects,
    show,
)

NDOTS = 5  # the kubelet's resolv.conf option: a name with fewer dots is tried with the search path first
MAX_HOPS = 8  # CNAME hops followed before giving up
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
    "CustomResourceDefinition", "PriorityClass", "IngressClass", "RuntimeClass", "CSIDriver", "APIService",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "VolumeSnapshotClass",
})  # fmt: skip
_DNS_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")


def _spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def is_external_name(service: dict) -> bool:
    return _spec(service).get("type") == "ExternalName"


def is_headless(service: dict) -> bool:
    return _spec(service).get("clusterIP") == "None" and not is_external_name(service)


def is_namespace_name(name: str) -> bool:
    """A valid Namespace name: a DNS label of at most 63 characters."""
    return len(name) <= 63 and _DNS_LABEL.fullmatch(name) is not None


# -- the DNS model -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolution:
    """What a name resolves to from one pod. `key` is the Service that answers with addresses (None when the
    name left the cluster or resolves to nothing); `chain` every Service passed on the way, the first being
    the one the name names and the others the targets of ExternalName CNAMEs; `external` the host outside the
    cluster it ended at; `reason` why it resolves to nothing; `pod` the per-pod label when the name is one pod
    of a headless Service."""

    host: str
    key: Key | None = None
    chain: tuple[Key, ...] = ()
    external: str | None = None
    reason: str | None = None
    pod: str | None = None

    @property
    def resolved(self) -> bool:
        return self.reason is None

    def path(self) -> str:
        """`redis -> shop-pr-1/redis -> shop/redis`, for messages."""
        return " -> ".join([self.host, *map(show, self.chain), *([self.external] if self.external else [])])

    def __str__(self) -> str:
        return self.path() + (f" (unresolved: {self.reason})" if self.reason else "")


class ClusterDNS:
    """The Service records of one cluster and a pod's view of them. Objects without `metadata.namespace` are in
    `default_namespace` (None: a namespace whose name is unknown, which a pod in namespace None still shares)."""

    def __init__(self, objects: Iterable[dict], default_namespace: str | None = None,
                 cluster_domain: str = "cluster.local", max_hops: int = MAX_HOPS):  # fmt: skip
        self.cluster_domain = cluster_domain.strip(".").lower()
        self.domain = tuple(self.cluster_domain.split("."))
        self.max_hops = max_hops
        self.services: dict[Key, dict] = {}
        self.namespaces: set[str] = set()  # known ones: a name ending in one was meant for the cluster
        for obj in objects:
            if not isinstance(obj, dict):
                continue
            if obj.get("kind") == "Namespace":
                self.namespaces.add(name_of(obj))
                continue
            ns = namespace_of(obj) or (None if obj.get("kind") in CLUSTER_SCOPED else default_namespace)
            if ns:
                self.namespaces.add(ns)
            if obj.get("kind") == "Service":
                self.services[(ns, name_of(obj))] = obj

    def fqdn(self, key: Key) -> str:
        return f"{key[1]}.{key[0]}.svc.{self.cluster_domain}"

    def service_key(self, name: str) -> Key | None:
        """The Service an absolute in-cluster name (`svc.ns.svc.<domain>`, trailing dot or not) names, if any."""
        rel = self._in_zone(tuple(name.strip().lower().rstrip(".").split(".")))
        return (rel[1], rel[0]) if rel is not None and len(rel) == 3 and rel[2] == "svc" else None

    def _in_zone(self, labels: tuple) -> tuple | None:
        """The labels before the cluster domain, or None when the name is not in the cluster's zone."""
        n = len(self.domain)
        return labels[:-n] if len(labels) > n and labels[-n:] == self.domain else None

    def _public(self, labels: tuple) -> bool:
        """Whether a name the cluster does not answer could be a host outside it: not one label, and not ending
        in `svc`, the cluster domain or a namespace of the cluster (such a name was meant for the cluster, and an
        upstream resolver has no such zone). A heuristic: the model knows no public zones."""
        return len(labels) > 1 and labels[-1] != "svc" and labels[-1] not in self.namespaces and \
            self._in_zone(labels) is None

    def _record(self, labels: tuple, misses: list[str]) -> tuple[Key, str | None] | None:
        """The Service (and per-pod label) a fully-qualified name has a record for, or None (NXDOMAIN). A Service
        that is there but has no record of that form is noted in `misses`."""
        rel = self._in_zone(labels)
        if rel is None:
            return None
        if len(rel) == 3 and rel[2] == "svc":
            key = (rel[1], rel[0])
            return (key, None) if key in self.services else None
        if len(rel) == 4 and rel[3] == "svc":
            pod, key = rel[0], (rel[2], rel[1])
            service = self.services.get(key)
            if service is None:
                return None
            if is_headless(service):
                return key, pod
            what = "an ExternalName Service" if is_external_name(service) else "not headless (no clusterIP: None)"
            misses.append(f"{pod}: Service {show(key)} is {what}, so it has no per-pod records")
        return None

    def _nothing(self, labels: tuple, pod_namespace: str | None) -> str:
        """Why a name no record answers resolves to nothing, in the words of its plainest reading."""
        if len(labels) == 1:
            return f"no Service {show((pod_namespace, labels[0]))}"
        rel = self._in_zone(labels) or labels
        rel = rel[:-1] if rel[-1] == "svc" else rel
        if len(rel) == 2:
            return f"no Service {rel[1]}/{rel[0]}"
        return f"{'.'.join(labels)} names no Service of the cluster from namespace {pod_namespace}"

    def meant_for_cluster(self, host: str) -> bool:
        """Whether only the cluster could answer a name of more than one label (`svc.ns`, `x.svc`, `...<domain>`):
        such a name that resolves to nothing is a broken reference, not a host elsewhere."""
        labels = tuple(host.strip().lower().rstrip(".").split("."))
        return len(labels) > 1 and not self._public(labels)

    def resolve(self, host: str, pod_namespace: str | None) -> Resolution:
        """What `host` resolves to from a pod in `pod_namespace`: the search path `<ns>.svc.<domain>`,
        `svc.<domain>`, `<domain>` with ndots 5 (a trailing dot skips it), then ExternalName CNAMEs."""
        name = host.strip().lower()
        labels = tuple(name.rstrip(".").split("."))
        if not all(_DNS_LABEL.fullmatch(label) for label in labels):
            return Resolution(host, reason=f"{host!r} is no DNS name")
        if name.endswith("."):
            tries = [labels]
        else:
            searched = [(*labels, pod_namespace, "svc", *self.domain), (*labels, "svc", *self.domain),
                        (*labels, *self.domain)]  # fmt: skip
            tries = [labels, *searched] if name.count(".") >= NDOTS else [*searched, labels]
        misses: list[str] = []
        for i, fqdn in enumerate(tries):
            found = self._record(fqdn, misses)
            if found is not None:
                return self._follow(host, *found)
            if fqdn is labels and i == 0 and self._public(labels):
                return Resolution(host, external=name.rstrip("."))  # ndots reached: asked upstream first
        if misses:
            return Resolution(host, reason="; ".join(misses))
        if self._public(labels):
            return Resolution(host, external=name.rstrip("."))
        if name.endswith(".") and self._in_zone(labels) is None:
            return Resolution(host, reason=f"{host} is absolute (a trailing dot: no search path) and outside "
                                           f"{self.cluster_domain}")  # fmt: skip
        return Resolution(host, reason=self._nothing(labels, pod_namespace))

    def _follow(self, host: str, key: Key, pod: str | None) -> Resolution:
        """From the Service a name has a record for, along ExternalName CNAMEs (absolute names, no search path)."""
        chain = [key]
        while True:
            service = self.services[key]
            if pod is not None or not is_external_name(service):
                return Resolution(host, key=key, chain=tuple(chain), pod=pod)
            target = str(_spec(service).get("externalName") or "").strip().lower()
            labels = tuple(target.rstrip(".").split("."))
            if not target or not all(_DNS_LABEL.fullmatch(label) for label in labels):
                return Resolution(host, chain=tuple(chain), reason=f"ExternalName Service {show(key)} has no valid "
                                                                   f"externalName ({target!r})")  # fmt: skip
            misses: list[str] = []
            found = self._record(labels, misses)
            if found is None:
                if not misses and self._public(labels):
                    return Resolution(host, chain=tuple(chain), external=target.rstrip("."))
                why = "; ".join(misses) or ("one label, and a CNAME target is not searched" if len(labels) == 1
                                            else self._nothing(labels, None))
                return Resolution(host, chain=tuple(chain), reason=f"{show(key)} is an alias of {target}: {why}")
            key, pod = found
            if key in chain:
                loop = " -> ".join(map(show, [*chain, key]))
                return Resolution(host, chain=tuple(chain), reason=f"CNAME loop: {loop}")
            if len(chain) > self.max_hops:
                return Resolution(host, chain=tuple(chain), reason=f"more than {self.max_hops} CNAME hops")
            chain.append(key)


# -- the flow checker ----------------------------------------------------------------------------------------------


def _placed(objects: Iterable[dict], default_namespace: str | None) -> list[dict]:
    """The objects with the namespace each namespaced one lands in written out (copies where it was left to the
    destination), so that every later lookup is by its real namespace."""
    out: list[dict] = []
    for o in objects:
        if not isinstance(o, dict):
            continue
        if namespace_of(o) or o.get("kind") in CLUSTER_SCOPED or default_namespace is None:
            out.append(o)
        else:
            out.append({**o, "metadata": {**(o.get("metadata") or {}), "namespace": default_namespace}})
    return out


def _ports(service: dict) -> list[tuple[str, str, str]]:
    ports = _spec(service).get("ports") or []
    return sorted((str(p.get("name") or ""), str(p.get("port")), str(p.get("protocol") or "TCP"))
                  for p in ports if isinstance(p, dict))  # fmt: skip


def _show_ports(ports: list[tuple[str, str, str]]) -> str:
    return "[" + ", ".join(f"{name + ' ' if name else ''}{port}/{proto}" for name, port, proto in ports) + "]"


@dataclass
class NamespaceFlow:
    """One flow in `namespace` isolation, as the cluster would hold it: which flow namespace stands for which
    baseline namespace, the dev Services (non-ExternalName, in a flow namespace) and the dev pods."""

    baseline: Objects
    rendered: Objects
    flow: str
    to_flow: dict[str, str]  # baseline namespace -> flow namespace
    dns: ClusterDNS
    template_too_long: list[str] = field(default_factory=list)
    to_base: dict[str, str] = field(init=False)
    dev_services: set[Key] = field(init=False)
    aliases: list[dict] = field(init=False)
    dev_pods: list[dict] = field(init=False)
    touched: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.to_base = {f: b for b, f in self.to_flow.items()}
        services = [s for s in self.rendered.of_kind("Service") if namespace_of(s) in self.to_base]
        self.dev_services = {(namespace_of(s), name_of(s)) for s in services if not is_external_name(s)}
        self.aliases = [s for s in services if is_external_name(s)]
        self.dev_pods = [o for o in self.rendered.objects
                         if pod_template(o) is not None and namespace_of(o) in self.to_base]  # fmt: skip
        self.touched = sorted({self.to_base[ns] for o in self.rendered.objects
                               if o.get("kind") != "Namespace" and (ns := namespace_of(o)) in self.to_base})

    def expected(self, key: Key) -> Key:
        """Where a name for this Service (a baseline key or a flow key) must end from a dev pod: at the dev
        version when the flow has one, else at the baseline Service."""
        ns, name = key
        base = self.to_base.get(ns, ns) if ns is not None else None
        dev = (self.to_flow.get(base or ""), name)
        return dev if dev in self.dev_services else (base, name)

    def reaches(self, res: Resolution, expected: Key) -> bool:
        """A dev version must answer itself; a baseline Service answers itself or, being ExternalName, by its own
        CNAME (where that leads is the baseline's business)."""
        if res.key == expected:
            return True
        base = self.baseline.get("Service", expected)
        return base is not None and is_external_name(base) and expected in res.chain

    def kind_of(self, key: Key) -> str:
        if key in self.dev_services:
            return "dev"
        if self.baseline.get("Service", key) is not None:
            return "baseline"
        return "neither dev nor baseline"

    def outcome(self, res: Resolution) -> str:
        """Where a resolution ended, in words."""
        if res.external:
            return f"the external host {res.external}" + (f" ({res.path()})" if res.chain else "")
        assert res.key is not None
        aliases = [show(k) for k in res.chain[:-1]]
        through = f", through {' and '.join(aliases)}" if aliases else ""
        return f"{show(res.key)} ({self.kind_of(res.key)}{through})"

    def problem(self, res: Resolution, expected: Key, pod_ns: str) -> str | None:
        """None when `res` ends where it must, else what went wrong (a phrase after the name)."""
        if self.reaches(res, expected):
            return None
        if not res.resolved:
            return f"does not resolve from {pod_ns}: {res.reason}"
        if expected in self.dev_services:
            return f"resolves to {self.outcome(res)} but the flow has a dev version {show(expected)}"
        return f"resolves to {self.outcome(res)}, not to the baseline {show(expected)}"


def _flow_namespaces(baseline: Objects, flow: str, template: str, namespaces: dict[str, str] | None) -> dict:
    names = {ns for o in baseline.objects if (ns := namespace_of(o))}
    names |= {name_of(o) for o in baseline.of_kind("Namespace")}
    given = dict(namespaces or {})
    return {b: given.get(b) or template.format(namespace=b, flow=flow) for b in sorted(names | set(given))}


def check_namespace_flow(baseline_objects: list[dict], rendered_objects: list[dict], flow: str,
                         template: str = "{namespace}-{flow}", cluster_domain: str = "cluster.local",
                         default_namespace: str | None = None,
                         namespaces: dict[str, str] | None = None) -> list[Violation]:  # fmt: skip
    """Every `dns`, `alias` and `placement` violation of a flow in `namespace` isolation. A baseline namespace's
    flow namespace is `namespaces[ns]` when given (devlane shortens names over 63 characters; this checker does not
    guess how), else `template` formatted with `namespace` and `flow`. Objects without a namespace are in
    `default_namespace`; a baseline Service or workload with neither is a usage error (its flow namespace is
    unknown)."""
    baseline = Objects(_placed(baseline_objects, default_namespace))
    rendered = Objects(_placed(rendered_objects, default_namespace))
    unplaced = [describe(o) for o in baseline.of_kind("Service", *WORKLOAD_KINDS) if namespace_of(o) is None]
    if unplaced:
        raise ValueError(f"baseline objects without a namespace ({', '.join(unplaced)}): pass default_namespace")
    to_flow = _flow_namespaces(baseline, flow, template, namespaces)
    too_long = [f for b, f in to_flow.items() if len(f) > 63 and b not in (namespaces or {})]
    dns = ClusterDNS([*baseline.objects, *rendered.objects], cluster_domain=cluster_domain)
    lane = NamespaceFlow(baseline, rendered, flow, to_flow, dns, too_long)
    return [*check_placement(lane), *check_aliases(lane), *check_dns(lane)]


def check_placement(lane: NamespaceFlow) -> list[Violation]:
    """Rendered objects only in flow namespaces, each such namespace rendered, and a dev pod's claims and
    ConfigMaps in its own namespace (a pod cannot read them across namespaces)."""
    out: list[Violation] = []
    flow_names = ", ".join(sorted(lane.to_base))
    hint = (f" (the template gives {', '.join(lane.template_too_long)}, over 63 characters: pass namespaces= with "
            "the names devlane chose)") if lane.template_too_long else ""  # fmt: skip
    for obj in lane.rendered.objects:
        kind, ns = obj.get("kind"), namespace_of(obj)
        if kind == "Namespace":
            if name_of(obj) not in lane.to_base:
                out.append(Violation("placement", f"rendered Namespace {name_of(obj)} is no flow namespace of "
                                                  f"{lane.flow} ({flow_names}){hint}"))  # fmt: skip
        elif kind in CLUSTER_SCOPED or ns in lane.to_base:
            continue
        elif ns is None:
            out.append(Violation("placement", f"rendered {describe(obj)} has no namespace"))
        elif ns in lane.to_flow:
            out.append(Violation("placement", f"rendered {describe(obj)} sits in baseline namespace {ns}; its flow "
                                              f"namespace is {lane.to_flow[ns]}"))  # fmt: skip
        else:
            out.append(Violation("placement", f"rendered {describe(obj)} is in namespace {ns}, which is no flow "
                                              f"namespace of {lane.flow} ({flow_names}){hint}"))  # fmt: skip
    namespace_objects = {name_of(o) for o in lane.rendered.of_kind("Namespace")}
    for b in lane.touched:
        f = lane.to_flow[b]
        if f not in namespace_objects:
            out.append(Violation("placement", f"flow namespace {f} holds objects but the flow renders no "
                                              f"Namespace {f}"))  # fmt: skip
        if not is_namespace_name(f):
            out.append(Violation("placement", f"flow namespace {f} is no valid namespace name (a DNS label of at "
                                              "most 63 characters)"))  # fmt: skip
    for pod in lane.dev_pods:
        ns = namespace_of(pod)
        for kind, name in sorted(set(object_refs(pod_spec(pod)))):
            if kind not in ("ConfigMap", "PersistentVolumeClaim") or lane.rendered.get(kind, (ns, name)) or \
                    lane.baseline.get(kind, (ns, name)):
                continue
            verb = "mounts" if kind == "PersistentVolumeClaim" else "reads"
            base = lane.to_base[ns]
            there = f" (the baseline holds {show((base, name))})" if lane.baseline.get(kind, (base, name)) else ""
            out.append(Violation("placement", f"{describe(pod)} {verb} {kind} {name}, which its namespace {ns} "
                                              f"does not hold{there}"))  # fmt: skip
    return out


def check_aliases(lane: NamespaceFlow) -> list[Violation]:
    """Each alias forwards its short name to its namesake baseline Service, with its ports, and only when the
    flow has no dev version of it; every other baseline Service of a touched namespace has one."""
    out: list[Violation] = []
    rendered_services = Counter((namespace_of(s), name_of(s)) for s in lane.rendered.of_kind("Service"))
    for key, n in sorted(rendered_services.items(), key=str):
        if n > 1:
            out.append(Violation("alias", f"the flow renders {n} Services {show(key)}"))
    for alias in lane.aliases:
        f, name = namespace_of(alias) or "", name_of(alias)
        key, base = (f, name), (lane.to_base[f], name)
        target = str(_spec(alias).get("externalName") or "")
        target_key = lane.dns.service_key(target)
        namesake = lane.baseline.get("Service", base)
        if target_key is None and namesake is not None and is_external_name(namesake):
            continue  # the dev version of a baseline ExternalName Service, not an alias
        if target_key is None:
            out.append(Violation("alias", f"alias {show(key)} points at {target!r}, which is no Service name of the "
                                          f"cluster (expected {lane.dns.fqdn(base)})"))  # fmt: skip
            continue
        if target_key != base:
            out.append(Violation("alias", f"alias {show(key)} points at {show(target_key)}; the short name {name} "
                                          f"in {f} must reach {show(base)}"))  # fmt: skip
        target_service = lane.baseline.get("Service", target_key)
        if target_service is None:
            out.append(Violation("alias", f"alias {show(key)} points at {show(target_key)}, which is no baseline "
                                          "Service"))  # fmt: skip
            continue
        dev = lane.expected(target_key)
        if dev != target_key:
            out.append(Violation("alias", f"alias {show(key)} points at baseline {show(target_key)}, which has a dev "
                                          f"version {show(dev)}"))  # fmt: skip
        if _ports(alias) != _ports(target_service):
            out.append(Violation("alias", f"alias {show(key)} has ports {_show_ports(_ports(alias))} but its "
                                          f"baseline {show(target_key)} has {_show_ports(_ports(target_service))}"))
    for b in lane.touched:
        f = lane.to_flow[b]
        for service in lane.baseline.of_kind("Service"):
            if namespace_of(service) == b and (f, name_of(service)) not in rendered_services:
                out.append(Violation("alias", f"baseline Service {show((b, name_of(service)))} has neither a dev "
                                              f"version nor an alias in {f}"))  # fmt: skip
    return out


def dependencies(lane: NamespaceFlow, pod: dict) -> list[Key]:
    """The dependency edges of a dev pod, as baseline Service keys: the annotation on its baseline workload (same
    kind and name in the baseline namespace) and on the baseline Services selecting that workload's pods or whose
    dev version selects the dev pod; a workload new in the flow has its own and its Services' annotations."""
    f = namespace_of(pod) or ""
    b, name = lane.to_base[f], name_of(pod)
    workload = lane.baseline.get(str(pod.get("kind")), (b, name))
    parents = [workload] if workload is not None else [pod]
    for service in lane.baseline.of_kind("Service"):
        if namespace_of(service) != b:
            continue
        dev = lane.rendered.get("Service", (f, name_of(service)))
        if (workload is not None and service_selects(service, pod_labels(workload))) or (
                dev is not None and not is_external_name(dev) and service_selects(dev, pod_labels(pod))):
            parents.append(service)
    if workload is None:
        parents += [s for s in lane.rendered.of_kind("Service") if namespace_of(s) == f
                    and not is_external_name(s) and service_selects(s, pod_labels(pod))]  # fmt: skip
    keys: list[Key] = []
    for parent in parents:
        for ns, dep in dependency_keys(parent):
            key = (lane.to_base.get(ns or "", ns), dep)
            if key not in keys:
                keys.append(key)
    return keys


def check_dns(lane: NamespaceFlow) -> list[Violation]:
    """From each dev pod: every host it reads that names a Service resolves, to the dev version when the flow has
    one, else to the baseline; every dependency edge, spelled `svc` (same namespace) or `svc.ns`, does too. A
    cross-namespace edge may instead be wired by an address the pod reads (DNS alone cannot send `svc.ns` to
    the flow namespace), a same-namespace edge may not (its short name must work by DNS alone)."""
    out: list[Violation] = []
    for pod in lane.dev_pods:
        f = namespace_of(pod) or ""
        b = lane.to_base[f]
        read: list[Resolution] = []
        for where in pod_reads(pod, lane.rendered, lane.baseline):
            for host in sorted(where.hosts):
                res = lane.dns.resolve(host, f)
                read.append(res)
                named = lane.dns.resolve(host, b).chain[:1] or res.chain[:1]
                if not named and not lane.dns.meant_for_cluster(host):
                    continue  # names no Service, and could be a host elsewhere (or no host at all)
                expected = lane.expected(named[0]) if named else None
                if expected is None:
                    out.append(Violation("dns", f"{where.where}: {host} does not resolve from {f}: {res.reason}"))
                elif problem := lane.problem(res, expected, f):
                    out.append(Violation("dns", f"{where.where}: {host} {problem}"))
        for dep_ns, dep in dependencies(lane, pod):
            host = dep if dep_ns == b else f"{dep}.{dep_ns}"
            expected = lane.expected((dep_ns, dep))
            problem = lane.problem(lane.dns.resolve(host, f), expected, f)
            if problem is None:
                continue
            if dep_ns != b:
                if any(lane.reaches(r, expected) for r in read):
                    continue
                problem += ", and no address the pod reads reaches it"
            out.append(Violation("dns", f"{describe(pod)}: dependency {host} {problem}"))
    return out
