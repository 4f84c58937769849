"""The output policy for plugins: what one plugin call adds to a flow or changes in it, checked before it
joins the flow.

A pull request can change a plugin (a repository-local one, a bumped pin), and what devlane prints is
applied to the cluster. So after every call (the CreateFlow of a plugin instance or a `per-flow` step, a
lifecycle hook, a `post-render` step), each object it added must be:
- namespaced (rule `clusterScoped`), in one of the flow's namespaces (`namespace`: those of the flow's dev
  copies and the configured destination; an object naming none gets the flow's),
- named `<name>-<flowId>` as devlane names dev objects (`flow-name`), never with another flow's suffix or
  the `-shared` suffix of the copies every flow shares (`other-flow`),
- of a kind its plugin.yaml declares in `spec.emits` (`emits`; default: `DEFAULT_EMITS`);
and each object it added or changed must add none of:
- a Secret with `data` or `stringData` (`secrets`: it would be committed to git in plain text),
- RBAC granting wide rights (`rbac`): a binding to a ClusterRole or to every user or service account; a
  Role with `*` or the escalate, bind or impersonate verbs,
- a pod spec outside the Pod Security Standards *baseline* profile, or running as root with privilege
  escalation allowed (`privileged`),
- metadata smuggled into a pod spec or pod template (`metadata`): object keys inside a pod spec,
  template metadata other than labels and annotations (namespace, ownerReferences, finalizers...), and
  owner references, finalizers or server-set fields on the object itself,
- a Service of type NodePort or LoadBalancer or with `externalIPs` (`privileged`),
- a pod that a baseline selector matches, or that mounts a baseline PersistentVolumeClaim, or a Service
  that selects baseline pods (`isolation`).
A lifecycle hook keeps each object's kind, namespace and name (`identity`). For changed objects only what
the call introduced counts: a privileged baseline that a dev copy inherited is not the plugin's doing.

`.devlane.yaml` `policy.plugins.<name>` lifts `clusterScoped`, `rbac`, `privileged` and `secrets`
(`allow`) and adds kinds (`kinds`) and namespaces (`namespaces`) for one plugin; the other rules always
hold. Every refusal names the plugin, the object and the rule, and the switch that would allow it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...core.k8s import CLUSTER_SCOPED, identity, map_matches, pod_template, policy_selects
from ...core.names import SHARED
from ...errors import PluginError, Problem, Where
from ...host.choose import Choice
from ...host.invoke import malformed
from ..copies.dev_set import DevSet
from ..model.records import Model
from ..model.repo_index import claim_mounts, pod_items
from ..plan.flow_spec import FLOW_ID, MAX_FLOW_ID
from ..settings.repo_config import CONFIG_FILE, PluginAllow

Identity = tuple[str, str | None, str]  # kind, namespace, name
RBAC_GROUP = "rbac.authorization.k8s.io"
SWITCHES = ("clusterScoped", "rbac", "privileged", "secrets")  # the rules `allow` can lift
# Pod Security Standards, baseline profile (kubernetes.io/docs/concepts/security/pod-security-standards)
BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
WIDE_SUBJECTS = {("Group", "system:authenticated"), ("Group", "system:unauthenticated"),
                 ("Group", "system:serviceaccounts"), ("User", "system:anonymous")}
WIDE_VERBS = {"*", "escalate", "bind", "impersonate"}
# keys of an object, never of a pod spec: a pod spec carrying them tries to set what devlane owns
FOREIGN_POD_SPEC_KEYS = ("apiVersion", "kind", "metadata", "spec", "status", "template", "labels", "annotations",
                         "namespace", "ownerReferences", "finalizers", "managedFields")
TEMPLATE_METADATA_KEYS = {"labels", "annotations", "name", "generateName"}  # and `creationTimestamp: null`
SERVER_METADATA = ("ownerReferences", "finalizers", "managedFields", "uid", "resourceVersion", "generation",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")


@dataclass(frozen=True)
class Finding:
    """One rule an object breaks; `key` identifies it across versions of the object (what was added)."""

    rule: str
    key: str
    why: str
    fix: str = ""  # what the hint's switch would list: the kind or the namespace


@dataclass(frozen=True)
class Caller:
    """Who made the change: the instance or step (errors name it), its plugin (a `policy.plugins` key)."""

    instance: str
    plugin: str
    emits: tuple[str, ...]
    allow: PluginAllow


def api_group(obj: dict) -> str:
    version = obj.get("apiVersion")
    return version.rpartition("/")[0] if isinstance(version, str) else ""


def ref(ident: Identity) -> str:
    kind, ns, name = ident
    return f"{kind}/{name}" + (f" in namespace {ns}" if ns else "")


def emitted(obj: dict, kinds: tuple[str, ...]) -> bool:
    """Whether `kinds` (`Kind` in any group, or `group/Kind`) lists the object's kind."""
    group = api_group(obj)
    for entry in kinds:
        want_group, _, kind = entry.rpartition("/")
        if kind == obj.get("kind") and (not want_group or want_group == group):
            return True
    return False


