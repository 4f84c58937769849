"""`core.gitindex` against indexes real git writes: the blob ids `git ls-files -s` gives, in index versions 2, 3 and
4, and every case where the record must not be trusted (a file that moved since, a racily clean entry, a split or
SHA-256 index, a torn file, a `.git` that is a link or another user's, skip-worktree, intent-to-add, conflicts)."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.harness import git

from renderer.core import gitindex

FILES = {"a.yaml": "kind: A\n", "dir/b.yaml": "kind: B\nx: 1\n", "dir/sub/c.yaml": "kind: C\n" * 40,
         "run.sh": "#!/bin/sh\n"}
PAST = time.time() - 3600


def make_repo(root: Path, files: dict[str, str] = FILES, *init: str) -> Path:
    """A committed repository of `files`, each last changed an hour ago (so no entry is racily clean)."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (PAST, PAST))
    if (root / "run.sh").exists():
        (root / "run.sh").chmod(0o755)
    git(root, "init", "-q", "-b", "main", *init)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "files")
    return root


def listed(root: Path) -> dict[str, str]:
    """git's own answer: path -> blob id of every stage-0 entry."""
    out = {}
    for line in git(root, "ls-files", "-s").splitlines():
        meta, path = line.split("\t")
        out[path] = meta.split()[1]
    return out


def clean(root: Path) -> dict[str, tuple[str, int]]:
    index = gitindex.read(str(root))
    assert index is not None
    return {rel: found for rel in index.entries if (found := index.clean(str(root / rel), rel)) is not None}


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.mark.parametrize("version", [2, 3, 4])
def test_every_file_has_the_blob_id_git_gives_in_each_index_version(repo, version):
    git(repo, "update-index", "--index-version", str(version))
    expected = {rel: (blob, (repo / rel).stat().st_size) for rel, blob in listed(repo).items()}
    assert clean(repo) == expected and len(expected) == len(FILES)
    assert expected["a.yaml"][0] == hashlib.sha1(b"blob 8\0kind: A\n").hexdigest()


def test_an_index_written_without_its_checksum_reads_the_same(repo):
    """`index.skipHash` (git 2.40) writes twenty zero bytes where the checksum goes."""
    index = repo / ".git" / "index"
    stamp = os.stat(index).st_mtime_ns
    index.write_bytes(index.read_bytes()[:-20] + bytes(20))
    os.utime(index, ns=(stamp, stamp))
    assert set(clean(repo)) == set(FILES)


def test_a_file_that_moved_since_git_looked_is_not_clean(repo):
    (repo / "a.yaml").write_text("kind: Z\n")  # the same size, another content
    os.utime(repo / "a.yaml", (PAST, PAST))  # and the old mtime back: the ctime still moved
    (repo / "dir/b.yaml").write_text("kind: B\nx: 22\n")
    (repo / "dir/sub/c.yaml").unlink()
    (repo / "dir/sub/c.yaml").symlink_to("../b.yaml")
    assert set(clean(repo)) == {"run.sh"}


@pytest.mark.parametrize("field", ["ctime", "mtime", "dev", "ino", "uid", "gid", "size"])
def test_each_stat_field_is_compared(repo, field, monkeypatch):
    index = gitindex.read(str(repo))
    path = str(repo / "a.yaml")
    real = os.lstat(path)
    assert index.clean(path, "a.yaml") is not None
    fields = {"ctime": "st_ctime_ns", "mtime": "st_mtime_ns", "dev": "st_dev", "ino": "st_ino", "uid": "st_uid",
              "gid": "st_gid", "size": "st_size"}

    class Moved:
        def __getattr__(self, name):
            value = getattr(real, name)
            return value + (1 if name == fields[field] else 0)

    monkeypatch.setattr(gitindex.os, "lstat", lambda _p: Moved())
    assert index.clean(path, "a.yaml") is None


def test_seconds_and_nanoseconds_are_each_compared(repo, monkeypatch):
    index = gitindex.read(str(repo))
    path = str(repo / "a.yaml")
    real = os.lstat(path)
    for delta in (1_000_000_000, 1):  # a second later, a nanosecond later
        for name in ("st_ctime_ns", "st_mtime_ns"):
            class Moved:
                def __getattr__(self, attr, name=name, delta=delta):
                    return getattr(real, attr) + (delta if attr == name else 0)

            monkeypatch.setattr(gitindex.os, "lstat", lambda _p, m=Moved: m())
            assert index.clean(path, "a.yaml") is None, (name, delta)


def test_a_file_changed_within_the_index_timestamp_is_racily_clean_and_not_trusted(repo):
    future = time.time() + 3600
    os.utime(repo / "a.yaml", (future, future))
    git(repo, "update-index", "--refresh")  # git records the new stat data: an mtime after the index's own
    index = gitindex.read(str(repo))
    assert "a.yaml" not in index.entries and "dir/b.yaml" in index.entries


