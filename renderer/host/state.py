"""Plugin state kept in git: provision records under `.devlane/state/<flowId>/` and the state ConfigMaps
of a rendered flow, read back by `devlane delete`.

`devlane provision` runs `sideEffects: External` plugins for real and records what they returned,
keyed by a hash of everything the plugin was given; `render` replays a record only when that hash
still matches, so a changed input never silently reuses a stale branch or database.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.anchored import O_DIR, OpenDir, first_link, open_dir, symlink_error, write_at
from ..core.names import flow_uuid
from ..core.source import Source
from ..core.yamlio import load_one
from ..errors import Where, fail
from ..protocol.krm import STATE_KEY
from .invoke import Outcome, malformed, pod_spec_problem
from .reply_bounds import ReplyLimit, load_json

STATE_DIR = ".devlane/state"
RECORD_KIND = "ProvisionRecord"
STATE_HINT = (f"remove the symlink: {STATE_DIR}/ holds devlane's provision records, in real directories of the "
              "repository (devlane makes them), and devlane never writes or removes through a link")


def record_path(flow_id: str, instance: str) -> str:
    return f"{STATE_DIR}/{flow_id}/{instance}.json"


def input_hash(plugin: str, digest: str, request: dict) -> str:
    """What the plugin was given: its code, and the request document minus volatile host fields."""
    spec = dict(request["functionConfig"]["spec"])
    spec.pop("host", None)
    doc = {"plugin": plugin, "digest": digest, "spec": spec, "items": request["items"]}
    return "sha256:" + hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class Record:
    plugin: str
    instance: str
    flow_id: str
    input_hash: str
    outcome: Outcome

    def to_json(self) -> str:
        doc = {
            "apiVersion": "devlane.dev/v1alpha1",
            "kind": RECORD_KIND,
            "plugin": self.plugin,
            "instance": self.instance,
            "flowId": self.flow_id,
            "inputHash": self.input_hash,
            "result": outcome_result(self.outcome),
        }
        return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_record(source: Source, flow_id: str, instance: str) -> Record | None:
    path = record_path(flow_id, instance)
    if not source.exists(path):
        return None
    where = Where(file=path, plugin=instance)
    try:
        doc = load_json(source.read(path).decode("utf-8"))  # a recorded reply: bounded like a live one
        outcome = recorded_outcome(doc["result"])
        return Record(doc["plugin"], doc["instance"], doc["flowId"], doc["inputHash"], outcome)
    except ReplyLimit as exc:
        raise fail(f"provision record {exc.message}", where, f"re-provision: devlane provision --flow {flow_id}",
                   code="state-record") from None
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise fail(f"provision record is unreadable ({type(exc).__name__}: {exc})", where,
                   f"re-provision: devlane provision --flow {flow_id}", code="state-record") from None


def outcome_result(outcome: Outcome) -> dict:
    """A CreateFlow outcome as a record keeps it (its messages are not part of it)."""
    return {
        "podSpecs": outcome.pod_specs,
        "configMap": outcome.config_map,
        "resources": outcome.resources,
        **({"configs": outcome.configs} if outcome.configs else {}),
    }


def recorded_outcome(result: dict) -> Outcome:
    """The outcome an `outcome_result` holds, checked as a live reply's parts are: ValueError (or KeyError,
    TypeError) when it is not one."""
    outcome = Outcome(list(result["podSpecs"]), result["configMap"], list(result.get("resources") or []),
                      configs=[dict(c) for c in result.get("configs") or []])
    problems = [f"pod spec {p}" for p in map(pod_spec_problem, outcome.pod_specs) if p]
    problems += [f"resources[{i}] {p}" for i, p in enumerate(map(malformed, outcome.resources)) if p]
    problems += [f"configs[{i}] is not {{dependent, name, data}} of strings" for i, c in enumerate(outcome.configs)
                 if not _config_record(c)]
    if problems:
        raise ValueError(f"recorded {problems[0]}")
    return outcome


def _config_record(change: dict) -> bool:
    """A recorded ConfigMap change: its dependent and name, and its data as strings."""
    data = change.get("data")
    return (isinstance(change.get("dependent"), str) and isinstance(change.get("name"), str)
            and isinstance(data, dict) and all(isinstance(v, str) for v in data.values()))


def write_records(repo_root: Path, flow_id: str, records: list[Record]) -> list[Path]:
    """Write each record atomically (temp file + rename) under `.devlane/state/<flowId>/`, reached without following
    a symlink (`state_dir`)."""
    if not records:
        return []
    folder = None
    try:
        folder = state_dir(repo_root, flow_id, create=True)
        assert folder is not None
        for rec in records:
            name = f"{rec.instance}.json"
            tmp = f".{name}.{secrets.token_hex(4)}.tmp"
            try:
                write_at(folder.fd, tmp, rec.to_json().encode("utf-8"))
                os.replace(tmp, name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)  # a link there goes, unfollowed
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=folder.fd)
                raise
    except OSError as exc:
        raise fail(f"cannot write the provision records of flow {flow_id}: {exc.strerror}",
                   Where(file=f"{STATE_DIR}/{flow_id}"), "make the repository writable for this user",
                   code="state-record") from None
    finally:
        if folder is not None:
            folder.close()
    return [repo_root / record_path(flow_id, rec.instance) for rec in records]


def state_dir(repo_root: Path, flow_id: str | None = None, create: bool = False) -> OpenDir | None:
    """`.devlane/state/` (or `<flowId>/` in it), opened from the repository root without following a symlink (one on
    the way is an error naming it); None when it does not exist and not `create`."""
    path = Path(repo_root) / STATE_DIR
    return open_dir(path / flow_id if flow_id else path, repo_root, create, STATE_HINT)


def recorded(repo_root: Path) -> dict[str, list[str]]:
    """Every directory of `.devlane/state/` and the plugin instances recorded in it (`<instance>.json`), sorted. A
    symlink in it, or on the way to it, is refused before anything is removed."""
    folder = state_dir(repo_root)
    if folder is None:
        return {}
    try:
        found = first_link(folder.fd)
        if found is not None:
            raise symlink_error(Path(repo_root) / STATE_DIR / found[0], found[1], STATE_HINT)
        out = {}
        for entry in sorted(os.scandir(folder.fd), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                sub = os.open(entry.name, O_DIR, dir_fd=folder.fd)
                try:
                    out[entry.name] = sorted(n[:-5] for n in os.listdir(sub) if n.endswith(".json")
                                             and not n.startswith("."))
                finally:
                    os.close(sub)
        return out
    finally:
        folder.close()


@dataclass(frozen=True)
class FlowState:
    """One plugin instance's stored state, read from a rendered flow's state ConfigMap."""

    instance: str
    plugin: str
    flow_uuid: str
    config_map: Any
    file: str


def read_flow_states(files: dict[str, bytes], flow_id: str) -> list[FlowState]:
    """State ConfigMaps of a rendered flow, in plugin creation order (from `flow.metadata`)."""
    states: dict[str, FlowState] = {}
    for name, data in sorted(files.items()):
        if not name.endswith(".yaml") or name == "kustomization.yaml":
            continue
        obj = load_one(data, name)
        meta = (obj or {}).get("metadata") or {} if isinstance(obj, dict) else {}
        ann = meta.get("annotations") or {}
        if obj.get("kind") != "ConfigMap" or "devlane.dev/plugin" not in ann:
            continue
        uuid = ann.get("devlane.dev/flow-uuid", "")
        instance = uuid[: -len(flow_id) - 1] if uuid.endswith(f"-{flow_id}") else meta.get("name", "")
        raw = (obj.get("data") or {}).get(STATE_KEY, "{}")
        try:
            config_map = json.loads(raw)
        except json.JSONDecodeError:
            raise fail(f"data.{STATE_KEY} is not JSON", Where(file=name, plugin=instance),
                       "restore the file from git history", code="state-configmap") from None
        states[instance] = FlowState(instance, ann["devlane.dev/plugin"], uuid, config_map, name)
    order: list[str] = []
    if "flow.metadata" in files:
        try:
            meta_doc = json.loads(files["flow.metadata"])
            order = [str(p["instance"]) for p in meta_doc.get("plugins") or []]
        except (ValueError, AttributeError, TypeError, KeyError) as exc:
            raise fail(f"flow.metadata of flow {flow_id} is unreadable ({type(exc).__name__}: {exc})",
                       Where(file="flow.metadata"), f"re-render flow {flow_id}, or restore the file from git history",
                       code="state-configmap") from None
    ranked = {name: i for i, name in enumerate(order)}
    return sorted(states.values(), key=lambda s: (ranked.get(s.instance, len(ranked)), s.instance))


def recorded_states(source: Source, flow_id: str, instances: list[str]) -> list[FlowState]:
    """The plugin states of a flow that `provision` recorded but no rendered flow holds (its files never written,
    or removed): each record's config_map, for `delete_flow`."""
    out = []
    for instance in instances:
        record = read_record(source, flow_id, instance)
        if record is not None:
            out.append(FlowState(instance, record.plugin, flow_uuid(instance, flow_id), record.outcome.config_map,
                                 record_path(flow_id, instance)))
    return out
