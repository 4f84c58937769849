"""A grant belongs to an identity, not a name (issue 40, point 1; SPEC §4.6 last sentence).

The operator's policy file, or `.devlane.yaml` at the trusted base, lets one plugin add a ClusterRoleBinding to
cluster-admin. A pull request tries to get that grant for its own code: a directory or a `plugins.sources` entry
taking the built-in's name (refused, naming both), a `plugins.sources` entry, a `--plugin-source` flag or a moved
`devlane.lock` pointing the granted name at other code, a repository plugin changed since the base, an instance's
definition moved to another plugin, a second plugin beside the granted one. Each plugin is real (a Kardinal plugin
run as its own process, a git source pinned and fetched from a real upstream repository; the built-in runs
in-process, as built-ins do); each case is judged on the rendered files (no ClusterRoleBinding written, the
previous output byte-identical), the exit code and the message naming the plugin, the trusted identity and what
the head resolved. And the grant still reaches the code it was for: the built-in, a git source at the trusted pin,
a repository plugin unchanged since the trusted ref, code a grant pins by `digest:` or `commit:`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from support import Harness, Result, app_yaml, git, plugin_definition, tree, yamlc

from renderer.host.resolve import plugin_digest

pytestmark = pytest.mark.e2e

FLOW = "pr-7"
GRANT = {"allow": ["clusterScoped", "rbac"], "kinds": ["ClusterRoleBinding"]}
GIT_NAME = "github.com/acme/rbac-plugin"
# a Kardinal plugin that binds cluster-admin, the binding named after its TAG (which code ran) and the instance
ADMIN = '''
def create_flow(service_specs, pod_specs, flow_uuid):
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "TAG-" + flow_uuid},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
               "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "shop"}]}
    return {"pod_specs": pod_specs, "config_map": {}, "resources": [binding]}
'''
HARMLESS = '''
def create_flow(service_specs, pod_specs, flow_uuid):
    return {"pod_specs": pod_specs, "config_map": {}}
'''


def admin(tag: str) -> str:
    return ADMIN.replace("TAG", tag)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """The plugin cache in a temp dir, git without the user's or the system's config."""
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    return tmp_path / "cache"


def lane(harness: Harness, plugins: dict[str, str], config: dict | None = None, defs_in_config: bool = False) -> None:
    """Deployment+Service `api` using one instance per `plugins` entry (servicename -> plugin name), `db` beside it,
    in namespace shop; the definitions in app.yaml (or `.devlane.yaml` `plugins.definitions`)."""
    defs = [{"name": plugin, "type": "stateful", "servicename": s} for s, plugin in plugins.items()]
    harness.write("app.yaml", app_yaml("api", ",".join(plugins)) + app_yaml("db")
                  + ("" if defs_in_config else plugin_definition(defs)))
    config = {"namespace": "shop", **(config or {})}
    if defs_in_config:
        config.setdefault("plugins", {})["definitions"] = defs
    harness.config(config)


def policy_file(harness: Harness, plugins: dict) -> str:
    """The operator's policy file, outside the repository."""
    path = harness.tmp / "policy.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "devlane.dev/v1alpha1", "kind": "Config",
                                    "policy": {"plugins": plugins}}))
    return f"--policy={path}"


def render(harness: Harness, *extra: str) -> Result:
    return harness.cli("render", "--flow", FLOW, "--service", "api=api:2", "--out", harness.tmp / "out", *extra)


def bindings(harness: Harness) -> list[str]:
    """The ClusterRoleBindings of the rendered flow, read from its files."""
    flow = harness.tmp / "out" / "flows" / FLOW
    docs = [d for f in sorted(flow.glob("*.yaml")) for d in yamlc.safe_load_all(f.read_text())] if flow.is_dir() else []
    return sorted(d["metadata"]["name"] for d in docs if isinstance(d, dict) and d.get("kind") == "ClusterRoleBinding")


def granted(harness: Harness, *extra: str, expected: list[str]) -> None:
    out = render(harness, *extra)
    assert out.returncode == 0, out.stderr
    assert "is not applied" not in out.stderr, out.stderr
    assert bindings(harness) == expected


