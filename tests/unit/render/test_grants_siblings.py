"""Grants bound to identities (`renderer/render/settings/grants.py`), each branch on its own case (issue 41,
points 2-3): two plugins and one grant (the other never gets it, whether it is called by its own name, as the
granted instance or step, or from a flag); a grant's `digest:`, `commit:` and both; a git source pinned by the
trusted lock; an instance or step the trusted ref defines; the operator's own code, and only theirs, for a grant
the trusted side names no code for; the head's cap per key; a trusted ref whose lock is broken. What is checked
is what a call is granted (`Grants.allowed`, the allowance the output policy applies), and that a withheld grant
is said once per render, naming the plugin, the trusted identity and the code the head resolved.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from renderer.core.source import GitRefSource, WorktreeSource
from renderer.errors import DevlaneError
from renderer.host import resolve
from renderer.host.resolve import PluginSource, plugin_digest
from renderer.host.supply import plugin_cache
from renderer.render.settings import grants as grants_module
from renderer.render.settings.grants import Grants
from renderer.render.settings.repo_config import GrantPin, PluginAllow, parse_config
from renderer.render.settings.trust import Grant, Trusted

RBAC = PluginAllow(frozenset({"rbac", "clusterScoped"}), ("ClusterRoleBinding",))
KUBE_SYSTEM = PluginAllow(namespaces=("kube-system",))
SECRETS = PluginAllow(frozenset({"secrets"}), ("Secret",))
COMMIT, OTHER_COMMIT = "c" * 40, "d" * 40
URL = "https://github.com/acme/plugins"


@pytest.fixture
def code(tmp_path, monkeypatch) -> dict[str, Path]:
    """Built-ins `postgres-seed` and `redis-seed`; the repository with two plugins of its own; the operator's code
    outside it; git checkouts of `github.com/acme/plugins` at two commits (directories `rbac` and `other`)."""
    files = {
        "builtins/postgres-seed": "A = 1\n",
        "builtins/redis-seed": "B = 2\n",
        "repo/plugins/ops": "C = 3\n",
        "repo/plugins/spy": "D = 4\n",
        "operator/mine": "E = 5\n",
        "operator/yours": "F = 6\n",
    }
    monkeypatch.setenv(plugin_cache.CACHE_ENV, str(tmp_path / "cache"))
    for commit in (COMMIT, OTHER_COMMIT):
        for sub in ("rbac", "other"):
            files[str(plugin_cache.checkout_path(commit).relative_to(tmp_path) / sub)] = f"G = '{commit}{sub}'\n"
    for rel, text in files.items():
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "main.py").write_text(text)
    monkeypatch.setattr(resolve, "builtin_root", lambda: tmp_path / "builtins")
    return {"root": tmp_path, "repo": tmp_path / "repo"}


def src(code: dict, rel: str, origin: str, name: str | None = None) -> PluginSource:
    return PluginSource(name or rel.rsplit("/", 1)[-1], (code["root"] / rel).resolve(), origin)  # type: ignore[arg-type]


def builtin(code: dict, name: str) -> PluginSource:
    return src(code, f"builtins/{name}", "builtin")


def fetched(commit: str = COMMIT, sub: str = "rbac", url: str = URL, name: str = "github.com/acme/plugins/rbac"):
    return PluginSource(name, (plugin_cache.checkout_path(commit) / sub).resolve(), "git", commit, url)


def ref_at(files: dict[str, str], ref: str = "main") -> GitRefSource:
    """A trusted ref holding `files` (a GitRefSource as grants reads it: `exists`, `read`, `export`, `ref`)."""

    def export(directory: str, dest: Path) -> bool:
        inside = {p[len(directory) + 1 :]: t for p, t in files.items() if p.startswith(directory.strip("/") + "/")}
        for rel, text in inside.items():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_text(text)
        return bool(inside)

    out = object.__new__(GitRefSource)
    out.ref = ref  # type: ignore[attr-defined]
    out.exists = lambda path: path in files  # type: ignore[method-assign]
    out.read = lambda path: files[path].encode()  # type: ignore[method-assign]
    out.export = export  # type: ignore[method-assign]
    return out


def lock(*entries: tuple[str, str, str]) -> str:
    items = "".join(f"  - {{name: '{n}', url: '{u}', ref: HEAD, commit: '{c}'}}\n" for n, u, c in entries)
    return f"apiVersion: devlane.dev/v1alpha1\nkind: Lock\nplugins:\n{items}"


def grants(
    code: dict,
    entries: dict[str, list[Grant]],
    caps: dict | None = None,
    strict: bool = False,
    ref: GitRefSource | None = None,
    ref_config: str | None = None,
    definitions=None,
) -> Grants:
    trusted = Trusted(
        {k: tuple(v) for k, v in entries.items()},
        ref=ref,
        ref_config=parse_config(ref_config.encode()) if ref_config else parse_config(None),
    )
    return Grants(trusted, caps if caps is not None else trusted.plugin_policy, code["repo"], strict, definitions)


def grant(allow: PluginAllow = RBAC, source: str = "the policy file p.yaml", **pin) -> Grant:
    return Grant(allow, source, GrantPin(**pin))


def withheld(g: Grants) -> list[str]:
    """What was said since last asked: the grant each message says it is for."""
    return [p.message.split(": the grant is for ", 1)[1] for p in g.said()]


# -- two plugins, one grant --------------------------------------------------------------------------------------


@pytest.mark.parametrize("allow", [RBAC, KUBE_SYSTEM, SECRETS], ids=["rbac", "kube-system", "secrets"])
def test_a_grant_for_one_built_in_never_reaches_the_other(code, allow):
    g = grants(code, {"postgres-seed": [grant(allow)]})
    assert g.allowed("postgres-seed", "seed", builtin(code, "postgres-seed")) == allow
    assert g.allowed("redis-seed", "cache", builtin(code, "redis-seed")) == PluginAllow()
    assert g.said() == []  # no grant was asked for under redis-seed's names: nothing to say
    # the other plugin, called as the granted plugin's instance name: still not the granted code
    assert g.allowed("redis-seed", "postgres-seed", builtin(code, "redis-seed")) == PluginAllow()
    assert withheld(g) == [
        "the built-in plugin postgres-seed (granted by the policy file p.yaml), and redis-seed here "
        "is the built-in plugin redis-seed"
    ]
    # even were the head's cap for the other key as wide: a grant is for its own key
    wide = grants(code, {"postgres-seed": [grant(allow)]}, caps={"postgres-seed": allow, "redis-seed": allow})
    assert wide.allowed("redis-seed", "cache", builtin(code, "redis-seed")) == PluginAllow()


def test_grants_for_two_plugins_each_reach_their_own(code):
    g = grants(code, {"postgres-seed": [grant(KUBE_SYSTEM)], "redis-seed": [grant(SECRETS)]})
    assert g.allowed("postgres-seed", "seed", builtin(code, "postgres-seed")) == KUBE_SYSTEM
    assert g.allowed("redis-seed", "cache", builtin(code, "redis-seed")) == SECRETS
    assert g.said() == []


def test_an_instance_grant_at_the_trusted_ref_follows_the_plugin_its_definition_names(code):
    """The trusted ref's definitions: instance `seed` is postgres-seed, `cache` is redis-seed. A grant for `seed`
    reaches postgres-seed called as `seed`, never redis-seed called as `seed`, nor postgres-seed as `cache`."""
    asked: list[int] = []

    def definitions():
        asked.append(1)
        return {"seed": ("postgres-seed",), "cache": ("redis-seed",)}

    by = ".devlane.yaml at the trusted ref main"
    g = grants(
        code, {"seed": [grant(KUBE_SYSTEM, by)], "cache": [grant(SECRETS, by)]}, ref=ref_at({}), definitions=definitions
    )
    assert g.allowed("postgres-seed", "seed", builtin(code, "postgres-seed")) == KUBE_SYSTEM
    assert g.allowed("redis-seed", "seed", builtin(code, "redis-seed")) == PluginAllow()
    assert withheld(g) == [
        f"the built-in plugin postgres-seed (granted by {by}), and redis-seed here is the built-in plugin redis-seed"
    ]
    assert g.allowed("postgres-seed", "cache", builtin(code, "postgres-seed")) == PluginAllow()
    assert g.allowed("redis-seed", "cache", builtin(code, "redis-seed")) == SECRETS
    assert len(g.said()) == 1
    # the operator's own code outside the repository: not what the trusted definition names either
    assert g.allowed("postgres-seed", "seed", src(code, "operator/mine", "flag", "postgres-seed")) == PluginAllow()
    assert len(g.said()) == 1
    assert asked == [1]  # read once, when a key first needed them


def test_definitions_count_only_at_a_trusted_git_ref(code):
    """Without a trusted ref (a policy file alone) an instance's definition is the pull request's: not read."""
    g = grants(code, {"seed": [grant(KUBE_SYSTEM)]}, definitions=lambda: {"seed": ("postgres-seed",)})
    assert g.allowed("postgres-seed", "seed", builtin(code, "postgres-seed")) == PluginAllow()
    assert withheld(g) == [
        "no code the trusted side names (seed is no built-in's name, and names no git source pinned, repository "
        "plugin, step or instance (no --trusted-ref is given)), so only the operator's --plugin-source code outside "
        "the repository (granted by the policy file p.yaml), and postgres-seed here is the built-in plugin "
        "postgres-seed"
    ]
    no_defs = grants(code, {"seed": [grant(KUBE_SYSTEM)]}, ref=ref_at({}))
    assert no_defs.allowed("postgres-seed", "seed", builtin(code, "postgres-seed")) == PluginAllow()
    assert (
        "names no git source pinned, repository plugin, step or instance at the trusted ref main)"
        in no_defs.said()[0].message
    )


def test_a_step_grant_follows_the_plugin_the_trusted_step_names(code):
    steps = (
        "pipeline: [{name: stamp, plugin: postgres-seed, stage: post-render},"
        " {name: tidy, plugin: redis-seed, stage: post-render}]\n"
    )
    g = grants(code, {"stamp": [grant(SECRETS)]}, ref=ref_at({}), ref_config=steps)
    assert g.allowed("postgres-seed", "stamp", builtin(code, "postgres-seed")) == SECRETS
    assert g.allowed("redis-seed", "stamp", builtin(code, "redis-seed")) == PluginAllow()
    assert g.allowed("postgres-seed", "tidy", builtin(code, "postgres-seed")) == PluginAllow()
    assert len(g.said()) == 1


# -- the operator's own code -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "origin", "gets"), [
    ("operator/mine", "flag", True),  # the operator's --plugin-source outside the repository
    ("repo/plugins/ops", "flag", False),  # a flag naming the pull request's directory
    ("operator/mine", "config", False),  # plugins.sources names it: the pull request chose it
    ("repo/plugins/ops", "repo", False),
    ("repo/plugins/ops", "config", False),
])  # fmt: skip
def test_a_grant_naming_no_code_reaches_only_the_operators_own_flag(code, rel, origin, gets):
    g = grants(code, {"./plugins/ops": [grant(RBAC)]})
    got = g.allowed("./plugins/ops", "ops", src(code, rel, origin, "./plugins/ops"))
    assert got == (RBAC if gets else PluginAllow())
    assert len(g.said()) == (0 if gets else 1)


def test_the_operators_flag_gets_no_grant_the_trusted_side_names_other_code_for(code):
    g = grants(code, {"postgres-seed": [grant(RBAC)]})
    assert g.allowed("postgres-seed", "seed", src(code, "operator/mine", "flag", "postgres-seed")) == PluginAllow()
    assert len(g.said()) == 1


# -- a grant's own pins ----------------------------------------------------------------------------------------------


def test_a_digest_pin_is_the_code_wherever_it_comes_from(code):
    ops = plugin_digest(code["repo"] / "plugins" / "ops")
    g = grants(code, {"ops": [grant(RBAC, digest=ops)]})
    for rel, origin in [("repo/plugins/ops", "repo"), ("repo/plugins/ops", "config"), ("repo/plugins/ops", "flag")]:
        assert g.allowed("ops", "ops", src(code, rel, origin, "ops")) == RBAC
    assert g.said() == []
    spy = src(code, "repo/plugins/spy", "repo", "ops")
    assert g.allowed("ops", "ops", spy) == PluginAllow()
    [problem] = g.said()
    assert problem.message == (
        "policy.plugins.ops is not applied to plugin ops: the grant is for the code with "
        f"digest {ops} (the grant's digest) (granted by the policy file p.yaml), and ops here "
        f"is the repository's ops, digest {plugin_digest(spy.path)}"
    )
    assert f'{{"ops": {{..., digest: {plugin_digest(spy.path)}}}}}' in problem.hint


def test_a_commit_pin_is_the_git_source_the_key_names_at_that_commit(code):
    key = "github.com/acme/plugins/rbac"
    g = grants(code, {key: [grant(RBAC, commit=COMMIT)]})
    assert g.allowed(key, "rbac", fetched()) == RBAC
    assert g.allowed(key, "rbac", fetched(url="file:///mirror/plugins")) == RBAC  # the commit, from anywhere
    for other in (fetched(OTHER_COMMIT), fetched(sub="other")):
        assert g.allowed(key, "rbac", other) == PluginAllow()
    assert g.allowed(key, "rbac", src(code, "repo/plugins/ops", "repo", key)) == PluginAllow()
    said = g.said()
    assert len(said) == 3
    assert (
        said[0]
        .message.split(": the grant is for ")[1]
        .startswith(f"the code of commit {COMMIT[:12]} in rbac (the commit the policy file p.yaml names) (granted by")
    )
    assert f'{{"{key}": {{..., commit: {OTHER_COMMIT}}}}}' in said[0].hint


def test_a_commit_pin_follows_a_plugins_sources_git_entry_and_a_key_that_is_no_git_source_gets_nothing(code):
    sources = f"plugins: {{sources: {{rbac: {{git: '{URL}'}}}}}}\n"
    g = grants(code, {"rbac": [grant(RBAC, commit=COMMIT)]}, ref=ref_at({}), ref_config=sources)
    assert g.allowed("rbac", "rbac", fetched(sub="")) == RBAC  # the whole repository at the commit
    assert g.allowed("rbac", "rbac", fetched(sub="rbac")) == PluginAllow()
    g = grants(code, {"postgres-seed": [grant(RBAC, commit=COMMIT)]})
    assert g.allowed("postgres-seed", "seed", builtin(code, "postgres-seed")) == PluginAllow()
    assert withheld(g)[0].startswith(
        f"the code of commit {COMMIT[:12]} (the commit the policy file p.yaml names, but "
        "postgres-seed is no git source) (granted by"
    )


def test_a_commit_pin_on_a_step_follows_the_git_source_the_trusted_step_names(code):
    step = "pipeline: [{name: stamp, plugin: github.com/acme/plugins/rbac, stage: post-render}]\n"
    g = grants(code, {"stamp": [grant(RBAC, commit=COMMIT)]}, ref=ref_at({}), ref_config=step)
    assert g.allowed("github.com/acme/plugins/rbac", "stamp", fetched()) == RBAC
    assert g.allowed("github.com/acme/plugins/rbac", "stamp", fetched(OTHER_COMMIT)) == PluginAllow()
    assert g.allowed("github.com/acme/plugins/rbac", "stamp", fetched(sub="other")) == PluginAllow()


@pytest.mark.parametrize(("digest_ok", "commit_ok"), [(True, True), (True, False), (False, True), (False, False)])
def test_a_grant_pinning_both_needs_both(code, digest_ok, commit_ok):
    key = "github.com/acme/plugins/rbac"
    real = plugin_digest(fetched().path)
    g = grants(
        code,
        {
            key: [
                grant(
                    RBAC,
                    digest=real if digest_ok else "sha256:" + "0" * 64,
                    commit=COMMIT if commit_ok else OTHER_COMMIT,
                )
            ]
        },
    )
    assert g.allowed(key, "rbac", fetched()) == (RBAC if digest_ok and commit_ok else PluginAllow())
    if not (digest_ok and commit_ok):
        assert " and the code of commit " in withheld(g)[0]


# -- the trusted lock ----------------------------------------------------------------------------------------------


def test_a_git_source_is_the_commit_the_trusted_lock_pins(code):
    key = "github.com/acme/plugins/rbac"
    g = grants(
        code,
        {key: [grant(RBAC, ".devlane.yaml at the trusted ref main")]},
        ref=ref_at({"devlane.lock": lock((key, URL, COMMIT))}),
    )
    assert g.allowed(key, "rbac", fetched()) == RBAC
    assert g.allowed(key, "rbac", fetched(OTHER_COMMIT)) == PluginAllow()  # the head's lock moved
    assert g.allowed(key, "rbac", fetched(url="https://github.com/mallory/plugins")) == PluginAllow()
    assert withheld(g)[0].startswith(f"{URL}/rbac at commit {COMMIT[:12]} (devlane.lock at the trusted ref main)")


@pytest.mark.parametrize("text", ["plugins: [", "plugins: {a: 1}\n", "kind: Other\n"])
def test_a_broken_lock_at_the_trusted_ref_pins_nothing_and_leaves_the_built_ins_alone(code, text):
    key = "github.com/acme/plugins/rbac"
    g = grants(code, {key: [grant(RBAC)], "postgres-seed": [grant(SECRETS)]}, ref=ref_at({"devlane.lock": text}))
    assert g.allowed(key, "rbac", fetched()) == PluginAllow()
    assert len(g.said()) == 1
    assert g.allowed("postgres-seed", "seed", builtin(code, "postgres-seed")) == SECRETS


def test_a_trusted_entry_that_names_no_usable_source_names_no_code(code, monkeypatch):
    def broken(name, *args):
        raise DevlaneError([])

    monkeypatch.setattr(grants_module, "trusted_identity", broken)
    g = grants(code, {"postgres-seed": [grant(RBAC)]})
    assert g.allowed("postgres-seed", "seed", builtin(code, "postgres-seed")) == PluginAllow()
    assert g.allowed("postgres-seed", "seed", src(code, "operator/mine", "flag", "postgres-seed")) == RBAC


# -- the head's cap, the keys of one call, and what is said ---------------------------------------------------------


def test_each_key_is_capped_by_the_heads_entry_for_that_key(code):
    both = PluginAllow(frozenset({"rbac", "secrets"}), ("Secret", "Job"), ("kube-system", "data"))
    g = grants(
        code,
        {
            "postgres-seed": [grant(both)],
            "seed": [grant(SECRETS, digest=plugin_digest(code["root"] / "builtins" / "postgres-seed"))],
        },
        caps={"postgres-seed": PluginAllow(frozenset({"rbac"}), ("Job",), ("data",))},
    )
    got = g.allowed("postgres-seed", "seed", builtin(code, "postgres-seed"))
    assert got == PluginAllow(frozenset({"rbac"}), ("Job",), ("data",))  # `seed` has no cap: the head dropped it
    assert g.said() == []


def test_a_call_named_the_same_as_plugin_and_instance_is_said_once(code):
    g = grants(code, {"postgres-seed": [grant(RBAC)]})
    assert g.allowed("postgres-seed", "postgres-seed", builtin(code, "redis-seed")) == PluginAllow()
    assert len(g.said()) == 1


def test_review_says_what_each_known_call_is_withheld_and_each_render_says_it_again(code):
    class Choice:
        def __init__(self, name, source):
            self.name, self.source = name, source

    g = grants(code, {"postgres-seed": [grant(RBAC)]}, strict=True)
    calls = [
        ("seed", Choice("postgres-seed", builtin(code, "postgres-seed"))),
        ("spy", Choice("postgres-seed", src(code, "repo/plugins/spy", "repo", "postgres-seed"))),
        ("spy", Choice("postgres-seed", src(code, "repo/plugins/spy", "repo", "postgres-seed"))),
    ]
    said = g.review(calls)  # type: ignore[arg-type]
    assert [(p.where.plugin, p.severity, p.code) for p in said] == [("spy", "error", "grant-identity")]
    assert g.review(calls) == []  # type: ignore[arg-type]
    assert len(g.for_render().review(calls)) == 1  # type: ignore[arg-type]
    assert len(g.withheld) == 1  # the other render kept its own record


def test_a_key_granted_twice_says_each_grant_and_how_to_let_the_code_have_it(code):
    by = ".devlane.yaml at the trusted ref main"
    g = grants(code, {"postgres-seed": [grant(RBAC), grant(SECRETS, by)]})
    assert g.allowed("postgres-seed", "seed", builtin(code, "redis-seed")) == PluginAllow()
    [problem] = g.said()
    assert problem.message == (
        "policy.plugins.postgres-seed is not applied to plugin postgres-seed: the grant is for the built-in plugin "
        "postgres-seed (granted by the policy file p.yaml); the built-in plugin postgres-seed (granted by "
        f"{by}), and postgres-seed here is the built-in plugin redis-seed"
    )
    assert problem.hint.endswith(
        "let the change reach the trusted base (--trusted-ref) so that its .devlane.yaml and devlane.lock name it"
    )


# -- the trusted side's code, worked out once -------------------------------------------------------------------


def test_the_trusted_ref_and_each_plugins_code_are_read_once_per_command(code, monkeypatch):
    """Identities and digests are worked out once per command and shared by every render's view: the trusted ref's
    lock, the plugin its definition of `seed` names (by digest), and the head's code for each call are each read
    once, however many calls and renders ask, and a withheld grant's message says the digest already read."""
    ops = src(code, "repo/plugins/ops", "repo", "./plugins/ops")
    spy = src(code, "repo/plugins/spy", "repo", "./plugins/ops")
    spy_digest = plugin_digest(spy.path)
    reads: list[tuple[str, object]] = []
    ref = ref_at(
        {"devlane.lock": lock(("github.com/acme/plugins/rbac", URL, COMMIT)), "plugins/ops/main.py": "C = 3\n"}
    )

    def logged(name: str, method):
        def call(*args):
            reads.append((name, args[0]))
            return method(*args)

        return call

    for name in ("exists", "read", "export"):
        monkeypatch.setattr(ref, name, logged(name, getattr(ref, name)))
    read_bytes = Path.read_bytes

    def hashed(path: Path) -> bytes:
        if path.is_relative_to(code["repo"]):
            reads.append(("code", path))
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", hashed)
    g = grants(
        code,
        {"seed": [grant(KUBE_SYSTEM, ".devlane.yaml at the trusted ref main")]},
        ref=ref,
        definitions=lambda: {"seed": ("./plugins/ops",)},
    )
    for view in (g, g.for_render()):
        for _ in range(2):
            assert view.allowed("./plugins/ops", "seed", ops) == KUBE_SYSTEM
            assert view.allowed("./plugins/ops", "seed", spy) == PluginAllow()
        [problem] = view.said()
        assert problem.message.endswith(f"is the repository's ./plugins/ops, digest {spy_digest}")
    assert ("export", "plugins/ops") in reads and ("code", spy.path / "main.py") in reads
    assert [what for what, times in Counter(reads).items() if times > 1] == []


def test_a_trusted_ref_that_is_no_git_ref_names_no_code(code):
    """Only a git ref is the trusted side: a work tree (the pull request's own files) given as the trusted ref names
    no code, not even by the lock it holds."""
    key = "github.com/acme/plugins/rbac"
    (code["repo"] / "devlane.lock").write_text(lock((key, URL, COMMIT)))
    g = grants(code, {key: [grant(RBAC)]}, ref=WorktreeSource(code["repo"]))
    assert g.allowed(key, "rbac", fetched()) == PluginAllow()
    [problem] = g.said()
    assert re.search(
        r"names no git source pinned, repository plugin, step or instance at the trusted ref *\), so "
        r"only the operator's --plugin-source code outside the repository \(granted by",
        problem.message,
    )


@pytest.mark.parametrize(
    "code_of",
    [lambda c: builtin(c, "postgres-seed"), lambda c: fetched(), lambda c: fetched(sub="")],
    ids=["built-in", "git-directory", "git-checkout"],
)
def test_a_commit_pin_on_a_key_that_is_no_git_source_reaches_no_code(code, code_of):
    """Not the built-in the key names, nor any git code at that commit, even the whole checkout."""
    g = grants(code, {"postgres-seed": [grant(RBAC, commit=COMMIT)]})
    assert g.allowed("postgres-seed", "seed", code_of(code)) == PluginAllow()
    assert withheld(g)[0].startswith(
        f"the code of commit {COMMIT[:12]} (the commit the policy file p.yaml names, but "
        "postgres-seed is no git source) (granted by"
    )


