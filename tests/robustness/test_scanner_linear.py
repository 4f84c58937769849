"""Bounded work on any input: every scanner a repository's value reaches is linear in it.

A ConfigMap with one long token (16 KiB: 7 s, 64 KiB: 85 s, 256 KiB: minutes) used to stall `render` and `lint`:
the address scanner's URL pattern tried every position of a long word and backtracked to its end. Here the
scanners `render`, `plan`, `lint` and `init` run on a value (addresses and references in env values, arguments and
ConfigMap entries of every file form, the masker and its excerpts, `init`'s classifiers) are timed on adversarial
strings: repetitions of the characters and words the patterns care about, up to 256 KiB. Time is measured as a
ratio to a linear reference scan of the same input (a regular expression that visits every character), never as
an absolute time: quadrupling the input must not grow a scanner's time by more than the reference's, within
`GROWTH`; and at 256 KiB a scanner stays within `FACTOR` times the reference. CPU time of this thread, the best of
a few runs, so that other processes on the machine do not count.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import app_yaml, yaml_doc

from renderer.authoring.infer_edges import _scheme_before
from renderer.authoring.infer_roles import EXTERNAL_HOSTS
from renderer.core import secrets_mask
from renderer.core.references import Target, Targets, find_in_args, find_in_data, find_in_value, host_variables
from renderer.core.stores import find_addresses
from renderer.render.checks.reach import _lines

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox_free]  # seconds of timing, by design; in-process scanning

SIZE = 8 * 1024  # and four times that, 32 KiB: a quadratic scanner is then a second, a linear one milliseconds
LARGE = 256 * 1024
GROWTH = 2.0  # a scanner's time over the reference's, at 4x the input vs at 1x: 1 when linear, 4 when quadratic
SCALE = 4
FACTOR = 150  # a scanner's time over the reference's at 256 KiB (a quadratic one: thousands)
TOO_SMALL = 0.005  # seconds: below this at 32 KiB, no scanner is quadratic in the input (it would take a second)

NAMES = ("a", "host", "x", "db", "redis", "svc", "kafka", "orders")
FEW = Targets([Target(n, n, None, frozenset({"http", "5432"})) for n in NAMES])  # a substring pre-filter
MANY = Targets([Target(n, n, None, frozenset({"http"})) for n in (*NAMES, *(f"svc-{i}" for i in range(20)))])
FILES = ("ENTRY", "app.conf", "app.ini", "app.yaml", "app.json", "run.sh", "app.properties", ".env", "nginx", "x.txt")


def _scanners() -> dict[str, Callable[[str], object]]:
    out: dict[str, Callable[[str], object]] = {
        "stores.find_addresses": lambda v: (find_addresses.__wrapped__(v, ""),
                                            find_addresses.__wrapped__(v, "REDIS_HOST")),
        "reach: each line's addresses": lambda v: [find_addresses.__wrapped__(line, k)
                                                   for k, line in _lines("SPRING_DATASOURCE_URL", v)],
        "references.find_in_value": lambda v: (find_in_value(v, FEW, "DB_HOST"), find_in_value(v, MANY, "URL")),
        "references.find_in_args": lambda v: (find_in_args([v], FEW), find_in_args(["sh", "-c", v], MANY),
                                              find_in_args(["--x", v, "5432"], FEW)),
        "references.host_variables": lambda v: host_variables({"A": v, "B": "http://$(A):80"}, [v]),
        "secrets_mask": lambda v: (secrets_mask._found.__wrapped__(v), secrets_mask.mask(v + " "),
                                   secrets_mask.excerpt(v + "  ", len(v) // 2)),
        "init's classifiers": lambda v: ([rx.search(v) for rx, *_ in EXTERNAL_HOSTS], _scheme_before(v, len(v))),
    }
    for key in FILES:
        out[f"references.find_in_data {key}"] = lambda v, key=key: (find_in_data(key, v, FEW),
                                                                    find_in_data(key, v, MANY))
    return out


SCANNERS = _scanners()
_EVERY_CHARACTER = re.compile(".", re.DOTALL)


def reference(value: str) -> str:
    """The linear reference: a regular expression that visits every character, whatever they are."""
    return _EVERY_CHARACTER.sub("", value)


def cpu(fn: Callable[[str], object], value: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        fn(value)
        best = min(best, time.thread_time() - start)
    return max(best, 1e-6)


def sized(unit: str, size: int, prefix: str = "", suffix: str = "") -> str:
    body = size - len(prefix) - len(suffix)
    return prefix + (unit * (body // len(unit) + 1))[: max(body, 0)] + suffix


def _ratio(fn: Callable[[str], object], small: str, large: str, rounds: int) -> float:
    """The scanner's growth from `small` to `large` over the reference's growth on the same two inputs. Each of the
    four times is the best of `rounds`, taken in turn (scanner and reference, small and large, in every round), so
    that a slow spell of the machine, which only ever adds time, inflates no one of them alone."""
    best = [float("inf")] * 4
    for _ in range(rounds):
        for i, (f, value) in enumerate(((fn, small), (fn, large), (reference, small), (reference, large))):
            best[i] = min(best[i], cpu(f, value, 1 if f is fn else 3))
    fn_small, fn_large, ref_small, ref_large = best
    return (fn_large / fn_small) / (ref_large / ref_small)


def growth(fn: Callable[[str], object], unit: str, prefix: str = "", suffix: str = "") -> float | None:
    """How much more than the reference the scanner's time grows when the input grows `SCALE` times; None when the
    scanner is too fast at `SCALE * SIZE` to be anything but linear.

    Times of a few milliseconds on a busy machine make noise of a factor of two, so a growth above `GROWTH` is
    measured again over two steps at once (`SCALE * SCALE` times the input, with more rounds) and taken per step
    (its square root): a quadratic scanner grows `SCALE` times per step there too, while the same noise spread over
    two steps counts half as much. The smaller of the two is the verdict."""
    small, large = sized(unit, SIZE, prefix, suffix), sized(unit, SCALE * SIZE, prefix, suffix)
    if cpu(fn, large, runs=1) < TOO_SMALL:
        return None
    ratio = _ratio(fn, small, large, rounds=2)
    if ratio > GROWTH:
        ratio = min(ratio, _ratio(fn, small, sized(unit, SCALE * SCALE * SIZE, prefix, suffix), rounds=3) ** 0.5)
    return ratio


def assert_linear(unit: str, prefix: str = "", suffix: str = "") -> None:
    slow = {}
    for name, fn in SCANNERS.items():
        ratio = growth(fn, unit, prefix, suffix)
        if ratio is not None and ratio > GROWTH:
            slow[name] = round(ratio, 2)
    assert not slow, f"superlinear on {prefix!r} + {unit!r} * n + {suffix!r}: {slow}"


# The shapes of the issue (`aaaa...`, `a.a.a...`, `a:a:a...`, `x@x@...`, `host:1,host:1,...`, `jdbc:` + long,
# `Server=` + long), those that were quadratic in other patterns (a section `[` followed by blanks; newlines
# after `upstream`; a long word before a host's scheme; `init`'s host suffixes), and the masker's own (keys in
# keys' values, chains of doubled quotes, authorities that go on to a later `@`).
SHAPES = [
    ("a", "", ""), ("a.", "", ""), ("a:", "", ""), ("x@", "", ""), ("host:1,", "", ""), ("a", "jdbc:", ""),
    ("a", "Server=", ""), ("a", "password=", ""), (" ", "[a", "b"), ("\n", "upstream ", ""), ("a-", "", ""),
    ("a", "", " ://x"), ("a.", "http:// ", ""), ("a:", "", "//"), ("a b", "", ""), ("x=y;", "", ""), ("'a", "", ""),
    ('"a\\"', "", ""), ("a.s3-", "", ""),
    ("a:b@", "redis://", ""), ("//a:", "", ""), ("a/", "x://:", "@h"), ("1@host:1,", "", ""), ("{[", "", ""),
    ("\t", "- ", ""), ("k: ", "", ""), ("--x=", "", ""), ("-a-b1:", "", ""), ("a:a-a1:", "", ""), ("%40", "", ""),
    ('password="x""', "", ""), ("password: ", "", ""), ("x://:p/", "", "@h"), (",//:a/", "", "@h"), ("&a:b@c", "", ""),
    ("}}", "Pwd={", ""), ('a\\"', "", ""),  # a JSON string that never closes, with a quote in every unit
]  # fmt: skip


@pytest.mark.parametrize(("unit", "prefix", "suffix"), SHAPES)
def test_known_shapes_are_linear(unit, prefix, suffix):
    assert_linear(unit, prefix, suffix)


ATOMS = (
    "a", "Z", "1", ".", "-", "_", ":", "/", "@", "=", ";", ",", " ", "\t", "\n", "'", '"', "[", "]", "{", "}", "(",
    ")", "\\", "?", "#", "&", "%", "$", "*", "+", "!", "<", ">", "`", "|", "://", "host", "db", "redis", "x", "svc",
    "upstream", "server", "jdbc:", "jdbc:oracle:thin:@", "Server=", "Password=", "password=", "host=", "tcp:",
    "sh -c ", "export ", "--host=", "-h", "http", ":5432", ":1", "@host:1", "$(", "${", "echo ", ".svc.cluster.local",
    "[x]", "[[", "mongodb+srv", ".rds.amazonaws.com", ".s3-", ".neon.tech", ".database.windows.net", "us-central1:",
    "sk_live_", "%40", "Data Source=", "User ID=", "token:", "key=", "'a'", '"a"', "{a}", "//", ":@", "a@",
)  # fmt: skip
PREFIXES = ("", "KEY=", "url: ", "[", '{"a": "', "#!/bin/sh\n", "upstream x {\n", "redis://", "--flag=", "- ")


@settings(max_examples=8, deadline=None)
@given(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=5).map("".join), st.sampled_from(PREFIXES))
def test_adversarial_strings_are_linear(unit, prefix):
    assert_linear(unit, prefix)


@pytest.mark.parametrize("unit", ["a", "a.", "a:", "x@", "host:1,", "\n"])
def test_256_kib_stays_within_a_factor_of_a_linear_scan(unit):
    """The issue's sizes: a 256 KiB value is scanned in a bounded multiple of a linear reference scan."""
    value = sized(unit, LARGE)
    base = cpu(reference, value)
    slow = {name: round(cpu(fn, value, 1) / base) for name, fn in SCANNERS.items()}
    assert max(slow.values()) <= FACTOR, slow


