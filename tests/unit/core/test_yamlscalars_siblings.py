"""Every word and number form a YAML reader retypes, one case each (issue 41, point 3): each word of go-yaml v2's
resolve table (`y`, `n`, `Y`, `on`, `off`, ... which YAML 1.1 readers such as kubectl's take for booleans), each
base prefix Go's strconv reads, each month's last day and each time field's range of go-yaml's timestamps, the
int64/uint64 bounds of prefixed ints, and the near misses no reader types. Each case reads what devlane writes
(`yamlio.dump`, the representers' `quote_style`), so dropping a word or a branch fails its own case; PyYAML is no
oracle here (it reads `y` as a string). The e2e test at the end holds the lists against the real Go readers.
The lists are written here, independently of the module's own."""

from __future__ import annotations

import pytest
import yaml
from support import yamlc, yamloracle

from renderer.core.yamlio import dump
from renderer.core.yamlscalars import SafeDumper, quote_style, retyped

# go-yaml v2's resolve table (v3's less y/n/yes/no/on/off), PyYAML's and YAML 1.2 core's words, and the merge key
WORDS = ["y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
         "on", "On", "ON", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf",
         ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<"]  # fmt: skip
NEAR_WORDS = ["yES", "nO", "oN", "oFF", "tRUE", "fALSE", "nULL", "NuLL", ".nAn", ".iNF", "+.nan", "-.nan", "<", "<<<",
              "yy", "nn", "ye", "Nil", "none", "~~"]  # fmt: skip
# Go's strconv after a sign or digit: each base prefix, each case (PyYAML and YAML 1.2 read only some of them)
GO_NUMBERS = ["0b101", "0B101", "-0B101", "0o17", "0O17", "-0O17", "0x1F", "0X1F", "+0X1f", "0x_1F", "0X_1_f",
              "017", "-017", "0_17", "1_000", "+1_0", "1__0", ".5_5", ".5e1_0", "+.5_5", "1_0.5",
              "0XFFFFFFFFFFFFFFFF", "-0B1" + "0" * 63, "+0B" + "1" * 63, "9" * 20, "09", "09.5", "1e3", "1E+3", "1_",
              "0b-101", "0o-17", "0X1", "0B1", "0O7", "1_0e3", "1_0E3", "-1_0e3", "1_0e-3", "1_0e+3", ".5E1_0",
              ".5e-1_0", ".5e+1_0"]  # fmt: skip
# YAML 1.2 core's floats out of Go's range (Go: a string; PyYAML 1.1 wants a dot and a signed exponent)
CORE_12_FLOATS = ["5e12345", "-5e12345", "+5e12345", "5E12345", "5e+12345", "5.5e12345", ".5e12345", "-.5E+12345"]
GO_PLAIN = ["0b", "0B2", "0o8", "0O9", "0X", "0XG", "0X_", "08_8x", "0B-101", "0O-17", "._5", "._", "+.", ".5e",
            ".5_", ".5__5", "0X10000000000000000", "-0B1" + "0" * 62 + "1", "+0B1" + "0" * 63, "_1", "0B_", "1.2.3",
            "v1", "0b+1" + "0" * 63, "0o-1" + "0" * 20 + "1"]  # fmt: skip
LAST_DAYS = {1: 31, 2: 28, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}


def written_plain(s: str) -> bool:
    """devlane writes `s` plain as a value, a key and a list item (or quotes it in all three)."""
    texts = (dump({"k": s}), dump({s: "v"}), dump({"l": [s]}))
    plain = (f"k: {s}\n", f"{s}: v\n", f"l:\n- {s}\n")
    assert len({a == b for a, b in zip(texts, plain, strict=True)}) == 1, texts
    for text, obj in zip(texts, ({"k": s}, {s: "v"}, {"l": [s]}), strict=True):
        assert yamlc.safe_load(text) == obj
    return texts[0] == plain[0]


@pytest.mark.parametrize("word", WORDS)
def test_each_word_a_reader_types_is_single_quoted_everywhere(word):
    assert retyped(word) and quote_style(word) == "'"
    assert dump({"k": word}) == f"k: '{word}'\n"
    assert dump({word: "v"}) == f"'{word}': v\n" and dump({"l": [word]}) == f"l:\n- '{word}'\n"
    assert yaml.dump({"k": word}, Dumper=SafeDumper) == f"k: '{word}'\n"  # init's edits and devlane.lock


@pytest.mark.parametrize("word", NEAR_WORDS)
def test_a_near_word_no_reader_types_stays_plain(word):
    assert not retyped(word) and quote_style(word) is None
    assert written_plain(word)


@pytest.mark.parametrize("text", GO_NUMBERS)
def test_each_number_go_reads_is_quoted(text):
    assert retyped(text) and quote_style(text) == "'"
    assert not written_plain(text)


@pytest.mark.parametrize("text", CORE_12_FLOATS)
def test_each_float_only_yaml_1_2_reads_is_quoted(text):
    assert retyped(text) and quote_style(text) == "'" and not written_plain(text)


@pytest.mark.parametrize("first", list("0123456789+-."))
def test_a_number_go_reads_is_quoted_whatever_its_first_character(first):
    """go-yaml tries numbers after a sign, a digit or a dot: `7_0` is 70 to it, `7_0x` a string."""
    text = {"+": "+1_0", "-": "-1_0", ".": ".5_5"}.get(first, f"{first}_0")
    assert quote_style(text) == "'" and quote_style(text + "x") is None


@pytest.mark.parametrize("text", GO_PLAIN)
def test_each_near_number_go_does_not_read_stays_plain_for_go(text):
    assert quote_style(text) is None  # PyYAML may still quote it for its own reasons (`0x_`: its int)


# ---------------------------------------------------------------------------------------------------------------
# go-yaml's timestamps: each month's length, leap years, each field's range, each layout


@pytest.mark.parametrize("month", sorted(LAST_DAYS))
def test_each_months_last_day_is_a_date_and_the_next_is_not(month):
    """As go-yaml reads it (PyYAML quotes `2023-10-32` for its own reasons: its dates are regular expressions)."""
    last = LAST_DAYS[month]
    assert quote_style(f"2023-{month}-{last}") == "'" and quote_style(f"2023-{month}-{last + 1}") is None
    assert quote_style(f"2023-{month}-1") == "'" and quote_style(f"2023-{month}-0") is None
    if month < 10:
        assert not written_plain(f"2023-{month}-{last}") and written_plain(f"2023-{month}-{last + 1}")


def test_a_number_too_long_for_any_reader_is_no_number_and_no_error():
    """5,000 digits: past int64, an infinite float (no reader's number), and past what Python's int() parses."""
    assert quote_style("9" * 5000 + "_") is None and quote_style("-" + "9" * 5000 + "_") is None


@pytest.mark.parametrize(
    ("year", "leap"), [(2024, True), (2023, False), (2000, True), (1900, False), (2100, False), (1600, True), (0, True)]
)
def test_february_29th_only_in_a_leap_year(year, leap):
    assert written_plain(f"{year:04d}-2-29") is not leap
    assert not written_plain(f"{year:04d}-2-28") and written_plain(f"{year:04d}-2-30")


TIMES = [
    ("2024-1-2T23:59:59Z", True), ("2024-1-2T24:0:0Z", False), ("2024-1-2T1:60:0Z", False),
    ("2024-1-2T1:0:60Z", False), ("2024-1-2T1:2:3+24:00", True), ("2024-1-2T1:2:3+25:00", False),
    ("2024-1-2T1:2:3-01:60", True), ("2024-1-2T1:2:3-01:61", False), ("2024-0-2", False), ("2024-13-2", False),
    ("2024-1-2t1:2:3Z", True), ("2024-1-2 1:2:3", True), ("2024-1-2   1:2:3.25", True), ("2024-1-2 23:59:59,5", True),
    ("2024-1-2 24:0:0", False), ("2024-1-2T1:2:3.123456789Z", True), ("2024-1-2T1:2:3,5Z", True),
    ("2024-1-2T1:2:3", False), ("2024-1-2 1:2:3Z", False), ("2024-1-2x", False), ("24-1-2", False),
    ("2024-001-2", False), ("2024-1-2 1:60:0", False), ("2024-1-2 1:0:60", False),
]  # fmt: skip


@pytest.mark.parametrize(("text", "typed"), TIMES)
def test_timestamp_fields_and_layouts(text, typed):
    assert (quote_style(text) == "'") is typed


# ---------------------------------------------------------------------------------------------------------------
# The real readers (e2e): every list above is what go-yaml v2, v3 and sigs.k8s.io/yaml do


@pytest.mark.e2e
def test_the_lists_are_what_the_go_readers_read():
    yamloracle.require()
    typed = WORDS + GO_NUMBERS + [f"2023-{m}-{d}" for m, d in LAST_DAYS.items()] + ["2024-2-29", "2000-2-29"]
    typed += [t for t, is_typed in TIMES if is_typed]
    plain = NEAR_WORDS + GO_PLAIN + [f"2023-{m}-{d + 1}" for m, d in LAST_DAYS.items() if m < 10]  # PyYAML fails
    plain += ["2023-2-29", "1900-2-29"]  # on `2023-10-32`: its dates are regular expressions
    plain += [t for t, is_typed in TIMES if not is_typed and not _pyyaml_fails(t)]
    readings = yamloracle.read([f"k: {s}\n" for s in typed + plain])
    for s, reading in zip(typed + plain, readings, strict=True):
        go = [name for name in yamloracle.READERS if not yamloracle.same(reading[name], [{"k": s}])]
        if s in typed:
            assert go or s == "<<", (s, reading)  # `<<` is a merge key: PyYAML's, and Go's as a key
        else:
            assert not go, (s, reading)
    every = typed + plain + CORE_12_FLOATS
    assert yamloracle.misread([dump({"k": s}) for s in every], [[{"k": s}] for s in every]) == []


def _pyyaml_fails(text: str) -> bool:
    """PyYAML's reader raises on `text` plain (its timestamps are regular expressions: `2024-13-02` matches)."""
    try:
        yamlc.safe_load(f"k: {text}")
    except ValueError:
        return True
    return False
