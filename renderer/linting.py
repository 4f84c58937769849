"""`lint`: every problem in the repository at once, read back from the cache while the inputs are the bytes the
findings were found in (`render.stored.lint_entry`).

Below the API (which re-exports `lint`) so that the CLI's lint of an unchanged repository loads only what the
stored findings' key needs: the session, listing and hashing the files, the entry. The checks, and the whole
render pipeline `renderer.api` imports, are a third of a cold start; they load on a miss only.
"""

from __future__ import annotations

from .errors import DevlaneError, Problem, Where
from .render.inputs import load
from .render.stored import lint_entry
from .session import Options, Session


def lint(options: Options) -> list[Problem]:
    """Every problem in the repository at once (errors and warnings), plugin sources that do not
    resolve included; no plugin runs. An unchanged repository's findings come from the cache (`lint_entry`)."""
    with Session(options, "render", collect=True) as s, s.source.handing_over():
        stored = _key(s)
        found = lint_entry.read(s.cache, stored) if s.cache is not None and stored is not None else None
        if found is None:
            from .render.checks import repository  # a miss only (see the module's doc)

            found = repository.findings(s.loaded, s.config, s.options.routing, s.options.isolation)
            if s.cache is not None and stored is not None:
                lint_entry.write(s.cache, stored, found)
        return found.before + _unresolvable(s, found.plugins) + found.after


def _key(s: Session) -> str | None:
    """The key of lint's findings on these inputs, None when they are not only files read as plain YAML."""
    found = load.input_digests(s.source, s.config_file)
    if found is None:
        return None
    files, said = found
    return lint_entry.key(files, s.config_file.raw, s.config, {"routing": s.options.routing,
                                                                "isolation": s.options.isolation,
                                                                "listing": [p.as_row() for p in said]})


def _unresolvable(s: Session, plugins: list[tuple[Where, list[str]]]) -> list[Problem]:
    """A plugin definition none of whose candidates resolves, reported where it is defined (asked on every run: it
    depends on more than the repository's manifests)."""
    out = []
    for where, candidates in plugins:
        errors = []
        for name in candidates:
            try:
                s.host.resolver.get(name)
                break
            except DevlaneError as exc:
                errors.append(exc)
        else:
            if errors:
                first = errors[0].problems[0]
                out.append(Problem(first.message, where, first.hint, code="plugin-source"))
    return out
