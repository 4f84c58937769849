"""The one masker every report uses (`core.secrets_mask`): every secret of a URL or a connection string is hidden
whole, whatever its alphabet, form and position, and the host, port and database stay readable; an excerpt is at
most 120 characters and is cut after masking, so a cut never shows a secret's tail.

The property test builds a secret from distinctive words (`Kq7X...`, never found in the hosts, users and text
around it, all lower-case) joined by the characters that break naive maskers (`@`, `:`, `%40`, `/`, `%2F`...), puts
it in one of the forms apps write (scheme x userinfo shape, query parameters, JDBC, ADO.NET/ODBC, libpq, Kafka
SASL-style `user:pw@host`, Oracle, flags, YAML/JSON pairs), in any position among other pairs, inside other text,
and checks that no word of the secret survives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.core.secrets_mask import EXCERPT_WIDTH, MASK, excerpt, is_secret_key, mask, secrets_in

SCHEMES = ("redis", "rediss", "amqp", "amqps", "mongodb", "mongodb+srv", "postgres", "postgresql", "mysql",
           "jdbc:postgresql", "jdbc:mysql", "kafka", "nats", "http", "https", "sqlserver")
QUERY_KEYS = ("password", "Password", "pwd", "passwd", "secret", "client_secret", "token", "access_token", "apikey",
              "api_key", "api-key", "access_key", "AccessKey", "sas", "sig", "X-Amz-Signature", "X-Amz-Credential",
              "AccountKey", "SharedAccessKey", "auth", "key", "passphrase")
USERS = ("", "app", "default", "svc-user", "u.ser", "admin_1")
HOSTS = ("cache.example.com", "db", "kafka-0.kafka.svc.cluster.local", "10.1.2.3", "pg.internal")
DBS = ("app", "orders_db", "0")

word = st.builds(lambda a, b: f"K{a}X{b}", st.sampled_from(("q", "z", "w", "v")),
                 st.text(alphabet="BCDFGHJKLMNPQRSTVXZ23456789", min_size=3, max_size=8))  # no `pass`, `key`, `sig`...


def secret_of(separators: tuple[str, ...], lead: bool = True):
    """Words joined by the separators a form allows (one before each word, if `lead`, and one after the last)."""
    sep = st.sampled_from(separators)
    return st.tuples(sep if lead else st.just(""), st.lists(st.tuples(word, sep), min_size=1, max_size=3)).map(
        lambda t: t[0] + "".join(w + s for w, s in t[1]))


URL_SEPS = ("", "@", ":", "%40", "%2F", "%3A", "!", "$", "*", "~", "-", "_", ".", "/", "?", "#", ";", "=", "+", "&")
QUERY_SEPS = ("", "@", ":", "%40", "%2F", "/", "!", "$", "*", "~", "-", "_", ".", "=", "+", ",", "?", "'")
BARE_SEPS = ("", "@", ":", "%40", "/", "!", "$", "*", "~", "-", "_", ".", "=", "+", "?", "#")
PLAIN_SEPS = ("", "@", ":", "%40", "/", "!", "$", "-", "_", ".", "+", "=")
QUOTED_SEPS = ("", ";", " ", "@", ":", "/", "=", "{", "}", "'", '"', ",", "&")
TOKEN_SEPS = ("", "-", "_", ".", "%40", "%3A", "~", "!", "$", "+", "@")


def among(draw, others: list[str], pair: str, separator: str) -> str:
    """`pair` among the `others` at any position (first, middle, last), joined."""
    at = draw(st.integers(0, len(others)))
    return separator.join([*others[:at], pair, *others[at:]])


@st.composite
def forms(draw, decorated: bool = True) -> tuple[str, str, list[str]]:
    """(text, secret, what must stay readable); `decorated`: inside other text (a quote, a bracket, a line)."""
    host, port, db = draw(st.sampled_from(HOSTS)), str(draw(st.integers(1, 65535))), draw(st.sampled_from(DBS))
    user = draw(st.sampled_from(USERS))
    kind = draw(st.sampled_from(("url", "empty-user", "token-user", "query", "jdbc-sqlserver", "ado", "odbc",
                                 "libpq", "bare", "oracle", "flag", "yaml", "json")))
    shown = [host, port, db]  # what must stay readable (less where a form has no port or database)
    if kind in ("url", "empty-user"):
        secret = draw(secret_of(URL_SEPS))
        scheme = draw(st.sampled_from(SCHEMES))
        text = f"{scheme}://{'' if kind == 'empty-user' else user}:{secret}@{host}:{port}/{db}"
        if draw(st.booleans()):
            text += "?authSource=admin&ssl=true"
    elif kind == "token-user":
        secret = draw(secret_of(TOKEN_SEPS))
        text = f"{draw(st.sampled_from(('https', 'http', 'git+https')))}://{secret}@{host}/{db}/repo.git"
        shown = [host, db]
    elif kind == "query":
        secret = draw(secret_of(QUERY_SEPS))
        others = draw(st.lists(st.sampled_from(("sslmode=require", "user=app", "authSource=admin", "timeout=5")),
                               max_size=3))
        query = among(draw, others, f"{draw(st.sampled_from(QUERY_KEYS))}={secret}", "&")
        text = f"{draw(st.sampled_from(SCHEMES))}://{host}:{port}/{db}?{query}"
    elif kind == "jdbc-sqlserver":
        quoted = draw(st.booleans())
        secret = draw(secret_of(QUOTED_SEPS if quoted else BARE_SEPS[:-1]))
        value = "{" + secret.replace("}", "}}") + "}" if quoted else secret
        pairs = among(draw, [f"databaseName={db}", f"user={user}", "encrypt=true"], f"password={value}", ";")
        text = f"jdbc:sqlserver://{host}:{port};{pairs}"
    elif kind in ("ado", "odbc", "libpq"):
        quote = draw(st.sampled_from(("", "'", '"', "{")))
        secret = draw(secret_of(PLAIN_SEPS if not quote else QUOTED_SEPS))
        close = "}" if quote == "{" else quote
        value = quote + (secret.replace(close, close * 2) if quote else secret) + close
        if kind == "libpq":
            value = value if quote != "{" else "'" + secret.replace("'", "\\'") + "'"
            key = draw(st.sampled_from(("password", "PASSWORD")))
            pairs = [f"host={host}", f"port={port}", f"dbname={db}", f"user={user or 'u'}"]
            text = among(draw, pairs, f"{key}={value}", " ")
        else:
            key = draw(st.sampled_from(("Password", "password", "Pwd", "PWD", "AccountKey", "SharedAccessKey")))
            pairs = [f"Server={host},{port}", f"Database={db}", f"User ID={user or 'u'}", "Encrypt=True"]
            text = among(draw, pairs, f"{key}={value}", ";") + draw(st.sampled_from(("", ";")))
    elif kind == "bare":
        secret = draw(secret_of(BARE_SEPS))
        text = f"{draw(st.sampled_from(('', 'KAFKA=', '--brokers=')))}{user}:{secret}@{host}:{port}"
        shown = [host, port]
    elif kind == "oracle":
        secret = draw(secret_of(PLAIN_SEPS))
        tail = draw(st.sampled_from((f"//{host}:{port}/{db}", f"{host}:{port}:{db}")))
        text = f"jdbc:oracle:thin:{user or 'scott'}/{secret}@{tail}"
    elif kind == "flag":
        secret = draw(secret_of(PLAIN_SEPS))
        flag = draw(st.sampled_from(("--password", "--db-password", "--token", "--api-key")))
        text = f"app --host {host} --port {port} {flag}{draw(st.sampled_from((' ', '=')))}{secret} --db {db}"
    elif kind == "yaml":
        secret = draw(secret_of((*QUOTED_SEPS[:-1], "#"), lead=False))  # a leading quote would be YAML's
        key = draw(st.sampled_from(("password", "spring.datasource.password", "redisToken", "client-secret")))
        text = f"host: {host}\n{key}: {secret}\nport: {port}\ndatabase: {db}"
    else:
        secret = draw(secret_of(QUOTED_SEPS[:-1]))
        key = draw(st.sampled_from(("password", "Password", "token", "api_key")))
        text = f'{{"host": "{host}", "{key}": "{secret.replace(chr(34), chr(92) + chr(34))}", "port": {port}, ' \
               f'"db": "{db}"}}'
    if not decorated:
        return text, secret, shown
    before = draw(st.sampled_from(("", "URL=", "export DATABASE_URL=", "- ", "url: ", "x y ", '"', "(", "[")))
    after = draw(st.sampled_from(("", " ", '"', ")", "]", " # comment", "\nnext: line", ", other")))
    if kind in ("yaml", "json", "libpq", "flag") and before in ('"', "(", "["):
        before = ""
    return before + text + after, secret, shown


def words_of(secret: str) -> list[str]:
    return [w for w in _split_words(secret) if len(w) >= 4]


def _split_words(secret: str) -> list[str]:
    out, cur = [], ""
    for c in secret:
        if c.isalnum():
            cur += c
        else:
            out.append(cur)
            cur = ""
    return [*out, cur]


@given(forms())
def test_every_secret_is_masked_whole_and_the_address_stays_readable(case):
    text, secret, shown = case
    masked = mask(text)
    for w in words_of(secret):
        assert w not in masked, (text, masked)
    for part in shown:
        assert part in masked, (text, masked, part)
    assert MASK in masked
    assert any(w in "".join(secrets_in(text)) for w in words_of(secret))  # what the sandbox scrubs, too


@given(forms(decorated=False), forms(decorated=False), st.sampled_from((" ", "\n", "; ", ", ", " && ", "&")))
def test_two_secrets_in_one_value_are_both_masked(first, second, separator):
    masked = mask(first[0] + separator + second[0])
    for w in words_of(first[1]) + words_of(second[1]):
        assert w not in masked, masked


@given(forms(), st.data())
def test_an_excerpt_anywhere_hides_the_secret_and_is_short(case, data):
    text, secret, _ = case
    long = "x" * data.draw(st.integers(0, 300)) + " " + text + " " + "y" * data.draw(st.integers(0, 300))
    at = data.draw(st.integers(0, len(long)))
    shown = excerpt(long, at)
    assert len(shown) <= EXCERPT_WIDTH
    for w in words_of(secret):
        assert w not in shown, (long, at, shown)


@pytest.mark.parametrize(("text", "masked"), [
    ("redis://:PASSWORD@cache.example.com:6379/0", "redis://:***@cache.example.com:6379/0"),
    ("redis://default:pw@cache:6379", "redis://default:***@cache:6379"),
    ("rediss://u:p@ss:w@h:1", "rediss://u:***@h:1"),
    ("https://ghp_ABCdef123@github.com/org/repo", "https://***@github.com/org/repo"),
    ("ssh://git@github.com/org/repo", "ssh://git@github.com/org/repo"),  # a plain user name: no token
    ("mongodb+srv://u:p%40ss@a.example.com,b:27017/db?authSource=admin",
     "mongodb+srv://u:***@a.example.com,b:27017/db?authSource=admin"),
    ("jdbc:mysql://db:3306/app?user=u&password=pw&useSSL=false",
     "jdbc:mysql://db:3306/app?user=u&password=***&useSSL=false"),
    ("jdbc:sqlserver://db:1433;user=u;password=p@ss;encrypt=true",
     "jdbc:sqlserver://db:1433;user=u;password=***;encrypt=true"),
    ("Server=tcp:db,1433;User ID=u;Password='a;b';Encrypt=True",
     "Server=tcp:db,1433;User ID=u;Password='***';Encrypt=True"),
    ("Driver={ODBC};Server=db;Uid=u;Pwd={a;b}}c};", "Driver={ODBC};Server=db;Uid=u;Pwd={***};"),
    ("host=db port=5432 user=u password=secret dbname=app", "host=db port=5432 user=u password=*** dbname=app"),
    ("KAFKA=user:pw@broker:9092", "KAFKA=user:***@broker:9092"),
    ("jdbc:oracle:thin:scott/tiger@//db:1521/svc", "jdbc:oracle:thin:scott/***@//db:1521/svc"),
    ("redis://:pa/ss@cache:6379", "redis://:***@cache:6379"),
    ("https://a.blob.core.windows.net/c?sv=2020&sig=XYZ%2F&se=1",
     "https://a.blob.core.windows.net/c?sv=2020&sig=***&se=1"),
    ("redis://:p@ss/word@cache:6379", "redis://:***@cache:6379"),
    ("--password hunter2 --host db", "--password *** --host db"),
    ('{"password": "p w", "host": "db"}', '{"password": "***", "host": "db"}'),
    ("password: my phrase  # comment", "password: ***  # comment"),
    # not secrets: an nginx directive, an image digest, KRaft voters, scp-like git, a file's path
    ("proxy_pass=http://backend:80", "proxy_pass=http://backend:80"),
    ("postgres:16@sha256:abcdef", "postgres:16@sha256:abcdef"),
    ("1@kafka:9093,2@kafka-2:9093", "1@kafka:9093,2@kafka-2:9093"),
    ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
    ("PASSWORD_FILE=/run/secrets/db", "PASSWORD_FILE=/run/secrets/db"),
])  # fmt: skip
def test_forms(text, masked):
    assert mask(text) == masked


def test_secret_keys():
    assert all(map(is_secret_key, ("password", "DB_PASSWORD", "spring.datasource.password", "Pwd", "apiKey",
                                   "X-Amz-Signature", "client_secret", "SharedAccessKey", "sig", "key", "--token")))
    assert not any(map(is_secret_key, ("authSource", "authMechanism", "user", "PASSWORD_FILE", "proxy_pass",
                                       "SharedAccessKeyName", "keyspace", "host", "")))


def test_an_excerpt_is_cut_after_masking():
    """A cut at 120 characters of a long secret leaves no tail of it: the `password=` that makes it one is read
    on the whole line, before the cut."""
    secret = "Kq" + "Z" * 400 + "TAIL"
    line = "x" * 200 + f" password={secret} host=db.example.com:5432 " + "y" * 500
    at = line.index("db.example.com")
    shown = excerpt(line, at)
    assert len(shown) <= EXCERPT_WIDTH and "db.example.com:5432" in shown
    assert "Z" not in shown and "TAIL" not in shown and shown.startswith("...") and shown.endswith("...")
    assert excerpt("a\n  redis://:pw@h:1  \nb", 5) == "redis://:***@h:1"  # the line of `at`, stripped
    assert excerpt("short value", 3) == "short value"
