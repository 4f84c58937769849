"""User-facing errors and diagnostics.

Every problem a user can cause is a `Problem` that names where it is (file, document, object or
plugin) and how to fix it. The library raises typed errors carrying problems; only the CLI maps
them to exit codes (2 for `UsageError`, 1 for the others) and prints them, as pypa/build does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

Severity = Literal["error", "warning", "info"]
E = TypeVar("E", bound="DevlaneError")


@dataclass(frozen=True)
class Where:
    """A location in the user's input: a file, a document in it, an object, or a plugin."""

    file: str | None = None
    line: int | None = None
    document: int | None = None
    object: str | None = None
    plugin: str | None = None

    def __str__(self) -> str:
        parts: list[str] = []
        if self.file:
            loc = self.file
            if self.line is not None:
                loc += f":{self.line}"
            if self.document is not None:
                loc += f" (document {self.document + 1})"  # stored 0-based, shown 1-based
            parts.append(loc)
        if self.object:
            parts.append(self.object)
        if self.plugin:
            parts.append(f"plugin {self.plugin}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Problem:
    """One finding; `hint` says how to fix it, `code` classifies it for machines (`lint -o json`)."""

    message: str
    where: Where = field(default_factory=Where)
    hint: str | None = None
    severity: Severity = "error"
    code: str = "error"

    def format(self) -> str:
        prefix = f"{self.where}: " if str(self.where) else ""
        text = f"{prefix}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def as_row(self) -> list:
        """The problem as a JSON row (a stored model keeps the problems it was built with)."""
        return [self.message, vars(self.where), self.hint, self.severity, self.code]

    @classmethod
    def from_row(cls, row: list) -> Problem:
        message, where, hint, severity, code = row
        return cls(message, Where(**where), hint, severity, code)

    def as_dict(self) -> dict:
        out = {"severity": self.severity, "code": self.code, "message": self.message}
        loc = {k: v for k, v in vars(self.where).items() if v is not None}
        if loc:
            out["where"] = loc
        if self.hint:
            out["hint"] = self.hint
        return out


class DevlaneError(Exception):
    """A user error: the input, the repository or a plugin is wrong, and the problems say how."""

    def __init__(self, problems: Problem | list[Problem] | str):
        if isinstance(problems, str):
            problems = Problem(problems)
        self.problems: list[Problem] = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__("\n".join(p.format() for p in self.problems))

    def with_problems(self: E, problems: list[Problem]) -> E:
        """The same kind of error with other problems (scrubbed, re-located, explained)."""
        return type(self)(problems)


class UsageError(DevlaneError):
    """The command line or an argument is wrong (exit status 2)."""


class NothingToDo(DevlaneError):
    """What was asked needs no work (a pull request that changes no service is no lane): every command says so in one
    line and succeeds (exit 0)."""


class PluginError(DevlaneError):
    """A plugin call failed: it raised, crashed, answered malformed output or reported an error."""


class PluginTimeout(PluginError):
    """A plugin call ran out of time; its whole process group was killed."""


class RenderTimeout(DevlaneError):
    """The whole render ran out of its `--timeout` budget before a plugin could run."""


def fail(message: str, where: Where | None = None, hint: str | None = None, code: str = "error",
         kind: type[E] = DevlaneError) -> E:
    """Build a single-problem error of type `kind`; callers `raise fail(...)`."""
    return kind(Problem(message, where or Where(), hint, "error", code))


def tally(problems: list[Problem]) -> str:
    """`2 error(s), 1 warning(s)`, with `, 3 note(s)` when there are notes (informational: they fail nothing)."""
    count = {sev: sum(p.severity == sev for p in problems) for sev in ("error", "warning", "info")}
    return f"{count['error']} error(s), {count['warning']} warning(s)" + (
        f", {count['info']} note(s)" if count["info"] else "")


def as_errors(problems: list[Problem]) -> list[Problem]:
    """The same problems, every one an error (`policy.warningsAsErrors`)."""
    return [replace(p, severity="error") for p in problems]


class Diagnostics:
    """Collects problems across the stages of one command so that lint can report all of them at once."""

    def __init__(self, problems: list[Problem] | None = None) -> None:
        self.problems: list[Problem] = list(problems or [])

    def error(self, message: str, where: Where | None = None, hint: str | None = None, code: str = "error"):
        self.problems.append(Problem(message, where or Where(), hint, "error", code))

    def warn(self, message: str, where: Where | None = None, hint: str | None = None, code: str = "warning"):
        self.problems.append(Problem(message, where or Where(), hint, "warning", code))

    def extend(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems += problems

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def infos(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "info"]

    def raise_if_errors(self) -> None:
        if self.errors:
            raise DevlaneError(self.errors)
