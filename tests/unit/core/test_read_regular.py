"""`read_regular` reads a regular file whole in one `read` of the size fstat gives (plus a byte); a file that says
less than it holds reads on, and the limit holds at its edge whatever the size claims."""

from __future__ import annotations

import os

import pytest

from renderer.core import files
from renderer.core.files import read_regular
from renderer.errors import DevlaneError


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 1024 * 1024 + 7])
def test_a_file_reads_whole_in_one_read(tmp_path, monkeypatch, size: int) -> None:
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    (tmp_path / "f").write_bytes(data)
    reads: list[int] = []
    real = os.read

    def counted(fd: int, n: int) -> bytes:
        reads.append(n)
        return real(fd, n)

    monkeypatch.setattr(files.os, "read", counted)
    assert read_regular(tmp_path / "f") == data
    assert reads == [size + 1]


def test_a_file_that_says_less_than_it_holds_reads_on() -> None:
    """procfs files claim size 0 and hold text: the first read fills its byte, the rest follows."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("no /proc")
    got = read_regular("/proc/self/status")
    assert os.stat("/proc/self/status").st_size == 0
    assert b"Name:" in got and b"Pid:" in got and len(got) > 100


@pytest.mark.parametrize(("size", "fits"), [(999, True), (1000, True), (1001, False), (5000, False)])
def test_the_limit_holds_at_its_edge(tmp_path, size: int, fits: bool) -> None:
    (tmp_path / "f").write_bytes(b"a" * size)
    if fits:
        assert read_regular(tmp_path / "f", "f", limit=1000) == b"a" * size
    else:
        with pytest.raises(DevlaneError, match="over the 1,000-byte limit") as caught:
            read_regular(tmp_path / "f", "f", limit=1000)
        assert caught.value.problems[0].where.file == "f"


def test_a_claimed_size_past_the_limit_reads_at_most_a_byte_more(tmp_path, monkeypatch) -> None:
    """A sparse file that claims a gigabyte is read no further than the limit and a byte."""
    with open(tmp_path / "sparse", "wb") as f:
        f.truncate(1 << 30)
    reads: list[int] = []
    real = os.read
    monkeypatch.setattr(files.os, "read", lambda fd, n: reads.append(n) or real(fd, n))
    with pytest.raises(DevlaneError, match="over the 1,000-byte limit"):
        read_regular(tmp_path / "sparse", "sparse", limit=1000)
    assert sum(reads) <= 1001
