"""The pull-request comment for `devlane diff -o markdown`.

It carries a hidden marker so CI updates one sticky comment per flow, tables first (what changed
per service, image changes, and the stateful / external dependencies with when they act), a
Mermaid picture of the flow, and the per-service diffs in collapsible blocks. GitHub refuses
comments over 65,536 characters, so when the full comment is too long the diffs are dropped and
the comment points at the artifact instead; the tables and the picture stay (and if even the
tables are too long, their rows are cut with a count of what was left out). The result never
exceeds the cap and always starts with the marker. On a mesh the comment says how requests find the
flow, and the picture labels each call the mesh sends to a dev version by the flow header.
"""

from __future__ import annotations

import re

from ..errors import Problem
from ..render.checks import footprint, reach
from . import mesh_reach
from .diff import FLOW_ROW, Report

MAX_COMMENT = 65_536
MAX_MERMAID_NODES = 60


def marker(flow_id: str) -> str:
    return f"<!-- devlane:flow={flow_id} -->"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _label(text: str) -> str:
    return str(text).replace('"', "#quot;")


def _node(name: str) -> str:
    return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def mermaid(
    report: Report, entries: list[str], edges: list[tuple[str, str]], max_nodes: int = MAX_MERMAID_NODES
) -> str:
    """The entry, dev versions vs the baseline services they call, and the plugins acting on each; on a mesh, the
    routing mode, the header the entry adds, and the calls the mesh routes to a dev version by it."""
    rows = [r for r in report.services if r["service"] != FLOW_ROW and r.get("kind") != "external"]
    changed = [r for r in rows if r["version"] != "baseline"] + [r for r in rows if r["version"] == "baseline"]
    shown = {r["service"]: r["version"] for r in changed[:max_nodes]}
    core = set(shown)
    for a, b in sorted(edges):  # baseline neighbours of what the flow changes, for context
        for near, far in ((a, b), (b, a)):
            if (
                near in core
                and far not in shown
                and report.versions.get(far, "baseline") == "baseline"
                and len(shown) < max_nodes
            ):
                shown[far] = "baseline"
    hidden = len(changed) - sum(1 for r in changed if r["service"] in shown)
    plugins = {r["service"]: r["plugins"] for r in rows}
    record = report.mesh
    header = _label(mesh_reach.header(record)) if record else ""
    lines = ["```mermaid", "flowchart LR"]
    if record:
        lines.append(f'  routing>"{_mesh_note(record)}"]')
    for e in entries:
        lines.append(f'  entry(["{_label(e)}{f"<br/>adds {header}" if header else ""}"])')
    for name in sorted(shown):
        version = shown[name]
        lines.append(f'  {_node(name)}["{_label(name)}<br/>{version}"]:::{version or "baseline"}')
    for name in sorted(shown):
        for p in plugins.get(name, []):
            lines.append(f'  {_node("p_" + p)}{{{{"{_label(p)}"}}}}:::plugin -.-> {_node(name)}')
    by_header = set(report.by_header) if record else set()
    for a, b in sorted(edges):
        if a in shown and b in shown:
            arrow = f'-->|"{header}"|' if b in by_header else "-->"  # the mesh picks b's dev version by it
            lines.append(f"  {_node(a)} {arrow} {_node(b)}")
    called = {b for a, b in edges if a in shown and b in shown}
    if entries and record:  # the entry's own backends, and (dotted: through services not shown) the other roots
        for name in sorted(shown):
            if name in report.entry_backends or name not in called:
                lines.append(f"  entry {'-->' if name in report.entry_backends else '-.->'} {_node(name)}")
    elif entries:  # the entry reaches the shown dev services nothing else shown calls
        for name in sorted(shown):
            if name not in called and shown[name] != "baseline":
                lines.append(f"  entry --> {_node(name)}")
    if hidden:
        lines.append(f'  more["… {hidden} more service(s), see the table"]')
    lines += ["  classDef dev fill:#d1f7c4,stroke:#2d7a14", "  classDef baseline fill:#eeeeee,stroke:#999999",
              "  classDef shared fill:#dbe9ff,stroke:#2a5db0", "  classDef plugin fill:#fff4d6,stroke:#b58900",
              "```"]
    return "\n".join(lines)


def _mesh_note(record: dict) -> str:
    """The picture's note on a mesh: the mode and the header that selects the flow (istio: where its routes are)."""
    text = mesh_reach.summary(record) + (f"; {mesh_reach.shared_note()}" if record["mode"] == "istio" else "")
    return _label(text.replace(": ", ":<br/>", 1).replace("; ", ";<br/>"))


