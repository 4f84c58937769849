"""Every key, form, separator and stop the masker knows, one case each (issue 41, point 3): each secret key in each
form apps write it (a URL's query, ADO.NET, env-style, YAML, JSON, flags), each key that only looks like one, each
character that opens a protocol-relative URL, ends an authority, ends a bare value or may follow a closing quote.
Each case compares the whole masked text, so a mask that hides less than the whole secret (its first character, a
prefix) fails, as does one that hides the host or the next pair. The lists are written here, independently of the
module's own."""

from __future__ import annotations

import pytest

from renderer.core.secrets_mask import MASK, excerpt, is_secret_key, mask, secrets_in

S = "Zx9Qw8Rt-4Vb"  # a secret holding no word that makes a key a secret's

SECRET_KEYS = ["password", "passwd", "pwd", "pass", "passphrase", "secret", "token", "apikey", "accesskey",
               "secretkey", "privatekey", "accountkey", "sharedaccesskey", "masterkey", "authkey", "signingkey",
               "encryptionkey", "sessionkey", "sas", "sig", "signature", "credential", "credentials", "auth", "jwt"]
NOT_SECRET_KEYS = ["proxy_pass", "fastcgi_pass", "grpc_pass", "uwsgi_pass", "scgi_pass", "memcached_pass", "bypass",
                   "proxy.pass", "nginx.fastcgi.pass", "authSource", "authMechanism", "user", "PASSWORD_FILE",
                   "keyspace", "host", "SharedAccessKeyName", "tokenizer", "secretName", "signatureVersion",
                   "password_file_2", "proxy_pass_2"]


def masked_whole(text: str, secret: str = S) -> str:
    """`mask(text)`, checked to hide `secret` whole: no piece of it of two characters or more is left."""
    out = mask(text)
    pieces = {secret[i:i + 2] for i in range(len(secret) - 1)} - {"-4"}
    assert not [p for p in pieces if p in out], (text, out)
    return out


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_each_secret_key_is_one_in_any_spelling(key):
    assert is_secret_key(key) and is_secret_key(key.upper()) and is_secret_key(f"db_{key}")
    assert is_secret_key(f"spring.datasource.{key}") and is_secret_key(f"--{key}") and is_secret_key(f"X-Api-{key}")


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_each_secret_key_is_masked_in_every_form(key):
    up, cap = key.upper(), key.capitalize()
    cases = {
        f"https://api.example.com/v1?user=app&{key}={S}&page=2": f"https://api.example.com/v1?user=app&{key}=***&page=2",
        f"Server=db,1433;Database=app;{cap}={S};Encrypt=True": f"Server=db,1433;Database=app;{cap}=***;Encrypt=True",
        f"jdbc:sqlserver://db:1433;databaseName=app;{key}={S}": f"jdbc:sqlserver://db:1433;databaseName=app;{key}=***",
        f"APP_{up}={S}": f"APP_{up}=***",
        f"host: db\n{key}: {S}\nport: 5432": f"host: db\n{key}: ***\nport: 5432",
        f'{{"host": "db", "{key}": "{S}", "port": 5432}}': f'{{"host": "db", "{key}": "***", "port": 5432}}',
        f"app --host db --{key} {S} --port 5432": f"app --host db --{key} *** --port 5432",
        f"app --db-{key}={S} --port 5432": f"app --db-{key}=*** --port 5432",
        f"{key} => '{S}', host => 'db'": f"{key} => '***', host => 'db'",
        f"host=db {key}='{S} {S}' dbname=app": f"host=db {key}='***' dbname=app",
    }
    for text, expected in cases.items():
        assert masked_whole(text) == expected, text


@pytest.mark.parametrize("key", ["DB_PASSWORD_2", "password2", "API_KEY_1", "SECRET1", "redisPassword01", "key2"])
def test_a_numbered_secret_key_is_one(key):
    """`DB_PASSWORD_2` holds a password as `DB_PASSWORD` does."""
    assert is_secret_key(key)
    assert masked_whole(f"{key}={S} host=db") == f"{key}=*** host=db"
    assert masked_whole(f"{key}: {S}\nhost: db") == f"{key}: ***\nhost: db"


