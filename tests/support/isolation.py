"""An isolation checker for rendered flows that does not trust devlane: it reads the objects the way a reviewer
would and reports, in words, where a dev lane can still reach the baseline.

It imports nothing from `renderer`; its reference finder is its own, small and deliberately conservative (it
looks for host names in the forms people write them and may miss odd ones, but what it reports is a real
reference). Use:

    violations = check_flow(baseline_objects, load_flow(out / "flows" / "pr-1"), "pr-1")

Each `Violation` has a `kind`:
- `selector`: a baseline Service or workload selector matches a dev pod (or a dev Service selects no dev pod);
- `reference`: a dev pod reads a reference to a baseline Service that has a dev version (env, args, command,
  init containers, every ConfigMap it reads);
- `missing`: a dev pod reads a per-flow ConfigMap copy that the flow does not hold;
- `volume`: a dev pod mounts a baseline PersistentVolumeClaim;
- `namespace`: a dev object does not sit in its baseline object's namespace;
- `dangling`: a dev pod reads a ConfigMap, Secret or claim by a name that exists neither in the baseline nor in
  the flow, and its baseline pod does not read that name (a generated name not followed, say);
- `unwired`: an annotated dependency edge between two dev versions with no reference from the dev parent to
  the dev dependency (`edge` holds the two `(namespace, name)` keys). Callers decide whether devlane warned.

Objects without `metadata.namespace` are in the destination namespace, written `None` here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import yamlc

DEPENDENCIES = "kardinal.dev.service/dependencies"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job", "CronJob",
                  "Pod")  # fmt: skip
ADDRESS_WORDS = ("HOST", "ADDR", "URL", "URI", "SERVER", "ENDPOINT", "BROKER")

Key = tuple[str | None, str]  # (namespace, name)


@dataclass(frozen=True)
class Violation:
    kind: str
    message: str
    edge: tuple[Key, Key] | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.message


# -- loading -------------------------------------------------------------------------------------------------------


def load_yaml_files(paths: Iterable[Path]) -> list[dict]:
    """Every object (a mapping with a `kind`) in these YAML files, in order."""
    objects: list[dict] = []
    for path in paths:
        for doc in yamlc.safe_load_all(Path(path).read_text()):
            if isinstance(doc, dict) and doc.get("kind"):
                objects.append(doc)
    return objects


def load_flow(flow_dir: Path) -> list[dict]:
    """The objects a GitOps tool would apply from a flow directory: the files its kustomization.yaml lists."""
    flow_dir = Path(flow_dir)
    kustomization = yamlc.safe_load((flow_dir / "kustomization.yaml").read_text()) or {}
    resources = kustomization.get("resources") or []
    return load_yaml_files(flow_dir / r for r in resources)


# -- object helpers ------------------------------------------------------------------------------------------------


def namespace_of(obj: dict) -> str | None:
    return (obj.get("metadata") or {}).get("namespace") or None


def name_of(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def key_of(obj: dict) -> Key:
    return namespace_of(obj), name_of(obj)


def show(key: Key) -> str:
    ns, name = key
    return f"{ns}/{name}" if ns else name


def describe(obj: dict) -> str:
    return f"{obj.get('kind')} {show(key_of(obj))}"


def pod_template(obj: dict) -> dict | None:
    """The pod (metadata + spec) a workload runs, or None."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return {"metadata": obj.get("metadata") or {}, "spec": spec}
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    elif kind not in WORKLOAD_KINDS:
        return None
    template = spec.get("template")
    return template if isinstance(template, dict) else None


def pod_labels(obj: dict) -> dict:
    template = pod_template(obj) or {}
    return dict((template.get("metadata") or {}).get("labels") or {})


def pod_spec(obj: dict) -> dict:
    return (pod_template(obj) or {}).get("spec") or {}


def containers(spec: dict) -> Iterator[dict]:
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(group) or []:
            if isinstance(c, dict):
                yield c