def _mesh_line(report: Report) -> list[str]:
    """The comment's routing line on a mesh (none on routing `none`)."""
    record = report.mesh
    if not record:
        return []

    def code(text: str) -> str:
        return f"`{text}`"

    line = mesh_reach.capital(mesh_reach.summary(record, code)) + "."
    if report.by_header:
        line += " Reached by header: " + ", ".join(map(code, report.by_header)) + "."
    if record["mode"] == "istio":
        line += f" {mesh_reach.capital(mesh_reach.shared_note(code))}."
    hops = mesh_reach.unpropagated(record)
    if hops:  # each service that must forward the header, with no sign that it does
        return ["", line, "", "**Header propagation: no sign these services forward the header**", "",
                *(f"- {h}" for h in hops)]
    return ["", line]


def _cut(rows: list[str], limit: int | None, what: str) -> list[str]:
    if limit is None or len(rows) <= limit:
        return rows
    return [*rows[:limit], f"| … {len(rows) - limit} more {what} in the artifact | | | |"]


def _footprint_table(report: Report) -> list[str]:
    """The lane's footprint at head, one short table (the artifact's flow.metadata holds every object)."""
    if not report.footprint:
        return []
    rows = footprint.summary(report.footprint, report.lifecycle)
    return ["", "| Footprint | |", "|---|---|", *(f"| {what} | {_cell(value)} |" for what, value in rows)]


def _reach_block(records: list[dict]) -> list[str]:
    """Isolation: each piece of state outside the lane its dev pods can still use, with the fix."""
    if not records:
        return []
    out = ["", "**Isolation: the lane reaches state outside it**" if any(r["class"] != "shared" for r in records)
           else "**Isolation:** the lane reaches only stores marked shared", ""]
    for r in records:
        fix = f" Fix: {_cell(r['fix'])}" if r["class"] != "shared" else ""
        out.append(f"- {_cell(reach.line(r))}.{fix}")
    return out


ORIGINS = {"template": "built by CI (--image-template)", "committed": "committed (not built by CI)",
           "given": "given (--service)", "not-built": "no target (not built by CI)"}


def _heading(report: Report) -> str:
    return f"## devlane flow `{report.flow_id}`: {_shown_ref(report.base)} → {_shown_ref(report.head)}"


def _shown_ref(ref: str) -> str:
    """A ref as the heading shows it: a commit id short, a name (and what follows it) whole."""
    return ref[:12] if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref) else ref


def _targets_table(report: Report) -> list[str]:
    """Each target and the image its dev copy runs: never cut, it is what a reviewer checks first."""
    if not report.target_images:
        return []
    rows = [f"| {_cell(t['service'])} | {_cell(t['image'] or '—')} | {ORIGINS.get(t['origin'], t['origin'])} | "
            f"{_cell(t['reason'])} |" for t in report.target_images]
    return ["", "### Targets", "", "| target | image | from | why |", "|---|---|---|---|", *rows]


def no_lane(report: Report) -> str:
    """The comment of a pull request that changes no service (`--services auto`): no lane, and why."""
    out = [marker(report.flow_id), _heading(report), "", "**No service changed: no lane.**", ""]
    out += [f"> {n}" for n in report.notes]
    return "\n".join([*out, *_targets_table(report)]) + "\n"


def failure(flow_id: str, base: str, head: str, problems: list[Problem], artifact: str | None = None,
            cap: int = MAX_COMMENT) -> str:
    """The comment when the flow does not render: it replaces the last one (never left green), saying why."""
    where = f" The full log is in {artifact}." if artifact else ""
    out = [marker(flow_id), f"## devlane flow `{flow_id}`: ❌ could not render at {_shown_ref(head)}", "",
           f"Compared with {_shown_ref(base)}. Fix the errors below and push again.{where}", "", "```"]
    body = "\n".join(p.format() for p in problems) or "(no message)"
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", body)), default=0))
    out[-1] = fence
    text = "\n".join(out) + "\n"
    room = cap - len(text) - len(fence) - 40
    if len(body) > room:
        body = body[:max(0, room)] + "\n… truncated"
    return f"{text}{body}\n{fence}\n"