def _other_flow(name: str, flow_id: str) -> str | None:
    """Whose name this is, when it carries another flow's suffix: `-shared`, or a flow id shaped like ours
    (`pr-8` while rendering `pr-7`: the same id with other digits)."""
    if name == SHARED or name.endswith("-" + SHARED):
        return f"the copies every flow shares (suffix -{SHARED})"
    shape = re.sub(r"[0-9]+", lambda _: "[0-9]+", re.escape(flow_id))
    if shape == re.escape(flow_id):
        return None
    found = re.search(rf"-({shape})\Z", name)
    return f"flow {found.group(1)}" if found else None


def _taken_by_another_flow(name: str, flow_id: str, repository_names: frozenset[str]) -> str | None:
    """The other flow whose dev copy of a repository object would carry `name` (`app-hotfix-pr-1` is flow
    `hotfix-pr-1`'s copy of `app`, not a `pr-1` object), or None."""
    for i, ch in enumerate(name):
        if ch != "-" or name[:i] not in repository_names:
            continue
        other = name[i + 1:]
        if other != flow_id and len(other) <= MAX_FLOW_ID and FLOW_ID.fullmatch(other):
            return other
    return None


def name_findings(name: str, flow_id: str, repository_names: frozenset[str] = frozenset()) -> list[Finding]:
    if name.endswith("-" + flow_id) and len(name) > len(flow_id) + 1:
        other = _taken_by_another_flow(name, flow_id, repository_names)
        if other is None:
            return []
        return [Finding("other-flow", "name", f"the name {name} is also flow {other}'s copy of "
                        f"{name[: -len(other) - 1]}, so two flows would write one object")]
    other = _other_flow(name, flow_id)
    if other:
        return [Finding("other-flow", "name", f"the name {name} belongs to {other}, not to flow {flow_id}")]
    return [Finding("flow-name", "name", f"{name} is not named for flow {flow_id}: a plugin's objects are named "
                                         f"<name>-{flow_id}, as devlane names dev objects")]


# -- content rules: what an object carries, whoever added it -------------------------------------------------


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def secret_findings(obj: dict) -> list[Finding]:
    if obj.get("kind") != "Secret" or api_group(obj) != "":
        return []
    return [Finding("secrets", key, f"a Secret carrying {key} would be written to git in plain text")
            for key in ("data", "stringData") if obj.get(key)]


def _lanes(name: Any, flow_id: str) -> bool:
    return isinstance(name, str) and not name_findings(name, flow_id)


def rbac_findings(obj: dict, flow_id: str) -> list[Finding]:
    """RBAC reaches only the lane's own objects: a binding of a Role of the flow to ServiceAccounts of the flow;
    a Role whose rules name the flow's objects (`resourceNames`), or only create objects (a name RBAC cannot
    narrow, and creating reaches nothing that exists); never Secrets beyond the flow's, never a wildcard."""
    kind = obj.get("kind")
    if api_group(obj) != RBAC_GROUP:
        return []
    out = []
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        role = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
        if role.get("kind") == "ClusterRole":
            out.append(Finding("rbac", f"roleRef:{role.get('name')}",
                               f"it binds ClusterRole {role.get('name')}, whose rights are defined for the whole "
                               "cluster, not by the flow"))
        elif not _lanes(role.get("name"), flow_id):
            out.append(Finding("rbac", f"roleRef:{role.get('name')}", f"it binds Role {role.get('name')}, which is "
                               f"not the flow's (its rights were not set by this flow)"))
        for subject in _list(obj.get("subjects")):
            who = (_get(subject, "kind"), _get(subject, "name"))
            if who in WIDE_SUBJECTS:
                out.append(Finding("rbac", f"subject:{who[1]}", f"it grants its rights to every {who[1]}"))
            elif who[0] != "ServiceAccount" or not _lanes(who[1], flow_id):
                out.append(Finding("rbac", f"subject:{who[0]}/{who[1]}", f"it grants its rights to {who[0]} "
                                   f"{who[1]}, not to a ServiceAccount of the flow"))
    elif kind in ("Role", "ClusterRole"):
        for i, rule in enumerate(_list(obj.get("rules"))):
            out += _rule_findings(i, rule, flow_id)
    return out


