"""What the cache remembers of a work tree's files between renders, as git's index does: each file's stat
signature with its blob id and SHA-256, so a render after a one-file change reads and hashes that one
file, and takes the others' parses from the cache by the blob ids their signatures still name.

A signature is (size, mtime, ctime, inode, device), all of which a change of content, a rename over the
file or a copy in its place alters; ctime cannot be set from user space. Timestamps are coarse on some
filesystems (a kernel tick, two seconds on FAT), so a file written twice within one tick could keep its
signature: as git does with "racily clean" entries, a file changed less than `RACY_NS` before it was read
is never recorded, and is read again by the next render.

The index is one cache entry per work tree and listing, keyed by its real path, the user and the host (a shared
cache directory can hold several machines' or containers' trees at one path), and holds only files as
they were read: a damaged or foreign entry is a miss like any other, and costs reading every file once.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time

from .cache import Cache

Signature = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device

KIND = "files-1"
RACY_NS = 5 * 1_000_000_000


def signature(st: os.stat_result) -> Signature:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


class FileIndex:
    """The remembered files of the work tree at `root` (a real path) that one listing (`scope`: its globs)
    gives; each listing keeps its own, so one never drops another's files."""

    def __init__(self, cache: Cache, root: str, scope: str = ""):
        self.cache = cache
        self.key = hashlib.blake2b(f"{os.getuid()}\0{socket.gethostname()}\0{root}\0{scope}".encode(),
                                   digest_size=16).hexdigest()
        found = cache.get(KIND, self.key)
        self.entries: dict[str, list] = found if isinstance(found, dict) else {}
        self.started = time.time_ns()
        self.changed = False

    def lookup(self, path: str, sig: Signature) -> tuple[str, str] | None:
        """(blob id, SHA-256) of `path` when its signature is still the one recorded."""
        entry = self.entries.get(path)
        if type(entry) is list and len(entry) == 7 and tuple(entry[:5]) == sig:
            blob, sha = entry[5], entry[6]
            if type(blob) is str and type(sha) is str:
                return blob, sha
        return None

    def record(self, path: str, sig: Signature, blob: str, sha: str) -> None:
        """Remember `path` as read with signature `sig` (taken before reading), unless it changed too recently
        for its signature to tell a later change apart. (An older entry of a recent file can stay: its
        signature no longer matches, and ctime only moves forward.)"""
        if max(sig[1], sig[2]) > self.started - RACY_NS:
            return
        entry = [*sig, blob, sha]
        if self.entries.get(path) != entry:
            self.entries[path] = entry
            self.changed = True

    def save(self, listed: set[str]) -> None:
        """Store the index, without the files no longer listed (best effort, as every cache write)."""
        gone = [p for p in self.entries if p not in listed]
        for path in gone:
            del self.entries[path]
        if self.changed or gone:
            self.cache.put(KIND, self.key, self.entries)
