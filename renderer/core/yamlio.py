"""YAML in and out.

Parsing reads a stream of plain trees (most manifests) through rapidyaml where it reads them as PyYAML does
(`yamlfast`), else straight from libyaml's composer (`yamltree`), and anything else through PyYAML's C loader
(`CSafeLoader`), which words every error. It is the hot path of every render.
Dumping is canonical (fixed key order for the top of an object, literal blocks for multi-line
text, no line folding) so that the same objects always give the same bytes, and quotes every string
some YAML 1.1 or 1.2 reader (PyYAML, go-yaml v2 and v3 in kubectl and kustomize) would read as
something else (`yamlscalars`).
"""

from __future__ import annotations

import codecs
import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

try:  # pragma: no cover - the C loader is required in practice, the fallback keeps dev setups working
    _SafeBase = yaml.CSafeLoader
    _PlainBase = yaml.CBaseLoader
    _Dumper = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _SafeBase = yaml.SafeLoader  # type: ignore[misc]
    _PlainBase = yaml.BaseLoader  # type: ignore[misc]
    _Dumper = yaml.SafeDumper  # type: ignore[misc]

from ..errors import DevlaneError, Where, fail
from . import yamlfast, yamltree
from .yamlbounds import MAX_NODES, check_aliases, check_shape
from .yamlscalars import WORDS, quote_style

# An anchor definition (`&name`) is the precondition for an alias bomb; files without one skip the check. It
# follows a blank, a line break (NEL, LS, PS: their last UTF-8 byte), a byte order mark or an indicator.
_ANCHOR = re.compile(rb"(?:^|[\s,\[{:?\-\x85\xa8\xa9\xbf])&[^\s,\[\]{}]")
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"
_STR = "tag:yaml.org,2002:str"
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_RESOLVED_MAX = 1 << 16  # plain scalars whose tag `_Loader.resolve` remembers (then it starts afresh)
_UTF16 = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


class _StrictMappings:
    """Constructor behaviour shared by both loaders: a key repeated in one mapping is an error (kubectl
    refuses it too, where PyYAML keeps the last value), and merge keys (`<<: *base`) are flattened once
    per mapping, without recursion, within `MAX_NODES` merged keys."""

    file = ""
    merge_tags = True
    inexact = False  # JSON would not carry this file exactly: a typed key (an int, a bool, null...) or a tuple
    _flat: dict[int, dict] | None = None  # merged mappings of the current document, by node id
    _merged_keys = 0

    # The C composer calls these around every node for path resolvers, which these loaders never add: a C builtin
    # that ignores its arguments costs a third of a Python method that returns at once.
    descend_resolver = staticmethod({}.get)  # (parent, index) -> None
    ascend_resolver = staticmethod(tuple)  # () -> ()

    def construct_document(self, node: Any) -> Any:
        self._flat = {}  # node ids are only unique while the document's nodes live: memoise per document
        return super().construct_document(node)  # type: ignore[misc]

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict:
        if not isinstance(node, MappingNode):
            raise yaml.constructor.ConstructorError(None, None, f"expected a mapping node, but found {node.id}",
                                                    node.start_mark)
        mapping: dict = {}
        merges = None
        construct = self.construct_object  # type: ignore[attr-defined]
        for key_node, value_node in node.value:
            tag = key_node.tag
            if tag != _STR and self.merge_tags:
                if tag == _MERGE:
                    merges = value_node
                    continue
                if tag == _VALUE:
                    key_node.tag = _STR
                else:
                    self.inexact = True
            key = construct(key_node, deep=deep)
            try:
                seen = key in mapping
            except TypeError:
                raise fail("a mapping key is a list or mapping, which cannot be a key", self._where(key_node),
                           code="yaml") from None
            if seen:
                raise self._duplicate(node, key, key_node)
            mapping[key] = construct(value_node, deep=deep)
        if merges is None:
            return mapping
        return {**self._merged(merges), **mapping}

    def _merged(self, value_node: Any) -> dict:
        """The keys a `<<` merges in: of one mapping, or of a list of them (the first wins)."""
        sources = value_node.value if not isinstance(value_node, MappingNode) else [value_node]
        if not isinstance(sources, list) or not all(isinstance(s, MappingNode) for s in sources):
            raise fail("a merge key (<<) takes a mapping or a list of mappings", self._where(value_node), code="yaml")
        out: dict = {}
        for source in reversed(sources):
            flat = self._flatten(source)
            self._merged_keys += len(flat)
            if self._merged_keys > MAX_NODES:
                raise fail(f"merge keys (<<) copy more than {MAX_NODES:,} keys", self._where(source), code="yaml")
            out.update(flat)
        return out

    def _flatten(self, root: MappingNode) -> dict:
        """The keys of `root` with its merges, built innermost first with an explicit stack (memoised)."""
        if self._flat is None:
            self._flat = {}
        active: set[int] = set()
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if ready:
                active.discard(id(node))
                self._flat[id(node)] = self.construct_mapping(node)
                continue
            if id(node) in self._flat:
                continue
            if id(node) in active:
                raise fail("a merge key (<<) merges a mapping into itself", self._where(node), code="yaml")
            active.add(id(node))
            stack.append((node, True))
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE:
                    inner = value_node.value if not isinstance(value_node, MappingNode) else [value_node]
                    stack.extend((n, False) for n in inner if isinstance(n, MappingNode) and id(n) not in self._flat)
        return self._flat[id(root)]

    def _duplicate(self, node: MappingNode, key: Any, key_node: Any) -> DevlaneError:
        first = next(k for k, _ in node.value if k.tag != _MERGE
                     and self.construct_object(k) == key)  # type: ignore[attr-defined]
        return fail(f"duplicate key {key!r} in a mapping (first on line {first.start_mark.line + 1})",
                    self._where(key_node), hint="remove one of them: kubectl refuses duplicate keys too", code="yaml")

    def _where(self, node: Any) -> Where:
        return Where(file=self.file, line=node.start_mark.line + 1 if node.start_mark else None)