def _rule_findings(i: int, rule: Any, flow_id: str) -> list[Finding]:
    wide = [f"{field} {', '.join(sorted(found))}" for field in ("apiGroups", "resources", "verbs")
            if (found := {str(v) for v in _list(_get(rule, field))} & (WIDE_VERBS if field == "verbs" else {"*"}))]
    if wide:
        return [Finding("rbac", f"rules[{i}]", f"rules[{i}] grants {'; '.join(wide)}")]
    resources = {str(r) for r in _list(_get(rule, "resources"))}
    verbs = {str(v) for v in _list(_get(rule, "verbs"))}
    names = _list(_get(rule, "resourceNames"))
    if _list(_get(rule, "nonResourceURLs")):
        return [Finding("rbac", f"rules[{i}]", f"rules[{i}] grants non-resource URLs, which are the cluster's")]
    if names:
        foreign = sorted(str(n) for n in names if not _lanes(n, flow_id))
        return [Finding("rbac", f"rules[{i}]", f"rules[{i}] names {', '.join(foreign)}, not objects of the "
                        "flow")] if foreign else []
    if verbs <= {"create"} and not any("/" in r for r in resources):
        return []
    what = "every Secret" if "secrets" in resources else f"every {', '.join(sorted(resources)) or 'object'}"
    return [Finding("rbac", f"rules[{i}]", f"rules[{i}] reaches {what} of the namespace, not only the flow's "
                    f"objects (list their names in resourceNames)")]


def _security_findings(ctx: Any, where: str) -> Iterator[Finding]:
    """The baseline profile's checks on one securityContext (pod or container)."""
    if not isinstance(ctx, dict):
        return
    if ctx.get("privileged") is True:
        yield Finding("privileged", f"{where}.privileged", f"{where}.privileged is true")
    if _get(ctx, "windowsOptions", "hostProcess") is True:
        yield Finding("privileged", f"{where}.windowsOptions.hostProcess", f"{where} runs as a Windows host process")
    for field in ("seccompProfile", "appArmorProfile"):
        if _get(ctx, field, "type") == "Unconfined":
            yield Finding("privileged", f"{where}.{field}", f"{where}.{field} is Unconfined")
    selinux = ctx.get("seLinuxOptions")
    if isinstance(selinux, dict) and (selinux.get("type", "") not in SELINUX_TYPES or selinux.get("user")
                                      or selinux.get("role")):
        yield Finding("privileged", f"{where}.seLinuxOptions",
                      f"{where}.seLinuxOptions sets a custom user, role or type")
    if ctx.get("procMount") not in (None, "Default"):
        yield Finding("privileged", f"{where}.procMount", f"{where}.procMount is {ctx.get('procMount')}")
    added = sorted({str(c) for c in _list(_get(ctx, "capabilities", "add"))} - BASELINE_CAPABILITIES)
    if added:
        yield Finding("privileged", f"{where}.capabilities", f"{where}.capabilities.add has {', '.join(added)}")


