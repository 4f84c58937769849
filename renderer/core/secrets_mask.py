"""Secrets in addresses and connection strings, and the one way every output hides them.

Every report that shows a value a repository wrote (render's warnings, the flow README and `flow.metadata`,
`plan`, `diff` and its PR comment, `preview`, `lint`, `init`) shows it through `mask` or `excerpt`, so no output
hides less than another. What is a secret, replaced whole by `MASK`:

- a URL's password: `scheme://user:PASSWORD@host` (any scheme: `redis`, `rediss`, `amqp(s)`, `mongodb(+srv)`,
  `postgres(ql)`, `mysql`, `jdbc:...`, and protocol-relative `//user:pw@host`), the user shown; with an empty user
  (`redis://:PASSWORD@host`) too. The userinfo ends at the last `@` of the authority, so a raw `@` or `:` in the
  password is hidden with it. A raw `/`, `?`, `#` or `;` in it ends the authority early for every URL parser,
  yet the password must not show: when the authority holds a userinfo, or is no `host[:port]` (`redis://:pa/ss@h`),
  the userinfo goes on to the last `@` before the word's next `//` (a path holding `@` after a password is then
  hidden too). Not handled: a raw `/` right after a password of digits alone (`u:123/4@h` reads as `host:port`);
- a userinfo without a password (`https://TOKEN@github.com`), whole: that is where a token goes. A plain user name
  (lower-case letters, `.`, `_`, `-`, at most 32 of them, no digit: `ssh://git@host`) is no token and is shown;
- `user:PASSWORD@host` without a scheme (Kafka SASL-style, `KEY=user:pw@broker:9092`, also in a URL's path or
  query), and Oracle's `jdbc:oracle:thin:user/PASSWORD@host`; not an image's `name:tag@sha256:...`;
- the value of every key-value pair whose key is a secret's (`is_secret_key`): URL query parameters
  (`?user=u&password=PW`), JDBC (`;password=PW`), ADO.NET/ODBC (`Password=PW;`, `Pwd={a;b}`, `Password='a;b'`,
  `"a;""b"`), libpq (`password=PW host=db`), YAML/JSON (`password: PW`, `"token": "PW"`) and long flags
  (`--password PW`, `--token=PW`), in any position, a key inside another's value too. A quoted or braced value
  is hidden up to its closing quote or brace (`""`, `\\"` and `}}` inside), when that closes it (`'a'b` is one
  bare value); a bare one up to a blank, `;`, `&`, `"` or `<` (the end of a line for `key: value`).

Secret keys (`SECRET_KEYS`), compared lower-case without separators nor a number at the end (`PASSWORD_2`), by how
the key ends: `password`, `passwd`, `pwd`, `pass` (not nginx's `proxy_pass` and friends), `passphrase`, `secret`,
`token`, `apikey`, `accesskey`, `secretkey`, `privatekey`, `accountkey`, `sharedaccesskey`, `masterkey`, `authkey`,
`signingkey`, `encryptionkey`, `sessionkey`, `sas`, `sig`, `signature`, `credential(s)`, `auth`, `jwt`, and the key
`key` alone (`?key=` of Google's APIs). Not secrets: `authSource`, `authMechanism`, `user`, `PASSWORD_FILE` (a path).

Hosts, ports, databases and other parameters stay readable. `excerpt` cuts a masked line to `EXCERPT_WIDTH`
around a position (the address a report is about). Every scan here is linear in the text: `find`, possessive
runs, bisection, and answers memoized per position, whatever a repository writes
(`tests/robustness/test_scanner_linear.py`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache

from .stores import SCHEME_CHARS

MASK = "***"
EXCERPT_WIDTH = 120  # the longest excerpt of a value any report shows
CUT = "..."  # where an excerpt was cut

SECRET_KEYS = (
    "password", "passwd", "pwd", "pass", "passphrase", "secret", "token", "apikey", "accesskey", "secretkey",
    "privatekey", "accountkey", "sharedaccesskey", "masterkey", "authkey", "signingkey", "encryptionkey",
    "sessionkey", "sas", "sig", "signature", "credential", "credentials", "auth", "jwt",
)  # fmt: skip
_NOT_SECRET_KEYS = ("proxypass", "fastcgipass", "grpcpass", "uwsgipass", "scgipass", "memcachedpass", "bypass")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def _is_secret_key_uncached(key: str) -> bool:
    """Whether a key (a query parameter, a connection-string keyword, a config key, a flag) holds a secret."""
    norm = _NOT_ALNUM.sub("", key.lower()).rstrip("0123456789")  # a numbered one too: `DB_PASSWORD_2`, `secret1`
    if not norm or norm.endswith(_NOT_SECRET_KEYS):
        return False
    return norm == "key" or norm.endswith(SECRET_KEYS)


# cached without a decorator, since mutation testing (mutmut) leaves decorated functions unmutated
is_secret_key = lru_cache(maxsize=4096)(_is_secret_key_uncached)


# ---------------------------------------------------------------------------------------------
# Finding the secrets: each finder appends (start, end) spans

_NETLOC_END = re.compile(r"[/?#;\s\"'<>`\\]")  # where a URL's authority ends
_TOKEN_END = re.compile(r"[\s\"'<>`]")  # where a word of text ends
_URL_OPENERS = frozenset(" \t\r\n\"'=(<>,[`")  # before a protocol-relative `//`
_PLAIN_USER = re.compile(r"[a-z][a-z._\-]{0,31}")
_SEGMENT = re.compile(r"[^\s,;\"'<>()`]++")
_USER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~%+-$")
_DIGESTS = ("sha256:", "sha384:", "sha512:")
_RUN = re.compile(r"[\w.\-]++")
_MAY_HOLD_KEY = re.compile(r"(?i)pass|pwd|secret|token|key|sas|sig|credential|auth|jwt")
_BARE_RUN = re.compile(r"[^\s;&\"<]++")  # a bare value: up to a blank, `;`, `&`, `"` or `<`
_LINE_RUN = re.compile(r"[^\r\n]++")
_AFTER_QUOTE = frozenset(" \t\r\n;&,)]}<\"'")  # what may follow a closing quote


def _url_userinfo(text: str, out: list[tuple[int, int]]) -> None:
    """Passwords (and token users) of `scheme://userinfo@host` and `//userinfo@host`."""
    n = len(text)
    pos = 0
    word = (-1, -1)  # (start, end) of the word being read: its end found once per word, however many URLs it holds
    while True:
        i = text.find("//", pos)
        if i < 0:
            return
        q = pos = i + 2
        before = text[i - 1] if i else " "
        if before == ":":
            if i < 2 or text[i - 2] not in SCHEME_CHARS:
                continue
        elif before not in _URL_OPENERS:
            continue
        m = _NETLOC_END.search(text, q)
        e = m.start() if m else n
        at = text.rfind("@", q, e)
        if e < n and text[e] in "/?#;\\" and (at >= 0 or _odd_netloc(text, q, e)):
            # a raw `/`, `?`, `#` or `;` in a password ends the authority early: the userinfo goes on to the last
            # `@` of the word before another `//`, whatever it hides of a path that holds one
            if not word[0] <= e < word[1]:
                m = _TOKEN_END.search(text, e)
                word = (e, m.start() if m else n)
            nxt = text.find("//", e, word[1])  # the next URL's
            at = max(at, text.rfind("@", e, nxt if nxt >= 0 else word[1]))
        if at <= q:
            continue
        colon = text.find(":", q, min(at, e))  # a user name ends in the authority: past it, all is userinfo
        if colon >= 0:
            if at > colon + 1:
                out.append((colon + 1, at))
        elif not _PLAIN_USER.fullmatch(text, q, at):
            out.append((q, at))
        pos = max(pos, at + 1)


def _odd_netloc(text: str, q: int, e: int) -> bool:
    """An authority without `@` that is no `host[:port]` (`:pa` of `redis://:pa/ss@host`): its userinfo goes on."""
    colon = text.find(":", q, e)
    if colon < 0 or text.startswith("[", q):
        return False
    port = text[text.rfind(":", q, e) + 1 : e]
    return colon == q or not port.isdigit()


def _bare_userinfo(text: str, out: list[tuple[int, int]]) -> None:
    """`user:PASSWORD@host` without a scheme (`KEY=user:pw@broker:9092`, also as a query parameter's value), and
    Oracle's `user/PASSWORD@host`. Words are split at `&` too; a URL's authority is the URL pass's."""
    for m in _SEGMENT.finditer(text):
        if "@" not in m.group():
            continue
        at = m.start()
        for part in m.group().split("&"):
            _bare_part(part, at, out)
            at += len(part) + 1


def _bare_part(seg: str, base: int, out: list[tuple[int, int]]) -> None:
    url = seg.find("://")
    if url >= 0:  # what follows the URL's authority (its path, its query) may hold one
        m = _NETLOC_END.search(seg, url + 3)
        cut = m.start() if m else len(seg)
        seg, base = seg[cut:], base + cut
    k = seg.rfind("@")
    if k < 0:
        return
    oracle = seg.lower().find("jdbc:oracle:")
    if oracle >= 0:
        creds = seg.find(":", oracle + 12)  # after `jdbc:oracle:thin:`
        slash = seg.find("/", creds, k) if creds >= 0 else -1
        if slash >= 0 and k > slash + 1:
            out.append((base + slash + 1, base + k))
        return
    right = seg[k + 1 : k + 2]
    if not (right.isalnum() or right == "[") or seg.startswith(_DIGESTS, k + 1):
        return
    first = seg.find(":", 0, k)
    if first < 0:
        return
    user_at = first  # the user name ends at the first `:` and starts after a `KEY=`, `[`...
    while user_at > 0 and seg[user_at - 1] in _USER_CHARS:
        user_at -= 1
    if k > first + 1 and seg[user_at:first].lower() != "mailto":
        out.append((base + first + 1, base + k))


def _pairs(text: str, out: list[tuple[int, int]]) -> None:
    """Values of `key=value`, `key: value`, `"key": "value"` and `--key value` whose key is a secret's. Every
    key is read, also one inside another's value (`password='a password=';b'`: the first quote may close at the
    second key), and each value end is found once per position (`_Ends`), so that keys in keys stay linear."""
    if _MAY_HOLD_KEY.search(text) is None:
        return
    n = len(text)
    ends = _Ends(text)
    for m in _RUN.finditer(text):
        start, j = m.span()
        if not is_secret_key(m.group()):
            continue
        quote = text[start - 1] if start else ""
        quoted = quote in ("'", '"') and text.startswith(quote, j)
        # a quoted key whose opening quote was cut off (an excerpt's first word): `password": "PW"`
        quoted = quoted or (not start and text[j:j + 1] in ("'", '"') and text.startswith(":", j + 1))
        j += quoted
        while j < n and text[j] in " \t":
            j += 1
        sep = text[j] if j < n else ""
        yaml = False
        if sep == "=":
            j += 2 if text.startswith("=>", j) else 1
        elif sep == ":" and (quoted or j + 1 >= n or text[j + 1] in " \t\r\n"):
            j, yaml = j + 1, not quoted  # `key: value`, to the end of the line; JSON's `"key": value`
        elif m.group().startswith("--") and sep == ",":
            j += 1  # `["--key", "value"]`, `[--key, value]`: a flag in a list takes the next item, unless it is a flag
            k = j
            while k < n and text[k] in " \t\"'":
                k += 1
            if k == n or text[k] == "-":
                continue
        elif not (m.group().startswith("--") and j > m.end() and sep not in ("", "\n", "\r", "]", ")", "}")):
            continue  # `--key value`: the next word (a closing bracket ends a list, it is no value)
        while j < n and text[j] in " \t":
            j += 1
        span = ends.value(j, yaml)
        if span[1] > span[0]:
            out.append(span)


class _Ends:
    """Where the values of `_pairs` end: inside their quotes or braces (when those close them: `'a'b` is one
    bare value), else at a bare value's stop or the line's end. Each answer is computed once per position (runs
    and lines by bisection, quote chains memoized), whatever number of keys ask."""

    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self._runs: dict[bool, tuple[list[int], list[int]]] = {}  # to the line's end? -> (starts, ends)
        self._comments: list[int] | None = None
        self._quotes: dict[tuple[str, int], int] = {}  # (close, a quote's position) -> its chain's end (see _close)
        self._blanks: dict[int, int] = {}

    def value(self, j: int, to_line_end: bool) -> tuple[int, int]:
        text, n = self.text, self.n
        if j >= n:
            return j, j
        c, floor = text[j], j
        if c in ("'", '"') or (c == "{" and not to_line_end):
            k = self._close("}" if c == "{" else c, j + 1)
            if k < 0:  # unterminated: to the end of the line
                return j + 1, max(j + 1, self._run_end(j, True))
            if k + 1 >= n or text[k + 1] in _AFTER_QUOTE:
                return j + 1, k
            floor = k + 1  # not a quoted value: a bare one, at least up to the end of the word after it
        end = max(self._run_end(j, to_line_end), self._run_end(floor, to_line_end))
        if to_line_end:
            comments = self._comment_starts()
            i = bisect.bisect_left(comments, j)
            if i < len(comments) and comments[i] < end:
                end = comments[i]
            end = max(j, self._stripped(end))
        return j, end

    def _stripped(self, end: int) -> int:
        """`end` moved back over blanks: once per end, however many keys share it."""
        known = self._blanks.get(end)
        if known is None:
            known = end
            while known > 0 and self.text[known - 1] in " \t":
                known -= 1
            self._blanks[end] = known
        return known

    def _close(self, close: str, k: int) -> int:
        """The quote that closes a value whose content starts at `k` (-1: none), past `\\"` and doubled quotes.
        The chain of quotes a scan walks from any start is the same from the first quote on: memoized."""
        text = self.text
        k = text.find(close, k)
        walked: list[int] = []
        result = -1
        while k >= 0:
            known = self._quotes.get((close, k))
            if known is not None:
                result = known
                break
            walked.append(k)
            if close != "}" and text[k - 1] == "\\":  # escaped: `\"`
                k = text.find(close, k + 1)
            elif text.startswith(close, k + 1):  # doubled: `""`, `''`, `}}`
                k = text.find(close, k + 2)
            else:
                result = k
                break
        for w in walked:
            self._quotes[close, w] = result
        return result

    def _run_end(self, j: int, to_line_end: bool) -> int:
        runs = self._runs.get(to_line_end)
        if runs is None:
            rx = _LINE_RUN if to_line_end else _BARE_RUN
            spans = [m.span() for m in rx.finditer(self.text)]
            runs = self._runs[to_line_end] = ([a for a, _ in spans], [b for _, b in spans])
        i = bisect.bisect_right(runs[0], j) - 1
        return runs[1][i] if i >= 0 and j < runs[1][i] else j

    def _comment_starts(self) -> list[int]:
        if self._comments is None:
            self._comments = [m.start() for m in re.finditer(" #", self.text)]
        return self._comments


@dataclass(frozen=True)
class _Found:
    spans: tuple[tuple[int, int], ...]  # each secret found, in order
    merged: tuple[tuple[int, int], ...]  # the same, overlapping and adjacent ones joined: what `MASK` replaces
    starts: tuple[int, ...]  # merged span starts, for bisect
    newlines: tuple[int, ...] | None  # positions of `\n`, for `excerpt`


def _found_uncached(text: str) -> _Found:
    spans: list[tuple[int, int]] = []
    if "@" in text:
        _url_userinfo(text, spans)
        _bare_userinfo(text, spans)
    _pairs(text, spans)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    newlines = tuple(m.start() for m in re.finditer("\n", text)) if "\n" in text else None
    return _Found(tuple(spans), tuple(merged), tuple(s for s, _ in merged), newlines)


# cached without a decorator, since mutation testing (mutmut) leaves decorated functions unmutated
_found = lru_cache(maxsize=64)(_found_uncached)


def secrets_in(text: str) -> list[str]:
    """Every secret `mask` hides in `text`, as written there (for the sandbox to scrub from a plugin's output)."""
    if not text:
        return []
    return [text[s:e] for s, e in _found(text).spans]


def mask(text: str) -> str:
    """`text` with every secret replaced by `MASK` (see the module's docstring)."""
    if not text:
        return text
    return _replace(text, _found(text), 0, len(text))


def _replace(text: str, found: _Found, a: int, b: int) -> str:
    """text[a:b] with the secrets in it replaced by `MASK` (a secret cut by the edges is still hidden whole)."""
    i = max(bisect.bisect_right(found.starts, a) - 1, 0)
    parts: list[str] = []
    pos = a
    for s, e in found.merged[i:]:
        if s >= b:
            break
        if e <= pos:
            continue
        parts += [text[pos:s] if s > pos else "", MASK]
        pos = e
    if pos < b:
        parts.append(text[pos:b])
    return "".join(parts)


def excerpt(text: str, at: int = 0, width: int = EXCERPT_WIDTH) -> str:
    """The line of `text` that holds position `at`, masked, then cut to at most `width` characters around `at`
    (a cut is marked `...`). Masking comes first, on the whole text, so a cut can never leave a secret's tail
    without the `password=` or `user:` that made it one; and the work is bounded by `width`, not by the text, but
    for the first call on a text (many excerpts of one long value cost one scan)."""
    if not text:
        return text
    found = _found(text)
    at = min(max(at, 0), len(text))
    i = bisect.bisect_right(found.starts, at) - 1
    if i >= 0 and found.merged[i][0] < at < found.merged[i][1]:
        at = found.merged[i][0]  # inside a secret: from its start, so that it is one mask
    line_start, line_end = 0, len(text)
    if found.newlines:
        k = bisect.bisect_left(found.newlines, at)
        line_start = found.newlines[k - 1] + 1 if k else 0
        line_end = found.newlines[k] if k < len(found.newlines) else len(text)
    a, b = max(line_start, at - 2 * width), min(line_end, at + 2 * width)
    left, right = _replace(text, found, a, at), _replace(text, found, at, b)
    if b == line_end:
        right = right.rstrip()
    if a == line_start:
        left = left.lstrip()
        if not left:
            right = right.lstrip()
    cut_left, cut_right = a > line_start, b < line_end
    if len(left) + len(right) <= width and not cut_left and not cut_right:
        return left + right
    keep_left = min(len(left), width // 3 if len(right) >= width - width // 3 else width - len(right))
    keep_right = min(len(right), width - keep_left)
    shown = left[len(left) - keep_left :] + right[:keep_right]
    if keep_left < len(left) or cut_left:
        shown = CUT + shown[len(CUT) :]
    if keep_right < len(right) or cut_right:
        shown = shown[: len(shown) - len(CUT)] + CUT
    return shown
