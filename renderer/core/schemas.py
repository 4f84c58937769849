"""JSON Schemas shipped in the `schemas` package (config, flow, plugin manifest), and validation that
names each violation's field path."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from ..errors import Problem, Where
from .conforms import conforms
from .yamllines import line_of


@cache
def load_schema(name: str) -> dict:
    """Load a JSON Schema shipped in the `schemas` package."""
    return json.loads(resources.files("schemas").joinpath(name).read_text())


def schema_problems(instance: Any, schema_name: str, file: str, data: bytes | None = None) -> list[Problem]:
    """Validate `instance` and return every violation, each naming its field path (and its line, given the
    file's bytes `data`)."""
    if conforms(instance, load_schema(schema_name)):
        return []
    import jsonschema  # only for a document that may be invalid: see `conforms`

    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    problems = []
    for err in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        path = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        where = Where(file=file, line=line_of(data, tuple(err.absolute_path)))
        problems.append(Problem(f"{path}: {_short(err)}", where,
                                hint=f"see schemas/{schema_name} for the allowed fields", code="schema"))
    return problems


def _short(err: Any) -> str:
    if err.validator == "additionalProperties":
        return f"unknown key(s): {err.message.split('(')[-1].rstrip(')').replace(' was unexpected', '')}"
    if err.validator in ("oneOf", "anyOf") and err.context:
        best = min(err.context, key=lambda e: len(list(e.absolute_path)) * -1)
        return best.message
    return err.message
