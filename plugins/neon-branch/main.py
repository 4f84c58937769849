"""neon-branch: a Neon database branch per flow, made by a Job that Argo CD or Flux runs, never by the render.

Why a Job: Neon has no Kubernetes operator or CRD for branches of its cloud service, and a render must make no
API call (Argo CD re-renders on every refresh). So the flow gets objects whose side effect happens in the
cluster, at sync time:

- a PreSync Job (also a Flux forced Job) that finds the branch `devlane-<namespace>-<flow_uuid>` by name or
  creates it (read_write endpoint, forked from `parent_branch_id`, `expires_at` = now + `ttl_hours`, computed
  in the Job, so the render never reads the clock), asks Neon for its connection URI, and writes it into the
  Secret `neon-<flow_uuid>` (key DATABASE_URL) with `kubectl apply`;
- a ServiceAccount, a Role and a RoleBinding that let that Job write exactly that Secret (see README.md for
  why `create` cannot be narrowed to one name), as PreSync hooks that exist before the Job starts;
- a PostDelete Job that deletes the branch when the flow's Argo CD Application is deleted (Flux has no
  delete hook: `expires_at` is the backstop).

The dependents' target container reads the URL by reference (`env_var`, default DATABASE_URL). The Neon API
key is only ever a Secret reference (`api_key_secret`); Kardinal's literal NEON_API_KEY is accepted and never
written (see README.md for the mapping of Kardinal's neondb-plugin args).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from plugins._common import (
    IMAGE_DIGEST,
    Json,
    Refused,
    env_name_findings,
    flag,
    flow_name,
    plain_env,
    restricted_container,
    restricted_pod,
    result,
    secret_ref,
    wire,
)

NEON_API = "https://console.neon.tech/api/v2"
SECRET_KEY = "DATABASE_URL"  # the key the Job writes in Secret neon-<flow_uuid>
DEFAULT_ENV = "DATABASE_URL"
KARDINAL_ENV = "POSTGRES"  # the env var Kardinal's neondb-plugin rewrote
DEFAULT_API_SECRET, DEFAULT_API_KEY = "neon-api", "api-key"
DEFAULT_DATABASE, DEFAULT_ROLE = "neondb", "neondb_owner"  # what Neon creates in a new project
DEFAULT_TTL_HOURS, MAX_TTL_HOURS = "72", 720
HOOK_SYNC_WAVE_RBAC, HOOK_SYNC_WAVE_JOB = "-2", "-1"
STATE_DIR = "/flow-state"  # where the PostDelete Job mounts the flow's state ConfigMap, when it still exists
RUN_AS = 65532  # any non-root uid: the Jobs need no file of their own outside /tmp

# Shared by both Jobs: the Neon API with the key from a header file (never on a command line), and the
# branch found by its name (idempotent: a re-run, or a second sync, finds what the first one created).
_COMMON = """set -eu
umask 077
API="$NEON_API/projects/$NEON_PROJECT_ID"
BRANCH_NAME="devlane-$POD_NAMESPACE-$FLOW_UUID"
printf 'Authorization: Bearer %s\\n' "$NEON_API_KEY" > "$HOME/auth"
unset NEON_API_KEY
neon() { curl -fsS -H "@$HOME/auth" -H 'Accept: application/json' "$@"; }
find_branch() {
  neon "$API/branches" | jq -r --arg n "$BRANCH_NAME" '[.branches[] | select(.name == $n) | .id][0] // empty'
}
"""

CREATE_SCRIPT = _COMMON + """BRANCH_ID=$(find_branch)
if [ -z "$BRANCH_ID" ]; then
  BODY=$(jq -n --arg n "$BRANCH_NAME" --arg p "${NEON_PARENT_BRANCH_ID:-}" --argjson ttl "$TTL_HOURS" '
    {endpoints: [{type: "read_write"}],
     branch: ({name: $n}
       + (if $p == "" then {} else {parent_id: $p} end)
       + (if $ttl > 0 then {expires_at: ((now + $ttl * 3600) | floor | todate)} else {} end))}')
  BRANCH_ID=$(neon -X POST -H 'Content-Type: application/json' -d "$BODY" "$API/branches" | jq -r '.branch.id // empty')
  [ -n "$BRANCH_ID" ] || BRANCH_ID=$(find_branch)  # a concurrent run may have created it
fi
[ -n "$BRANCH_ID" ] || { echo "neon-branch: branch $BRANCH_NAME was not found nor created" >&2; exit 1; }
echo "neon-branch: branch $BRANCH_NAME is $BRANCH_ID"
set -- --data-urlencode "branch_id=$BRANCH_ID" --data-urlencode "database_name=$DATABASE_NAME" \\
  --data-urlencode "role_name=$ROLE_NAME"
if [ "$POOLED" = true ]; then set -- "$@" --data-urlencode pooled=true; fi
neon -G "$API/connection_uri" "$@" | jq -ej '.uri' > "$HOME/url"  # -j: no trailing newline in the URL
kubectl create secret generic "$TARGET_SECRET" --from-file="$TARGET_KEY=$HOME/url" --dry-run=client -o yaml \\
  | kubectl label --local -f - "devlane.dev/flow-uuid=$FLOW_UUID" app.kubernetes.io/managed-by=devlane -o yaml \\
  | kubectl apply -f -
echo "neon-branch: wrote $TARGET_KEY of Secret $TARGET_SECRET"
"""

# Argo CD runs PostDelete hooks after every resource of the Application is gone, the flow's state ConfigMap
# included. Flux has no such hook and applies this Job like any other: the ConfigMap, mounted optionally,
# is then present, and the Job leaves the branch alone.
DELETE_SCRIPT = _COMMON + """if [ -e "$FLOW_STATE_DIR/config_map.json" ]; then
  echo "neon-branch: the flow is still deployed (its state ConfigMap exists): not a teardown, branch kept"
  exit 0
fi
BRANCH_ID=$(find_branch)
if [ -z "$BRANCH_ID" ]; then
  echo "neon-branch: no branch $BRANCH_NAME (expired or never created); nothing to delete"
  exit 0
fi
neon -X DELETE "$API/branches/$BRANCH_ID" > /dev/null
echo "neon-branch: deleted branch $BRANCH_NAME ($BRANCH_ID)"
"""


# --------------------------------------------------------------------------------------------------
# Args


def _given(args: dict[str, Any], name: str) -> bool:
    return args.get(name) not in (None, "")


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first); an empty list means valid."""
    out: list[Json] = []

    def bad(name: str, message: str) -> None:
        out.append({"field": name, "message": message})

    for ours, kardinal in (("project_id", "NEON_PROJECT_ID"), ("parent_branch_id", "NEON_FORK_FROM_BRANCH_ID")):
        if _given(args, ours) and _given(args, kardinal):
            bad(ours, f"set {ours} or {kardinal} (Kardinal's name for it), not both")
    if not (_given(args, "project_id") or _given(args, "NEON_PROJECT_ID")):
        bad("project_id", "is required: the id of the Neon project to branch (Neon console: Settings, General; "
                          "e.g. proud-lake-123456); Kardinal's NEON_PROJECT_ID is accepted too")
    if _given(args, "NEON_API_KEY") and _given(args, "api_key_secret"):
        bad("NEON_API_KEY", "set api_key_secret (a Secret reference) or NEON_API_KEY (Kardinal's literal key, never "
                            "written), not both; remove NEON_API_KEY: a key in git is a leaked key")
    image = str(args.get("image") or "")
    if not IMAGE_DIGEST.match(image):
        bad("image", "must be pinned by digest (NAME@sha256:<64 hex digits>): an image with sh, curl, jq and "
                     "kubectl that the Jobs run; devlane ships no default because it cannot vouch for a digest "
                     "it did not build (e.g. `crane digest alpine/k8s:1.31.4` gives one)")
    if int(str(args.get("ttl_hours") or 0)) > MAX_TTL_HOURS:
        bad("ttl_hours", f"is at most {MAX_TTL_HOURS} (30 days): a dev branch that outlives that should be "
                         "deleted by the PostDelete Job, or kept with ttl_hours: 0")
    return out + env_name_findings(args, ("env_var",))


def _url_defaults(pod_specs: list[Json], env: str) -> tuple[str | None, str | None]:
    """(role, database) from a postgres:// URL the dependents already set in `env` (Kardinal's demo wiring),
    so a definition written for neondb-plugin keeps its user and database. The password is never read."""
    for spec in pod_specs:
        url = plain_env((spec.get("containers") or [{}])[0]).get(env)
        if not url:
            continue
        parts = urlsplit(str(url))
        if parts.scheme in ("postgres", "postgresql") and parts.username:
            database = unquote(parts.path.lstrip("/")) or None
            return unquote(parts.username), database
    return None, None


# --------------------------------------------------------------------------------------------------
# Objects


def _hook(phase: str, wave: str, policy: str) -> Json:
    return {"argocd.argoproj.io/hook": phase, "argocd.argoproj.io/hook-delete-policy": policy,
            "argocd.argoproj.io/sync-wave": wave}


def _job(name: str, phase: str, script: str, env: list[Json], image: str, account: str | None,
         state: str | None = None) -> Json:
    """A hook Job that Argo CD runs at `phase` and Flux applies as a forced Job (re-run when its spec changes);
    `state`: the flow's state ConfigMap, mounted if it exists (the teardown's guard)."""
    pod: Json = {"restartPolicy": "Never"}
    if account:
        pod["serviceAccountName"] = account
    else:
        pod["automountServiceAccountToken"] = False
    pod["securityContext"] = restricted_pod(RUN_AS)
    mounts = [{"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[Json] = [{"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}]
    if state:
        mounts.append({"name": "flow-state", "mountPath": STATE_DIR, "readOnly": True})
        env = [*env, {"name": "FLOW_STATE_DIR", "value": STATE_DIR}]
        volumes.append({"name": "flow-state", "configMap": {"name": state, "optional": True}})
    pod["containers"] = [{
        "name": "neon", "image": image, "command": ["/bin/sh", "-c", script], "env": env,
        "securityContext": restricted_container(), "volumeMounts": mounts,
    }]
    pod["volumes"] = volumes
    annotations = {**_hook(phase, HOOK_SYNC_WAVE_JOB, "BeforeHookCreation,HookSucceeded"),
                   "kustomize.toolkit.fluxcd.io/force": "enabled"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": annotations},
            "spec": {"backoffLimit": 3, "activeDeadlineSeconds": 600, "template": {"spec": pod}}}


def _rbac(account: str, secret: str) -> list[Json]:
    """The create Job's identity: get and patch on exactly the flow's Secret; create on secrets, which RBAC
    cannot narrow to a name (the name of an object being created is not known to the authorizer)."""
    hook = _hook("PreSync", HOOK_SYNC_WAVE_RBAC, "BeforeHookCreation")
    meta = {"name": account, "annotations": hook}
    rules = [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [secret], "verbs": ["get", "patch"]},
             {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta), "automountServiceAccountToken": True},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": dict(meta), "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(meta),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
         "subjects": [{"kind": "ServiceAccount", "name": account}]},
    ]


