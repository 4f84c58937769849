"""One output contract (issue 46, point 1): every command that reports something takes `-o text|json|yaml`; the
machine report is one object with apiVersion and kind, valid against its entry of schemas/reports.schema.json,
the same data in JSON and YAML, alone on stdout (diagnostics on stderr)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess

import jsonschema
import pytest
import yaml
from support import EXAMPLE, ROOT

from renderer.cli import build_parser

SCHEMA = json.loads((ROOT / "schemas" / "reports.schema.json").read_text())
FLOW = ["--flow", "pr-1", "--service", "orders=ghcr.io/acme/orders:2"]


def validator(kind: str) -> jsonschema.Draft7Validator:
    assert kind in SCHEMA["$defs"], f"no schema for {kind}"
    return jsonschema.Draft7Validator({**SCHEMA, "allOf": [{"$ref": f"#/$defs/{kind}"}]})


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, parser)]
    return [leaf for name, sub in subs[0].choices.items() for leaf in _leaves(sub, (*path, name))]


REPORTING = [(p, s) for p, s in _leaves(build_parser()) if any("-o" in a.option_strings for a in s._actions)]


@pytest.mark.parametrize(("path", "parser"), REPORTING, ids=[" ".join(p) for p, _ in REPORTING])
def test_every_reporting_command_takes_text_json_and_yaml(path, parser):
    [action] = [a for a in parser._actions if "-o" in a.option_strings]
    assert {"text", "json", "yaml"} <= set(action.choices) and action.default == "text"


def test_the_commands_that_report_all_have_it():
    assert {" ".join(p) for p, _ in REPORTING} >= {
        "render", "plan", "lint", "provision", "delete", "gc", "status", "verify", "diff", "preview", "init",
        "plugins list", "plugins describe", "cache stats"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """The bundled example in a git repository of its own (diff reads two revisions)."""
    root = tmp_path_factory.mktemp("shop") / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("rendered"))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


CASES = [
    ("LintReport", ["lint", "{repo}"]),
    ("PlanReport", ["plan", "{repo}", *FLOW]),
    ("PreviewReport", ["preview", "{repo}", *FLOW]),
    ("RenderReport", ["render", "{repo}", *FLOW, "--out", "{out}"]),
    ("ProvisionReport", ["provision", "{repo}", *FLOW]),
    ("DiffReport", ["diff", "{repo}", "--base", "HEAD", "--head", "HEAD", *FLOW]),
    ("InitReport", ["init", "{repo}"]),
    ("PluginList", ["plugins", "list", "{repo}"]),
    ("PluginCatalogue", ["plugins", "list", "--builtin"]),
    ("PluginDescription", ["plugins", "describe", "seed-orders-db", "{repo}"]),
    ("GcReport", ["gc", "{repo}", "--keep", "pr-9", "--dry-run", "--out", "{out}"]),
    ("DeleteReport", ["delete", "{repo}", "--flow", "pr-1", "--out", "{out}"]),
    ("CacheStats", ["cache", "stats"]),
]


@pytest.mark.e2e  # the example's plugins run as processes
@pytest.mark.parametrize(("kind", "argv"), CASES, ids=[k for k, _ in CASES])
def test_the_machine_report_is_valid_and_the_same_in_json_and_yaml(harness, repo, tmp_path, kind, argv):
    out = tmp_path / "out"
    if kind in ("GcReport", "DeleteReport"):  # something to remove
        assert harness.cli("render", str(repo), *FLOW, "--out", str(out)).returncode == 0
    args = [a.format(repo=repo, out=out) for a in argv]
    got = {}
    for fmt in ("json", "yaml"):
        result = harness.cli(*args, "-o", fmt)
        assert result.returncode == 0, result.stderr
        got[fmt] = json.loads(result.stdout) if fmt == "json" else yaml.safe_load(result.stdout)
        if kind in ("GcReport", "DeleteReport") and fmt == "json":  # the second run finds it gone: render again
            assert harness.cli("render", str(repo), *FLOW, "--out", str(out)).returncode == 0
    report = got["json"]
    assert (report["apiVersion"], report["kind"]) == ("devlane.dev/v1alpha1", kind)
    errors = sorted(validator(kind).iter_errors(report), key=str)
    assert not errors, [e.message for e in errors]
    assert got["yaml"] == report


@pytest.mark.e2e
def test_a_limit_no_container_sets_is_null_in_json_and_none_in_text(harness, repo):
    report = json.loads(harness.cli("plan", str(repo), *FLOW, "-o", "json").stdout)
    assert report["footprint"]["limits"]["cpuMillicores"] is None  # the example sets no CPU limit
    assert "CPU requests / limits: 260m / none" in harness.cli("plan", str(repo), *FLOW).stdout


def test_a_schema_that_cannot_fail_is_no_schema():
    """The shared records reject what they must: a problem without a message, a negative count, an unknown kind."""
    assert list(validator("LintReport").iter_errors({"apiVersion": "devlane.dev/v1alpha1", "kind": "LintReport",
                                                     "problems": [{"severity": "error", "code": None}],
                                                     "errors": -1, "warnings": 0}))
    assert list(validator("PlanReport").iter_errors({"apiVersion": "devlane.dev/v1alpha1", "kind": "PlanReport",
                                                     "flow": "PR_1"}))
