"""Plain YAML trees through rapidyaml, for the files it reads exactly as PyYAML does.

Parsing is most of a cold render and of a cold lint, and libyaml's parse is the floor every other way of reading a
manifest through PyYAML stands on (`yamltree` took off what Python added to it). rapidyaml parses a manifest about
25 times faster than libyaml and writes it out as JSON in C, which the standard library's C decoder builds in one
pass: several times faster than PyYAML's C loader in all.

The two parsers read YAML differently in places (rapidyaml reads YAML 1.2, PyYAML YAML 1.1, and each accepts text
the other refuses), and rapidyaml's JSON writer respells a few numbers and writes plain and quoted strings alike, so
its documents are used only where they are PyYAML's, and `documents` returns None otherwise (the caller then reads
the file through `yamltree` or PyYAML's loader, which decide and word every error):

- before parsing, the text must be in the part of YAML where both agree: no tab, carriage return, backslash,
  control character, byte order mark, YAML 1.1 line break (NEL, LS, PS) or character PyYAML refuses; no anchor,
  alias, tag, directive, explicit or merge key, or reserved indicator (`@`, a backquote); flow collections only in
  the one-line form manifests use; block scalar headers and closing quotes with nothing after them; no number the
  JSON writer would respell (`.5`, `-.5`, `1.`, `inf`, `nan`); and no block scalar where the stream ends without a
  line break;
- in the JSON, a bare number or word comes only from a plain scalar: it is typed from its text as PyYAML types
  that scalar (`1e3` stays the string PyYAML reads); no string is one PyYAML would read as something else had it
  been plain (`yes`, `~`, `0777`, `2001-12-14`: rapidyaml writes them as strings either way), and no key either
  (YAML 1.1 types plain keys: `80:` is a number); no mapping repeats a key.

Tests compare both readers on every corpus file, on generated YAML and on real manifests with typos, and check
that each rule declines a text it is there for.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import yaml

from . import yamltree

try:
    import ryml
except ImportError:  # no wheel for this platform: every file takes the usual path
    ryml = None
_RYML_ERRORS: tuple[type[BaseException], ...] = (ryml.ExceptionBasic,) if ryml is not None else ()

# What rapidyaml and PyYAML read differently, or rapidyaml's JSON writer respells. Each check is a scan at C speed
# that starts at a character manifests seldom hold, or a look at what the few matches have around them.
_CHARACTERS = bytes(range(9)) + b"\t\x0b\x0c\r" + bytes(range(14, 32)) + b"\\\x7f"  # and `<<`
_INDICATORS, _BRACKETS, _BLOCKS = b"&*!@`%?", b"[]{}", b"|>"
_NOT_RARE = bytes(set(range(256)) - set(_CHARACTERS + _INDICATORS + _BRACKETS + _BLOCKS))  # what a manifest is made of
_BREAKS = (b"\xef\xbb\xbf", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")  # a byte order mark; NEL, LS, PS
# a node's anchor, alias or tag, a reserved indicator, a directive, an explicit key: where a node may start (after
# a blank, `-`, `:`, `?`, `[`, `{` or `,`, or at the start)
_INDICATOR = re.compile(rb"[&*!@`%](?<![^\s\-:?\[{,].)|\?(?<![^\s\-:?\[{,].)(?![^ \n])")
_RESPELT = re.compile(rb"\.(?:(?=\d)(?<![\w.]\.)|(?<=\d\.)(?![\w.]))")  # `.5`, `-.5`, `1.`: `0.5`, `-0.5`, `1.0`
_WORD_BYTES = {bytes([c]) for c in b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_."}
# `inf`, `-inf`, `nan` as a word, any case (written `.inf`, `-.inf`, `.nan`): what precedes one that starts a token
_INF_NAN_START = re.compile(rb"(?:^|[^\w.])[-+]?\.?\Z")
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE  # what PyYAML refuses to read
# rapidyaml reads what libyaml refuses around flow collections (a stray `}`, `[:`), block scalar headers (`|1 x`)
# and closing quotes (`"a"b`). Flow collections are read here only in the one-line form manifests use, a value
# whose items (and keys) are quoted on one line or words without a bracket, comma, colon or hash (`args: ["--port",
# "80"]`, `labels: {app: shop}`),
# and every other bracket but a comment's declines; a block scalar's header must be one, and a closing quote in
# block context end its node (in a flow, `_ITEM` says what may follow).
_ITEM = rb"""(?:"[^"\n]*"|'[^'\n]*'|[^\s"'\[\]{},:#&*!@`%|>?-][^\n\[\]{},:#]*?)"""
_PAIR = rb"%s *: +%s" % (_ITEM, _ITEM)
_FLOW = re.compile(rb"(?:\[(?<=[:-] \[) *(?:%s *(?:, *%s *)*)?\]|\{(?<=[:-] \{) *(?:%s *(?:, *%s *)*)?\})"
                   rb"(?= *(?:#.*)?$)" % (_ITEM, _ITEM, _PAIR, _PAIR), re.MULTILINE)
