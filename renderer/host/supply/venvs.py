"""Plugin virtualenvs: one per requirements hash, built by `devlane plugins prepare`.

A Kardinal Python plugin may ship a ``requirements.txt``. Its hash (sha256 of the file's bytes)
names a virtualenv ``$DEVLANE_CACHE/venvs/<hash>/``; plugins with identical requirements share it.
A file that is missing or holds only blank and comment lines needs no virtualenv: the plugin runs
with devlane's own interpreter.

pip runs only in `prepare`, never during render. A virtualenv is not relocatable, so it is built in
its final place and marked ready (``devlane-ready.json``, written last and atomically) only when pip
succeeded; render uses nothing without that marker, so a half-built virtualenv is never used, and
the next `prepare` rebuilds it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TextIO

from ...errors import DevlaneError, Problem, Where, fail
from . import plugin_cache

REQUIREMENTS = "requirements.txt"
READY = "devlane-ready.json"


def requirements_hash_of(data: bytes | None) -> str | None:
    """sha256 hex digest of requirements.txt content; None when there is nothing to install."""
    if data is None:
        return None
    lines = (ln.strip() for ln in data.decode("utf-8", "replace").splitlines())
    if not any(ln and not ln.startswith("#") for ln in lines):
        return None
    return hashlib.sha256(data).hexdigest()


def requirements_hash(plugin_dir: Path) -> str | None:
    path = Path(plugin_dir) / REQUIREMENTS
    return requirements_hash_of(path.read_bytes()) if path.is_file() else None


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def is_prepared(venv: Path) -> bool:
    return (venv / READY).is_file() and venv_python(venv).exists()


def python_for(plugin_dir: Path, name: str | None = None) -> str:
    """The interpreter that runs the Kardinal Python plugin in `plugin_dir` during render.

    devlane's own interpreter when the plugin has no requirements; otherwise the python of the
    virtualenv `devlane plugins prepare` built for them. Never installs anything: a missing
    virtualenv is an error that says to run `devlane plugins prepare`.
    """
    plugin_dir = Path(plugin_dir)
    digest = requirements_hash(plugin_dir)
    if digest is None:
        return sys.executable
    venv = plugin_cache.venv_path(digest)
    if is_prepared(venv):
        return str(venv_python(venv))
    label = name or str(plugin_dir)
    raise fail(
        f"plugin {label} needs the packages in its requirements.txt, but they are not prepared (no virtualenv "
        f"{digest[:12]} in {venv.parent}); run `devlane plugins prepare`",
        Where(plugin=name, file=str(plugin_dir / REQUIREMENTS)),
        "run `devlane plugins prepare` in the repository (pip runs there, never during render); "
        f"the cache is ${plugin_cache.CACHE_ENV}, default ~/.cache/devlane",
        code="plugin-not-prepared",
    )


class Progress(Protocol):
    """How `prepare` reports each step (the CLI shows a live line on a terminal, plain lines in CI)."""

    def begin(self, label: str) -> None: ...

    def detail(self, line: str) -> None: ...

    def end(self, line: str) -> None: ...

    def elapsed(self) -> float: ...


class Quiet:
    """A `Progress` that shows nothing and only keeps the time."""

    def __init__(self) -> None:
        self._started = time.monotonic()

    def begin(self, label: str) -> None:
        self._started = time.monotonic()

    def detail(self, line: str) -> None:
        return None

    def end(self, line: str) -> None:
        return None

    def elapsed(self) -> float:
        return time.monotonic() - self._started


# --------------------------------------------------------------------------------------------------
# devlane plugins prepare


@dataclass(frozen=True)
class Target:
    """A plugin to prepare: its name (for messages) and the directory holding requirements.txt."""

    name: str
    path: Path
    requirements_hash: str | None


@dataclass
class PrepareReport:
    built: list[str] = field(default_factory=list)  # requirements hashes built now
    ready: list[str] = field(default_factory=list)  # already prepared
    without: list[str] = field(default_factory=list)  # plugin names that need no virtualenv
    venvs: dict[str, Path] = field(default_factory=dict)  # hash -> virtualenv

    def summary(self, plugins: int, seconds: float) -> str:
        return (f"prepared {plugins} plugin(s) in {seconds:.1f}s: {len(self.built)} virtualenv(s) built, "
                f"{len(self.ready)} already prepared, {len(self.without)} without requirements")


def target_for(name: str, plugin_dir: Path) -> Target:
    return Target(name, Path(plugin_dir), requirements_hash(Path(plugin_dir)))


def _outer_pip() -> list[str] | None:
    """devlane's own pip, when it can install into another interpreter (pip >= 22.3 `--python`)."""
    if importlib.util.find_spec("pip") is None:
        return None
    try:
        from pip import __version__ as version
    except ImportError:  # pragma: no cover
        return None
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    return [sys.executable, "-m", "pip"] if parts >= (22, 3) else None


