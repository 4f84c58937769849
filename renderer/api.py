"""Library API: the pipeline load → model → plan → clone → plugins → routing → emit → write.

The CLI is a thin layer over these functions; tests call them directly.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .clone import make_dev_copies
from .config import CONFIG_FILE, RepoConfig, parse_config
from .emit import RenderedFlow, build_metadata, build_readme, collect_objects, render_files
from .errors import DevlaneError, Diagnostics, Problem, Where
from .flow import FlowSpec, apply_template, build_flow, load_flow_file, load_template_args, validate_flow_id
from .invariants import check_names, check_references, check_selectors
from .load import LoadResult, Source, load_documents, open_source
from .model import Model, build_model
from .pipeline import Steps
from .plan import Plan, make_plan
from .routing import check_mode, route_entries
from .run_plugins import Budget, PluginStageResult, Resolver, Settings, choose_all, plugin_digest, run_plugins, sanitize
from .sandbox import secret_values
from .state import write_records
from .write import write_flows


@dataclass
class Options:
    """Where to read from and how to run; flow-independent."""

    repo: Path = Path(".")
    ref: str | None = None
    routing: str | None = None
    plugin_sources: dict[str, str] = field(default_factory=dict)
    plugin_timeout: float | None = None
    timeout: float | None = None  # whole-render budget (--timeout)
    jobs: int | None = None
    debug: bool = False


@dataclass
class FlowRequest:
    """The flow as the user asked for it (command line or flow file)."""

    flow_id: str | None = None
    images: dict[str, str] = field(default_factory=dict)
    env: list[tuple[str, str, str]] = field(default_factory=list)
    flow_file: Path | None = None
    template: Path | None = None
    template_args: dict = field(default_factory=dict)
    template_args_file: Path | None = None


@dataclass
class Repo:
    """A loaded repository: config, documents and the model built from them."""

    options: Options
    source: Source
    config: RepoConfig
    config_bytes: bytes | None
    loaded: LoadResult
    model: Model
    diagnostics: Diagnostics
    started: float | None = None  # when the render began (monotonic), for the --timeout budget


@dataclass
class RenderResult:
    flows: list[RenderedFlow]
    plan: Plan
    warnings: list[Problem]
    stage: PluginStageResult | None = None

    @property
    def main(self) -> RenderedFlow:
        return self.flows[0]

    def stream(self) -> str:
        return "".join(f.stream() for f in self.flows)


def resolve_flow(request: FlowRequest) -> FlowSpec:
    """Validate the flow first: a bad flow id is refused before anything else is read."""
    if request.flow_file is not None:
        if request.flow_id is not None:
            validate_flow_id(request.flow_id)
        flow = load_flow_file(request.flow_file)
        if request.flow_id and request.flow_id != flow.id:
            raise DevlaneError(f"--flow {request.flow_id} differs from the flow file's id {flow.id}")
        # flags add to the file: a new image or env entry for a service overrides the file's
        services = {s.name: s for s in flow.services}
        for extra in build_flow(flow.id, request.images, request.env).services:
            mine = services.setdefault(extra.name, extra)
            if mine is not extra:
                mine.image = extra.image or mine.image
                mine.env.update(extra.env)
        flow.services = [services[n] for n in sorted(services)]
    else:
        flow = build_flow(request.flow_id or "", request.images, request.env)
        if not flow.services:
            raise DevlaneError(
                Problem("the flow changes no service", hint="pass --service NAME=IMAGE (or --flow-file FILE)")
            )
    if request.template is not None:
        flow.template_file = str(request.template)
    args = {}
    if request.template_args_file is not None:
        args.update(load_template_args(request.template_args_file))
    args.update(flow.template_args)
    args.update(request.template_args)
    flow.template_args = args
    return flow


def open_repo(options: Options, flow: FlowSpec | None = None, collect: bool = False) -> Repo:
    """Load config and manifests, apply the flow's template, and build the model.

    Broken config or YAML stops a render at once; with `collect` (lint) they are recorded and the
    rest of the repository is still checked, with default config where the config is broken.
    """
    started = time.monotonic()  # the --timeout budget covers the whole render, pre-render steps included
    root = Path(options.repo)
    source = open_source(root, options.ref)
    config_bytes = source.read(CONFIG_FILE) if source.exists(CONFIG_FILE) else None
    early = Diagnostics()
    try:
        config = parse_config(config_bytes)
    except DevlaneError as exc:
        if not collect:
            raise
        early.problems += exc.problems
        config = RepoConfig()
    excludes = [*config.exclude, f"{config.output.strip('/')}/**"]
    loaded = load_documents(source, config.manifests, excludes)
    if not collect:
        loaded.diagnostics.raise_if_errors()
    documents = loaded.documents
    if flow is not None and flow.template_file:
        documents = apply_template(documents, Path(flow.template_file), flow.template_args)
    late: list[Problem] = []
    if flow is not None and any(s.stage == "pre-render" for s in config.pipeline):
        with tempfile.TemporaryDirectory(prefix="devlane-plugins-") as scratch:
            resolver = Resolver(root.resolve(), options.plugin_sources, config.plugin_sources, source, Path(scratch))
            steps = Steps(config.pipeline, resolver, _settings(options, config, "render", started), "render",
                          source)  # fmt: skip
            try:
                documents = steps.pre_render(documents, flow.id)
            finally:
                steps.close()
            late = steps.messages
    model = build_model(documents, config.namespace)
    diags = Diagnostics()
    diags.problems += early.problems + loaded.diagnostics.problems + model.diagnostics.problems + late
    return Repo(options, source, config, config_bytes, loaded, model, diags, started)


def lint(options: Options) -> list[Problem]:
    """Every problem in the repository at once (errors and warnings)."""
    repo = open_repo(options, collect=True)
    return repo.diagnostics.problems


def _routing(options: Options, config: RepoConfig) -> str:
    mode = options.routing or config.routing
    check_mode(mode)
    return mode


def plan(options: Options, flow: FlowSpec) -> tuple[Plan, list[Problem]]:
    repo = open_repo(options, flow)
    mode = _routing(options, repo.config)
    result = make_plan(repo.model, flow, mode, repo.diagnostics)
    _finish(repo)
    with tempfile.TemporaryDirectory(prefix="devlane-plugins-") as scratch:
        resolver = _resolver(repo, Path(scratch))
        choices = choose_all(repo.model, result, resolver, "render", repo.source)
        steps = Steps(repo.config.pipeline, resolver, _settings(options, repo.config, "render"), "render", repo.source)
        result.steps = [{"name": s.name, "stage": s.stage, "plugin": s.plugin, "behavior": s.behavior,
                         "choice": steps.choice(s, flow.id).as_dict()} for s in repo.config.pipeline]  # fmt: skip
    result.choices = {name: c.as_dict() for name, c in choices.items()}
    return result, repo.diagnostics.warnings


def _finish(repo: Repo) -> None:
    if repo.config.warnings_as_errors and repo.diagnostics.warnings:
        raise DevlaneError([Problem(p.message, p.where, p.hint, "error", p.code) for p in repo.diagnostics.problems])
    repo.diagnostics.raise_if_errors()


def render(options: Options, flow: FlowSpec) -> RenderResult:
    """Render a flow in memory; nothing is written."""
    repo = open_repo(options, flow)
    model, diags, config = repo.model, repo.diagnostics, repo.config
    mode = _routing(options, config)
    the_plan = make_plan(model, flow, mode, diags)
    _finish(repo)
    with tempfile.TemporaryDirectory(prefix="devlane-plugins-") as scratch:
        return _render_with(repo, options, flow, mode, the_plan, _resolver(repo, Path(scratch)), "render")


def _resolver(repo: Repo, scratch: Path) -> Resolver:
    return Resolver(Path(repo.options.repo).resolve(), repo.options.plugin_sources, repo.config.plugin_sources,
                    repo.source, scratch)  # fmt: skip


def _settings(options: Options, config: RepoConfig, mode: str, started: float | None = None) -> Settings:
    budget = Budget(flag=options.plugin_timeout, config=config.plugin_timeout, total=options.timeout)
    if started is not None:
        budget.started = started
    settings = Settings(budget=budget, mode=mode, debug=options.debug)
    if options.jobs:
        settings.jobs = options.jobs
    return settings


def _render_with(repo: Repo, options: Options, flow: FlowSpec, mode: str, the_plan: Plan, resolver: Resolver,
                 run_mode: str) -> RenderResult:  # fmt: skip
    model, diags, config = repo.model, repo.diagnostics, repo.config
    choices = choose_all(model, the_plan, resolver, run_mode, repo.source)
    dev = make_dev_copies(model, the_plan, flow, config.replicas)
    check_references(model, dev, diags)  # before plugins: what a plugin returns is final
    check_selectors(model, dev, diags)
    diags.raise_if_errors()
    settings = _settings(options, config, run_mode, repo.started)
    steps = Steps(config.pipeline, resolver, settings, run_mode, repo.source)
    try:
        stage = run_plugins(model, the_plan, dev, choices, settings, extra=steps.per_flow_work(the_plan, dev))
        diags.problems += stage.messages
        entries, entry_summary = route_entries(model, dev, flow.id, config.domain, diags)
        groups = collect_objects(the_plan, dev, stage, entries, model.default_namespace)
        used = [r.choice for r in stage.results if r.choice is not None and r.flow_id == flow.id]
        groups[flow.id] = steps.post_render(groups[flow.id], flow.id, used)
    finally:
        steps.close()
    diags.problems += steps.messages
    check_names(model, [o for objs in groups.values() for o in objs], diags)
    _finish(repo)
    chosen = [*choices.values(), *(r.choice for r in stage.results if r.choice is not None)]
    digests = {c.name: plugin_digest(c.source.path) for c in sorted(chosen, key=lambda c: c.name)}
    context = {
        "source": {"revision": repo.loaded.revision, "ref": options.ref},
        "input_hash": _input_hash(repo, flow, mode, digests),
        "targets": flow.as_dict()["services"],
        "template": (
            {"file": Path(flow.template_file).name, "args": flow.template_args} if flow.template_file else None
        ),
        "plugin_digests": digests,
        "entries": entry_summary,
        "rewrites": [r.as_dict() for r in dev.rewrites],
        "choices": {name: c.as_dict() for name, c in sorted(choices.items())},
        "bypassed": stage.bypassed,
    }
    flows = []
    for group in sorted(groups, key=lambda g: (g != flow.id, g)):
        files = render_files(groups[group])
        meta = build_metadata(flow.id, the_plan, context, stage, files, group)
        flows.append(RenderedFlow(group, files, meta, build_readme(meta), groups[group]))
    return RenderResult(flows, the_plan, diags.warnings, stage)


def _input_hash(repo: Repo, flow: FlowSpec, mode: str, digests: dict[str, str]) -> str:
    template = None
    if flow.template_file:
        template = hashlib.sha256(Path(flow.template_file).read_bytes()).hexdigest()
    doc = {
        "devlane": __version__,
        "files": repo.loaded.files,
        "config": hashlib.sha256(repo.config_bytes or b"").hexdigest(),
        "flow": {**flow.as_dict(), "template": {"sha256": template, "args": flow.template_args}},
        "routing": mode,
        "plugins": digests,
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def output_dir(options: Options, out: Path | None) -> Path:
    """`--out DIR`, else the config's `output` inside the repository."""
    if out is not None:
        return Path(out)
    root = Path(options.repo)
    source = open_source(root, None)
    config = parse_config(source.read(CONFIG_FILE) if source.exists(CONFIG_FILE) else None)
    return root / config.output


