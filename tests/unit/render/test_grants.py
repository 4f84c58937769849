"""Grants bound to identities (`renderer/render/settings/grants.py`, `renderer/host/resolve.Identity`), in-process:
what identity matches which code, what a call gets (the head's cap, both keys, every matching source), what is
withheld and how it is said; and the `commit`/`digest` keys of a grant as the config parser reads them. The
attacks themselves, through real plugins and git repositories, are in tests/security/test_grants_identity.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.errors import DevlaneError, PluginError, Problem
from renderer.host import resolve
from renderer.host.resolve import Identity, PluginSource, plugin_digest, trusted_identity
from renderer.host.supply import plugin_cache
from renderer.host.supply.lock import Lock
from renderer.render.settings.grants import Grants
from renderer.render.settings.repo_config import GrantPin, PluginAllow, parse_config
from renderer.render.settings.trust import Grant, Trusted

SWITCHES = st.frozensets(st.sampled_from(["clusterScoped", "rbac", "privileged", "secrets"]))
COMMIT = "a" * 40


@pytest.fixture(scope="module")
def code(tmp_path_factory) -> dict[str, Path]:
    """A built-in catalogue with `postgres-seed`, a repository with a copy of it and another plugin, and the
    operator's own plugin outside the repository."""
    root = tmp_path_factory.mktemp("grants")
    for rel, text in {"builtins/postgres-seed": "A = 1\n", "repo/postgres-seed": "A = 1\n",
                      "repo/plugins/ops": "B = 2\n", "operator/mine": "C = 3\n"}.items():
        (root / rel).mkdir(parents=True)
        (root / rel / "main.py").write_text(text)
    return {"root": root, "builtins": root / "builtins", "repo": root / "repo"}


@pytest.fixture
def catalogue(code, monkeypatch):
    monkeypatch.setattr(resolve, "builtin_root", lambda: code["builtins"])
    return code


def source(code: dict, rel: str, origin: str, name: str | None = None, **kw) -> PluginSource:
    return PluginSource(name or rel.split("/")[-1], (code["root"] / rel).resolve(), origin, **kw)  # type: ignore[arg-type]


def grants(code: dict, entries: dict[str, list[Grant]], caps: dict | None = None, strict: bool = False) -> Grants:
    trusted = Trusted({k: tuple(v) for k, v in entries.items()})
    return Grants(trusted, caps if caps is not None else trusted.plugin_policy, code["repo"], strict)


RBAC = PluginAllow(frozenset({"rbac"}), ("ClusterRoleBinding",))


# -- identities ------------------------------------------------------------------------------------------------


def test_the_built_in_is_its_identity_and_a_copy_of_its_code_elsewhere_is_not(catalogue):
    builtin = Identity("builtin", "postgres-seed")
    assert builtin.matches(source(catalogue, "builtins/postgres-seed", "builtin"))
    for rel, origin in [("repo/postgres-seed", "repo"), ("repo/postgres-seed", "config"),
                        ("builtins/postgres-seed", "flag")]:  # even the built-in's own directory, by a flag
        assert not builtin.matches(source(catalogue, rel, origin, "postgres-seed"))
    assert trusted_identity("postgres-seed", None, {"postgres-seed": {"path": "x"}}, Lock()) == builtin
    assert trusted_identity("./plugins/ops", None, {}, Lock()) is None  # no trusted ref names a repository plugin


def test_a_digest_is_the_code_wherever_it_comes_from(catalogue):
    same = Identity("digest", plugin_digest(catalogue["builtins"] / "postgres-seed"))
    assert all(same.matches(source(catalogue, rel, origin)) for rel, origin in [
        ("builtins/postgres-seed", "builtin"), ("repo/postgres-seed", "repo"), ("repo/postgres-seed", "flag")])
    assert not same.matches(source(catalogue, "repo/plugins/ops", "repo"))


