"""Go's YAML readers as a test oracle: what kubectl (go-yaml v2 through sigs.k8s.io/yaml), kustomize and Flux
(go-yaml v3) read in a YAML text, next to PyYAML's reading.

The Go program (tests/support/yamloracle/main.go) is built outside the checkout by tests/setup_yamloracle.sh into
a directory keyed by a hash of its sources; `binary()` computes the same path. Tests that need it skip, saying to
run the script, when it is not built (no Go on the machine).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import yamlc
from .paths import ROOT

SOURCES = ROOT / "tests" / "support" / "yamloracle"
READERS = ("v2", "v3", "sigs")  # as main.go names them
SETUP = "bash tests/setup_yamloracle.sh"
REQUIRED = "DEVLANE_YAMLORACLE_REQUIRED"


def binary() -> Path | None:
    """The built oracle for the sources in this checkout, or None."""
    digest = hashlib.sha256(b"\0".join((SOURCES / f).read_bytes() for f in ("go.mod", "go.sum", "main.go")))
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = cache / "devlane-test-tools" / f"yamloracle-{digest.hexdigest()[:16]}" / "yamloracle"
    return path if os.access(path, os.X_OK) else None


def require() -> Path:
    path = binary()
    if path is None:
        if os.environ.get(REQUIRED) == "1":  # CI on a machine with Go: a missing oracle is a failure, never a skip
            pytest.fail(f"the Go YAML reader oracle is not built and {REQUIRED}=1: run `{SETUP}`")
        pytest.skip(f"the Go YAML reader oracle is not built: run `{SETUP}` (needs Go; it builds "
                    f"{SOURCES.relative_to(ROOT)} into ~/.cache/devlane-test-tools)")
    return path


@dataclass(frozen=True)
class GoTime:
    """A timestamp go-yaml v3 read (never equal to a string)."""

    text: str


@dataclass(frozen=True)
class Failed:
    """A reader's error on the whole text."""

    error: str


def read(texts: list[str]) -> list[dict[str, list[Any] | Failed]]:
    """Each YAML text (a stream of documents) as every reader reads it: {reader: [document...] or Failed}, the
    readers of `READERS` and "pyyaml". One oracle process reads them all."""
    if not texts:
        return []
    lines = "".join(json.dumps(t) + "\n" for t in texts)
    out = subprocess.run([str(require())], input=lines, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    replies = out.stdout.split("\n")[:-1]  # JSON lines: a NEL or LS inside a string is no line break
    assert len(replies) == len(texts), out.stderr
    results = []
    for text, reply in zip(texts, replies, strict=True):
        got = json.loads(reply)
        assert "error" not in got, got
        result: dict[str, list[Any] | Failed] = {
            name: Failed(got[name]["error"]) if isinstance(got[name], dict) else [_value(d) for d in got[name]]
            for name in READERS}
        try:
            result["pyyaml"] = [d for d in yamlc.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            result["pyyaml"] = Failed(str(exc))
        results.append(result)
    return results


def _value(tagged: Any) -> Any:
    """main.go's "type:text" scalars as Python values."""
    if isinstance(tagged, dict):
        return {_value(k): _value(v) for k, v in tagged.items()}
    if isinstance(tagged, list):
        return [_value(v) for v in tagged]
    kind, _, text = tagged.partition(":")
    if kind == "str":
        return text
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)  # Go's +Inf, -Inf and NaN included
    if kind == "number":
        return float(text) if any(c in text for c in ".eE") else int(text)
    if kind == "bool":
        return text == "true"
    if kind == "null":
        return None
    if kind == "time":
        return GoTime(text)
    raise AssertionError(f"the oracle read a {tagged!r}")


def same(a: Any, b: Any) -> bool:
    """Equal, and a string only ever equal to a string (`True == 1` and `1 == 1.0` are not enough, but a JSON
    number may stand for an int or a float of the same value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if type(a) in numbers and type(b) in numbers:
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def differences(meant: Any, got: Any, path: str = "") -> list[str]:
    """Where `got` is not `meant` (see `same`), as `path: meant != got` lines."""
    if isinstance(meant, dict) and isinstance(got, dict):
        out = [f"{path}/{k!r}: missing" for k in meant if k not in got]
        out += [f"{path}/{k!r}: not meant" for k in got if k not in meant]
        return out + [d for k in meant if k in got for d in differences(meant[k], got[k], f"{path}/{k}")]
    if isinstance(meant, list) and isinstance(got, list) and len(meant) == len(got):
        return [d for i, (m, g) in enumerate(zip(meant, got, strict=True)) for d in differences(m, g, f"{path}/{i}")]
    return [] if same(meant, got) else [f"{path or '/'}: {meant!r} != {got!r}"]


def misread(texts: list[str], meant: list[list[Any]]) -> list[str]:
    """Every place where a reader's documents of `texts[i]` are not `meant[i]`, as "text i, reader: where"."""
    out = []
    for i, (result, documents) in enumerate(zip(read(texts), meant, strict=True)):
        for name, docs in result.items():
            if isinstance(docs, Failed):
                out.append(f"text {i}, {name}: {docs.error}")
            elif len(docs) != len(documents):
                out.append(f"text {i}, {name}: {len(docs)} documents, meant {len(documents)}")
            else:
                out += [f"text {i}, {name}: {d}" for m, g in zip(documents, docs, strict=True)
                        for d in differences(m, g)]
    return out
