"""A content-addressed cache on disk: what a render derived from some bytes, kept under a key of those bytes.

Argo CD re-runs `cmp generate` on every refresh of every open pull request, and CI renders each push;
nearly all of a repository's files are the same each time. Entries are keyed by content (a file's git
blob id, a built input's tree digest), so a `--ref` render, a work-tree render and another user's render
of the same bytes share them, and a changed file is a new key, never a stale hit.

Safety, since a cache can be shared by concurrent renders and by the users of one sidecar:
- an entry is JSON behind a header holding its length and a BLAKE2 digest; a missing, truncated,
  corrupt or foreign entry is a miss, never an error, and nothing in it is executed on load
  (no pickle, no marshal);
- writes go to a temporary file in the entry's directory, then `os.replace`: a reader sees a whole
  entry or none, and two writers of one key write the same bytes;
- writing is best effort: a full disk, a read-only home or a permission problem costs the entry, not
  the render;
- the total size is bounded (`$DEVLANE_CACHE_SIZE`, default 1 GiB): least recently used entries go
  first (a hit refreshes an entry's mtime at most once an hour).

Entries live under `<root>/v1/<kind>-<salt>/`, the salt naming the code and library versions an entry
depends on (an upgrade starts afresh instead of misreading entries): one file per entry
(`<2 hex>/<key>`, for the few large ones: builds), or packs of many (`<name>.pack`, for parses: a render
writes one pack per process instead of thousands of files, since creating a file can cost more than
parsing it; each entry of a pack has its own digest, and the pack its index's).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE_ENV, SIZE_ENV = "DEVLANE_CACHE", "DEVLANE_CACHE_SIZE"
DEFAULT_LIMIT = 1024 ** 3
_LAYOUT = "v1"
_MAGIC = b"devlane-cache-1\n"
_DIGEST = 16  # bytes of BLAKE2b
_HEADER = len(_MAGIC) + 8 + _DIGEST
_TOUCH_AFTER = 3600.0  # seconds: an entry's mtime is its last use, to the hour
_EVICT_EVERY = 600.0  # seconds between size checks, unless a run wrote much
_STAMP = ".evicted"
_MODE = 0o644  # readable by the other users of a shared cache (mkstemp makes 0600); the directory decides writing
_KEY = re.compile(r"[0-9a-f]{16,128}\Z")
_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}


class Uncacheable(Exception):
    """A value JSON cannot carry exactly (a date, bytes, a set, a non-string key): it is not cached."""


def default_root() -> Path:
    """`$DEVLANE_CACHE`, else `$XDG_CACHE_HOME/devlane`, else `~/.cache/devlane`."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "devlane"


def size_limit(text: str | None = None) -> int:
    """The size bound in bytes from `$DEVLANE_CACHE_SIZE` (`500M`, `2G`, a number of bytes); the default
    when unset or unreadable (a typo must not turn the cache off or make it unbounded)."""
    text = (os.environ.get(SIZE_ENV, "") if text is None else text).strip().upper().removesuffix("B").removesuffix("I")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)", text)
    return int(float(m.group(1)) * _UNITS[m.group(2)]) if m else DEFAULT_LIMIT


def blob_id(data: bytes) -> str:
    """The git blob id of `data` (as `git hash-object`): the same key for a work-tree file and its blob."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def encode(value: Any) -> bytes:
    """JSON of `value`: `Uncacheable` for a value JSON has no form for (a date, bytes, a set). JSON also turns
    non-string keys into strings and tuples into lists without complaint; `exact` checks for those, and the
    YAML loader knows it without a walk (`yamlio.parse_stream`)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_refuse).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as exc:
        raise Uncacheable(str(exc)) from None