def pod_spec_findings(spec: Any, where: str) -> list[Finding]:
    """Pod Security Standards baseline, root with privilege escalation, and object keys inside the pod spec."""
    if not isinstance(spec, dict):
        return []
    out = [Finding("metadata", f"{where}.{key}", f"{where}.{key}: a pod spec has no {key}; a plugin may not set a "
                   "pod's metadata through it") for key in FOREIGN_POD_SPEC_KEYS if key in spec]
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            out.append(Finding("privileged", f"{where}.{field}", f"{where}.{field} is true (the node's namespace)"))
    pod_ctx = spec.get("securityContext")
    out += _security_findings(pod_ctx, f"{where}.securityContext")
    unsafe = sorted(str(_get(s, "name")) for s in _list(_get(pod_ctx, "sysctls"))
                    if _get(s, "name") not in SAFE_SYSCTLS)
    if unsafe:
        out.append(Finding("privileged", f"{where}.sysctls",
                           f"{where}.securityContext.sysctls sets {', '.join(unsafe)}"))
    for vol in _list(spec.get("volumes")):
        if isinstance(vol, dict) and "hostPath" in vol:
            path = _get(vol, "hostPath", "path")
            out.append(Finding("privileged", f"{where}.volumes[{vol.get('name')}].hostPath",
                               f"volume {vol.get('name')} mounts the node's {path}"))
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _list(spec.get(key)):
            if not isinstance(c, dict):
                continue
            at = f"{where}.{key}[{c.get('name')}]"
            ctx = c.get("securityContext")
            out += _security_findings(ctx, f"{at}.securityContext")
            ports = [p.get("hostPort") for p in _list(c.get("ports")) if isinstance(p, dict) and p.get("hostPort")]
            if ports:
                out.append(Finding("privileged", f"{at}.hostPort", f"{at} binds host port(s) {ports}"))
            user = _get(ctx, "runAsUser") if _get(ctx, "runAsUser") is not None else _get(pod_ctx, "runAsUser")
            if user == 0 and _get(ctx, "allowPrivilegeEscalation") is not False:
                out.append(Finding("privileged", f"{at}.root", f"{at} runs as root (runAsUser 0) with privilege "
                                   "escalation allowed"))
    return out


def metadata_findings(obj: dict, top: bool) -> list[Finding]:
    """Server-set and ownership fields on the object (`top`), and template metadata beyond labels and
    annotations, including AppArmor annotations that unconfine a container."""
    out = []
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    if top:
        out += [Finding("metadata", f"metadata.{key}", f"metadata.{key} is set: owner references, finalizers and "
                        "server-set fields are the cluster's, not a plugin's")
                for key in SERVER_METADATA if key in meta]
    templates = []
    if obj.get("kind") == "CronJob":
        templates.append(("spec.jobTemplate.metadata", _get(obj, "spec", "jobTemplate", "metadata")))
    tpl = pod_template(obj)
    if tpl:
        at = "spec.jobTemplate.spec.template" if obj.get("kind") == "CronJob" else "spec.template"
        templates.append((f"{at}.metadata", tpl.get("metadata")))
    for at, tmeta in templates:
        if not isinstance(tmeta, dict):
            continue
        for key in sorted(k for k in tmeta if k not in TEMPLATE_METADATA_KEYS):
            if key == "creationTimestamp" and tmeta[key] is None:
                continue
            out.append(Finding("metadata", f"{at}.{key}", f"{at}.{key} is set: a pod template carries only labels "
                               "and annotations (a pod may not move namespace or take owners and finalizers)"))
        for name, value in (tmeta.get("annotations") or {}).items() if isinstance(tmeta.get("annotations"), dict) \
                else ():
            if str(name).startswith(APPARMOR_ANNOTATION) and value == "unconfined":
                out.append(Finding("privileged", f"{at}.annotations.{name}", f"{at}.annotations.{name} is unconfined"))
    return out


def service_findings(obj: dict) -> list[Finding]:
    """A Service that reaches past the namespace: a port on every node, a cloud load balancer, or
    `externalIPs`, which captures the cluster's traffic to those addresses (CVE-2020-8554)."""
    if obj.get("kind") != "Service" or api_group(obj) != "":
        return []
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    out = []
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        out.append(Finding("privileged", "spec.type", f"a {spec['type']} Service opens a port outside the cluster "
                                                      "network (on every node, or to the internet)"))
    if spec.get("externalIPs"):
        out.append(Finding("privileged", "spec.externalIPs", "spec.externalIPs captures the cluster's traffic to "
                                                             f"{', '.join(map(str, _list(spec['externalIPs'])))}"))
    return out


def list_findings(obj: dict) -> list[Finding]:
    """A List (`v1 List`, `ConfigMapList`...) is no object: kubectl and kustomize apply its items, which the
    policy would never have looked at."""
    kind = obj.get("kind")
    if isinstance(kind, str) and kind.endswith("List"):
        return [Finding("list", "kind", f"a {kind} wraps objects that are applied one by one; return each object "
                                        "itself")]
    return []


