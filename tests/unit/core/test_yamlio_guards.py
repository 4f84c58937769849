"""What the YAML loader refuses or marks (`renderer/core/yamlio.py`), each case on its own (issue 41, points 2-3):
an anchor behind each character the anchor scan knows (so no alias reaches the one-pass constructor unchecked: a
recursive document behind any of them is refused, and none is taken for JSON-exact), a repeated key on every path
(the one-pass constructor, PyYAML's, the plain-text loader, a quoted and a plain spelling of one key), keys that
cannot be keys, typed keys, `!!omap` and `!!pairs`, merge keys (malformed, self-merging, too many), text that is
not UTF-8 or not UTF-16 after its byte order mark, a syntax error (named by line), and a file that must hold exactly
one document. Every refusal is the error itself, naming the file.
"""

from __future__ import annotations

import codecs

import pytest

from renderer.core import yamlio
from renderer.core.yamlio import load_one, parse_documents, parse_stream
from renderer.errors import DevlaneError

# An anchor right behind each character it may follow in YAML: the anchor scan must see every one
RECURSIVE = {
    "start": "&a [x, *a]\n",
    "space": "a: &a [x, *a]\n",
    "tab": "a:\t&a [x, *a]\n",
    "line-feed": "a:\n  &a [x, *a]\n",
    "carriage-return": "a:\r  &a [x, *a]\r",
    "comma": "[1,&a [x, *a]]\n",
    "bracket": "[&a [x, *a]]\n",
    "colon": '{"a":&a [x, *a]}\n',
    "next-line": "\u0085&a [x, *a]\n",  # line breaks of YAML 1.1 (the last byte of each in UTF-8)
    "line-separator": "# c\u2028&a [x, *a]\n",
    "paragraph-separator": "# c\u2029&a [x, *a]\n",
    "byte-order-mark": "\ufeff&a [x, *a]\n",
    "second-document": "a: 1\n---\n&a [x, *a]\n",
}
# An aliased scalar behind each: parsed, but not a tree JSON carries as it is (one object, two places)
ALIASED = {"start": "&a x\n", "space": "a: &a x\nb: *a\n", "tab": "a:\t&a x\nb: *a\n",
           "line-feed": "a:\n  &a x\nb: *a\n", "carriage-return": "a:\r  &a x\rb: *a\r", "comma": "[1,&a x, *a]\n",
           "bracket": "[&a x, *a]\n", "brace": "{&a k: 1, j: *a}\n", "colon": '{"a":&a x, "b": *a}\n',
           "next-line": "a: 1\u0085&a b: *a\n", "line-separator": "a: 1\u2028&a b: *a\n",
           "paragraph-separator": "a: 1\u2029&a b: *a\n", "byte-order-mark": "\ufeff&a [x]\n"}
# Eight aliases of an eight-item list anchored behind each (X: the items, A: the aliases)
BOMB = {"space": "a: &a [X]\nb: [A]\n", "tab": "a:\t&a [X]\nb: [A]\n", "line-feed": "a:\n  &a [X]\nb: [A]\n",
        "carriage-return": "a:\r  &a [X]\rb: [A]\r", "comma": "[1,&a [X], [A]]\n", "bracket": "[&a [X], [A]]\n",
        "colon": '{"a":&a [X], "b": [A]}\n', "next-line": "[1,\u0085&a [X],\u0085[A]]\n",
        "line-separator": "[1,\u2028&a [X], [A]]\n", "paragraph-separator": "[1,\u2029&a [X], [A]]\n",
        "byte-order-mark": "\ufeffa: &a [X]\nb: [A]\n", "second-document": "a: 1\n---\n- &a [X]\n- [A]\n"}


def refused(text: str | bytes, match: str, file: str = "f.yaml", plain: bool = False) -> DevlaneError:
    data = text.encode() if isinstance(text, str) else text
    with pytest.raises(DevlaneError, match=match) as info:
        parse_documents(data, file, plain)
    assert all(p.where.file == file and p.code == "yaml" for p in info.value.problems)
    return info.value


