"""aws-s3: an Amazon S3 bucket per flow, as an ACK `Bucket` (no AWS call during render).

Define it (`type: external`) with the `servicename` of the Service that stands for the bucket (an external
ExternalName Service) and list it in the plugins of the Services that use it.
In every flow, the dependents' dev copies get their own bucket, named `[<prefix>-]<servicename>-<flowId>-
<hash8>`: bucket names are global across all AWS accounts, so the hash (of `unique_scope`, the flow's plugin instance
and the prefix) keeps two repositories or clusters that render the same flow id apart, deterministically. The name
is the only thing the app needs, so it is set as a plain env value on the dependents.

Why the teardown looks like this: ACK's s3-controller deletes a bucket with a plain `DeleteBucket`, which S3 refuses
while the bucket holds objects (BucketNotEmpty), and the custom resource then waits on its finalizer. So every bucket
gets a lifecycle rule that expires its objects after `expiration_days` (a backstop that works under Argo CD and Flux:
once the objects are gone, the controller's retries delete the bucket), and `teardown: argo-postdelete` adds an Argo
CD PostDelete hook Job that empties and deletes the bucket at once, with the Bucket's deletion policy `retain` so that
pruning the custom resource never blocks the hook (Argo CD only, one Application per flow; Flux never creates the Job).
Kardinal announced an S3 plugin but never shipped one. Shared ACK mechanics are in `plugins/_ack.py`.
"""

from __future__ import annotations

from typing import Any

from plugins import _ack
from plugins._common import Json, Refused, restricted_pod, wire

API = "s3.services.k8s.aws/v1alpha1"
MAX_BUCKET = 63  # S3: 3-63 of [a-z0-9.-]; devlane uses no dots (virtual-hosted TLS breaks on them)
RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")  # S3 refuses bucket names starting with these
DEFAULT_EXPIRATION_DAYS = "7"
TEARDOWNS = ("expire", "argo-postdelete")
DEFAULT_JOB_IMAGE = "amazon/aws-cli:2.15.0"
UNPRIVILEGED = 65534  # nobody
ENV_ARGS = ("bucket_env",)
ARGS = ("region", "bucket_prefix", "unique_scope", "expiration_days", *ENV_ARGS, "deletion_policy", "teardown",
        "job_service_account", "job_image")
# Empties and deletes the bucket; a bucket that is gone already is success (the hook may run twice)
EMPTY_SCRIPT = """\
set -eu
if ! out=$(aws s3api head-bucket --bucket "$BUCKET" 2>&1); then
  case "$out" in
    *404*|*"Not Found"*|*NoSuchBucket*) echo "bucket $BUCKET is gone already"; exit 0 ;;
    *) echo "$out" >&2; exit 1 ;;
  esac
fi
aws s3 rb "s3://$BUCKET" --force
"""


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first): the teardown's needs, the reserved prefixes."""
    args = {k: v for k, v in args.items() if v not in (None, "")}
    out = _ack.check_common(args, ENV_ARGS)

    def bad(name: str, message: str) -> None:
        out.append({"field": name, "message": message})

    if not args.get("region"):
        bad("region", "is required: a bucket outside us-east-1 needs its location constraint")
    prefix = str(args.get("bucket_prefix") or "")
    if prefix.startswith(RESERVED_PREFIXES):
        bad("bucket_prefix", f"S3 refuses bucket names starting with {', '.join(RESERVED_PREFIXES)}")
    days = str(args.get("expiration_days") or DEFAULT_EXPIRATION_DAYS)
    if not days.isdigit() or not 1 <= int(days) <= 3650:
        bad("expiration_days", f"{days!r} is not a whole number of days from 1 to 3650")
    teardown = str(args.get("teardown") or "expire")
    if teardown not in TEARDOWNS:
        bad("teardown", f"{teardown!r} is not one of {', '.join(TEARDOWNS)}")
    postdelete = teardown == "argo-postdelete"
    if postdelete and not args.get("job_service_account"):
        bad("job_service_account", "teardown argo-postdelete runs a Job that empties the bucket: name the "
                                   "ServiceAccount whose AWS role may list, delete objects in and delete the bucket "
                                   "(IRSA or EKS Pod Identity)")
    if postdelete and args.get("deletion_policy") == "delete":
        bad("deletion_policy", "teardown argo-postdelete sets retain, so that pruning the Bucket never waits on a "
                               "non-empty bucket; drop deletion_policy")
    for name in ("job_service_account", "job_image"):
        if args.get(name) and not postdelete:
            bad(name, "only teardown argo-postdelete runs a Job; set teardown: argo-postdelete or drop it")
    return out