def test_the_key_key_alone_is_a_secrets():
    assert is_secret_key("key") and is_secret_key("KEY") and not is_secret_key("APP_KEY")
    assert masked_whole(f"https://maps.example.com/api?key={S}&q=x") == "https://maps.example.com/api?key=***&q=x"
    assert mask("https://maps.example.com/api?app_key=visible&q=x") == "https://maps.example.com/api?app_key=visible&q=x"


@pytest.mark.parametrize("key", NOT_SECRET_KEYS)
def test_keys_that_only_look_like_a_secrets_are_shown(key):
    assert not is_secret_key(key)
    for text in (f"{key}=http://backend:80/x", f"{key}: visible-value", f"--{key} visible-value"):
        assert mask(text) == text


# ---------------------------------------------------------------------------------------------------------------
# Where a value ends: each stop of a bare value, each character that may follow a closing quote, each quote

@pytest.mark.parametrize("stop", [" ", "\t", ";", "&", '"', "<", "\n"])
def test_a_bare_value_ends_at_each_stop(stop):
    assert masked_whole(f"password={S}{stop}host=db") == f"password=***{stop}host=db"


@pytest.mark.parametrize("char", [",", ")", "]", "}", "/", "'", "#", "=", ":", "@", "|", "!"])
def test_a_bare_value_goes_on_past_other_characters(char):
    """A secret holding any other character is hidden whole, that character and what follows it to the stop."""
    assert masked_whole(f"password=ab{char}{S} host=db") == "password=*** host=db"


AFTER_QUOTE = [" ", "\t", "\r", "\n", ";", "&", ",", ")", "]", "}", "<", '"', "'"]


@pytest.mark.parametrize(("quote", "after"), [(q, a) for q in ("'", '"') for a in AFTER_QUOTE if a != q])  # `''`: one
def test_a_closing_quote_ends_a_value_before_each_character_that_may_follow_it(quote, after):
    text = f"password={quote}{S} ;{quote}{after}host=db"
    assert masked_whole(text) == f"password={quote}***{quote}{after}host=db"


@pytest.mark.parametrize("quote", ["'", '"'])
def test_a_quote_followed_by_a_word_does_not_close_the_value(quote):
    """`'a'b` is one bare value: hidden up to its stop, quotes and all."""
    assert masked_whole(f"password={quote}ab{quote}{S} host=db") == "password=*** host=db"


@pytest.mark.parametrize(("value", "expected"), [
    (f"'{S}''{S}'", "'***'"), (f'"{S}""{S}"', '"***"'), (f'"{S}\\"{S}"', '"***"'), (f"{{{S}}}}}{S}}}", "{***}"),
    (f"'{S};{S}", "'***"), (f'"{S} {S}', '"***'), (f"{{{S};{S}", "{***"),  # unterminated: to the end of the line
])  # fmt: skip
def test_quoted_and_braced_values_are_hidden_to_their_close(value, expected):
    closed = expected.endswith(("'", '"', "}"))
    assert masked_whole(f"Pwd={value};Server=db") == f"Pwd={expected}" + (";Server=db" if closed else "")


def test_an_unterminated_quote_ends_at_the_line():
    assert masked_whole(f"password='{S} {S}\nhost: db") == "password='***\nhost: db"


def test_a_yaml_value_ends_at_the_line_or_a_comment_and_loses_its_trailing_blanks():
    assert masked_whole(f"password: {S} {S}   \nhost: db") == "password: ***   \nhost: db"
    assert masked_whole(f"password: {S} # rotate monthly\nhost: db") == "password: *** # rotate monthly\nhost: db"
    assert masked_whole(f"password: {S}#{S}\nhost: db") == "password: ***\nhost: db"  # no blank: no comment
    assert mask("url: http://x\npassword:visible") == "url: http://x\npassword:visible"  # `key:value` is no pair


