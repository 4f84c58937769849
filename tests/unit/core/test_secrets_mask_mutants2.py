"""Edges of where a value ends and of how an excerpt is cut (issue 41, mutation survivors of `core.secrets_mask`,
part 2): empty and one-character values, quotes that close on another line, escapes and doubled quotes at the end
of a value, braces that hold another key's brace, secrets that touch, and the exact window of an excerpt (its
line, its blanks, how much it keeps on each side of its position and where it marks a cut)."""

from __future__ import annotations

import pytest

from renderer.core.secrets_mask import CUT, MASK, excerpt, mask, secrets_in

from .test_secrets_mask_siblings import S, masked_whole

# ---------------------------------------------------------------------------------------------------------------
# Where a value ends


@pytest.mark.parametrize("text", [
    "password=", "password=;host=db", "password=&host=db",  # an empty value at the end of the text, before a stop
    "password='' host=db", 'password="";host=db',  # empty quotes
    "password='", "password='\nhost: db", 'password: "\r\nhost: db',  # a quote that opens nothing on its line
])  # fmt: skip
def test_an_empty_value_is_no_secret(text):
    """Nothing to hide is no `***`: a mask would make an empty password look set."""
    assert mask(text) == text and secrets_in(text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("password='a'b", "password=***"),  # a quote and one character at the end: one bare value
    (f"password='{S}'b;host=db", "password=***;host=db"),
    (f"password: '{S}\n{S}'c d\nhost: db", "password: ***\nhost: db"),  # quote closed on the next line: to its end
    (f"password: {S}X", "password: ***"),  # a value ending in `X` (no blank) keeps its last character hidden
    (f"Pwd={{{S}\\}}b}};Server=db", "Pwd=***;Server=db"),  # `\}` escapes no brace: `}b` goes on as a bare value
    (f'password="{S}\\"b" host="x"', 'password="***" host="x"'),  # `\"` then the value's own close, not the last
    (f'password="{S}\\"" host=db', 'password="***" host=db'),  # `\"` right before the close
    (f"password='{S}''b' host='x'", "password='***' host='x'"),  # `''` then the value's own close, not the last
    (f"password='{S}''' host=db", "password='***' host=db"),  # `''` right before the close
    (f"Pwd={{{S};Pwd={{b}};Server=db", "Pwd={***};Server=db"),  # a key in a braced value, sharing its close
])  # fmt: skip
def test_where_a_value_ends(text, expected):
    assert masked_whole(text) == expected


def test_a_brace_inside_a_braced_value_ends_at_the_same_close():
    """The outer value and the key inside it both end at the one `}`: each is listed for the sandbox to scrub."""
    assert secrets_in(f"Pwd={{{S};Pwd={{b}};Server=db") == [f"{S};Pwd={{b", "b"]


def test_secrets_that_touch_are_one_mask():
    """`user:token=@broker`: the password `token=` ends where the value of its key `token` starts: one `***`, not
    two that would read as one longer secret."""
    assert mask("user:token=@broker:9092") == f"user:{MASK}"
    assert secrets_in("user:token=@broker:9092") == ["token=", "@broker:9092"]


# ---------------------------------------------------------------------------------------------------------------
# Excerpts: the line of the position, its blanks, the part kept on each side and the marks of a cut

W = 120  # the default width


@pytest.mark.parametrize(("text", "at", "expected"), [
    ("\nsecond line", 0, ""), ("\nsecond line", -5, ""),  # the first line is empty
    ("first\nsecond", 2, "first"), ("first\nsecond", 5, "first"), ("first\nsecond", 6, "second"),
    ("ab  cd", 2, "ab  cd"),  # blanks inside the line stay
    ("  short  ", 0, "short"), ("  short  ", 7, "short"),
    ("password=abc host=db", 12, "password=*** host=db"),  # at the end of a secret: one mask
    ("password=abc x token=def", 14, "password=*** x token=***"),  # past a secret, another further on
])  # fmt: skip
def test_an_excerpt_of_a_short_line_is_the_whole_line_masked_and_stripped(text, at, expected):
    assert excerpt(text, at) == expected


def test_an_excerpt_defaults_to_the_first_line():
    assert excerpt("\nsecond line") == "" and excerpt("first\nsecond") == "first"


A, B = "a" * 200, "b" * 200

EXCERPTS = [
    # a long line: a third of the width before the position, the rest after it, each cut marked
    (A + B, 200, CUT + "a" * 37 + "b" * 77 + CUT),
    (A + "b" * 85, 200, CUT + "a" * 37 + "b" * 77 + CUT),  # a right side of 85 > 80: still a third on the left
    (A + " end", 201, CUT + "a" * 113 + " end"),  # a short right side: the left takes the rest of the width
    ("x" * 300 + " end", 304, CUT + "x" * 113 + " end"),  # at the end: nothing is cut on the right
    ("abc " + "y" * 300, 0, "abc " + "y" * 113 + CUT),  # at the start: nothing is cut on the left
    ("y" * 200, 0, "y" * 117 + CUT),  # the line's end is in reach, yet the width cuts it
    # at the end of a secret: the window is around its end, not its start
    (A + " password=" + "s" * 10 + " " + B, 220, CUT + "a" * 24 + " password=*** " + "b" * 76 + CUT),
    # the line is read at most twice the width on each side of the position: a secret reaching past is cut there
    ("password=" + "Z" * 300 + " host=db.example.com", 315, CUT + " host=db.example.com"),
    ("host=db password=" + "Z" * 300 + " port=5432", 0, "host=db password=" + CUT),
]


@pytest.mark.parametrize(("text", "at", "expected"), EXCERPTS)
def test_how_a_long_line_is_cut(text, at, expected):
    assert excerpt(text, at) == expected
    assert len(expected) <= W