def refused(harness: Harness, *extra: str, said: tuple[str, ...] = (), errors: int | None = None) -> str:
    """Render: exit 1, no ClusterRoleBinding added, the previous output byte-identical, `said` in stderr."""
    written = lambda: tree(harness.tmp / "out") if (harness.tmp / "out").is_dir() else {}  # noqa: E731
    before, was = written(), bindings(harness)
    out = render(harness, *extra)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr
    assert all(s in out.stderr for s in said), out.stderr
    if errors is not None:
        assert out.stderr.count("devlane: error:") == errors, out.stderr
    assert bindings(harness) == was and written() == before
    return out.stderr


# -- a built-in is always the built-in -------------------------------------------------------------------------


def builtin_lane(harness: Harness, **lane_kw) -> str:
    """The built-in `postgres-seed` (this test's catalogue: it binds cluster-admin), granted by the operator."""
    harness.builtin("postgres-seed", admin("builtin"))
    lane(harness, {"seed": "postgres-seed"}, **lane_kw)
    return policy_file(harness, {"postgres-seed": GRANT})


def test_the_built_in_keeps_its_grant(harness):
    policy = builtin_lane(harness)
    granted(harness, policy, expected=["builtin-seed-pr-7"])


def shadow_by_directory(harness: Harness) -> tuple[tuple[str, ...], str]:
    harness.plugin("postgres-seed", admin("evil"))
    return (), f"the repository's directory postgres-seed/ ({harness.root / 'postgres-seed'})"


def shadow_at_ref(harness: Harness) -> tuple[tuple[str, ...], str]:
    harness.plugin("postgres-seed", admin("evil"))
    harness.commit("pr: a plugin directory named like the built-in")
    return ("--ref", "HEAD"), "the repository's directory postgres-seed/ at HEAD"


def shadow_with_config_definition(harness: Harness) -> tuple[tuple[str, ...], str]:
    lane(harness, {"seed": "postgres-seed"}, defs_in_config=True)
    return shadow_by_directory(harness)


def shadow_by_source_path(harness: Harness) -> tuple[tuple[str, ...], str]:
    harness.plugin("vendor/seed", admin("evil"))
    lane(harness, {"seed": "postgres-seed"}, {"plugins": {"sources": {"postgres-seed": {"path": "vendor/seed"}}}})
    return (), "plugins.sources.postgres-seed in .devlane.yaml"


def shadow_by_source_git(harness: Harness) -> tuple[tuple[str, ...], str]:
    evil = {"git": "https://git.example.invalid/evil.git"}
    lane(harness, {"seed": "postgres-seed"}, {"plugins": {"sources": {"postgres-seed": evil}}})
    return (), "plugins.sources.postgres-seed in .devlane.yaml"


SHADOWS: dict[str, Callable[[Harness], tuple[tuple[str, ...], str]]] = {
    # the pull request's way of taking the built-in's name -> (render args, how the error names it)
    "a repository directory": shadow_by_directory,
    "a repository directory, rendered from a git ref": shadow_at_ref,
    "a repository directory, the definition in .devlane.yaml": shadow_with_config_definition,
    "a plugins.sources path": shadow_by_source_path,
    "a plugins.sources git source": shadow_by_source_git,
}


@pytest.mark.parametrize("case", sorted(SHADOWS))
def test_a_name_taken_from_a_built_in_is_refused_naming_both(harness, case):
    policy = builtin_lane(harness)
    granted(harness, policy, expected=["builtin-seed-pr-7"])
    extra, what = SHADOWS[case](harness)
    builtin = harness.tmp / "builtins" / "postgres-seed"
    refused(harness, policy, *extra, errors=1, said=(
        f"{what} takes the name of the built-in plugin 'postgres-seed' ({builtin}); a plain name always means the "
        "built-in, so this is refused", "or, to use it, name it './postgres-seed' in the plugin definition: then it is "
        "a repository plugin, and nothing granted to the built-in postgres-seed applies to it"))


def test_named_explicitly_it_is_a_repository_plugin_with_its_own_identity(harness, sandbox):
    """`./postgres-seed` runs, as the repository's plugin: the built-in's grant is not its; a grant of its own
    (by the digest of its code) is."""
    policy = builtin_lane(harness)
    evil = harness.plugin("postgres-seed", admin("evil"))
    lane(harness, {"seed": "./postgres-seed"})
    err = refused(harness, policy, said=("ClusterRoleBinding/evil-seed-pr-7, plugin seed: refused by the output policy "
                                         "(rule clusterScoped)",))
    assert "is not applied" not in err  # nothing was granted to ./postgres-seed: no grant to withhold
    own = policy_file(harness, {"postgres-seed": GRANT, "./postgres-seed": {**GRANT, "digest": plugin_digest(evil)}})
    granted(harness, own, expected=["evil-seed-pr-7"])