def exact(value: Any) -> bool:
    """Whether `encode` keeps `value` as it is: string keys only, and lists rather than tuples."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            if any(type(k) is not str for k in item):
                return False
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif isinstance(item, (tuple, dict, list)):
            return False
    return True


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


@dataclass
class Counters:
    """What one command did with the cache (shown under `--debug`)."""

    hits: int = 0
    misses: int = 0
    writes: int = 0
    written: int = 0  # bytes
    failed: int = 0  # writes that did not happen (disk full, permissions)
    kinds: dict[str, list[int]] = field(default_factory=dict)  # kind -> [hits, misses]

    def count(self, kind: str, hit: bool) -> None:
        pair = self.kinds.setdefault(kind, [0, 0])
        pair[0 if hit else 1] += 1
        if hit:
            self.hits += 1
        else:
            self.misses += 1

    def refused(self, kind: str) -> None:
        """Count an entry read but found not to hold (a caller's own check) as a miss, not a hit."""
        pair = self.kinds.setdefault(kind, [0, 0])
        if pair[0]:
            pair[0], self.hits = pair[0] - 1, self.hits - 1
        pair[1], self.misses = pair[1] + 1, self.misses + 1

    def summary(self) -> str:
        parts = ", ".join(f"{k} {h} hit(s) {m} miss(es)" for k, (h, m) in sorted(self.kinds.items()))
        return f"cache: {parts or 'not used'}; {self.writes} written ({self.written:,} bytes)" + (
            f", {self.failed} write(s) failed" if self.failed else "")


class Cache:
    """One cache directory. Every method is safe to call concurrently from several processes."""

    def __init__(self, root: Path, limit: int | None = None):
        self.root = root
        self.limit = size_limit() if limit is None else limit
        self.counters = Counters()
        self._top = os.path.join(root, _LAYOUT)
        self._real: set[str] = set()  # directories checked to be real ones (no symlink) on the way from the root

    def _path(self, kind: str, key: str) -> str:
        """The entry's path (a string: thousands are built per render, and `Path` costs more than reading)."""
        if not _KEY.match(key) or "/" in kind:
            raise ValueError(f"bad cache key {kind}/{key}")
        return f"{self._top}/{kind}/{key[:2]}/{key}"

    def _unlinked(self, directory: str, make: bool = False) -> bool:
        """Whether every directory from the root down to `directory` (made when missing, with `make`) is a real
        directory: a symlink planted anywhere in the cache is never followed, for reading, writing or clearing."""
        if directory in self._real:
            return True
        top = directory == str(self.root)
        parent = os.path.dirname(directory)
        if not top and (parent == directory or not self._unlinked(parent, make)):
            return False
        if make:
            try:
                (os.makedirs if top else os.mkdir)(directory, 0o755)
            except FileExistsError:
                pass
            except OSError:
                return False
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                return False
        except OSError:
            return False
        self._real.add(directory)
        return True

    def get(self, kind: str, key: str) -> Any | None:
        """The value stored under (`kind`, `key`), or None (also for an unreadable or damaged entry)."""
        path = self._path(kind, key)
        value = _read_entry(path) if self._unlinked(os.path.dirname(path)) else None
        self.counters.count(kind, value is not None)
        return value

    def get_raw(self, kind: str, key: str) -> bytes | None:
        """The JSON text stored under (`kind`, `key`), undecoded (for a caller that decodes many at once)."""
        path = self._path(kind, key)
        data = _read_payload(path) if self._unlinked(os.path.dirname(path)) else None
        self.counters.count(kind, data is not None)
        return data

    def put(self, kind: str, key: str, value: Any) -> bool:
        """Store `value`; False when it cannot be cached (not exact JSON) or the write failed."""
        if not exact(value):
            return False
        try:
            payload = encode(value)
        except Uncacheable:
            return False
        return self.put_raw(kind, key, payload)

    def put_raw(self, kind: str, key: str, payload: bytes) -> bool:
        """Store JSON text `payload` as is (the caller encoded it with `encode`)."""
        path = self._path(kind, key)
        ok = self._unlinked(os.path.dirname(path), make=True) and write_entry(path, payload)
        if ok:
            self.counters.writes += 1
            self.counters.written += len(payload)
        else:
            self.counters.failed += 1
        return ok

    # ---------------------------------------------------------------------------------------------
    # Packs: many entries in one file. A render parses thousands of files; creating a file per entry costs
    # more than parsing on some filesystems, and reading one costs a file open each. A pack is written once
    # (temporary file, rename) and read through its index; a render adds at most one pack per process, and
    # `compact` merges them when there are many.

    def _packs(self, kind: str) -> list[os.DirEntry]:
        """The packs of `kind`, most recently used first."""
        if not self._unlinked(f"{self._top}/{kind}"):
            return []
        try:
            with os.scandir(f"{self._top}/{kind}") as found:
                packs = [e for e in found if e.name.endswith(_PACK) and e.is_file(follow_symlinks=False)]
        except OSError:
            return []
        def recency(entry: os.DirEntry) -> float:
            try:
                return -entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                return 0.0
        return sorted(packs, key=lambda e: (recency(e), e.name))

    def reader(self, kind: str) -> PackReader:
        """A reader of single entries of `kind`, for a caller that does not know yet which it will need."""
        return PackReader(self, kind)

    def get_many(self, kind: str, keys: list[str]) -> dict[str, bytes]:
        """The checked payloads of those `keys` that some pack of `kind` holds (damaged ones are misses)."""
        wanted = set(keys)
        found: dict[str, bytes] = {}
        for entry in self._packs(kind):
            if not wanted:
                break
            found.update(_read_pack(entry.path, wanted))
            wanted -= found.keys()
        for key in keys:
            self.counters.count(kind, key in found)
        return found

    def put_many(self, kind: str, payloads: dict[str, bytes]) -> bool:
        """Store `payloads` (key -> JSON text from `encode`) as one pack; False if the write failed."""
        if not payloads:
            return True
        for key in payloads:
            self._path(kind, key)  # checks the key
        directory = f"{self._top}/{kind}"
        ok = self._unlinked(directory, make=True) and write_pack(directory, payloads) is not None
        if ok:
            self.counters.writes += len(payloads)
            self.counters.written += sum(len(p) for p in payloads.values())
        else:
            self.counters.failed += len(payloads)
        return ok

    def compact(self, kind: str, most: int = 8) -> bool:
        """Merge the packs of `kind` of one size tier (under 64 KiB, then each tier four times the last) into
        one when the tier holds more than `most` (the newest entry of a key wins): the smallest such tier.

        Merging by tier keeps the packs few (about `most` per tier, and tiers grow geometrically) while an
        entry is rewritten only a few times, whatever the cache's size: merging everything would rewrite
        the whole cache every few renders. Concurrent readers keep reading the packs they opened; a render
        that lists the packs meanwhile may miss an entry, which costs a parse, never a wrong result."""
        tiers: dict[int, list[os.DirEntry]] = {}
        for entry in self._packs(kind):
            with contextlib.suppress(OSError):
                tiers.setdefault(_tier(entry.stat(follow_symlinks=False).st_size), []).append(entry)
        full = [tier for tier, group in tiers.items() if len(group) > most]
        if not full:
            return False
        packs = tiers[min(full)]  # most recently used first, as listed
        merged: dict[str, bytes] = {}
        for entry in reversed(packs):  # oldest first, so the newest copy of a key wins
            merged.update(_read_pack(entry.path, None))
        written = write_pack(f"{self._top}/{kind}", merged)
        if written is None:
            return False
        for entry in packs:
            if entry.path != written:  # the merge can be a pack it read (same entries, same name)
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        return True

    # ---------------------------------------------------------------------------------------------
    # Size

    def entries(self) -> Iterator[tuple[str, os.stat_result, str]]:
        """(kind directory, stat, path) of every file of the cache's own (entries, packs, temporary files), never
        through a symlink and never a file whose name is not one of the cache's."""
        top = self.root / _LAYOUT
        if not (top.is_dir() and not top.is_symlink() and not self.root.is_symlink()):
            return
        with contextlib.suppress(OSError), os.scandir(top) as kinds:
            for kind in kinds:
                if not kind.is_dir(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError), os.scandir(kind.path) as shards:
                    for shard in shards:
                        if not shard.is_dir(follow_symlinks=False):  # a pack (or a temporary file)
                            if shard.is_file(follow_symlinks=False) and _ours(shard.name):
                                with contextlib.suppress(OSError):
                                    yield kind.name, shard.stat(follow_symlinks=False), shard.path
                            continue
                        with contextlib.suppress(OSError), os.scandir(shard.path) as found:
                            for entry in found:
                                if entry.is_file(follow_symlinks=False) and _ours(entry.name):
                                    with contextlib.suppress(OSError):
                                        yield kind.name, entry.stat(follow_symlinks=False), entry.path

    def stats(self) -> dict[str, Any]:
        """Location, bound, and entries and bytes by kind."""
        kinds: dict[str, list[int]] = {}
        oldest = newest = None
        for kind, st, path in self.entries():
            pair = kinds.setdefault(kind, [0, 0])
            pair[0] += _count(path)
            pair[1] += st.st_size
            oldest = st.st_mtime if oldest is None else min(oldest, st.st_mtime)
            newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
        return {"directory": str(self.root), "limit": self.limit,
                "entries": sum(n for n, _ in kinds.values()), "bytes": sum(b for _, b in kinds.values()),
                "kinds": {k: {"entries": n, "bytes": b} for k, (n, b) in sorted(kinds.items())},
                "oldest": oldest, "newest": newest}

    def clear(self) -> tuple[int, int]:
        """Delete every entry (other runs' temporary files too); (entries, bytes) removed."""
        count = size = 0
        for _, st, path in list(self.entries()):
            with contextlib.suppress(OSError):
                entries = _count(path)
                os.unlink(path)
                count += entries
                size += st.st_size
        _prune_dirs(self.root / _LAYOUT)
        return count, size

    def evict(self, force: bool = False) -> int:
        """Bring the cache under its bound, least recently used first; entries removed. Checked at most every
        few minutes unless `force` or this run wrote a tenth of the bound (a scan costs a stat per entry)."""
        stamp = self.root / _LAYOUT / _STAMP
        if not force and self.counters.written < self.limit // 10:
            with contextlib.suppress(OSError):
                if time.time() - stamp.stat().st_mtime < _EVICT_EVERY:
                    return 0
        found = [(st.st_mtime, st.st_size, path) for _, st, path in self.entries()]
        total = sum(size for _, size, _ in found)
        removed = 0
        if total > self.limit:
            goal = self.limit * 9 // 10  # some room, so the next run does not evict again at once
            for _, size, path in sorted(found):
                if total <= goal:
                    break
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    removed += 1
                total -= size
        with contextlib.suppress(OSError):
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.touch()
        return removed


def _digest(kind: str, key: str, payload: bytes) -> bytes:
    """The checksum of an entry: its content bound to its key, so an entry moved or copied to another key (or
    another kind) is a miss, never another key's answer."""
    digest = hashlib.blake2b(f"{kind}/{key}\0".encode(), digest_size=_DIGEST)
    digest.update(payload)
    return digest.digest()


def _entry_name(path: str) -> tuple[str, str]:
    """(kind, key) of the single entry at `<top>/<kind>/<2 hex>/<key>`."""
    shard_dir, key = os.path.split(path)
    return os.path.basename(os.path.dirname(shard_dir)), key


def _ours(name: str) -> bool:
    """Whether a file name is one the cache writes: an entry (its key), a pack, a temporary file."""
    return bool(_KEY.match(name)) or name.endswith(_PACK) or name.startswith(".tmp-")


def _prune_dirs(top: Path) -> None:
    if top.is_symlink():
        return
    for dirpath, _, _ in sorted(os.walk(top, topdown=False), reverse=True):
        if dirpath != str(top):
            with contextlib.suppress(OSError):
                os.rmdir(dirpath)


def _open(path: str) -> int:
    """A descriptor to read the entry or pack at `path`, never through a symlink planted there."""
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))


