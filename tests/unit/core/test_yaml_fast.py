"""Plain trees through rapidyaml (`yamlfast`) against PyYAML's loader: for any text, the same documents (types
included), exactness flag and errors as PyYAML alone gives, whether rapidyaml reads the text or declines it; each
rule of what it declines is there for a text rapidyaml reads otherwise; a plain manifest is read by rapidyaml
alone; and rapidyaml's own error messages never reach the terminal."""

from __future__ import annotations

import os
import random
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import ROOT, SHARED
from support.yaml_streams import corpus, node, outcome, pyyaml_outcome, stream, typed

from renderer.core import yamlfast, yamlio, yamltree

pytestmark = pytest.mark.skipif(yamlfast.ryml is None, reason="rapidyaml has no wheel for this platform")


@settings(max_examples=150, deadline=None)
@given(st.lists(node, min_size=1, max_size=3))
@example([(("a", "1"), ("b", "yes"), ("a", "2"))])  # a repeated key: the loader refuses it
@example([(("a", "on"), ("b", "1_000"), ("c", "'yes'"), ("d", "-1.5"), ("e", "1e3"), ("f", "'8080'"))])
@example([(("labels", "{app: shop, tier: 'web'}"), ("args", "['--port', \"80\", x]"))])  # one-line flows
def test_any_document_is_read_as_pyyaml_reads_it(docs):
    text = stream(docs)
    assert outcome(text) == pyyaml_outcome(text), text.decode()


# the characters of YAML's syntax, the words and digits of its typed scalars, and one letter of each other kind
_CHARACTERS = list("ab:-[]{},&*!<=~ \n'\"01.#|>?%@`xyeE+_\t\\é")


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(_CHARACTERS), max_size=60))
@example("}\n")  # a stray bracket: rapidyaml reads a string
@example("a: |1 b\n")  # more on a block scalar's header
@example('a: "x"y\n')  # more after a closing quote
@example("a: @x\n")  # a reserved indicator
@example("a: -.5\n")  # written -0.5: a float, where PyYAML reads a string
@example("a: nan\n")  # written ".nan"
@example("a: |\n  x")  # no last line break: rapidyaml keeps one in the block scalar
@example("a: b\nc: 'd'")  # no last line break, no block scalar: read with one added
def test_any_text_is_read_as_pyyaml_reads_it(text):
    data = text.encode()
    assert outcome(data) == pyyaml_outcome(data), text


# Each rule, and a text it is there for: rapidyaml, asked anyway, reads it otherwise than PyYAML (or not at all).
DECLINED = {
    "a tab": "a:\tb\n",
    "a carriage return": "a: b\r\nc: d\r\n",
    "a backslash": 'a: "x\\ty"\n',
    "a control character": "a: b\x01\n",
    "a byte order mark": "\ufeffa: b\n",
    "a merge key": "a: {x: 1}\nb:\n  <<: {y: 2}\n",
    "a directive": "%YAML 1.1\n---\na: b\n",
    "an anchor": "a: &x b\nc: d\n",
    "an alias": "a: *x\n",
    "a tag": "a: !!str 5\n",
    "an explicit key": "? a\n: b\n",
    "a reserved indicator": "a: @b\n",
    "a backquote": "a: `b\n",
    "a YAML 1.1 line break (NEL)": "a: b\u0085c\n",
    "a leading dot": "a: .5\n",
    "a signed leading dot": "a: -.5\n",
    "a trailing dot": "a: 1.\n",
    "infinity": "a: -inf\n",
    "not a number": "a: nan\n",
    "a flow collection in a flow collection": "a: [x, [y]]\n",
    "a stray bracket": "a: b\n}\n",
    "a block scalar starting a line": "|\n x\n",
    "more on a block scalar's header": "a: |1 b\n",
    "an explicit indentation": "a: >1\n  \n",
    "a flow mapping in a flow collection": "a: [{b: c}]\n",
    "a plain flow item with a colon": "a: [http://x]\n",
    "more after a closing quote": "a: 'x'y\n",
    "a block scalar with no last line break": "a: |\n  x",
    "a character PyYAML refuses": "a: b\ufffe\n",
    "a quoted word PyYAML types when plain": "a: 'yes'\nb: yes\n",
    "a quoted timestamp": "a: '2001-12-14'\n",
    "a typed key": "80: http\n",
    "a key JSON writes as a word": "true: x\n",
    "a repeated key": "a: 1\na: 2\n",
    "an empty stream": "# nothing\n",
}