def bucket_name(flow_uuid: str, prefix: str, scope: str) -> str:
    """`[<prefix>-]<flow_uuid>-<hash8>`, at most 63 lowercase characters: the hash covers scope, flow_uuid and prefix,
    so names differ across repositories or clusters that give different scopes, and never change between renders."""
    digest = _ack.stable_hash(scope, flow_uuid, prefix)
    base = f"{prefix}-{flow_uuid}" if prefix else flow_uuid
    name = _ack.aws_name(base, MAX_BUCKET, suffix=f"-{digest}")
    return f"b-{name}"[:MAX_BUCKET] if name.startswith(RESERVED_PREFIXES) else name


def _bucket(name: str, flow_uuid: str, region: str, policy: str, days: int) -> Json:
    spec: Json = {"name": name}
    if region != "us-east-1":  # S3 refuses a us-east-1 location constraint
        spec["createBucketConfiguration"] = {"locationConstraint": region}
    spec["publicAccessBlock"] = {"blockPublicACLs": True, "blockPublicPolicy": True, "ignorePublicACLs": True,
                                 "restrictPublicBuckets": True}
    spec["lifecycle"] = {"rules": [{"id": "devlane-expire", "status": "Enabled", "filter": {"prefix": ""},
                                    "expiration": {"days": days},
                                    "abortIncompleteMultipartUpload": {"daysAfterInitiation": 1}}]}
    spec["tagging"] = {"tagSet": _ack.tag_list(flow_uuid)}
    return {"apiVersion": API, "kind": "Bucket", "metadata": _ack.ack_metadata(flow_uuid, region, policy),
            "spec": spec}


def _empty_job(flow_uuid: str, bucket: str, region: str, account: str, image: str) -> Json:
    """The Argo CD PostDelete hook that empties and deletes the bucket. `reconcile: disabled` makes Flux skip it
    entirely (never created): under Flux it would run at apply time."""
    container = {"name": "empty-bucket", "image": image, "command": ["/bin/sh", "-c", EMPTY_SCRIPT],
                 "env": [{"name": "BUCKET", "value": bucket}, {"name": "AWS_REGION", "value": region},
                         {"name": "HOME", "value": "/tmp"}],
                 "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                     "capabilities": {"drop": ["ALL"]}},
                 "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}]}
    pod = {"serviceAccountName": account, "restartPolicy": "Never",
           "securityContext": restricted_pod(UNPRIVILEGED),
           "containers": [container], "volumes": [{"name": "tmp", "emptyDir": {}}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": _ack.object_name("empty", flow_uuid), "annotations": {
                "argocd.argoproj.io/hook": "PostDelete",
                "argocd.argoproj.io/hook-delete-policy": "HookSucceeded",
                "kustomize.toolkit.fluxcd.io/reconcile": "disabled"}},
            "spec": {"backoffLimit": 3, "activeDeadlineSeconds": 3600, "template": {"spec": pod}}}


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, region: str = "",
                bucket_prefix: str = "", unique_scope: str = "", expiration_days: str = "", bucket_env: str = "",
                deletion_policy: str = "", teardown: str = "", job_service_account: str = "",
                job_image: str = "") -> Json:
    """The dependents' pod specs with the flow's bucket name (same count and order), the Bucket (and the PostDelete
    Job), and the state."""
    name = bucket_name(flow_uuid, bucket_prefix, unique_scope)
    postdelete = teardown == "argo-postdelete"
    policy = "retain" if postdelete else deletion_policy or "delete"
    resources = [_bucket(name, flow_uuid, region, policy, int(expiration_days or DEFAULT_EXPIRATION_DAYS))]
    if postdelete:
        resources.append(_empty_job(flow_uuid, name, region, job_service_account, job_image or DEFAULT_JOB_IMAGE))
    try:
        specs = wire(pod_specs, {bucket_env or "BUCKET_NAME": _ack.value(name)})
    except Refused as refused:
        return refused.answer(pod_specs)
    return {"pod_specs": specs, "config_map": {"bucket": name, "region": region, "teardown": teardown or "expire"},
            "resources": resources}


def delete_flow(config_map: Json, flow_uuid: str) -> None:
    """Nothing to undo here: pruning deletes the Bucket once it is empty (lifecycle expiry), or the PostDelete Job
    empties and deletes it (teardown argo-postdelete)."""
    return None
