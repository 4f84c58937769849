"""devlane's durations read as Go reads them (issue 44, point 8): core.durations against Go's own
`time.ParseDuration`, compiled here from the standard library (nothing downloaded), over edge cases and thousands
of generated texts. Argo CD, Flux and kubectl parse with that function."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from renderer.core import durations

pytestmark = pytest.mark.e2e

GO_PROGRAM = """package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		if d, err := time.ParseDuration(in.Text()); err != nil {
			fmt.Fprintln(out, "error")
		} else {
			fmt.Fprintln(out, int64(d))
		}
	}
}
"""

EDGES = ["0", "-0", "+0", "00", "0s", "1", "1s", "-1s", "+1s", "--1s", "+-1s", ".5s", "5.s", ".s", ".", "s", "1.5h",
         "1h30m", "1h-30m", "1h 30m", "1e3s", "1d", "1µs", "1μs", "1us", "1ns", "1ms", "1m30", "9223372036854775807ns",
         "9223372036854775808ns", "-9223372036854775808ns", "-9223372036854775809ns", "2562047h47m16.854775807s",
         "2562047h47m16.854775808s", "-2562047h47m16.854775808s", "2562048h", "0.0000000001s", "1.0000000019s",
         "0.3333333333333333333333h", "1.99999999999999999999999s", "18446744073709551616ns", "0.1h0.1m0.1s",
         "100000000000000000000000000.5ns", "1.23456789012345678901234567890m", "5x", "5sm", "h1", "1hh", "\u0661s"]


def _texts(count: int) -> list[str]:
    rng = random.Random(44)
    units = ["ns", "us", "µs", "ms", "s", "m", "h", "", "x", "d"]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 4)):
            whole = str(rng.choice([0, 1, 7, 59, 60, 999, rng.randint(0, 10**rng.randint(1, 20))]))
            frac = rng.choice(["", "", ".", "." + str(rng.randint(0, 10**rng.randint(1, 25)))])
            if rng.random() < 0.1:
                whole = ""
            parts.append(whole + frac + rng.choice(units))
        out.append(rng.choice(["", "", "-", "+"]) + "".join(parts))
    return out


@pytest.fixture(scope="module")
def go_parse(tmp_path_factory) -> callable:
    go = shutil.which("go")
    if go is None:
        pytest.skip("Go is not installed: the control-plane tier's machines have it (tests/cluster/build.sh)")
    work = tmp_path_factory.mktemp("go-durations")
    (work / "main.go").write_text(GO_PROGRAM)
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "", "GO111MODULE": "off", "CGO_ENABLED": "0",
           "GOPROXY": "off"}
    env.setdefault("GOCACHE", str(Path.home() / ".cache" / "devlane-test-tools" / "go" / "build"))
    subprocess.run([go, "build", "-o", str(work / "parse"), str(work / "main.go")], cwd=work, env=env, check=True,
                   capture_output=True, timeout=300)

    def parse(texts: list[str]) -> list[int | None]:
        done = subprocess.run([str(work / "parse")], input="\n".join(texts) + "\n", capture_output=True, text=True,
                              check=True, timeout=60)
        return [None if line == "error" else int(line) for line in done.stdout.splitlines()]

    return parse


def ours(text: str) -> int | None:
    try:
        return durations.parse(text, days=False)
    except durations.DurationError:
        return None


def test_every_text_is_read_as_go_reads_it(go_parse):
    texts = EDGES + _texts(5000)
    theirs = go_parse(texts)
    assert len(theirs) == len(texts)
    differ = [(t, g, ours(t)) for t, g in zip(texts, theirs, strict=True) if ours(t) != g]
    assert differ == [], differ[:20]
    assert sum(g is not None for g in theirs) > 1000  # the generated texts are not all refusals


def test_days_are_the_one_extension(go_parse):
    assert go_parse(["7d", "1h"]) == [None, 3600 * durations.SECOND]
    assert durations.parse("7d") == 7 * 24 * 3600 * durations.SECOND