ONE = "the code of commit " + COMMIT[:12] + " in {} (the commit the policy file p.yaml names)"


@pytest.mark.parametrize(("pin", "defined", "gets", "other", "meant"), [
    ({}, ("postgres-seed", "redis-seed"), [lambda c: builtin(c, "postgres-seed"), lambda c: builtin(c, "redis-seed")],
     lambda c: src(c, "repo/plugins/spy", "repo", "spy"),
     "the built-in plugin postgres-seed or the built-in plugin redis-seed"),
    ({"commit": COMMIT}, ("github.com/acme/plugins/rbac", "github.com/acme/plugins/other"),
     [lambda c: fetched(), lambda c: fetched(sub="other")], lambda c: fetched(OTHER_COMMIT),
     f"{ONE.format('rbac')} or {ONE.format('other')}"),
], ids=["by-name", "commit-pin"])  # fmt: skip
def test_an_instance_defined_as_two_plugins_grants_either_and_says_both(code, pin, defined, gets, other, meant):
    """The trusted definition of `seed` names a plugin and an implementation: a grant for `seed` (with a `commit:`
    pin: at that commit) reaches each, and other code is told each of them."""
    g = grants(code, {"seed": [grant(RBAC, **pin)]}, ref=ref_at({}), definitions=lambda: {"seed": defined})
    for code_of in gets:
        assert g.allowed("plugin", "seed", code_of(code)) == RBAC
    assert g.allowed("plugin", "seed", other(code)) == PluginAllow()
    assert withheld(g) == [
        f"{meant} (granted by the policy file p.yaml), and plugin here is {resolve.describe_source(other(code))}"
    ]
