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
- RBAC granting wide rights (`rbac`): a binding to a ClusterRole, to every user or service account, or to a
  ServiceAccount of another namespace; a Role with `*` or the escalate, bind or impersonate verbs,
- a pod spec outside the Pod Security Standards *baseline* profile, or running as root with privilege
  escalation allowed (`privileged`),
- metadata smuggled into a pod spec or pod template (`metadata`): object keys inside a pod spec,
  template metadata other than labels and annotations (namespace, ownerReferences, finalizers...), and
  owner references, finalizers or server-set fields on the object itself,
- a Service of type NodePort or LoadBalancer or with `externalIPs` (`privileged`),
- a pod that a baseline selector matches, or that mounts a baseline PersistentVolumeClaim, or a Service
  that selects baseline pods (`isolation`),
- a reference outside the flow (`reference`): every field that names or selects another object
  (`object_refs`: scale targets, selectors, volumes and env sources, ServiceAccounts, routes' parents and
  backends, policies' targets...) must name an object of the flow (`<name>-<flowId>`, in the flow's
  namespaces) or select no baseline pod or Service; what a kind cannot do without on shared infrastructure
  (a KafkaTopic's cluster, an ExternalSecret's store) is listed there as shared and accepted. No setting
  lifts this rule;
and each object it added must be of a kind whose references `object_refs` models, or one the trusted policy
lists (`unmodeled`: a plugin's own `spec.emits` is not enough); there, a reference-like key (`*Ref`,
`*Name`, `target`, `selector`...) naming a baseline object of the namespace is refused (`reference`).
RBAC reaches only the flow's objects, and never what creating reaches: a Role may not let its subjects
create (or rewrite) what starts pods (pods, workloads, custom workload kinds: a pod mounts any Secret and
runs as any ServiceAccount of its namespace), open a shell or a port in a pod, or mint credentials (tokens,
token Secrets, certificates). A lifecycle hook keeps each object's kind, namespace and name (`identity`).
For changed objects only what the call introduced counts: a privileged baseline (or a baseline Secret) that
a dev copy inherited is not the plugin's doing, and a dev copy's pods may be pointed at a Secret or ConfigMap
provisioned out of band (no object of the repository: the pull request's own manifests may name one too).

`.devlane.yaml` `policy.plugins.<name>` lifts `clusterScoped`, `rbac`, `privileged` and `secrets`
(`allow`) and adds kinds (`kinds`) and namespaces (`namespaces`) for one plugin; the other rules always
hold. Every refusal names the plugin, the object and the rule, and the switch that would allow it.
devlane's built-in plugins (its own code, never a plugin that takes a built-in's name) reach past the flow
only where `BUILTIN_REACH` lists it, each on purpose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ...core.k8s import (
    CLUSTER_SCOPED,
    LabelIndex,
    identity,
    map_matches,
    pod_template,
    policy_selects,
    required_labels,
)
from ...core.names import SHARED
from ...errors import PluginError, Problem, Where
from ...host.choose import Choice
from ...host.invoke import malformed
from ..copies.dev_set import DevSet
from ..model.records import Model
from ..model.repo_index import claim_mounts, pod_items
from ..settings.grants import Grants
from ..settings.repo_config import CONFIG_FILE, PluginAllow
from .object_refs import (
    LABEL,
    Reference,
    api_group,
    loose_references,
    modeled,
    pod_spec_at,
    references,
    selector_matcher,
)
from .object_refs import as_list as _list
from .object_refs import get_in as _get

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
# What a Role may not grant, whatever the names (Kubernetes' RBAC good practices: workload creation, token
# request, CSRs): (API group, resource) -> (the verbs, what they reach). Writing a pod template is creating pods:
# a pod mounts any Secret and ConfigMap of its namespace and runs as any of its ServiceAccounts. Evicting
# (`pods/eviction`) starts nothing: it is held to the flow's own pods by `resourceNames`, like other subresources.
STARTS_PODS = "starts pods that may mount any Secret of the namespace and run as any of its ServiceAccounts"
WRITES = frozenset({"create", "update", "patch"})
WORKLOAD_RESOURCES: dict[str, tuple[str, ...]] = {
    "": ("pods", "replicationcontrollers"), "apps": ("deployments", "replicasets", "statefulsets", "daemonsets"),
    "batch": ("jobs", "cronjobs"), "argoproj.io": ("rollouts", "workflows", "cronworkflows"),
    "serving.knative.dev": ("services", "configurations", "revisions"), "keda.sh": ("scaledjobs",),
    "batch.volcano.sh": ("jobs",), "jobset.x-k8s.io": ("jobsets",), "leaderworkerset.x-k8s.io": ("leaderworkersets",),
    "kubeflow.org": ("pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs", "jaxjobs", "notebooks"),
    "ray.io": ("rayclusters", "rayjobs", "rayservices"), "tekton.dev": ("taskruns", "pipelineruns"),
    "sparkoperator.k8s.io": ("sparkapplications", "scheduledsparkapplications"),
    "apps.kruise.io": ("clonesets", "statefulsets", "daemonsets", "broadcastjobs", "advancedcronjobs"),
    "apps.openshift.io": ("deploymentconfigs",),
}
RBAC_REACH: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    **{(group, r): (WRITES, STARTS_PODS) for group, found in WORKLOAD_RESOURCES.items() for r in found},
    # exec and attach over WebSockets are GET requests (Kubernetes 1.30+)
    **{("", f"pods/{r}"): (frozenset({"create", "get"}), "opens a shell or a port in pods, which hold the "
                                                          "Secrets and tokens they mount")
       for r in ("exec", "attach", "portforward")},
    ("", "pods/ephemeralcontainers"): (WRITES, "adds containers to running pods, with their Secrets and tokens"),
    ("", "serviceaccounts/token"): (frozenset({"create"}), "mints tokens of ServiceAccounts"),
    ("", "secrets"): (frozenset({"create"}), "mints tokens: the control plane fills a Secret of type "
                                            "kubernetes.io/service-account-token with a token of the account it names"),
    ("certificates.k8s.io", "certificatesigningrequests"): (frozenset({"create"}), "mints client certificates"),
}
# What a built-in plugin reaches past the flow on purpose (its own code only, `Caller.builtin`): plugin ->
# (kind of its object, rule, the field: `*` any name or kind, `**` any path), each matching the field or a parent.
# A built-in takes a Secret's name from its definition's args, as the app's own manifests name theirs: what it
# adds is no wider than what the pull request's manifests may do themselves.
DEV_PASSWORD = (("*", "reference", "**.containers[*].env[*].valueFrom.secretKeyRef"),
                ("*", "reference", "**.initContainers[*].env[*].valueFrom.secretKeyRef"))
