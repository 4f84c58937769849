"""The pure parts of the plugin sandbox, in-process: the allowlisted environment (`plugin_env`), argv left
alone when network is allowed or isolation is unavailable, network-failure hints, secret values and
their scrubbing, and the bounded stderr tail (`renderer.host.process.BoundedTail`).

Real namespaces, probes and processes are in tests/e2e/test_sandbox_isolation.py.
"""

from __future__ import annotations

import json

import pytest

from renderer.host import confine
from renderer.host.process import BoundedTail
from renderer.host.sandbox import (
    ENV_ALLOWLIST,
    NETWORK_HINT,
    network_hint,
    plugin_env,
    scrub,
    secret_values,
)

# --------------------------------------------------------------------------------------------------
# Environment


def test_plugin_env_passes_only_the_allowlist(monkeypatch, tmp_path):
    """`plugin_env` is the whole environment a plugin process gets (Popen's `env=`)."""
    for name in ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "ARGOCD_AUTH_TOKEN", "KUBECONFIG", "HTTPS_PROXY",
                 "http_proxy", "PYTHONPATH", "SSH_AUTH_SOCK", "SOURCE_DATE_EPOCH"):  # fmt: skip
        monkeypatch.setenv(name, "leak-me")
    monkeypatch.setenv("DEVLANE_X", "visible")
    seen = plugin_env(str(tmp_path))
    assert "leak-me" not in json.dumps(seen)
    assert seen["DEVLANE_X"] == "visible"
    assert seen["HOME"] == seen["TMPDIR"] == str(tmp_path)
    assert (seen["LANG"], seen["LC_ALL"], seen["TZ"], seen["PYTHONHASHSEED"]) == ("C.UTF-8", "C.UTF-8", "UTC", "0")
    assert "SOURCE_DATE_EPOCH" not in seen
    fixed = {n for n in ENV_ALLOWLIST if not n.endswith("*")}
    assert {k for k in seen if not k.startswith("DEVLANE_")} <= fixed

    seen = plugin_env(str(tmp_path), {"SOURCE_DATE_EPOCH": "1700000000"})
    assert seen["SOURCE_DATE_EPOCH"] == "1700000000"


# --------------------------------------------------------------------------------------------------
# Network isolation, without probing


def test_no_sandbox_leaves_argv_alone(monkeypatch, tmp_path):
    monkeypatch.setattr(confine, "_probed", confine._unconfined("none", "unit test"))
    got = confine.confinement()
    assert got.reason == "unit test" and not got.enforced
    assert got.wrap(["plugin", "--x"], writable=[str(tmp_path)]).argv == ["plugin", "--x"]
    assert "not enforced" in got.describe()
    assert [la.name for la in got.missing()] == [n for n in confine.LAYERS if n != "close-on-exec"]


# --------------------------------------------------------------------------------------------------
# Network hints


@pytest.mark.parametrize(
    "text",
    [
        "OSError: [Errno 101] Network is unreachable",
        "socket.gaierror: [Errno -3] Temporary failure in name resolution",
        "socket.gaierror: [Errno -2] Name or service not known",
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.neon.tech', port=443): Max retries "
        "exceeded with url: /v2/projects (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object>: "
        "Failed to establish a new connection: [Errno 111] Connection refused'))",
        "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>",
        "curl: (6) Could not resolve host: api.github.com",
        "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
        'Get "https://api.example.com": dial tcp: lookup api.example.com on 10.0.0.2:53: no such host',
        "Error: getaddrinfo ENOTFOUND registry.npmjs.org",
        "httpx.ConnectError: [Errno 99] Cannot assign requested address",
        "dial tcp 10.1.2.3:5432: connect: connection refused",
        "Error: connect ECONNREFUSED 203.0.113.9:443",
        "java.net.UnknownHostException: api.example.com",
    ],
)
def test_network_hint_recognises_network_attempts(text):
    assert network_hint(f"Traceback (most recent call last):\n  ...\n{text}\n") == NETWORK_HINT