def labels_match_map(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(str(labels.get(k)) == str(v) and k in labels for k, v in selector.items())


def labels_match_selector(selector: dict, labels: dict) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions); an empty selector matches nothing here."""
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return False
    if not all(k in labels and str(labels[k]) == str(v) for k, v in match_labels.items()):
        return False
    for e in expressions:
        key, op, values = e.get("key"), e.get("operator"), [str(v) for v in e.get("values") or []]
        if op == "In" and not (key in labels and str(labels[key]) in values):
            return False
        if op == "NotIn" and key in labels and str(labels[key]) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def workload_selects(obj: dict, labels: dict) -> bool:
    """Whether a workload's selector matches pod labels (a ReplicationController's is a plain map, its template's
    labels when absent; a Job's is usually generated, so only a written one counts)."""
    selector = (obj.get("spec") or {}).get("selector")
    if obj.get("kind") == "ReplicationController":
        return labels_match_map(selector or pod_labels(obj), labels)
    return isinstance(selector, dict) and labels_match_selector(selector, labels)


def service_selects(service: dict, labels: dict) -> bool:
    selector = (service.get("spec") or {}).get("selector") or {}
    return labels_match_map(selector, labels)


# -- the reference finder ------------------------------------------------------------------------------------------

_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_HOST = rf"{_LABEL}(?:\.{_LABEL})*"
_URL = re.compile(r"[a-z][a-z0-9+.\-]*://([^/\s?#'\"]*)")
_HOST_PORT = re.compile(rf"(?<![\w.\-/:])({_HOST}):(\d{{1,5}})(?![\d@\w])")
_SVC_NAME = re.compile(rf"(?<![\w.\-])({_LABEL}\.{_LABEL}\.svc(?:\.cluster\.local)?)(?![\w\-])")
_KEY_VALUE = re.compile(r"(?:^|[\s;,:\"'(])(?:host|hostname|hosts|server|data source|address|addr)"
                        r"\s*=\s*([^;\s,\"')]+)")
_LINE_KEY = re.compile(r"""^\s*["']?([\w.\-]+)["']?\s*[:=]\s*["']?([^"'#\s]+)["']?\s*,?\s*$""")
_HOST_FLAGS = {"-h", "--host", "--hostname", "--server", "--addr", "--address", "--broker", "--brokers", "--slaveof",
               "--replicaof", "--master", "--upstream", "--endpoint", "--url"}  # fmt: skip
_NOT_HOSTS = {"sleep", "timeout", "wait", "exit", "seq", "head", "tail", "kill", "chmod", "umask", "ulimit"}


def _strip_port(host: str) -> str:
    host = host.strip().strip("[]")
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.strip().rstrip(".")


def _is_host(token: str) -> bool:
    return re.fullmatch(_HOST, token) is not None


def _bare_hosts(value: str) -> set[str]:
    """A value that is all address: `svc`, `svc:80`, `a:9092,b:9092`, `svc.ns.svc.cluster.local`."""
    found = set()
    for part in value.strip().lower().split(","):
        part = part.strip()
        if "://" in part or " " in part:
            continue
        host = _strip_port(part.rsplit("@", 1)[-1])
        if _is_host(host):
            found.add(host)
    return found


def is_address_key(key: str | None) -> bool:
    upper = (key or "").upper()
    return any(word in upper for word in ADDRESS_WORDS)


def hosts_in(text: str, key: str | None = None) -> set[str]:
    """The host names a string refers to, lower-cased (not yet resolved to Services)."""
    if not isinstance(text, str) or not text:
        return set()
    low = text.lower()
    found: set[str] = set()
    for m in _URL.finditer(low):
        authority = m.group(1).rsplit("@", 1)[-1]
        for part in authority.split(","):
            host = _strip_port(part)
            if _is_host(host):
                found.add(host)
    for m in _HOST_PORT.finditer(low):
        found.add(m.group(1))
    for m in _SVC_NAME.finditer(low):
        found.add(m.group(1))
    for m in _KEY_VALUE.finditer(low):
        found |= _bare_hosts(m.group(1))
    if is_address_key(key):
        found |= _bare_hosts(low)
    if "\n" in text:  # a file: YAML, JSON, INI, properties
        for line in low.splitlines():
            m = _LINE_KEY.match(line)
            if m and is_address_key(m.group(1)):
                found |= _bare_hosts(m.group(2))
    return found