def write(result: RenderResult, out_dir: Path) -> list[Path]:
    return write_flows(result.flows, out_dir)


def provision(options: Options, flow: FlowSpec) -> tuple[RenderResult, list[Path]]:
    """Run External plugins for real (CI on PR open) and record their results under `.devlane/state/`.

    The whole flow is rendered in memory, so every External plugin sees exactly the inputs a later
    `render` will give it; only the records are written.
    """
    if options.ref is not None:
        raise DevlaneError("provision records state in the work tree; run it without --ref", exit_code=2)
    repo = open_repo(options, flow)
    mode = _routing(options, repo.config)
    the_plan = make_plan(repo.model, flow, mode, repo.diagnostics)
    _finish(repo)
    with tempfile.TemporaryDirectory(prefix="devlane-plugins-") as scratch:
        result = _render_with(repo, options, flow, mode, the_plan, _resolver(repo, Path(scratch)), "provision")
    records = result.stage.records if result.stage else []
    return result, write_records(Path(options.repo), flow.id, records)


@dataclass
class DeleteResult:
    flow_id: str
    flow_dir: Path
    deleted: list[str]  # plugin instances whose delete_flow ran, in call order
    messages: list[Problem]
    removed: list[Path]


def _rendered_files(options: Options, config: RepoConfig, source: Source, flow_dir: Path) -> dict[str, bytes]:
    """The rendered flow's files: from the work tree, or from git at `--ref`."""
    if options.ref is None:
        if not flow_dir.is_dir():
            return {}
        return {p.name: p.read_bytes() for p in sorted(flow_dir.iterdir()) if p.is_file()}
    try:
        rel = flow_dir.resolve().relative_to(Path(options.repo).resolve()).as_posix()
    except ValueError:
        raise DevlaneError(f"with --ref, the output directory must be inside the repository: {flow_dir}",
                           exit_code=2) from None
    return {Path(f).name: source.read(f) for f in source.list_files([f"{rel}/*"], [])}