_BRACKET = re.compile(rb"[\[\]{}]")
_COMMENT = re.compile(rb"(?:^| )#.*", re.MULTILINE)  # brackets in comments are text (`containers[0]`)
_COMMENT_LINE = re.compile(rb"\n *#[^\n]*")  # and quotes in a comment line (`the "License"`)
_BLOCK = re.compile(rb"[|>]")
_NODE_START = re.compile(rb"(?:^|[-:?]) *\Z")  # a line's text before a node: blanks after an indicator, or none
_HEADER = re.compile(rb"[-+]?(?: +#[^\n]*)? *(?:\n|\Z)")  # a chomping indicator at most (the two read an explicit
# indentation's blank lines apart)
_AFTER_QUOTE = re.compile(rb"""["'](?<![^\s\-:?]["'])(?:(?<=")[^"]*"|(?<=')(?:[^']|'')*')(?! *(?:$|:)| +#)""",
                          re.MULTILINE)
# In the JSON, a string that may be one PyYAML reads otherwise had it been plain (an implicit resolver's first
# character, or empty), and whether it is a key (`_plain_string` decides).
_STRING = re.compile(r'"([-+.0-9~<=yYnNtTfFoO][^"\\]*|)"(:?)')
_JSON_WORD = re.compile(r"true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|")


class _Declined(Exception):
    """Something PyYAML may read otherwise: the caller reads the file the usual way."""


def _number(text: str) -> Any:
    """A bare JSON number or constant (a plain scalar's text, as rapidyaml wrote it): its value as PyYAML reads
    the plain scalar."""
    try:
        typed = yamltree.plain_value(text)
    except (yamltree.NotPlain, ValueError):  # a timestamp, a number Python cannot convert
        raise _Declined from None
    return text if typed is yamltree.TEXT else typed