# -- a grant follows the code the trusted side names --------------------------------------------------------------


def upstream_commit(path: Path, tag: str) -> str:
    """Commit the admin plugin tagged `tag` into the upstream repository at `path` (made on first use)."""
    if not path.is_dir():
        path.mkdir(parents=True)
        git(path, "init", "-q", "-b", "main")
    (path / "main.py").write_text(admin(tag))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", tag)
    return git(path, "rev-parse", "HEAD")


def pinned(harness: Harness, *update: str) -> None:
    for args in (("lock", *update), ("fetch",)):
        out = harness.cli("plugins", args[0], harness.root, *args[1:])
        assert out.returncode == 0, out.stderr


def git_base(harness: Harness) -> tuple[tuple[str, ...], list[str]]:
    """A git source pinned and fetched, granted in `.devlane.yaml` at the base: (render args, expected bindings)."""
    upstream = harness.tmp / "upstream"
    upstream_commit(upstream, "git")
    sources = {GIT_NAME: {"git": upstream.as_uri(), "ref": "main"}}
    lane(harness, {"seed": GIT_NAME}, {"plugins": {"sources": sources}, "policy": {"plugins": {GIT_NAME: GRANT}}})
    pinned(harness)
    return (f"--trusted-ref={harness.commit('base: the platform team grants the rbac plugin')}",), ["git-seed-pr-7"]


def repo_base(harness: Harness, key: str = "./plugins/ops") -> tuple[tuple[str, ...], list[str]]:
    """A repository plugin granted (by `key`: its name, or its instance's) in `.devlane.yaml` at the base."""
    harness.plugin("plugins/ops", admin("ops"))
    lane(harness, {"seed": "./plugins/ops"}, {"policy": {"plugins": {key: GRANT}}})
    return (f"--trusted-ref={harness.commit('base: the platform team grants the ops plugin')}",), ["ops-seed-pr-7"]


def builtin_base(harness: Harness) -> tuple[tuple[str, ...], list[str]]:
    return (builtin_lane(harness),), ["builtin-seed-pr-7"]


def outside(harness: Harness, tag: str = "evil") -> Path:
    """The operator's own plugin directory, outside the repository."""
    return harness.plugin(tag, admin(tag), where=harness.tmp / "elsewhere")


Head = tuple[tuple[str, ...], tuple[str, ...]]  # the pull request's render args, what stderr says


def builtin_by_flag(harness: Harness, base: tuple[str, ...]) -> Head:
    evil = outside(harness)
    return (f"--plugin-source=postgres-seed={evil}",), (
        "plugin seed: policy.plugins.postgres-seed is not applied to plugin postgres-seed: the grant is for the "
        f"built-in plugin postgres-seed (granted by the policy file {harness.tmp / 'policy.yaml'}), and postgres-seed "
        f"here is --plugin-source postgres-seed={evil}, digest {plugin_digest(evil)}",)


def _git_grant(harness: Harness, base: tuple[str, ...]) -> str:
    ref = base[0].split("=", 1)[1]
    first = git(harness.root, "show", f"{ref}:devlane.lock").split("commit: ")[1].split()[0]
    return (f"policy.plugins.{GIT_NAME} is not applied to plugin {GIT_NAME}: the grant is for "
            f"{(harness.tmp / 'upstream').as_uri()} at commit {first[:12]} (devlane.lock at the trusted ref {ref}) "
            f"(granted by .devlane.yaml at the trusted ref {ref}), and {GIT_NAME} here is ")


def git_by_config(harness: Harness, base: tuple[str, ...]) -> Head:
    evil = harness.plugin("plugins/evil", admin("evil"))
    lane(harness, {"seed": GIT_NAME}, {"plugins": {"sources": {GIT_NAME: {"path": "./plugins/evil"}}}})
    return (), (_git_grant(harness, base) + f"plugins.sources.{GIT_NAME} in .devlane.yaml ({evil}), digest "
                f"{plugin_digest(evil)}",)


def git_by_flag(harness: Harness, base: tuple[str, ...]) -> Head:
    evil = outside(harness)
    return (f"--plugin-source={GIT_NAME}={evil}",), (
        _git_grant(harness, base) + f"--plugin-source {GIT_NAME}={evil}, digest {plugin_digest(evil)}",)


