"""The lanes branch: the one place that holds every lane (issue 43), the GitOps source Argo CD or Flux reads.

A branch of the repository's remote (`--lanes-branch`, the operator's choice, never the pull request's) holding
`flows/<id>/` as render writes it, `.devlane/state/<id>/` (the provision records the lane's External plugins need
to be deleted later) and a README. Render commits a lane there, delete and gc remove it there, from any fresh
checkout: nothing a CI job needs lives in a work tree that goes away with the job.

git is run through its CLI, as a user's credential helpers and `GIT_CONFIG_*` settings expect, and never touches the
user's HEAD, index, work tree or branches: the tip is fetched into a private ref, read blob by blob into a temporary
directory, and the new tree is built from that directory with plumbing (`hash-object --no-filters`, a temporary
index, `write-tree`, `commit-tree`), so no attribute, filter or autocrlf setting changes what is committed. The only
push names the lanes branch explicitly and never forces: a job that lost a race with another one (another pull
request's lane) fetches the new tip, applies its change again (a file operation on what it computed once: plugins
never run twice) and retries, a bounded number of times.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..core import tempdirs
from ..core.secrets_mask import mask
from ..errors import DevlaneError, Problem, UsageError, fail

T = TypeVar("T")

DEFAULT_ATTEMPTS = 5
MAX_ATTEMPTS = 20
RETRY_DELAY = 0.5  # seconds before the second attempt, doubled for each one after it (plus up to as much jitter)
PRIVATE_REF = "refs/devlane/lanes/"  # + the branch: where the fetched tip is kept while a command runs
ALLOWED = ("README.md", "flows/", ".devlane/state/")  # what a lanes branch holds; anything else is not one
README = """# devlane lanes

Written by devlane: every open pull request's lane (`flows/<id>/`) and the provision records its External plugins
need to be deleted (`.devlane/state/<id>/`). Argo CD or Flux read `flows/`; `devlane render --lanes-branch`,
`delete --lanes-branch` and `gc --lanes-branch` change it. Never commit here by hand.
"""
_IDENTITY = {"GIT_AUTHOR_NAME": "devlane", "GIT_AUTHOR_EMAIL": "devlane@users.noreply.github.com",
             "GIT_COMMITTER_NAME": "devlane", "GIT_COMMITTER_EMAIL": "devlane@users.noreply.github.com"}
# a remote's words for a ref another push changed while this one was checked (the same race as a non-fast-forward)
_RACES = ("failed to update ref", "cannot lock ref", "incorrect old value", "failed to lock")
_HINT = "pass --lanes-branch NAME: a branch only devlane writes (default in the bundled action: devlane-lanes)"


@dataclass(frozen=True)
class LanesRef:
    """Which branch of which remote holds the lanes, seen from the local repository `repo`."""

    repo: Path
    branch: str
    remote: str = "origin"
    attempts: int = DEFAULT_ATTEMPTS

    @property
    def where(self) -> str:
        """How messages name it: the branch and the remote (a URL with its credentials masked)."""
        return f"branch {self.branch} of {mask(self.remote)}"


@dataclass(frozen=True)
class Published:
    """What a publish did: `written` (a commit pushed) or `unchanged` (the tree was already that: nothing pushed)."""

    action: str
    commit: str | None  # the lanes branch's tip afterwards (None: no branch)
    attempts: int


def _git(repo: Path, *args: str, data: bytes | None = None, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    """git in `repo`, never prompting (a CI job has nobody to answer), in the C locale (its words are parsed)."""
    full = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C", **(env or {})}
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, env=full)
    except OSError as exc:
        raise fail(f"cannot run git: {exc.strerror}", hint="install git: the lanes branch is a git branch",
                   code="lanes-git") from None
    if check and done.returncode != 0:
        raise _git_error(args, done)
    return done


def _git_error(args: tuple[str, ...], done: subprocess.CompletedProcess) -> DevlaneError:
    said = mask(done.stderr.decode("utf-8", "replace").strip()) or f"exit status {done.returncode}"
    return fail(f"git {args[0]} failed: {said}", hint="check that the remote is reachable and that this job may "
                "push to it (GitHub: permissions: contents: write)", code="lanes-git")


def check(ref: LanesRef, refused: tuple[str, ...] = ()) -> None:
    """A usage error (exit 2) unless `ref.branch` can only be a lanes branch: a valid branch name that is neither the
    checked-out branch, nor the remote's default branch, nor one of `refused` (the pull request's base)."""
    name = ref.branch
    if not 1 <= ref.attempts <= MAX_ATTEMPTS:
        raise UsageError(f"--push-attempts {ref.attempts}: expected 1 to {MAX_ATTEMPTS}")
    if name.startswith("refs/") or _git(ref.repo, "check-ref-format", "--branch", name, check=False).returncode:
        raise UsageError(Problem(f"--lanes-branch {name!r} is not a branch name", hint=_HINT))
    head = _git(ref.repo, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.decode().strip()
    default = _remote_default(ref)
    bases = {b.removeprefix(f"{ref.remote}/").removeprefix("refs/heads/") for b in refused if b}
    for what, taken in (("the checked-out branch", head), (f"the default branch of {mask(ref.remote)}", default)):
        if taken and name == taken:
            raise UsageError(Problem(f"--lanes-branch {name} is {what}: devlane would commit lanes onto code",
                                     hint=_HINT))
    if name in bases:
        raise UsageError(Problem(f"--lanes-branch {name} is the pull request's base: devlane would commit lanes onto "
                                 "code", hint=_HINT))


def _remote_default(ref: LanesRef) -> str:
    """The remote's default branch (its HEAD), '' when it cannot tell (the fetch that follows reports why)."""
    done = _git(ref.repo, "ls-remote", "--symref", ref.remote, "HEAD", check=False)
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line[len("ref: refs/heads/"):-len("\tHEAD")]
    return ""