def content_findings(obj: dict, flow_id: str) -> list[Finding]:
    """Every content rule but isolation (which needs the baseline)."""
    spec = obj.get("spec") if obj.get("kind") == "Pod" else pod_template(obj).get("spec")
    where = "spec" if obj.get("kind") == "Pod" else ("spec.jobTemplate.spec.template.spec"
                                                    if obj.get("kind") == "CronJob" else "spec.template.spec")
    return (list_findings(obj) + secret_findings(obj) + rbac_findings(obj, flow_id) + service_findings(obj)
            + pod_spec_findings(spec, where) + metadata_findings(obj, top=True))


# -- the policy of one render --------------------------------------------------------------------------------


class OutputPolicy:
    """The output policy of one flow's render: the flow's namespaces and the baseline it must not touch,
    the repository's exceptions, and which plugin added or last changed each object (`owners`)."""

    def __init__(self, model: Model, dev: DevSet, flow_id: str, exceptions: dict[str, PluginAllow]):
        self.model = model
        self.flow_id = flow_id
        self.exceptions = exceptions
        found = {dw.namespace for dw in dev.unique_workloads()}
        found |= {s.obj["metadata"].get("namespace") for s in dev.services}
        found |= {o.obj["metadata"].get("namespace") for o in dev.objects}
        found.add(model.default_namespace)
        self.namespaces = frozenset(ns for ns in found if ns)
        self.index = model.index
        self.owners: dict[Identity, str] = {}

    def caller(self, instance: str, choice: Choice) -> Caller:
        """The caller for a call of `choice` as `instance`: `policy.plugins` entries for either name apply."""
        allow = PluginAllow()
        for key in dict.fromkeys((choice.name, instance)):
            if key in self.exceptions:
                allow = allow | self.exceptions[key]
        return Caller(instance, choice.name, choice.manifest.emitted_kinds, allow)

    # -- the three kinds of call ---------------------------------------------------------------------------

    def created(self, caller: Caller, workloads: list[tuple[dict, dict]], resources: list[dict],
                namespace: str | None) -> None:
        """A CreateFlow: each dev workload (before, after) and the objects it added (`namespace`: theirs
        when they name none)."""
        problems = []
        for before, after in workloads:
            problems += self._changed(caller, before, after)
        for obj in resources:
            problems += self._added(caller, obj, namespace)
        self._done(problems, caller, [after for _, after in workloads] + resources, namespace)

    def transformed(self, caller: Caller, before: list[dict], after: list[dict]) -> None:
        """A `post-render` step: objects kept by identity are changes, new identities are additions (an object
        naming no namespace lands in the destination's, the configured one)."""
        default = self.model.default_namespace
        old = {identity(o, default): o for o in before}
        problems, touched = [], []
        for obj in after:
            prior = old.get(identity(obj, default))
            if prior is None:
                problems += self._added(caller, obj, default)
            elif prior != obj:
                problems += self._changed(caller, prior, obj)
            else:
                continue
            touched.append(obj)
        self._done(problems, caller, touched, default)

    def hooked(self, caller: Caller, before: list[dict], after: list[dict]) -> None:
        """A lifecycle hook: each object patched in place, its identity kept."""
        problems, touched = [], []
        for prior, obj in zip(before, after, strict=True):
            if prior == obj:
                continue
            if identity(prior) != identity(obj):
                problems.append(self._problem(caller, identity(prior), Finding(
                    "identity", "identity", f"the lifecycle hook turned it into {ref(identity(obj))}; a hook patches "
                    "objects, it does not rename or move them")))
                continue
            problems += self._changed(caller, prior, obj)
            touched.append(obj)
        self._done(problems, caller, touched, self.model.default_namespace)

    # -- rules -------------------------------------------------------------------------------------------

    def _added(self, caller: Caller, obj: dict, namespace: str | None) -> list[Problem]:
        ident = identity(obj, namespace)
        problem = malformed(obj)
        if problem:
            return [_malformed(caller, ident, problem)]
        kind, ns, name = ident
        found: list[Finding] = []
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        if kind in CLUSTER_SCOPED:
            found.append(Finding("clusterScoped", "scope", f"{kind} is cluster-scoped; a plugin adds namespaced "
                                                           "objects to its flow"))
        elif meta.get("namespace") and ns not in self.namespaces and ns not in caller.allow.namespaces:
            mine = ", ".join(sorted(self.namespaces)) or "the destination namespace (no namespace set)"
            found.append(Finding("namespace", "namespace", f"namespace {ns} is not the flow's ({mine})", str(ns)))
        found += name_findings(name, self.flow_id, self.index.names.get(kind, frozenset()))
        if not emitted(obj, caller.emits + caller.allow.kinds):
            group = api_group(obj)
            full = f"{group}/{kind}" if group else kind
            found.append(Finding("emits", "kind", f"{full} is not among the kinds plugin {caller.plugin} declares "
                                 f"({', '.join(caller.emits) or 'none'})", full))
        found += content_findings(obj, self.flow_id) + self._isolation(obj, ns)
        return [self._problem(caller, ident, f) for f in found if self._refused(caller, f)]

    def _changed(self, caller: Caller, before: dict, after: dict) -> list[Problem]:
        problem = malformed(after, maps=False)
        if problem:
            return [_malformed(caller, identity(before), problem)]
        ns = identity(before, self.model.default_namespace)[1]
        had = {(f.rule, f.key) for f in content_findings(before, self.flow_id) + self._isolation(before, ns)}
        new = [f for f in content_findings(after, self.flow_id) + self._isolation(after, ns)
               if (f.rule, f.key) not in had]
        return [self._problem(caller, identity(after), f) for f in new if self._refused(caller, f)]

    def _isolation(self, obj: dict, namespace: str | None) -> list[Finding]:
        out = []
        for doc, _ in self.index.selector_index.hits(pod_items([obj], namespace)):
            out.append(Finding("isolation", f"selector:{doc.ref}", f"the selector of baseline {doc.ref} matches "
                               "its pods, so baseline traffic would reach them"))
        for claim in claim_mounts(obj, namespace, self.index.claims):
            out.append(Finding("isolation", f"claim:{claim}", f"its pods mount the baseline PersistentVolumeClaim "
                               f"{claim}"))
        selector = _get(obj, "spec", "selector")
        ns = identity(obj, namespace)[1]
        if obj.get("kind") == "Service" and isinstance(selector, dict) and selector:
            for _ns, labels, doc in self.index.pods:
                if _ns == ns and map_matches(selector, labels):
                    out.append(Finding("isolation", f"selects:{doc.ref}", f"its selector matches the pods of baseline "
                                       f"{doc.ref}, so the flow's traffic would reach the baseline"))
        if obj.get("kind") == "NetworkPolicy" and api_group(obj) == "networking.k8s.io":
            pods = _get(obj, "spec", "podSelector")
            for _ns, labels, doc in self.index.pods:
                if _ns == ns and policy_selects(pods if pods is not None else {}, labels):
                    out.append(Finding("isolation", f"policy:{doc.ref}", f"its podSelector selects the pods of "
                                       f"baseline {doc.ref}, so it would change what reaches the baseline"))
                    break
        for service in _services_reached(obj, ns):
            if service in self.index.services:
                out.append(Finding("isolation", f"reaches:{service[1]}", f"it sends traffic or endpoints to the "
                                   f"baseline Service {service[1]}" + (f" in namespace {service[0]}" if service[0]
                                                                       else "")))
        return out

    @staticmethod
    def _refused(caller: Caller, finding: Finding) -> bool:
        return not (finding.rule in SWITCHES and finding.rule in caller.allow.allow)

    def _problem(self, caller: Caller, ident: Identity, finding: Finding) -> Problem:
        return Problem(f"refused by the output policy (rule {finding.rule}): {finding.why}",
                       Where(object=ref(ident), plugin=caller.instance), _hint(caller, finding),
                       code="plugin-policy")

    def _done(self, problems: list[Problem], caller: Caller, touched: list[dict], namespace: str | None) -> None:
        if problems:
            raise PluginError(problems)
        for obj in touched:
            self.owners[identity(obj, namespace)] = caller.instance