def git_by_lock(harness: Harness, base: tuple[str, ...]) -> Head:
    moved = upstream_commit(harness.tmp / "upstream", "moved")
    pinned(harness, "--update", GIT_NAME)  # the pull request moves devlane.lock to a new commit of the granted URL
    return (), (_git_grant(harness, base) + f"{(harness.tmp / 'upstream').as_uri()} at commit {moved[:12]} (pinned "
                "in devlane.lock)",)


def repo_changed(harness: Harness, base: tuple[str, ...]) -> Head:
    trusted = plugin_digest(harness.root / "plugins" / "ops")
    changed = harness.plugin("plugins/ops", admin("changed"))
    return (), (f"policy.plugins../plugins/ops is not applied to plugin ./plugins/ops: the grant is for the code with "
                f"digest {trusted} (./plugins/ops at the trusted ref {base[0].split('=', 1)[1]}) (granted by "
                ".devlane.yaml at the trusted ref", f"and ./plugins/ops here is the repository's ./plugins/ops, digest "
                f"{plugin_digest(changed)}")


def instance_moved(harness: Harness, base: tuple[str, ...]) -> Head:
    trusted = plugin_digest(harness.root / "plugins" / "ops")
    evil = harness.plugin("plugins/evil", admin("evil"))
    lane(harness, {"seed": "./plugins/evil"}, {"policy": {"plugins": {"seed": GRANT}}})
    return (), (f"plugin seed: policy.plugins.seed is not applied to plugin ./plugins/evil: the grant is for the code "
                f"with digest {trusted} (./plugins/ops at the trusted ref {base[0].split('=', 1)[1]})",
                f"and ./plugins/evil here is the repository's ./plugins/evil, digest {plugin_digest(evil)}")


REDIRECTS: dict[str, tuple[Callable[[Harness], tuple[tuple[str, ...], list[str]]],
                           Callable[[Harness, tuple[str, ...]], Head]]] = {
    "built-in, --plugin-source": (builtin_base, builtin_by_flag),
    "git source, plugins.sources path": (git_base, git_by_config),
    "git source, --plugin-source": (git_base, git_by_flag),
    "git source, devlane.lock moved": (git_base, git_by_lock),
    "repository plugin, changed": (repo_base, repo_changed),
    "instance-keyed grant, definition moved": (lambda h: repo_base(h, key="seed"), instance_moved),
}


@pytest.mark.parametrize("case", sorted(REDIRECTS))
def test_a_granted_name_redirected_loses_the_grant(harness, cache, sandbox, case):
    """At the base the grant reaches its code (the positive case of each kind of identity); the pull request points
    the name (or the instance) at other code: the grant is withheld, said with both identities (before the
    refusal it causes), and the binding is refused."""
    base, head = REDIRECTS[case]
    args, expected = base(harness)
    granted(harness, *args, expected=expected)
    extra, said = head(harness, args)
    err = refused(harness, *args, *extra, said=(*said, "refused by the output policy (rule clusterScoped)"))
    assert err.index("is not applied") < err.index("refused by the output policy")


def test_a_withheld_grant_is_a_warning_and_an_error_under_strict(harness):
    """Code that needs no grant still renders when the grant is withheld, saying so; `--strict` (or the head's own
    `policy.strict`) makes the withheld grant an error before any plugin output is used."""
    policy = builtin_lane(harness)
    granted(harness, policy, expected=["builtin-seed-pr-7"])
    mine = harness.plugin("mine", HARMLESS, where=harness.tmp / "elsewhere")
    out = render(harness, policy, f"--plugin-source=postgres-seed={mine}")
    assert out.returncode == 0, out.stderr
    assert "devlane: warning: plugin seed: policy.plugins.postgres-seed is not applied to plugin postgres-seed: the " \
           "grant is for the built-in plugin postgres-seed" in out.stderr
    assert bindings(harness) == []
    refused(harness, policy, f"--plugin-source=postgres-seed={mine}", "--strict", errors=1, said=(
        "devlane: error: plugin seed: policy.plugins.postgres-seed is not applied to plugin postgres-seed",))
    lane(harness, {"seed": "postgres-seed"}, {"policy": {"strict": True}})
    refused(harness, policy, f"--plugin-source=postgres-seed={mine}", errors=1, said=(
        "devlane: error: plugin seed: policy.plugins.postgres-seed is not applied",))


def second_in_repository(harness: Harness) -> tuple[str, tuple[str, ...]]:
    harness.plugin("plugins/other", admin("other"))
    return "./plugins/other", ()


