"""The Kardinal-Python plugin runtime, exercised with real plugins in real subprocesses."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import plugins as builtin_plugins_package
from renderer import plugins, sources
from renderer.errors import DevlaneError
from renderer.plugins import PluginCall, run_create_flow, run_delete_flow
from renderer.sources import PluginSource, resolve_plugin_source

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "plugins"
STANDINS = HERE / "fixtures" / "kardinal-standins"
TIMEOUT = 30.0


# --------------------------------------------------------------------------------------------------
# helpers


def pod(name: str, image: str = "example/app:1", env: list | None = None) -> dict:
    return {
        "terminationGracePeriodSeconds": 5,
        "containers": [{"name": name, "image": image, "ports": [{"containerPort": 8080}], "env": env or []}],
    }


def service_spec(app: str, port: int = 8080, port_name: str = "http") -> dict:
    return {
        "type": "ClusterIP",
        "selector": {"app": app},
        "ports": [{"name": port_name, "port": port, "targetPort": port, "protocol": "TCP"}],
    }


def workload(app: str, pod_spec: dict) -> dict:
    return {
        "replicas": 1,
        "selector": {"matchLabels": {"app": app, "version": "v1"}},
        "template": {"metadata": {"labels": {"app": app, "version": "v1"}}, "spec": copy.deepcopy(pod_spec)},
    }


def make_call(
    plugin: str,
    args: dict | None = None,
    dependents: tuple[str, ...] = ("cartservice",),
    pods: list[dict] | None = None,
    base: Path = FIXTURES,
    instance: str | None = None,
    ports: list[int] | None = None,
) -> PluginCall:
    deps = list(dependents)
    pod_specs = pods if pods is not None else [pod(d) for d in deps]
    ports = ports or [8080] * len(deps)
    return PluginCall(
        instance=instance or f"{plugin}-plugin",
        flow_id="pr-12",
        source=PluginSource(name=f"./plugins/{plugin}", path=base / plugin, origin="repo"),
        args=args or {},
        service_specs=[service_spec(d, p) for d, p in zip(deps, ports, strict=True)],
        pod_specs=pod_specs,
        workload_specs=[workload(d, p) for d, p in zip(deps, pod_specs, strict=True)],
        dependents=deps,
    )


def create_error(call: PluginCall, timeout: float = TIMEOUT) -> DevlaneError:
    with pytest.raises(DevlaneError) as info:
        run_create_flow(call, timeout)
    err = info.value
    for problem in err.problems:
        assert problem.where.plugin == call.instance, problem
    return err


def env_value(container: dict, name: str):
    values = [e.get("value") for e in container.get("env", []) if e.get("name") == name]
    assert len(values) == 1, (name, container.get("env"))
    return values[0]


def pid_gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        return state in ("Z", "X")  # a zombie nobody has reaped yet is dead too
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_for(predicate, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


# --------------------------------------------------------------------------------------------------
# success, isolation, noise


def test_plural_signature_survives_stdout_noise(monkeypatch):
    monkeypatch.setenv("DEVLANE_TEST_MARKER", "passed-through")
    monkeypatch.setenv("SECRET_TOKEN", "must-not-leak")
    call = make_call("noisy", dependents=("cartservice", "frontend"))
    original = copy.deepcopy(call.pod_specs)

    outcome = run_create_flow(call, TIMEOUT)

    assert [p["containers"][0]["name"] for p in outcome.pod_specs] == ["cartservice-dev", "frontend-dev"]
    assert outcome.pod_specs[0]["terminationGracePeriodSeconds"] == 5
    assert call.pod_specs == original  # the caller's specs are not touched
    cm = outcome.config_map
    assert cm["flow_uuid"] == "noisy-plugin-pr-12"
    assert cm["label"] == "x"
    assert cm["services"] == ["http", "http"]
    assert outcome.resources == []
    assert outcome.messages == []
    # plugin dir first on sys.path (sibling import worked), fresh temp cwd that is gone afterwards
    assert cm["sys_path0"] == str(FIXTURES / "noisy")
    assert cm["cwd"] != os.getcwd()
    assert not Path(cm["cwd"]).exists()
    env = cm["env"]
    assert env["HOME"] == cm["cwd"]
    assert env["LANG"] == "C.UTF-8"
    assert env["TZ"] == "UTC"
    assert env["PYTHONHASHSEED"] == "0"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["DEVLANE_TEST_MARKER"] == "passed-through"
    assert "SECRET_TOKEN" not in env
    allowed = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE"}
    allowed.add("LC_CTYPE")  # Python may set it itself
    assert {k for k in env if not k.startswith("DEVLANE_")} <= allowed


def test_debug_passes_stderr_and_stray_stdout_through_as_info():
    outcome = run_create_flow(make_call("noisy"), TIMEOUT, debug=True)
    infos = [m for m in outcome.messages if m.severity == "info"]
    text = "\n".join(m.message for m in infos)
    for noise in ("import-time noise on stdout", "print() noise", "sys.stdout noise", "raw fd 1 noise",
                  "raw fd 2 noise"):
        assert noise in text
    assert all(m.where.plugin == "noisy-plugin" for m in infos)


def test_arguments_bound_by_name_with_defaults_and_extras_ignored():
    tricky = 'he said "hi"\n\'); import os; os._exit(9) #'
    call = make_call("binding", args={"text": tricky, "extra": "ignored", "kwargs": "not-expanded"})
    outcome = run_create_flow(call, TIMEOUT, debug=True)
    assert outcome.config_map == {
        "text": tricky,  # passed as data, never spliced into code
        "mode": "default-mode",
        "kwargs": {},
        "flow_uuid": "binding-plugin-pr-12",
    }
    ignored = [m.message for m in outcome.messages if "ignored args" in m.message]
    assert ignored and "extra" in ignored[0]

    outcome = run_create_flow(make_call("binding", args={"text": "t", "mode": "42"}), TIMEOUT)
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
    outcome = run_create_flow(call, TIMEOUT)
    assert [p["containers"][0]["name"] for p in outcome.pod_specs] == ["cartservice-old", "frontend-old"]
    assert outcome.config_map == [{"port": 8090}, {"port": 8080}]
    [warning] = outcome.messages
    assert warning.severity == "warning"
    assert warning.where.plugin == "legacy_pod_spec-plugin"
    assert "pre-Oct-2024 singular signature" in warning.message
    assert "./plugins/legacy_pod_spec" in warning.message
    assert "create_flow(service_specs, pod_specs, flow_uuid, ...)" in warning.message

    single = run_create_flow(make_call("legacy_pod_spec", args={"suffix": "-s"}), TIMEOUT)
    assert single.config_map == {"port": 8080}
    assert single.pod_specs[0]["containers"][0]["name"] == "cartservice-s"


def test_legacy_deployment_spec_signature_uses_current_pod_spec():
    call = make_call("legacy_deployment_spec", dependents=("redis", "cache"))
    call.workload_specs[0]["template"]["spec"]["containers"][0]["name"] = "stale"
    outcome = run_create_flow(call, TIMEOUT)
    first, second = outcome.pod_specs
    assert first["containers"][0]["image"] == "example/overlay:1"
    assert first["containers"][0]["name"] == "redis"  # built from the current pod spec, not a stale copy
    assert first["terminationGracePeriodSeconds"] == 5
    assert second["containers"][0]["name"] == "cache"
    assert outcome.config_map == [
        {"replicas": 1, "flow_uuid": "legacy_deployment_spec-plugin-pr-12"},
        {"replicas": 1, "flow_uuid": "legacy_deployment_spec-plugin-pr-12"},
    ]
    assert [m.code for m in outcome.messages] == ["plugin-deprecated-signature"]
    assert "deployment_spec" in outcome.messages[0].message


# --------------------------------------------------------------------------------------------------
# failures


def test_plugin_exception_reports_type_message_frames_and_stderr():
    err = create_error(make_call("raises", instance="postgres-seed-plugin"))
    text = str(err)
    assert "plugin postgres-seed-plugin" in text
    assert "create_flow raised ValueError: seed 'demo' is not valid SQL" in text
    assert "main.py:" in text and "in _load_seed" in text and "in create_flow" in text
    assert "shim.py" not in text
    assert "about to load the seed" in text  # stderr tail
    assert err.problems[0].hint


@pytest.mark.parametrize("ignore_term", ["0", "1"])
def test_timeout_kills_the_whole_process_group(tmp_path, ignore_term):
    pid_file = tmp_path / "child.pid"
    call = make_call("hang", args={"pid_file": str(pid_file), "ignore_term": ignore_term})
    started = time.monotonic()
    err = create_error(call, timeout=1.5)
    elapsed = time.monotonic() - started
    text = str(err)
    assert "plugin hang-plugin" in text
    assert "timed out after 1.5 s" in text
    assert "--plugin-timeout" in err.problems[0].hint
    assert elapsed >= 1.5
    assert elapsed < 1.5 + plugins.KILL_GRACE_SECONDS + 5
    child = int(pid_file.read_text())
    assert wait_for(lambda: pid_gone(child)), f"child sleep {child} survived the timeout"


def test_exit_without_reply():
    err = create_error(make_call("exits"))
    assert "create_flow exited with status 3 without a reply" in str(err)
    assert "plugin exits-plugin" in str(err)


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
    outcome = run_create_flow(make_call("malformed", args={"what": "fine"}), TIMEOUT)
    assert outcome.config_map == {}


def test_reply_over_size_limit(monkeypatch):
    monkeypatch.setattr(plugins, "MAX_REPLY_BYTES", 1024 * 1024)
    err = create_error(make_call("malformed", args={"what": "big"}))
    assert "more than 1 MiB" in str(err)
    assert "plugin malformed-plugin" in str(err)


def test_syntax_error_in_main_py(tmp_path):
    plugin = tmp_path / "broken"
    plugin.mkdir()
    (plugin / "main.py").write_text(
        "def create_flow(service_specs, pod_specs, flow_uuid):\n"
        "    return {'pod_specs': pod_specs 'config_map': {}}\n"
    )
    err = create_error(make_call("broken", base=tmp_path))
    text = str(err)
    assert "main.py of plugin ./plugins/broken failed to import: SyntaxError" in text
    assert "main.py:2" in text
    assert "plugin broken-plugin" in text
    assert "fix the error in" in err.problems[0].hint


def test_import_error_in_main_py_hints_at_requirements():
    err = create_error(make_call("import_error"))
    assert "failed to import: ModuleNotFoundError: No module named 'devlane_no_such_module'" in str(err)
    assert "requirements.txt" in err.problems[0].hint


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
    outcome = run_create_flow(make_call("results", args={"severities": "warning,info"}), TIMEOUT)
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
    outcome = run_create_flow(make_call("resources"), TIMEOUT)
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
    outcome = run_create_flow(make_call("roundtrip", args={"config": json.dumps(value)}), TIMEOUT)
    assert json.dumps(outcome.config_map, sort_keys=True) == json.dumps(value, sort_keys=True)

    source = PluginSource("./plugins/roundtrip", FIXTURES / "roundtrip", "repo")
    messages = run_delete_flow(source, "roundtrip-plugin", "pr-12", outcome.config_map, TIMEOUT)
    [echo] = messages
    assert echo.severity == "info"
    expected = {"config_map": value, "flow_uuid": "roundtrip-plugin-pr-12"}
    assert echo.message == json.dumps(expected, sort_keys=True)


def test_delete_flow_binds_args_when_asked():
    source = PluginSource("./plugins/binding", FIXTURES / "binding", "repo")
    stored = {"text": "stored"}
    [msg] = run_delete_flow(source, "binding-plugin", "pr-7", stored, TIMEOUT, args={"text": "hi"})
    assert msg.message == "binding-plugin-pr-7 hi stored"
    [msg] = run_delete_flow(source, "binding-plugin", "pr-7", {"text": "stored"}, TIMEOUT)
    assert msg.message == "binding-plugin-pr-7 none stored"


def test_delete_flow_exception_is_reported():
    source = PluginSource("./plugins/raises", FIXTURES / "raises", "repo")
    with pytest.raises(DevlaneError) as info:
        run_delete_flow(source, "neon-db", "pr-1", {"branch": "br-1"}, TIMEOUT)
    text = str(info.value)
    assert "plugin neon-db" in text
    assert "delete_flow raised RuntimeError: cannot delete branch br-1" in text


def test_delete_flow_absent_is_a_warning():
    source = PluginSource("./plugins/resources", FIXTURES / "resources", "repo")
    [msg] = run_delete_flow(source, "res", "pr-1", {}, TIMEOUT)
    assert msg.severity == "warning"
    assert "defines no delete_flow" in msg.message


def test_delete_flow_timeout(tmp_path):
    plugin = tmp_path / "slowdelete"
    plugin.mkdir()
    (plugin / "main.py").write_text(
        "import time\n\n\ndef delete_flow(config_map, flow_uuid):\n    time.sleep(60)\n"
    )
    source = PluginSource("slowdelete", plugin, "repo")
    with pytest.raises(DevlaneError) as info:
        run_delete_flow(source, "slow", "pr-1", {}, 1.0)
    assert "delete_flow timed out after 1 s" in str(info.value)


# --------------------------------------------------------------------------------------------------
# source resolution


def _plugin_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n    pass\n")
    return path


@pytest.fixture
def layout(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    _plugin_dir(repo / "plugins" / "seed")
    _plugin_dir(repo / "vendor" / "seed-from-config")
    flag = _plugin_dir(tmp_path / "elsewhere" / "seed-from-flag")
    builtins = tmp_path / "builtins"
    _plugin_dir(builtins / "dummy")
    _plugin_dir(builtins / "redis-sidecar")
    _plugin_dir(tmp_path / "outside")
    monkeypatch.setattr(sources, "_builtin_root", lambda: builtins)
    return {"tmp": tmp_path, "repo": repo, "flag": flag, "builtins": builtins}


def test_resolution_order_flag_config_repo_builtin(layout, monkeypatch):
    repo, flag = layout["repo"], layout["flag"]
    name = "plugins/seed"
    config = {name: {"path": "vendor/seed-from-config"}}

    src = resolve_plugin_source(name, repo, {name: str(flag)}, config)
    assert (src.origin, src.path, src.name) == ("flag", flag.resolve(), name)

    monkeypatch.chdir(layout["tmp"])  # relative flag paths are relative to the current directory
    src = resolve_plugin_source(name, repo, {name: "elsewhere/seed-from-flag"}, config)
    assert (src.origin, src.path) == ("flag", flag.resolve())

    src = resolve_plugin_source(name, repo, {}, config)
    assert (src.origin, src.path) == ("config", (repo / "vendor" / "seed-from-config").resolve())

    for spelled in ("plugins/seed", "./plugins/seed"):
        src = resolve_plugin_source(spelled, repo, {}, {})
        assert (src.origin, src.path) == ("repo", (repo / "plugins" / "seed").resolve())

    src = resolve_plugin_source("dummy", repo, {}, {})
    assert (src.origin, src.path) == ("builtin", (layout["builtins"] / "dummy").resolve())


def test_repo_directory_without_main_py_falls_through_to_builtin(layout):
    repo = layout["repo"]
    (repo / "redis-sidecar").mkdir()  # e.g. a directory of manifests that happens to share the name
    (repo / "redis-sidecar" / "deploy.yaml").write_text("kind: Deployment\n")
    src = resolve_plugin_source("redis-sidecar", repo, {}, {})
    assert src.origin == "builtin"
    _plugin_dir(repo / "redis-sidecar")
    assert resolve_plugin_source("redis-sidecar", repo, {}, {}).origin == "repo"


def test_escaping_the_repository_is_rejected(layout):
    for name in ("../outside", "plugins/../../outside", str(layout["tmp"] / "outside")):
        with pytest.raises(DevlaneError) as info:
            resolve_plugin_source(name, layout["repo"], {}, {})
        assert "points outside the repository" in str(info.value)
        assert info.value.problems[0].where.plugin == name
        assert "--plugin-source" in info.value.problems[0].hint


def test_git_source_needs_pinning(layout):
    name = "github.com/kurtosis-tech/postgres-seed-plugin"
    config = {name: {"git": "https://github.com/kurtosis-tech/postgres-seed-plugin", "ref": "05e71bc"}}
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source(name, layout["repo"], {}, config)
    problem = info.value.problems[0]
    assert name in problem.message and "05e71bc" in problem.message
    assert "devlane plugins lock" in problem.message and "not pinned in devlane.lock" in problem.message
    assert "--plugin-source" in problem.hint and "path" in problem.hint
    # a flag still wins over the git entry
    src = resolve_plugin_source(name, layout["repo"], {name: str(layout["flag"])}, config)
    assert src.origin == "flag"


def test_not_found_lists_where_it_looked(layout):
    name = "github.com/kurtosis-tech/neondb-plugin"
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source(name, layout["repo"], {}, {})
    problem = info.value.problems[0]
    assert f"plugin '{name}' not found" in problem.message
    assert str(layout["repo"].resolve() / name) in problem.message
    assert problem.hint.startswith(f"pass --plugin-source {name}=PATH, or add plugins.sources.")
    assert problem.where.plugin == name

    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("no-such-builtin", layout["repo"], {}, {})
    assert str(layout["builtins"] / "no-such-builtin") in str(info.value)


def test_explicit_sources_must_hold_main_py(layout):
    empty = layout["tmp"] / "empty"
    empty.mkdir()
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("x", layout["repo"], {"x": str(empty)}, {})
    assert "--plugin-source x=" in str(info.value) and "has neither main.py nor plugin.yaml" in str(info.value)
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("x", layout["repo"], {}, {"x": {"path": "nope"}})
    assert "plugins.sources.x.path" in str(info.value) and "not a directory" in str(info.value)
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("x", layout["repo"], {}, {"x": {}})
    assert "has no `path`" in str(info.value)


def test_builtin_root_is_the_top_level_plugins_package():
    assert sources._builtin_root() == Path(builtin_plugins_package.__file__).resolve().parent


# --------------------------------------------------------------------------------------------------
# stand-ins for Kardinal's demo plugins

SEED = """--  create the table
CREATE TABLE IF NOT EXISTS public.items(
    id bigserial PRIMARY KEY,
    user_id TEXT,
    quantity INTEGER
);
INSERT INTO public.items (id, user_id, quantity) VALUES (1, '0494c5e0', 1);
"""


def test_standin_postgres_seed():
    pg = {
        "containers": [
            {
                "name": "postgres",
                "image": "postgres:14",
                "ports": [{"containerPort": 5432}],
                "env": [
                    {"name": "POSTGRES_DB", "value": "cart"},
                    {"name": "POSTGRES_USER", "value": "postgresuser"},
                    {"name": "POSTGRES_PASSWORD", "value": "postgrespass"},
                ],
                "volumeMounts": [{"mountPath": "/var/lib/postgresql/data", "name": "postgres-data"}],
            }
        ],
        "volumes": [{"name": "postgres-data", "emptyDir": {}}],
    }
    args = {"seed_script": SEED, "db_name": "cart", "db_user": "devuser", "db_password": "it's secret"}
    call = make_call("postgres-seed", args=args, dependents=("postgres",), pods=[pg], base=STANDINS,
                     instance="postgres-seed-plugin")
    outcome = run_create_flow(call, TIMEOUT)
    container = outcome.pod_specs[0]["containers"][0]
    assert [e["name"] for e in container["env"]] == ["POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD"]
    assert env_value(container, "POSTGRES_USER") == "devuser"
    assert env_value(container, "POSTGRES_PASSWORD") == "it's secret"
    command = container["lifecycle"]["postStart"]["exec"]["command"]
    assert command[:2] == ["/bin/bash", "-c"]
    script = command[2]
    assert "pg_isready" in script and "psql" in script and "-f /tmp/seed.sql" in script
    after_marker = script.split("cat > /tmp/seed.sql <<'DEVLANE_SEED_EOF'\n", 1)[1]
    heredoc = after_marker.split("\nDEVLANE_SEED_EOF\n")[0]
    assert heredoc + "\n" == SEED
    assert outcome.pod_specs[0]["volumes"] == pg["volumes"]
    assert outcome.config_map == {}
    if shutil.which("bash"):
        subprocess.run(["bash", "-n", "-c", script], check=True)

    # a pod spec without the env gets it appended
    bare = make_call("postgres-seed", args=args, dependents=("postgres",), base=STANDINS,
                     pods=[pod("postgres", "postgres:14")])
    container = run_create_flow(bare, TIMEOUT).pod_specs[0]["containers"][0]
    assert env_value(container, "POSTGRES_DB") == "cart"


def test_standin_jsdelivr_api():
    frontend = pod("server", "kurtosistech/frontend:main", env=[
        {"name": "JSDELIVRAPIKEY", "value": "prod"},
        {"name": "CARTSERVICEHOST", "value": "cartservice"},
    ])
    call = make_call("jsdelivr-api", args={"api_key": "dev"}, dependents=("frontend",), pods=[frontend],
                     base=STANDINS, instance="jsdelivr-api")
    outcome = run_create_flow(call, TIMEOUT)
    container = outcome.pod_specs[0]["containers"][0]
    assert env_value(container, "JSDELIVRAPIKEY") == "dev"
    assert env_value(container, "CARTSERVICEHOST") == "cartservice"
    assert outcome.config_map == {}


def test_standin_redis_sidecar():
    redis = pod("redis", "bitnami/redis:6.0.8", env=[{"name": "ALLOW_EMPTY_PASSWORD", "value": "yes"}])
    call = make_call("redis-sidecar", dependents=("redis-prod",), pods=[redis], base=STANDINS)
    outcome = run_create_flow(call, TIMEOUT)
    container = outcome.pod_specs[0]["containers"][0]
    assert container["image"] == "kurtosistech/redis-proxy-overlay:latest"
    assert container["env"] == redis["containers"][0]["env"]
    assert outcome.config_map == {}


def test_standin_neon_branch():
    url = "postgres://postgresuser:postgrespass@postgres:5432/cart?sslmode=disable"
    cart = pod("server", "kurtosistech/cartservice:main", env=[
        {"name": "POSTGRES", "value": url},
        {"name": "PORT", "value": "8090"},
    ])
    demo = pod("server", "kurtosistech/cartservice:main", env=[
        {"name": "POSTGRES", "value": ""},
        {"name": "DB_USERNAME", "value": "postgresuser"},
        {"name": "DB_PASSWORD", "value": "postgrespass"},
        {"name": "DB_PORT", "value": "5432"},
        {"name": "DB_NAME", "value": "cart"},
    ])
    args = {"NEON_API_KEY": "key", "NEON_PROJECT_ID": "proj-1", "NEON_FORK_FROM_BRANCH_ID": "br-main"}
    call = make_call("neon-branch", args=args, dependents=("cartservice", "cartservice-2"), pods=[cart, demo],
                     base=STANDINS, instance="neon-postgres-db")
    outcome = run_create_flow(call, TIMEOUT)
    host = "neon-postgres-db-pr-12.neon.invalid"
    first, second = (p["containers"][0] for p in outcome.pod_specs)
    assert env_value(first, "POSTGRES") == f"postgres://postgresuser:postgrespass@{host}:5432/cart?sslmode=disable"
    assert env_value(first, "PORT") == "8090"
    assert env_value(second, "POSTGRES") == f"postgres://postgresuser:postgrespass@{host}:5432/cart"
    assert outcome.config_map == {"NEON_PROJECT_ID": "proj-1", "NEON_BRANCH_ID": "neon-postgres-db-pr-12"}
    assert "key" not in json.dumps(outcome.config_map)
