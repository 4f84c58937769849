"""`devlane plugins list | describe`: what each plugin in use is, where it comes from, and how it runs.

Both commands read only static facts (plugin definitions, `plugin.yaml` or the functions `main.py`
defines, the source and its digest); no plugin code runs, so they are safe on any repository.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import api
from ..core.secrets_mask import MASK, mask
from ..core.yamlio import dump
from ..errors import DevlaneError, Problem
from ..host.budget import DEFAULT_PLUGIN_TIMEOUT, Budget
from ..host.confine import PINNED_ORIGINS, Limits, SandboxPolicy, confinement
from ..host.manifest import MANIFEST, Manifest, load_manifest
from ..host.resolve import BUILTIN_PACKAGE, PluginSource, builtin_root, is_plugin_dir, plugin_digest
from ..host.sandbox import ENV_ALLOWLIST, is_secret_name, schema_mark
from ..protocol.krm import MAX_MESSAGE_BYTES
from ..render.model.records import Model
from ..render.model.topology import build_model
from ..render.settings.repo_config import RepoConfig


@dataclass
class Use:
    """One place a plugin is used: a plugin definition, a fallback implementation, or a pipeline step."""

    instance: str
    role: str  # plugin | fallback #N | pipeline <stage>
    args: dict[str, str]
    behavior: str = "enforce"
    side_effects: str | None = None  # the definition's own `sideEffects` (primary use only)
    file: str | None = None
    type: str | None = None

    def label(self) -> str:
        return self.instance if self.role == "plugin" else f"{self.instance} ({self.role})"


@dataclass
class PluginInfo:
    """Static facts about one plugin name, resolved the way render resolves it."""

    name: str
    uses: list[Use] = field(default_factory=list)
    source: PluginSource | None = None
    manifest: Manifest | None = None
    error: Problem | None = None
    digest: str | None = None
    display_path: str | None = None
    timeout: float = DEFAULT_PLUGIN_TIMEOUT
    timeout_from: str = "default"
    limits: Limits = field(default_factory=Limits)
    require_sandbox: bool = False

    @property
    def instances(self) -> list[str]:
        return sorted({u.instance for u in self.uses})

    def side_effects(self) -> tuple[str | None, str]:
        """(value, who set it): a definition can make a plugin External without touching it."""
        if self.manifest is None:
            if any(u.role == "plugin" and u.side_effects == "External" for u in self.uses):
                return "External", "plugin definition"
            return None, "unknown"
        if self.manifest.side_effects == "External":
            return "External", "manifest"
        if any(u.role == "plugin" and u.side_effects == "External" for u in self.uses):
            return "External", "plugin definition"
        return self.manifest.side_effects, "synthesized" if self.manifest.synthesized else "manifest"

    def summary(self) -> dict[str, Any]:
        m = self.manifest
        value, by = self.side_effects()
        return {
            "name": self.name,
            "instances": self.instances,
            "usedBy": [u.label() for u in sorted(self.uses, key=lambda u: (u.instance, u.role))],
            "source": None if self.source is None else {
                "origin": self.source.origin,
                "path": self.display_path,
                "commit": getattr(self.source, "commit", None),
            },
            "runtime": m.runtime if m else None,
            "version": (m.version or None) if m else None,
            "capabilities": sorted(m.capabilities) if m else [],
            "sideEffects": value,
            "sideEffectsSetBy": by,
            "timeoutSeconds": self.timeout if m else None,
            "timeoutFrom": self.timeout_from if m else None,
            "manifest": None if m is None else ("synthesized" if m.synthesized else MANIFEST),
            "available": self.error is None,
            "error": None if self.error is None else self.error.message,
        }


# --------------------------------------------------------------------------------------------------
# Collecting


def _display_path(src: PluginSource, repo_root: Path, scratch: Path, ref: str | None) -> str:
    """Paths relative to the repository where possible, so the output is the same on every machine."""
    path = src.path.resolve()
    if src.origin == "builtin":
        return f"{BUILTIN_PACKAGE}/{path.name}"
    if src.origin == "git" and getattr(src, "url", None):
        return str(src.url)
    if path.is_relative_to(scratch):
        return f"{src.name.removeprefix('./').rstrip('/')} @ {ref or 'the git ref'}"
    if path.is_relative_to(repo_root):
        return path.relative_to(repo_root).as_posix() or "."
    return str(path)


def _uses(model: Model, config: RepoConfig) -> dict[str, list[Use]]:
    by_name: dict[str, list[Use]] = {}
    for servicename, pdef in sorted(model.plugin_defs.items()):
        for i, cand in enumerate(pdef.candidates):
            role = "plugin" if i == 0 else f"fallback #{i}"
            by_name.setdefault(cand["name"], []).append(Use(
                servicename, role, dict(cand["args"]), pdef.behavior, pdef.side_effects if i == 0 else None,
                pdef.where.file, pdef.type))
    for step in config.pipeline:
        by_name.setdefault(step.plugin, []).append(
            Use(step.name, f"pipeline {step.stage}", dict(step.args), step.behavior, None, ".devlane.yaml"))
    return by_name


@dataclass(frozen=True)
class Inventory:
    """Every plugin a repository uses, and the model it was read from."""

    model: Model
    plugins: list[PluginInfo]


def collect(options: api.Options, builtin: str | None = None) -> Inventory:
    """Every plugin the repository uses, resolved like render does (flags, config, lock, repo, built-in); with
    `builtin`, that built-in too when the repository does not use it (`plugins describe` before adopting one)."""
    with api.open_session(options, collect=True) as s:
        model = build_model(s.loaded.documents, s.config.namespace)
        uses = _uses(model, s.config)
        names = sorted(uses)
        if builtin is not None and builtin not in uses and _is_builtin(builtin) and not _names(model, uses, builtin):
            names.append(builtin)
        out = []
        for name in names:
            info = PluginInfo(name, uses.get(name, []))
            try:
                info.source, info.manifest = s.host.resolver.get(name)
            except DevlaneError as exc:
                info.error = exc.problems[0]
            if info.source is not None and info.manifest is not None:
                info.display_path = _display_path(info.source, s.root.resolve(), s.host.resolver.scratch.resolve(),
                                                  options.ref)
                info.digest = plugin_digest(info.source.path)
                info.timeout, info.timeout_from = Budget(config=s.config.plugin_timeout).limit(info.manifest)
                info.limits = Limits().merged(s.config.plugin_limits).for_plugin(info.manifest.limits,
                                                                                 info.source.origin)
                info.require_sandbox = s.config.require_sandbox
            out.append(info)
    return Inventory(model, out)


def _is_builtin(name: str) -> bool:
    root = builtin_root()
    return root is not None and "/" not in name and is_plugin_dir(root / name)


def _names(model: Model, uses: dict[str, list[Use]], name: str) -> bool:
    """Whether `name` names something of the repository already: a plugin definition's servicename or an
    instance (`find` resolves those first)."""
    return name in model.plugin_defs or any(u.instance == name for used in uses.values() for u in used)


# --------------------------------------------------------------------------------------------------
# Sandbox facts


def network_status() -> dict[str, Any]:
    """What the sandbox probe found on this machine: the network answer, and every layer."""
    try:
        got = confinement()
    except Exception as exc:  # a probe failure must not break an inspection command
        return {"enforced": None, "method": None, "reason": f"unknown: the probe failed ({exc})", "binary": None,
                "layers": []}
    return {"enforced": got.enforced, "method": got.method if got.method != "none" else None, "reason": got.reason,
            "binary": {"path": got.binary.path, "origin": got.binary.origin} if got.binary else None,
            "layers": [{"name": la.name, "enforced": la.enforced, "how": la.how} for la in got.layers]}


def sandbox_facts(info: PluginInfo) -> dict[str, Any]:
    """How a call of this plugin is confined; differs by runtime (built-ins run in-process)."""
    m, src = info.manifest, info.source
    cap = f"{MAX_MESSAGE_BYTES // (1024 * 1024)} MiB per reply; beyond it the process group is killed"
    timeout = f"{info.timeout:g} s per call ({info.timeout_from}); on timeout the whole process group is killed"
    if m is None or src is None:
        return {"applies": False, "note": "the plugin is not available"}
    if m.runtime == "kardinal-python" and src.origin == "builtin":
        return {"applies": False, "note": "built-in plugin: runs in-process as part of devlane (first-party code), "
                "so no process sandbox applies", "timeout": timeout}
    if m.runtime == "grpc" and m.address and not m.command:
        return {"applies": False, "note": f"devlane dials a server it did not start ({m.address}); that server "
                "runs with whatever confinement its owner gave it", "timeout": timeout}
    cwd = ("a fresh temporary directory per call (HOME and TMPDIR point at it)" if m.runtime != "grpc"
           else "the plugin directory; one server process per render, HOME points at the plugin directory")
    refusal = SandboxPolicy(require=info.require_sandbox).admit(confinement(), src.origin)
    return {
        "applies": True,
        "pinned": src.origin in PINNED_ORIGINS,
        "runsHere": refusal is None,
        "refusal": None if refusal is None else {"rule": refusal.rule, "missing": refusal.missing,
                                                 "hint": refusal.hint(confinement())},
        "network": network_status(),
        "env": sorted(ENV_ALLOWLIST),
        "cwd": cwd,
        "outputCap": cap,
        "timeout": timeout,
        "limits": info.limits.as_dict(),
        "requireSandbox": info.require_sandbox,
    }


# --------------------------------------------------------------------------------------------------
# Describing


def mask_args(args: dict[str, str], schema: dict | None = None) -> dict[str, str]:
    """Hide the values the sandbox hides in logs: args argsSchema marks secret (writeOnly, format: password,
    x-devlane-secret: true) or whose names look secret, unless the schema says otherwise (x-devlane-secret:
    false, e.g. the name of a Secret); in the others, the secrets of URLs and connection strings (`secrets_mask`)."""
    props = (schema or {}).get("properties") or {}

    def secret(name: str) -> bool:
        mark = schema_mark(props.get(name))
        return is_secret_name(name) if mark is None else mark

    return {k: MASK if secret(k) else mask(v) if isinstance(v, str) else v for k, v in sorted(args.items())}


def find(inventory: Inventory, name: str) -> PluginInfo:
    """NAME: a plugin name as written in definitions, an instance (servicename / step), or the manifest name."""
    infos = inventory.plugins
    by_name = {i.name: i for i in infos}
    norm = name.removeprefix("./").rstrip("/")
    wanted: str | None = name if name in by_name else None
    if wanted is None and name in inventory.model.plugin_defs:
        wanted = inventory.model.plugin_defs[name].name
    if wanted is None:
        wanted = next((i.name for i in infos for u in i.uses if u.instance == name), None)
    if wanted is None:
        wanted = next((i.name for i in infos if i.name.removeprefix("./").rstrip("/") == norm), None)
    if wanted is None:
        wanted = next((i.name for i in infos if i.manifest and (i.manifest.raw.get("metadata") or {}).get("name")
                       == name), None)
    if wanted is None or wanted not in by_name:
        known = sorted(by_name)
        instances = sorted({u.instance for i in infos for u in i.uses})
        hint = (f"plugins: {', '.join(known)}; instances: {', '.join(instances)}" if known
                else "this repository defines no plugins (kardinal.dev.service/plugin-definition)")
        hint += "; devlane's built-ins are described by their short name: devlane plugins list --builtin"
        raise DevlaneError(Problem(f"no plugin or plugin instance named {name!r} in this repository", hint=hint,
                                   code="plugin-unknown"))
    return by_name[wanted]


def describe_dict(info: PluginInfo) -> dict[str, Any]:
    out = info.summary()
    m = info.manifest
    schema = m.args_schema if m else None
    uses = [{"instance": u.instance, "role": u.role, "behavior": u.behavior, "type": u.type,
             "sideEffects": u.side_effects, "file": u.file, "args": mask_args(u.args, schema)}
            for u in sorted(info.uses, key=lambda u: (u.instance, u.role))]
    out.update({
        "description": (m.description or None) if m else None,
        "runtimeCommand": list(m.command) if m and m.command else None,
        "runtimeAddress": m.address if m else None,
        "argsSchema": schema,
        "lifecycleKinds": list(m.lifecycle_kinds) if m else [],
        "emits": list(m.emitted_kinds) if m else [],
        "emitsDeclared": m is not None and m.emits is not None,
        "isolates": list(m.isolates) if m else [],
        "receives": list(m.receives) if m else [],
        "digest": info.digest,
        "hint": info.error.hint if info.error else None,
        "uses": uses,
        "sandbox": sandbox_facts(info),
    })
    return out


def network_text(net: dict[str, Any]) -> str:
    if net["enforced"] is None:
        return net["reason"]
    method = f" ({net['method']})" if net.get("method") else ""
    why = f": {net['reason']}" if net.get("reason") else ""
    return ("enforced" if net["enforced"] else "not enforced") + method + why


def describe_text(d: dict[str, Any]) -> str:
    lines = [f"plugin {d['name']}"]

    def row(label: str, value: Any) -> None:
        lines.append(f"  {label + ':':<17} {value if value not in (None, '', []) else '-'}")

    row("description", d["description"])
    src = d["source"]
    row("source", f"{src['origin']} {src['path']}" if src else None)
    if src and src.get("commit"):
        row("commit", src["commit"])
    row("status", "available" if d["available"] else f"unavailable: {d['error']}")
    if d["hint"]:
        row("hint", d["hint"])
    row("digest", d["digest"])
    row("manifest", "synthesized (no plugin.yaml; capabilities from main.py)" if d["manifest"] == "synthesized"
        else d["manifest"])
    runtime = d["runtime"]
    if runtime and d["runtimeCommand"]:
        runtime += f" (command: {' '.join(d['runtimeCommand'])})"
    elif runtime and d["runtimeAddress"]:
        runtime += f" (address: {d['runtimeAddress']})"
    row("runtime", runtime)
    row("version", d["version"])
    row("capabilities", ", ".join(d["capabilities"]))
    se = d["sideEffects"]
    row("side effects", f"{se} (set by plugin definition)" if d["sideEffectsSetBy"] == "plugin definition" else se)
    row("timeout", f"{d['timeoutSeconds']:g} s ({d['timeoutFrom']})" if d["timeoutSeconds"] else None)
    row("lifecycle kinds", ", ".join(d["lifecycleKinds"]))
    if d["manifest"] is not None:
        row("emits", (", ".join(d["emits"]) or "nothing") + ("" if d["emitsDeclared"] else " (default)"))
        if d["isolates"]:
            row("isolates", ", ".join(d["isolates"]) + " (the lane's own state at the shared address)")
        if d["receives"]:
            row("receives", ", ".join(d["receives"]) + " (every such object of the repository)")
    if d["manifest"] is None:
        row("args schema", None)
    elif d["argsSchema"]:
        lines.append("  args schema:")
        lines += ["    " + line for line in dump(d["argsSchema"]).rstrip("\n").splitlines()]
    else:
        row("args schema", "none (args are not checked before the call)")
    lines.append("  used by:")
    for u in d["uses"]:
        extra = [f"behavior {u['behavior']}"] + ([f"type {u['type']}"] if u["type"] else [])
        if u["sideEffects"]:
            extra.append(f"sideEffects {u['sideEffects']}")
        role = {"plugin": "plugin definition"}.get(u["role"], u["role"])
        where = f" in {u['file']}" if u["file"] else ""
        lines.append(f"    {u['instance']}: {role}{where}; {', '.join(extra)}")
        for k, v in u["args"].items():
            text = str(v)
            lines.append(f"      {k}: {text.splitlines()[0] + ' ...' if chr(10) in text else text}")
    sb = d["sandbox"]
    lines.append("  sandbox:")
    if not sb["applies"]:
        lines.append(f"    {sb['note']}")
        if sb.get("timeout"):
            lines.append(f"    {'timeout:':<19} {sb['timeout']}")
    else:
        lines.append(f"    {'network isolation:':<19} {network_text(sb['network'])}")
        binary = sb["network"].get("binary")
        lines.append(f"    {'sandbox binary:':<19} " + (f"{binary['path']} ({binary['origin']})" if binary else "none"))
        for la in sb["network"].get("layers", []):
            lines.append(f"    {'enforced' if la['enforced'] else 'MISSING':>8}  {la['name']}: {la['how']}")
        lim = sb["limits"]
        lines.append(f"    {'limits:':<19} {lim['memoryMiB']} MiB memory, {lim['processes']} processes, "
                     f"{lim['fileSizeMiB']} MiB per file, {lim['cpuSeconds']} CPU s")
        if sb["requireSandbox"]:
            lines.append(f"    {'requireSandbox:':<19} set")
        refusal = sb["refusal"]
        lines.append(f"    {'runs here:':<19} " + ("yes" if refusal is None else
                                                   f"NO: {refusal['rule']}; missing "
                                                   f"{', '.join(m.split(' (')[0] for m in refusal['missing'])}"))
        lines.append(f"    {'environment:':<19} scrubbed; only {', '.join(sb['env'])} pass")
        lines.append(f"    {'working directory:':<19} {sb['cwd']}")
        lines.append(f"    {'output cap:':<19} {sb['outputCap']}")
        lines.append(f"    {'timeout:':<19} {sb['timeout']}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# Listing


def _source_cell(s: dict[str, Any]) -> str:
    src = s["source"]
    if src is None:
        return "-"
    text = f"{src['origin']}:{src['path']}"
    return text + (f"@{src['commit'][:12]}" if src.get("commit") else "")


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Aligned columns; the last one is not padded."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    return [("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]).rstrip()
            for r in [head, *rows]]


def list_text(summaries: list[dict[str, Any]]) -> str:
    if not summaries:
        return ("no plugins in use (no kardinal.dev.service/plugin-definition and no pipeline steps); "
                "`devlane plugins list --builtin` shows the built-in catalogue\n")
    head = ("PLUGIN", "USED BY", "SOURCE", "RUNTIME", "VERSION", "SIDE EFFECTS", "TIMEOUT", "STATUS", "CAPABILITIES")
    rows = []
    for s in summaries:
        se = s["sideEffects"]
        se_text = "-" if se is None else (f"{se} (set by plugin definition)" if s["sideEffectsSetBy"]
                                          == "plugin definition" else se)
        rows.append((s["name"], ", ".join(s["usedBy"]), _source_cell(s), s["runtime"] or "-", s["version"] or "-",
                     se_text, f"{s['timeoutSeconds']:g}s" if s["timeoutSeconds"] else "-",
                     "ok" if s["available"] else "unavailable", ",".join(s["capabilities"]) or "-"))
    lines = _table(head, rows)
    for s in summaries:
        if not s["available"]:
            lines.append(f"{s['name']}: {s['error']}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# The built-in catalogue


def catalogue() -> list[dict[str, Any]]:
    """devlane's built-in plugins (`plugins list --builtin`), each by the short name definitions use, read
    from its manifest alone (no plugin code runs)."""
    root = builtin_root()
    out: list[dict[str, Any]] = []
    for path in sorted(p for p in root.iterdir() if p.is_dir() and is_plugin_dir(p)) if root else []:
        entry: dict[str, Any] = {"name": path.name, "path": f"{BUILTIN_PACKAGE}/{path.name}", "available": True,
                                 "error": None}
        try:
            m = load_manifest(path, path.name)
        except DevlaneError as exc:
            out.append({**entry, "available": False, "error": exc.problems[0].message})
            continue
        out.append({**entry, "version": m.version or None, "description": m.description or None,
                    "runtime": m.runtime, "capabilities": sorted(m.capabilities), "sideEffects": m.side_effects,
                    "emits": list(m.emitted_kinds), "emitsDeclared": m.emits is not None,
                    "manifest": "synthesized" if m.synthesized else MANIFEST})
    return out


def catalogue_text(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return "no built-in plugins (the `plugins` package is not installed)\n"
    head = ("NAME", "VERSION", "SIDE EFFECTS", "EMITS", "DESCRIPTION")
    rows = []
    for e in entries:
        if not e["available"]:
            rows.append((e["name"], "-", "-", "-", f"unavailable: {e['error']}"))
            continue
        emits = (",".join(e["emits"]) or "nothing") if e["emitsDeclared"] else "default"
        first = (e["description"] or "-").split(": ")[0].split(". ")[0].rstrip(".")
        rows.append((e["name"], e["version"] or "-", e["sideEffects"], emits, first))
    lines = _table(head, rows)
    lines.append("use one by its name in a plugin definition (name: NAME); docs: plugins/NAME/README.md")
    return "\n".join(lines) + "\n"
