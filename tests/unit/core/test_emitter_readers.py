"""What devlane writes, every YAML reader reads the same (issue 40, point 8).

A string written plain is typed by the reader's resolver, and the resolvers differ: PyYAML (YAML 1.1) reads `0o17`
as a string, go-yaml (kubectl through sigs.k8s.io/yaml, kustomize's kyaml, Argo CD, Flux) as 15. The emitter quotes
every string `yamlscalars.retyped` holds for, and nothing else beyond PyYAML's own quoting.

The fast tests check the rule against PyYAML alone. Those marked e2e read devlane's text with the real Go readers
(tests/support/yamloracle, built by tests/setup_yamloracle.sh; they skip without it): every reader gives back
the string devlane meant, and a string is quoted only where some reader would have retyped it plain.
"""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import yamlc, yamloracle

from renderer.authoring.yamledit import AnnotationEdit, Style, entry_lines, flow_text, item_lines, plan_annotations
from renderer.core import yamlio
from renderer.core.yamlio import canonical, dump
from renderer.core.yamlscalars import _CORE_12, WORDS, SafeDumper, retyped
from renderer.host.supply.lock import Lock, LockEntry

# Strings some reader types, by what they look like to it (each must be quoted wherever devlane writes it).
RETYPED = {
    "the issue's": ["0o17", "1e3", "-.5", "5e12345", "y", "n", "Y", "2024-1-2", "09", "1__0"],
    "go-yaml v2 booleans": ["y", "Y", "n", "N", "yes", "No", "ON", "off"],
    "booleans of both specs": ["true", "True", "FALSE", "on", "Off"],
    "nulls": ["", "~", "null", "Null", "NULL"],
    "ints (Go's strconv, `_` dropped)": ["0o17", "0O17", "-0o17", "0o+17", "017", "0x1F", "+0x1f", "0X_1f", "0b101",
                                        "-0b101", "0b-101", "00", "+0", "1_000", "-_1", "18446744073709551615",
                                        "-9223372036854775808"],
    "floats": ["1e3", "1E+3", "-.5", "+.5", ".5", ".5_5", "1.", "09", "+09", "5e12345", "1e-400", ".1e400",
               "9223372036854775808", "18446744073709551616", "0" * 30],
    "infinities and NaNs": [".inf", "-.Inf", "+.INF", ".nan", ".NaN"],
    "sexagesimal (YAML 1.1)": ["1:20", "190:20:30", "1:2:3.5"],
    "timestamps": ["2024-1-2", "2024-01-02", "2024-2-29", "0000-2-29", "2024-1-2T1:2:3Z", "2024-1-2t1:2:3.5+01:00",
                   "2024-1-2  1:2:3", "2024-1-2 1:2:3,5", "2024-1-2T1:2:3+24:60", "2001-12-14 21:59:43.10 -5"],
    "merge and value keys": ["<<", "="],
}
# Strings that look like those but no reader types: written plain, as before.
PLAIN = ["1.2.3", "v1", "1e", "0x", "0b", "0o", "_1", "-0b-1", "._5", "+.", "+.nan", "1_0e99999", "2024-13-1",
         "2023-2-29", "1900-2-29", "2024-1-2T24:0:0Z", "2024-1-2T1:2:3", "2024-1-2 1:2:3Z", "2024-1-2T1:2:3+24:61",
         "0xFFFFFFFFFFFFFFFFFz", "abc", "NaN", "Infinity", "yess", "nil", "None", "1-2", "1.0.0-rc.1", "a1e3",
         "sha-5e12345", "12:60", "0.5x", "e3", "x1"]
ALL_RETYPED = sorted({s for strings in RETYPED.values() for s in strings})
BREAKS = set("\r\n\x85\u2028\u2029")

# Generated strings, biased toward what resolvers look for: digits, signs, dots, exponents, base prefixes,
# underscores, colons, dates, the words.
ATOMS = ["0", "1", "7", "8", "9", "00", "09", "12", "59", "2024", "+", "-", ".", "_", "e", "E", "x", "X", "o", "O",
         "b", "B", "0x", "0o", "0b", "1f", ":", "T", "t", " ", "Z", ",", "inf", "Inf", ".inf", ".nan", "NaN", "y", "n",
         "Y", "yes", "no", "on", "off", "true", "null", "~", "<<", "=", "a", "-1-2", "2024-1-2", "2024-01-02",
         "T1:2:3Z", "+01:00"]
shaped = st.lists(st.sampled_from(ATOMS), min_size=1, max_size=6).map("".join)
strings = st.one_of(shaped, shaped, shaped, st.sampled_from(ALL_RETYPED + PLAIN), st.text(max_size=8))


class _OldDumper(yamlio._Dumper):  # type: ignore[misc,valid-type]
    """devlane's dumper before the rule: literal blocks, otherwise PyYAML's own choice (the "quotes no more than
    needed" reference)."""