# -- anchors and aliases ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(RECURSIVE))
def test_a_recursive_alias_behind_any_character_is_refused(case):
    refused(RECURSIVE[case], "a YAML alias refers to a collection that contains it")


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("case", sorted(BOMB))
def test_an_alias_bomb_behind_any_character_is_refused(monkeypatch, case, plain):
    monkeypatch.setattr("renderer.core.yamlbounds.MAX_NODES", 50)
    text = BOMB[case].replace("X", ", ".join(["x"] * 8)).replace("A", ", ".join(["*a"] * 8))
    refused(text, "YAML aliases expand the document past 50 nodes", plain=plain)


@pytest.mark.parametrize("case", sorted(ALIASED))
def test_an_aliased_document_is_never_taken_for_a_plain_tree(case):
    docs, exact = parse_stream(ALIASED[case].encode(), "f.yaml")
    assert docs and exact is False


def test_an_alias_is_one_object_in_two_places_never_expanded_by_the_loader():
    """PyYAML shares an aliased collection (so a bomb costs nothing until `check_aliases` refuses it); the
    one-pass constructor, which would copy it, never sees a file with an anchor."""
    doc = parse_documents(b"a: &a {k: [1]}\nb: *a\nc: [*a]\n", "f.yaml")[0]
    assert doc["b"] is doc["a"] and doc["c"][0] is doc["a"]


def test_text_without_an_anchor_is_a_plain_tree():
    assert parse_stream(b"a: [x, y]\nb: {c: '&a'}\nd: x&y\n", "f.yaml") == ([{"a": ["x", "y"], "b": {"c": "&a"},
                                                                            "d": "x&y"}], True)


# -- repeated keys ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize(("text", "key", "line", "first"), [
    ("a: 1\na: 2\n", "'a'", 2, 1),  # the one-pass constructor's path
    ("x: &x 1\na: 1\na: *x\n", "'a'", 3, 2),  # an anchor in the file: PyYAML's path
    ("a: 1\n'a': 2\n", "'a'", 2, 1),  # quoted and plain, one key
    ('"a": 1\nb: 2\na: 3\n', "'a'", 3, 1),
    ("{a: 1, b: 2, a: 3}\n", "'a'", 1, 1),
    ("- k: 1\n  n:\n    x: 1\n    x: 2\n", "'x'", 4, 3),  # nested in a list
    ("<<: {m: 1}\nb: 1\nb: 2\n", "'b'", 3, 2),  # beside a merge key
])  # fmt: skip
def test_a_repeated_key_is_refused_on_every_path(text, key, line, first, plain):
    err = refused(text, f"duplicate key {key} in a mapping \\(first on line {first}\\)", plain=plain)
    assert err.problems[0].where.line == line and "kubectl refuses duplicate keys too" in err.problems[0].hint


@pytest.mark.parametrize(("text", "key"), [("1: a\n1: b\n", "1"), ("true: a\ntrue: b\n", "True"),
                                           ("~: a\nnull: b\n", "None"), ("1: a\n0x1: b\n", "1")])
def test_a_repeated_typed_key_is_refused(text, key):
    refused(text, f"duplicate key {key} in a mapping")


def test_a_key_that_a_merge_sets_may_be_set_again():
    assert parse_documents(b"base: &b {x: 1, y: 1}\nc: {<<: *b, x: 2}\n", "f.yaml")[0]["c"] == {"x": 2, "y": 1}


# -- keys and tags -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["? [1]\n: 2\n", "? {a: 1}\n: 2\n", "k: {[1]: 2}\n"])
def test_a_list_or_mapping_key_is_refused_naming_its_line(text):
    err = refused("ok: 1\n" + text, "a mapping key is a list or mapping, which cannot be a key")
    assert err.problems[0].where.line == 2


@pytest.mark.parametrize(("text", "doc"), [("1: a\n", {1: "a"}), ("true: a\n", {True: "a"}), ("~: a\n", {None: "a"}),
                                           ("1.5: a\n", {1.5: "a"}), ("a: !!omap [x: 1]\n", {"a": [("x", 1)]}),
                                           ("a: !!pairs [x: 1, x: 2]\n", {"a": [("x", 1), ("x", 2)]})])