def delete(options: Options, flow_id: str, out: Path | None = None) -> DeleteResult:
    """Call every plugin's `delete_flow` with its stored state, newest first, then remove the flow.

    The state comes from the rendered flow's state ConfigMaps (work tree, or `--ref`). The flow
    directory and its provision records are removed only when every call succeeded.
    """
    import shutil

    from .invocation import Invocation
    from .runtimes import make_runtime
    from .state import STATE_DIR, read_flow_states

    validate_flow_id(flow_id)
    repo = open_repo(options)
    flow_dir = output_dir(options, out) / "flows" / flow_id
    files = _rendered_files(options, repo.config, repo.source, flow_dir)
    if not files:
        where = f"{flow_dir}" + (f" at {options.ref}" if options.ref else "")
        raise DevlaneError(Problem(f"no rendered flow {flow_id} in {where}",
                                   hint="pass --out DIR (the render's output root) or --ref REF"))  # fmt: skip
    states = read_flow_states(files, flow_id)
    settings = _settings(options, repo.config, "delete")
    messages: list[Problem] = []
    failures: list[Problem] = []
    deleted: list[str] = []
    with tempfile.TemporaryDirectory(prefix="devlane-plugins-") as scratch:
        resolver = _resolver(repo, Path(scratch))
        for st in reversed(states):
            pdef = repo.model.plugin_defs.get(st.instance)
            try:
                src, manifest = resolver.get(st.plugin)
                external = manifest.side_effects == "External" or bool(pdef and pdef.side_effects == "External")
                rt = make_runtime(src, manifest, options.debug, network=external)
                try:
                    where = Where(plugin=st.instance)
                    inv = Invocation("DeleteFlow", st.instance, flow_id, st.plugin,
                                     args=dict(pdef.args) if pdef and pdef.name == st.plugin else {},
                                     state=st.config_map)  # fmt: skip
                    messages += rt.delete_flow(inv, settings.budget.for_call(manifest, where))
                finally:
                    rt.close()
                deleted.append(st.instance)
            except DevlaneError as exc:
                secrets = secret_values(dict(pdef.args) if pdef else {}, None)
                exc = sanitize(exc, secrets, network_allowed=True)
                failures += [Problem(f"delete_flow failed: {p.message}", p.where, p.hint, code=p.code)
                             for p in exc.problems]  # fmt: skip
    if failures:
        failures.append(Problem(f"kept {flow_dir} and the flow's state: run `devlane delete` again once fixed",
                                severity="error", code="delete-kept"))  # fmt: skip
        raise DevlaneError(failures)
    removed = []
    root = Path(options.repo)
    for path in (flow_dir, root / STATE_DIR / flow_id):
        if path.is_dir():
            doomed = path.with_name(f".devlane-delete-{path.name}")
            os.rename(path, doomed)
            shutil.rmtree(doomed)
            removed.append(path)
    return DeleteResult(flow_id, flow_dir, deleted, messages, removed)