class _Loader(_StrictMappings, _SafeBase):  # type: ignore[misc,valid-type]
    """PyYAML's C safe loader with strict mappings."""

    _resolved: dict[str, str] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """A node's tag, as PyYAML's resolver gives it without path resolvers (this loader adds none), with no call
        to it for what needs no pattern: a quoted or `!`-tagged scalar is a string, a collection a map or a list. A
        plain scalar's tag is remembered by its text: manifests repeat the same keys and values thousands of times,
        and the resolver tries its patterns on each (the tag depends on the text alone)."""
        if kind is not ScalarNode:
            return _SEQ if kind is SequenceNode else _MAP
        if not implicit[0]:
            return _STR
        tag = self._resolved.get(value)
        if tag is None:
            if len(self._resolved) >= _RESOLVED_MAX:
                self._resolved.clear()
            tag = self._resolved[value] = super().resolve(kind, value, implicit)
        return tag


_TUPLES = {tag: _Loader.yaml_constructors[tag] for tag in ("tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs")}


def _inexact(loader: _Loader, node: Any) -> Any:
    """PyYAML's constructor of the node's tag, which also marks the file inexact for JSON (`!!omap` and `!!pairs`
    build tuples). A module-level function, not a closure made at import: what it does is decided when it runs."""
    loader.inexact = True
    return (yield from _TUPLES[node.tag](loader, node))


for _tag in _TUPLES:
    _Loader.add_constructor(_tag, _inexact)


_CONVERTED = {kind: _Loader.yaml_constructors[f"tag:yaml.org,2002:{kind}"]
              for kind in ("int", "float", "bool", "timestamp")}


def _converted(loader: _Loader, node: Any) -> Any:
    """PyYAML's constructor of an int, float, bool or timestamp, with a text it cannot convert refused as invalid
    YAML at its line: PyYAML lets Python's error out (an internal error for the user) when its resolver reads `0b_`
    as an integer or `2001-13-45` as a date, for an integer of over 4,300 digits, or for `!!bool x`."""
    kind = node.tag.rpartition(":")[2]
    named = f"{'an' if kind == 'int' else 'a'} {kind}"
    try:
        return _CONVERTED[kind](loader, node)
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        text = node.value if len(node.value) <= 40 else node.value[:37] + "..."
        why = str(exc).split(";")[0] if isinstance(exc, ValueError) else f"not {named}"  # not Python's advice
        raise yaml.constructor.ConstructorError(
            None, None, f"{text!r} reads as {named} that cannot be converted ({why}); quote it if it is text",
            node.start_mark) from None


for _kind in _CONVERTED:
    _Loader.add_constructor(f"tag:yaml.org,2002:{_kind}", _converted)