def _old_str(dumper, value: str):
    if "\n" in value and not yamlio._has_trailing_space_lines(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_OldDumper.add_representer(str, _old_str)


def old_dump(obj: object) -> str:
    return yaml.dump(obj, Dumper=_OldDumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=1_000_000, indent=2)


def pyyaml_plain(s: str) -> bool:
    """PyYAML by itself writes `s` plain as a mapping value."""
    return old_dump({"k": s}) == f"k: {s}\n"


# ---------------------------------------------------------------------------------------------------------------
# The rule, and the emitter against PyYAML (fast)


@pytest.mark.parametrize("category", sorted(RETYPED))
def test_each_retyped_string_is_quoted_as_a_value_a_key_and_an_item(category):
    for s in RETYPED[category]:
        assert retyped(s), s
        text = dump({"data": {s: s}, "list": [s]})
        assert f"\n  {s}: " not in text and f": {s}\n" not in text and f"- {s}\n" not in text, (category, text)
        assert yamlc.safe_load(text) == {"data": {s: s}, "list": [s]}


def test_the_issues_values_are_single_quoted_as_pyyaml_quotes():
    values = RETYPED["the issue's"]
    assert dump({"a": values}) == "a:\n" + "".join(f"- '{v}'\n" for v in values)


@pytest.mark.parametrize("s", PLAIN)
def test_strings_no_reader_types_stay_plain(s):
    assert not retyped(s)
    assert dump({"k": s, s: "v"}) == f"k: {s}\n{s}: v\n"


LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
word_like = st.builds(str.__add__, st.sampled_from(LETTERS), st.text(LETTERS + "0123456789_./@+-:eEsS", max_size=6))


@given(st.one_of(word_like, st.sampled_from(sorted(WORDS))))
def test_the_fast_paths_plain_strings_are_retyped_only_as_words(s):
    """`dump` writes a letter-first word-like string plain without asking the rule: only its words may be typed."""
    if s in WORDS:
        assert retyped(s)
    elif yamlio._PLAIN.match(s):
        assert not retyped(s)


@given(strings)
@example("0o17")
@example("plain")
def test_the_emitter_quotes_what_pyyaml_quotes_and_the_retyped_strings_nothing_else(s):
    obj = {"k": s, s: "v", "l": [s]}
    if retyped(s):
        assert dump({"k": s}) != f"k: {s}\n"
        assert yamlc.safe_load(dump(obj)) == obj
    if not retyped(s) or not pyyaml_plain(s):  # what PyYAML quotes itself is quoted as before
        assert dump(obj) == old_dump(canonical(obj))


@given(strings.filter(lambda s: not BREAKS.intersection(s)))
@example("1e3")
def test_inits_scalars_follow_the_same_rule(s):
    """`init --write` and `--config` splice new scalars in (`yamledit`): quoted like devlane's output."""
    block, flow = entry_lines("k", s, 0, Style()), flow_text({"k": [s]})
    assert yamlc.safe_load("\n".join(block) + "\n") == {"k": s} and yamlc.safe_load(flow) == {"k": [s]}
    plain_before = yaml.safe_dump(s, allow_unicode=True, width=float("inf")).removesuffix("\n...\n") == s
    assert (block == [f"k: {s}"]) == (plain_before and not retyped(s))
    if retyped(s):
        assert flow != f"{{k: [{s}]}}"


def test_the_dumper_init_writes_new_files_with_quotes_the_retyped_strings():
    text = yaml.dump({"name": "1e3", "host": "y", "port": 80, "label": "web"}, Dumper=SafeDumper, sort_keys=False)
    assert text == "name: '1e3'\nhost: 'y'\nport: 80\nlabel: web\n"


def test_the_plugin_lock_quotes_the_retyped_strings():
    """devlane.lock is YAML devlane writes too (a tag ref `2024-1-2`, a commit of digits and one `e`)."""
    commit = "1" * 20 + "e" + "2" * 19
    text = Lock({"p": LockEntry("p", "https://example.com/p.git", "2024-1-2", commit)}).dump()
    assert "  ref: '2024-1-2'\n" in text and f"  commit: '{commit}'\n" in text


def test_a_multi_line_or_unusual_object_goes_through_pyyaml_with_the_same_rule():
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"y": "0o17"}},
           "data": {"script": "echo 1\necho 2\n", "sha": "5e12345", "k" * 130: "1e3"}}
    text = dump(obj)  # a multi-line string and a long key: PyYAML's whole-object path
    assert "  'y': '0o17'\n" in text and "  sha: '5e12345'\n" in text and ": '1e3'\n" in text
    assert yamlc.safe_load(text) == obj


# ---------------------------------------------------------------------------------------------------------------
# Go's readers as the oracle (a subprocess: e2e)