def test_a_git_identity_is_the_commit_and_the_directory_and_the_trusted_lock_adds_the_url(tmp_path, monkeypatch):
    monkeypatch.setenv(plugin_cache.CACHE_ENV, str(tmp_path))
    checkout = plugin_cache.checkout_path(COMMIT)
    url = "https://github.com/acme/plugins"

    def fetched(commit: str = COMMIT, sub: str = "rbac", at: str = url) -> PluginSource:
        return PluginSource("github.com/acme/plugins/rbac", (plugin_cache.checkout_path(commit) / sub).resolve(),
                            "git", commit, at)

    locked = Identity("git", url, COMMIT, "rbac")
    assert locked.matches(fetched()) and checkout.resolve() / "rbac" == fetched().path
    assert not locked.matches(fetched(commit="b" * 40)) and not locked.matches(fetched(sub="other"))
    assert not locked.matches(fetched(at="https://github.com/mallory/plugins"))
    pinned = Identity("git", url, COMMIT, "rbac", any_url=True)  # a grant's own commit: the code, from anywhere
    assert pinned.matches(fetched(at="file:///mirror/plugins")) and not pinned.matches(fetched(sub=""))
    assert not Identity("git", "", COMMIT, any_url=True).matches(fetched())  # no location known: nothing matches
    assert not locked.matches(PluginSource("x", fetched().path, "flag"))


# -- what a call gets --------------------------------------------------------------------------------------------


def test_a_grant_for_the_built_in_reaches_only_the_built_in(catalogue):
    g = grants(catalogue, {"postgres-seed": [Grant(RBAC, "the policy file p.yaml")]})
    assert g.allowed("postgres-seed", "seed", source(catalogue, "builtins/postgres-seed", "builtin")) == RBAC
    assert g.said() == []
    flag = source(catalogue, "operator/mine", "flag", "postgres-seed")
    assert g.allowed("postgres-seed", "seed", flag) == PluginAllow()
    [problem] = g.said()
    assert problem.severity == "warning" and problem.code == "grant-identity" and problem.where.plugin == "seed"
    assert problem.message == (
        "policy.plugins.postgres-seed is not applied to plugin postgres-seed: the grant is for the built-in plugin "
        "postgres-seed (granted by the policy file p.yaml), and postgres-seed here is --plugin-source "
        f"postgres-seed={flag.path}, digest {plugin_digest(flag.path)}")
    assert f'{{"postgres-seed": {{..., digest: {plugin_digest(flag.path)}}}}}' in problem.hint
    assert g.allowed("postgres-seed", "seed", flag) == PluginAllow() and g.said() == []  # said once per render
    again = g.for_render()
    again.allowed("postgres-seed", "seed", flag)
    assert len(again.said()) == 1  # the next render says it again


def test_grants_for_the_plugin_and_the_instance_add_up_each_as_far_as_the_head_keeps_it(catalogue):
    secrets = PluginAllow(frozenset({"secrets", "privileged"}), ("Secret",))
    pin = GrantPin(digest=plugin_digest(catalogue["repo"] / "plugins" / "ops"))
    g = grants(catalogue, {"./plugins/ops": [Grant(RBAC, "the policy file p.yaml", pin)],
                           "seed": [Grant(secrets, "the policy file p.yaml", pin)]},
               caps={"./plugins/ops": RBAC, "seed": PluginAllow(frozenset({"secrets"}), ("Secret",))})
    got = g.allowed("./plugins/ops", "seed", source(catalogue, "repo/plugins/ops", "repo", "./plugins/ops"))
    assert got.allow == {"rbac", "secrets"} and set(got.kinds) == {"ClusterRoleBinding", "Secret"}


