"""The Kardinal adapter (`renderer.sdk.kardinal`) as the host sees it, in-process: how a plugin's arguments
are bound, the legacy singular signatures, what malformed returns, `results` and `resources` become,
the config_map round trip to delete_flow, delete_flow's own failures, and the stand-ins of Kardinal's
demo plugins (tests/fixtures/kardinal-standins).

Every call goes through `InProcessRuntime` (the built-in runtime), which runs the same adapter and the
same `ReplyReader` as the kardinal-python subprocess, so the messages are the ones a user sees. What
only a real process shows (stdout noise, environment, timeouts, import errors in a fresh interpreter,
the reply size cap) is in tests/e2e/test_kardinal_runtime.py.
"""

from __future__ import annotations

import json
from functools import partial

import pytest
from support import FIXTURES, STANDINS, kardinal

from renderer.errors import DevlaneError, Problem

PLUGINS = FIXTURES / "plugins"
TIMEOUT = 30.0


# helpers: the old `make_call(...)` as an Invocation and the in-process runtime (support/kardinal.py)

make_call = partial(kardinal.make_call, origin="builtin")
create_flow, create_error = kardinal.create_flow, kardinal.create_error
env_value, pod = kardinal.env_value, kardinal.pod


def delete_flow(plugin: str, instance: str, flow_id: str, config_map, args: dict | None = None) -> list[Problem]:
    return kardinal.delete_flow(PLUGINS / plugin, f"./plugins/{plugin}", instance, flow_id, config_map, "builtin",
                                args=args)


# --------------------------------------------------------------------------------------------------
# binding


def test_arguments_bound_by_name_with_defaults_and_extras_ignored():
    tricky = 'he said "hi"\n\'); import os; os._exit(9) #'
    call = make_call("binding", args={"text": tricky, "extra": "ignored", "kwargs": "not-expanded"})
    outcome = create_flow(call)
    assert outcome.config_map == {
        "text": tricky,  # passed as data, never spliced into code
        "mode": "default-mode",
        "kwargs": {},
        "flow_uuid": "binding-plugin-pr-12",
    }
    ignored = [m for m in outcome.messages if "ignored args" in m.message]
    assert ignored and "extra" in ignored[0].message
    assert (ignored[0].severity, ignored[0].code) == ("info", "plugin-debug")

    outcome = create_flow(make_call("binding", args={"text": "t", "mode": "42"}))
    assert outcome.config_map["mode"] == "42"  # values stay strings


def test_missing_required_arg_names_parameter_and_plugin():
    err = create_error(make_call("binding", args={"mode": "x"}, instance="seed-db"))
    text = str(err)
    assert "'text'" in text
    assert "plugin seed-db" in text
    assert "args:" in err.problems[0].hint
    assert "seed-db" in err.problems[0].hint


# --------------------------------------------------------------------------------------------------
# legacy signatures


def test_legacy_pod_spec_signature_called_once_per_dependent_with_deprecation():
    call = make_call("legacy_pod_spec", dependents=("cartservice", "frontend"), ports=[8090, 8080])
    outcome = create_flow(call)
    assert [p["containers"][0]["name"] for p in outcome.pod_specs] == ["cartservice-old", "frontend-old"]
    assert outcome.config_map == [{"port": 8090}, {"port": 8080}]
    [warning] = outcome.messages
    assert warning.severity == "warning"
    assert warning.where.plugin == "legacy_pod_spec-plugin"
    assert "pre-Oct-2024 singular signature" in warning.message
    assert "./plugins/legacy_pod_spec" in warning.message
    assert "create_flow(service_specs, pod_specs, flow_uuid, ...)" in warning.message

    single = create_flow(make_call("legacy_pod_spec", args={"suffix": "-s"}))
    assert single.config_map == {"port": 8080}
    assert single.pod_specs[0]["containers"][0]["name"] == "cartservice-s"


def test_legacy_deployment_spec_signature_uses_current_pod_spec():
    # The workload object now carries the one pod spec sent (there is no separate workload copy that
    # could go stale): the deployment_spec the plugin gets is built from it.
    call = make_call("legacy_deployment_spec", dependents=("redis", "cache"))
    outcome = create_flow(call)
    first, second = outcome.pod_specs
    assert first["containers"][0]["image"] == "example/overlay:1"
    assert first["containers"][0]["name"] == "redis"
    assert first["terminationGracePeriodSeconds"] == 5
    assert second["containers"][0]["name"] == "cache"
    assert outcome.config_map == [
        {"replicas": 1, "flow_uuid": "legacy_deployment_spec-plugin-pr-12"},
        {"replicas": 1, "flow_uuid": "legacy_deployment_spec-plugin-pr-12"},
    ]
    assert [m.code for m in outcome.messages] == ["plugin-deprecated-signature"]
    assert "deployment_spec" in outcome.messages[0].message