def check_changes(options: Options, base_ref: str, head_ref: str | None = None) -> list[Problem]:
    """`validate_change(old_args, new_args)` of every plugin whose definition's args changed between refs.

    `devlane diff` runs this between a pull request's base and head; a plugin can refuse a change
    it cannot apply to a live flow (for example a new database name for an existing branch).
    """
    from dataclasses import replace as _replace

    from .invocation import Invocation
    from .runtimes import make_runtime

    base = open_repo(_replace(options, ref=base_ref), collect=True)
    head = open_repo(_replace(options, ref=head_ref), collect=True)
    settings = _settings(options, head.config, "render")
    problems: list[Problem] = []
    with tempfile.TemporaryDirectory(prefix="devlane-plugins-") as scratch:
        resolver = _resolver(head, Path(scratch))
        for name, pdef in sorted(head.model.plugin_defs.items()):
            old = base.model.plugin_defs.get(name)
            if old is None or old.name != pdef.name or old.args == pdef.args:
                continue
            src, manifest = resolver.get(pdef.name)
            if not manifest.has("ValidateChange"):
                continue
            rt = make_runtime(src, manifest, options.debug)
            try:
                inv = Invocation("ValidateChange", name, "diff", pdef.name, args=dict(pdef.args),
                                 old_args=dict(old.args))  # fmt: skip
                problems += rt.validate_change(inv, settings.budget.for_call(manifest, Where(plugin=name)))
            finally:
                rt.close()
    return problems


def validate(options: Options, result: RenderResult, kube_version: str, crd_dirs: list[Path]):
    """Strict offline validation of every rendered object (`render --validate strict`); see `validate.py`."""
    import yaml

    from .validate import crd_schemas, validate_objects

    repo = open_repo(options, collect=True)
    crds = crd_schemas(repo.loaded.documents, crd_dirs)
    files = {f"flows/{f.flow_id}/{name}": yaml.load(text, Loader=yaml.CSafeLoader)
             for f in result.flows for name, text in f.files.items()}  # fmt: skip
    return validate_objects(files, kube_version, crds)
