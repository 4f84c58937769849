"""A secret flag in a list and a key whose opening quote an excerpt cut off (issue 41, mutation survivors of
`core.secrets_mask._pairs` after 385fce3): a flag followed by another flag hides nothing and the next flag's
value is still read; a value's leading quotes and blanks are skipped whatever letters follow; a list that ends
right after the flag hides nothing (and does not fail); a closing `)` or `}` after a flag is no value; a
single-quoted key cut off at the start of the text hides its value as a double-quoted one does."""

from __future__ import annotations

import pytest

from renderer.core.secrets_mask import mask, secrets_in


@pytest.mark.parametrize(("text", "expected"), [
    ('["--password", "--token", "abc"]', '["--password", "--token", "***"]'),  # the next flag has its own value
    ("[--password, --token, abc]", "[--password, --token, ***"),
    ("[--password, XX", "[--password, ***"),  # a value cut at the end of the text, starting with X
    ('["--password", "XX"]', '["--password", "***"]'),
])  # fmt: skip
def test_a_flag_in_a_list_takes_the_next_item_unless_it_is_a_flag(text, expected):
    assert mask(text) == expected


@pytest.mark.parametrize("text", ["args: [--token,", "--password,", '["--password",', "[--password, ", "--token, \t"])
def test_a_flag_at_the_end_of_a_cut_list_hides_nothing(text):
    assert mask(text) == text and secrets_in(text) == []


@pytest.mark.parametrize("text", ["$(cmd --password )", "--token\t)", "{--password } x", "f(--token ) + g"])
def test_a_closing_paren_or_brace_after_a_flag_is_no_value(text):
    assert mask(text) == text and secrets_in(text) == []


@pytest.mark.parametrize(("text", "expected", "secret"), [
    ("password': 'PW'", "password': '***'", "PW"),
    ("token': 'abc', x", "token': '***', x", "abc"),
    ("password':'PW'", "password':'***'", "PW"),
    ('password": "PW"', 'password": "***"', "PW"),
])  # fmt: skip
def test_a_key_whose_opening_quote_was_cut_off_hides_its_value_whatever_the_quote(text, expected, secret):
    assert mask(text) == expected and secrets_in(text) == [secret]