def test_a_yaml_value_ends_at_a_windows_line_end():
    assert masked_whole(f"password: {S}\r\nhost: db\r\n") == "password: ***\r\nhost: db\r\n"


@pytest.mark.parametrize("separator", ["=", " = ", "=>", " => ", ": ", ":\t"])
def test_each_separator_of_a_pair(separator):
    assert masked_whole(f"password{separator}{S}") == f"password{separator}***"


def test_flags_take_the_next_word_only_when_they_are_flags():
    assert masked_whole(f"--password {S} --host db") == "--password *** --host db"
    assert mask("password visible --host db") == "password visible --host db"  # not a flag, no separator
    assert mask("--password\n--host db") == "--password\n--host db"


# ---------------------------------------------------------------------------------------------------------------
# URLs: each character that may open a protocol-relative URL, each that ends an authority; users and tokens

@pytest.mark.parametrize("opener", [" ", "\t", "\r", "\n", '"', "'", "=", "(", "<", ">", ",", "[", "`"])
def test_each_opener_of_a_protocol_relative_url(opener):
    assert masked_whole(f"x{opener}//{S}@github.com/o/r") == f"x{opener}//***@github.com/o/r"
    assert masked_whole(f"//{S}@github.com/o/r") == "//***@github.com/o/r"


@pytest.mark.parametrize("before", ["a", "/", ".", "-", "_"])
def test_a_double_slash_inside_a_word_opens_no_url(before):
    text = f"x{before}//tokenuser@github.com/o/r"
    assert mask(text) == text


@pytest.mark.parametrize("end", ["/", "?", "#", ";", " ", '"', "'", "<", ">", "`", "\\"])
def test_each_end_of_an_authority_keeps_the_host_and_the_rest(end):
    assert masked_whole(f"redis://app:{S}@cache.example.com:6379{end}rest") == \
        f"redis://app:***@cache.example.com:6379{end}rest"


@pytest.mark.parametrize("end", ["/", "?", "#", " ", '"', "'", "<", ">", "`", "\\"])
def test_an_at_sign_past_the_end_of_an_authority_is_no_userinfo(end):
    """`redis://cache:6379/users@x`: the `@` is the path's; the host and port stay readable."""
    text = f"redis://cache.example.com:6379{end}users@x.example.com"
    assert mask(text) == text


@pytest.mark.parametrize("end", [" ", "\t", '"', "'", "<", ">", "`"])
def test_a_password_holding_a_slash_ends_with_its_word(end):
    """`redis://:pa/ss@cache`: the userinfo goes on to the last `@` of the word, not of the next word."""
    text = f"redis://:{S}/{S}@cache.example.com:6379/0{end}next@x.example.com"
    assert masked_whole(text) == f"redis://:***@cache.example.com:6379/0{end}next@x.example.com"


@pytest.mark.parametrize("scheme", ["redis", "rediss", "amqp", "amqps", "mongodb", "mongodb+srv", "postgres",
                                    "postgresql", "mysql", "jdbc:mysql", "jdbc:postgresql", "kafka", "nats",
                                    "http", "https", "sqlserver", "git+ssh", "s3", "ftp", "ldap", "smtp"])
def test_a_password_is_masked_in_every_scheme(scheme):
    assert masked_whole(f"{scheme}://app:{S}@h.example.com:1/x") == f"{scheme}://app:***@h.example.com:1/x"
    assert masked_whole(f"{scheme}://:{S}@h.example.com/x") == f"{scheme}://:***@h.example.com/x"
    assert masked_whole(f"{scheme}://{S}@h.example.com/x") == f"{scheme}://***@h.example.com/x"  # a token user


@pytest.mark.parametrize(("user", "shown"), [
    ("git", True), ("first.last", True), ("svc_user", True), ("svc-user", True), ("a" * 32, True),
    ("a" * 33, False), ("ghp1", False), ("Admin", False), ("1user", False), ("_user", False), ("x%40y", False),
])  # fmt: skip
def test_a_plain_user_name_is_shown_and_anything_else_is_a_token(user, shown):
    text = f"ssh://{user}@git.example.com/o/r"
    assert mask(text) == (text if shown else "ssh://***@git.example.com/o/r")