@pytest.mark.parametrize("text", DECLINED.values(), ids=DECLINED.keys())
def test_each_rule_declines_a_text_that_needs_it(text):
    data = text.encode()
    assert yamlfast.documents(data) is None
    assert outcome(data) == pyyaml_outcome(data)


def test_what_manifests_hold_is_read_here():
    """What the rules leave: quoted numbers and words (their quotes seen from the JSON), numbers typed as PyYAML types
    them (`1e3` and `1.5e3` are strings in YAML 1.1), one-line flow lists and empty collections, block scalars."""
    text = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {}\n  annotations:\n"
            b"    inject: 'true'\n    port: \"8080\"\n    empty: ''\ndata:\n  n: 12\n  f: 0.5\n  e: 1e3\n"
            b"  g: 1.5e3\n  b: true\n  z: null\n  nil:\n  args: [\"--port\", '80', x]\n  none: []\n"
            b"  script: |\n    echo hi\n    exit 0\n  folded: >-\n    a\n    b\n---\n- 2\n")
    docs = yamlfast.documents(text)
    assert docs is not None
    assert typed(docs) == typed(yamlio.parse_stream(text, "t.yaml")[0]) == pyyaml_outcome(text)[0]
    data = docs[0]["data"]
    assert (data["n"], data["f"], data["e"], data["g"], data["b"], data["z"], data["nil"]) == \
        (12, 0.5, "1e3", "1.5e3", True, None, None)
    assert docs[0]["metadata"]["annotations"] == {"inject": "true", "port": "8080", "empty": ""}


def test_a_manifest_is_read_by_rapidyaml_alone(monkeypatch):
    """The feature itself: the bundled example's manifests never reach libyaml (neither `yamltree` nor the loader),
    but for its plugins' file, whose seed SQL (a block scalar) holds quotes after blanks that a rule reads as nodes."""
    def libyaml(*_args: object) -> None:
        raise AssertionError("read through libyaml")

    monkeypatch.setattr(yamltree, "documents", libyaml)
    monkeypatch.setattr(yamlio._Loader, "get_data", libyaml)
    manifests = sorted(p for p in (ROOT / "examples").glob("*shop/k8s/*.yaml") if p.name != "plugins.yaml")
    assert len(manifests) > 5
    for path in manifests:
        yamlio.parse_stream(path.read_bytes(), str(path))


def test_rapidyaml_s_own_error_message_never_reaches_the_terminal(capfd):
    """rapidyaml prints a parse error on file descriptor 2 before it raises: devlane's own message, from the loader,
    is the only one."""
    for broken in (b"a: b: c\n", b"- a\nb: c\n", b"a: 'b\n"):  # past every rule: rapidyaml's parse refuses them
        assert yamlfast.documents(broken) is None
        out, err = capfd.readouterr()
        assert (out, err) == ("", "")
        assert outcome(broken)[0] == "error"
    print("still here", file=sys.stderr)
    assert capfd.readouterr().err == "still here\n"  # the descriptor is back


def test_without_rapidyaml_every_stream_takes_the_usual_path(monkeypatch):
    monkeypatch.setattr(yamlfast, "ryml", None)
    assert yamlfast.documents(b"a: b\n") is None
    assert outcome(b"a: b\n") == pyyaml_outcome(b"a: b\n") == (typed([{"a": "b"}]), True)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.sampled_from(
    [*":-[]{},&*!#|>?'\" \n", "  ", "- ", ": ", "\n  ", "\n- "])), min_size=1, max_size=3))