BUILTIN_REACH: dict[str, tuple[tuple[str, str, str], ...]] = {
    # the dev pods read the database password from the Secret the definition names (the app's own), from which
    # the controller also sets the password of the flow's database
    "aws-rds": (*DEV_PASSWORD, ("DBInstance", "reference", "spec.masterUserPassword"),
                ("DBCluster", "reference", "spec.masterUserPassword")),
    # its PostDelete Job empties the bucket as the ServiceAccount its definition names (one with S3 rights, IRSA)
    "aws-s3": (("Job", "reference", "spec.template.spec.serviceAccountName"),),
    "azure-sql": DEV_PASSWORD,
    "cloud-sql": (*DEV_PASSWORD, ("SQLUser", "reference", "spec.password.valueFrom.secretKeyRef")),
    # the seeded database's own password, from the Secret the definition names
    "mongodb-seed": DEV_PASSWORD, "mysql-seed": DEV_PASSWORD, "postgres-seed": DEV_PASSWORD,
    # `secret_name`: a Secret holding a Stripe test-mode key the team keeps
    "stripe": DEV_PASSWORD,
    # its Jobs call the Neon API with the key of the Secret its definition names (`key_secret`), and write the
    # lane's connection string to a Secret they create (a Role cannot narrow create by name)
    "neon-branch": (("Job", "reference", "spec.template.spec.containers[neon].env[NEON_API_KEY]"),
                    ("Role", "rbac", "rules.secrets")),
}
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
    at: str = ""  # the field it is about (`BUILTIN_REACH` matches it)