def _words(text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    return [w.strip(";&|()`") for w in words]


def hosts_in_command(items: list) -> set[str]:
    """Hosts in a container's command + args: each item as text, flags (`--x-url=V`, `--host V`, `-h V`), and
    `host PORT` pairs in shell strings (`nc -z rabbitmq 5672`, `--replicaof redis 6379`)."""
    items = [str(i) for i in items or []]
    found: set[str] = set()
    words: list[str] = []
    for item in items:
        found |= hosts_in(item)
        words.extend(_words(item))
    for i, word in enumerate(words):
        low = word.lower()
        nxt = words[i + 1].lower() if i + 1 < len(words) else ""
        if low.startswith("-") and "=" in low:
            flag, value = low.split("=", 1)
            found |= hosts_in(value, flag.lstrip("-").replace("-", "_"))
        elif low in _HOST_FLAGS or (low.startswith("--") and is_address_key(low[2:].replace("-", "_"))):
            if nxt and not nxt.startswith("-"):
                found |= _bare_hosts(nxt) | hosts_in(nxt)
        elif _is_host(low) and low not in _NOT_HOSTS and not low.isdigit() and re.fullmatch(r"\d{2,5}", nxt or ""):
            found.add(low)
    return found


def resolve(host: str, pod_ns: str | None, namespaces: set[str | None]) -> Key | None:
    """The Service key (namespace, name) a host names from a pod in `pod_ns`; None when it is no cluster name."""
    labels = host.lower().rstrip(".").split(".")
    if len(labels) == 1:
        return pod_ns, labels[0]
    name, ns, rest = labels[0], labels[1], labels[2:]
    if rest not in ([], ["svc"], ["svc", "cluster", "local"]):
        return None
    if ns not in namespaces and pod_ns is None and None in namespaces:
        return None, name  # the destination namespace, whatever its name
    return ns, name


# -- what a dev pod reads ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    """One place a pod reads a value from, and the hosts found there."""

    where: str
    hosts: frozenset[str]


class Objects:
    """An object set indexed by (kind, namespace, name)."""

    def __init__(self, objects: Iterable[dict]):
        self.objects = [o for o in objects if isinstance(o, dict)]
        self.index = {(o.get("kind"), *key_of(o)): o for o in self.objects}

    def get(self, kind: str, key: Key) -> dict | None:
        return self.index.get((kind, *key))

    def of_kind(self, *kinds: str) -> list[dict]:
        return [o for o in self.objects if o.get("kind") in kinds]

    def namespaces(self) -> set[str | None]:
        return {namespace_of(o) for o in self.objects if o.get("kind") != "Namespace"}


def config_map_reads(cm: dict, keys: list[str] | None, where: str, prefix: str = "") -> Iterator[Read]:
    data = {**(cm.get("data") or {})}
    for k, v in sorted(data.items()):
        if keys is None or k in keys:
            yield Read(f"{where} key {k}", frozenset(hosts_in(str(v), prefix + k)))


def pod_reads(obj: dict, rendered: Objects, baseline: Objects) -> list[Read]:
    """Every value the pod of `obj` reads that may hold an address: env values (and the ConfigMap keys they
    come from), command and args of every container (init containers too), and every ConfigMap it reads."""
    ns = namespace_of(obj)
    spec = pod_spec(obj)
    reads: list[Read] = []

    def config_map(name: str) -> tuple[dict | None, str]:
        cm = rendered.get("ConfigMap", (ns, name))
        if cm is not None:
            return cm, f"ConfigMap {show((ns, name))} (rendered)"
        cm = baseline.get("ConfigMap", (ns, name))
        return cm, f"ConfigMap {show((ns, name))} (baseline)"

    for c in containers(spec):
        cname = f"{describe(obj)} container {c.get('name')}"
        for e in c.get("env") or []:
            if "value" in e:
                reads.append(Read(f"{cname} env {e.get('name')}", frozenset(hosts_in(str(e["value"]), e.get("name")))))
            ref = ((e.get("valueFrom") or {}).get("configMapKeyRef")) or {}
            if ref.get("name"):
                cm, label = config_map(ref["name"])
                if cm is not None:
                    value = str((cm.get("data") or {}).get(ref.get("key"), ""))
                    hosts = hosts_in(value, e.get("name")) | hosts_in(value, ref.get("key"))
                    reads.append(Read(f"{cname} env {e.get('name')} from {label} key {ref.get('key')}",
                                      frozenset(hosts)))  # fmt: skip
        for source in c.get("envFrom") or []:
            ref = source.get("configMapRef") or {}
            if ref.get("name"):
                cm, label = config_map(ref["name"])
                if cm is not None:
                    reads += config_map_reads(cm, None, f"{cname} envFrom {label}", source.get("prefix") or "")
        command = [*(c.get("command") or []), *(c.get("args") or [])]
        if command:
            reads.append(Read(f"{cname} command/args", frozenset(hosts_in_command(command))))
    for v in spec.get("volumes") or []:
        sources = []
        if isinstance(v.get("configMap"), dict):
            sources.append(v["configMap"])
        for p in ((v.get("projected") or {}).get("sources")) or []:
            if isinstance(p.get("configMap"), dict):
                sources.append(p["configMap"])
        for s in sources:
            if not s.get("name"):
                continue
            cm, label = config_map(s["name"])
            if cm is not None:
                keys = [i.get("key") for i in s["items"]] if s.get("items") else None
                reads += config_map_reads(cm, keys, f"{describe(obj)} volume {v.get('name')} {label}")
    return reads


def referenced_services(obj: dict, rendered: Objects, baseline: Objects, namespaces: set) -> dict[Key, list[str]]:
    """Service keys the pod of `obj` refers to -> where."""
    found: dict[Key, list[str]] = {}
    for read in pod_reads(obj, rendered, baseline):
        for host in sorted(read.hosts):
            key = resolve(host, namespace_of(obj), namespaces)
            if key is not None:
                found.setdefault(key, []).append(f"{read.where} ({host})")
    return found


# -- the checks ----------------------------------------------------------------------------------------------------


def dev_name(name: str, flow: str) -> str:
    return f"{name}-{flow}"


def baseline_name(name: str, flow: str) -> str | None:
    suffix = f"-{flow}"
    return name[: -len(suffix)] if name.endswith(suffix) and len(name) > len(suffix) else None


def check_flow(baseline_objects: list[dict], rendered_objects: list[dict], flow: str) -> list[Violation]:
    baseline, rendered = Objects(baseline_objects), Objects(rendered_objects)
    return [*check_selectors(baseline, rendered), *check_references(baseline, rendered, flow),
            *check_missing_config_maps(rendered, flow), *check_volumes(baseline, rendered),
            *check_namespaces(baseline, rendered, flow), *check_dangling(baseline, rendered, flow),
            *check_edges(baseline, rendered, flow)]  # fmt: skip


def dev_pods(rendered: Objects) -> list[dict]:
    return [o for o in rendered.objects if pod_template(o) is not None]


def check_selectors(baseline: Objects, rendered: Objects) -> list[Violation]:
    out: list[Violation] = []
    for pod in dev_pods(rendered):
        labels, ns = pod_labels(pod), namespace_of(pod)
        for svc in baseline.of_kind("Service"):
            if namespace_of(svc) == ns and service_selects(svc, labels):
                out.append(Violation("selector", f"baseline {describe(svc)} selects the dev pods of {describe(pod)}"))
        for wl in baseline.of_kind(*WORKLOAD_KINDS):
            if namespace_of(wl) == ns and workload_selects(wl, labels):
                out.append(Violation("selector", f"baseline {describe(wl)} selects the dev pods of {describe(pod)}"))
    for svc in rendered.of_kind("Service"):
        if (svc.get("spec") or {}).get("selector") and not any(
            namespace_of(p) == namespace_of(svc) and service_selects(svc, pod_labels(p)) for p in dev_pods(rendered)
        ):
            out.append(Violation("selector", f"dev {describe(svc)} selects no dev pod"))
    return out


def services_with_dev_version(baseline: Objects, rendered: Objects, flow: str) -> set[Key]:
    return {key_of(s) for s in baseline.of_kind("Service")
            if rendered.get("Service", (namespace_of(s), dev_name(name_of(s), flow))) is not None}  # fmt: skip


def check_references(baseline: Objects, rendered: Objects, flow: str) -> list[Violation]:
    with_dev = services_with_dev_version(baseline, rendered, flow)
    namespaces = baseline.namespaces() | rendered.namespaces()
    out: list[Violation] = []
    for pod in dev_pods(rendered):
        for key, places in sorted(referenced_services(pod, rendered, baseline, namespaces).items(), key=str):
            if key in with_dev:
                out += [Violation("reference", f"{describe(pod)} reads baseline Service {show(key)}, which has a dev "
                                               f"version {show((key[0], dev_name(key[1], flow)))}: {p}")
                        for p in places]  # fmt: skip
    return out


def config_map_refs(spec: dict) -> Iterator[dict]:
    """Every ConfigMap reference in a pod spec (`name`, `optional`): envFrom, configMapKeyRef, volumes, projected."""
    for c in containers(spec):
        for e in c.get("envFrom") or []:
            yield e.get("configMapRef") or {}
        for e in c.get("env") or []:
            yield (e.get("valueFrom") or {}).get("configMapKeyRef") or {}
    for v in spec.get("volumes") or []:
        yield v.get("configMap") or {}
        for p in ((v.get("projected") or {}).get("sources")) or []:
            yield p.get("configMap") or {}


def object_refs(spec: dict) -> Iterator[tuple[str, str]]:
    """(kind, name) of every ConfigMap, Secret and claim a pod spec reads, optional ones left out."""
    def named(kind: str, ref: dict, field: str = "name") -> Iterator[tuple[str, str]]:
        if ref.get(field) and not ref.get("optional"):
            yield kind, str(ref[field])

    for c in containers(spec):
        for e in c.get("envFrom") or []:
            yield from named("ConfigMap", e.get("configMapRef") or {})
            yield from named("Secret", e.get("secretRef") or {})
        for e in c.get("env") or []:
            yield from named("ConfigMap", (e.get("valueFrom") or {}).get("configMapKeyRef") or {})
            yield from named("Secret", (e.get("valueFrom") or {}).get("secretKeyRef") or {})
    for v in spec.get("volumes") or []:
        yield from named("ConfigMap", v.get("configMap") or {})
        yield from named("Secret", v.get("secret") or {}, "secretName")
        yield from named("PersistentVolumeClaim", v.get("persistentVolumeClaim") or {}, "claimName")
        for p in ((v.get("projected") or {}).get("sources")) or []:
            yield from named("ConfigMap", p.get("configMap") or {})
            yield from named("Secret", p.get("secret") or {})


def check_dangling(baseline: Objects, rendered: Objects, flow: str) -> list[Violation]:
    """Every object a dev pod reads exists, in the baseline or the flow, unless its baseline pod reads that same
    missing name (an object made outside the repository)."""
    out: list[Violation] = []
    for pod in dev_pods(rendered):
        ns, base_name = namespace_of(pod), baseline_name(name_of(pod), flow)
        base = baseline.get(pod["kind"], (ns, base_name)) if base_name else None
        outside = set(object_refs(pod_spec(base))) if base is not None else set()
        for kind, name in sorted(set(object_refs(pod_spec(pod)))):
            if baseline.get(kind, (ns, name)) is None and rendered.get(kind, (ns, name)) is None and (
                    kind, name) not in outside:
                out.append(Violation("dangling", f"{describe(pod)} reads {kind} {show((ns, name))}, which exists "
                                                 "neither in the baseline nor in the flow"))  # fmt: skip
    return out


def check_missing_config_maps(rendered: Objects, flow: str) -> list[Violation]:
    """A dev pod pointed at a per-flow ConfigMap copy (`<cm>-<flow>`, not optional) that the flow does not hold
    cannot start."""
    out: list[Violation] = []
    for pod in dev_pods(rendered):
        ns = namespace_of(pod)
        names = {r["name"] for r in config_map_refs(pod_spec(pod)) if r.get("name") and not r.get("optional")}
        for name in sorted(names):
            if baseline_name(name, flow) and rendered.get("ConfigMap", (ns, name)) is None:
                out.append(Violation("missing", f"{describe(pod)} reads ConfigMap {show((ns, name))}, "
                                                "which the flow does not hold"))  # fmt: skip
    return out


def check_volumes(baseline: Objects, rendered: Objects) -> list[Violation]:
    out: list[Violation] = []
    for pod in dev_pods(rendered):
        ns = namespace_of(pod)
        for v in pod_spec(pod).get("volumes") or []:
            claim = ((v.get("persistentVolumeClaim") or {}).get("claimName")) or ""
            if (baseline.get("PersistentVolumeClaim", (ns, claim)) is not None
                    and rendered.get("PersistentVolumeClaim", (ns, claim)) is None):  # fmt: skip
                out.append(Violation("volume", f"{describe(pod)} mounts baseline PersistentVolumeClaim "
                                               f"{show((ns, claim))} (volume {v.get('name')})"))  # fmt: skip
    return out


def check_namespaces(baseline: Objects, rendered: Objects, flow: str) -> list[Violation]:
    out: list[Violation] = []
    for obj in rendered.objects:
        base = baseline_name(name_of(obj), flow)
        if base is None:
            continue
        homes = {namespace_of(b) for b in baseline.objects if b.get("kind") == obj.get("kind") and name_of(b) == base}
        if homes and namespace_of(obj) not in homes:
            where = ", ".join(sorted(str(h) for h in homes))
            out.append(Violation("namespace", f"dev {describe(obj)} is in namespace {namespace_of(obj)}, its baseline "
                                              f"{obj.get('kind')} {base} in {where}"))  # fmt: skip
    return out


def dependency_keys(obj: dict) -> list[Key]:
    """`svc:port` and `svc.namespace:port` items of the dependencies annotation, as Service keys."""
    text = str(((obj.get("metadata") or {}).get("annotations") or {}).get(DEPENDENCIES) or "")
    keys: list[Key] = []
    for item in text.split(","):
        target = item.strip().split(":", 1)[0].strip()
        if not target:
            continue
        name, _, ns = target.partition(".")
        keys.append((ns or namespace_of(obj), name))
    return keys


def check_edges(baseline: Objects, rendered: Objects, flow: str) -> list[Violation]:
    """Every annotated edge between two dev versions must have a reference from the dev parent's pods to the dev
    dependency's Service."""
    namespaces = baseline.namespaces() | rendered.namespaces()
    out: list[Violation] = []
    for parent in baseline.of_kind("Service", *WORKLOAD_KINDS):
        deps = dependency_keys(parent)
        if not deps:
            continue
        ns = namespace_of(parent)
        dev_parent = rendered.get(parent["kind"], (ns, dev_name(name_of(parent), flow)))
        if dev_parent is None:
            continue
        if parent["kind"] == "Service":
            pods = [p for p in dev_pods(rendered)
                    if namespace_of(p) == ns and service_selects(dev_parent, pod_labels(p))]  # fmt: skip
        else:
            pods = [dev_parent]
        refs: set[Key] = set()
        for pod in pods:
            refs |= set(referenced_services(pod, rendered, baseline, namespaces))
        for dep_ns, dep in deps:
            dev_dep = (dep_ns, dev_name(dep, flow))
            if rendered.get("Service", dev_dep) is None or dev_dep in refs:
                continue
            a, b = key_of(parent), (dep_ns, dep)
            out.append(Violation("unwired", f"unwired {show(a)}->{show(b)}: no dev pod of {show(key_of(dev_parent))} "
                                            f"refers to {show(dev_dep)}", edge=(a, b)))  # fmt: skip
    return out


_MARKER = "zz-isolation-marker"


def host_positions(text: str, key: str | None, name: str, ns: str | None, namespaces: set) -> int:
    """How many occurrences of `name` in `text` the finder reads as a host (each tried on its own)."""
    count = 0
    for m in re.finditer(rf"(?<![\w\-.]){re.escape(name)}(?![\w\-])", text):
        variant = text[: m.start()] + _MARKER + text[m.end() :]
        count += any((resolve(h, ns, namespaces) or (None, ""))[1] == _MARKER for h in hosts_in(variant, key))
    return count


def config_map_copy_changes(baseline_objects: list[dict], rendered_objects: list[dict], flow: str) -> list[Violation]:
    """A per-flow ConfigMap copy (`<cm>-<flow>`) may differ from its baseline only where a value refers to a
    Service with a dev version, and there only by that host becoming the dev name: user names, passwords,
    database names and paths that equal a Service name stay (kind `copy`)."""
    baseline, rendered = Objects(baseline_objects), Objects(rendered_objects)
    with_dev = services_with_dev_version(baseline, rendered, flow)
    namespaces = baseline.namespaces() | rendered.namespaces()
    out: list[Violation] = []
    for cm in rendered.of_kind("ConfigMap"):
        ns, base = namespace_of(cm), baseline_name(name_of(cm), flow)
        original = baseline.get("ConfigMap", (ns, base)) if base else None
        if original is None:
            continue
        old, new = original.get("data") or {}, cm.get("data") or {}
        if set(old) != set(new):
            out.append(Violation("copy", f"dev {describe(cm)} has keys {sorted(new)}, its baseline {sorted(old)}"))
        for k in sorted(set(old) & set(new)):
            before, after = str(old[k]), str(new[k])
            if before == after:
                continue
            names = {key[1] for h in hosts_in(before, k) if (key := resolve(h, ns, namespaces)) in with_dev}
            restored, too_many = after, False
            for name in names:
                dev = re.compile(rf"(?<![\w\-.]){re.escape(dev_name(name, flow))}(?![\w\-])")
                too_many |= len(dev.findall(after)) > host_positions(before, k, name, ns, namespaces)
                restored = dev.sub(name, restored)
            if not names or too_many or restored != before:
                out.append(Violation("copy", f"dev {describe(cm)} key {k}: {before!r} became {after!r}, which is "
                                             "more than its Service hosts renamed to dev names"))  # fmt: skip
    return out


def edge_warned(stderr: str, edge: tuple[Key, Key], flow: str, severity: str = "warning") -> bool:
    """Whether one message of devlane's stderr (a `devlane: <severity>: ...` line and the lines under it) names
    both ends of the edge, parent first (`ns/name`, `name.ns` or the dev name all count)."""

    def pattern(key: Key) -> str:
        ns, name = key
        n = re.escape(name)
        forms = [rf"{n}(?:-{re.escape(flow)})?"]
        if ns:
            forms += [rf"{re.escape(ns)}/{n}(?:-{re.escape(flow)})?", rf"{n}(?:-{re.escape(flow)})?\.{re.escape(ns)}"]
        return rf"(?<![\w\-./])(?:{'|'.join(forms)})(?![\w\-])"

    a, b = edge
    blocks: list[str] = []
    for line in stderr.splitlines():
        if line.startswith("devlane:") or not blocks:
            blocks.append(line)
        else:
            blocks[-1] += "\n" + line
    wanted = re.compile(pattern(a) + r".*?" + pattern(b), re.S)
    return any(severity in block.split("\n", 1)[0].lower() and wanted.search(block) for block in blocks)
