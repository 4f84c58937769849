"""The head may tighten, never relax (`renderer/render/settings/trust.py`), field by field (issue 41, points 2-3).

Every field of the policy a pull request's own `.devlane.yaml` could use to relax devlane's safety has its own case:
each `policy.plugins.<key>` switch (`allow`: clusterScoped, rbac, privileged, secrets), `kinds` and `namespaces`
(`kube-system`), each `plugins.limits` key, each `policy.budget` limit, `footprint.prices` (which price that
budget) and `lifecycle.ttl` and `.quota`. For each: the head alone gets nothing of it (one problem naming the
setting, a warning or under strict an error), the operator's policy file and the `.devlane.yaml` at the trusted
ref each can grant it, and the head may keep it only as far as they do. Grants are per key: one plugin's grant is
never another's. What is checked is the configuration devlane goes on with (`confine`'s result, and the lifecycle
settings built from it), not the problems it reports. The renders that act on it are in
tests/security/test_trust_refusals.py.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
import yaml

from renderer.render.settings.lifecycle import Budget, budget_of, prices_of
from renderer.render.settings.render_settings import lifecycle_settings
from renderer.render.settings.repo_config import GrantPin, PluginAllow, RepoConfig, parse_config
from renderer.render.settings.trust import POLICY_ENV, Grant, Trusted, confine, read_trusted

# Every field of a `policy.plugins.<key>` entry, one value each (written here, never taken from the code)
ENTRY_FIELDS = {
    "allow clusterScoped": {"allow": ["clusterScoped"]},
    "allow rbac": {"allow": ["rbac"]},
    "allow privileged": {"allow": ["privileged"]},
    "allow secrets": {"allow": ["secrets"]},
    "kinds Secret": {"kinds": ["Secret"]},
    "kinds rds.services.k8s.aws/DBInstance": {"kinds": ["rds.services.k8s.aws/DBInstance"]},
    "namespaces kube-system": {"namespaces": ["kube-system"]},
    "namespaces default": {"namespaces": ["default"]},
}
EVERYTHING = {"allow": ["clusterScoped", "rbac", "privileged", "secrets"],
              "kinds": ["Secret", "rds.services.k8s.aws/DBInstance"], "namespaces": ["kube-system", "default"]}
# The defaults of plugins.limits (the schema's description says them too)
DEFAULT_LIMITS = {"memoryMiB": 2048, "processes": 256, "fileSizeMiB": 256, "cpuSeconds": 120}
# Each policy.budget limit: (tight, loose) as written, and the Budget attribute it becomes
BUDGET = {
    "devCopies": (2, 20, "dev_copies"),
    "cpu": ("2", "16", "cpu"),
    "memory": ("4Gi", "64Gi", "memory"),
    "storage": ("10Gi", "1Ti", "storage"),
    "resources": ({"rds.services.k8s.aws/DBInstance": 1}, {"rds.services.k8s.aws/DBInstance": 9}, "resources"),
    "costPerDay": (5, 500, "cost_per_day"),
    "lanes": (3, 300, "lanes"),
}
POLICY = "the policy file p.yaml"


def config(**sections) -> RepoConfig:
    return parse_config(dumped(**sections).encode())


def entry(**fields) -> dict:
    return {"policy": {"plugins": fields}}


class Ref:
    """The repository at a trusted ref, as `read_trusted` reads it (a `.devlane.yaml` or none)."""

    def __init__(self, text: str | None, ref: str = "main"):
        self.text, self.ref = text, ref

    def exists(self, path: str) -> bool:
        return path == ".devlane.yaml" and self.text is not None

    def read(self, path: str) -> bytes:
        assert path == ".devlane.yaml" and self.text is not None
        return self.text.encode()


def dumped(**sections) -> str:
    return yaml.safe_dump({"apiVersion": "devlane.dev/v1alpha1", "kind": "Config", **sections}, sort_keys=False)


def trusted_by(where: str, tmp_path, **sections) -> Trusted:
    """The trusted side granting `sections`: the operator's policy file, or the `.devlane.yaml` at the trusted
    ref."""
    if where == "policy":
        path = tmp_path / "p.yaml"
        path.write_text(dumped(**sections))
        return read_trusted(path, None)
    return read_trusted(None, Ref(dumped(**sections)))  # type: ignore[arg-type]


def as_allow(fields: dict) -> PluginAllow:
    return PluginAllow(frozenset(fields.get("allow", ())), tuple(fields.get("kinds", ())),
                       tuple(fields.get("namespaces", ())))


# -- policy.plugins: each field of an entry ------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("field", sorted(ENTRY_FIELDS))
def test_the_head_alone_gets_no_field_of_an_entry(field, strict):
    effective, problems = confine(config(**entry(seed=ENTRY_FIELDS[field])), Trusted(), strict)
    assert effective.plugin_policy == {"seed": PluginAllow()}
    [problem] = problems
    assert problem.message == (f"policy.plugins.seed ({field}) relaxes devlane's safety, which only a trusted source "
                               "may do (no trusted source is given); ignored")
    assert problem.severity == ("error" if strict else "warning") and problem.code == "untrusted-relaxation"
    assert problem.where.file == ".devlane.yaml" and "--policy FILE" in problem.hint and "--trusted-ref" in problem.hint


@pytest.mark.parametrize("where", ["policy", "ref"])
@pytest.mark.parametrize("field", sorted(ENTRY_FIELDS))
def test_a_trusted_source_grants_each_field_and_the_head_may_keep_it(tmp_path, field, where):
    trusted = trusted_by(where, tmp_path, **entry(seed=ENTRY_FIELDS[field]))
    granted = as_allow(ENTRY_FIELDS[field])
    for head in (config(), config(**entry(seed=ENTRY_FIELDS[field]))):  # silent, or asking just as much
        effective, problems = confine(head, trusted, strict=True)
        assert effective.plugin_policy == {"seed": granted} and problems == []


@pytest.mark.parametrize("where", ["policy", "ref"])
@pytest.mark.parametrize("field", sorted(ENTRY_FIELDS))
def test_the_head_keeps_everything_granted_but_the_one_field_that_is_not(tmp_path, field, where):
    """The trusted side grants every field but one; the head asks for all: it loses exactly that one."""
    rest = {k: [v for v in values if f"{k} {v}" != field] for k, values in EVERYTHING.items()}
    trusted = trusted_by(where, tmp_path, **entry(seed=rest))
    effective, problems = confine(config(**entry(seed=EVERYTHING)), trusted, strict=False)
    assert effective.plugin_policy == {"seed": as_allow(rest)}
    [problem] = problems
    assert problem.message.startswith(f"policy.plugins.seed ({field}) relaxes devlane's safety")
    assert ("p.yaml" if where == "policy" else ".devlane.yaml at the trusted ref main") in problem.message


@pytest.mark.parametrize("field", sorted(ENTRY_FIELDS))
def test_the_head_may_narrow_a_grant(tmp_path, field):
    trusted = trusted_by("policy", tmp_path, **entry(seed=EVERYTHING))
    effective, problems = confine(config(**entry(seed=ENTRY_FIELDS[field])), trusted, strict=True)
    assert effective.plugin_policy == {"seed": as_allow(ENTRY_FIELDS[field])} and problems == []
    effective, problems = confine(config(**entry(seed={})), trusted, strict=True)  # an empty entry: nothing
    assert effective.plugin_policy == {"seed": PluginAllow()} and problems == []


@pytest.mark.parametrize("field", sorted(ENTRY_FIELDS))
def test_one_plugins_grant_is_never_anothers(tmp_path, field):
    """The operator grants `seed`; the head asks the same for `other` (a second plugin, or an instance): `other`
    gets nothing, `seed` keeps its grant."""
    trusted = trusted_by("policy", tmp_path, **entry(seed=ENTRY_FIELDS[field]))
    effective, problems = confine(config(**entry(other=ENTRY_FIELDS[field])), trusted, strict=False)
    assert effective.plugin_policy == {"other": PluginAllow(), "seed": as_allow(ENTRY_FIELDS[field])}
    [problem] = problems
    assert problem.message.startswith(f"policy.plugins.other ({field}) relaxes")
    assert "p.yaml); ignored" in problem.message
    both = trusted_by("policy", tmp_path, **entry(seed=ENTRY_FIELDS[field], other={}))
    effective, _ = confine(config(**entry(other=ENTRY_FIELDS[field], seed=ENTRY_FIELDS[field])), both, False)
    assert effective.plugin_policy == {"other": PluginAllow(), "seed": as_allow(ENTRY_FIELDS[field])}


def test_what_the_head_loses_is_said_in_one_problem_per_entry_in_a_stable_order():
    effective, problems = confine(config(**entry(b={"allow": ["secrets", "rbac"], "kinds": ["Secret", "Job"],
                                                    "namespaces": ["kube-system", "data"]},
                                                 a={"namespaces": ["x"]})), Trusted(), strict=False)
    assert [p.message.split(" relaxes")[0] for p in problems] == [
        "policy.plugins.b (allow rbac, allow secrets, kinds Secret, kinds Job, namespaces kube-system, "
        "namespaces data)",
        "policy.plugins.a (namespaces x)"]
    assert effective.plugin_policy == {"a": PluginAllow(), "b": PluginAllow()}


def test_the_grants_of_every_trusted_source_add_up_and_each_is_named(tmp_path, monkeypatch):
    (tmp_path / "p.yaml").write_text(dumped(**entry(seed={"allow": ["secrets"], "namespaces": ["data"]})))
    ref = Ref(dumped(**entry(seed={"allow": ["rbac"], "kinds": ["Secret"]}, commit={"digest": "sha256:" + "a" * 64})),
              "base")
    trusted = read_trusted(tmp_path / "p.yaml", ref)  # type: ignore[arg-type]
    assert trusted.sources == (f"the policy file {tmp_path / 'p.yaml'}", ".devlane.yaml at the trusted ref base")
    assert trusted.plugin_policy["seed"] == PluginAllow(frozenset({"secrets", "rbac"}), ("Secret",), ("data",))
    assert [g.source for g in trusted.grants["seed"]] == list(trusted.sources)
    assert trusted.grants["commit"][0].pin == GrantPin(digest="sha256:" + "a" * 64)
    assert trusted.ref is ref and trusted.ref_config.plugin_policy["seed"].allow == {"rbac"}
    _, problems = confine(config(**entry(seed={"allow": ["privileged"]})), trusted, strict=False)
    assert f"(the policy file {tmp_path / 'p.yaml'} or .devlane.yaml at the trusted ref base)" in problems[0].message
    monkeypatch.setenv(POLICY_ENV, str(tmp_path / "p.yaml"))  # $DEVLANE_POLICY when no --policy is given
    assert read_trusted(None, None).plugin_policy["seed"].allow == {"secrets"}
    assert read_trusted(None, Ref(None)).sources == (f"the policy file {tmp_path / 'p.yaml'}",)  # no config there
    monkeypatch.setenv(POLICY_ENV, "")
    assert read_trusted(None, None) == Trusted()


# -- plugins.limits: each key --------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(DEFAULT_LIMITS))
def test_the_head_may_lower_each_limit_and_never_raise_it(key):
    default = DEFAULT_LIMITS[key]
    for asked, kept, said in [(default * 2, default, True), (default + 1, default, True), (default, default, False),
                              (default // 2, default // 2, False)]:
        effective, problems = confine(config(plugins={"limits": {key: asked}}), Trusted(), strict=False)
        assert effective.plugin_limits == {key: kept}
        assert [p.message.split(" relaxes")[0] for p in problems] == (
            [f"plugins.limits.{key} ({asked}, above {default})"] if said else [])


@pytest.mark.parametrize("where", ["policy", "ref"])
@pytest.mark.parametrize("key", sorted(DEFAULT_LIMITS))
def test_a_trusted_source_raises_each_limit_and_the_head_may_go_up_to_it(tmp_path, key, where):
    high = DEFAULT_LIMITS[key] * 4
    trusted = trusted_by(where, tmp_path, plugins={"limits": {key: high}})
    assert confine(config(), trusted, strict=True)[0].plugin_limits == {key: high}  # the head says nothing
    effective, problems = confine(config(plugins={"limits": {key: high // 2}}), trusted, strict=True)
    assert effective.plugin_limits == {key: high // 2} and problems == []
    effective, problems = confine(config(plugins={"limits": {key: high + 1}}), trusted, strict=True)
    assert effective.plugin_limits == {key: high}
    assert [p.message.split(" relaxes")[0] for p in problems] == [f"plugins.limits.{key} ({high + 1}, above {high})"]


def test_the_highest_trusted_limit_counts_and_unlimited_keys_stay_at_the_default(tmp_path):
    (tmp_path / "p.yaml").write_text(dumped(plugins={"limits": {"memoryMiB": 8192, "processes": 64,
                                                                "fileSizeMiB": 512}}))
    ref = Ref(dumped(plugins={"limits": {"memoryMiB": 4096, "processes": 512}}))
    trusted = read_trusted(tmp_path / "p.yaml", ref)  # type: ignore[arg-type]
    assert trusted.limits == {"memoryMiB": 8192, "processes": 512, "fileSizeMiB": 512}
    effective, problems = confine(config(plugins={"limits": {"cpuSeconds": 600, "fileSizeMiB": 16}}), trusted, False)
    assert effective.plugin_limits == {"memoryMiB": 8192, "processes": 512, "cpuSeconds": 120, "fileSizeMiB": 16}
    assert [p.message.split(" relaxes")[0] for p in problems] == ["plugins.limits.cpuSeconds (600, above 120)"]


# -- policy.budget, footprint.prices, lifecycle: the trusted side's always apply -------------------------------------


def settings(head: RepoConfig, trusted: Trusted):
    effective, problems = confine(head, trusted, strict=True)
    assert problems == []  # tightening is never a problem; a trusted limit is simply applied
    return lifecycle_settings(effective)


@pytest.mark.parametrize("where", ["policy", "ref"])
@pytest.mark.parametrize("key", sorted(BUDGET))
def test_each_budget_limit_of_a_trusted_source_holds_whatever_the_head_says(tmp_path, key, where):
    tight, loose, attr = BUDGET[key]
    want = getattr(budget_of({key: tight}), attr)
    trusted = trusted_by(where, tmp_path, policy={"budget": {key: tight}})
    assert getattr(settings(config(), trusted).budget, attr) == want  # the head says nothing
    assert getattr(settings(config(policy={"budget": {key: loose}}), trusted).budget, attr) == want  # relaxes: no
    lower = budget_of({key: loose})
    head_tighter = trusted_by(where, tmp_path, policy={"budget": {key: loose}})
    assert getattr(settings(config(policy={"budget": {key: tight}}), head_tighter).budget, attr) == want  # tightens
    assert getattr(settings(config(policy={"budget": {key: loose}}), Trusted()).budget, attr) == getattr(lower, attr)


def test_every_trusted_budget_applies_at_once(tmp_path):
    (tmp_path / "p.yaml").write_text(dumped(policy={"budget": {"cpu": "4", "lanes": 10}}))
    ref = Ref(dumped(policy={"budget": {"cpu": "8", "lanes": 2, "devCopies": 5}}))
    trusted = read_trusted(tmp_path / "p.yaml", ref)  # type: ignore[arg-type]
    assert trusted.budgets == ({"cpu": "4", "lanes": 10}, {"cpu": "8", "lanes": 2, "devCopies": 5})
    got = settings(config(policy={"budget": {"devCopies": 50, "memory": "1Gi"}}), trusted).budget
    assert got == Budget(dev_copies=5, cpu=4000, memory=1 << 30, lanes=2)


def test_the_trusted_prices_price_the_budget_and_the_heads_count_only_without_them(tmp_path):
    mine = {"currency": "EUR", "cpuHour": 0.05, "memoryGiBHour": 0.01}
    cheap = {"currency": "EUR", "cpuHour": 0, "memoryGiBHour": 0}  # a head pricing everything at zero
    trusted = trusted_by("policy", tmp_path, footprint={"prices": mine})
    assert settings(config(footprint={"prices": cheap}), trusted).prices == prices_of(mine)
    assert settings(config(), trusted).prices == prices_of(mine)
    assert settings(config(footprint={"prices": cheap}), Trusted()).prices == prices_of(cheap)
    assert settings(config(), Trusted()).prices is None
    other = {"currency": "USD", "cpuHour": 1}
    (tmp_path / "p.yaml").write_text(dumped(footprint={"prices": mine}))
    both = read_trusted(tmp_path / "p.yaml", Ref(dumped(footprint={"prices": other})))  # type: ignore[arg-type]
    assert settings(config(), both).prices == prices_of(mine)  # the first trusted source's
    ref_only = read_trusted(None, Ref(dumped(footprint={"prices": other})))  # type: ignore[arg-type]
    assert settings(config(footprint={"prices": cheap}), ref_only).prices == prices_of(other)
    assert prices_of(mine).cpu_hour == Decimal("0.05")


@pytest.mark.parametrize("where", ["policy", "ref"])
def test_the_shortest_ttl_applies_and_a_trusted_quota_fills_in(tmp_path, where):
    trusted = trusted_by(where, tmp_path, lifecycle={"ttl": "7d", "quota": {"defaultRequest": {"cpu": "50m"}}})
    assert settings(config(), trusted).ttl == "7d"
    assert settings(config(lifecycle={"ttl": "30d"}), trusted).ttl == "7d"  # lengthening: no
    assert settings(config(lifecycle={"ttl": "72h"}), trusted).ttl == "72h"  # shortening: yes
    assert settings(config(lifecycle={"ttl": "30d"}), Trusted()).ttl == "30d"
    assert settings(config(), trusted).quota == {"defaultRequest": {"cpu": "50m"}}
    own = {"defaultRequest": {"cpu": "10m"}}
    assert settings(config(lifecycle={"quota": own}), trusted).quota == own


def test_the_shortest_of_several_trusted_ttls_applies(tmp_path):
    (tmp_path / "p.yaml").write_text(dumped(lifecycle={"ttl": "7d"}))
    trusted = read_trusted(tmp_path / "p.yaml", Ref(dumped(lifecycle={"ttl": "48h"})))  # type: ignore[arg-type]
    assert trusted.lifecycles == ({"ttl": "7d"}, {"ttl": "48h"})
    assert settings(config(lifecycle={"ttl": "30d"}), trusted).ttl == "48h"
    assert settings(config(lifecycle={"ttl": "30m"}), trusted).ttl == "30m"


def test_a_trusted_source_without_those_settings_adds_none(tmp_path):
    trusted = trusted_by("policy", tmp_path, namespace="shop")
    assert (trusted.budgets, trusted.lifecycles, trusted.prices, trusted.limits, trusted.grants) == ((), (), None, {},
                                                                                                     {})
    effective, problems = confine(config(policy={"budget": {"lanes": 4}}), trusted, strict=True)
    assert effective.trusted_budgets == () and effective.budget == {"lanes": 4} and problems == []


def test_confine_keeps_every_other_setting_of_the_head():
    head = config(namespace="shop", policy={"requireSandbox": True, "strict": True, "warningsAsErrors": True})
    effective, problems = confine(head, Trusted({"seed": (Grant(PluginAllow(frozenset({"rbac"})), POLICY),)}), False)
    assert problems == [] and effective.namespace == "shop"
    assert (effective.require_sandbox, effective.strict, effective.warnings_as_errors) == (True, True, True)
    assert effective.plugin_policy == {"seed": PluginAllow(frozenset({"rbac"}))}