@dataclass(frozen=True)
class Caller:
    """Who made the change: the instance or step (errors name it), its plugin (a `policy.plugins` key)."""

    instance: str
    plugin: str
    emits: tuple[str, ...]
    allow: PluginAllow
    builtin: bool = False  # devlane's own built-in (its origin, not its name): `BUILTIN_REACH` applies


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


def _taken_by_another_flow(name: str, flow_id: str, repository_names: frozenset[str],
                           flows: frozenset[str]) -> str | None:
    """The other flow whose dev copy of a repository object carries `name` (`app-hotfix-pr-1` is flow `hotfix-pr-1`'s
    copy of `app`, not a `pr-1` object), or None. Only a flow that exists beside this one (`flows`: those of the
    output directory) is another flow: `orders-orders-topic-pr-42` is no copy of `orders` while no flow
    `orders-topic-pr-42` is rendered, and a name that is also this flow's own copy of a repository object
    (`orders-db-pr-42` with `orders-db` in the repository) is this flow's, as devlane names its copies so."""
    if name[: -len(flow_id) - 1] in repository_names:
        return None
    for i, ch in enumerate(name):
        if ch != "-" or name[:i] not in repository_names:
            continue
        other = name[i + 1:]
        if other != flow_id and other in flows:
            return other
    return None


