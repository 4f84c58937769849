"""How the reach reads a line of a config file into key, separator and value (`reach._split`): quotes and blanks
around the value go, nothing else of it; a line with no key keeps its text whole (mutation testing, issue 41)."""

from __future__ import annotations

import pytest

from renderer.render.checks import reach


@pytest.mark.parametrize(("line", "parts"), [
    ('DB_HOST="XRAY-DB-X"', ("DB_HOST", "=", "XRAY-DB-X")),  # an X at either end is the value's, not a quote
    ("host: 'orders-db'", ("host", ":", "orders-db")),
    ("url = postgres://db:5432/x;", ("url", "=", "postgres://db:5432/x")),
    ("just some words", ("", "", "just some words")),
])  # fmt: skip
def test_a_line_is_key_separator_and_value(line, parts):
    assert reach._split(line) == parts