class _PlainLoader(_StrictMappings, _PlainBase):  # type: ignore[misc,valid-type]
    """Every scalar kept as its text (as Kardinal's map[string]string decode does), with strict mappings."""

    merge_tags = False  # the base resolver tags every key a string


def parse_documents(data: bytes, file: str, plain: bool = False) -> list[Any]:
    """Parse a multi-document YAML file within the bounds of `yamlbounds`; errors name the file and line.

    `plain`: keep every scalar as its text (no numbers, booleans or nulls)."""
    return parse_stream(data, file, plain)[0]


def parse_stream(data: bytes, file: str, plain: bool = False) -> tuple[list[Any], bool]:
    """`parse_documents`, and whether the documents are plain trees JSON can carry exactly as far as the
    loader knows: no anchors (an alias shares one object between places) and only string keys."""
    if data.startswith(_UTF16):  # libyaml reads UTF-16 too; the bounds scan UTF-8
        try:
            data = data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            raise fail("invalid YAML: not valid UTF-16 after a UTF-16 byte order mark", Where(file=file),
                       code="yaml") from None
    loader_class = _PlainLoader if plain else _Loader
    try:
        check_shape(data, file, loader_class)
        anchors = b"&" in data and _ANCHOR.search(data) is not None
        if not anchors and loader_class is _Loader:
            docs = yamlfast.documents(data)
            if docs is None:
                docs = yamltree.documents(data)
            if docs is not None:
                return docs, True
        loader = loader_class(data)
        loader.file = file
        try:
            docs = []
            while loader.check_data():
                docs.append(loader.get_data())
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise fail(f"invalid YAML: {problem}", Where(file=file, line=line),
                   hint="fix the YAML syntax, or exclude the file with `exclude:` in .devlane.yaml",
                   code="yaml") from None
    except yaml.YAMLError as exc:
        raise fail(f"invalid YAML: {exc}", Where(file=file), code="yaml") from None
    if anchors:
        for index, doc in enumerate(docs):
            check_aliases(doc, Where(file=file, document=index))
    return docs, not anchors and not loader.inexact


def load_one(data: bytes | str, file: str) -> Any:
    """Parse a file that must hold exactly one document (config, flow, template args)."""
    if isinstance(data, str):
        data = data.encode()
    docs = [d for d in parse_documents(data, file) if d is not None]
    if len(docs) != 1:
        raise fail(f"expected exactly one YAML document, found {len(docs)}", Where(file=file), code="yaml")
    return docs[0]


# ---------------------------------------------------------------------------------------------
# Canonical dumping

_TOP_ORDER = ("apiVersion", "kind", "metadata", "spec", "data", "stringData")


class _Dumper_(_Dumper):  # type: ignore[misc,valid-type]
    """Dumper with literal blocks for multi-line strings, and quotes on every string a YAML 1.1 or 1.2 reader
    (PyYAML, go-yaml v2 or v3) could read as something else (`yamlscalars.retyped`)."""


def _str_representer(dumper: yaml.Dumper, value: str) -> yaml.Node:
    if "\n" in value and not _has_trailing_space_lines(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=quote_style(value))


def _has_trailing_space_lines(value: str) -> bool:
    # libyaml refuses literal style for lines with trailing spaces or tabs; fall back to quoted.
    return any(line != line.rstrip(" \t") for line in value.split("\n")) or "\t" in value


_Dumper_.add_representer(str, _str_representer)


def canonical(obj: dict) -> dict:
    """Reorder the top-level keys of a Kubernetes object into the conventional order."""
    head = {k: obj[k] for k in _TOP_ORDER if k in obj}
    head.update((k, v) for k, v in obj.items() if k not in head)
    return head


def dump(obj: Any) -> str:
    """Dump one object as canonical YAML text."""
    if isinstance(obj, dict):
        obj = canonical(obj)
    if type(obj) is dict:
        out: list[str] = []
        try:
            _block_mapping(obj, "", out)
        except _Unusual:
            pass
        else:
            return "".join(out)
    return _pyyaml_dump(obj)


def _pyyaml_dump(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper_, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=1_000_000, indent=2)


# PyYAML's representer is Python and builds a node per scalar (about 0.5 ms an object): a wide flow dumps
# 10,000 objects. The layout of its block style is simple, though: below is that layout written directly, with
# each distinct scalar's text taken from PyYAML itself once (so quoting is always PyYAML's). Anything else
# (multi-line strings, which get literal blocks at the object's indentation, long or multi-line keys, cycles,
# non-JSON types) is _Unusual and the whole object goes through PyYAML; tests compare both on generated objects.
# Quoting is PyYAML's plus `yamlscalars.retyped` (the representer's), so Go's readers read what was written.