# --------------------------------------------------------------------------------------------------
# failures the adapter detects


def test_plugin_exception_reports_type_message_and_frames():
    """The stderr tail of the same failure is checked through a real process in tests/e2e."""
    kardinal.assert_seed_error(create_error(make_call("raises", instance="postgres-seed-plugin")))


def test_wrong_pod_spec_count():
    err = create_error(make_call("wrong_count", dependents=("a", "b")))
    assert "returned 1 pod spec for 2 dependents (a, b)" in str(err)
    assert "plugin wrong_count-plugin" in str(err)
    assert "same order" in err.problems[0].hint


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("not_dict", "create_flow returned a list, expected an object"),
        ("none", "create_flow returned null, expected an object"),
        ("set", "not JSON-serializable (TypeError: Object of type set is not JSON serializable)"),
        ("nan", "not JSON-serializable (ValueError"),
        ("no_pod_specs", "create_flow returned no `pod_specs`"),
        ("pod_specs_not_list", "returned `pod_specs` as an object, expected a list"),
        ("no_config_map", "create_flow returned no `config_map`"),
        ("pod_spec_string", "pod spec #1 (for cartservice) is a string, expected an object"),
        ("no_containers", "pod spec #1 (for cartservice) has no non-empty `containers` list"),
        ("resources_not_list", "`resources` is an object, expected a list of objects"),
        ("resource_no_name", "resources[0] (Job) has no metadata.name"),
        ("bad_severity", "results[0] has severity 'fatal'"),
    ],
)
def test_malformed_replies(what, expected):
    err = create_error(make_call("malformed", args={"what": what}, dependents=("cartservice", "frontend")))
    assert expected in str(err)
    assert "plugin malformed-plugin" in str(err)
    assert err.problems[0].hint
    if what == "no_config_map":
        assert '"config_map": {}' in err.problems[0].hint


def test_malformed_fixture_control_case_succeeds():
    outcome = create_flow(make_call("malformed", args={"what": "fine"}))
    assert outcome.config_map == {}


def test_missing_main_py(tmp_path):
    (tmp_path / "empty").mkdir()
    err = create_error(make_call("empty", base=tmp_path))
    assert "has no main.py" in str(err)
    assert "plugin empty-plugin" in str(err)


def test_missing_create_flow(tmp_path):
    plugin = tmp_path / "nofn"
    plugin.mkdir()
    (plugin / "main.py").write_text("def delete_flow(config_map, flow_uuid):\n    pass\n")
    err = create_error(make_call("nofn", base=tmp_path))
    assert "defines no create_flow function" in str(err)


# --------------------------------------------------------------------------------------------------
# extensions: results and resources


def test_warning_and_info_results_become_messages():
    outcome = create_flow(make_call("results", args={"severities": "warning,info"}))
    assert [(m.severity, m.message) for m in outcome.messages] == [
        ("warning", "args.s0: warning number 0"),
        ("info", "args.s1: info number 1"),
    ]
    assert all(m.where.plugin == "results-plugin" for m in outcome.messages)


def test_error_results_fail_the_render():
    err = create_error(make_call("results", args={"severities": "info,error,error"}))
    assert [p.message for p in err.problems] == ["args.s1: error number 1", "args.s2: error number 2"]
    assert all(p.severity == "error" for p in err.problems)


def test_resources_are_returned():
    outcome = create_flow(make_call("resources"))
    [job] = outcome.resources
    assert job["kind"] == "Job"
    assert job["metadata"]["name"] == "provision-resources-plugin-pr-12"
    assert outcome.config_map == {"job": "provision-resources-plugin-pr-12"}


# --------------------------------------------------------------------------------------------------
# config_map round trip and delete_flow


@pytest.mark.parametrize(
    "value",
    [
        True,
        False,
        None,
        0,
        -2.5,
        "text",
        [],
        {},
        {"a": [True, False, None, {"b": {"c": [1, 2.5, "x"]}}], "unicode": "ünïcödé ✓", "n": 10**18},
    ],
)
def test_config_map_round_trips_to_delete_flow(value):
    outcome = create_flow(make_call("roundtrip", args={"config": json.dumps(value)}))
    assert json.dumps(outcome.config_map, sort_keys=True) == json.dumps(value, sort_keys=True)

    messages = delete_flow("roundtrip", "roundtrip-plugin", "pr-12", outcome.config_map)
    [echo] = messages
    assert echo.severity == "info"
    expected = {"config_map": value, "flow_uuid": "roundtrip-plugin-pr-12"}
    assert echo.message == json.dumps(expected, sort_keys=True)


