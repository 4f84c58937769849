"""After plugins, a dev version that still carries, unchanged, the ExternalName address of an external service
whose plugin ran for it is reported loudly (`external-reached`): here the all-built-ins app with its Neon
definition writing Kardinal's `POSTGRES` variable while the app reads DATABASE_URL. Values the plugin rewrote
(an SQS URL that names the regional endpoint) are not reported."""

from __future__ import annotations

from support.catalogue_app import DEFINITIONS, catalogue_app

FLOW = ["render", "--flow", "pr-7", "--service", "api=example.com/api:2", "--stdout"]


def test_an_address_the_plugin_left_in_place_is_reported(harness, monkeypatch):
    builtin, kind, args = DEFINITIONS["neon"]
    monkeypatch.setitem(DEFINITIONS, "neon", (builtin, kind, {k: v for k, v in args.items() if k != "env_var"}))
    catalogue_app(harness)
    result = harness.cli(*FLOW)
    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if "still names" in line]
    assert warned == ["devlane: warning: Deployment/api-pr-7, plugin neon: dev workload api-pr-7 still names "
                      "neon.example.com, the address of external service neon, in container api env DATABASE_URL, "
                      "after plugin instance neon ran: the dev version may reach the baseline's neon"]
    assert "have the plugin set this value" in result.stderr
    strict = harness.cli(*FLOW, "--strict")
    assert strict.returncode == 1 and "still names neon.example.com" in strict.stderr


def test_values_the_plugins_set_are_not_reported(harness):
    catalogue_app(harness)
    result = harness.cli(*FLOW)
    assert result.returncode == 0 and "still names" not in result.stderr, result.stderr