def _tables(report: Report, limit: int | None = None) -> list[str]:
    counts = report.counts()
    out = [
        marker(report.flow_id),
        _heading(report),
        "",
        f"**{counts['added']} added, {counts['changed']} changed, {counts['removed']} removed** objects.",
        "",
    ]
    out += [f"> {n}" for n in report.notes]
    out += _targets_table(report)
    lane = report.isolation
    if lane:
        out += ["", "Isolation **namespace**: " + ", ".join(f"`{b}` → `{f}`" for b, f in lane["namespaces"].items())
                + f"; {len(lane['aliases'])} alias(es) to the baseline."]
        if lane["needs"]:
            out += ["", "**The lane still needs:**", ""] + [f"- {_cell(n)}" for n in lane["needs"]]
    out += _mesh_line(report)
    out += _footprint_table(report)
    out += _reach_block(report.reach)
    if report.problems:
        out += ["", "**Plugins refuse these changes:**", ""] + [f"- {_cell(p.format())}" for p in report.problems]
    out += ["", "| service | change | objects +/~/- | plugins |", "|---|---|---|---|"]
    rows = []
    for r in report.services:
        why = f"{r['version']}: {'; '.join(r['reasons'])}" if r["version"] else "; ".join(r["reasons"])
        rows.append(
            f"| {_cell(r['service'])} | {_cell(why)} | +{r['added']} ~{r['changed']} -{r['removed']} | "
            f"{_cell(', '.join(r['plugins']) or '—')} |"
        )
    out += _cut(rows, limit, "services")
    if report.images:
        out += ["", "### Images", "", "| object | container | base | head |", "|---|---|---|---|"]
        out += _cut([f"| {_cell(i['object'])} | {_cell(i['container'])} | {_cell(i['base'] or '—')} | "
                     f"{_cell(i['head'] or '—')} |" for i in report.images], limit, "images")
    if report.plugins:
        out += [
            "",
            "### Stateful and external dependencies",
            "",
            "| plugin | type | what it does | when | status |",
            "|---|---|---|---|---|",
        ]
        rows = []
        for p in report.plugins:
            what = p["description"] or f"{p['plugin']} ({p['runtime']}) for {', '.join(p['dependents'])}"
            rows.append(
                f"| {_cell(p['instance'])} | {p['type']} | {_cell(what)} | {_cell(p['when'])} | {p['status']} |"
            )
        out += _cut(rows, limit, "plugins")
    return out


def _diffs(report: Report) -> list[str]:
    out = []
    by_service: dict[str, list] = {}
    for c in report.changes:
        by_service.setdefault(c.service, []).append(c)
    for svc, mine in sorted(by_service.items()):
        out += ["", f"<details><summary>{svc}: {len(mine)} object(s)</summary>", ""]
        for c in mine:
            fence = "`" * max(3, max((len(m) for m in re.findall(r"`{3,}", c.diff)), default=0) + 1)
            out += [f"**{c.status}** `{c.label}` ({c.file})", "", f"{fence}diff", c.diff.rstrip("\n"), fence, ""]
        out.append("</details>")
    return out


def render_markdown(report: Report, entries: list[str], edges: list[tuple[str, str]],
                    artifact: str | None = None, cap: int = MAX_COMMENT) -> str:
    """The whole comment, or the tables + picture + a pointer to the artifact when over the cap."""
    if not report.lane:
        return no_lane(report)

    def picture(nodes: int = MAX_MERMAID_NODES) -> list[str]:
        return ["", "### Flow", "", mermaid(report, entries, edges, nodes)]

    footer = ["", "_Rendered offline by devlane from both refs (no cluster); "
                  "the full manifests and JSON report are in the workflow artifact._"]
    full = "\n".join([*_tables(report), *picture(), *_diffs(report), *footer]) + "\n"
    if len(full) <= cap:
        return full
    pointer = artifact or "the `devlane-diff` artifact of this workflow run"
    note = ["", f"The per-object diffs are too long for a comment ({len(full):,} characters): see {pointer}."]

    def short(limit: int | None, nodes: int = MAX_MERMAID_NODES) -> str:
        return "\n".join([*_tables(report, limit), *picture(nodes), *note]) + "\n"

    body = short(None)
    if len(body) <= cap:
        return body
    rows = _most(lambda n: len(short(n)) <= cap, max(len(report.services), len(report.images), len(report.plugins)))
    if rows >= 0:  # the tables cut to the most rows that fit, with the whole picture
        return short(rows)
    nodes = _most(lambda n: len(short(0, n)) <= cap, MAX_MERMAID_NODES)
    if nodes >= 0:  # a tiny cap: a smaller picture too
        return short(0, nodes)
    body = short(0, 0)  # not even the headings fit (huge notes or problems): keep the marker and the pointer
    tail = f"\n… truncated; the full report is in {pointer}.\n"
    body = body[: cap - len(tail) - 4].rsplit("\n", 1)[0]
    if body.count("```") % 2:
        body += "\n```"
    return body + tail


def _most(fits, upper: int) -> int:
    """The largest n in 0..upper with fits(n) (fits is monotone), or -1."""
    if not fits(0):
        return -1
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo
