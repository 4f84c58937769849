"""nats-stream: a lane's own JetStream stream, consumers and subjects on the shared NATS servers, as NACK `Stream` and
`Consumer` objects. No NATS call during render.

Define it (`type: external`) with a `servicename` that stands for the stream, and list it in the plugins of the
publishers and subscribers that use it. In a flow, the dependents with a dev version get the lane's subjects (each
subject the app uses, wildcards included, under a prefix of the lane's: `orders.created` ->
`<flowUuid>.orders.created`, so no baseline stream or subscription matches them; the lane's stream takes
`<flowUuid>.>`), the lane's stream name and durable consumer names, wherever the names appear in their env values,
`command`, `args` and the ConfigMaps they read (devlane gives the lane its own copy); the server address stays the
shared one. A subscriber not in the flow keeps the baseline's subjects. A name none of the dependents holds is
said, loudly. The NACK controller creates the stream and consumers when the flow is applied and deletes them when it
is pruned.
"""

from __future__ import annotations

import re
from typing import Any

from plugins._common import ConfigMaps, Json, Refused, clean_name, flow_name, name_list, rename_names, unnamed

API = "jetstream.nats.io/v1beta2"
STREAM_NAME = re.compile(r"[A-Za-z0-9_-]{1,200}\Z")  # no spaces, dots, wildcards or path separators
ARGS = ("stream", "subjects", "consumers", "storage", "max_age", "replicas", "account")


def _subject_ok(subject: str) -> bool:
    """A NATS subject or pattern: dot-separated tokens without spaces; `*` a whole token, `>` the last one."""
    tokens = subject.split(".")
    return all(t and (t in ("*", ">") or not set(t) & {"*", ">"}) for t in tokens) and ">" not in tokens[:-1]


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first)."""
    args = {k: v for k, v in args.items() if v not in (None, "")}
    out: list[Json] = []

    def bad(name: str, message: str) -> None:
        out.append({"field": name, "message": message})

    if not STREAM_NAME.match(str(args.get("stream", ""))):
        bad("stream", "is required: the stream's name (letters, digits, '_' and '-'; no dots or wildcards)")
    subjects = name_list(args.get("subjects"))
    if not subjects:
        bad("subjects", "is required: the subjects (or patterns) the dependents publish and subscribe to")
    for subject in subjects:
        if not _subject_ok(subject):
            bad("subjects", f"{subject!r} is not a NATS subject (dot-separated tokens; * a whole token, > the last)")
    for name in name_list(args.get("consumers")):
        if not STREAM_NAME.match(name):
            bad("consumers", f"{name!r} is not a durable consumer name (letters, digits, '_' and '-')")
    return out


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str,
                config_maps: ConfigMaps | None = None, stream: str = "",
                subjects: str = "", consumers: str = "", storage: str = "", max_age: str = "", replicas: str = "",
                account: str = "") -> Json:
    """The dependents' pod specs with the lane's subjects, stream and consumers (same count and order), the NACK
    Stream and Consumers, and the state."""
    subject_names, consumer_names = name_list(subjects), name_list(consumers)
    lane_stream = re.sub(r"[^A-Za-z0-9_-]", "_", f"{stream}_{flow_uuid}")[:200]
    renames = {s: f"{flow_uuid}.{s}" for s in subject_names}
    renames[stream] = lane_stream
    renames.update({c: f"{c}_{flow_uuid}"[:200] for c in consumer_names})
    try:
        if not stream or not subject_names:
            raise Refused("nats-stream needs args.stream and args.subjects", path="args")
        specs, configs, seen = rename_names(pod_specs, renames, config_maps)
    except Refused as refused:
        return refused.answer(pod_specs)
    common: Json = {"account": account} if account else {}
    # everything under the lane's prefix (one subject, so the stream's subjects never overlap each other)
    spec: Json = {"name": lane_stream, "subjects": [f"{flow_uuid}.>"], **common}
    if storage:
        spec["storage"] = storage
    if max_age:
        spec["maxAge"] = max_age
    if replicas:
        spec["replicas"] = int(replicas)
    resources = [{"apiVersion": API, "kind": "Stream",
                  "metadata": {"name": flow_name(clean_name(stream)[:40] or "stream", flow_uuid)}, "spec": spec}]
    for c in consumer_names:
        resources.append({"apiVersion": API, "kind": "Consumer",
                          "metadata": {"name": flow_name(clean_name(c)[:40] or "consumer", flow_uuid)},
                          "spec": {"streamName": lane_stream, "durableName": renames[c], "deliverPolicy": "all",
                                   "ackPolicy": "explicit", **common}})
    what = {n: "subject" if n in subject_names else "stream" if n == stream else "consumer" for n in renames}
    arg_of = {n: "subjects" if n in subject_names else "stream" if n == stream else "consumers" for n in renames}
    state = {"stream": lane_stream, "subjects": {s: renames[s] for s in subject_names},
             "consumers": {c: renames[c] for c in consumer_names}}
    results = unnamed({n: r for n, r in renames.items() if n != stream}, seen, what, arg_of)
    return {"pod_specs": specs, "config_maps": configs, "config_map": state, "resources": resources,
            "results": results}


def delete_flow(config_map: Json, flow_uuid: str) -> None:
    """Nothing to undo here: pruning the Stream and Consumers makes the NACK controller delete them (and the
    stream's messages)."""
    return None
