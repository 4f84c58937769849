"""The kardinal-python runtime as a real process (`python -m renderer.sdk.kardinal PLUGIN_DIR`): the reply
survives stdout noise on fd 1, the plugin sees a scrubbed environment, a temp cwd and its own directory
first on sys.path, stderr comes back as an info message and as the tail of failures, timeouts kill the
whole process group, `os._exit` and import errors in a fresh interpreter are reported, the reply size is
capped; and the postgres-seed stand-in's script is valid bash.

What the adapter says about return values, bindings and delete_flow is tested in-process in
tests/unit/sdk/test_kardinal_adapter.py.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import time
from functools import partial
from pathlib import Path

import pytest
from support import FIXTURES, STANDINS, kardinal
from support.processes import sleep_token, wait_for, with_token

from renderer.errors import DevlaneError, Problem
from renderer.host import process

PLUGINS = FIXTURES / "plugins"
TIMEOUT = 30.0


# --------------------------------------------------------------------------------------------------
# helpers: the old `make_call(...)` as an Invocation and a plugin-process runtime


make_call = partial(kardinal.make_call, origin="repo")
create_flow, create_error = kardinal.create_flow, kardinal.create_error
env_value, pod = kardinal.env_value, kardinal.pod


def delete_flow(plugin_dir: Path, name: str, instance: str, flow_id: str, config_map,
                timeout: float = TIMEOUT) -> list[Problem]:
    return kardinal.delete_flow(plugin_dir, name, instance, flow_id, config_map, "repo", timeout)


# --------------------------------------------------------------------------------------------------
# success, isolation, noise


def test_plural_signature_survives_stdout_noise(monkeypatch):
    monkeypatch.setenv("DEVLANE_TEST_MARKER", "passed-through")
    monkeypatch.setenv("SECRET_TOKEN", "must-not-leak")
    call = make_call("noisy", dependents=("cartservice", "frontend"))
    original = copy.deepcopy(call.inv.workloads)

    outcome = create_flow(call)

    assert [p["containers"][0]["name"] for p in outcome.pod_specs] == ["cartservice-dev", "frontend-dev"]
    assert outcome.pod_specs[0]["terminationGracePeriodSeconds"] == 5
    assert call.inv.workloads == original  # the caller's objects are not touched
    cm = outcome.config_map
    assert cm["flow_uuid"] == "noisy-plugin-pr-12"
    assert cm["label"] == "x"
    assert cm["services"] == ["http", "http"]
    assert outcome.resources == []
    # the plugin's stderr (and its stray stdout) always comes back, as one info message; nothing else
    assert [(m.severity, m.code) for m in outcome.messages] == [("info", "plugin-stderr")]
    # plugin dir first on sys.path (sibling import worked), fresh temp cwd that is gone afterwards
    assert cm["sys_path0"] == str(PLUGINS / "noisy")
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
    allowed.add("PWD")  # the sandbox sets it
    allowed.add("LC_CTYPE")  # Python may set it itself
    assert {k for k in env if not k.startswith("DEVLANE_")} <= allowed


def test_stderr_and_stray_stdout_come_back_as_info():
    outcome = create_flow(make_call("noisy"))
    infos = [m for m in outcome.messages if m.severity == "info"]
    text = "\n".join(m.message for m in infos)
    for noise in ("import-time noise on stdout", "print() noise", "sys.stdout noise", "raw fd 1 noise",
                  "raw fd 2 noise"):  # fmt: skip
        assert noise in text
    assert all(m.where.plugin == "noisy-plugin" for m in infos)
    assert [m.code for m in infos] == ["plugin-stderr"]
    assert infos[0].message.startswith("create_flow stderr:\n")


# --------------------------------------------------------------------------------------------------
# failures of the process


def test_plugin_exception_reports_type_message_frames_and_stderr():
    text = kardinal.assert_seed_error(create_error(make_call("raises", instance="postgres-seed-plugin")))
    assert "about to load the seed" in text  # stderr tail


@pytest.mark.parametrize("ignore_term", ["0", "1"])
def test_timeout_kills_the_whole_process_group(tmp_path, ignore_term):
    token = sleep_token()
    call = make_call("hang", args={"token": token, "ignore_term": ignore_term})
    started = time.monotonic()
    err = create_error(call, timeout=1.5)
    elapsed = time.monotonic() - started
    text = str(err)
    assert "plugin hang-plugin" in text
    assert "timed out after 1.5 s" in text
    assert "--plugin-timeout" in err.problems[0].hint
    assert elapsed >= 1.5
    assert elapsed < 1.5 + process.KILL_GRACE_SECONDS + 5
    assert wait_for(lambda: not with_token(token)), f"child sleep {token} survived the timeout"


def test_exit_without_reply():
    err = create_error(make_call("exits"))
    assert "create_flow exited with status 3 without a reply" in str(err)
    assert "plugin exits-plugin" in str(err)
    assert "report failure in their reply" in err.problems[0].hint


def test_reply_over_size_limit(monkeypatch):
    monkeypatch.setattr(process, "MAX_MESSAGE_BYTES", 1024 * 1024)
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


def test_delete_flow_timeout(tmp_path):
    plugin = tmp_path / "slowdelete"
    plugin.mkdir()
    (plugin / "main.py").write_text("import time\n\n\ndef delete_flow(config_map, flow_uuid):\n    time.sleep(60)\n")
    with pytest.raises(DevlaneError) as info:
        delete_flow(plugin, "slowdelete", "slow", "pr-1", {}, 1.0)
    assert "delete_flow timed out after 1 s" in str(info.value)


# --------------------------------------------------------------------------------------------------
# the postgres-seed stand-in, whose seed script must be valid bash

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
                     instance="postgres-seed-plugin")  # fmt: skip
    outcome = create_flow(call)
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
                     pods=[pod("postgres", "postgres:14")])  # fmt: skip
    container = create_flow(bare).pod_specs[0]["containers"][0]
    assert env_value(container, "POSTGRES_DB") == "cart"