def test_a_scheme_must_stand_before_its_double_slash():
    assert mask("x://ghp1token@h.example.com") == "x://***@h.example.com"
    assert mask("a :://ghp1token@h.example.com") == "a :://ghp1token@h.example.com"


# ---------------------------------------------------------------------------------------------------------------
# `user:password@host` without a scheme, Oracle's `user/password@host`, and what only looks like them

@pytest.mark.parametrize(("text", "expected"), [
    (f"user:{S}@broker:9092", "user:***@broker:9092"),
    (f"KAFKA=user:{S}@broker:9092", "KAFKA=user:***@broker:9092"),
    (f"a=1&kafka=user:{S}@broker:9092&b=2", "a=1&kafka=user:***@broker:9092&b=2"),
    (f"user:{S}@[fd00::1]:9092", "user:***@[fd00::1]:9092"),
    (f"https://h.example.com/cb?to=user:{S}@broker:9092", "https://h.example.com/cb?to=user:***@broker:9092"),
    (f"jdbc:oracle:thin:scott/{S}@db:1521:orcl", "jdbc:oracle:thin:scott/***@db:1521:orcl"),
    (f"jdbc:oracle:thin:scott/{S}@//db:1521/svc", "jdbc:oracle:thin:scott/***@//db:1521/svc"),
])  # fmt: skip
def test_bare_userinfo(text, expected):
    assert masked_whole(text) == expected


@pytest.mark.parametrize("stop", [" ", "\t", ",", ";", '"', "'", "<", ">", "(", ")", "`"])
def test_bare_userinfo_ends_at_each_stop_of_a_word(stop):
    """`user:pw@broker:9092,other@host`: the second `@` is another word's, the first password is hidden alone."""
    assert masked_whole(f"user:{S}@broker:9092{stop}other@host") == f"user:***@broker:9092{stop}other@host"


USER_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~%+-$"


@pytest.mark.parametrize("char", USER_CHARS)
def test_a_user_name_is_read_to_its_start(char):
    """`mailto:ops@example.com` is an address, no password; `Xmailto:pw@host` is user `Xmailto`'s password."""
    assert masked_whole(f"{char}mailto:{S}@h.example.com") == f"{char}mailto:***@h.example.com"
    assert mask("mailto:ops@example.com") == "mailto:ops@example.com"
    assert mask("to=mailto:ops@example.com") == "to=mailto:ops@example.com"


@pytest.mark.parametrize("text", [
    "postgres:16@sha256:" + "a" * 64, "postgres:16@sha384:" + "b" * 96, "postgres:16@sha512:" + "c" * 128,
    "mailto:ops@example.com", "user:x@-notahost", "user:x@.dot", "user:@broker:9092", "jdbc:oracle:thin:scott/@db:1521",
    "1@kafka:9093,2@kafka-2:9093", "git@github.com:org/repo.git",
])  # fmt: skip
def test_what_only_looks_like_bare_userinfo_is_shown(text):
    assert mask(text) == text


# ---------------------------------------------------------------------------------------------------------------
# What the sandbox scrubs, and excerpts

def test_secrets_in_lists_each_secret_as_written():
    text = f"redis://:{S}@cache:6379 password='{S}x' https://{S}y@h.example.com"
    assert secrets_in(text) == [S, f"{S}x", f"{S}y"]
    assert secrets_in("") == [] and secrets_in("no secret here") == []


def test_an_excerpt_inside_a_secret_starts_with_its_mask():
    text = "x" * 300 + f" password={S}{'Q' * 300} host=db " + "y" * 300
    at = text.index(S) + 5
    for width in (120, 40):
        shown = excerpt(text, at, width)
        assert shown.startswith("...") and "password=" in shown and len(shown) <= width
        assert "Q" not in shown and not [S[i:i + 2] for i in range(len(S) - 1) if S[i:i + 2] in shown]
    shown = excerpt(f"password={S} host=db", 12)
    assert shown == f"password={MASK} host=db"


