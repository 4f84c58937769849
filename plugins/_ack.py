"""What the AWS built-ins (aws-rds, aws-sqs, aws-s3) share: AWS resources per flow as ACK custom resources.

Render makes no AWS call. Each built-in adds AWS Controllers for Kubernetes (ACK) custom resources that Argo CD
or Flux apply, and the ACK controllers in the cluster create, update and delete the AWS resources. So:

- AWS-side names are derived, never random: from the plugin's `flow_uuid` (`<servicename>-<flowId>`), cleaned to
  the service's own alphabet and shortened with a stable hash when over its limit (`aws_name`);
- every custom resource says its region and its deletion policy explicitly (`ack_metadata`), so what pruning does
  to the AWS resource is visible in the manifest rather than in a controller flag;
- Kubernetes names of added objects end with `flow_uuid` (so with `-<flowId>`, as the output policy requires);
- what the app needs is set on the dependents' target container by env name, replaced in place and never
  duplicated (`_common.wire`); values the renderer can compute (an SQS URL, a bucket name) are plain values, and values
  known only after creation (an RDS endpoint) are copied by an ACK `FieldExport` into an emitted, empty ConfigMap
  (`field_export`, `empty_configmap`) that the pod reads with a configMapKeyRef.

What every built-in shares (results, refusals, env edits, names) is in `plugins/_common.py`, which this module
builds on; a built-in copied out of devlane must take both along. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from plugins._common import Json, clean_name, env_name_findings, flow_name, plain_env, stable_hash

REGION_ANNOTATION = "services.k8s.aws/region"
DELETION_POLICY_ANNOTATION = "services.k8s.aws/deletion-policy"
DELETION_POLICIES = ("delete", "retain")
FLOW_TAG = "devlane.dev/flow"  # the AWS tag naming the flow's plugin instance (flow_uuid)

REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]\Z")  # us-east-1, ap-southeast-2, us-gov-west-1
ACCOUNT_ID = re.compile(r"[0-9]{12}\Z")


# --------------------------------------------------------------------------------------------------
# Args


def check_common(args: Mapping[str, Any], env_args: tuple[str, ...] = ()) -> list[Json]:
    """The checks every AWS built-in shares (argsSchema says the same; these also run on direct calls)."""
    out: list[Json] = []

    def bad(name: str, message: str) -> None:
        out.append({"field": name, "message": message})

    region = str(args.get("region") or "")
    if region and not REGION.match(region):
        bad("region", f"{region!r} is not an AWS region code (such as us-east-1 or eu-west-2)")
    account = str(args.get("account_id") or "")
    if account and not ACCOUNT_ID.match(account):
        bad("account_id", f"{account!r} is not a 12-digit AWS account id")
    policy = str(args.get("deletion_policy") or "")
    if policy and policy not in DELETION_POLICIES:
        bad("deletion_policy", f"{policy!r} is not one of {', '.join(DELETION_POLICIES)} (ACK's "
                               "services.k8s.aws/deletion-policy)")
    return out + env_name_findings(args, env_args)


# --------------------------------------------------------------------------------------------------
# Names


def aws_name(base: str, limit: int, allowed: str = "a-z0-9-", lower: bool = True, letter_first: bool = False,
             suffix: str = "") -> str:
    """`base` in an AWS service's alphabet (other characters become `-`, runs of `-` collapse), at most `limit`
    characters with `suffix`; a longer one keeps its start and gets `-<hash8>` of the whole cleaned name, so two long
    names never collide after shortening. `letter_first` prefixes `d` when the name would start otherwise."""
    name = clean_name(base, allowed, lower)
    if letter_first and not name[:1].isalpha():
        name = f"d-{name}".rstrip("-")
    room = limit - len(suffix)
    if len(name) > room:
        digest = stable_hash(name)
        name = f"{name[: room - len(digest) - 1].rstrip('-_.')}-{digest}"
    return name + suffix


def object_name(role: str, flow_uuid: str) -> str:
    """The Kubernetes name of an added object: `<role>-<flow_uuid>` (`flow_name`: it ends with `-<flowId>` as the
    output policy requires, and stays a DNS label, shortened with a stable hash when needed: a Job's name must)."""
    return flow_name(role, flow_uuid) if role else flow_uuid


# --------------------------------------------------------------------------------------------------
# Objects


def ack_metadata(name: str, region: str, deletion_policy: str, extra: Mapping[str, str] | None = None) -> Json:
    """metadata of an ACK custom resource: the region (when given; else the controller's own `--aws-region`) and an
    explicit deletion policy, then any controller-specific annotations."""
    annotations = {**({REGION_ANNOTATION: region} if region else {}), DELETION_POLICY_ANNOTATION: deletion_policy,
                   **(extra or {})}
    return {"name": name, "annotations": annotations}


def tag_list(flow_uuid: str) -> list[Json]:
    """AWS tags as ACK's `[{key, value}]` (RDS, S3): who owns the resource."""
    return [{"key": FLOW_TAG, "value": flow_uuid}, {"key": "app.kubernetes.io/managed-by", "value": "devlane"}]


def empty_configmap(name: str) -> Json:
    """The ConfigMap a FieldExport writes into. ACK requires it to exist (FieldExportMissingConfigMap otherwise); it
    has no `data`, so neither Argo CD's diff nor Flux's server-side apply fights the controller's writes."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def field_export(name: str, group: str, kind: str, resource: str, path: str, configmap: str, key: str) -> Json:
    """An ACK FieldExport copying `path` of a custom resource into key `key` of ConfigMap `configmap`."""
    return {"apiVersion": "services.k8s.aws/v1alpha1", "kind": "FieldExport", "metadata": {"name": name},
            "spec": {"from": {"path": path, "resource": {"group": group, "kind": kind, "name": resource}},
                     "to": {"kind": "configmap", "name": configmap, "key": key}}}


# --------------------------------------------------------------------------------------------------
# Env


def env_value(pod_specs: list[Json], name: str) -> str | None:
    """The literal value of env `name` on the first dependent's target container that sets one."""
    for spec in pod_specs:
        found = plain_env((spec.get("containers") or [{}])[0]).get(name)
        if found is not None:
            return found
    return None


def value(text: str) -> Json:
    return {"value": text}


def configmap_ref(name: str, key: str) -> Json:
    return {"valueFrom": {"configMapKeyRef": {"name": name, "key": key}}}