def test_a_manifest_with_a_typo_is_read_as_pyyaml_reads_it(seed, edits):
    """Real manifests, each edited where a typo would be (a character gone or added, a line indented otherwise or
    repeated): whatever rapidyaml makes of it, devlane reads what PyYAML reads, or refuses it as PyYAML does."""
    files = sorted((ROOT / "examples").rglob("*.yaml"))
    text = random.Random(seed).choice(files).read_text()
    for where, how, piece in edits:
        at = int(where * (len(text) - 1))
        lines = text.split("\n")
        line = int(where * (len(lines) - 1))
        if how < 0.3:
            text = text[:at] + text[at + 1:]
        elif how < 0.6:
            text = text[:at] + piece + text[at:]
        elif how < 0.8:
            lines[line] = " " + lines[line] if how < 0.7 else lines[line][1:]
            text = "\n".join(lines)
        else:
            lines.insert(int(how * (len(lines) - 1)), lines[line])
            text = "\n".join(lines)
    data = text.encode()
    assert outcome(data) == pyyaml_outcome(data), text


@pytest.mark.e2e  # some 5,000 files, each parsed twice
def test_every_corpus_file_is_read_as_pyyaml_reads_it():
    files = corpus()
    if not any(SHARED in p.parents for p in files):
        pytest.skip("../shared is absent")
    read_here = [p for p in files if yamlfast.documents(p.read_bytes()) is not None]
    differ = [str(p) for p in files if outcome(p.read_bytes()) != pyyaml_outcome(p.read_bytes())]
    assert differ == []
    manifests = [p for p in files if "realworld" in p.parts and pyyaml_outcome(p.read_bytes())[0] != "error"]
    assert len(set(read_here) & set(manifests)) > 0.8 * len(manifests)  # most real manifests: 424 of 493


def test_the_progress_display_still_draws_while_rapidyaml_is_silenced(capfd):
    """The display's thread draws on its own copy of stderr's descriptor: a frame drawn while the main thread has
    pointed descriptor 2 at /dev/null (around a rapidyaml parse) still reaches the terminal."""
    from renderer.cli import progress_display

    stderr = open(2, "w", closefd=False)  # noqa: SIM115 - sys.stderr's descriptor itself, as the CLI's stream
    with progress_display._own_descriptor(stderr) as drawn_on:
        assert drawn_on.fileno() != 2
        with yamlfast._no_stderr():
            drawn_on.write("a frame")
            drawn_on.flush()
            os.write(2, b"rapidyaml's own message")
    assert capfd.readouterr().err == "a frame"


def test_a_closed_stderr_is_no_error():
    """`devlane render 2>&-`: no descriptor 2 to silence, and the parse goes on."""
    yamlfast.documents(b"a: b: c\n")  # /dev/null opened first, as in a process that has parsed before
    saved = os.dup(2)
    os.close(2)
    try:
        assert yamlfast.documents(b"a: b\n") == [{"a": "b"}]
        assert yamlfast.documents(b"a: b: c\n") is None
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@pytest.mark.parametrize("text", [b"a: '8080'\nb: name\n", b"2001-12-14: x\n"], ids=["read", "declined"])
def test_each_string_s_verdict_is_worked_out_once(monkeypatch, text):
    """A manifest repeats the same keys and values thousands of times: whether each reads the same plain is asked of
    PyYAML's resolver once (a verdict that declines, too)."""
    monkeypatch.setattr(yamlfast, "_verdicts", {})
    asked: list[str] = []
    real = yamltree.plain_value

    def counted(value: str):
        asked.append(value)
        return real(value)

    monkeypatch.setattr(yamltree, "plain_value", counted)
    first = yamlfast.documents(text)
    assert asked
    asked.clear()
    assert yamlfast.documents(text) == first
    assert asked == []