class _Unusual(Exception):
    """A part of the object the direct layout does not write: PyYAML dumps the whole object instead."""


_STRS: dict[str, str] = {}  # string -> its text as a block mapping value or sequence item
_VALUES: dict[tuple[type, Any], str] = {}  # (type, other scalar or a float's repr) -> its text
_KEYS: dict[str, str] = {}  # key -> its text as a simple key
_SCALARS = (str, int, float, bool, type(None))
_MEMO_LIMIT = 200_000  # distinct scalars remembered per process
# Strings written plain for certain: a letter first (no indicator, number or date), no space, a colon only between
# other characters, and not a word a reader types (a letter first, only words are: `yamlscalars`). Anything else
# asks PyYAML (with the representer's quoting rule).
_PLAIN = re.compile(r"[A-Za-z][\w./@+-]*(?::[\w./@+-]+)*\Z", re.ASCII)
_WORDS = WORDS
_BREAKS = re.compile("[\n\r\x85\u2028\u2029]")


def _remember(memo: dict, key: Any, text: str) -> str:
    if len(memo) < _MEMO_LIMIT:
        memo[key] = text
    return text


def _value(value: Any) -> str:
    """A scalar's text as a mapping value or sequence item (the callers look in `_STRS` first)."""
    kind = type(value)
    if kind is str:
        if _PLAIN.match(value) and value not in _WORDS:
            return _remember(_STRS, value, value)
        if _BREAKS.search(value):
            raise _Unusual  # a literal block, indented where it stands
        return _remember(_STRS, value, _pyyaml_value(value))
    if kind not in _SCALARS:
        raise _Unusual
    key = (kind, repr(value) if kind is float else value)  # -0.0 == 0.0, and each is written as it is
    try:
        return _VALUES[key]
    except KeyError:
        return _remember(_VALUES, key, _pyyaml_value(value))


def _pyyaml_value(value: Any) -> str:
    text = _pyyaml_dump({"k": value})
    if not text.startswith("k: ") or text.count("\n") != 1:
        raise _Unusual
    return text[3:-1]


def _key(key: Any) -> str:
    """A key's text (the callers look in `_KEYS` first)."""
    if type(key) is not str:
        raise _Unusual
    if _PLAIN.match(key) and key not in _WORDS and len(key) <= 128:
        return _remember(_KEYS, key, key)
    text = _pyyaml_dump({key: 0})
    if not text.endswith(": 0\n") or text.count("\n") != 1 or text.startswith("? "):
        raise _Unusual
    return _remember(_KEYS, key, text[:-4])


def _block_mapping(mapping: dict, indent: str, out: list[str], first: str | None = None) -> None:
    """`key: value` lines at `indent`; `first` replaces the indentation of the first line (a sequence item's
    `- `)."""
    if not mapping:
        raise _Unusual  # `{}` as a sequence item or a document
    lead = indent if first is None else first
    keys, strs = _KEYS, _STRS
    for key, value in mapping.items():
        try:
            name = keys[key]
        except (KeyError, TypeError):
            name = _key(key)
        kind = type(value)
        if kind is str:
            text = strs.get(value)
            out.append(f"{lead}{name}: {_value(value) if text is None else text}\n")
        elif kind is dict:
            if value:
                out.append(f"{lead}{name}:\n")
                _block_mapping(value, indent + "  ", out)
            else:
                out.append(f"{lead}{name}: {{}}\n")
        elif kind is list:
            if value:
                out.append(f"{lead}{name}:\n")
                _block_sequence(value, indent, out)  # PyYAML writes a mapping's sequences indentless
            else:
                out.append(f"{lead}{name}: []\n")
        else:
            out.append(f"{lead}{name}: {_value(value)}\n")
        lead = indent


def _block_sequence(items: list, indent: str, out: list[str], first: str | None = None) -> None:
    lead = indent if first is None else first
    strs = _STRS
    for item in items:
        kind = type(item)
        if kind is dict:
            _block_mapping(item, indent + "  ", out, lead + "- ")
        elif kind is list:
            if not item:
                raise _Unusual
            _block_sequence(item, indent + "  ", out, lead + "- ")
        else:
            text = strs.get(item) if kind is str else None
            out.append(f"{lead}- {_value(item) if text is None else text}\n")
        lead = indent