def test_what_json_would_not_carry_exactly_is_marked(text, doc):
    docs, exact = parse_stream(text.encode(), "f.yaml")
    assert docs == [doc] and type(next(iter(docs[0]))) is type(next(iter(doc))) and exact is False


def test_an_explicit_value_key_is_a_string_key():
    assert parse_stream(b"=: 1\n", "f.yaml") == ([{"=": 1}], True)
    refused("=: 1\n? =\n: 2\n", "duplicate key '='")


def test_the_plain_loader_keeps_every_scalar_and_key_as_text():
    assert parse_stream(b"1: 0x1F\ntrue: ~\n<<: {a: 1}\n", "f.yaml", plain=True) == (
        [{"1": "0x1F", "true": "~", "<<": {"a": "1"}}], True)
    assert parse_stream(b"!!int 1: a\n? !!merge <<\n: {b: 2}\n", "f.yaml", plain=True) == (
        [{"1": "a", "<<": {"b": "2"}}], True)  # explicit tags too


def test_a_quoted_scalar_is_a_string_whatever_plain_scalar_of_the_same_text_came_first():
    """The loader remembers the tag of each plain scalar's text; a quoted one never takes it."""
    assert parse_documents(b"a: 1\nb: '1'\nc: \"true\"\nd: true\ne: !!str 1\n", "f.yaml") == [
        {"a": 1, "b": "1", "c": "true", "d": True, "e": "1"}]


def test_a_mapping_tag_on_a_list_is_refused():
    refused("a: !!map [x]\n", "expected a mapping node, but found sequence")


# -- merge keys ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["a: {<<: 1}\n", "a: {<<: [1]}\n", "b: &b {x: 1}\na: {<<: [*b, 1]}\n",
                                  "b: &b [1]\na: {<<: *b}\n", "a: {<<: [[x]]}\n"])
def test_a_merge_of_anything_but_mappings_is_refused(text):
    refused(text, r"a merge key \(<<\) takes a mapping or a list of mappings")


def test_a_mapping_merged_into_itself_is_refused():
    refused("a: &a {x: 1, <<: *a}\n", "merges a mapping into itself")
    refused("a: &a {x: 1, b: &b {<<: *a}, <<: *b}\n", "merges a mapping into itself")


def test_merges_copy_at_most_the_node_limit(monkeypatch):
    monkeypatch.setattr(yamlio, "MAX_NODES", 6)
    base = "b: &b {k1: 1, k2: 2, k3: 3}\none: &one {k: 1}\n"
    assert parse_documents((base + "c: {<<: *b}\nd: {<<: *b}\n").encode(), "f.yaml")[0]["d"] == {"k1": 1, "k2": 2,
                                                                                                  "k3": 3}
    refused(base + "c: {<<: *b}\nd: {<<: *b}\ne: {<<: *one}\n", r"merge keys \(<<\) copy more than 6 keys")
    refused(base + "c: {<<: *b}\nd: {<<: *b}\ne: {<<: *b}\n", r"merge keys \(<<\) copy more than 6 keys")
    refused(base + "c: {<<: [*b, *b, *b]}\n", r"merge keys \(<<\) copy more than 6 keys")


def test_the_first_of_several_merged_mappings_wins_and_the_mapping_itself_over_all():
    text = b"a: &a {x: a, y: a}\nb: &b {x: b, y: b, z: b}\nc: {<<: [*a, *b], y: c}\nd: {<<: [*b, *a]}\n"
    doc = parse_documents(text, "f.yaml")[0]
    assert doc["c"] == {"x": "a", "y": "c", "z": "b"} and doc["d"] == {"x": "b", "y": "b", "z": "b"}


def test_nested_merges_are_flattened_innermost_first():
    text = b"a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: &c {<<: *b, z: 3}\nd: {<<: [*c, *a]}\n"
    assert parse_documents(text, "f.yaml")[0]["d"] == {"x": 1, "y": 2, "z": 3}


