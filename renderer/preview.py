"""`devlane preview`: the flow for a human, in a terminal (a tree) or as one self-contained HTML page.

Both views come from one `View` built from a real render: which services get a dev version and
why, the plugins acting on them, the entry URLs, the dependency edges and the rendered objects.
The HTML page draws the flow as an SVG computed here (layers by call depth from the entry), with
no scripts or resources from the network, so it works offline and in CI artifacts.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 190, 46, 70, 22, 20


@dataclass
class View:
    flow_id: str
    routing: str
    services: list[dict]  # name, version, kind, reasons
    edges: list[tuple[str, str]]  # caller -> callee
    plugins: list[dict]  # instance, plugin, runtime, dependents, reason
    entries: list[str]  # entry URLs
    files: dict[str, str] = field(default_factory=dict)  # flows/<id>/<file> -> YAML


def build_view(options, flow) -> View:
    from . import api

    result = api.render(options, flow)
    repo = api.open_repo(options, flow)
    plan = result.plan
    services = [{"name": d.name, "version": d.version, "kind": d.kind, "reasons": list(d.reasons)}
                for _, d in sorted(plan.decisions.items())]  # fmt: skip
    names = {s["name"] for s in services} | set(repo.model.services)
    edges = sorted((a, b) for a, node in repo.model.services.items() for b, _ in node.dependencies if b in names)
    plugins = []
    for inst in plan.instances:
        choice = next((r.choice for r in result.stage.results if r.servicename == inst.servicename), None)
        plugins.append({"instance": inst.servicename, "plugin": choice.name if choice else "",
                        "runtime": choice.manifest.runtime if choice else "", "dependents": list(inst.dependents),
                        "reason": choice.reason if choice else ""})  # fmt: skip
    entries = sorted(f"http://{h}/" for f in result.flows for e in f.metadata.get("entries") or []
                     for h in e.get("hosts") or [])  # fmt: skip
    files = {f"flows/{f.flow_id}/{n}": t for f in result.flows for n, t in sorted(f.files.items())}
    all_services = services + [{"name": n, "version": "baseline", "kind": "service", "reasons": ["not in the flow"]}
                               for n in sorted(set(repo.model.services) - {s["name"] for s in services})]
    return View(flow.id, plan.routing, all_services, edges, plugins, entries, files)


# --------------------------------------------------------------------------------------------------
# Terminal


def _roots(view: View) -> list[str]:
    called = {b for _, b in view.edges}
    return [s["name"] for s in view.services if s["name"] not in called]


def print_terminal(view: View, console) -> None:
    """A tree from the services nothing calls; readable without colour (NO_COLOR, pipes)."""
    from rich.tree import Tree

    by_name = {s["name"]: s for s in view.services}
    plugins_of: dict[str, list[dict]] = {}
    for p in view.plugins:
        for d in p["dependents"]:
            plugins_of.setdefault(d, []).append(p)
    children: dict[str, list[str]] = {}
    for a, b in view.edges:
        children.setdefault(a, []).append(b)
    style = {"dev": "bold green", "shared": "bold blue", "baseline": "dim"}

    def label(name: str) -> str:
        s = by_name.get(name, {"version": "baseline", "reasons": []})
        why = f" ({'; '.join(s['reasons'])})" if s["reasons"] else ""
        return f"[{style.get(s['version'], '')}]{name}[/] {s['version']}{why}"

    tree = Tree(f"flow [bold]{view.flow_id}[/] (routing {view.routing})")
    for url in view.entries:
        tree.add(f"entry {url}")

    def add(node: Tree, name: str, seen: frozenset) -> None:
        branch = node.add(label(name))
        for p in plugins_of.get(name, []):
            branch.add(f"plugin {p['instance']}: {p['plugin']} ({p['runtime']})")
        for child in sorted(children.get(name, [])):
            if child not in seen:
                add(branch, child, seen | {child})

    for root in _roots(view):
        add(tree, root, frozenset({root}))
    console.print(tree)


# --------------------------------------------------------------------------------------------------
# HTML


def _layers(view: View) -> list[list[str]]:
    """Each service at its longest call depth from a root, so callers sit left of callees."""
    depth = {n: 0 for n in _roots(view)}
    names = [s["name"] for s in view.services]
    for _ in range(len(names)):
        changed = False
        for a, b in view.edges:
            if a in depth and depth.get(b, -1) < depth[a] + 1 <= len(names):
                depth[b] = depth[a] + 1
                changed = True
        if not changed:
            break
    for n in names:
        depth.setdefault(n, 0)
    layers: dict[int, list[str]] = {}
    for n in names:
        layers.setdefault(depth[n], []).append(n)
    return [sorted(layers[k]) for k in sorted(layers)]


def svg(view: View) -> str:
    by_name = {s["name"]: s for s in view.services}
    layers = _layers(view)
    plugins_of: dict[str, list[str]] = {}
    for p in view.plugins:
        for d in p["dependents"]:
            plugins_of.setdefault(d, []).append(p["instance"])
    entry_w = NODE_W if view.entries else 0
    pos = {}
    for i, layer in enumerate(layers):
        for j, name in enumerate(layer):
            pos[name] = (PAD + entry_w + (GAP_X if entry_w else 0) + i * (NODE_W + GAP_X), PAD + j * (NODE_H + GAP_Y))
    width = PAD * 2 + entry_w + (GAP_X if entry_w else 0) + len(layers) * (NODE_W + GAP_X)
    height = PAD * 2 + max([len(layer) for layer in layers] + [1]) * (NODE_H + GAP_Y)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="flow" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="flow {html.escape(view.flow_id)}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>']  # fmt: skip
    for a, b in view.edges:
        if a in pos and b in pos:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            out.append(f'<line class="edge" data-from="{html.escape(a)}" data-to="{html.escape(b)}" x1="{x1 + NODE_W}" '
                       f'y1="{y1 + NODE_H // 2}" x2="{x2}" y2="{y2 + NODE_H // 2}" marker-end="url(#arrow)"/>')
    if view.entries:
        out.append(f'<g class="node entry" data-entry="{html.escape(view.entries[0])}"><rect x="{PAD}" y="{PAD}" '
                   f'width="{NODE_W}" height="{NODE_H}" rx="23"/><text x="{PAD + 10}" y="{PAD + 28}">'
                   f"{html.escape(view.entries[0].removeprefix('http://').rstrip('/'))}</text></g>")
        for root in _roots(view):
            if by_name[root]["version"] != "baseline" and root in pos:
                x, y = pos[root]
                out.append(f'<line class="edge" x1="{PAD + NODE_W}" y1="{PAD + NODE_H // 2}" x2="{x}" '
                           f'y2="{y + NODE_H // 2}" marker-end="url(#arrow)"/>')
    for name, (x, y) in sorted(pos.items()):
        version = by_name[name]["version"]
        title = html.escape("; ".join(by_name[name]["reasons"]))
        badge = ", ".join(plugins_of.get(name, []))
        out.append(f'<g class="node {version}" data-service="{html.escape(name)}"><title>{title}</title>'
                   f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
                   f'<text x="{x + 10}" y="{y + 20}">{html.escape(name)}</text>'
                   f'<text class="sub" x="{x + 10}" y="{y + 36}">{version}'
                   f"{html.escape(' · ' + badge) if badge else ''}</text></g>")
    out.append("</svg>")
    return "\n".join(out)


CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
pre{background:#f6f6f6;padding:8px;overflow:auto}
.node rect{stroke-width:1.5}.node text{font-size:13px}.node .sub{font-size:11px;fill:#444}
.dev rect{fill:#d1f7c4;stroke:#2d7a14}.baseline rect{fill:#eee;stroke:#999}.shared rect{fill:#dbe9ff;stroke:#2a5db0}
.entry rect{fill:#fff3c4;stroke:#b08a00}.edge{stroke:#555;stroke-width:1.2}
"""


