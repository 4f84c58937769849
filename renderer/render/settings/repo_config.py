"""Repository configuration: `.devlane.yaml`, validated against `schemas/devlane-config.schema.json`.

Every field is optional; `RepoConfig` holds the defaults so a repo without config renders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ...core.schemas import schema_problems
from ...core.source import Source
from ...core.yamlio import load_one
from ...core.yamllines import line_of
from ...errors import DevlaneError, Problem, Where

CONFIG_FILE = ".devlane.yaml"
DEFAULT_MANIFESTS = ["**/*.yaml", "**/*.yml"]
Routing = Literal["none", "gateway-api", "istio"]
Isolation = Literal["suffix", "namespace"]
Stage = Literal["pre-render", "per-flow", "post-render"]
Behavior = Literal["enforce", "bypass"]
Switch = Literal["clusterScoped", "rbac", "privileged", "secrets"]


@dataclass(frozen=True)
class PluginAllow:
    """`policy.plugins.<name>`: what the repository trusts one plugin (or instance, or step) with beyond the
    default output policy (`render.plugins.output_policy`)."""

    allow: frozenset[Switch] = frozenset()
    kinds: tuple[str, ...] = ()  # besides plugin.yaml `spec.emits`
    namespaces: tuple[str, ...] = ()  # besides the flow's own

    def __or__(self, other: PluginAllow) -> PluginAllow:
        return PluginAllow(self.allow | other.allow, self.kinds + other.kinds, self.namespaces + other.namespaces)

    def __and__(self, other: PluginAllow) -> PluginAllow:
        """What both allow (a head entry as far as a trusted grant goes)."""
        return PluginAllow(self.allow & other.allow, tuple(k for k in self.kinds if k in other.kinds),
                           tuple(n for n in self.namespaces if n in other.namespaces))


@dataclass(frozen=True)
class GrantPin:
    """`policy.plugins.<name>.commit` / `.digest`: the code a trusted source's grant is for, when it says so itself
    (else the trusted ref names it: `render.settings.grants`)."""

    commit: str | None = None
    digest: str | None = None


InputKind = Literal["path", "kustomize", "helm"]


@dataclass(frozen=True)
class InputSpec:
    """One entry of `inputs:`: plain YAML globs, a kustomization directory, or a Helm chart and its options."""

    kind: InputKind
    path: str = ""  # the kustomization or chart directory (not for kind path)
    globs: tuple[str, ...] = ()  # kind path
    values: tuple[str, ...] = ()
    set: tuple[tuple[str, str], ...] = ()
    release_name: str = ""
    namespace: str | None = None
    kube_version: str | None = None

    @property
    def label(self) -> str:
        """How errors and documents name this input."""
        if self.kind == "path":
            return ", ".join(self.globs)
        return f"{self.path.rstrip('/') or '.'} ({'kustomize build' if self.kind == 'kustomize' else 'helm template'})"


def _inputs(raw: list[dict] | None) -> tuple[InputSpec, ...]:
    out = []
    for item in raw or []:
        if "path" in item:
            globs = item["path"] if isinstance(item["path"], list) else [item["path"]]
            out.append(InputSpec("path", globs=tuple(globs)))
        elif "kustomize" in item:
            out.append(InputSpec("kustomize", path=item["kustomize"].strip("/") or "."))
        else:
            out.append(InputSpec("helm", path=item["helm"].strip("/") or ".", values=tuple(item.get("values") or ()),
                                 set=tuple((str(k), _set_text(v)) for k, v in (item.get("set") or {}).items()),
                                 release_name=item.get("releaseName", ""), namespace=item.get("namespace"),
                                 kube_version=item.get("kubeVersion")))
    return tuple(out)


def _set_text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class RepoConfig:
    """`.devlane.yaml`, read (defaults where it is silent or absent)."""

    inputs: tuple[InputSpec, ...] = ()  # empty: detected at the root (`render.inputs.kustomize_helm.detect`)
    services: dict[str, dict] = field(default_factory=dict)  # Kardinal's annotations kept in config, by Service
    shared_stores: tuple[str, ...] = ()  # sharedStores: outside stores every lane may use on purpose
    plugin_definitions: list[dict] = field(default_factory=list)  # plugins.definitions
    manifests: list[str] = field(default_factory=lambda: list(DEFAULT_MANIFESTS))
    exclude: list[str] = field(default_factory=list)
    routing: Routing = "none"
    baggage_key: str = "devlane-flow"  # mesh.baggageKey: the baggage member that carries the flow id
    mesh_gateway: str | None = None  # mesh.gateway: `ns/name` of the Gateway an Ingress entry's flow route attaches to
    isolation: Isolation = "suffix"
    namespace_template: str = "{namespace}-{flow}"
    cluster_domain: str = "cluster.local"
    secrets_mirror: str | None = None  # isolation namespace: the replicator that fills Secret mirrors, if any
    domain: str | None = None
    namespace: str | None = None
    output: str = "rendered"
    replicas: int | str = 1
    plugin_sources: dict[str, dict] = field(default_factory=dict)
    plugin_timeout: float | None = None
    plugin_limits: dict[str, int] = field(default_factory=dict)  # plugins.limits
    require_sandbox: bool = False  # policy.requireSandbox
    warnings_as_errors: bool = False
    strict: bool = False
    plugin_policy: dict[str, PluginAllow] = field(default_factory=dict)
    plugin_pins: dict[str, GrantPin] = field(default_factory=dict)  # policy.plugins.<name>.commit|digest, if any
    present: bool = False
    pipeline: list[PipelineStep] = field(default_factory=list)
    lifecycle: dict = field(default_factory=dict)  # lifecycle: ttl, sleep, quota (as the schema checked them)
    prices: dict | None = None  # footprint.prices
    budget: dict = field(default_factory=dict)  # policy.budget
    trusted_budgets: tuple[dict, ...] = ()  # the trusted sources' policy.budget (`trust.confine`): always applied
    trusted_lifecycles: tuple[dict, ...] = ()  # the trusted sources' lifecycle: the shortest ttl, their quota
    dapr_isolation: str = "none"  # dapr.isolation: none | app-id
    raw: bytes | None = field(default=None, repr=False, compare=False)  # the file's bytes: lines for its problems

    def where(self, *path: str | int, object: str | None = None) -> Where:
        """Where a setting is written: `.devlane.yaml`, the line of `path` (or of its nearest ancestor there)."""
        return Where(file=CONFIG_FILE, line=line_of(self.raw, path), object=object)


@dataclass(frozen=True)
class PipelineStep:
    """One repo-level plugin step from `.devlane.yaml` `pipeline`."""

    name: str
    plugin: str
    stage: Stage
    args: dict[str, str]
    behavior: Behavior = "enforce"


@dataclass(frozen=True)
class ConfigFile:
    """`.devlane.yaml` as read from a source: its settings, its bytes (for the input hash), and what is wrong
    with it (with `collect`, lint and inspection go on with the defaults)."""

    config: RepoConfig
    raw: bytes | None
    problems: list[Problem] = field(default_factory=list)


def read_config(source: Source, collect: bool = False) -> ConfigFile:
    """The repository's `.devlane.yaml` (none: the defaults); a broken one raises unless `collect`."""
    raw = source.read(CONFIG_FILE) if source.exists(CONFIG_FILE) else None
    try:
        return ConfigFile(parse_config(raw), raw)
    except DevlaneError as exc:
        if not collect:
            raise
        return ConfigFile(RepoConfig(), raw, exc.problems)