def test_an_excerpt_is_the_line_of_its_position():
    text = f"first line\n  password: {S}  \nthird"
    assert excerpt(text, text.index("pass")) == "password: ***"
    assert excerpt(text, 0) == "first line" and excerpt(text, len(text)) == "third"
    assert excerpt("", 3) == "" and excerpt("  short  ", 2) == "short"


# ---------------------------------------------------------------------------------------------------------------
# Edges: the shortest passwords, passwords holding `@`, `:` or `/`, empty ones, and what is around a URL

@pytest.mark.parametrize(("text", "expected"), [
    ("redis://u:x@cache:6379", "redis://u:***@cache:6379"),  # a password of one character
    ("user:x@broker:9092", "user:***@broker:9092"),
    ("jdbc:oracle:thin:scott/x@db:1521:orcl", "jdbc:oracle:thin:scott/***@db:1521:orcl"),
    (f"user:{S}@{S}@broker:9092", "user:***@broker:9092"),  # `@` in a password, no scheme
    (f":{S}@broker:9092", ":***@broker:9092"),  # no user
    (f"redis://:{S}/x@{S}@cache.example.com/0", "redis://:***@cache.example.com/0"),  # `/` and `@` in it
    (f"redis://:Zx:1/{S}@cache.example.com/0", "redis://:***@cache.example.com/0"),  # `:1/` in it
    (f"redis://:{S}/x@h1.example.com/0,redis://u:{S}@h2.example.com/0",  # two URLs in one word
     "redis://:***@h1.example.com/0,redis://u:***@h2.example.com/0"),
    (f"redis://:{S}/{S}@cache.example.com:6379/0 next@x.example.com //z",  # another URL further on
     "redis://:***@cache.example.com:6379/0 next@x.example.com //z"),
    (f"a :// redis://:{S}@cache.example.com/0", "a :// redis://:***@cache.example.com/0"),  # a `//` of no URL first
    (f"a//x https://:{S}@h.example.com/0", "a//x https://:***@h.example.com/0"),
    (f"x://ghp1{S}@h.example.com next", "x://***@h.example.com next"),
    (f"a=x:y&kafka=user:{S}@broker:9092", "a=x:y&kafka=user:***@broker:9092"),  # pairs split at `&`
    (f"a=1&b=2&kafka=user:{S}@broker:9092&c=3", "a=1&b=2&kafka=user:***@broker:9092&c=3"),
])  # fmt: skip
def test_edges_of_userinfo(text, expected):
    assert masked_whole(text) == expected


@pytest.mark.parametrize("text", [
    "redis://@cache:6379", "redis://user:@cache:6379", "user:@broker:9092",  # empty: nothing to hide
    "x@y https://h.example.com/p@q", "redis://[fd00::1]/users@x", "redis://cache:6379/p@z:1", "redis://cache:1/p@x",
    "jdbc:oracle:scott@db", "jdbc:oracle:thin", "@x",
])  # fmt: skip
def test_no_userinfo_no_mask(text):
    assert mask(text) == text and secrets_in(text) == []


@pytest.mark.parametrize(("text", "expected"), [
    (f'["--password", "{S}"]', '["--password", "***"]'),  # a container's args, as JSON or a YAML flow list
    (f"['--token', '{S}', '--verbose']", "['--token', '***', '--verbose']"),
    (f"[--password, {S}]", "[--password, ***"),  # a bare item runs to the end of the word: the bracket goes too
    ('["--password", "--token"]', '["--password", "--token"]'),  # a list of flag names: no value
    (f'password": "{S}", "host": "db"', 'password": "***", "host": "db"'),  # an excerpt that cut the key's quote
])  # fmt: skip
def test_a_flag_in_a_list_and_a_cut_quoted_key_hide_their_value(text, expected):
    assert mask(text) == expected and S not in mask(text)
