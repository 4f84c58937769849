"""aws-sqs: an Amazon SQS queue per flow, as an ACK `Queue` (no AWS call during render).

Define it (`type: external`) with the `servicename` of the Service that stands for the queue (an external
ExternalName Service) and list it in the plugins of the Services that use it.
In every flow, the dependents' dev copies get their own queue, so a dev producer never feeds the shared consumers and
a dev consumer never steals their messages. The queue's name is derived from the plugin's `flow_uuid` (with a stable
hash past SQS's 80 characters, and the `.fifo` suffix FIFO queues need), so its URL is computed offline
(`https://sqs.<region>.amazonaws.com/<account>/<queueName>`) and set as a plain env value on the dependents: no
FieldExport, no wait. The ACK sqs-controller creates the queue when Argo CD or Flux applies the flow and deletes it
when the flow is pruned (the deletion policy is written on the resource). Kardinal announced an SQS plugin but never
shipped one. Shared ACK mechanics are in `plugins/_ack.py`.
"""

from __future__ import annotations

import json
from typing import Any

from plugins import _ack
from plugins._common import Json, Refused, flag, wire

API = "sqs.services.k8s.aws/v1alpha1"
MAX_QUEUE_NAME = 80  # SQS: 1-80 of [A-Za-z0-9_-], ".fifo" included for a FIFO queue
FIFO_SUFFIX = ".fifo"
# Queue attributes copied from args (all strings in ACK's Queue), with SQS's accepted range
ATTRIBUTES = {"delay_seconds": ("delaySeconds", 0, 900),
              "message_retention_period": ("messageRetentionPeriod", 60, 1_209_600),
              "visibility_timeout": ("visibilityTimeout", 0, 43_200),
              "maximum_message_size": ("maximumMessageSize", 1024, 1_048_576),
              "receive_message_wait_time_seconds": ("receiveMessageWaitTimeSeconds", 0, 20)}
ENV_ARGS = ("url_env", "name_env")
ARGS = ("region", "account_id", "queue_prefix", "fifo", "content_based_deduplication", *ATTRIBUTES, "redrive_policy",
        "sqs_managed_sse_enabled", *ENV_ARGS, "deletion_policy")


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first): ranges, FIFO-only settings, the redrive policy."""
    args = {k: v for k, v in args.items() if v not in (None, "")}
    out = _ack.check_common(args, ENV_ARGS)

    def bad(name: str, message: str) -> None:
        out.append({"field": name, "message": message})

    for name in ("region", "account_id"):
        if not args.get(name):
            bad(name, "is required: the queue URL https://sqs.<region>.amazonaws.com/<account_id>/<queueName> is "
                      "computed from it")
    for arg, (_, low, high) in ATTRIBUTES.items():
        text = str(args.get(arg, ""))
        if text and (not text.isdigit() or not low <= int(text) <= high):
            bad(arg, f"{text!r} is not a whole number from {low} to {high}")
    if args.get("content_based_deduplication") and not flag(args.get("fifo"), False):
        bad("content_based_deduplication", "applies to FIFO queues only; set fifo: \"true\" too")
    policy = args.get("redrive_policy")
    if policy:
        try:
            parsed = json.loads(str(policy))
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict) or "deadLetterTargetArn" not in parsed:
            bad("redrive_policy", "must be a JSON object with deadLetterTargetArn (and maxReceiveCount)")
    return out


def queue_name(flow_uuid: str, prefix: str, fifo: bool) -> str:
    """`<prefix><flow_uuid>` in SQS's alphabet, shortened with a stable hash to fit 80 with `.fifo`."""
    return _ack.aws_name(f"{prefix}{flow_uuid}", MAX_QUEUE_NAME, "A-Za-z0-9_-", lower=False,
                         suffix=FIFO_SUFFIX if fifo else "")


def queue_url(region: str, account_id: str, name: str) -> str:
    return f"https://sqs.{region}.amazonaws.com/{account_id}/{name}"


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, region: str = "",
                account_id: str = "", queue_prefix: str = "", fifo: str = "", content_based_deduplication: str = "",
                delay_seconds: str = "", message_retention_period: str = "", visibility_timeout: str = "",
                maximum_message_size: str = "", receive_message_wait_time_seconds: str = "",
                redrive_policy: str = "", sqs_managed_sse_enabled: str = "", url_env: str = "", name_env: str = "",
                deletion_policy: str = "") -> Json:
    """The dependents' pod specs with the flow's queue URL (same count and order), the Queue, and the state."""
    args = {k: v for k, v in locals().items() if k in ARGS and v}
    is_fifo = flag(args.get("fifo"), False)
    name = queue_name(flow_uuid, queue_prefix, is_fifo)
    url = queue_url(region, account_id, name)
    spec: Json = {"queueName": name}
    if is_fifo:
        spec["fifoQueue"] = "true"
        if content_based_deduplication:
            spec["contentBasedDeduplication"] = "true" if flag(args.get("content_based_deduplication"), False) \
                else "false"
    for arg, (field, _, _) in ATTRIBUTES.items():
        if args.get(arg):
            spec[field] = str(int(args[arg]))
    if redrive_policy:
        spec["redrivePolicy"] = json.dumps(json.loads(redrive_policy), sort_keys=True, separators=(",", ":"))
    if sqs_managed_sse_enabled:
        spec["sqsManagedSSEEnabled"] = "true" if flag(args.get("sqs_managed_sse_enabled"), True) else "false"
    spec["tags"] = {_ack.FLOW_TAG: flow_uuid, "app.kubernetes.io/managed-by": "devlane"}
    queue = {"apiVersion": API, "kind": "Queue",
             "metadata": _ack.ack_metadata(flow_uuid, region, deletion_policy or "delete"), "spec": spec}
    env = {url_env or "QUEUE_URL": _ack.value(url), **({name_env: _ack.value(name)} if name_env else {})}
    try:
        specs = wire(pod_specs, env)
    except Refused as refused:
        return refused.answer(pod_specs)
    return {"pod_specs": specs, "config_map": {"queueName": name, "queueURL": url, "region": region},
            "resources": [queue]}


def delete_flow(config_map: Json, flow_uuid: str) -> None:
    """Nothing to undo here: pruning the Queue makes the ACK controller delete the queue (deletion policy delete)."""
    return None
