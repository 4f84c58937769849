"""`Harness`: one test repository and the ways to run devlane on it (kustomize's `th` test harness).

    def test_something(harness):
        harness.write("app.yaml", app_yaml("api"))
        result = harness.render("pr-1", api="api:2")          # in-process library API
        out = harness.cli("render", "--flow", "pr-1", ...)      # in-process CLI: main(argv)
        out = harness.run("render", ...)                        # a real `python -m renderer.cli` (e2e)

`cli` and `run` return objects with `returncode`, `stdout` and `stderr`; REPO defaults to the
harness repository when the first argument is a command (pass it explicitly otherwise).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from renderer import api
from renderer.cli import main
from renderer.host import resolve
from renderer.render.plan.flow_spec import FlowRequest, FlowSpec

from .builders import app_yaml, plugin_definition
from .paths import ROOT

GIT_ENV = {"GIT_AUTHOR_NAME": "devlane tests", "GIT_AUTHOR_EMAIL": "tests@devlane.invalid",
           "GIT_COMMITTER_NAME": "devlane tests", "GIT_COMMITTER_EMAIL": "tests@devlane.invalid",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.environ.get("HOME", "/tmp")}  # fmt: skip


@dataclass(frozen=True)
class Result:
    """What a command did: exit status and its two output streams (like `subprocess.CompletedProcess`)."""

    returncode: int
    stdout: str
    stderr: str


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; its stdout, stripped."""
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                         env={**os.environ, **GIT_ENV}, timeout=60)  # fmt: skip
    return out.stdout.strip()


def tree(path: Path) -> dict[str, bytes]:
    """Every file under `path` (relative posix path -> bytes): for byte-identity checks of rendered output."""
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    """Run the real `devlane` CLI in a subprocess, as a user would (end-to-end tests only)."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "renderer.cli", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


class Harness:
    """A repository under `tmp_path/repo`, built by the test, and devlane run on it."""

    COMMANDS = {"render", "plan", "lint", "provision", "delete", "gc", "diff", "preview", "init"}

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        self.tmp = tmp_path
        self.root = tmp_path / "repo"
        self.root.mkdir(exist_ok=True)
        self.monkeypatch = monkeypatch

    # -- building the repository ------------------------------------------------------------------------

    def write(self, rel: str, text: str) -> Path:
        """Write a file of the repository (parents made); returns its path."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def append(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as fh:
            fh.write(text)
        return path

    def app(self, name: str, plugins: str | None = None, containers: list[dict] | None = None, port: int = 80,
            file: str = "app.yaml") -> Path:  # fmt: skip
        """A Deployment and its Service, appended to `file`."""
        return self.append(file, app_yaml(name, plugins, containers, port))

    def plugin_definition(self, *entries: dict, name: str = "plugin-defs", file: str = "app.yaml") -> Path:
        """A plugin-definition pseudo-Service with `entries` ({name, type, servicename, args, ...})."""
        return self.append(file, plugin_definition(list(entries), name))

    def config(self, config: dict | str) -> Path:
        """`.devlane.yaml` (a dict gets apiVersion and kind)."""
        if isinstance(config, dict):
            config = yaml.safe_dump({"apiVersion": "devlane.dev/v1alpha1", "kind": "Config", **config},
                                    sort_keys=False)  # fmt: skip
        return self.write(".devlane.yaml", config)

    def plugin(self, rel: str, main_py: str | None = None, manifest: dict | str | None = None,
               files: dict[str, str] | None = None, where: Path | None = None) -> Path:  # fmt: skip
        """A plugin directory (inside the repository unless `where`): main.py, plugin.yaml, other files."""
        path = (where or self.root) / rel
        path.mkdir(parents=True, exist_ok=True)
        if main_py is not None:
            (path / "main.py").write_text(main_py)
        if manifest is not None:
            text = manifest if isinstance(manifest, str) else yaml.safe_dump(manifest, sort_keys=False)
            (path / "plugin.yaml").write_text(text)
        for name, text in (files or {}).items():
            target = path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return path

    def builtins(self) -> Path:
        """This test's root of built-in plugins: devlane resolves their plain names and runs them in-process."""
        root = self.tmp / "builtins"
        root.mkdir(exist_ok=True)
        self.monkeypatch.setattr(resolve, "builtin_root", lambda: root)
        return root

    def builtin(self, name: str, main_py: str | None = None, src: Path | None = None) -> Path:
        """A built-in plugin `name` (runs in devlane's process, no subprocess): its main.py, or a copy of `src`."""
        if src is not None:
            return self.copy(src, name, where=self.builtins())
        return self.plugin(name, main_py=textwrap.dedent(main_py or ""), where=self.builtins())

    def copy(self, src: Path, rel: str = ".", where: Path | None = None) -> Path:
        """Copy a directory tree (a fixture, an example) into the repository; executables keep their bit."""
        dest = (where or self.root) / rel
        shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "rendered"))
        for f in dest.rglob("*"):
            if f.is_file() and (f.suffix in (".sh", ".pl") or f.read_bytes()[:2] == b"#!"):
                f.chmod(f.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return dest

    # -- git ----------------------------------------------------------------------------------------------

    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def commit(self, message: str = "change") -> str:
        """Commit everything in the repository (a git repository is made on first use); the commit id."""
        if not (self.root / ".git").exists():
            self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    # -- running devlane ------------------------------------------------------------------------------------

    def options(self, **kw) -> api.Options:
        return api.Options(**{"repo": self.root, **kw})

    def flow(self, flow_id: str = "pr-1", services: dict[str, str] | None = None, **request) -> FlowSpec:
        return api.resolve(FlowRequest(flow_id=flow_id, images=dict(services or {}), **request))

    def render(self, flow_id: str = "pr-1", services: dict[str, str] | None = None, **options) -> api.RenderResult:
        """Render in-process with the library API; nothing is written."""
        return api.render(self.options(**options), self.flow(flow_id, services))

    def _argv(self, args: tuple[str, ...]) -> list[str]:
        argv = [str(a) for a in args]
        if argv and argv[0] in self.COMMANDS and (len(argv) == 1 or argv[1].startswith("-")):
            argv.insert(1, str(self.root))
        return argv

    def cli(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
        """`devlane ARGS` in-process (`renderer.cli.main`), with stdout and stderr captured."""
        out, err = io.StringIO(), io.StringIO()
        with self.monkeypatch.context() as m:
            for key, value in (env or {}).items():
                m.setenv(key, value)
            if cwd is not None:
                m.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(self._argv(args))
                except SystemExit as exc:  # argparse usage errors
                    code = exc.code if isinstance(exc.code, int) else 2
        return Result(code, out.getvalue(), err.getvalue())

    def run(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:  # fmt: skip
        """`devlane ARGS` as a real subprocess (end-to-end tests)."""
        return run_cli(*self._argv(args), cwd=cwd, env=env, timeout=timeout)