def second_built_in(harness: Harness) -> tuple[str, tuple[str, ...]]:
    harness.builtin("admin-two", admin("other"))
    return "admin-two", ()


def second_by_flag(harness: Harness) -> tuple[str, tuple[str, ...]]:
    return "other", (f"--plugin-source=other={outside(harness, 'other')}",)


SECOND = {  # a second plugin the pull request adds beside the granted one -> (its name, render args)
    "a repository plugin": second_in_repository,
    "a built-in": second_built_in,
    "the operator's --plugin-source": second_by_flag,
}


@pytest.mark.parametrize("case", sorted(SECOND))
def test_a_second_plugin_does_not_get_the_first_ones_grant(harness, sandbox, case):
    args, expected = repo_base(harness)
    granted(harness, *args, expected=expected)
    name, extra = SECOND[case](harness)
    lane(harness, {"seed": "./plugins/ops", "other": name}, {"policy": {"plugins": {"./plugins/ops": GRANT}}})
    err = refused(harness, *args, *extra, said=(
        "ClusterRoleBinding/other-other-pr-7, plugin other: refused by the output policy (rule clusterScoped)",))
    assert "ops-seed-pr-7" not in err and "is not applied" not in err  # the granted one keeps its grant; none moved


def test_a_grant_pinned_by_the_operator_follows_its_commit(harness, cache):
    """No trusted ref: the operator's grant names the commit itself; the head's devlane.lock at another commit of
    the same source does not get it."""
    upstream = harness.tmp / "upstream"
    first = upstream_commit(upstream, "git")
    lane(harness, {"seed": GIT_NAME}, {"plugins": {"sources": {GIT_NAME: {"git": upstream.as_uri(), "ref": "main"}}}})
    pinned(harness)
    granted(harness, policy_file(harness, {GIT_NAME: {**GRANT, "commit": first}}), expected=["git-seed-pr-7"])
    moved = upstream_commit(upstream, "moved")
    pinned(harness, "--update", GIT_NAME)
    refused(harness, policy_file(harness, {GIT_NAME: {**GRANT, "commit": first}}), said=(
        f"the grant is for the code of commit {first[:12]} (the commit the policy file {harness.tmp / 'policy.yaml'} "
        f"names)", f"{GIT_NAME} here is {upstream.as_uri()} at commit {moved[:12]}", f"{{..., commit: {moved}}}"))
    granted(harness, policy_file(harness, {GIT_NAME: {**GRANT, "commit": moved}}), expected=["moved-seed-pr-7"])


def test_a_grant_pinned_by_digest_follows_the_code(harness, sandbox):
    ops = harness.plugin("plugins/ops", admin("ops"))
    lane(harness, {"seed": "./plugins/ops"})
    digest = plugin_digest(ops)
    granted(harness, policy_file(harness, {"./plugins/ops": {**GRANT, "digest": digest}}), expected=["ops-seed-pr-7"])
    changed = harness.plugin("plugins/ops", admin("changed"))
    refused(harness, policy_file(harness, {"./plugins/ops": {**GRANT, "digest": digest}}), said=(
        f"the grant is for the code with digest {digest} (the grant's digest)",
        f"./plugins/ops here is the repository's ./plugins/ops, digest {plugin_digest(changed)}"))


def test_without_a_trusted_ref_a_repository_plugins_grant_reaches_only_the_operators_own_code(harness):
    """The operator's policy file grants `./plugins/ops` by name and no trusted ref names its code: the pull
    request's directory does not get it (nor through a --plugin-source into the repository); the operator's own
    directory outside the repository does."""
    harness.plugin("plugins/ops", admin("ops"))
    lane(harness, {"seed": "./plugins/ops"})
    policy = policy_file(harness, {"./plugins/ops": GRANT})
    said = ("policy.plugins../plugins/ops is not applied to plugin ./plugins/ops: the grant is for no code the trusted "
            "side names (./plugins/ops is no built-in's name, and names no git source pinned, repository plugin, step "
            "or instance (no --trusted-ref is given)), so only the operator's --plugin-source code outside the "
            "repository",)
    refused(harness, policy, said=said)
    refused(harness, policy, f"--plugin-source=./plugins/ops={harness.root / 'plugins' / 'ops'}", said=said)
    granted(harness, policy, f"--plugin-source=./plugins/ops={outside(harness, 'mine')}", expected=["mine-seed-pr-7"])
