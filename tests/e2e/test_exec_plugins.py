"""Exec plugins (KRM functions) in any language, through `devlane render` (in-process CLI; the plugins
themselves are real processes): perl, sh, Python one-liners, a YAML reply, a kpt-style function that
ignores functionConfig, and how error results, exit statuses and stderr are reported.

Each plugin is a directory with only a `plugin.yaml` (`runtime: {type: exec, command: [...]}`)
and, where needed, a script; the ResourceList goes in on stdin and comes back on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import Harness, Result, yamlc

FLOW = ["--flow", "pr-3", "--service", "api=api:2", "--service", "worker=worker:2"]
# exec plugins get a scrubbed environment (PATH, HOME, DEVLANE_*): let `python3` be the test interpreter
PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])

PERL = r"""#!/usr/bin/env perl
# Sets an env var on every workload's first container; reports a warning.
use strict;
use warnings;
use JSON::PP;

my $json = JSON::PP->new->utf8->canonical;
my $rl = $json->decode(do { local $/; <STDIN> });
my $spec = $rl->{functionConfig}{spec};
my $name = $spec->{args}{name} // 'FROM_PERL';
for my $item (@{ $rl->{items} }) {
    my $ann = $item->{metadata}{annotations} || {};
    next unless ($ann->{'devlane.dev/role'} // '') eq 'workload';
    my $container = $item->{spec}{template}{spec}{containers}[0];
    push @{ $container->{env} ||= [] }, { name => $name, value => "hello from perl, $spec->{flow}{uuid}" };
}
push @{ $rl->{results} ||= [] }, { severity => 'warning', message => 'perl was here' };
print STDERR "perl: done\n";
print $json->encode($rl);
"""

RESULT_LIST = '{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[],' \
              '"results":[{"severity":"error","message":"quota exceeded for this flow"}]}'  # fmt: skip


@pytest.fixture
def repo(harness: Harness) -> Harness:
    """Two services using plugin `fn`, whose definition runs `exec-fn` with args {name: GREETING}."""
    harness.app("api", "fn", [{"name": "main", "image": "api:1"}, {"name": "sidecar", "image": "proxy:1"}])
    harness.app("worker", "fn", [{"name": "main", "image": "worker:1", "env": [{"name": "KEEP", "value": "1"}]}],
                port=8080)  # fmt: skip
    harness.plugin_definition({"name": "exec-fn", "type": "external", "servicename": "fn",
                               "args": {"name": "GREETING"}}, name="fn-def")  # fmt: skip
    return harness


def make_plugin(harness: Harness, rel: str, command: list[str], files: dict[str, str] | None = None) -> Path:
    """An exec plugin outside the repository (scripts executable)."""
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "exec-fn"},
                "spec": {"version": "0.1.0", "runtime": {"type": "exec", "command": command}}}  # fmt: skip
    root = harness.plugin(rel, manifest=manifest, files=files, where=harness.tmp)
    for name in files or {}:
        (root / name).chmod(0o755)
    return root


def render(harness: Harness, plugin: Path, *extra: str) -> Result:
    return harness.cli("render", *FLOW, f"--plugin-source=exec-fn={plugin}", *extra, env={"PATH": PATH})


def objects(stream: str) -> dict[str, dict]:
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in yamlc.safe_load_all(stream) if d}


def state(objs: dict[str, dict]) -> object:
    return json.loads(objs["ConfigMap/devlane-state-fn-pr-3"]["data"]["config_map.json"])


def containers(objs: dict[str, dict], name: str) -> list[dict]:
    return objs[f"Deployment/{name}-pr-3"]["spec"]["template"]["spec"]["containers"]


def test_perl_plugin_edits_every_workload_and_warns(repo):
    if subprocess.run(["perl", "-MJSON::PP", "-e1"], capture_output=True).returncode != 0:
        pytest.skip("perl with JSON::PP is not available")
    plugin = make_plugin(repo, "perl", ["./fn.pl"], {"fn.pl": PERL})
    out = render(repo, plugin, "--stdout")
    assert out.returncode == 0, out.stderr
    objs = objects(out.stdout)
    api, worker = containers(objs, "api"), containers(objs, "worker")
    assert api[0]["env"] == [{"name": "GREETING", "value": "hello from perl, fn-pr-3"}]
    assert "env" not in api[1]  # only the first container
    assert worker[0]["env"] == [{"name": "KEEP", "value": "1"},
                                {"name": "GREETING", "value": "hello from perl, fn-pr-3"}]  # fmt: skip
    assert state(objs) == {}
    assert "devlane: warning: plugin fn: perl was here" in out.stderr
    assert "perl: done" not in out.stderr  # a plugin's stderr is shown only with --debug or on failure


def test_error_result_and_exit_1_fails_with_the_result_message(repo):
    script = f"#!/bin/sh\ncat >/dev/null\necho 'checking quota' >&2\necho '{RESULT_LIST}'\nexit 1\n"
    plugin = make_plugin(repo, "quota", ["./fn.sh"], {"fn.sh": script})
    out = render(repo, plugin, "--out", str(repo.tmp / "out"))
    assert out.returncode == 1
    assert "plugin fn" in out.stderr and "exited with status 1" in out.stderr
    assert "result: quota exceeded for this flow" in out.stderr
    assert "checking quota" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (repo.tmp / "out").exists()


def test_error_result_with_exit_0_also_fails(repo):
    script = f"#!/bin/sh\ncat >/dev/null\necho '{RESULT_LIST}'\n"
    plugin = make_plugin(repo, "quota0", ["./fn.sh"], {"fn.sh": script})
    out = render(repo, plugin, "--stdout")
    assert out.returncode == 1
    assert "plugin fn: quota exceeded for this flow" in out.stderr
    assert out.stdout == ""


def test_nonzero_exit_without_output_shows_the_stderr_tail(repo):
    script = "#!/bin/sh\ncat >/dev/null\nfor i in 1 2 3; do echo \"line $i\" >&2; done\n" \
             "echo 'fn: cannot reach the config service' >&2\nexit 3\n"  # fmt: skip
    plugin = make_plugin(repo, "dies", ["./fn.sh"], {"fn.sh": script})
    out = render(repo, plugin, "--stdout")
    assert out.returncode == 1
    assert "exited with status 3" in out.stderr
    assert "plugin stderr" in out.stderr and "fn: cannot reach the config service" in out.stderr
    assert out.stdout == ""


def test_sh_c_identity_plugin(repo):
    plugin = make_plugin(repo, "cat", ["sh", "-c", "cat"])
    out = render(repo, plugin, "--stdout")
    assert out.returncode == 0, out.stderr
    objs = objects(out.stdout)
    assert containers(objs, "api")[0] == {"name": "main", "image": "api:2"}
    assert containers(objs, "api")[1] == {"name": "sidecar", "image": "proxy:1"}
    assert state(objs) == {}


def test_yaml_reply_is_accepted(repo):
    code = textwrap.dedent("""
        import json, sys, yaml
        doc = json.load(sys.stdin)
        for item in doc["items"]:
            if item["metadata"]["annotations"]["devlane.dev/role"] == "workload":
                item["spec"]["template"]["spec"]["containers"][0]["args"] = ["--from-yaml"]
        yaml.safe_dump(doc, sys.stdout, sort_keys=False)
    """)
    plugin = make_plugin(repo, "yaml", ["python3", "-c", code])
    out = render(repo, plugin, "--stdout")
    assert out.returncode == 0, out.stderr
    objs = objects(out.stdout)
    assert containers(objs, "api")[0]["args"] == ["--from-yaml"]
    assert containers(objs, "worker")[0]["args"] == ["--from-yaml"]


def test_kpt_style_function_ignoring_function_config(repo):
    """A kpt/kustomize function knows nothing of devlane: it returns the items it got, and no state."""
    code = textwrap.dedent("""
        import sys, yaml
        rl = yaml.safe_load(sys.stdin)
        print(yaml.safe_dump({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                              "items": rl["items"]}, sort_keys=False))
    """)
    plugin = make_plugin(repo, "kpt", ["python3", "-c", code])
    out = render(repo, plugin, "--stdout")
    assert out.returncode == 0, out.stderr
    objs = objects(out.stdout)
    assert state(objs) == {}
    assert containers(objs, "worker")[0] == {"name": "main", "image": "worker:2",
                                             "env": [{"name": "KEEP", "value": "1"}]}  # fmt: skip
    baseline = render(repo, make_plugin(repo, "cat", ["sh", "-c", "cat"]), "--stdout")
    assert out.stdout == baseline.stdout


@pytest.mark.parametrize("command", [["python3", "fn.py"], ["./fn.sh"], ["sh", "fn.sh"], ["perl", "fn.pl"]],
                         ids=["python3 fn.py", "./fn.sh", "sh fn.sh", "perl fn.pl"])
def test_commands_name_the_plugins_files_as_written(repo, command):
    """SPEC §4.1: paths in runtime.command are relative to the plugin directory, with or without a `/`."""
    files = {"fn.py": "import sys\nsys.stdout.write(sys.stdin.read())\n", "fn.sh": "#!/bin/sh\ncat\n",
             "fn.pl": "print while <STDIN>;\n"}
    out = render(repo, make_plugin(repo, "files", command, files), "--stdout")
    assert out.returncode == 0, out.stderr
    assert containers(objects(out.stdout), "api")[0]["image"] == "api:2"