def render_html(view: View) -> str:
    """One self-contained page: the picture, the plan table, the plugins and the rendered objects."""
    e = html.escape
    rows = "".join(f"<tr><td>{e(s['name'])}</td><td>{e(s['version'])}</td><td>{e('; '.join(s['reasons']))}</td>"
                   f"</tr>" for s in view.services)  # fmt: skip
    plugins = "".join(f"<tr><td>{e(p['instance'])}</td><td>{e(p['plugin'])}</td><td>{e(p['runtime'])}</td>"
                      f"<td>{e(', '.join(p['dependents']))}</td><td>{e(p['reason'])}</td></tr>"
                      for p in view.plugins)  # fmt: skip
    entries = "".join(f"<li>{e(u)}</li>" for u in view.entries)
    objects = "".join(f"<details><summary>{e(name)}</summary><pre>{e(text)}</pre></details>"
                      for name, text in view.files.items())  # fmt: skip
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>devlane flow {e(view.flow_id)}</title><style>{CSS}</style></head><body>\n"
            f"<h1>devlane flow <code>{e(view.flow_id)}</code></h1><p>routing {e(view.routing)}</p>\n"
            f"<h2>Entry</h2><ul>{entries}</ul>\n<h2>Flow</h2>\n{svg(view)}\n"
            f"<h2>Plan</h2><table><tr><th>service</th><th>version</th><th>why</th></tr>{rows}</table>\n"
            f"<h2>Plugins</h2><table><tr><th>instance</th><th>plugin</th><th>runtime</th><th>for</th><th>choice</th>"
            f"</tr>{plugins}</table>\n<h2>Rendered objects</h2>{objects}\n</body></html>\n")  # fmt: skip