def test_an_entry_of_the_same_second_as_the_index_is_racy(tmp_path):
    repo = make_repo(tmp_path / "repo")
    index_file = repo / ".git" / "index"
    entry = os.lstat(repo / "a.yaml").st_mtime_ns
    os.utime(index_file, ns=(entry, entry))  # the index written in the very nanosecond the file was
    assert "a.yaml" not in gitindex.read(str(repo)).entries
    os.utime(index_file, ns=(entry + 1, entry + 1))
    assert "a.yaml" in gitindex.read(str(repo)).entries


def test_skip_worktree_intent_to_add_conflicts_links_and_empty_files_are_left_out(repo):
    git(repo, "update-index", "--skip-worktree", "dir/b.yaml")
    (repo / "new.yaml").write_text("kind: N\n")
    git(repo, "add", "-N", "new.yaml")
    (repo / "link.yaml").symlink_to("a.yaml")
    (repo / "empty.yaml").write_text("")
    git(repo, "add", "link.yaml", "empty.yaml")
    index = gitindex.read(str(repo))
    assert set(index.entries) == {"a.yaml", "dir/sub/c.yaml", "run.sh"}


def test_a_conflicted_path_is_left_out(repo):
    blob = listed(repo)["a.yaml"]
    subprocess.run(["git", "-C", str(repo), "update-index", "--index-info"], check=True, text=True,
                   input=f"0 {'0' * 40}\ta.yaml\n100644 {blob} 1\ta.yaml\n100644 {blob} 2\ta.yaml\n")
    assert "a.yaml" in git(repo, "ls-files", "-u")
    index = gitindex.read(str(repo))
    assert "a.yaml" not in index.entries and "dir/b.yaml" in index.entries


def test_a_split_index_is_declined(repo):
    git(repo, "update-index", "--split-index")
    assert gitindex.read(str(repo)) is None


def test_a_sha256_repository_is_declined(tmp_path):
    repo = make_repo(tmp_path / "repo", FILES, "--object-format=sha256")
    assert gitindex.read(str(repo)) is None


def test_attributes_in_the_git_directory_are_declined(repo):
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("*.yaml text eol=crlf\n")
    assert gitindex.read(str(repo)) is None


def test_a_git_directory_that_is_a_link_or_a_file_is_declined(repo, tmp_path):
    moved = tmp_path / "elsewhere.git"
    shutil.move(repo / ".git", moved)
    (repo / ".git").symlink_to(moved)
    assert gitindex.read(str(repo)) is None
    (repo / ".git").unlink()
    (repo / ".git").write_text(f"gitdir: {moved}\n")
    assert gitindex.read(str(repo)) is None
    (repo / ".git").unlink()
    assert gitindex.read(str(repo)) is None


def test_an_index_or_config_that_is_a_link_is_declined(repo):
    index = repo / ".git" / "index"
    index.rename(repo / ".git" / "index.real")
    index.symlink_to("index.real")
    assert gitindex.read(str(repo)) is None
    index.unlink()
    (repo / ".git" / "index.real").rename(index)
    assert gitindex.read(str(repo)) is not None
    config = repo / ".git" / "config"
    config.rename(repo / ".git" / "config.real")
    config.symlink_to("config.real")
    assert gitindex.read(str(repo)) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
@pytest.mark.parametrize("owned", [".git", ".git/index", ".git/config"])
def test_a_git_directory_index_or_config_of_another_user_is_declined(repo, owned):
    os.chown(repo / owned, 65534, 65534)
    assert gitindex.read(str(repo)) is None


def test_a_torn_or_truncated_index_is_declined(repo):
    index = repo / ".git" / "index"
    data = index.read_bytes()
    index.write_bytes(data[:40] + bytes([data[40] ^ 1]) + data[41:])
    assert gitindex.read(str(repo)) is None
    index.write_bytes(data[:-1])
    assert gitindex.read(str(repo)) is None
    index.write_bytes(b"")
    assert gitindex.read(str(repo)) is None


def sealed(body: bytes) -> bytes:
    return body + hashlib.sha1(body).digest()


def test_an_index_of_another_signature_or_version_is_declined(repo):
    body = (repo / ".git" / "index").read_bytes()[:-20]
    for head in (b"DIRX" + body[4:], body[:4] + struct.pack(">I", 5) + body[8:],
                 body[:4] + struct.pack(">I", 1) + body[8:]):
        assert gitindex._parse(time.time_ns(), sealed(head)) is None
    assert gitindex._parse(time.time_ns(), sealed(body)) is not None