def _run(cmd: list[str], cwd: Path, log: TextIO, progress: Progress, tail: deque) -> int:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PYTHONUNBUFFERED": "1"}
    log.write(f"$ {' '.join(cmd)}  (in {cwd})\n")
    log.flush()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)
        tail.append(line.rstrip())
        if line.strip():
            progress.detail(line.strip())
    return proc.wait()


def build_venv(target: Target, pip_args: list[str], progress: Progress) -> tuple[Path, bool]:
    """Build (or reuse) the virtualenv for `target`; (virtualenv, True if built now)."""
    digest = target.requirements_hash
    assert digest is not None
    venv = plugin_cache.venv_path(digest)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with plugin_cache.file_lock(venv.parent / f"{digest}.lock"):
        if is_prepared(venv):
            return venv, False
        if venv.exists():
            shutil.rmtree(venv)  # a build that did not finish
        log_path = venv.parent / f"{digest}.log"
        outer = _outer_pip()
        tail: deque[str] = deque(maxlen=12)
        with open(log_path, "w", encoding="utf-8") as log:
            make = [sys.executable, "-m", "venv", *(["--without-pip"] if outer else []), str(venv)]
            code = _run(make, target.path, log, progress, tail)
            if code == 0:
                python = str(venv_python(venv))
                pip = [*outer, "--python", python] if outer else [python, "-m", "pip"]
                install = [*pip, "install", "--disable-pip-version-check", "--no-input", "-r", REQUIREMENTS, *pip_args]
                code = _run(install, target.path, log, progress, tail)
        if code != 0:
            shutil.rmtree(venv, ignore_errors=True)
            output = "\n    ".join(line for line in tail if line.strip())
            raise fail(
                f"installing the requirements of plugin {target.name} failed (exit {code}):\n    {output}",
                Where(plugin=target.name, file=str(target.path / REQUIREMENTS)),
                f"fix requirements.txt (or your pip configuration: index URL, --find-links, --no-index) and run "
                f"`devlane plugins prepare` again; the full pip output is in {log_path}",
                code="plugin-prepare",
            )
        ready = {"requirementsHash": digest, "python": sys.version.split()[0], "plugin": target.name}
        tmp = venv / f".{READY}.tmp"
        tmp.write_text(json.dumps(ready, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, venv / READY)
    return venv, True


def prepare(targets: list[Target], pip_args: list[str] | None = None,
            progress: Progress | None = None) -> PrepareReport:
    """Build one virtualenv per distinct requirements hash among `targets`, reporting each step to `progress`."""
    progress = progress or Quiet()
    report = PrepareReport()
    by_hash: dict[str, list[Target]] = {}
    for t in sorted(targets, key=lambda t: t.name):
        if t.requirements_hash is None:
            report.without.append(t.name)
        else:
            by_hash.setdefault(t.requirements_hash, []).append(t)
    problems: list[Problem] = []
    total = len(by_hash)
    for i, (digest, group) in enumerate(sorted(by_hash.items(), key=lambda kv: kv[1][0].name), 1):
        first = group[0]
        names = ", ".join(t.name for t in group)
        venv = plugin_cache.venv_path(digest)
        if is_prepared(venv):
            progress.end(f"[{i}/{total}] {names}: virtualenv {digest[:12]} already prepared")
            report.ready.append(digest)
            report.venvs[digest] = venv
            continue
        progress.begin(f"[{i}/{total}] {names}: building virtualenv {digest[:12]} (pip install -r {REQUIREMENTS})")
        try:
            venv, built = build_venv(first, list(pip_args or []), progress)
        except DevlaneError as exc:
            progress.end(f"[{i}/{total}] {names}: failed after {progress.elapsed():.1f}s")
            problems += exc.problems
            continue
        (report.built if built else report.ready).append(digest)
        report.venvs[digest] = venv
        progress.end(f"[{i}/{total}] {names}: virtualenv {digest[:12]} ready in {progress.elapsed():.1f}s ({venv})")
    if problems:
        raise DevlaneError(problems)
    return report