def _mapping(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise _Declined  # a repeated key: the loader refuses it, naming the line
    return mapping


_DECODER = json.JSONDecoder(object_pairs_hook=_mapping, parse_float=_number, parse_int=_number,
                            parse_constant=_number)
_quiet = threading.Lock()
_devnull: int | None = None


@contextmanager
def _no_stderr() -> Iterator[None]:
    """rapidyaml's C++ error handler prints a parse error to file descriptor 2 before it raises: the usual path
    then words the error as devlane does, so that text goes nowhere."""
    global _devnull
    with _quiet:
        try:
            if _devnull is None:
                _devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
            saved = os.dup(2)
        except OSError:  # no descriptor 2 (`2>&-`): what rapidyaml prints goes nowhere anyway
            yield
            return
        try:
            os.dup2(_devnull, 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _outside(data: bytes) -> bool:
    """Whether the text holds something rapidyaml and PyYAML read differently (the first rule of the module's doc)."""
    rare = data.translate(None, _NOT_RARE)  # the few characters some rule looks for (one pass, in C)
    if rare.translate(None, _INDICATORS + _BRACKETS + _BLOCKS) or b"<<" in data or _RESPELT.search(data):
        return True  # a character of `_CHARACTERS`
    text = _COMMENT_LINE.sub(b"\n", b"\n" + data) if b"#" in data else data  # a comment line's text is no YAML
    if rare.translate(None, _BRACKETS + _BLOCKS) and _INDICATOR.search(text):
        return True
    if not data.isascii():
        if any(mark in data for mark in _BREAKS):
            return True
        try:
            if _NON_PRINTABLE.search(data.decode("utf-8")) is not None:
                return True
        except UnicodeDecodeError:
            return True
    lower = data.lower()
    for word in (b"inf", b"nan"):
        at = lower.find(word)
        while at >= 0:
            if lower[at + 3:at + 4] not in _WORD_BYTES and _INF_NAN_START.search(lower, max(0, at - 3), at):
                return True
            at = lower.find(word, at + 3)
    brackets = bool(rare.translate(None, _INDICATORS + _BLOCKS))
    flowless = _FLOW.sub(b"", text) if brackets else text  # each flow checked whole: its items are quoted or words
    if ((b"'" in flowless or b'"' in flowless) and _AFTER_QUOTE.search(flowless)) \
            or (brackets and _BRACKET.search(_COMMENT.sub(b"", flowless))):
        return True
    if rare.translate(None, _INDICATORS + _BRACKETS):
        return _bad_block(data)
    return False


def _bad_block(data: bytes) -> bool:
    """A block scalar starting a line, with more than its header on its line, or where the stream ends without a
    line break (`|` or `>` where a node starts: after `-`, `:` or `?` and blanks)."""
    for match in _BLOCK.finditer(data):
        line = data.rfind(b"\n", 0, match.start()) + 1
        before = data[line:match.start()]
        if not before.strip(b" ") or (_NODE_START.search(before) is not None and (
                not _HEADER.match(data, match.end()) or not data.endswith(b"\n"))):
            return True
    return False


def _plain_string(text: str, colon: str) -> bool:
    """Whether a JSON string (a key if `colon`) reads the same had its scalar been plain: PyYAML types it a string
    then too, or (for a value) rapidyaml would have written the plain scalar bare (a JSON word or number), so it was
    quoted. Remembered in `_verdicts`."""
    try:
        verdict = yamltree.plain_value(text) is yamltree.TEXT
    except (yamltree.NotPlain, ValueError):
        verdict = False
    if not verdict and not colon:
        verdict = _JSON_WORD.fullmatch(text) is not None
    if len(_verdicts) >= 1 << 16:
        _verdicts.clear()
    _verdicts[(text, colon)] = verdict
    return verdict


_verdicts: dict[tuple[str, str], bool] = {}


def documents(data: bytes) -> list[Any] | None:
    """The documents of a stream rapidyaml reads as PyYAML does, or None (the caller reads it the usual way). The
    caller has bounded the stream's shape (`yamlbounds`)."""
    if ryml is None or _outside(data):
        return None
    if not data.endswith(b"\n"):  # the rest reads the same with one (`_outside` declined a block scalar ending it)
        data += b"\n"
    try:
        with _no_stderr():
            tree = ryml.parse_in_arena(data)
        root = tree.root_id()
        texts = [ryml.emit_json(tree, node) for node in (ryml.children(tree, root) if tree.is_stream(root)
                                                          else [root])]
        if any(text is None for text in texts):
            return None  # an empty stream, which PyYAML reads as no document
        for text in texts:
            for found in set(_STRING.findall(text)):  # (text, ":" for a key)
                verdict = _verdicts.get(found)
                if not (verdict if verdict is not None else _plain_string(*found)):
                    return None
        return [_DECODER.decode(text) for text in texts]
    except (_Declined, ValueError, RecursionError, *_RYML_ERRORS):  # ValueError: JSON rapidyaml wrote that cannot
        return None  # be read back; rapidyaml's own errors (a parse error, a limit)
