"""Trusted and untrusted configuration (`renderer/render/settings/trust.py`): the head's `.devlane.yaml` keeps what a
trusted source grants and loses the rest (one problem per setting, a warning, an error under strict); a plugin's
own plugin.yaml limits may only tighten unless its code is pinned."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from renderer.host.confine import Limits
from renderer.render.settings.repo_config import PluginAllow, parse_config
from renderer.render.settings.trust import Grant, Trusted, confine

SWITCHES = st.frozensets(st.sampled_from(["clusterScoped", "rbac", "privileged", "secrets"]))


def config(policy: dict | None = None, limits: dict | None = None):
    text = "apiVersion: devlane.dev/v1alpha1\nkind: Config\n"
    if policy is not None:
        text += f"policy: {{plugins: {policy}}}\n".replace("'", "")
    if limits is not None:
        text += f"plugins: {{limits: {limits}}}\n".replace("'", "")
    return parse_config(text.encode())


@given(asked=SWITCHES, granted=SWITCHES, strict=st.booleans())
def test_the_head_keeps_exactly_what_the_trusted_source_grants(asked, granted, strict):
    head = config({"seed": {"allow": sorted(asked)}} if asked else {})
    source = "the policy file p.yaml"
    trusted = Trusted({"seed": (Grant(PluginAllow(granted), source),)}, {}, (source,))
    effective, problems = confine(head, trusted, strict)
    assert effective.plugin_policy["seed"].allow == (asked & granted if asked else granted)
    beyond = asked - granted
    assert len(problems) == (1 if beyond else 0)
    if beyond:
        assert problems[0].severity == ("error" if strict else "warning")
        assert all(f"allow {s}" in problems[0].message for s in beyond) and "p.yaml" in problems[0].message


def test_limits_above_the_default_need_a_trusted_source():
    head = config(limits={"memoryMiB": 8192, "cpuSeconds": 30})
    effective, problems = confine(head, Trusted(), strict=False)
    assert effective.plugin_limits == {"memoryMiB": 2048, "cpuSeconds": 30}  # lowered: kept; raised: capped
    assert [p.message.split(" relaxes")[0] for p in problems] == ["plugins.limits.memoryMiB (8192, above 2048)"]
    effective, problems = confine(head, Trusted(limits={"memoryMiB": 4096}), strict=False)
    assert effective.plugin_limits["memoryMiB"] == 4096 and len(problems) == 1


def test_a_trusted_grant_applies_where_the_head_says_nothing():
    grant = Grant(PluginAllow(frozenset({"secrets"}), ("Secret",)), "the policy file p.yaml")
    effective, problems = confine(config(), Trusted({"seed": (grant,)}), strict=True)
    assert effective.plugin_policy["seed"].allow == {"secrets"} and problems == []


def test_an_unpinned_plugin_yaml_lowers_its_limits_and_never_raises_them():
    base = Limits(memory_mib=1024, processes=64)
    asked = {"memoryMiB": 4096, "processes": 16}
    assert base.for_plugin(asked, "repo") == Limits(memory_mib=1024, processes=16)
    assert base.for_plugin(asked, "git") == Limits(memory_mib=4096, processes=16)