@pytest.fixture(autouse=True)
def _oracle(request):
    if request.node.get_closest_marker("e2e") is not None:
        yamloracle.require()


@pytest.mark.e2e
def test_the_oracle_reads_what_go_reads():
    """The oracle itself: plain `0o17`, `y`, `1e3` are what the issue says kubectl and kustomize read."""
    [got] = yamloracle.read(["a: 0o17\nb: y\nc: 1e3\nd: 09\ny: x\n"])
    assert got["v2"] == [{"a": 15, "b": True, "c": 1000.0, "d": 9.0, True: "x"}]
    assert got["v3"] == [{"a": 15, "b": "y", "c": 1000.0, "d": 9.0, "y": "x"}]
    assert got["sigs"] == [{"a": 15, "b": True, "c": 1000, "d": 9, "true": "x"}]
    assert got["pyyaml"] == [{"a": "0o17", "b": "y", "c": "1e3", "d": "09", "y": "x"}]


@pytest.mark.e2e
@settings(max_examples=30)
@given(st.lists(strings, min_size=1, max_size=80))
@example(ALL_RETYPED + PLAIN)
def test_every_reader_reads_the_strings_devlane_wrote(batch):
    """As values, keys, list items and a Kubernetes object's labels, annotations, env and data."""
    objects = [{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "labels": {s: s}, "annotations": {"a": s}},
                "data": {"k": s, s: "v"}, "env": [{"name": "X", "value": s}], "list": [s, [s]]} for s in batch]
    texts = [dump(o) for o in objects]
    assert yamloracle.misread(texts, [[o] for o in objects]) == []


@pytest.mark.e2e
@settings(max_examples=30)
@given(st.lists(strings, min_size=1, max_size=80))
@example(ALL_RETYPED + PLAIN)
def test_a_string_is_quoted_only_where_a_reader_would_retype_it(batch):
    """The converse: of the strings PyYAML would write plain, the rule quotes exactly those a Go reader (kubectl's,
    kustomize's) or the YAML 1.2 core schema types. A string PyYAML quotes itself is quoted for PyYAML's reasons."""
    candidates = sorted({s for s in batch if pyyaml_plain(s)})
    readings = yamloracle.read([f"k: {s}\n" for s in candidates])
    for s, reading in zip(candidates, readings, strict=True):
        go = [name for name in yamloracle.READERS if not yamloracle.same(reading[name], [{"k": s}])]
        assert retyped(s) == (bool(go) or _CORE_12.fullmatch(s) is not None), (s, reading)
        assert (dump({"k": s}) != f"k: {s}\n") == retyped(s), s


@pytest.mark.e2e
def test_inits_annotation_edits_read_as_strings_in_go(tmp_path):
    """`init --write`'s spliced annotations, in block and flow manifests: every reader reads the values."""
    values = ALL_RETYPED + PLAIN
    block = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations:\n    keep: me\n"
             "spec: {}\n")
    flow = "apiVersion: v1\nkind: Service\nmetadata: {name: api, annotations: {keep: me}}\nspec: {}\n"
    (tmp_path / "block.yaml").write_text(block)
    (tmp_path / "flow.yaml").write_text(flow)
    edits = [AnnotationEdit(file, 0, kind, name, None, f"x.dev/v{i}", v)
             for file, kind, name in (("block.yaml", "Deployment", "web"), ("flow.yaml", "Service", "api"))
             for i, v in enumerate(values)]
    plan = plan_annotations(tmp_path, edits)
    assert not plan.skipped and sorted(plan.changes) == ["block.yaml", "flow.yaml"]
    texts = [plan.changes[f][1] for f in ("block.yaml", "flow.yaml")]
    meant = [yamlc.safe_load(t) for t in texts]
    assert [m["metadata"]["annotations"] for m in meant] == [{"keep": "me", **{f"x.dev/v{i}": v for i, v in
                                                                               enumerate(values)}}] * 2
    assert yamloracle.misread(texts, [[m] for m in meant]) == []
    # the same splicing writes list items and new keys
    items, entries = item_lines("1e3", 0, Style()), entry_lines("y", {"0o17": ["09", "n"]}, 0, Style())
    assert items == ["- '1e3'"] and entries == ["'y':", "  '0o17':", "    - '09'", "    - 'n'"]
    texts = ["\n".join(lines) + "\n" for lines in (items, entries)]
    assert yamloracle.misread(texts, [[["1e3"]], [{"y": {"0o17": ["09", "n"]}}]]) == []


@pytest.mark.e2e
def test_a_provision_record_is_json_which_every_reader_reads_as_written():
    """Provision records are JSON (`host.state`): double-quoted strings, which no resolver types."""
    record = {"result": {"configMap": {"SHA": "5e12345", "MODE": "0o17", "y": "n"}, "podSpecs": [], "resources": []}}
    assert yamloracle.misread([json.dumps(record, indent=2) + "\n"], [[record]]) == []