@pytest.mark.parametrize(
    "text",
    [
        "",
        "KeyError: 'token'",
        "ValueError: port must be between 0 and 65535",
        "error: NetworkPolicy 'deny-all' not found in the flow",
        "plugin timed out after 30 s",
        "ConnectionRefusedError: [Errno 111] Connection refused",  # no target named: may be a local helper
        "dial tcp 127.0.0.1:8080: connect: connection refused",
        "requests.exceptions.HTTPError: 404 Client Error for url: https://localhost:9000/x",
        "Error: connect ECONNREFUSED 127.0.0.1:6379",
        "see https://docs.example.com/plugins for the args schema",
    ],
)
def test_network_hint_stays_quiet_on_other_failures(text):
    assert network_hint(text) is None


# --------------------------------------------------------------------------------------------------
# Secrets


def test_secret_values_from_schema_marks_and_names():
    schema = {"type": "object", "properties": {
        "dbPassword": {"type": "string"},
        "apiToken": {"type": "string", "x-devlane-secret": False},
        "seed": {"type": "string", "writeOnly": True},
        "pin": {"type": "integer", "format": "password"},
        "conn": {"type": "object", "x-devlane-secret": True},
        "nested": {"type": "object", "properties": {"inner": {"type": "string", "writeOnly": True}}},
    }}  # fmt: skip
    args = {
        "dbPassword": "hunter22",
        "apiToken": "public-not-secret",
        "seed": "s33d-value",
        "pin": 4711,
        "conn": {"user": "admin", "pass": "pa55word"},
        "nested": {"inner": "deep-secret", "plain": "visible"},
        "GITHUB_TOKEN": "ghp_abcdef123456",
        "aws_secret_access_key": "AKIA/xyz+abc",
        "API_KEY": "ab",  # too short to scrub without mangling output
        "use_token": "true",  # a flag, not a secret
        "token_ttl": 3600,  # a number under a secret-looking name only
        "database_url": "postgres://app:s%40fe-pw@db.example.com:5432/app",
        "image": "nginx:1.27",
    }
    found = secret_values(args, schema)
    assert set(found) == {"hunter22", "s33d-value", "4711", "admin", "pa55word", "deep-secret", "ghp_abcdef123456",
                          "AKIA/xyz+abc", "s%40fe-pw", "s@fe-pw"}  # fmt: skip
    assert [len(s) for s in found] == sorted((len(s) for s in found), reverse=True)
    assert secret_values({"password": "topsecret"}, None) == ["topsecret"]
    assert secret_values({}, schema) == []


def test_secret_values_splits_multiline_secrets():
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    found = secret_values({"tls_key": pem})
    assert pem in found and "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" in found


def test_scrub_hides_secrets_inside_longer_strings():
    text = "auth failed for token=ghp_abcdef123456; retry with ghp_abcdef123456!"
    assert scrub(text, ["ghp_abcdef123456"]) == "auth failed for token=***; retry with ***!"
    assert scrub(text, []) == text
    assert scrub("ab and abc", ["ab"]) == "ab and abc"  # too short to be treated as a secret
    assert scrub('{"pw": "a\\"b\\\\c"}', ['a"b\\c']) == '{"pw": "***"}'  # as json.dumps wrote it
    assert scrub("url?pw=p%40ss%2Fword", ["p@ss/word"]) == "url?pw=***"  # as a query string carries it


@pytest.mark.parametrize("order", [["abcdef", "defghi"], ["defghi", "abcdef"]])
def test_scrub_overlapping_and_nested_secrets(order):
    assert scrub("xx abcdefghi yy", order) == "xx *** yy"  # no "ghi" or "abc" left over
    assert scrub("abcdefabcdef", order) == "***"
    assert scrub("secret and secretvalue", ["secret", "secretvalue"]) == "*** and ***"


# --------------------------------------------------------------------------------------------------
# Output tails


def test_bounded_tail_keeps_only_the_end():
    tail = BoundedTail(limit=10)
    for chunk in (b"line1\n", b"line2\n", b"line3\n"):
        tail.feed(chunk)
    assert tail.data == b"ne2\nline3\n" and tail.total == 18 and tail.truncated
    assert tail.text() == "line3\n"
    tail.feed(b"x" * 50)
    assert tail.data == b"x" * 10
    small = BoundedTail(limit=100)
    small.feed(b"all of it")
    assert small.text() == "all of it" and not small.truncated