def _used(fd: int, st: os.stat_result) -> None:
    """Record a hit as the file's mtime (its last use, for eviction), at most once an hour."""
    if time.time() - st.st_mtime > _TOUCH_AFTER:
        with contextlib.suppress(OSError):
            os.utime(fd)


def _read_payload(path: str) -> bytes | None:
    """The checked payload of the entry at `path`; None when it is missing, short, damaged or not ours."""
    try:
        fd = _open(path)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_size < _HEADER or st.st_size > 1 << 31:
            return None
        data = os.read(fd, st.st_size + 1)
        while len(data) < st.st_size + 1:
            more = os.read(fd, st.st_size + 1 - len(data))
            if not more:
                break
            data += more
        _used(fd, st)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not data.startswith(_MAGIC):
        return None
    length = int.from_bytes(data[len(_MAGIC):len(_MAGIC) + 8], "big")
    payload = data[_HEADER:]
    if len(payload) != length or _digest(*_entry_name(path), payload) != data[len(_MAGIC) + 8:_HEADER]:
        return None
    return payload


def _read_entry(path: str) -> Any | None:
    payload = _read_payload(path)
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):
        return None


def write_entry(path: str, payload: bytes) -> bool:
    """Write one entry atomically; False, with nothing left behind, on failure."""
    header = _MAGIC + len(payload).to_bytes(8, "big") + _digest(*_entry_name(path), payload)
    return _write_file(path, [header, payload])