def _env(flow_uuid: str, project: str, parent: str, key_secret: str, key_key: str) -> list[Json]:
    env = [
        {"name": "NEON_API_KEY", **secret_ref(key_secret, key_key)},
        {"name": "NEON_API", "value": NEON_API},
        {"name": "NEON_PROJECT_ID", "value": project},
    ]
    if parent:
        env.append({"name": "NEON_PARENT_BRANCH_ID", "value": parent})
    env += [{"name": "FLOW_UUID", "value": flow_uuid},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "HOME", "value": "/tmp"}]
    return env


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, project_id: str = "",
                parent_branch_id: str = "", api_key_secret: str = "", api_key_secret_key: str = "",
                database_name: str = "", role_name: str = "", pooled: str = "", env_var: str = "",
                ttl_hours: str = "", image: str = "",
                NEON_PROJECT_ID: str = "", NEON_FORK_FROM_BRANCH_ID: str = "", NEON_API_KEY: str = "") -> Json:
    """The dependents wired to Secret neon-<flow_uuid>, the Jobs that fill it and delete the branch, their RBAC."""
    results: list[Json] = []
    kardinal = bool(NEON_PROJECT_ID)
    project = project_id or NEON_PROJECT_ID
    parent = parent_branch_id or NEON_FORK_FROM_BRANCH_ID
    env = env_var or (KARDINAL_ENV if kardinal else DEFAULT_ENV)
    key_secret = api_key_secret or DEFAULT_API_SECRET
    key_key = api_key_secret_key or DEFAULT_API_KEY
    if NEON_API_KEY:
        results.append(result(
            f"args.NEON_API_KEY is not written into the manifests; the Jobs read the key from Secret {key_secret} "
            f"(key {key_key}), which must exist in the flow's namespace", "warning",
            f"remove NEON_API_KEY from the plugin definition (a key in git is a leaked key) and create the Secret: "
            f"kubectl create secret generic {key_secret} --from-literal={key_key}=<key>"))
    url_role, url_db = _url_defaults(pod_specs, env)
    role = role_name or url_role or DEFAULT_ROLE
    database = database_name or url_db or DEFAULT_DATABASE
    secret = flow_name("neon", flow_uuid)
    account = flow_name("neon-branch", flow_uuid)
    create_job = flow_name("neon-create", flow_uuid)
    delete_job = flow_name("neon-delete", flow_uuid)
    try:
        specs = wire(pod_specs, {env: secret_ref(secret, SECRET_KEY)})
    except Refused as refused:
        return refused.answer(pod_specs)
    common = _env(flow_uuid, project, parent, key_secret, key_key)
    create_env = [*common, {"name": "TTL_HOURS", "value": str(int(ttl_hours or DEFAULT_TTL_HOURS))},
                  {"name": "DATABASE_NAME", "value": database}, {"name": "ROLE_NAME", "value": role},
                  {"name": "POOLED", "value": "true" if flag(pooled, False) else "false"},
                  {"name": "TARGET_SECRET", "value": secret}, {"name": "TARGET_KEY", "value": SECRET_KEY}]
    resources = [*_rbac(account, secret),
                 _job(create_job, "PreSync", CREATE_SCRIPT, create_env, image, account),
                 _job(delete_job, "PostDelete", DELETE_SCRIPT, common, image, None, f"devlane-state-{flow_uuid}")]
    state = {"project": project, "branchName": f"devlane-<namespace>-{flow_uuid}", "secret": secret,
             "env": env, "jobs": [create_job, delete_job]}
    return {"pod_specs": specs, "config_map": state, "resources": resources, "results": results}


def delete_flow(config_map: Json, flow_uuid: str) -> Json:
    """Nothing to call: the branch is deleted by the PostDelete Job (one Argo CD Application per flow) or
    expires (`expires_at`, the backstop under Flux); render and delete never call Neon."""
    project = (config_map or {}).get("project", "?")
    return {"results": [result(
        f"Neon branch devlane-<namespace>-{flow_uuid} of project {project} is deleted by the PostDelete Job when the "
        "flow's Argo CD Application is deleted, or when it expires (ttl_hours)", "info",
        "under Flux or a shared Application, delete it at once with the Neon console or "
        f"`neonctl branches delete devlane-<namespace>-{flow_uuid} --project-id {project}`")]}
