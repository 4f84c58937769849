"""Flow input: what a pull request changes.

A flow comes from the command line (`--flow ID --service NAME=IMAGE --env NAME:KEY=VALUE`) or
from a `kind: Flow` file (devlane's, or Kardinal operator's `core.kardinal.dev/v1` Flow), plus
an optional Kardinal template whose `kardinal.dev.service/*` annotations override the base ones
after `${var}` / `${var:-default}` substitution.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DevlaneError, Where, fail
from .load import Document
from .yamlio import load_one, parse_documents

FLOW_ID = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_FLOW_ID = 40
RESERVED_FLOW_IDS = {"shared", "baseline"}
_TEMPLATE_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")
_K = "kardinal.dev.service/"


@dataclass
class ServiceOverride:
    """A flow target: a new image and/or env overrides for one service."""

    name: str
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class FlowSpec:
    id: str
    services: list[ServiceOverride]
    template_file: str | None = None
    template_args: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        out: dict[str, Any] = {
            "id": self.id,
            "services": [
                {"name": s.name, **({"image": s.image} if s.image else {}), **({"env": s.env} if s.env else {})}
                for s in self.services
            ],
        }
        if self.template_file:
            out["template"] = {"file": self.template_file, "args": self.template_args}
        return out


def validate_flow_id(flow_id: str) -> str:
    """Refuse anything but a DNS-1123 label of at most 40 characters (it names files and objects)."""
    if not isinstance(flow_id, str) or not flow_id:
        raise fail("a flow id is required", hint="pass --flow ID (e.g. --flow pr-42)", code="flow-id")
    if len(flow_id) > MAX_FLOW_ID or not FLOW_ID.match(flow_id):
        raise fail(
            f"invalid flow id {flow_id!r}: it must be a DNS-1123 label (lower-case letters, digits and '-', "
            f"starting and ending with a letter or digit) of at most {MAX_FLOW_ID} characters",
            hint="for example pr-42",
            code="flow-id",
        )
    if flow_id in RESERVED_FLOW_IDS:
        raise fail(f"flow id {flow_id!r} is reserved", hint="pick another id, e.g. pr-42", code="flow-id")
    return flow_id


def parse_service_args(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        name, sep, image = v.partition("=")
        if not sep or not name.strip() or not image.strip():
            raise DevlaneError(f"--service {v!r}: expected NAME=IMAGE", exit_code=2)
        out[name.strip()] = image.strip()
    return out


def parse_env_args(values: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for v in values:
        svc, sep, rest = v.partition(":")
        key, sep2, value = rest.partition("=")
        if not sep or not sep2 or not svc.strip() or not key.strip():
            raise DevlaneError(f"--env {v!r}: expected NAME:KEY=VALUE", exit_code=2)
        out.append((svc.strip(), key.strip(), value))
    return out


def parse_template_args(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise DevlaneError(f"--template-arg {v!r}: expected KEY=VALUE", exit_code=2)
        out[key.strip()] = value
    return out


def build_flow(
    flow_id: str,
    images: dict[str, str],
    env: list[tuple[str, str, str]],
    template_file: str | None = None,
    template_args: dict[str, Any] | None = None,
) -> FlowSpec:
    validate_flow_id(flow_id)
    overrides: dict[str, ServiceOverride] = {n: ServiceOverride(n, image=i) for n, i in images.items()}
    for svc, key, value in env:
        overrides.setdefault(svc, ServiceOverride(svc)).env[key] = value
    return FlowSpec(flow_id, [overrides[n] for n in sorted(overrides)], template_file, dict(template_args or {}))


def load_flow_file(path: Path) -> FlowSpec:
    """Read a `kind: Flow` file (devlane's or Kardinal operator's), validated by its schema."""
    from .config import schema_problems

    file = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise fail(f"cannot read flow file: {exc.strerror}", Where(file=file)) from None
    raw = load_one(data, file)
    problems = schema_problems(raw, "flow.schema.json", file)
    if problems:
        raise DevlaneError(problems)
    spec = raw["spec"]
    name = raw["metadata"]["name"]
    if raw["apiVersion"].startswith("core.kardinal.dev/"):
        return build_flow(name, {spec["service"]: spec["image"]}, [])
    images, env = {}, []
    for s in spec["services"]:
        if s.get("image"):
            images[s["name"]] = s["image"]
        raw_env = s.get("env") or {}
        pairs = raw_env.items() if isinstance(raw_env, dict) else ((e["name"], e.get("value", "")) for e in raw_env)
        env += [(s["name"], str(k), "" if v is None else str(v)) for k, v in pairs]
        if not s.get("image") and not raw_env:
            raise fail(f"service {s['name']!r} has neither image nor env", Where(file=file))
    template = spec.get("template") or {}
    tfile = template.get("file")
    if tfile:
        tfile = str(path.parent / tfile)
    return build_flow(name, images, env, tfile, template.get("args") or {})


# ---------------------------------------------------------------------------------------------
# Templates


def substitute(text: str, args: dict[str, Any]) -> str:
    """Kardinal's `${var}` / `${var:-default}`; a missing variable without default becomes empty."""

    def repl(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in args:
            value = args[name]
            if isinstance(value, bool):
                return "true" if value else "false"
            return str(value)
        return default if default is not None else ""

    return _TEMPLATE_VAR.sub(repl, text)


def load_template_args(path: Path) -> dict[str, Any]:
    raw = load_one(path.read_bytes(), str(path))
    if not isinstance(raw, dict):
        raise fail("template arguments must be a mapping", Where(file=str(path)))
    return raw


def apply_template(documents: list[Document], template_path: Path, args: dict[str, Any]) -> list[Document]:
    """Override base Services' `kardinal.dev.service/*` annotations with the template's.

    Template Services with no base Service of the same name are ignored (as in Kardinal), so a
    template cannot add services; it can redefine plugin pseudo-Services and toggle `shared`.
    """
    file = str(template_path)
    try:
        data = template_path.read_bytes()
    except OSError as exc:
        raise fail(f"cannot read template: {exc.strerror}", Where(file=file)) from None
    overrides: dict[str, dict[str, str]] = {}
    for index, doc in enumerate(parse_documents(data, file)):
        if doc is None:
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "Service":
            raise fail(
                "a template may only contain Service objects", Where(file=file, document=index), code="template"
            )
        meta = doc.get("metadata") or {}
        ann = {k: substitute(str(v), args) for k, v in (meta.get("annotations") or {}).items() if k.startswith(_K)}
        overrides[str(meta.get("name"))] = ann
    out = []
    for doc in documents:
        ann = overrides.get(doc.name) if doc.kind == "Service" else None
        if ann:
            obj = copy.deepcopy(doc.obj)
            obj.setdefault("metadata", {}).setdefault("annotations", {}).update(ann)
            doc = Document(obj, doc.file, doc.index)
        out.append(doc)
    return out