def test_a_grant_no_trusted_side_names_reaches_only_the_operators_own_code(catalogue):
    g = grants(catalogue, {"./plugins/ops": [Grant(RBAC, "the policy file p.yaml")]})
    mine = source(catalogue, "operator/mine", "flag", "./plugins/ops")
    assert g.allowed("./plugins/ops", "seed", mine) == RBAC
    for src in (source(catalogue, "repo/plugins/ops", "repo", "./plugins/ops"),
                source(catalogue, "repo/plugins/ops", "flag", "./plugins/ops")):  # a flag into the repository
        assert g.allowed("./plugins/ops", "seed", src) == PluginAllow()
    assert [p.message.split(": the grant is for ")[1].split(" (")[0] for p in g.said()] == [
        "no code the trusted side names"] * 2


def test_a_withheld_grant_is_an_error_under_strict_and_explains_a_refusal(catalogue):
    g = grants(catalogue, {"postgres-seed": [Grant(RBAC, "the policy file p.yaml")]}, strict=True)
    g.allowed("postgres-seed", "seed", source(catalogue, "repo/postgres-seed", "repo"))
    assert [p.severity for p in g.withheld] == ["error"]
    refusal = Problem("refused by the output policy (rule rbac)")
    with pytest.raises(PluginError) as info, g.explaining():
        raise PluginError([refusal])
    assert info.value.problems == [*g.withheld, refusal]  # the cause first, the same kind of error
    with pytest.raises(DevlaneError) as info, grants(catalogue, {}).explaining():
        raise DevlaneError([refusal])
    assert info.value.problems == [refusal]


@given(cap=SWITCHES, granted=st.lists(st.tuples(SWITCHES, st.booleans()), min_size=1, max_size=4))
def test_a_call_gets_exactly_the_matching_grants_within_the_cap(code, cap, granted):
    """Whatever the grants of the trusted sources, a call gets the union of those whose identity its code has,
    within the head's cap for the key; one that does not match adds nothing."""
    real = plugin_digest(code["repo"] / "plugins" / "ops")
    entries = [Grant(PluginAllow(allow), f"source {i}", GrantPin(digest=real if match else "sha256:" + "0" * 64))
               for i, (allow, match) in enumerate(granted)]
    g = grants(code, {"ops": entries}, caps={"ops": PluginAllow(cap)})
    got = g.allowed("ops", "ops", source(code, "repo/plugins/ops", "repo", "ops"))
    matching = frozenset().union(*(allow for allow, match in granted if match))
    assert got.allow == (cap & matching if any(m for _, m in granted) else frozenset())
    assert len(g.said()) == (0 if any(m for _, m in granted) else 1)


# -- the keys of a grant ------------------------------------------------------------------------------------------


def test_commit_and_digest_are_read_and_checked():
    digest = "sha256:" + "e" * 64
    cfg = parse_config(f"policy: {{plugins: {{a: {{allow: [rbac], commit: {COMMIT}}}, b: {{digest: '{digest}'}}, "
                       "c: {allow: [rbac]}}}\n".encode())
    assert cfg.plugin_pins == {"a": GrantPin(commit=COMMIT), "b": GrantPin(digest=digest)}
    trusted = Trusted().merged(cfg, "the policy file p.yaml").merged(parse_config(b"policy: {plugins: {a: {}}}"), "ref")
    assert [g.source for g in trusted.grants["a"]] == ["the policy file p.yaml", "ref"]
    assert trusted.grants["a"][0].pin == GrantPin(commit=COMMIT) and trusted.plugin_policy["a"].allow == {"rbac"}
    for bad, path in [(b"policy: {plugins: {x: {commit: abc123}}}", "policy.plugins.x.commit"),
                      (b"policy: {plugins: {x: {digest: 'md5:0f'}}}", "policy.plugins.x.digest"),
                      (f"policy: {{plugins: {{x: {{digest: '{digest}\\n'}}}}}}".encode(), "policy.plugins.x.digest")]:
        with pytest.raises(DevlaneError) as info:
            parse_config(bad)
        assert info.value.problems[0].message.startswith(path), info.value.problems