def test_an_extended_entry_in_a_version_2_index_is_declined(repo):
    body = bytearray((repo / ".git" / "index").read_bytes()[:-20])
    assert struct.unpack_from(">I", body, 4)[0] == 2
    flags_at = 12 + 60
    struct.pack_into(">H", body, flags_at, struct.unpack_from(">H", body, flags_at)[0] | 0x4000)
    assert gitindex._parse(time.time_ns(), sealed(bytes(body))) is None


def test_extensions_after_the_entries_are_read_and_a_short_one_declined(repo):
    git(repo, "update-index", "--index-version", "2")
    body = (repo / ".git" / "index").read_bytes()[:-20]
    parsed = gitindex._parse(time.time_ns(), sealed(body))
    assert parsed is not None
    with_ext = body + b"ZZZZ" + struct.pack(">I", 3) + b"abc"
    assert gitindex._parse(time.time_ns(), sealed(with_ext)) == parsed
    assert gitindex._parse(time.time_ns(), sealed(body + b"link" + struct.pack(">I", 0))) is None
    assert gitindex._parse(time.time_ns(), sealed(body + b"ZZZZ" + struct.pack(">I", 9) + b"abc")) is None
    assert gitindex._parse(time.time_ns(), sealed(body + b"ZZZ")) is None


def test_a_name_length_that_disagrees_with_the_name_is_left_out(repo):
    git(repo, "update-index", "--index-version", "2")
    body = bytearray((repo / ".git" / "index").read_bytes()[:-20])
    flags_at = 12 + 60
    struct.pack_into(">H", body, flags_at, struct.unpack_from(">H", body, flags_at)[0] + 1)
    parsed = gitindex._parse(time.time_ns(), sealed(bytes(body)))
    assert parsed is not None and "a.yaml" not in parsed.entries and "run.sh" in parsed.entries


def test_names_of_every_padding_and_shared_prefixes_in_versions_2_and_4(tmp_path):
    """Names of 1 to 24 bytes pad an entry with each count of NULs (1 to 8); version 4 strips shared prefixes."""
    files = {"n" * k: f"kind: N{k}\n" for k in range(1, 25)}
    files.update({f"deep/{'p' * 40}/{i:03}.yaml": f"kind: D{i}\n" for i in range(200)})
    repo = make_repo(tmp_path / "repo", files)
    for version in (2, 4):
        git(repo, "update-index", "--index-version", str(version))
        assert set(clean(repo)) == set(files), version


def test_the_varint_of_version_4_is_gits():
    assert gitindex._varint(bytes([0x05]), 0) == (5, 1)
    assert gitindex._varint(bytes([0x80, 0x00]), 0) == (128, 2)  # git's offset encoding: 1 added per continuation
    assert gitindex._varint(bytes([0x81, 0x7F]), 0) == (((1 + 1) << 7) | 0x7F, 2)
    assert gitindex._varint(bytes([0xFF, 0xFF, 0x01]), 0) == ((((127 + 1) << 7 | 127) + 1) << 7 | 1, 3)


def test_a_version_4_prefix_longer_than_the_previous_name_is_declined(repo):
    git(repo, "update-index", "--index-version", "4")
    body = bytearray((repo / ".git" / "index").read_bytes()[:-20])
    body[12 + 62] = 0x10  # the first entry strips 16 bytes of a previous name that is empty
    assert gitindex._parse(time.time_ns(), sealed(bytes(body))) is None


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_damage_to_a_sealed_index_is_an_answer_never_a_crash(tmp_path_factory, data):
    repo = _fuzz_repo(tmp_path_factory)
    version = data.draw(st.sampled_from([2, 3, 4]))
    body = bytearray(_bodies(repo)[version])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(body) - 1))
        body[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    result = gitindex._parse(time.time_ns(), sealed(bytes(body[:cut])))
    assert result is None or isinstance(result.entries, dict)


_CACHE: dict = {}


def _fuzz_repo(factory) -> Path:
    if "repo" not in _CACHE:
        _CACHE["repo"] = make_repo(factory.mktemp("fuzz") / "repo")
    return _CACHE["repo"]


def _bodies(repo: Path) -> dict[int, bytes]:
    if "bodies" not in _CACHE:
        bodies = {}
        git(repo, "update-index", "--skip-worktree", "run.sh")  # an extended entry in versions 3 and 4
        for version in (2, 3, 4):
            if version == 2:
                git(repo, "update-index", "--no-skip-worktree", "run.sh")
            else:
                git(repo, "update-index", "--skip-worktree", "run.sh")
            git(repo, "update-index", "--index-version", str(version))
            bodies[version] = (repo / ".git" / "index").read_bytes()[:-20]
        _CACHE["bodies"] = bodies
    return _CACHE["bodies"]


@pytest.mark.parametrize("line", ["\tobjectformat = sha256", "\tobjectFormat = sha256"])
def test_a_config_that_says_sha256_objects_is_declined_whatever_the_index_looks_like(repo, line):
    """git writes `objectformat`; a user may write it in any case (config keys are case-insensitive)."""
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + f"[extensions]\n{line}\n")
    assert gitindex.read(str(repo)) is None