def test_delete_flow_binds_args_when_asked():
    stored = {"text": "stored"}
    [msg] = delete_flow("binding", "binding-plugin", "pr-7", stored, args={"text": "hi"})
    assert msg.message == "binding-plugin-pr-7 hi stored"
    [msg] = delete_flow("binding", "binding-plugin", "pr-7", {"text": "stored"})
    assert msg.message == "binding-plugin-pr-7 none stored"


def test_delete_flow_exception_is_reported():
    with pytest.raises(DevlaneError) as info:
        delete_flow("raises", "neon-db", "pr-1", {"branch": "br-1"})
    text = str(info.value)
    assert "plugin neon-db" in text
    assert "delete_flow raised RuntimeError: cannot delete branch br-1" in text


def test_delete_flow_absent_is_a_warning():
    [msg] = delete_flow("resources", "res", "pr-1", {})
    assert msg.severity == "warning"
    assert "defines no delete_flow" in msg.message


# --------------------------------------------------------------------------------------------------
# stand-ins for Kardinal's demo plugins (postgres-seed, whose script is also run by bash, is in tests/e2e)




def test_standin_jsdelivr_api():
    frontend = pod("server", "kurtosistech/frontend:main", env=[
        {"name": "JSDELIVRAPIKEY", "value": "prod"},
        {"name": "CARTSERVICEHOST", "value": "cartservice"},
    ])  # fmt: skip
    call = make_call("jsdelivr-api", args={"api_key": "dev"}, dependents=("frontend",), pods=[frontend],
                     base=STANDINS, instance="jsdelivr-api")  # fmt: skip
    outcome = create_flow(call)
    container = outcome.pod_specs[0]["containers"][0]
    assert env_value(container, "JSDELIVRAPIKEY") == "dev"
    assert env_value(container, "CARTSERVICEHOST") == "cartservice"
    assert outcome.config_map == {}


def test_standin_redis_sidecar():
    redis = pod("redis", "bitnami/redis:6.0.8", env=[{"name": "ALLOW_EMPTY_PASSWORD", "value": "yes"}])
    call = make_call("redis-sidecar", dependents=("redis-prod",), pods=[redis], base=STANDINS)
    outcome = create_flow(call)
    container = outcome.pod_specs[0]["containers"][0]
    assert container["image"] == "kurtosistech/redis-proxy-overlay:latest"
    assert container["env"] == redis["containers"][0]["env"]
    assert outcome.config_map == {}


def test_standin_neon_branch():
    url = "postgres://postgresuser:postgrespass@postgres:5432/cart?sslmode=disable"
    cart = pod("server", "kurtosistech/cartservice:main", env=[
        {"name": "POSTGRES", "value": url},
        {"name": "PORT", "value": "8090"},
    ])  # fmt: skip
    demo = pod("server", "kurtosistech/cartservice:main", env=[
        {"name": "POSTGRES", "value": ""},
        {"name": "DB_USERNAME", "value": "postgresuser"},
        {"name": "DB_PASSWORD", "value": "postgrespass"},
        {"name": "DB_PORT", "value": "5432"},
        {"name": "DB_NAME", "value": "cart"},
    ])  # fmt: skip
    args = {"NEON_API_KEY": "key", "NEON_PROJECT_ID": "proj-1", "NEON_FORK_FROM_BRANCH_ID": "br-main"}
    call = make_call("neon-branch", args=args, dependents=("cartservice", "cartservice-2"), pods=[cart, demo],
                     base=STANDINS, instance="neon-postgres-db")  # fmt: skip
    outcome = create_flow(call)
    host = "neon-postgres-db-pr-12.neon.invalid"
    first, second = (p["containers"][0] for p in outcome.pod_specs)
    assert env_value(first, "POSTGRES") == f"postgres://postgresuser:postgrespass@{host}:5432/cart?sslmode=disable"
    assert env_value(first, "PORT") == "8090"
    assert env_value(second, "POSTGRES") == f"postgres://postgresuser:postgrespass@{host}:5432/cart"
    assert outcome.config_map == {"NEON_PROJECT_ID": "proj-1", "NEON_BRANCH_ID": "neon-postgres-db-pr-12"}
    assert "key" not in json.dumps(outcome.config_map)
