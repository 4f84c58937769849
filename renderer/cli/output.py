"""One output contract for every command that reports something (kubectl's `-o`): `text` for people, `json` and
`yaml` for programs, on stdout (diagnostics go to stderr). A machine report is one object with `apiVersion` and
`kind` (`PlanReport`, `LintReport`...), the same shape in JSON and YAML, documented by a JSON schema in
`schemas/reports.schema.json` (one `$defs` entry per kind, shared records such as a problem defined once)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import Problem

API_VERSION = "devlane.dev/v1alpha1"
FORMATS = ("text", "json", "yaml")


def add_output(parser: argparse.ArgumentParser, *extra: str) -> None:
    """`-o text|json|yaml` (and the command's own formats, such as `markdown`)."""
    parser.add_argument("-o", "--output", choices=[*FORMATS, *extra], default="text",
                        help="text for people, json or yaml for programs (the shapes of schemas/reports.schema.json)")


def report(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """The machine report: `apiVersion` and `kind` first, then the data (sorted when printed)."""
    return {"apiVersion": API_VERSION, "kind": kind, **data}


def machine(args: argparse.Namespace, kind: str, data: dict[str, Any]) -> bool:
    """Print the report as JSON or YAML when `-o` asks for one (True), else nothing (False: the caller writes text)."""
    fmt = getattr(args, "output", "text")
    if fmt not in ("json", "yaml"):
        return False
    sys.stdout.write(dumps(report(kind, data), fmt))
    return True


def dumps(data: dict[str, Any], fmt: str) -> str:
    if fmt == "yaml":
        import yaml

        from ..core.yamlscalars import SafeDumper

        return yaml.dump(data, Dumper=SafeDumper, sort_keys=True, allow_unicode=True, default_flow_style=False)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def problems(found: list[Problem], notes: bool = False) -> dict[str, Any]:
    """Problems as every report lists them: each with severity, code, message, where and hint; and the counts.
    `info` messages are kept only where the text shows them too (`notes`: lint's notes, such as a cycle planned as
    one unit); elsewhere they are the --debug chatter of a run (a plugin's stderr, the cache's counts)."""
    found = [p for p in found if notes or p.severity != "info"]
    return {"problems": [p.as_dict() for p in found],
            "errors": sum(p.severity == "error" for p in found),
            "warnings": sum(p.severity == "warning" for p in found)}