def test_an_index_or_config_of_exactly_the_limit_is_read_and_one_byte_more_is_not(repo, monkeypatch):
    index = (repo / ".git" / "index").stat().st_size
    monkeypatch.setattr(gitindex, "_MAX_INDEX", index)
    assert gitindex.read(str(repo)) is not None
    monkeypatch.setattr(gitindex, "_MAX_INDEX", index - 1)
    assert gitindex.read(str(repo)) is None
    monkeypatch.setattr(gitindex, "_MAX_INDEX", index)
    config = (repo / ".git" / "config").stat().st_size
    monkeypatch.setattr(gitindex, "_MAX_CONFIG", config)
    assert gitindex.read(str(repo)) is not None
    monkeypatch.setattr(gitindex, "_MAX_CONFIG", config - 1)
    assert gitindex.read(str(repo)) is None


def test_an_empty_index_has_no_entries_and_is_no_error():
    header = b"DIRC" + struct.pack(">II", 2, 0)
    assert gitindex._parse(time.time_ns(), sealed(header)) == gitindex.Index({})
    assert gitindex._parse(time.time_ns(), sealed(header)[:-1]) is None


def test_an_index_without_extensions_and_one_ending_in_an_empty_extension(repo):
    git(repo, "update-index", "--index-version", "2")
    body = (repo / ".git" / "index").read_bytes()[:-20]
    parsed = gitindex._parse(time.time_ns(), sealed(body))
    count = struct.unpack_from(">I", body, 8)[0]
    end = 12
    for _ in range(count):  # walk the entries of this version-2 index to where its extensions start
        name_end = body.index(b"\0", end + 62)
        end += (name_end - end + 8) & ~7
    bare = body[:end]
    assert gitindex._parse(time.time_ns(), sealed(bare)) == parsed
    assert gitindex._parse(time.time_ns(), sealed(bare + b"ZZZZ" + struct.pack(">I", 0))) == parsed
    assert gitindex._parse(time.time_ns(), sealed(bare[:-1])) is None  # the last entry's padding cut short


def test_an_extension_size_is_read_from_all_four_bytes(repo):
    body = (repo / ".git" / "index").read_bytes()[:-20]
    assert gitindex._parse(time.time_ns(), sealed(body + b"ZZZZ" + struct.pack(">I", 0x01000003) + b"abc")) is None


def _index(version: int, entries: list[tuple[bytes, int | None]], stamp: int) -> bytes:
    """An index written by hand: each entry (name, extended flags or None), a regular file of 5 bytes last
    changed at `stamp` seconds."""
    body = b"DIRC" + struct.pack(">II", version, len(entries))
    for name, extended in entries:
        flags = len(name) | (0x4000 if extended is not None else 0)
        head = struct.pack(">10I20sH", stamp, 0, stamp, 0, 1, 2, 0o100644, 3, 4, 5, bytes(range(20)), flags)
        head += struct.pack(">H", extended) if extended is not None else b""
        body += head + name + bytes(((len(head) + len(name) + 8) & ~7) - len(head) - len(name))
    return sealed(body)


@pytest.mark.parametrize("extended,trusted", [(None, True), (0, True), (0x4000, False), (0x2000, False),
                                              (0x8000, True)])
def test_only_skip_worktree_and_intent_to_add_among_the_extended_flags_leave_an_entry_out(extended, trusted):
    data = _index(3, [(b"a.yaml", extended), (b"b.yaml", None)], 1000)
    parsed = gitindex._parse(2000 * 10**9, data)
    assert parsed is not None and ("a.yaml" in parsed.entries) is trusted and "b.yaml" in parsed.entries
    assert parsed.entries["b.yaml"] == ((1000, 0, 1000, 0, 1, 2, 3, 4, 5), bytes(range(20)).hex())


def test_a_file_whose_size_moved_while_it_was_read_is_declined(repo, monkeypatch):
    """fstat said one size, the read gave another: the file changed under the read (here: it seems to have grown)."""
    real = os.fstat

    class Shrunk:
        def __init__(self, st):
            self._st = st

        def __getattr__(self, name):
            return getattr(self._st, name) - (1 if name == "st_size" else 0)

    assert gitindex.read(str(repo)) is not None
    monkeypatch.setattr(gitindex.os, "fstat", lambda fd: Shrunk(real(fd)))
    assert gitindex._read(str(repo / ".git" / "config"), 1 << 20) is None
    assert gitindex._read(str(repo / ".git" / "index"), 1 << 20) is None
