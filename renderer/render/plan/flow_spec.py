"""Flow input: what a pull request changes.

A flow comes from the command line (`--flow ID --service NAME=IMAGE --env NAME:KEY=VALUE`) or
from a `kind: Flow` file (devlane's, or Kardinal operator's `core.kardinal.dev/v1` Flow), plus
an optional Kardinal template whose `kardinal.dev.service/*` annotations override the base ones
after `${var}` / `${var:-default}` substitution.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...core.files import read_user_file
from ...core.images import image_problem, shown
from ...core.schemas import schema_problems
from ...core.yamlio import load_one, parse_documents
from ...errors import DevlaneError, Problem, Where, fail
from ..inputs import field_types
from ..inputs.document import Document

FLOW_ID = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # fullmatch: `$` would accept a trailing newline
MAX_FLOW_ID = 40
RESERVED_FLOW_IDS = {"shared", "baseline"}
_TEMPLATE_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")
_K = "kardinal.dev.service/"


@dataclass(frozen=True)
class ServiceOverride:
    """A flow target: a new image and/or env overrides for one service."""

    name: str
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
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
    if len(flow_id) > MAX_FLOW_ID or not FLOW_ID.fullmatch(flow_id):
        raise fail(
            f"invalid flow id {flow_id!r}: it must be a DNS-1123 label (lower-case letters, digits and '-', "
            f"starting and ending with a letter or digit) of at most {MAX_FLOW_ID} characters",
            hint="for example pr-42",
            code="flow-id",
        )
    if flow_id in RESERVED_FLOW_IDS:
        raise fail(f"flow id {flow_id!r} is reserved", hint="pick another id, e.g. pr-42", code="flow-id")
    return flow_id


@dataclass(frozen=True)
class FlowRequest:
    """The flow as the user asked for it (command line, flow file, Argo CD parameters)."""

    flow_id: str | None = None
    images: dict[str, str] = field(default_factory=dict)
    env: list[tuple[str, str, str]] = field(default_factory=list)
    flow_file: Path | None = None
    template: Path | None = None
    template_args: dict = field(default_factory=dict)
    template_args_file: Path | None = None


def resolve(request: FlowRequest) -> FlowSpec:
    """The flow to render; a bad flow id is refused before anything else is read."""
    if request.flow_file is None:
        flow = build_flow(request.flow_id or "", request.images, request.env)
        if not flow.services:
            raise DevlaneError(Problem("the flow changes no service",
                                       hint="pass --service NAME=IMAGE (or --flow-file FILE)"))
    else:
        if request.flow_id is not None:
            validate_flow_id(request.flow_id)
        flow = load_flow_file(request.flow_file)
        if request.flow_id and request.flow_id != flow.id:
            raise DevlaneError(f"--flow {request.flow_id} differs from the flow file's id {flow.id}")
        # flags add to the file: a new image or env entry for a service overrides the file's
        services = {s.name: s for s in flow.services}
        for extra in build_flow(flow.id, request.images, request.env).services:
            mine = services.get(extra.name)
            services[extra.name] = extra if mine is None else ServiceOverride(
                extra.name, extra.image or mine.image, {**mine.env, **extra.env})
        flow = replace(flow, services=[services[n] for n in sorted(services)])
    args = {}
    if request.template_args_file is not None:
        args.update(load_template_args(request.template_args_file))
    args.update(flow.template_args)
    args.update(request.template_args)
    template = str(request.template) if request.template is not None else flow.template_file
    return replace(flow, template_file=template, template_args=args)


def build_flow(
    flow_id: str,
    images: dict[str, str],
    env: list[tuple[str, str, str]],
    template_file: str | None = None,
    template_args: dict[str, Any] | None = None,
    where: Where | None = None,
) -> FlowSpec:
    validate_flow_id(flow_id)
    for name, image in images.items():
        problem = image_problem(image)
        if problem:
            raise fail(f"the image of service {name!r}, {shown(image)}, {problem}", where or Where(),
                       "give a reference a registry accepts, e.g. ghcr.io/acme/api:pr-7", code="bad-image")
    overrides: dict[str, ServiceOverride] = {n: ServiceOverride(n, image=i) for n, i in images.items()}
    for svc, key, value in env:
        overrides.setdefault(svc, ServiceOverride(svc)).env[key] = value
    return FlowSpec(flow_id, [overrides[n] for n in sorted(overrides)], template_file, dict(template_args or {}))


def load_flow_file(path: Path) -> FlowSpec:
    """Read a `kind: Flow` file (devlane's or Kardinal operator's), validated by its schema."""
    file = str(path)
    data = read_user_file(path)
    raw = load_one(data, file)
    problems = schema_problems(raw, "flow.schema.json", file, data)
    if problems:
        raise DevlaneError(problems)
    spec = raw["spec"]
    name = raw["metadata"]["name"]
    if raw["apiVersion"].startswith("core.kardinal.dev/"):
        return build_flow(name, {spec["service"]: spec["image"]}, [], where=Where(file=file))
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
    return build_flow(name, images, env, tfile, template.get("args") or {}, Where(file=file))


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
    raw = load_one(read_user_file(path), str(path))
    if not isinstance(raw, dict):
        raise fail("template arguments must be a mapping", Where(file=str(path)))
    return raw


def apply_template(documents: list[Document], template_file: str | None, args: dict[str, Any]) -> list[Document]:
    """Override base Services' `kardinal.dev.service/*` annotations with the template's.

    Template Services with no base Service of the same name are ignored (as in Kardinal), so a
    template cannot add services; it can redefine plugin pseudo-Services and toggle `shared`.
    """
    if template_file is None:
        return documents
    file = template_file
    data = read_user_file(template_file)
    overrides: dict[str, dict[str, str]] = {}
    for index, doc in enumerate(parse_documents(data, file)):
        if doc is None:
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "Service":
            raise fail(
                "a template may only contain Service objects", Where(file=file, document=index), code="template"
            )
        wrong = field_types.check(doc, Where(file=file, document=index))
        if wrong is not None:
            raise DevlaneError(wrong)
        meta = doc.get("metadata") or {}
        ann = {k: substitute(str(v), args) for k, v in (meta.get("annotations") or {}).items() if k.startswith(_K)}
        overrides[str(meta.get("name"))] = ann
    out = []
    for doc in documents:
        ann = overrides.get(doc.name) if doc.kind == "Service" else None
        if ann:
            obj = copy.deepcopy(doc.obj)
            obj["metadata"]["annotations"] = {**doc.annotations, **ann}
            doc = Document(obj, doc.file, doc.index)
        out.append(doc)
    return out
