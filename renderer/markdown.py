"""The pull-request comment for `devlane diff -o markdown`.

It carries a hidden marker so CI updates one sticky comment per flow, tables first (what changed
per service, and the stateful / external dependencies with when they act), a Mermaid picture of
the flow, and the per-service diffs in collapsible blocks. GitHub refuses comments over 65,536
characters, so when the full comment is too long the diffs are dropped and the comment points at
the artifact instead; the tables and the picture always stay.
"""

from __future__ import annotations

import re

from .diff import FLOW_ROW, Report

MAX_COMMENT = 65_536
MAX_MERMAID_NODES = 60


def marker(flow_id: str) -> str:
    return f"<!-- devlane:flow={flow_id} -->"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _node(name: str) -> str:
    return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def mermaid(report: Report, entries: list[str], edges: list[tuple[str, str]]) -> str:
    """Dev versions vs baseline, the entry, and the plugins acting on each dev service."""
    rows = [r for r in report.services if r["service"] != FLOW_ROW]
    if len(rows) > MAX_MERMAID_NODES:
        rows = [r for r in rows if r["version"] != "baseline"][:MAX_MERMAID_NODES]
    shown = {r["service"] for r in rows}
    lines = ["```mermaid", "flowchart LR"]
    for e in entries:
        lines.append(f'  entry(["{e}"])')
    for r in rows:
        label = f"{r['service']}<br/>{r['version']}"
        lines.append(f'  {_node(r["service"])}["{label}"]:::{r["version"] or "baseline"}')
    for r in rows:
        for p in r["plugins"]:
            lines.append(f'  {_node("p_" + p)}{{{{"{p}"}}}} -.-> {_node(r["service"])}')
    for a, b in edges:
        if a in shown and b in shown:
            lines.append(f"  {_node(a)} --> {_node(b)}")
    if entries:  # the entry reaches the services nothing else shown calls
        called = {b for a, b in edges if a in shown and b in shown}
        for r in rows:
            if r["service"] not in called and not r["reasons"][0].startswith("external plugin"):
                lines.append(f"  entry --> {_node(r['service'])}")
    lines += ["  classDef dev fill:#d1f7c4,stroke:#2d7a14", "  classDef baseline fill:#eeeeee,stroke:#999999",
              "  classDef shared fill:#dbe9ff,stroke:#2a5db0", "```"]
    return "\n".join(lines)


def _tables(report: Report) -> list[str]:
    counts = report.counts()
    out = [marker(report.flow_id), f"## devlane flow `{report.flow_id}`: {report.base[:12]} → {report.head[:12]}", "",
           f"**{counts['added']} added, {counts['changed']} changed, {counts['removed']} removed** objects.", ""]
    out += [f"> {n}" for n in report.notes]
    if report.problems:
        out += ["", "**Plugins refuse these changes:**", ""] + [f"- {p.format()}" for p in report.problems]
    out += ["", "| service | change | objects +/~/- | plugins |", "|---|---|---|---|"]
    for r in report.services:
        why = f"{r['version']}: {'; '.join(r['reasons'])}" if r["version"] else "; ".join(r["reasons"])
        out.append(f"| {_cell(r['service'])} | {_cell(why)} | +{r['added']} ~{r['changed']} -{r['removed']} | "
                   f"{_cell(', '.join(r['plugins']) or '—')} |")
    if report.plugins:
        out += ["", "### Stateful and external dependencies", "", "| plugin | what it does | when |", "|---|---|---|"]
        for p in report.plugins:
            what = p["description"] or f"{p['plugin']} ({p['runtime']}) for {', '.join(p['dependents'])}"
            out.append(f"| {_cell(p['instance'])} | {_cell(what)} | {_cell(p['when'])} |")
    return out


def _diffs(report: Report) -> list[str]:
    out = []
    for svc in sorted({c.service for c in report.changes}):
        mine = [c for c in report.changes if c.service == svc]
        out += ["", f"<details><summary>{svc}: {len(mine)} object(s)</summary>", ""]
        for c in mine:
            fence = "````" if "```" in c.diff else "```"
            out += [f"**{c.status}** `{c.label}`", "", f"{fence}diff", c.diff.rstrip("\n"), fence, ""]
        out.append("</details>")
    return out


def render_markdown(report: Report, entries: list[str], edges: list[tuple[str, str]],
                    artifact: str | None = None) -> str:  # fmt: skip
    """The whole comment, or the tables + picture + a pointer to the artifact when over the cap."""
    head = [*_tables(report), "", "### Flow", "", mermaid(report, entries, edges)]
    full = "\n".join(head + _diffs(report)) + "\n"
    if len(full) <= MAX_COMMENT:
        return full
    pointer = artifact or "the `devlane-diff` artifact of this workflow run"
    short = "\n".join([*head, "", f"The per-object diffs are too long for a comment: see {pointer}."]) + "\n"
    if len(short) > MAX_COMMENT:  # even the tables are too long: keep the start, always with the marker
        short = short[: MAX_COMMENT - 200] + f"\n\n… truncated; the full report is in {pointer}.\n"
    return short
