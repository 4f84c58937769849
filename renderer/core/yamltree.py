"""Plain YAML trees straight from libyaml's composer, for the files that are nothing but plain trees.

Through PyYAML's `CSafeLoader`, a manifest costs about five times libyaml's own parse: per node the C composer
calls a Python `resolve` and builds a `yaml.nodes` object through a Python `__init__`, and a constructor walks the
nodes. Here the composer calls `slice` as `resolve` (a C builtin that keeps the node's kind, its text and whether
it was plain), and one recursive pass builds the document, typing each plain scalar as PyYAML's resolver and
constructor do (remembered per text: manifests repeat the same keys and values thousands of times).

When this is the process's only thread (a command's load, a forked parse worker), the composer also builds its
nodes as exceptions, whose constructor is C and keeps its arguments: the node classes are module globals of
PyYAML's C extension, swapped for the composing of one file and put back before any other Python code runs. With
another thread, which might be composing or emitting with PyYAML's C extension meanwhile, it builds PyYAML's own.

It reads only plain trees (string keys, each once; strings, numbers, booleans, nulls, mappings and lists; no tag,
anchor or merge key): anything else makes `documents` return None, and the caller parses the file the usual way,
which decides and words every error. So both give equal documents, which tests check on every corpus and on
generated YAML.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from operator import attrgetter
from typing import Any, NamedTuple

import yaml
from yaml import nodes
from yaml.constructor import SafeConstructor

_C = getattr(yaml, "_yaml", None)  # PyYAML's C extension (absent without libyaml: then this path is off)
_STR = "tag:yaml.org,2002:str"
_TYPED = {"tag:yaml.org,2002:int": "construct_yaml_int", "tag:yaml.org,2002:float": "construct_yaml_float",
          "tag:yaml.org,2002:bool": "construct_yaml_bool", "tag:yaml.org,2002:null": "construct_yaml_null"}
_MAX = 1 << 16  # distinct plain scalars remembered (then the memo starts afresh)


class _Scalar(Exception):
    """A scalar node as the composer's arguments: tag (here a `slice`), text, marks, style."""

    __slots__ = ()


class _Sequence(Exception):
    """A sequence node: tag, items, start mark, None, flow style; the composer sets `end_mark` once it ends."""

    __slots__ = ("end_mark",)


class _Mapping(Exception):
    """A mapping node: tag, (key, value) pairs, start mark, None, flow style; and `end_mark`."""

    __slots__ = ("end_mark",)


class _NotPlain(Exception):
    """Something this module does not read: the caller parses the file the usual way."""


class _Composer(_C.CParser if _C is not None else object):  # type: ignore[misc]
    """libyaml's composer, with C builtins for what it calls back per node (no path resolvers)."""

    resolve = staticmethod(slice)  # (kind, text, implicit) -> slice(kind, text, implicit)
    descend_resolver = staticmethod({}.get)
    ascend_resolver = staticmethod(tuple)


_TEXT, _OTHER = object(), object()  # a plain scalar that is a string; one that is neither string nor typed
_known: dict[str, Any] = {}  # plain scalar text -> its value, _TEXT or _OTHER


def documents(data: bytes) -> list[Any] | None:
    """The documents of a stream that is only plain trees, or None (the caller parses it the usual way). The
    caller has bounded the stream's shape (`yamlbounds`) and made sure it has no anchor."""
    if _C is None:
        return None
    composer = _Composer(data)
    try:
        if _alone():
            return [_tree(root, _OWN) for root in _swapped(composer)]
        return [_tree(root, _SHARED) for root in _roots(composer)]
    except (yaml.YAMLError, _NotPlain, RecursionError):
        return None
    finally:
        composer.dispose()


def _alone() -> bool:
    """Whether this is the process's only thread (so no other can meet the swapped classes)."""
    return len(sys._current_frames()) == 1


def _roots(composer: _Composer) -> list[Any]:
    roots = []
    while composer.check_node():
        roots.append(composer.get_node())
    return roots


def _swapped(composer: _Composer) -> list[Any]:
    saved = _C.ScalarNode, _C.SequenceNode, _C.MappingNode  # type: ignore[union-attr]
    _C.ScalarNode, _C.SequenceNode, _C.MappingNode = _Scalar, _Sequence, _Mapping  # type: ignore[union-attr]
    try:
        return _roots(composer)
    finally:
        _C.ScalarNode, _C.SequenceNode, _C.MappingNode = saved  # type: ignore[union-attr]


def _tree(node: Any, family: _Family) -> Any:
    """A document built from its root node, whose classes and fields are `family`'s. The depth is bounded by the
    caller's shape check."""
    scalar, mapping, fields = family
    tag, value = fields(node)[:2]
    if type(tag) is not slice:  # an explicit tag
        raise _NotPlain
    kind = type(node)
    if kind is scalar:
        if not tag.step[0]:  # quoted, or `!`: a string
            return value
        typed = _known.get(value, _OTHER)
        if typed is _OTHER:
            typed = _plain(value)
        return value if typed is _TEXT else typed
    if kind is mapping:
        out: dict = {}
        for key_node, value_node in value:
            if type(key_node) is not scalar:
                raise _NotPlain
            key_tag, key = fields(key_node)[:2]
            plain_key = type(key_tag) is slice and (not key_tag.step[0]
                                                    or (_known.get(key) or _plain(key)) is _TEXT)
            if not plain_key or key in out:
                raise _NotPlain  # a tagged, typed, merge (`<<`), value (`=`) or repeated key: the usual path
            out[key] = _tree(value_node, family)
        return out
    return [_tree(item, family) for item in value]


class _Family(NamedTuple):
    """The classes of a composer's scalar and mapping nodes, and what gives a node's tag and value first."""

    scalar: type
    mapping: type
    fields: Callable[[Any], tuple]


_OWN = _Family(_Scalar, _Mapping, attrgetter("args"))
_SHARED = _Family(nodes.ScalarNode, nodes.MappingNode, attrgetter("tag", "value"))


def _plain(text: str) -> Any:
    """A plain scalar's value as PyYAML reads it, or _TEXT for a string (remembered); raises for anything else (a
    timestamp, `<<`, `=`)."""
    if len(_known) >= _MAX:
        _known.clear()
    tag = _RESOLVER.resolve(nodes.ScalarNode, text, (True, False))
    if tag == _STR:
        value: Any = _TEXT
    elif tag in _TYPED:
        value = getattr(_CONSTRUCTOR, _TYPED[tag])(nodes.ScalarNode(tag, text))
    else:
        value = _OTHER
    _known[text] = value
    if value is _OTHER:
        raise _NotPlain
    return value


_RESOLVER = yaml.resolver.Resolver()  # CSafeLoader's resolver, without path resolvers
_CONSTRUCTOR: Any = SafeConstructor()