def _write_file(path: str, parts: list[bytes]) -> bool:
    """Write `parts` to `path` through a temporary file in its directory and a rename: a reader sees the whole
    file or none. False, with nothing left behind, on any failure (a full disk, permissions)."""
    tmp = None
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
        os.fchmod(fd, _MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.writelines(parts)
        try:
            os.replace(tmp, path)
        except IsADirectoryError:  # an empty directory where the entry goes (a damaged cache): take its place
            os.rmdir(path)
            os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False


# -------------------------------------------------------------------------------------------------
# Pack files: _PACK_MAGIC, the payloads, the index (JSON: key -> [offset, length, BLAKE2 hex]), then a trailer
# (index offset, index length, the index's BLAKE2 digest).

_PACK = ".pack"
_PACK_MAGIC = b"devlane-pack-1\n"
_TRAILER = 16 + _DIGEST


def write_pack(directory: str, payloads: dict[str, bytes]) -> str | None:
    """Write one pack of `payloads` into `directory`, atomically: its path; None, with nothing left behind, on
    failure. A pack is named by its index's digest, so the same entries make the same file."""
    parts = [_PACK_MAGIC]
    offset = len(_PACK_MAGIC)
    index: dict[str, list] = {}
    kind = os.path.basename(directory)
    for key in sorted(payloads):
        data = payloads[key]
        index[key] = [offset, len(data), _digest(kind, key, data).hex()]
        parts.append(data)
        offset += len(data)
    table = json.dumps(index, separators=(",", ":")).encode()
    parts += [table, offset.to_bytes(8, "big"), len(table).to_bytes(8, "big"),
              hashlib.blake2b(table, digest_size=_DIGEST).digest()]
    path = f"{directory}/{hashlib.blake2b(table, digest_size=12).hexdigest()}{_PACK}"
    return path if _write_file(path, parts) else None


def _tier(size: int) -> int:
    """A pack's size tier: 0 under 64 KiB, then one more for each factor of four."""
    tier, bound = 0, 64 * 1024
    while size >= bound:
        tier, bound = tier + 1, bound * 4
    return tier


def _count(path: str) -> int:
    """How many entries the file at `path` holds: a pack's, one for an entry, none for a temporary file."""
    name = os.path.basename(path)
    if name.startswith(".tmp-"):
        return 0
    if not name.endswith(_PACK):
        return 1
    try:
        fd = _open(path)
    except OSError:
        return 0
    try:
        found = _pack_index(fd)
        return len(found[0]) if found else 0
    finally:
        os.close(fd)


def _pack_index(fd: int) -> tuple[dict, int, os.stat_result] | None:
    """(index, where the index starts, stat) of the pack open at `fd`; None when it is damaged or not a pack."""
    try:
        st = os.fstat(fd)
        if st.st_size < len(_PACK_MAGIC) + _TRAILER:
            return None
        trailer = os.pread(fd, _TRAILER, st.st_size - _TRAILER)
        start, length = int.from_bytes(trailer[:8], "big"), int.from_bytes(trailer[8:16], "big")
        if start + length + _TRAILER != st.st_size or os.pread(fd, len(_PACK_MAGIC), 0) != _PACK_MAGIC:
            return None
        table = os.pread(fd, length, start)
        if hashlib.blake2b(table, digest_size=_DIGEST).digest() != trailer[16:]:
            return None
        index = json.loads(table)
    except (OSError, ValueError, RecursionError):
        return None
    return (index, start, st) if isinstance(index, dict) else None


def _read_pack(path: str, wanted: set[str] | None) -> dict[str, bytes]:
    """The checked payloads of `wanted` keys (all, for None) in the pack at `path`; a damaged pack or entry
    gives nothing for it. A hit refreshes the pack's mtime (its last use), at most once an hour."""
    found: dict[str, bytes] = {}
    try:
        fd = _open(path)
    except OSError:
        return found
    try:
        known = _pack_index(fd)
        if known is None:
            return found
        index, start, st = known
        kind = os.path.basename(os.path.dirname(path))
        for key in index if wanted is None else wanted & index.keys():
            data = _pack_entry(fd, index[key], start, kind, key)
            if data is not None:
                found[key] = data
        if found:
            _used(fd, st)
    except OSError:
        return found
    finally:
        os.close(fd)
    return found


def _pack_entry(fd: int, row: Any, start: int, kind: str, key: str) -> bytes | None:
    """The checked payload an index `row` (offset, size, digest) points at, in the pack open at `fd` whose
    index starts at `start`, bound to (`kind`, `key`); None for a foreign or damaged row or payload."""
    try:
        offset, size, digest = row
        if not (type(offset) is int and type(size) is int and len(_PACK_MAGIC) <= offset
                and size >= 0 and offset + size <= start):
            return None  # never read past the payloads
        data = os.pread(fd, size, offset)
    except (TypeError, ValueError, OverflowError):
        return None
    if len(data) == size and _digest(kind, key, data).hex() == digest:
        return data
    return None


class PackReader:
    """Entries of one kind read one at a time, when a caller turns out to need them: the packs' indexes are
    read once, at the first `get`. A pack merged away since is a miss, as any other."""

    def __init__(self, cache: Cache, kind: str):
        self.cache, self.kind = cache, kind
        self._indexes: list[tuple[str, dict, int]] | None = None

    def _packs(self) -> list[tuple[str, dict, int]]:
        if self._indexes is None:
            self._indexes = []
            for entry in self.cache._packs(self.kind):
                with contextlib.suppress(OSError):
                    fd = _open(entry.path)
                    try:
                        known = _pack_index(fd)
                    finally:
                        os.close(fd)
                    if known is not None:
                        self._indexes.append((entry.path, known[0], known[1]))
        return self._indexes

    def get(self, key: str) -> bytes | None:
        """The checked payload of `key`, or None."""
        data = None
        for path, index, start in self._packs():
            if key not in index:
                continue
            with contextlib.suppress(OSError):
                fd = _open(path)
                try:
                    data = _pack_entry(fd, index[key], start, self.kind, key)
                finally:
                    os.close(fd)
            if data is not None:
                break
        self.cache.counters.count(self.kind, data is not None)
        return data


def open_cache(enabled: bool = True, root: Path | None = None) -> Cache | None:
    """The cache at `root` (default: `default_root()`), or None when disabled."""
    return Cache(root or default_root()) if enabled else None