def name_findings(name: str, flow_id: str, repository_names: frozenset[str] = frozenset(),
                  flows: frozenset[str] = frozenset()) -> list[Finding]:
    """`flows`: the other flows that exist beside this one (their dev copies' names are taken)."""
    if name.endswith("-" + flow_id) and len(name) > len(flow_id) + 1:
        other = _taken_by_another_flow(name, flow_id, repository_names, flows)
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
    narrow) of kinds whose creation reaches nothing that exists; never what `RBAC_REACH` lists (creating a pod
    reaches every Secret and ServiceAccount of the namespace), never Secrets beyond the flow's, never a
    wildcard."""
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
    reach = _reach_findings(i, rule, resources, verbs)
    if reach:
        return reach
    if names:
        foreign = sorted(str(n) for n in names if not _lanes(n, flow_id))
        return [Finding("rbac", f"rules[{i}]", f"rules[{i}] names {', '.join(foreign)}, not objects of the "
                        "flow")] if foreign else []
    if verbs <= {"create"} and not any("/" in r for r in resources):
        return []
    what = "every Secret" if "secrets" in resources else f"every {', '.join(sorted(resources)) or 'object'}"
    return [Finding("rbac", f"rules[{i}]", f"rules[{i}] reaches {what} of the namespace, not only the flow's "
                    f"objects (list their names in resourceNames)")]


def _reach_findings(i: int, rule: Any, resources: set[str], verbs: set[str]) -> list[Finding]:
    """What `RBAC_REACH` lists that the rule grants, whatever names it lists (a pod template written for a flow's
    own workload mounts the namespace's Secrets as well)."""
    groups = sorted({str(g) for g in _list(_get(rule, "apiGroups"))})
    out = []
    for resource in sorted(resources):
        for group in groups:
            reached = RBAC_REACH.get((group, resource))
            granted = sorted(verbs & reached[0]) if reached else []
            if reached and granted:
                full = f"{resource}.{group}" if group else resource
                out.append(Finding("rbac", f"rules[{i}]:{full}", f"rules[{i}] grants {', '.join(granted)} on {full}, "
                                   f"which {reached[1]}", at=f"rules.{full}"))
    return out


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


def _template(obj: dict) -> tuple[str, Any] | None:
    """(path, pod template) of an object that holds one: where `object_refs` reads a modeled kind's pod spec (a KEDA
    ScaledJob's job target, a PodTemplate's own), else a workload's or CronJob's; None for a Pod (its metadata is its
    pod's own) and an object without one."""
    found = pod_spec_at(obj)
    if found is not None:
        at = found[0].rpartition(".")[0]
        return (at, _get(obj, *at.split("."))) if at else None
    tpl = pod_template(obj)
    return ("spec.jobTemplate.spec.template" if obj.get("kind") == "CronJob" else "spec.template", tpl) if tpl else None


def _unconfined(meta: dict, at: str) -> list[Finding]:
    """The AppArmor annotations of a pod's metadata (`at`) that unconfine a container."""
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    return [Finding("privileged", f"{at}.annotations.{name}", f"{at}.annotations.{name} is unconfined")
            for name, value in annotations.items()
            if str(name).startswith(APPARMOR_ANNOTATION) and value == "unconfined"]


def metadata_findings(obj: dict, top: bool) -> list[Finding]:
    """Server-set and ownership fields on the object (`top`), and template metadata beyond labels and
    annotations, including AppArmor annotations that unconfine a container (a Pod's own included)."""
    out = []
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    if top:
        out += [Finding("metadata", f"metadata.{key}", f"metadata.{key} is set: owner references, finalizers and "
                        "server-set fields are the cluster's, not a plugin's")
                for key in SERVER_METADATA if key in meta]
    templates = []
    if obj.get("kind") == "CronJob":
        templates.append(("spec.jobTemplate.metadata", _get(obj, "spec", "jobTemplate", "metadata")))
    found = _template(obj)
    if found is not None and isinstance(found[1], dict):
        templates.append((f"{found[0]}.metadata", found[1].get("metadata")))
    for at, tmeta in templates:
        if not isinstance(tmeta, dict):
            continue
        for key in sorted(k for k in tmeta if k not in TEMPLATE_METADATA_KEYS):
            if key == "creationTimestamp" and tmeta[key] is None:
                continue
            out.append(Finding("metadata", f"{at}.{key}", f"{at}.{key} is set: a pod template carries only labels "
                               "and annotations (a pod may not move namespace or take owners and finalizers)"))
        out += _unconfined(tmeta, at)
    if obj.get("kind") == "Pod" and api_group(obj) == "":
        out += _unconfined(meta, "metadata")
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
    """Every content rule but isolation and references (which need the baseline)."""
    found = pod_spec_at(obj)  # a kind that keeps it elsewhere (a KEDA ScaledJob's job target)
    if found is not None:
        where, spec = found
    else:
        spec = obj.get("spec") if obj.get("kind") == "Pod" else pod_template(obj).get("spec")
        where = "spec" if obj.get("kind") == "Pod" else ("spec.jobTemplate.spec.template.spec"
                                                        if obj.get("kind") == "CronJob" else "spec.template.spec")
    return (list_findings(obj) + secret_findings(obj) + rbac_findings(obj, flow_id) + service_findings(obj)
            + pod_spec_findings(spec, where) + metadata_findings(obj, top=True))


# -- the policy of one render --------------------------------------------------------------------------------


class OutputPolicy:
    """The output policy of one flow's render: the flow's namespaces and the baseline it must not touch,
    the repository's exceptions, and which plugin added or last changed each object (`owners`)."""

    def __init__(self, model: Model, dev: DevSet, flow_id: str, exceptions: Grants,
                 flows: frozenset[str] = frozenset()):
        self.model = model
        self.flow_id = flow_id
        self.flows = flows - {flow_id}  # the other flows of the output directory: their copies' names are taken
        self.exceptions = exceptions
        found = {dw.namespace for dw in dev.unique_workloads()}
        found |= {s.obj["metadata"].get("namespace") for s in dev.services}
        found |= {o.obj["metadata"].get("namespace") for o in dev.objects}
        found.add(model.default_namespace)
        self.namespaces = frozenset(ns for ns in found if ns)
        self.index = model.index
        self.owners: dict[Identity, str] = {}

    def caller(self, instance: str, choice: Choice) -> Caller:
        """The caller for a call of `choice` as `instance`: the trusted `policy.plugins` grants for either name whose
        identity the chosen code has (`settings.grants`)."""
        allow = self.exceptions.allowed(choice.name, instance, choice.source)
        return Caller(instance, choice.name, choice.manifest.emitted_kinds, allow, choice.source.origin == "builtin")

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
        found += name_findings(name, self.flow_id, self.index.names.get(kind, frozenset()), self.flows)
        if not emitted(obj, caller.emits + caller.allow.kinds):
            group = api_group(obj)
            full = f"{group}/{kind}" if group else kind
            found.append(Finding("emits", "kind", f"{full} is not among the kinds plugin {caller.plugin} declares "
                                 f"({', '.join(caller.emits) or 'none'})", full))
        if not modeled(obj) and not emitted(obj, caller.allow.kinds) and not list_findings(obj):
            group = api_group(obj)
            full = f"{group}/{kind}" if group else kind
            found.append(Finding("unmodeled", "unmodeled", f"devlane does not model the references of {full} (which "
                                 "fields name or select other objects), so it cannot tell what the object reaches",
                                 full))
        isolation = self._isolation(obj, ns)
        found += content_findings(obj, self.flow_id) + isolation + self._references(caller, obj, ns, isolation)
        return [self._problem(caller, ident, f) for f in found if self._refused(caller, f, kind)]

    def _changed(self, caller: Caller, before: dict, after: dict) -> list[Problem]:
        problem = malformed(after, maps=False)
        if problem:
            return [_malformed(caller, identity(before), problem)]
        ns = identity(before, self.model.default_namespace)[1]
        had = {(f.rule, f.key) for f in self._content(caller, before, ns)}
        new = [f for f in self._content(caller, after, ns) if (f.rule, f.key) not in had]
        kind = identity(after)[0]
        return [self._problem(caller, identity(after), f) for f in new if self._refused(caller, f, kind)]

    def _content(self, caller: Caller, obj: dict, ns: str | None) -> list[Finding]:
        """What a changed object carries (`_changed` keeps what the call introduced)."""
        isolation = self._isolation(obj, ns)
        return (content_findings(obj, self.flow_id) + isolation
                + self._references(caller, obj, ns, isolation, changed=True))

    def _isolation(self, obj: dict, namespace: str | None) -> list[Finding]:
        out = []
        items = pod_items([obj], namespace)
        found = _template(obj)
        if not items and found is not None and isinstance(found[1], dict):  # a template where a modeled kind keeps it
            items = [(identity(obj, namespace)[1], _label_map(_get(found[1], "metadata", "labels")), obj)]
        for doc, _ in self.index.selector_index.hits(items):
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

    # -- references (`object_refs`) ------------------------------------------------------------------------

    def _references(self, caller: Caller, obj: dict, namespace: str | None, isolation: list[Finding],
                    changed: bool = False) -> list[Finding]:
        """Each reference of the object that leaves the flow (one finding per object reached), but those
        `_isolation` already refused and a binding's role and subjects (the rbac rule's); an object of a kind
        `object_refs` does not model is read by the shape of its keys (`loose_references`).

        A `changed` object's pod (a dev copy's: the pull request's own workload, whose manifest may name any
        Secret or ConfigMap of its namespace as the baseline's does) may be pointed at a Secret or ConfigMap that
        is no object of the repository (one provisioned out of band, such as a test-mode key: what a Kardinal
        plugin does); at the repository's own, only if it read it before the call."""
        ns = identity(obj, namespace)[1]
        if api_group(obj) == RBAC_GROUP:
            return self._subjects_elsewhere(caller, obj, ns)
        loose = not modeled(obj)
        pod = pod_spec_at(obj)
        pod_at = f"{pod[0]}." if changed and pod is not None else None
        said = {f.key.partition(":")[2] for f in isolation if f.key.startswith(("claim:", "reaches:"))}
        prefixes = {f.key.partition(":")[0] for f in isolation}
        skip = {path for kind, prefix, path in (("Service", "selects", "spec.selector"),
                                                ("NetworkPolicy", "policy", "spec.podSelector"))
                if obj.get("kind") == kind and prefix in prefixes}
        out: dict[str, Finding] = {}
        for r in loose_references(obj) if loose else references(obj):
            if r.shared or r.path.startswith("metadata.ownerReferences") or r.path in skip:
                continue  # shared on purpose; the metadata rule's; `_isolation`'s
            if r.selector is not None:
                found = self._selecting(caller, r, ns, loose)
            elif self._unfollowed(r, ns, said, pod_at):
                continue
            else:
                found = self._naming(caller, r, ns, loose)
            if found is not None:
                out.setdefault(found.key, found)
        return list(out.values())

    def _subjects_elsewhere(self, caller: Caller, obj: dict, ns: str | None) -> list[Finding]:
        """A binding's ServiceAccounts of a namespace not the flow's (its other subjects and its role are the rbac
        rule's): named for the flow, they are still another namespace's accounts."""
        return [Finding("rbac", f"subject:{r.namespace}/{r.name}", f"it grants its rights to ServiceAccount {r.name} "
                        f"of namespace {r.namespace}, not to a ServiceAccount of the flow", at=r.path)
                for r in references(obj) if r.path.startswith("subjects") and r.namespace not in
                (None, ns, *self.namespaces, *caller.allow.namespaces)]

    def _unfollowed(self, r: Reference, ns: str | None, said: set[str], pod_at: str | None) -> bool:
        """A named reference `_isolation` already refused, or a changed pod's (under `pod_at`) Secret or ConfigMap
        provisioned out of band (no object of the repository)."""
        if r.kind in ("PersistentVolumeClaim", "Service") and r.name in said and not r.namespace:
            return True
        return (pod_at is not None and r.path.startswith(pod_at) and r.kind in ("Secret", "ConfigMap")
                and not r.namespace and self._baseline_object(r.kind, ns, r.name) is None)

    def _naming(self, caller: Caller, r: Reference, ns: str | None, loose: bool) -> Finding | None:
        """A named reference: to a flow's object (named for the flow, in its namespaces), never a baseline one; for
        an unmodeled kind (`loose`) only a baseline object of the namespace is refused."""
        where = r.namespace or ns
        baseline = self._baseline_object(r.kind, where, r.name)
        # what the reference names, and where, as one key no name can forge: a name is any text a plugin wrote
        key = "ref:" + json.dumps([str(baseline or r.named), where])

        def refuse(what: str) -> Finding:
            return Finding("reference", key, f"{r.path} names {what}: a plugin's objects reference only the flow's "
                           f"own (named <name>-{self.flow_id}, in its namespaces)", at=r.path)

        if loose:
            return refuse(f"the baseline {baseline} (the trusted policy lets the kind through, never a reference to "
                          "the baseline)") if baseline is not None and where == ns else None
        if r.cluster:
            return refuse(f"{r.named}, which is the cluster's, never the flow's")
        if where != ns and where not in self.namespaces and where not in caller.allow.namespaces:
            return refuse(f"{r.named} in namespace {where}, which is not the flow's")
        if baseline is not None:
            return refuse(f"the baseline {baseline}")
        if name_findings(r.name, self.flow_id, self.index.names.get(r.kind, frozenset()), self.flows):
            return refuse(f"{r.named}, which is not an object of the flow")
        return None

    def _selecting(self, caller: Caller, r: Reference, ns: str | None, loose: bool) -> Finding | None:
        """A selector: over the flow's namespaces only, matching no baseline pod (or Service, `r.kind`)."""
        what = "Services" if r.kind == "Service" else "pods"
        spaces = [s for s in r.namespaces or () if s != ns]
        other = [s for s in spaces if s == "*" or (s not in self.namespaces and s not in caller.allow.namespaces)]
        if other and not loose:
            reach = "every namespace" if "*" in other else f"namespace {', '.join(other)}"
            return Finding("reference", f"sel:{r.path}:namespaces", f"{r.path} selects {what} of {reach}, not only the "
                           "flow's namespaces", at=r.path)
        matches = selector_matcher(r)
        if matches is None and loose:
            return None  # a key named like a selector that holds none: nothing it selects is known
        if matches is None:
            return Finding("reference", f"sel:{r.path}", f"{r.path} is no label selector devlane can read, so it "
                           f"cannot tell which {what} it selects", at=r.path)
        if matches is False:
            return None
        index = self._baseline_services if r.kind == "Service" else self._baseline_pods
        required = r.selector if r.form != LABEL else required_labels(r.selector)
        for space in dict.fromkeys([ns, *(s for s in spaces if s not in other)]):
            for labels, doc in index.candidates(space, required):
                if matches is True or matches(labels):
                    return Finding("reference", f"sel:{r.kind}:{doc.ref}", f"{r.path} selects the {what} of baseline "
                                   f"{doc.ref}: a plugin's selectors match only the flow's own", at=r.path)
        return None

    def _baseline_object(self, kind: str, ns: str | None, name: str) -> str | None:
        """`Kind/name` of the baseline object of the namespace with that name (of `kind`, or of any kind when the
        reference does not say), or None."""
        kinds = self._baseline_names.get((ns, name), ())
        if kind in kinds:
            return f"{kind}/{name}"
        return f"{kinds[0]}/{name}" if kinds and not kind else None

    # each index built once per policy, when a check first needs it; the functions are plain (the mutation test
    # mutates no decorated function) and wrapped below
    def _baseline_names_uncached(self) -> dict[tuple[str | None, str], list[str]]:
        names: dict[tuple[str | None, str], list[str]] = {}
        for doc in self.index.documents:
            names.setdefault((doc.namespace or self.model.default_namespace, doc.name), []).append(doc.kind)
        return names

    def _baseline_pods_uncached(self) -> LabelIndex:
        index = LabelIndex()
        for ns, labels, doc in self.index.pods:
            index.add(ns, labels, (labels, doc))
        return index

    def _baseline_services_uncached(self) -> LabelIndex:
        index = LabelIndex()
        for doc in self.index.documents:
            if doc.kind == "Service" and doc.api_version == "v1":
                labels = _label_map(doc.labels)
                index.add(doc.namespace or self.model.default_namespace, labels, (labels, doc))
        return index

    _baseline_names = cached_property(_baseline_names_uncached)
    _baseline_pods = cached_property(_baseline_pods_uncached)
    _baseline_services = cached_property(_baseline_services_uncached)

    @staticmethod
    def _refused(caller: Caller, finding: Finding, kind: str) -> bool:
        if finding.rule in SWITCHES and finding.rule in caller.allow.allow:
            return False
        return not (caller.builtin and finding.at and any(
            rule == finding.rule and _glob(want, kind) and _glob(at, finding.at, parents=True)
            for want, rule, at in BUILTIN_REACH.get(caller.plugin, ())))

    def _problem(self, caller: Caller, ident: Identity, finding: Finding) -> Problem:
        return Problem(f"refused by the output policy (rule {finding.rule}): {finding.why}",
                       Where(object=ref(ident), plugin=caller.instance), _hint(caller, finding),
                       code="plugin-policy")

    def _done(self, problems: list[Problem], caller: Caller, touched: list[dict], namespace: str | None) -> None:
        if problems:
            raise PluginError(problems)
        for obj in touched:
            self.owners[identity(obj, namespace)] = caller.instance


def _label_map(value: Any) -> dict[str, Any]:
    """The labels of a map that selectors can match (scalar values; anything else is no label)."""
    return {str(k): v for k, v in value.items() if isinstance(v, (str, int, float, bool))} \
        if isinstance(value, dict) else {}


def _glob(pattern: str, text: str, parents: bool = False) -> bool:
    """`BUILTIN_REACH`'s patterns: `**` any text, `*` any text but a dot (a name, a kind); with `parents`, the
    pattern may stop at a `.` of the text (a field and what is under it)."""
    regex = ".*".join("[^.]*".join(re.escape(part) for part in piece.split("*")) for piece in pattern.split("**"))
    return re.fullmatch(regex + (r"(?:[.\[].*)?" if parents else ""), text) is not None


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
        "reference": "point the field at the flow's own objects (named <name>-<flowId>) and select only the flow's "
                     "pods (labels no baseline object carries); no policy setting lifts this rule",
        "unmodeled": f"if plugin {caller.plugin} is trusted with {fix} (its references reviewed by whoever grants it), "
                     f"list it {trusted}: policy: {{plugins: {{{key}: {{kinds: [{fix}]}}}}}}; spec.emits in the "
                     "plugin's own plugin.yaml is not enough",
        "list": "return the List's items as objects of their own, each checked by the output policy",
    }[rule]
