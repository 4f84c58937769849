"""What git's own index says of the work tree: the blob id of each tracked file, with the stat data git saw
when it last hashed that file (`git status` trusts the same record).

A re-render after a one-file change reads and hashes only the files whose stat data moved since git's last
look, as git does. The record is git's, in the repository's own `.git` directory, never devlane's cache (which
others can write): a signature there stood in for content once and was removed for that reason.

Declined (None: read every file) whenever the record might not be about these bytes:

- `.git` is not a real directory owned by this user (git's own `safe.directory` rule), or the index is not a
  regular file of this user's, or its checksum does not hold (a torn write);
- the repository's objects are SHA-256 (`extensions.objectFormat`), the index is split (`link`), or
  `.git/info/attributes` could set a filter;

and per entry (`Index.clean`): not stage 0, not a regular file, skip-worktree or intent-to-add, a size of 0
(git's mark of a racily clean entry it smudged), racily clean (changed within the index's own timestamp), or any
of ctime, mtime (with nanoseconds), device, inode, owner, group or size differing from the file's `lstat` now.

A filter (`.gitattributes`: line endings, LFS) makes git's blob the cleaned text, not the bytes on disk: callers
compare the blob with one they hashed from the bytes themselves, with the size they read (`source.unchanged`).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from typing import NamedTuple

_HEAD = struct.Struct(">4sII")
_ENTRY = struct.Struct(">10I20sH")  # ctime s, ns; mtime s, ns; dev, ino, mode, uid, gid, size; sha-1; flags
_EXTENDED = 0x4000  # flags: 16 more bits of extended flags follow (version 3 and later)
_STAGE = 0x3000
_NAME_LENGTH = 0x0FFF
_SKIP_WORKTREE, _INTENT_TO_ADD = 0x4000, 0x2000  # extended flags
_REGULAR = 0o100000  # the object type bits of a regular file's mode (0o100644, 0o100755)
_MASK = 0xFFFFFFFF  # the index keeps 32 bits of each stat field
_MAX_INDEX = 256 * 1024 * 1024
_MAX_CONFIG = 1024 * 1024
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


class Index(NamedTuple):
    """The stage-0 regular files git recorded: path -> (stat data as the index keeps it, blob id)."""

    entries: dict[str, tuple[tuple[int, ...], str]]

    def clean(self, full: str, rel: str) -> tuple[str, int] | None:
        """The blob id git recorded for `rel` (at `full`) and the file's size, when its stat data is still what
        git saw."""
        found = self.entries.get(rel)
        if found is None:
            return None
        try:
            st = os.lstat(full)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        ctime, mtime = st.st_ctime_ns, st.st_mtime_ns
        now = (ctime // 1_000_000_000 & _MASK, ctime % 1_000_000_000, mtime // 1_000_000_000 & _MASK,
               mtime % 1_000_000_000, st.st_dev & _MASK, st.st_ino & _MASK, st.st_uid & _MASK, st.st_gid & _MASK,
               st.st_size & _MASK)
        return (found[1], st.st_size) if now == found[0] else None


def read(root: str) -> Index | None:
    """The index of the repository whose top directory is `root` (None: none, or one not to trust)."""
    gitdir = os.path.join(root, ".git")
    try:
        st = os.lstat(gitdir)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != _euid():
        return None
    config = _read(os.path.join(gitdir, "config"), _MAX_CONFIG)
    if config is None or b"objectformat" in config[1].lower() or os.path.lexists(os.path.join(gitdir, "info",
                                                                                               "attributes")):
        return None
    found = _read(os.path.join(gitdir, "index"), _MAX_INDEX)
    if found is None:
        return None
    return _parse(*found)


def _euid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else -1


def _read(path: str, limit: int) -> tuple[int, bytes] | None:
    """A regular file of this user's, not a link, read whole in one call: (its mtime in nanoseconds, its bytes)."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != _euid() or st.st_size > limit:
            return None
        data = os.read(fd, st.st_size + 1)
        return (st.st_mtime_ns, data) if len(data) == st.st_size else None  # a file changing meanwhile: declined
    except OSError:
        return None
    finally:
        os.close(fd)


def _parse(written: int, data: bytes) -> Index | None:
    """The entries of an index file (versions 2 to 4) written at `written` (ns); None when it is not one."""
    if len(data) < _HEAD.size + 20:
        return None
    body, trailer = data[:-20], data[-20:]
    if trailer != bytes(20) and hashlib.sha1(body).digest() != trailer:  # zeros: index.skipHash
        return None
    signature, version, count = _HEAD.unpack_from(body)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    racy = (written // 1_000_000_000, written % 1_000_000_000)
    entries: dict[str, tuple[tuple[int, ...], str]] = {}
    pos, previous = _HEAD.size, b""
    try:
        for _ in range(count):
            (cs, cn, ms, mn, dev, ino, mode, uid, gid, size, sha, flags) = _ENTRY.unpack_from(body, pos)
            pos += _ENTRY.size
            hidden = 0  # skip-worktree or intent-to-add, from the extended flags
            if flags & _EXTENDED:
                if version < 3:
                    return None
                hidden = int.from_bytes(body[pos:pos + 2]) & (_SKIP_WORKTREE | _INTENT_TO_ADD)
                pos += 2
            if version == 4:
                strip, pos = _varint(body, pos)
                end = body.index(b"\0", pos)
                if strip > len(previous):
                    return None
                name = previous[:len(previous) - strip] + body[pos:end]
                pos = end + 1
            else:
                start = pos - _ENTRY.size - (2 if flags & _EXTENDED else 0)
                end = body.index(b"\0", pos)
                name = body[pos:end]
                pos = start + ((end - start + 8) & ~7)  # 1 to 8 NULs pad the entry to a multiple of 8 bytes
            previous = name
            if hidden or flags & _STAGE or mode & 0o170000 != _REGULAR or size == 0 or (ms, mn) >= racy \
                    or flags & _NAME_LENGTH != min(len(name), _NAME_LENGTH):
                continue
            entries[os.fsdecode(name)] = ((cs, cn, ms, mn, dev, ino, uid, gid, size), sha.hex())
    except (struct.error, ValueError, IndexError):
        return None
    if pos > len(body) or _split(body, pos):
        return None
    return Index(entries)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (index version 4's prefix lengths): each continuation adds one before shifting."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


def _split(body: bytes, pos: int) -> bool:
    """Whether the extensions after the entries say the index is split (its entries are in a shared index),
    or do not parse as extensions."""
    while pos < len(body):
        if pos + 8 > len(body):
            return True
        signature, size = body[pos:pos + 4], int.from_bytes(body[pos + 4:pos + 8])
        if signature == b"link":
            return True
        pos += 8 + size
    return pos != len(body)