_CLUSTER_DOMAIN = re.compile(r"\.svc(?:\.cluster\.local)?\.?\Z")


def _service_of_host(host: Any, namespace: str | None) -> tuple[str | None, str] | None:
    """The (namespace, Service) a DNS name reaches: `name`, `name.ns`, `name.ns.svc[.cluster.local]`."""
    if not isinstance(host, str) or not host:
        return None
    short = _CLUSTER_DOMAIN.sub("", host.lower())
    parts = short.split(".")
    if len(parts) == 1:
        return namespace, parts[0]
    if len(parts) == 2 or (len(parts) > 2 and host.lower() != short):
        return parts[1], parts[0]
    return None  # a name outside the cluster


def _services_reached(obj: dict, namespace: str | None) -> list[tuple[str | None, str]]:
    """The Services an object routes to or adds endpoints for: an EndpointSlice's `kubernetes.io/service-name`,
    an Endpoints' name, an ExternalName Service's target, Ingress and Gateway API backends, Istio destinations."""
    kind, group, spec = obj.get("kind"), api_group(obj), obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    labels = _get(obj, "metadata", "labels")
    names: list[tuple[str | None, str] | None] = []
    if kind == "EndpointSlice" and group == "discovery.k8s.io" and isinstance(labels, dict):
        names.append((namespace, labels.get("kubernetes.io/service-name")))
    elif kind == "Endpoints" and group == "":
        names.append((namespace, _get(obj, "metadata", "name")))
    elif kind == "Service" and group == "" and spec.get("type") == "ExternalName":
        names.append(_service_of_host(spec.get("externalName"), namespace))
    elif kind == "Ingress":
        backends = [spec.get("defaultBackend")] + [p.get("backend") for r in _list(spec.get("rules"))
                                                   for p in _list(_get(r, "http", "paths")) if isinstance(p, dict)]
        names += [(namespace, _get(b, "service", "name")) for b in backends]
    elif group == "gateway.networking.k8s.io":
        refs = [b for r in _list(spec.get("rules")) for b in _list(_get(r, "backendRefs"))]
        names += [(_get(b, "namespace") or namespace, _get(b, "name")) for b in refs
                  if isinstance(b, dict) and _get(b, "kind") in (None, "Service")]
    elif group.startswith("networking.istio.io"):
        routes = [x for key in ("http", "tcp", "tls") for x in _list(spec.get(key))]
        hosts = [_get(d, "destination", "host") for r in routes for d in _list(_get(r, "route"))]
        hosts += [_get(r, "mirror", "host") for r in routes] + [spec.get("host")]
        names += [_service_of_host(h, namespace) for h in hosts]
    return [(ns, str(name)) for ns, name in (n for n in names if n) if isinstance(name, str) and name]


