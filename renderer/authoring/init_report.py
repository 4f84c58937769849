"""The text report of `devlane init` (authoring, not views: views may not import authoring's records).

Diff, then the summary table (service, role, evidence), entries, what is left for the user, what cannot be
inferred, disagreements, notes, lint, and the first render to try. Deterministic: everything sorted.
"""

from __future__ import annotations

from ..errors import tally
from .init import InitResult


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)), r[-1]]).rstrip()
            for r in [head, *rows]]


def summary_rows(result: InitResult) -> list[tuple[str, str, str]]:
    inf = result.inference
    rows: list[tuple[str, str, str]] = []
    for e in inf.edges:
        rows.append((e.source, f"depends on {e.item}", e.evidence.text() + (f" [{e.note}]" if e.note else "")))
    for r in inf.roles:
        plugin = f", plugin {r.plugin}" if r.plugin else ", no built-in plugin"
        rows.append((r.service, f"{r.role}{plugin}", f"{r.reason}: {r.evidence.text()}"))
    for en in inf.entries:
        if en.doc is not None:
            note = f" [{en.note}]" if en.note else ""
            rows.append((f"{en.kind}/{en.doc.name}", "entry", en.evidence.text() + note))
        else:
            rows.append((en.service or "-", f"entry (new Ingress, host {en.host})", en.note))
    return rows


def text(result: InitResult) -> str:
    lines: list[str] = []
    if result.diff:
        lines += [result.diff.rstrip("\n"), ""]
    rows = summary_rows(result)
    if rows:
        lines += _table(("SERVICE", "INFERRED", "EVIDENCE"), rows)
    else:
        lines.append("nothing inferred: no workload names a Service, and no store, external host or entry was found")
    inf = result.inference
    if inf.unwired:
        lines += ["", "cannot be inferred (the manifests do not say these):"]
        lines += [f"  {u.service}: {u.reason}\n    fix: {u.suggestion}" for u in inf.unwired]
    if inf.telemetry:
        lines += ["", "telemetry (every lane reports to the baseline's: no dependency written):"]
        lines += [f"  {t.service}: {t.reason}" + (f"; named by {', '.join(t.readers)}" if t.readers else "")
                  for t in inf.telemetry]
    if inf.shared_config:
        lines += ["", "shared configuration (read whole by many services, naming many stores: no edge inferred "
                  "from it):"]
        for c in inf.shared_config:
            copies = f" (and {len(c.copies) - 1} copies)" if c.copies else ""
            lines += [f"  {c.object}{copies}: read by {', '.join(c.readers)}; names "
                      f"{', '.join((*c.stores, *c.services))}\n    fix: add to each reader's "
                      "kardinal.dev.service/dependencies the stores and services it really uses (a lane that gives it "
                      "a dev version otherwise reaches the baseline's stores: render and lint name them)"]
    if result.pending:
        lines += ["", "left for you:"] + [f"  {p}" for p in result.pending]
    if result.disagreements:
        lines += ["", "existing annotations kept (init never overwrites them):"]
        lines += [f"  {d.object} {d.key}: {d.existing!r}, inferred {d.inferred!r}"
                  + (f" ({d.evidence.text()})" if d.evidence else "") for d in result.disagreements]
    if result.notes:
        lines += ["", "notes:"] + [f"  {n}" for n in result.notes]
    lines.append("")
    if result.unchanged:
        lines.append("nothing to change: the repository already says everything init infers")
    elif result.mode == "dry-run":
        lines.append(f"dry run: {len(result.changed)} file(s) would change ({', '.join(result.changed)}); "
                     "apply with --write (annotations in the manifests) or --config (all in .devlane.yaml)")
    else:
        lines.append(f"wrote {len(result.changed)} file(s): {', '.join(result.changed)}")
    errors = [p for p in result.lint if p.severity == "error"]
    lines.append(f"lint: {tally(result.lint)}")
    lines += [f"  {'note' if p.severity == 'info' else p.severity}: {p.format()}" for p in result.lint]
    if errors:  # a render would stop on them: they come first
        lines += ["", "next: fix the lint errors above (devlane lint shows them again), then: " + result.next_command]
    else:
        lines += ["", "next: " + result.next_command]
    return "\n".join(lines) + "\n"
