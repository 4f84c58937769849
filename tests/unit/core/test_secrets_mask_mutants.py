"""The masker's edges that its survivors of mutation testing showed untested (issue 41): a one-letter scheme after
an opener, several URLs in one word, multi-host authorities, `user:pw@host` in a URL's path or after a cut-off
scheme, Oracle URLs inside other text, single-quoted and compact JSON keys, flags next to punctuation, and keys
whose value is empty or on the next line. Each case compares the whole masked text."""

from __future__ import annotations

import pytest
from unit.core.test_secrets_mask_siblings import S, masked_whole

from renderer.core.secrets_mask import mask, secrets_in

# ---------------------------------------------------------------------------------------------------------------
# URLs


@pytest.mark.parametrize("opener", [" ", "\n", "("])
def test_a_one_letter_scheme_after_an_opener_is_a_scheme(opener):
    """`see x://TOKEN@host`: the scheme is the letter before `://`, whatever stands before that letter."""
    assert masked_whole(f"see{opener}x://{S}@h.example.com/o/r") == f"see{opener}x://***@h.example.com/o/r"


def test_each_of_three_urls_in_one_word_hides_its_own_password():
    """A password holding `/` goes on to the `@` before the next URL, not to the last URL's: the hosts stay."""
    text = f"redis://:{S}/x@h1.example.com/0,redis://u:{S}@h2.example.com/0,redis://u:{S}@h3.example.com/0"
    expected = "redis://:***@h1.example.com/0,redis://u:***@h2.example.com/0,redis://u:***@h3.example.com/0"
    assert masked_whole(text) == expected


@pytest.mark.parametrize("text", [
    "jdbc:postgresql://db-0:5432,db-1:5432/app;user=ops@example.com",
    "mongodb://db-0:27017,db-1:27017,db-2:27017/app;owner=ops@example.com",
])  # fmt: skip
def test_a_multi_host_authority_is_hosts_and_ports_not_a_userinfo(text):
    """Each `host:port` of a seed list is one (the port after the last `:`): an `@` later in the word hides none."""
    assert mask(text) == text and secrets_in(text) == []


# ---------------------------------------------------------------------------------------------------------------
# `user:pw@host` and Oracle's `user/pw@host` inside a URL's path or query


@pytest.mark.parametrize(("text", "expected"), [
    (f"https://h.example.com/login?to=user:{S}@broker:9092/next/http://x.example.com/",  # a second URL after it
     "https://h.example.com/login?to=user:***@broker:9092/next/http://x.example.com/"),
    (f"://h.example.com/cb?to=user:{S}@broker:9092", "://h.example.com/cb?to=user:***@broker:9092"),  # no scheme
    (f"file:///user:{S}@broker:9092", "file:///user:***@broker:9092"),  # an empty authority
    (f"https://h.example.com/cb?db=jdbc:oracle:thin:scott/{S}@db:1521:orcl",
     "https://h.example.com/cb?db=jdbc:oracle:thin:scott/***@db:1521:orcl"),
    (f"https://api.example.com/v1/jobs:run/start?db=jdbc:oracle:thin:scott/{S}@db:1521:orcl",  # `:` in the path
     "https://api.example.com/v1/jobs:run/start?db=jdbc:oracle:thin:scott/***@db:1521:orcl"),
    (f"jdbc:oracle::scott/{S}@db:1521:orcl", "jdbc:oracle::scott/***@db:1521:orcl"),  # no driver type
])  # fmt: skip
def test_userinfo_in_a_path_hides_the_password_alone(text, expected):
    """The path and host before the user, and the user, stay readable: only the password is hidden."""
    assert masked_whole(text) == expected


def test_the_first_of_two_oracle_urls_in_one_word_hides_its_password():
    text = f"jdbc:oracle:thin:scott/{S}@db1:1521/svc|jdbc:oracle:thin:@db2:1521/svc"
    assert masked_whole(text).startswith("jdbc:oracle:thin:scott/***@")


# ---------------------------------------------------------------------------------------------------------------
# Pairs: quoted keys, flags, empty values


@pytest.mark.parametrize(("text", "expected"), [
    (f"{{'password': '{S}', 'host': 'db'}}", "{'password': '***', 'host': 'db'}"),
    (f"{{'password':'{S}','host':'db'}}", "{'password':'***','host':'db'}"),
    (f'{{"password":"{S}","host":"db"}}', '{"password":"***","host":"db"}'),
    (f'{{"password":"{S} {S}","host":"db"}}', '{"password":"***","host":"db"}'),
])  # fmt: skip
def test_a_quoted_key_takes_its_value_with_or_without_a_blank(text, expected):
    """Python's and compact JSON's `'key':'value'`: the quoted value is hidden to its closing quote."""
    assert masked_whole(text) == expected


@pytest.mark.parametrize("value", ["X", "XX", f"X{S}", "x"])
def test_a_flags_value_is_hidden_whole_whatever_it_starts_with(value):
    assert mask(f"app --password {value} --host db") == "app --password *** --host db"


@pytest.mark.parametrize("text", [
    "--password/--token", "(--password)", "--password,--token",  # a flag's name, followed by no value
    '--password" or "--token"', "--password' and '--token'",  # quoted names, the text cut after the first quote
    "image: vault-secret:1", "image: vault-token:X1", "password:Xvisible",  # `key:value` is no pair
])  # fmt: skip
def test_what_only_names_a_secret_key_is_shown(text):
    assert mask(text) == text and secrets_in(text) == []


@pytest.mark.parametrize("text", [
    "password:", "password: ", "host: db\npassword:", "DB_PASSWORD=", "host=db password=",  # at the end of the text
    "auth:\n  user: app", "password:\nhost: db", "password:\r\nhost: db",  # a mapping or nothing: the next line
])  # fmt: skip
def test_a_key_with_an_empty_value_hides_nothing(text):
    """An empty value, at the end of the text or of the line, hides nothing, not the next line."""
    assert mask(text) == text and secrets_in(text) == []


@pytest.mark.parametrize(("text", "expected"), [
    (f"password visible --host db token={S}", "password visible --host db token=***"),
    (f"the password is below; token={S}", "the password is below; token=***"),
])  # fmt: skip
def test_a_key_that_is_no_pair_does_not_end_the_scan(text, expected):
    """A secret key without a separator is a word: the pairs after it are still read."""
    assert masked_whole(text) == expected