def _malformed(caller: Caller, ident: Identity, problem: str) -> Problem:
    return Problem(f"returned an object that {problem}", Where(object=ref(ident), plugin=caller.instance),
                   "return named Kubernetes objects (apiVersion, kind, metadata.name; labels and annotations map "
                   "strings to strings)", code="plugin-malformed")


def _hint(caller: Caller, finding: Finding) -> str:
    key, rule, fix = f'"{caller.plugin}"', finding.rule, finding.fix
    trusted = (f"in the operator's policy file (--policy) or in {CONFIG_FILE} at the trusted base (--trusted-ref); "
               "the pull request's own cannot")
    if rule in SWITCHES:
        return (f"if plugin {caller.plugin} is trusted with this, allow it {trusted}: "
                f"policy: {{plugins: {{{key}: {{allow: [{rule}]}}}}}}")
    return {
        "namespace": "leave metadata.namespace unset (the object gets the flow's namespace), or list the namespace "
                     f"{trusted}: policy: {{plugins: {{{key}: {{namespaces: [{fix}]}}}}}}",
        "flow-name": "append -<flowId> to the name (flow.id in the request; Kardinal plugins: end it with flow_uuid)",
        "other-flow": "name the object for the flow being rendered: <name>-<flowId>",
        "emits": f"declare the kind in the plugin's plugin.yaml (spec.emits: [{fix}]), or allow it {trusted}: "
                 f"policy: {{plugins: {{{key}: {{kinds: [{fix}]}}}}}}",
        "metadata": "return pod specs and templates without object metadata; devlane sets labels and namespaces",
        "isolation": "give the plugin's pods labels of their own (no baseline selector may match them) and volumes "
                     "of their own",
        "identity": "return each object with the kind, namespace and name it was given",
        "list": "return the List's items as objects of their own, each checked by the output policy",
    }[rule]
