"""Argument helpers shared by the CLI modules (kept apart so `cli` and its subcommand groups can
both import them without a cycle)."""

from __future__ import annotations

from .errors import DevlaneError


def repeat_pairs(values: list[str], flag: str) -> dict[str, str]:
    """`--flag NAME=VALUE` given several times -> {NAME: VALUE}; a malformed one is a usage error."""
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key or not value:
            raise DevlaneError(f"{flag} {v!r}: expected NAME=PATH", exit_code=2)
        out[key] = value
    return out
