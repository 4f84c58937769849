"""Plain YAML trees straight from libyaml's composer, for the files that are nothing but plain trees.

Through PyYAML's `CSafeLoader`, a manifest costs about five times libyaml's own parse: per node the C composer
calls a Python `resolve`, and a constructor then walks the nodes, looking up a constructor per node and filling
mappings through generators. Here the composer calls `slice` as `resolve` (a C builtin that keeps the node's kind,
its text and whether it was plain), and one recursive pass builds the document, typing each plain scalar as
PyYAML's resolver and constructor do (remembered per text: manifests repeat the same keys and values thousands of
times).

It reads only plain trees (string keys, each once; strings, numbers, booleans, nulls, mappings and lists; no tag,
anchor or merge key): anything else makes `documents` return None, and the caller parses the file the usual way,
which decides and words every error. So both give equal documents, which tests check on every corpus and on
generated YAML.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode

_C = getattr(yaml, "_yaml", None)  # PyYAML's C extension (absent without libyaml: then this path is off)
_STR = "tag:yaml.org,2002:str"
_TYPED = {"tag:yaml.org,2002:int": "construct_yaml_int", "tag:yaml.org,2002:float": "construct_yaml_float",
          "tag:yaml.org,2002:bool": "construct_yaml_bool", "tag:yaml.org,2002:null": "construct_yaml_null"}
_MAX = 1 << 16  # distinct plain scalars remembered (then the memo starts afresh)


class _NotPlain(Exception):
    """Something this module does not read: the caller parses the file the usual way."""


class _Composer(_C.CParser if _C is not None else object):  # type: ignore[misc]
    """libyaml's composer, with C builtins for what it calls back per node (no path resolvers)."""

    resolve = staticmethod(slice)  # (kind, text, implicit) -> slice(kind, text, implicit), the node's tag
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
        roots = []
        while composer.check_node():
            roots.append(composer.get_node())
        return [_tree(root) for root in roots]
    except (yaml.YAMLError, _NotPlain, RecursionError, ValueError):  # ValueError: a number Python cannot convert
        return None
    finally:
        composer.dispose()


def _tree(node: Any) -> Any:
    """A document built from its root node. The depth is bounded by the caller's shape check."""
    tag, value = node.tag, node.value
    if type(tag) is not slice:  # an explicit tag
        raise _NotPlain
    kind = type(node)
    if kind is ScalarNode:
        if not tag.step[0]:  # quoted, or `!`: a string
            return value
        typed = _known.get(value, _OTHER)
        if typed is _OTHER:
            typed = _plain(value)
        return value if typed is _TEXT else typed
    if kind is MappingNode:
        out: dict = {}
        for key_node, value_node in value:
            if type(key_node) is not ScalarNode:
                raise _NotPlain
            key_tag, key = key_node.tag, key_node.value
            plain_key = type(key_tag) is slice and (not key_tag.step[0]
                                                    or (_known.get(key) or _plain(key)) is _TEXT)
            if not plain_key or key in out:
                raise _NotPlain  # a tagged, typed, merge (`<<`), value (`=`) or repeated key: the usual path
            out[key] = _tree(value_node)
        return out
    return [_tree(item) for item in value]


def _plain(text: str) -> Any:
    """A plain scalar's value as PyYAML reads it, or _TEXT for a string (remembered); raises for anything else (a
    timestamp, `<<`, `=`)."""
    if len(_known) >= _MAX:
        _known.clear()
    tag = _RESOLVER.resolve(ScalarNode, text, (True, False))
    if tag == _STR:
        value: Any = _TEXT
    elif tag in _TYPED:
        value = getattr(_CONSTRUCTOR, _TYPED[tag])(ScalarNode(tag, text))
    else:
        value = _OTHER
    _known[text] = value
    if value is _OTHER:
        raise _NotPlain
    return value


_RESOLVER = yaml.resolver.Resolver()  # CSafeLoader's resolver, without path resolvers
_CONSTRUCTOR: Any = SafeConstructor()


def plain_value(text: str) -> Any:
    """A plain scalar's value as PyYAML reads it, or `TEXT` for a string; raises `NotPlain` for anything else (a
    timestamp, `<<`, `=`). For `yamlfast`, which meets plain scalars' texts in JSON."""
    typed = _known.get(text, _OTHER)
    return _plain(text) if typed is _OTHER else typed


TEXT = _TEXT
NotPlain = _NotPlain
