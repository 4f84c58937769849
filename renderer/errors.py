"""User-facing errors and diagnostics.

Every problem a user can cause is reported as a `Problem` that names where it is (file, document,
object or plugin) and how to fix it. `DevlaneError` carries one or more problems to the CLI, which
prints them without a traceback and exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    """One finding: severity is "error" or "warning"; hint says how to fix it."""

    message: str
    where: Where = field(default_factory=Where)
    hint: str | None = None
    severity: str = "error"
    code: str = "error"

    def format(self) -> str:
        prefix = f"{self.where}: " if str(self.where) else ""
        text = f"{prefix}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def as_dict(self) -> dict:
        out = {"severity": self.severity, "code": self.code, "message": self.message}
        loc = {k: v for k, v in vars(self.where).items() if v is not None}
        if loc:
            out["where"] = loc
        if self.hint:
            out["hint"] = self.hint
        return out


class DevlaneError(Exception):
    """A user error: the CLI prints its problems and exits with `exit_code` (1 by default)."""

    def __init__(self, problems: Problem | list[Problem] | str, exit_code: int = 1):
        if isinstance(problems, str):
            problems = Problem(problems)
        self.problems: list[Problem] = [problems] if isinstance(problems, Problem) else list(problems)
        self.exit_code = exit_code
        super().__init__("\n".join(p.format() for p in self.problems))


def fail(message: str, where: Where | None = None, hint: str | None = None, code: str = "error") -> DevlaneError:
    """Build a single-problem error; callers `raise fail(...)`."""
    return DevlaneError(Problem(message, where or Where(), hint, "error", code))


class Diagnostics:
    """Collects problems across a stage so that lint can report all of them at once."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def error(self, message: str, where: Where | None = None, hint: str | None = None, code: str = "error"):
        self.problems.append(Problem(message, where or Where(), hint, "error", code))

    def warn(self, message: str, where: Where | None = None, hint: str | None = None, code: str = "warning"):
        self.problems.append(Problem(message, where or Where(), hint, "warning", code))

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def raise_if_errors(self) -> None:
        if self.errors:
            raise DevlaneError(self.errors)