# -- encodings, syntax, documents ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bom", [codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE], ids=["le", "be"])
def test_utf16_behind_either_byte_order_mark_is_read_and_broken_utf16_refused(bom):
    codec = "utf-16-le" if bom == codecs.BOM_UTF16_LE else "utf-16-be"
    assert parse_documents(bom + "a: [1, é]\n".encode(codec), "u.yaml") == [{"a": [1, "é"]}]
    refused(bom + "a: 1\n".encode(codec) + b"\x00", "not valid UTF-16 after a UTF-16 byte order mark", "u.yaml")
    refused(bom + "a: 1\n".encode(codec)[:-2] + ("\ud800".encode(codec, "surrogatepass")),
            "not valid UTF-16", "u.yaml")


def test_bytes_that_are_not_utf8_are_refused():
    err = refused(b"a: \xff\n", "invalid YAML: .*invalid leading UTF-8 octet")
    assert err.problems[0].where.line is None


@pytest.mark.parametrize(("text", "line"), [("a: [1, 2\n", 2), ("a: b\n c: d\n", 2), ("a:\n  - x\n - y\n", 3),
                                            ("ok: 1\n\"unclosed\n", 3)])
def test_a_syntax_error_names_the_file_and_line_and_says_how_to_fix_it(text, line):
    err = refused(text, "^f.yaml:.*invalid YAML: ")
    assert err.problems[0].where.line == line and "exclude:" in err.problems[0].hint


@pytest.mark.parametrize(("text", "found"), [("", 0), ("---\n---\n", 0), ("a: 1\n---\nb: 2\n", 2), ("~\n", 0)])
def test_a_file_of_one_document_must_hold_exactly_one(text, found):
    with pytest.raises(DevlaneError, match=f"expected exactly one YAML document, found {found}") as info:
        load_one(text, "config.yaml")
    assert info.value.problems[0].where.file == "config.yaml"


def test_a_file_of_one_document_may_hold_empty_documents_around_it():
    assert load_one("---\n---\na: 1\n---\n", "config.yaml") == {"a": 1}
    assert load_one(b"a: 1\n", "config.yaml") == {"a": 1}


@pytest.mark.parametrize(("value", "says"), [
    ("0b_", "'0b_' reads as an int that cannot be converted (invalid literal for int() with base 2"),
    ("0x_", "'0x_' reads as an int that cannot be converted (invalid literal for int() with base 16"),
    ("!!int x", "'x' reads as an int that cannot be converted"),
    ("!!float y", "'y' reads as a float that cannot be converted"),
    ("9" * 5000, "'" + "9" * 37 + "...' reads as an int that cannot be converted (Exceeds the limit (4300 digits)"),
    ("2001-13-45", "'2001-13-45' reads as a timestamp that cannot be converted (month must be in 1..12)"),
    ("2001-02-30", "'2001-02-30' reads as a timestamp that cannot be converted (day is out of range for month)"),
    ("!!timestamp x", "'x' reads as a timestamp that cannot be converted (not a timestamp)"),
    ("!!bool x", "'x' reads as a bool that cannot be converted (not a bool)"),
    ("!!int ''", "'' reads as an int that cannot be converted (not an int)"),
    ("!!float ''", "'' reads as a float that cannot be converted (not a float)"),
    ("!!int " + "x" * 40, "'" + "x" * 40 + "' reads as an int"),  # shown whole up to 40 characters
    ("!!int " + "x" * 41, "'" + "x" * 37 + "...' reads as an int"),
])
def test_a_scalar_python_cannot_convert_is_invalid_yaml_at_its_line(value, says):
    """PyYAML's resolver reads these as numbers or dates (or a tag says so) and its constructor lets Python's error
    out (an internal error for the user): refused, with the line and the fix, whether the file is a plain tree or
    not."""
    for text in (f"a: 1\nb: {value}\n", f"x: &x 1\ny: *x\nb: {value}\n"):
        with pytest.raises(DevlaneError) as err:
            parse_stream(text.encode(), "cm.yaml")
        problem = err.value.problems[0]
        assert (problem.where.file, problem.where.line) == ("cm.yaml", text.count("\n"))
        assert says in problem.message and "quote it if it is text" in problem.message
        assert "set_int_max_str_digits" not in problem.message