def parse_config(data: bytes | None, file: str = CONFIG_FILE) -> RepoConfig:
    """Build the config from file content (None: no file, all defaults)."""
    if data is None:
        return RepoConfig()
    raw = load_one(data, file) if data.strip() else {}
    raw = raw or {}
    if not isinstance(raw, dict):
        raise DevlaneError(Problem("the config must be a mapping", Where(file=file), code="schema"))
    problems = schema_problems(raw, "devlane-config.schema.json", file, data)
    if problems:
        raise DevlaneError(problems)
    plugins = raw.get("plugins") or {}
    policy = raw.get("policy") or {}
    return RepoConfig(inputs=_inputs(raw.get("inputs")), services=dict(raw.get("services") or {}),
                      shared_stores=tuple(str(h).lower() for h in raw.get("sharedStores") or ()),
                      plugin_definitions=list(plugins.get("definitions") or []),
                      manifests=list(raw.get("manifests") or DEFAULT_MANIFESTS),
                      exclude=list(raw.get("exclude") or []),
                      routing=raw.get("routing", "none"), isolation=raw.get("isolation", "suffix"),
                      baggage_key=(raw.get("mesh") or {}).get("baggageKey", "devlane-flow"),
                      mesh_gateway=(raw.get("mesh") or {}).get("gateway"),
                      namespace_template=raw.get("namespaceTemplate", "{namespace}-{flow}"),
                      cluster_domain=raw.get("clusterDomain", "cluster.local"),
                      secrets_mirror=(raw.get("secrets") or {}).get("replicator", "reflector")
                      if (raw.get("secrets") or {}).get("mirror") else None,
                      domain=raw.get("domain"), namespace=raw.get("namespace"),
                      output=raw.get("output", "rendered"), replicas=raw.get("replicas", 1),
                      plugin_sources=dict(plugins.get("sources") or {}), plugin_timeout=plugins.get("timeoutSeconds"),
                      plugin_limits=dict(plugins.get("limits") or {}),
                      require_sandbox=bool(policy.get("requireSandbox", False)),
                      warnings_as_errors=bool(policy.get("warningsAsErrors", False)),
                      strict=bool(policy.get("strict", False)),
                      plugin_policy={name: PluginAllow(frozenset(p.get("allow") or ()), tuple(p.get("kinds") or ()),
                                                       tuple(p.get("namespaces") or ()))
                                     for name, p in (policy.get("plugins") or {}).items()},
                      plugin_pins={name: GrantPin(p.get("commit"), p.get("digest"))
                                   for name, p in (policy.get("plugins") or {}).items()
                                   if p.get("commit") or p.get("digest")},
                      present=True,
                      pipeline=_pipeline(raw.get("pipeline") or [], file),
                      lifecycle=dict(raw.get("lifecycle") or {}),
                      prices=(raw.get("footprint") or {}).get("prices"),
                      budget=dict(policy.get("budget") or {}),
                      dapr_isolation=str((raw.get("dapr") or {}).get("isolation", "none")), raw=data)


def _pipeline(raw: list[dict], file: str) -> list[PipelineStep]:
    steps = []
    for item in raw:
        plugin = item["plugin"]
        default = plugin.rstrip("/").split("/")[-1].lower().replace("_", "-").removesuffix(".git")
        args = {str(k): "" if v is None else (str(v).lower() if isinstance(v, bool) else str(v))
                for k, v in (item.get("args") or {}).items()}
        steps.append(PipelineStep(item.get("name") or default, plugin, item["stage"], args,
                                  item.get("behavior", "enforce")))
    names = [s.name for s in steps]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DevlaneError(Problem(f"pipeline: step name(s) used twice: {', '.join(dupes)}", Where(file=file),
                                   "give each step a unique `name`", code="schema"))
    return steps
