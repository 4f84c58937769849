"""Roles for `devlane init`: stateful and external services, entry points, and the edges nobody can infer.

- stateful: a store or a service registry by the classifier `render` and `lint` use (`render.model.store_signs`:
  the image's name read word by word, `postgres`, `bitnami/postgresql`, `yelb-db`, never a tool around a store
  such as `redis-exporter`; a well-known port, 3306 or 9092; volume claims), or a StatefulSet;
- external: an `ExternalName` Service, or a well-known external host (Stripe, S3, SQS, Neon, RDS, Cloud SQL,
  Azure SQL) in a workload's env;
- each with the built-in plugin that fits (`plugins/`), or none where the catalogue has none yet.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ..core.k8s import all_containers
from ..core.names import KARDINAL as K
from ..core.stores import role_of
from ..render.inputs.document import Document
from ..render.model.address_reads import config_reads
from ..render.model.annotations import ENTRY_KINDS
from ..render.model.records import Model, ServiceNode
from ..render.model.store_signs import store_sign, volume_sign
from .infer_edges import edge_owner
from .infer_facts import Edge, EntryPoint, Evidence, Role, SharedConfig, Unwired, evidence

# the built-in plugin that fits a store kind (`core.stores`); a kind not here has none yet
PLUGINS: dict[str, str] = {"postgres": "postgres-seed", "mysql": "mysql-seed", "redis": "redis-sidecar",
                           "mongodb": "mongodb-seed", "kafka": "kafka-topic", "rabbitmq": "rabbitmq-vhost",
                           "nats": "nats-stream"}
# caches: a dev copy that starts empty is the answer (redis-sidecar mode fresh; memcached needs no plugin)
CACHES = frozenset({"redis", "memcached"})
# env keys that say which store the container runs (its official image's variables): the kind of a store the
# image and ports leave unnamed (`mreferre/yelb-db` with POSTGRES_PASSWORD)
ENV_STORES = (("POSTGRES_", "postgres"), ("PGDATA", "postgres"), ("MYSQL_", "mysql"), ("MARIADB_", "mysql"))
# external hosts and keys in env values -> (system, plugin); a host's labels are read from the start of its word
# (`(?<![a-z0-9.-])`): a pattern free to start anywhere in a long word tries every position of it (quadratic)
EXTERNAL_HOSTS: tuple[tuple[re.Pattern[str], str, str | None], ...] = tuple(
    (re.compile(p), system, plugin) for p, system, plugin in (
        (r"(?i)\bapi\.stripe\.com\b|\b[sr]k_(?:live|test)_[A-Za-z0-9]{8,}", "stripe", "stripe"),
        (r"(?i)(?<![a-z0-9.-])[a-z0-9.-]*\.rds\.amazonaws\.com\b", "aws-rds", "aws-rds"),
        (r"(?i)\bsqs\.[a-z0-9-]+\.amazonaws\.com\b", "aws-sqs", "aws-sqs"),
        (r"(?i)(?<![a-z0-9.-])(?:[a-z0-9.-]*[.-])?s3[.-](?:[a-z0-9-]+\.)?amazonaws\.com\b|\bs3://[a-z0-9.-]+",
         "aws-s3", "aws-s3"),
        (r"(?i)(?<![a-z0-9.-])[a-z0-9.-]+\.neon\.tech\b", "neon", "neon-branch"),
        (r"(?i)(?<![a-z0-9-])[a-z0-9-]+\.database\.windows\.net\b", "azure-sql", "azure-sql"),
        (r"(?i)/cloudsql/[a-z0-9-]+:[a-z0-9-]+:[a-z0-9-]+"
         r"|(?<![a-z0-9-])-*[a-z][a-z0-9-]+:[a-z]+-[a-z]+[0-9]:[a-z][a-z0-9-]+\b", "cloud-sql", "cloud-sql"),
    ))  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")


def _stateful(model: Model, node: ServiceNode) -> Role | None:
    """A store or registry by the signs `render` and `lint` use (`store_signs`: image, well-known port, volumes),
    or a StatefulSet; the kind an image leaves open (`*-db`) from its port or its env."""
    w = node.workload
    if w is None:
        return None
    doc, spec = w.doc, w.pod_template.get("spec") or {}
    sign = store_sign(node)
    if sign is not None and sign.source == "annotation":
        sign = None  # annotated already: only a sign of its own says what it is
    if sign is None and doc.kind != "StatefulSet":
        return None
    kind = sign.kind if sign is not None else ""
    if kind in ("", "database", "volume"):
        named = next((s for name in _env_names(model, node, spec) for prefix, s in ENV_STORES
                      if name.startswith(prefix)), None)
        kind = named or ("" if kind == "volume" else kind)
    if sign is None:
        reason, ev = f"its workload is StatefulSet {doc.name}", evidence(doc, "kind", "StatefulSet")
    elif sign.source == "image":
        container = next((c for c in all_containers(spec) if str(c.get("image")) == sign.value), {})
        reason = f"{doc.ref} runs the {kind} image" + (f" ({sign.reason})" if "," in sign.reason else "")
        ev = evidence(doc, f"spec.template.spec.containers[{container.get('name', 0)}].image", sign.value)
    elif sign.source == "port":
        index = next(i for i, p in enumerate(node.doc.obj["spec"]["ports"])
                     if isinstance(p, dict) and str(p.get("port")) == sign.value)
        reason = f"Service {node.ref} listens on port {sign.value}, {kind}'s well-known port"
        ev = evidence(node.doc, f"spec.ports[{index}].port", sign.value)
    else:
        reason = f"{doc.ref} mounts PersistentVolumeClaim {sign.value}"
        ev = evidence(doc, "spec.volumeClaimTemplates" if "volumeClaimTemplates" in sign.reason
                      else "spec.template.spec.volumes", sign.value)
    if kind and kind not in reason:
        reason += f" ({kind})"
    if kind and role_of(kind) == "registry":
        reason += ": a service registry, copied into each lane that reaches it so dev pods register with its own"
    args: tuple[tuple[str, str], ...] = ()
    if kind in CACHES and volume_sign(doc.obj, spec) is None:
        reason += ": a cache without persistence, so a dev copy that starts empty is the answer"
        args = (("mode", "fresh"),) if kind == "redis" else ()
    return Role(node.key, "stateful", reason, ev, PLUGINS.get(kind), kind, args=args)


def _env_names(model: Model, node: ServiceNode, spec: dict) -> list[str]:
    """The env variable names the pod sets, those of the ConfigMaps it reads whole (`envFrom`) included."""
    names = [str(e.get("name", "")) for c in all_containers(spec) for e in c.get("env") or [] if isinstance(e, dict)]
    for read in config_reads(spec):
        doc = model.find(read.kind, node.namespace, read.name) if read.kind == "ConfigMap" else None
        if doc is not None and read.keys is None:
            names += [str(k) for k in (doc.obj.get("data") or {})]
    return names


def infer_roles(model: Model) -> list[Role]:
    """Stateful and external services, each with its reason and the plugin that fits."""
    roles: list[Role] = []
    for key in sorted(model.services):
        node = model.services[key]
        if node.doc.kind in ("Job", "CronJob"):
            continue
        spec = node.doc.obj.get("spec") or {}
        if node.is_service and spec.get("type") == "ExternalName":
            host = str(spec.get("externalName", ""))
            system, plugin = next(((s, p) for rx, s, p in EXTERNAL_HOSTS if rx.search(host)), ("", None))
            roles.append(Role(key, "external", f"type: ExternalName to {host}", evidence(node.doc, "spec.externalName",
                                                                                        host), plugin, system))
            continue
        role = _stateful(model, node)
        if role is not None:
            roles.append(role)
    roles += _external_hosts(model)
    return roles


def _external_hosts(model: Model) -> list[Role]:
    """Well-known external systems named in env values: one external node per system, with its dependents."""
    found: dict[str, list[tuple[str, Evidence, str | None]]] = defaultdict(list)
    for key in sorted(model.services):
        node = model.services[key]
        if node.workload is None:
            continue
        doc = node.workload.doc
        for c in all_containers(node.workload.pod_template.get("spec") or {}):
            for env in c.get("env") or []:
                value = env.get("value") if isinstance(env, dict) else None
                if not isinstance(value, str):
                    continue
                for rx, system, plugin in EXTERNAL_HOSTS:
                    m = rx.search(value)
                    if m:
                        path = f"spec.template.spec.containers[{c.get('name')}].env[{env.get('name')}].value"
                        found[system].append((key, evidence(doc, path, _redact(value), m.start()), plugin))
                        break
    out = []
    for system, hits in sorted(found.items()):
        dependents = tuple(sorted({k for k, _, _ in hits}))
        out.append(Role(system, "external", f"{hits[0][1].field} names {system}", hits[0][1], hits[0][2], system,
                        dependents))
    return out


def _redact(value: str) -> str:
    """Keys in evidence are shown by their prefix only."""
    return re.sub(r"\b([sr]k_(?:live|test)_)[A-Za-z0-9]+", r"\1...", value)


# -- entry points ------------------------------------------------------------------------------------------------


def _backends(doc: Document) -> list[str]:
    spec = doc.obj.get("spec") or {}
    out = []
    if doc.kind == "Ingress":
        default = ((spec.get("defaultBackend") or {}).get("service") or {}).get("name")
        out += [default] if default else []
        for rule in spec.get("rules") or []:
            for path in ((rule or {}).get("http") or {}).get("paths") or []:
                name = (((path or {}).get("backend") or {}).get("service") or {}).get("name")
                out += [name] if name else []
    else:
        for rule in spec.get("rules") or []:
            out += [r["name"] for r in (rule or {}).get("backendRefs") or [] if isinstance(r, dict) and r.get("name")]
    return out


def _hosts(doc: Document) -> list[str]:
    spec = doc.obj.get("spec") or {}
    if doc.kind == "Ingress":
        return [r["host"] for r in spec.get("rules") or [] if isinstance(r, dict) and r.get("host")]
    return [str(h) for h in spec.get("hostnames") or []]


def infer_entries(model: Model, edges: list[Edge]) -> list[EntryPoint]:
    """Ingresses and HTTPRoutes to mark as entries; without any, an Ingress to add in front of the service a user
    reaches first (a LoadBalancer, else a NodePort Service, else a Service nothing calls that calls others)."""
    if model.entries:
        return []
    flags = {kind: flag for flag, kind in ENTRY_KINDS.items() if kind != "Gateway"}
    out = []
    for doc in model.documents:
        if doc.kind not in flags or any(k.startswith(K) for k in doc.annotations if k[len(K):] in ENTRY_KINDS):
            continue
        if not any(model.service_key(b, model.namespace_of(doc)) for b in _backends(doc)):
            continue
        hosts = _hosts(doc)
        note = "" if hosts else ("it names no host: set `domain:` in .devlane.yaml (flows get <flowId>.<domain>)")
        out.append(EntryPoint(doc.kind, flags[doc.kind], evidence(doc, "spec", ", ".join(_backends(doc))), doc,
                              note=note, host=hosts[0] if hosts else None))
    if out:
        return out
    suggested = _suggested_entry(model, edges)
    return [suggested] if suggested else []


# words of a Service's or its image's name that say a user looks at it: the front of the app
UI_WORDS = frozenset({"ui", "frontend", "front", "web", "webapp", "www", "site", "portal", "storefront", "gateway",
                      "gw", "spa", "console", "dashboard", "nginx", "client"})
_NAME_WORD = re.compile(r"[a-z0-9]+")


def _looks_like_ui(node: ServiceNode) -> str:
    """Why `node` looks user-facing (`named yelb-ui`, `image nginx:1.25`), or "" when nothing says so."""
    if any(w in UI_WORDS for w in _NAME_WORD.findall(node.name.lower())):
        return f"named {node.name}"
    spec = node.workload.pod_template.get("spec") or {} if node.workload else {}
    for c in all_containers(spec):
        image = str(c.get("image") or "")
        name = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0].lower()
        if any(w in UI_WORDS for w in _NAME_WORD.findall(name)):
            return f"image {image}"
    return ""


def _is_store(node: ServiceNode) -> bool:
    """A store or registry by its image or port (a web app that keeps uploads on a volume can be the front)."""
    sign = store_sign(node)
    return sign is not None and sign.source in ("image", "port")


def _suggested_entry(model: Model, edges: list[Edge]) -> EntryPoint | None:
    """The Service a user reaches first: never a store or a registry; a UI-looking one (by its name or its image)
    before any other; then a LoadBalancer, a NodePort, a Service nothing calls that calls others."""
    callers = defaultdict(set)
    for e in edges:
        callers[e.target].add(e.source)
    calls = {e.source for e in edges}
    ui = {n.key: _looks_like_ui(n) for n in model.services.values() if n.is_service}

    def rank(node: ServiceNode) -> tuple:
        spec = node.doc.obj.get("spec") or {}
        kind = {"LoadBalancer": 0, "NodePort": 1}.get(str(spec.get("type")), 2)
        return (not ui[node.key], kind, bool(callers.get(node.key)), node.key not in calls, node.key)

    candidates = [n for n in model.services.values() if n.is_service and n.workload is not None
                  and (n.doc.obj.get("spec") or {}).get("type") != "ExternalName"
                  and (n.doc.obj.get("spec") or {}).get("ports") and not _is_store(n)]
    candidates = [n for n in candidates if rank(n)[1] < 2 or (not callers.get(n.key) and n.key in calls)]
    if not candidates:
        return None
    node = sorted(candidates, key=rank)[0]
    spec = node.doc.obj.get("spec") or {}
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    port = next((p for p in ports if str(p.get("name", "")).startswith("http")), ports[0])
    why = ", ".join(filter(None, (f"type: {spec.get('type')}" if rank(node)[1] < 2 else
                                  "no Service calls it and it calls others", ui[node.key] and
                                  f"{ui[node.key]}, which looks like the user interface")))
    others = [f"the {(n.doc.obj.get('spec') or {}).get('type')} {n.ref}" for n in candidates
              if n is not node and rank(n)[1] < rank(node)[1]]
    if others:
        why += f"; not {', '.join(sorted(others))}, which {'looks' if len(others) == 1 else 'look'} like no UI"
    return EntryPoint("suggested", "ingress", evidence(node.doc, "spec.type", spec.get("type", "ClusterIP")),
                      service=node.key, port=int(port.get("port", 80)),
                      host=f"{node.name}.preview.example.com",
                      note=f"no Ingress or HTTPRoute in the repository; {node.ref} is the entry ({why}): add an "
                           "Ingress for it (change preview.example.com to your preview domain)")


# -- what cannot be inferred -----------------------------------------------------------------------------------------


def infer_unwired(model: Model, edges: list[Edge], entries: list[EntryPoint], roles: list[Role],
                  shared: list[SharedConfig] = (), sinks: set[str] = frozenset()) -> list[Unwired]:
    """What the manifests cannot show: Services with a workload that nothing names (but entries, entry points,
    telemetry sinks and what a shared configuration names), and services that name no other (but stores, external
    systems, sinks and the readers of a shared configuration)."""
    called = {e.target for e in edges} | {dep for n in model.services.values() for dep, _ in n.dependencies}
    called |= {named for c in shared for named in (*c.stores, *c.services)}
    calling = {e.source for e in edges} | {n.key for n in model.services.values() if n.dependencies}
    calling |= {r for c in shared for r in c.readers}
    entry = {b for e in model.entries for b in e.backends} | {e.service for e in entries if e.service}
    for e in entries:
        if e.doc is not None:
            entry |= {model.service_key(b, model.namespace_of(e.doc)) for b in _backends(e.doc)}
    kinds = {r.service: r for r in roles}
    out = []
    for key in sorted(model.services):
        node = model.services[key]
        spec = node.doc.obj.get("spec") or {}
        if node.workload is None or key in sinks:
            continue
        role = kinds.get(key)
        if (node.is_service and key not in called and key not in entry
                and spec.get("type") not in ("LoadBalancer", "NodePort", "ExternalName")):
            what = f"a {role.store or 'stateful'} store" if role and role.role == "stateful" else "a service"
            out.append(Unwired(key, f"{node.ref} is {what} that no workload names in env, args, command or the "
                                    "ConfigMaps it reads: its callers likely have the address compiled into their "
                                    "images",
                               f"pass {node.name}'s address through env (e.g. {node.name.upper().replace('-', '_')}"
                               f"_HOST={node.name}) and add the dependency by hand, or render with --isolation "
                               "namespace (short names then resolve to the dev copies by DNS)",
                               evidence(node.doc, "metadata.name", node.name)))
        if (role is None and key not in calling and edge_owner(model, node).key == key
                and node.workload.doc.kind not in ("Job", "CronJob")):
            wdoc = node.workload.doc
            out.append(Unwired(key, f"{wdoc.ref} names no other Service in env, args, command or the ConfigMaps it "
                                    "reads: if it calls any, their addresses are compiled into its image or fetched "
                                    "at run time",
                               f"add what {node.name} calls to its kardinal.dev.service/dependencies by hand, or "
                               "render with --isolation namespace (short names then resolve to the dev copies by DNS)",
                               evidence(wdoc, "spec.template.spec", ""), side="caller"))
    return out