def test_an_address_in_a_large_file_is_still_found():
    """Linear does not mean looking at a window only: an address anywhere in a 256 KiB entry is found."""
    noise = sized("q.b:c ", LARGE // 2)
    value = f"{noise}\nspring.datasource.url=jdbc:postgresql://pg.example.com:5432/shop\n{noise}\nredis=redis:6379\n"
    assert [(a.host, a.kind) for a in find_addresses.__wrapped__(value, "")] == [("pg.example.com", "postgres"),
                                                                               ("redis", "redis")]
    assert {r.target.name for r in find_in_data("application.properties", value, FEW)} == {"redis"}
    masked = secrets_mask.excerpt(value + "password=" + "s" * LARGE, len(value) + 3)
    assert len(masked) <= secrets_mask.EXCERPT_WIDTH and "s" * 4 not in masked


@pytest.mark.parametrize("unit", ["a.", "a:", "x@", "host:1,", "jdbc:", "Server=", "a b", "x=y;"])
def test_lint_and_render_of_a_long_token_are_bounded(harness, unit):
    """The issue's repository: a ConfigMap entry of one 256 KiB token (read by key, whole, and mounted as a file)
    in a dev pod. `lint` and `render` (in-process, CPU time) add at most `FACTOR` times a linear scan of it to what
    they take on a short value."""
    value = sized(unit, LARGE)
    container = {"name": "main", "image": "acme/web:1", "envFrom": [{"configMapRef": {"name": "web-config"}}],
                 "env": [{"name": "BIG", "valueFrom": {"configMapKeyRef": {"name": "web-config", "key": "BIG"}}}]}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config"}, "data": {"BIG": "host:1"}}
    harness.write("app.yaml", app_yaml("web", containers=[container]) + app_yaml("host") + yaml_doc(config))
    commands = [("lint", "--no-cache"), ("render", "--no-cache", "--flow", "t", "--service", "web=acme/web:2",
                                         "--stdout")]
    short = {cmd: _cpu_of(harness, cmd) for cmd in commands}
    config["data"] = {"BIG": value, "app.conf": value}
    harness.write("app.yaml", app_yaml("web", containers=[container]) + app_yaml("host") + yaml_doc(config))
    base = cpu(reference, value)
    for cmd in commands:
        extra = _cpu_of(harness, cmd) - short[cmd]
        assert extra / base <= FACTOR, (cmd[0], round(extra, 2), round(extra / base))


def _cpu_of(harness, cmd: tuple[str, ...]) -> float:
    start = time.process_time()
    out = harness.cli(*cmd)
    assert out.returncode in (0, 1) and "internal error" not in out.stderr, out.stderr[-2000:]
    return time.process_time() - start
