"""`devlane.lock`: every git plugin source pinned to a commit, and the operations behind
`devlane plugins lock` and `devlane plugins fetch`.

File format (deterministic: entries sorted by name, keys in this order)::

    apiVersion: devlane.dev/v1alpha1
    kind: Lock
    plugins:
    - name: github.com/org/repo          # the plugin name, as in the plugin definition
      url: https://github.com/org/repo   # where it is fetched from
      ref: HEAD                          # what was locked (HEAD: the remote's default branch)
      commit: 0123...                    # the pinned commit: the only thing render uses
      requirementsHash: 89ab...          # sha256 of the plugin's requirements.txt, or null

`lock` keeps the pin of every entry whose URL and ref are unchanged (no network needed for those),
pins new and changed entries, moves the ones named by ``--update``, and drops entries no longer
used. A new commit upstream therefore changes nothing until the lock moves.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ...core.files import write_atomic
from ...core.yamlio import parse_documents
from ...core.yamlscalars import SafeDumper
from ...errors import DevlaneError, Problem, UsageError, Where, fail
from . import plugin_cache
from .gitspec import GitSpec
from .venvs import REQUIREMENTS, requirements_hash_of

LOCK_FILE = "devlane.lock"
API_VERSION = "devlane.dev/v1alpha1"
KIND = "Lock"
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
_HEADER = (
    "# Git plugin sources pinned by `devlane plugins lock`; commit this file. Do not edit it by hand:\n"
    "# move a pin with `devlane plugins lock --update NAME`, then run `devlane plugins fetch`.\n"
)

Log = Callable[[str], None]


def _quiet(line: str) -> None:
    return None


@dataclass(frozen=True)
class LockEntry:
    name: str
    url: str
    ref: str
    commit: str
    requirements_hash: str | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "url": self.url, "ref": self.ref, "commit": self.commit,
                "requirementsHash": self.requirements_hash}


@dataclass
class Lock:
    entries: dict[str, LockEntry] = field(default_factory=dict)
    present: bool = False  # a devlane.lock file exists

    def dump(self) -> str:
        doc = {"apiVersion": API_VERSION, "kind": KIND,
               "plugins": [self.entries[n].as_dict() for n in sorted(self.entries)]}
        return _HEADER + yaml.dump(doc, Dumper=SafeDumper, sort_keys=False, default_flow_style=False, width=4096)


def _lock_error(message: str, file: str) -> DevlaneError:
    return fail(message, Where(file=file),
                "regenerate it with `devlane plugins lock` (devlane.lock is written by devlane; do not edit it)",
                code="lock")


def parse_lock(data: bytes | None, file: str = LOCK_FILE) -> Lock:
    """The lock from file content (None: no file, an empty lock)."""
    if data is None:
        return Lock()
    try:
        docs = [d for d in parse_documents(data, file) if d is not None]  # bounded, duplicate keys refused
    except DevlaneError as exc:
        problem = exc.problems[0]
        line = f" (line {problem.where.line})" if problem.where.line else ""
        raise _lock_error(f"not valid YAML{line}: {problem.message.removeprefix('invalid YAML: ')}", file) from None
    if len(docs) > 1:
        raise _lock_error("expected one YAML document", file)
    raw = docs[0] if docs else {}
    if not isinstance(raw, dict):
        raise _lock_error("the lock must be a mapping", file)
    if raw.get("apiVersion", API_VERSION) != API_VERSION or raw.get("kind", KIND) != KIND:
        raise _lock_error(f"expected apiVersion {API_VERSION} and kind {KIND}", file)
    plugins = raw.get("plugins")
    plugins = [] if plugins is None else plugins
    if not isinstance(plugins, list):
        raise _lock_error("`plugins` must be a list", file)
    entries: dict[str, LockEntry] = {}
    for i, item in enumerate(plugins):
        if not isinstance(item, dict):
            raise _lock_error(f"plugins[{i}] must be a mapping", file)
        for key in ("name", "url", "ref", "commit"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise _lock_error(f"plugins[{i}].{key} is missing or not a string", file)
        commit, req = item["commit"], item.get("requirementsHash")
        if not _COMMIT.match(commit):
            raise _lock_error(f"plugins[{i}].commit {commit!r} is not a full commit id", file)
        if req is not None and not (isinstance(req, str) and _SHA256.match(req)):
            raise _lock_error(f"plugins[{i}].requirementsHash {req!r} is not a sha256 hex digest", file)
        if item["name"] in entries:
            raise _lock_error(f"plugin {item['name']!r} is listed twice", file)
        entries[item["name"]] = LockEntry(item["name"], item["url"], item["ref"], commit, req)
    return Lock(entries, present=True)


def read_lock(repo_root: Path) -> Lock:
    path = Path(repo_root) / LOCK_FILE
    return parse_lock(path.read_bytes() if path.is_file() else None)


def write_lock(repo_root: Path, lock: Lock) -> Path:
    """Write `devlane.lock` atomically."""
    return write_atomic(Path(repo_root) / LOCK_FILE, lock.dump())


def requirements_hash_at(mirror: plugin_cache.Mirror, commit: str, subdir: str) -> str | None:
    prefix = f"{subdir.strip('/')}/" if subdir.strip("/") else ""
    return requirements_hash_of(mirror.read(commit, prefix + REQUIREMENTS))


# --------------------------------------------------------------------------------------------------
# devlane plugins lock


@dataclass
class LockReport:
    lock: Lock
    pinned: list[str] = field(default_factory=list)  # new entries
    moved: list[tuple[str, str, str]] = field(default_factory=list)  # (name, old commit, new commit)
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    changed: bool = False


def _pin(spec: GitSpec) -> LockEntry:
    mirror = plugin_cache.Mirror(spec.url, spec.name)
    with plugin_cache.file_lock(mirror.path.with_suffix(".lock")):
        commit = mirror.resolve(spec.ref)
        mirror.pin(commit)
        if not mirror.is_plugin_dir(commit, spec.subdir):
            inside = f"directory {spec.subdir}" if spec.subdir else "the repository root"
            raise fail(
                f"{spec.url} @ {spec.ref} (commit {commit[:12]}) has neither main.py nor plugin.yaml in {inside}",
                Where(plugin=spec.name),
                f"check the URL and ref of plugin {spec.name} ({spec.given_by}): it must point at the plugin",
                code="plugin-source",
            )
        req = requirements_hash_at(mirror, commit, spec.subdir)
    return LockEntry(spec.name, spec.url, spec.ref, commit, req)


def lock_plugins(
    repo_root: Path,
    specs: dict[str, GitSpec],
    update: Iterable[str] = (),
    update_all: bool = False,
    log: Log = _quiet,
) -> LockReport:
    """Pin `specs` in `repo_root/devlane.lock` (see the module doc); writes the file when it changes."""
    repo_root = Path(repo_root)
    old = read_lock(repo_root)
    update = list(dict.fromkeys(update))
    unknown = [n for n in update if n not in specs]
    if unknown:
        known = ", ".join(sorted(specs)) or "none"
        hint = "name a plugin listed in devlane.lock, as written in its plugin definition"
        problems = [Problem(f"--update {n}: not a git plugin source of this repository (git sources: {known})",
                            Where(plugin=n), hint, code="lock-update") for n in unknown]
        raise UsageError(problems)
    report = LockReport(Lock(present=True))
    problems: list[Problem] = []
    for name in sorted(specs):
        spec = specs[name]
        prev = old.entries.get(name)
        same_source = prev is not None and prev.url == spec.url and prev.ref == spec.ref
        if same_source and not update_all and name not in update:
            report.lock.entries[name] = prev
            report.kept.append(name)
            continue
        try:
            entry = _pin(spec)
        except DevlaneError as exc:
            problems += exc.problems
            continue
        report.lock.entries[name] = entry
        short = entry.commit[:12]
        if prev is None:
            report.pinned.append(name)
            log(f"locked {name} at {short} ({spec.url} @ {spec.ref})")
        elif prev.commit != entry.commit or prev.url != entry.url or prev.ref != entry.ref:
            report.moved.append((name, prev.commit, entry.commit))
            log(f"moved {name} from {prev.commit[:12]} to {short} ({spec.url} @ {spec.ref})")
        else:
            report.kept.append(name)
            log(f"{name} is already at the newest commit of {spec.ref} ({short})")
    if problems:
        raise DevlaneError(problems)
    report.dropped = sorted(set(old.entries) - set(specs))
    for name in report.dropped:
        log(f"dropped {name} (no longer used)")
    path = repo_root / LOCK_FILE
    if specs or old.present:
        text = report.lock.dump()
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_lock(repo_root, report.lock)
            report.changed = True
    return report


# --------------------------------------------------------------------------------------------------
# devlane plugins fetch


@dataclass
class FetchReport:
    fetched: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)


def fetch_plugins(lock: Lock, log: Log = _quiet) -> FetchReport:
    """Export every locked commit into the cache (``plugins/<commit>/``); already cached ones are kept."""
    report = FetchReport()
    problems: list[Problem] = []
    for name in sorted(lock.entries):
        entry = lock.entries[name]
        path = plugin_cache.checkout_path(entry.commit)
        if path.is_dir():
            report.cached.append(name)
            log(f"{name} {entry.commit[:12]} already in the cache ({path})")
            continue
        try:
            mirror = plugin_cache.Mirror(entry.url, name)
            with plugin_cache.file_lock(mirror.path.with_suffix(".lock")):
                mirror.ensure_commit(entry.commit)
                path, _ = mirror.export(entry.commit)
        except DevlaneError as exc:
            problems += exc.problems
            continue
        report.fetched.append(name)
        log(f"fetched {name} {entry.commit[:12]} into {path}")
    if problems:
        raise DevlaneError(problems)
    return report


def stale_pins(specs: dict[str, GitSpec], lock: Lock) -> list[Problem]:
    """Git sources the lock does not pin as the repository now names them (fetch refuses these)."""
    out = []
    for name, spec in sorted(specs.items()):
        entry = lock.entries.get(name)
        if entry is None:
            out.append(Problem(f"plugin {name!r} ({spec.url} @ {spec.ref}) is not pinned in {LOCK_FILE}",
                               Where(plugin=name, file=LOCK_FILE), "run `devlane plugins lock`, then fetch again",
                               code="plugin-not-pinned"))
        elif (entry.url, entry.ref) != (spec.url, spec.ref):
            out.append(Problem(f"{LOCK_FILE} pins plugin {name!r} to {entry.url} @ {entry.ref}, but "
                               f"{spec.given_by} now says {spec.url} @ {spec.ref}", Where(plugin=name, file=LOCK_FILE),
                               "run `devlane plugins lock`, then fetch again", code="plugin-lock-stale"))
    return out