class Checkout:
    """The lanes branch's tip as files in a temporary directory (`tree`), and the way to publish a change to it. Use
    as a context manager: the directory and the private ref go at the end."""

    def __init__(self, ref: LanesRef, log: Callable[[str], None] | None = None):
        self.ref = ref
        self.log = log or (lambda _line: None)
        self.tip: str | None = None
        self.tree = Path()
        self._private = PRIVATE_REF + ref.branch

    def __enter__(self) -> Checkout:
        self._refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        self._drop_tree()
        _git(self.ref.repo, "update-ref", "-d", self._private, check=False)

    # -- reading ---------------------------------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Fetch the tip into the private ref and write its files out afresh."""
        self.tip = self._fetch()
        self._drop_tree()
        self.tree = Path(tempdirs.make("lanes"))
        if self.tip is not None:
            self._materialize(self.tip)

    def _drop_tree(self) -> None:
        if self.tree != Path():
            tempdirs.removed(self.tree)
            self.tree = Path()

    def _fetch(self) -> str | None:
        done = _git(self.ref.repo, "fetch", "--no-tags", "--quiet", "--no-write-fetch-head", self.ref.remote,
                    f"+refs/heads/{self.ref.branch}:{self._private}", check=False)
        if done.returncode != 0:
            if b"couldn't find remote ref" in done.stderr:
                _git(self.ref.repo, "update-ref", "-d", self._private, check=False)
                return None
            raise _git_error(("fetch",), done)
        return _git(self.ref.repo, "rev-parse", "--verify", "--quiet", f"{self._private}^{{commit}}"
                    ).stdout.decode().strip()

    def _materialize(self, commit: str) -> None:
        """The commit's files under `tree`, read as blobs (no filter, no attribute applies); a path a lanes branch
        never holds, a symlink or a submodule is an error naming it: the branch is not (only) devlane's."""
        listing = _git(self.ref.repo, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
        entries = []
        for item in filter(None, listing.split(b"\0")):
            meta, _, raw = item.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            path = raw.decode("utf-8", "surrogateescape")
            if kind != "blob" or mode not in ("100644", "100755") or not path.startswith(ALLOWED) or \
                    ".." in path.split("/"):
                what = "a symlink" if mode == "120000" else "a submodule" if kind == "commit" else "a file"
                raise fail(f"{self.ref.where} holds {path} ({what}), which devlane never writes there: is "
                           "--lanes-branch a code branch?", hint=_HINT + "; devlane writes only README.md, flows/ "
                           "and .devlane/state/ there", code="lanes-foreign")
            entries.append((path, sha))
        blobs = _git(self.ref.repo, "cat-file", "--batch", data=b"".join(s.encode() + b"\n" for _, s in entries)
                     ).stdout
        at = 0
        for path, _sha in entries:
            header_end = blobs.index(b"\n", at)
            size = int(blobs[at:header_end].split()[2])
            body = blobs[header_end + 1:header_end + 1 + size]
            at = header_end + 1 + size + 1
            target = self.tree / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)

    # -- writing ---------------------------------------------------------------------------------------------------

    def publish(self, apply: Callable[[Path], T], message: str) -> tuple[T, Published]:
        """`apply(tree)` changes the files; their tree is committed on the tip and pushed. When another job pushed
        first, fetch its tip, apply again and retry, at most `ref.attempts` times in all."""
        attempts = self.ref.attempts
        for attempt in range(1, attempts + 1):
            value = apply(self.tree)
            if not (self.tree / "README.md").exists() and any(self.tree.iterdir()):
                (self.tree / "README.md").write_text(README, encoding="utf-8")
            tree = self._write_tree()
            if (self.tip is None and not any(self.tree.iterdir())) or \
                    (self.tip is not None and tree == self._tree_of(self.tip)):
                return value, Published("unchanged", self.tip, attempt)
            commit = self._commit(tree, message)
            if self._push(commit):
                self.tip = commit
                return value, Published("written", commit, attempt)
            if attempt == attempts:
                break
            self.log(f"lanes {self.ref.where} moved; retrying (attempt {attempt + 1}/{attempts})")
            time.sleep(RETRY_DELAY * 2 ** (attempt - 1) * (1 + random.random()))
            self._refresh()
        raise fail(f"{self.ref.where} kept moving: {attempts} attempts to push lost the race to other jobs",
                   hint="run the job again, or raise --push-attempts", code="lanes-race")

    def _tree_of(self, commit: str) -> str:
        return _git(self.ref.repo, "rev-parse", f"{commit}^{{tree}}").stdout.decode().strip()

    def _write_tree(self) -> str:
        """The tree object of the files under `tree`, written into the repository's object store."""
        paths = sorted(p.relative_to(self.tree).as_posix() for p in self.tree.rglob("*")
                       if p.is_file() and not p.is_symlink())
        shas = _git(self.ref.repo, "hash-object", "-w", "--no-filters", "--stdin-paths",
                    data="".join(f"{self.tree / p}\n" for p in paths).encode()).stdout.decode().split()
        with tempdirs.scratch("lanes-index") as scratch:
            env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
            info = "".join(f"100644 {sha}\t{path}\0" for path, sha in zip(paths, shas, strict=True))
            _git(self.ref.repo, "update-index", "-z", "--index-info", data=info.encode(), env=env)
            return _git(self.ref.repo, "write-tree", env=env).stdout.decode().strip()

    def _commit(self, tree: str, message: str) -> str:
        """A commit of `tree` whose only parent is the tip (none: the branch's first), by devlane unless the job's
        environment names its own author and committer."""
        identity = {k: v for k, v in _IDENTITY.items() if not os.environ.get(k)}
        parents = ["-p", self.tip] if self.tip else []
        return _git(self.ref.repo, "commit-tree", tree, *parents, "-F", "-", data=message.encode(),
                    env=identity).stdout.decode().strip()

    def _push(self, commit: str) -> bool:
        """Push `commit` to the lanes branch, never forced: True when it landed, False when the branch moved (another
        job's push came first); any other refusal is an error naming git's reason."""
        done = _git(self.ref.repo, "push", "--porcelain", "--no-verify", "--no-follow-tags", self.ref.remote,
                    f"{commit}:refs/heads/{self.ref.branch}", check=False)
        if done.returncode == 0:
            return True
        out = done.stdout.decode("utf-8", "replace")
        rejected = [line for line in out.splitlines() if line.startswith("!")]
        if rejected and all("[rejected]" in line or any(r in line for r in _RACES) for line in rejected):
            return False
        if rejected:
            reason = rejected[0].rsplit("\t", 1)[-1].removeprefix("[remote rejected] (").removesuffix(")")
            told = [line[len("remote: "):].strip() for line in done.stderr.decode("utf-8", "replace").splitlines()
                    if line.startswith("remote: ") and line[len("remote: "):].strip()]
            said = f" ({'; '.join(told[-3:])})" if told else ""
            raise fail(f"the remote refused the push to {self.ref.where}: {mask(reason + said)}",
                       hint=f"let this job push to {self.ref.branch} (a branch protection rule, a hook)",
                       code="lanes-refused")
        raise _git_error(("push",), done)

