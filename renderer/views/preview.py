"""`devlane preview`: the flow for a human, in a terminal (a tree) or as one self-contained HTML page.

Both views come from one `View` built from a real render: which services get a dev version and
why, the plugins acting on them, the entry URLs, the dependency edges and the rendered objects.
The HTML page draws the flow as an SVG computed here (layers by call depth from the entries), with
no scripts or resources from the network, so it works offline and in CI artifacts. On a mesh both
also say how requests find the flow (the header its entry adds) and which dev versions the mesh
reaches by that header rather than through rewritten references; routing `none` shows none of it.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field

from ..api import RenderResult
from ..render.checks import footprint, reach
from ..render.model.records import Model
from ..render.output.emit import RenderedFlow
from ..render.plan.neighbourhood import neighbours
from ..render.plugins.calls import InstanceResult
from ..render.settings.isolation import Lane
from . import mesh_reach
from .diff import masked_file

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 200, 50, 80, 24, 20
ENTRY = "entry:"  # prefix of entry node ids in the layout (never a Service name: ':' is not DNS-1123)


@dataclass(frozen=True)
class View:
    flow_id: str
    routing: str
    services: list[dict]  # name, version, kind, reasons, reach (mesh: header | rewrite, see mesh_reach.reach)
    edges: list[tuple[str, str, str]]  # caller -> callee, with the kind (http, tcp, external, ...)
    plugins: list[dict]  # instance, flow_uuid, plugin, runtime, reason, status, dependents, actions
    entries: list[dict]  # kind, name, urls, backends; mesh: adds (the header), as (the routes it became)
    files: dict[str, str] = field(default_factory=dict)  # flows/<id>/<file> -> YAML
    isolation: dict | None = None  # isolation namespace: flow namespaces, aliases, what the lane still needs
    mesh: dict | None = None  # mesh routing: flow.metadata's record (mode, header, member, match, istio hosts)
    reach: list[dict] = field(default_factory=list)  # flow.metadata's reach: state outside the lane its pods use
    footprint: list[tuple[str, str]] = field(default_factory=list)  # `footprint.summary` of flow.metadata
    hidden: int = 0  # baseline services left out: more than one hop from the lane (`--all` shows them)
    footprint_record: dict | None = None  # flow.metadata's footprint, as `plan -o json` gives it

    @property
    def urls(self) -> list[str]:
        return [u for e in self.entries for u in e["urls"]]


def _entries(model: Model, flow: RenderedFlow, lane: Lane, record: dict | None) -> list[dict]:
    """Each rendered entry with its URLs (https when its TLS section covers the host) and its backends; on a mesh,
    the header it adds and the routes on `mesh.gateway` an Ingress or Service entry became."""
    rendered = {(o.get("kind"), (o.get("metadata") or {}).get("name")): o for o in flow.objects}
    out = []
    for e in sorted(model.entries, key=lambda e: (e.kind, e.doc.name)):
        if e.kind == "Gateway":  # shared by every flow: no per-flow host
            continue
        kind = "Ingress" if e.kind == "Service" else e.kind  # a legacy entry Service becomes an Ingress
        objs = [rendered.get((kind, lane.name(e.doc.name, flow.flow_id))) or {}]
        if record and e.kind in ("Ingress", "Service"):
            objs = _gateway_routes(rendered, lane, e.doc.name, flow.flow_id)
        hosts = sorted(set().union(*map(_hosts, objs)))
        tls = {h for o in objs for t in (o.get("spec") or {}).get("tls") or [] for h in t.get("hosts") or []}
        urls = [f"{'https' if h in tls else 'http'}://{h}/" for h in hosts]
        made = [o for o in objs if o] if record else []  # on a mesh every rendered entry adds the flow's member
        out.append({"kind": e.kind, "name": e.doc.name, "urls": urls, "backends": list(e.backends),
                    "adds": mesh_reach.header(record) if record and made else "",
                    "as": [f"{o['kind']}/{o['metadata']['name']}" for o in made if o["kind"] != e.kind]})
    return out


def _hosts(obj: dict) -> set[str]:
    """The hosts a rendered entry serves: an Ingress's rules, an HTTPRoute's hostnames, a VirtualService's hosts."""
    spec = obj.get("spec") or {}
    hosts = {r["host"] for r in spec.get("rules") or [] if r.get("host")} | set(spec.get("hostnames") or [])
    return hosts | set(spec.get("hosts") or []) if obj.get("kind") == "VirtualService" else hosts


def _gateway_routes(rendered: dict[tuple, dict], lane: Lane, name: str, flow_id: str) -> list[dict]:
    """On a mesh, the routes an Ingress or Service entry became on `mesh.gateway`: one named after it, or one per
    flow host numbered from 1 (an HTTPRoute, or an istio VirtualService)."""
    def found(base: str) -> dict | None:
        return next((rendered[k, n] for k in ("HTTPRoute", "VirtualService")
                     if (k, n := lane.name(base, flow_id)) in rendered), None)

    first = found(name)
    if first is not None:
        return [first]
    out = []
    while (route := found(f"{name}-{len(out) + 1}")) is not None:
        out.append(route)
    return out


def _actions(result: InstanceResult, capabilities: tuple) -> list[str]:
    """What a plugin instance does for this flow, in words."""
    done = {"ok": "ran create_flow", "replayed": "replayed the provision record of create_flow",
            "provisioned": "ran create_flow (provisioned)", "bypassed": "bypassed"}
    acts = [f"{done.get(result.status, result.status)} as {result.flow_uuid} for {', '.join(result.dependents)}"]
    if result.resources:
        kinds = ", ".join(f"{o.get('kind')}/{(o.get('metadata') or {}).get('name')}" for o in result.resources)
        acts.append(f"adds {kinds}")
    if isinstance(result.config_map, dict) and result.config_map:
        acts.append(f"keeps state {', '.join(sorted(map(str, result.config_map)))}")
    if "DeleteFlow" in capabilities:
        acts.append("runs delete_flow when the flow is deleted")
    return acts


def build_view(result: RenderResult, everything: bool = False) -> View:
    """The view of the lane: its services, the baseline services one hop from it (each with why) and the flow's
    entries; the rest counted in `hidden`, or shown too with `everything`."""
    model, plan, main = result.model, result.plan, result.main
    record = main.metadata.get("mesh")
    near = neighbours(model, plan.lane())
    entries = _entries(model, main, result.dev.lane, record)
    wanted = {*plan.lane(), *near, *(b for e in entries for b in e["backends"])}
    services = [{"name": d.name, "version": d.version, "kind": d.kind,
                 "reasons": [near[n].why(d.reasons)] if n in near and d.version == "baseline" else list(d.reasons),
                 "reach": mesh_reach.reach(n, d.version, d.kind, result.dev.by_header) if record else ""}
                for n, d in sorted(plan.decisions.items()) if everything or n in wanted]
    services += [{"name": n, "version": "baseline", "kind": "service", "reasons": ["not in the flow"], "reach": ""}
                 for n in sorted(set(model.services) - set(plan.decisions)) if everything or n in wanted]
    names = {s["name"] for s in services}
    hidden = len(set(model.services) | set(plan.decisions)) - len(names)
    edges = sorted({(a, b, t) for a, node in model.services.items() for b, t in node.dependencies if b in names}
                   | {(a, b, "external") for a in model.services for b in model.edges(a)
                      if b in names and b not in model.services})
    results = {r.servicename: r for r in result.plugins.results if r.flow_id == plan.flow_id}
    plugins = []
    for inst in plan.instances:
        r = results.get(inst.servicename)
        choice = r.choice if r else None
        plugins.append({
            "instance": inst.servicename, "flow_uuid": r.flow_uuid if r else "",
            "plugin": choice.name if choice else "", "runtime": choice.manifest.runtime if choice else "",
            "reason": choice.reason if choice else "", "status": r.status if r else "not run",
            "dependents": list(inst.dependents),
            "actions": _actions(r, choice.manifest.capabilities if choice else ()) if r else [],
        })
    shared = [result.mesh] if result.mesh else []  # istio: flows/_mesh/ with this flow's rules alone
    files = {f"flows/{f.flow_id}/{n}": masked_file(t) for f in [*result.flows, *shared]
             for n, t in sorted(f.files.items())}  # as `diff` shows them: no Secret value, no password of a URL
    lane = main.metadata.get("isolation")
    if lane and not everything:  # the aliases of the services shown; the rest counted
        shown = [a for a in lane["aliases"] if alias_of(a) in names]
        lane = {**lane, "aliases": shown, "aliasesHidden": len(lane["aliases"]) - len(shown)}
    return View(plan.flow_id, plan.routing, services, edges, plugins, entries, files, lane, record,
                main.metadata.get("reach") or [],
                footprint.summary(main.metadata["footprint"], main.metadata.get("lifecycle"))
                if main.metadata.get("footprint") else [], hidden, main.metadata.get("footprint"))


def view_dict(view: View) -> dict:
    """The view as data (`preview -o json|yaml`): the lane, its neighbours, edges, plugins, entries, what it reaches
    and costs, and the rendered files by name (their text is `render`'s output)."""
    return {"flow": view.flow_id, "routing": view.routing, "services": view.services,
            "edges": [{"from": a, "to": b, "kind": k} for a, b, k in view.edges], "plugins": view.plugins,
            "entries": view.entries, "files": sorted(view.files), "isolation": view.isolation, "mesh": view.mesh,
            "reach": view.reach, "footprint": view.footprint_record, "hiddenServices": view.hidden}


def alias_of(line: str) -> str:
    """The baseline Service an alias line (`ns-pr-1/name -> name.ns.svc...`) stands for, by node name."""
    return line.split(" -> ", 1)[0].rsplit("/", 1)[-1]


def _entry_note(entry: dict) -> str:
    """On a mesh, what an entry does besides routing, as ` (...)` to append: the routes it became, the header it
    adds; empty otherwise."""
    parts = [*([f"as {', '.join(entry['as'])}"] if entry.get("as") else []),
             *([f"adds {entry['adds']}"] if entry.get("adds") else [])]
    return f" ({', '.join(parts)})" if parts else ""


def _children(view: View) -> dict[str, list[str]]:
    children: dict[str, list[str]] = {}
    for a, b, _ in view.edges:
        children.setdefault(a, []).append(b)
    for e in view.entries:
        children[ENTRY + e["name"]] = list(e["backends"])
    return {k: sorted(set(v)) for k, v in children.items()}


def _roots(view: View) -> list[str]:
    """Layout roots: the entries, then services no entry reaches and nothing calls."""
    called = {b for _, b, _ in view.edges} | {b for e in view.entries for b in e["backends"]}
    return [ENTRY + e["name"] for e in view.entries] + [s["name"] for s in view.services if s["name"] not in called]


# --------------------------------------------------------------------------------------------------
# Terminal


def console(file=None):
    """A rich Console that writes plain text (no ANSI codes) when not a terminal, and does not wrap a
    pipe at 80 columns (COLUMNS still wins)."""
    from rich.console import Console

    probe = Console(file=file, highlight=False)
    if probe.is_terminal or "COLUMNS" in os.environ:
        return probe
    return Console(file=file, highlight=False, width=200)


def print_terminal(view: View, out) -> None:
    """The flow as a tree from its entries; versions and reasons in words, so colour is only a help."""
    from rich.markup import escape
    from rich.tree import Tree

    by_name = {s["name"]: s for s in view.services}
    plugins_of: dict[str, list[dict]] = {}
    for p in view.plugins:
        for d in p["dependents"]:
            plugins_of.setdefault(d, []).append(p)
    children = _children(view)
    style = {"dev": "bold green", "shared": "bold blue", "baseline": "dim"}

    def label(name: str) -> str:
        s = by_name.get(name, {"version": "baseline", "kind": "service", "reasons": []})
        kind = ", external service" if s["kind"] == "external" else ""
        reach = f", {mesh_reach.REACH[s['reach']]}" if s.get("reach") else ""
        why = f" ({escape('; '.join(s['reasons']))})" if s["reasons"] else ""
        return f"[{style.get(s['version'], 'bold')}]{escape(name)}[/] {escape(s['version'])}{kind}{reach}{why}"

    lane = view.isolation
    tree = Tree(f"flow [bold]{escape(view.flow_id)}[/] (routing {escape(view.routing)}"
                + (", isolation namespace" if lane else "") + ")")
    if lane:
        node = tree.add("namespaces " + escape(", ".join(f"{b} -> {f}" for b, f in lane["namespaces"].items())))
        for alias in lane["aliases"]:
            node.add(f"alias {escape(alias)}")
        if lane.get("aliasesHidden"):
            node.add(f"[dim]... and {lane['aliasesHidden']} more aliases, of services the lane does not touch[/]")
        for need in lane["needs"]:
            node.add(f"[yellow]needs[/] {escape(need)}")
    if view.reach:
        node = tree.add("[yellow]reach beyond the lane[/]")
        for r in view.reach:
            node.add(("" if r["class"] == "shared" else "[yellow]") + escape(reach.line(r))
                     + ("" if r["class"] == "shared" else "[/]"))
    if view.mesh:
        node = tree.add(escape(mesh_reach.summary(view.mesh)))
        hosts = mesh_reach.hosts(view.mesh)
        if hosts:
            shared = node.add(escape(mesh_reach.shared_note()))
            for host in hosts:
                shared.add(escape(host))
        for hop in mesh_reach.unpropagated(view.mesh):
            node.add(f"[yellow]no sign it forwards the header:[/] {escape(hop)}")

    expanded: set[str] = set()  # each service's calls are shown once: the tree never unrolls a shared callee

    def add(node, name: str) -> None:
        """`name` and what it calls under `node`; a service already shown is a one-line reference (`... above`),
        so the tree has one line per node and edge however the graph is shaped; an explicit stack, so a
        dependency chain of any length is fine."""
        stack = [(node, name)]
        while stack:
            parent, current = stack.pop()
            if current in expanded:
                parent.add(f"{escape(current)} [dim](above)[/]")
                continue
            expanded.add(current)
            branch = parent.add(label(current))
            for p in plugins_of.get(current, []):
                leaf = branch.add(f"plugin {escape(p['instance'])}: {escape(p['plugin'])} ({escape(p['runtime'])})")
                for act in p["actions"]:
                    leaf.add(escape(act))
            stack.extend((branch, child) for child in reversed(children.get(current, [])))

    for root in _roots(view):
        if root.startswith(ENTRY):
            e = next(e for e in view.entries if ENTRY + e["name"] == root)
            line, note = f"entry {escape(e['kind'])}/{escape(e['name'])} {escape(' '.join(e['urls']))}", _entry_note(e)
            node = tree.add(line.rstrip() + escape(note) if note else line)  # routing none: the line as it always was
            for child in children.get(root, []):
                add(node, child)
        else:
            add(tree, root)
    if view.hidden:
        tree.add(f"[dim]... and {view.hidden} other baseline service{'s' if view.hidden != 1 else ''} the lane does "
                 "not touch (--all shows them)[/]")
    if view.footprint:  # last: the tree above is the flow, this what it costs
        node = tree.add("footprint")
        for what, value in view.footprint:
            node.add(f"{escape(what)}: {escape(value)}")
    out.print(tree)


# --------------------------------------------------------------------------------------------------
# HTML


def _layers(view: View) -> list[list[str]]:
    """Each node at its longest call depth from a root, so callers sit left of callees (cycles stop)."""
    children = _children(view)
    nodes = [ENTRY + e["name"] for e in view.entries] + [s["name"] for s in view.services]
    depth = {n: 0 for n in _roots(view)}
    for _ in range(len(nodes)):
        changed = False
        for a in sorted(children):
            for b in children[a]:
                if a in depth and b in nodes and depth.get(b, -1) < depth[a] + 1 <= len(nodes):
                    depth[b] = depth[a] + 1
                    changed = True
        if not changed:
            break
    layers: dict[int, list[str]] = {}
    for n in nodes:
        layers.setdefault(depth.get(n, 0), []).append(n)
    return [sorted(layers[k]) for k in sorted(layers)]


def svg(view: View) -> str:
    e = html.escape
    by_name = {s["name"]: s for s in view.services}
    entries = {ENTRY + x["name"]: x for x in view.entries}
    layers = _layers(view)
    plugins_of: dict[str, list[str]] = {}
    for p in view.plugins:
        for d in p["dependents"]:
            plugins_of.setdefault(d, []).append(p["instance"])
    pos = {n: (PAD + i * (NODE_W + GAP_X), PAD + j * (NODE_H + GAP_Y))
           for i, layer in enumerate(layers) for j, n in enumerate(layer)}
    width = PAD * 2 + len(layers) * (NODE_W + GAP_X) - GAP_X
    height = PAD * 2 + max([len(layer) for layer in layers] + [1]) * (NODE_H + GAP_Y) - GAP_Y
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="flow" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="flow {e(view.flow_id)}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>']
    kinds = {(a, b): t for a, b, t in view.edges}
    header = mesh_reach.header(view.mesh) if view.mesh else ""
    for a, targets in sorted(_children(view).items()):
        for b in targets:
            if a in pos and b in pos:
                (x1, y1), (x2, y2) = pos[a], pos[b]
                kind = title = kinds.get((a, b), "entry")
                if header and by_name.get(b, {}).get("reach") == "header":  # the mesh picks b's dev version
                    kind, title = f"{kind} header", f"{kind}, {header}"
                out.append(
                    f'<line class="edge {e(kind)}" data-from="{e(a.removeprefix(ENTRY))}" data-to="{e(b)}" '
                    f'x1="{x1 + NODE_W}" y1="{y1 + NODE_H // 2}" x2="{x2}" y2="{y2 + NODE_H // 2}" '
                    f'marker-end="url(#arrow)"><title>{e(title)}</title></line>'
                )
    for name, (x, y) in sorted(pos.items()):
        if name in entries:
            entry = entries[name]
            shown = entry["urls"][0].split("://", 1)[1].rstrip("/") if entry["urls"] else "(no host)"
            shown = shown if len(shown) <= 30 else shown[:29] + "…"
            adds = f' data-adds="{e(entry["adds"])}"' if entry.get("adds") else ""
            out.append(
                f'<g class="node entry" data-entry="{e(entry["name"])}"{adds}><title>{e(" ".join(entry["urls"]))}'
                f'{e(_entry_note(entry))}</title><rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="24"/>'
                f'<text x="{x + 12}" y="{y + 21}">entry {e(entry["kind"])}/{e(entry["name"])}</text>'
                f'<text class="sub" x="{x + 12}" y="{y + 38}">{e(shown)}</text></g>'
            )
            continue
        s = by_name[name]
        external = ' data-kind="external"' if s["kind"] == "external" else ""
        reach = mesh_reach.REACH.get(s.get("reach", ""), "")  # in words; the attribute keeps the key for styles
        marked = f' data-reach="{e(s["reach"])}"' if reach else ""
        out.append(
            f'<g class="node {e(s["version"])}" data-service="{e(name)}"{external}{marked}>'
            f"<title>{e(name)}: {e(s['version'] + (f', {reach}' if reach else ''))} ({e('; '.join(s['reasons']))})"
            f'</title><rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="{14 if external else 6}"/>'
            f'<text x="{x + 12}" y="{y + 21}">{e(name)}</text>'
            f'<text class="sub" x="{x + 12}" y="{y + 38}">{e(s["version"])}{" · external" if external else ""}'
            f"{e(f' · {reach}' if reach else '')}</text>"
        )
        bx = x + NODE_W - 8
        for instance in reversed(plugins_of.get(name, [])):  # badges right-aligned on the top edge
            w = 14 + 7 * len(instance)
            bx -= w
            out.append(
                f'<g class="plugin" data-plugin="{e(instance)}"><rect x="{bx}" y="{y - 9}" width="{w}" '
                f'height="18" rx="9"/><text x="{bx + 7}" y="{y + 4}">{e(instance)}</text></g>'
            )
            bx -= 4
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:12px 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
pre{background:#f6f6f6;padding:8px;overflow:auto}svg{max-width:100%;height:auto;overflow:visible}
.node rect{stroke-width:1.5}.node text{font-size:13px}.node .sub{font-size:11px;fill:#444}
.dev>rect{fill:#d1f7c4;stroke:#2d7a14}.baseline>rect{fill:#eee;stroke:#999;stroke-dasharray:4 3}
.shared>rect{fill:#dbe9ff;stroke:#2a5db0}.entry>rect{fill:#fff3c4;stroke:#b08a00}
.plugin rect{fill:#6b3fa0;stroke:none}.plugin text{fill:#fff;font-size:11px}
.edge{stroke:#555;stroke-width:1.2}.edge.external{stroke-dasharray:5 3}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1.5px solid}
"""

LEGEND = ('<p class="legend"><span style="background:#d1f7c4;border-color:#2d7a14">dev</span>'
          '<span style="background:#eee;border-color:#999;border-style:dashed">baseline</span>'
          '<span style="background:#dbe9ff;border-color:#2a5db0">shared</span>'
          '<span style="background:#fff3c4;border-color:#b08a00">entry</span>'
          '<span style="background:#6b3fa0;border-color:#6b3fa0;color:#fff">plugin</span></p>')

# on a mesh only: the edges and dev versions the mesh reaches by the flow header
MESH_CSS = ".edge.header{stroke:#2d7a14;stroke-width:2.4}[data-reach=header]>rect{stroke-width:3}\n"
MESH_LEGEND = '<span style="border-color:#2d7a14;border-width:3px">by header: {}</span>'  # the header, escaped


def render_html(view: View) -> str:
    """One self-contained page: the picture, the plan table, the plugins and the rendered objects."""
    e = html.escape
    rows = "".join(f"<tr><td>{e(s['name'])}</td><td>{e(s['version'])}{' (external)' * (s['kind'] == 'external')}"
                   f"{e(', ' + mesh_reach.REACH[s['reach']]) if s.get('reach') else ''}"
                   f"</td><td>{e('; '.join(s['reasons']))}</td></tr>" for s in view.services)
    if view.hidden:
        rows += (f"<tr><td colspan=\"3\">... and {view.hidden} other baseline service{'s' * (view.hidden != 1)} the "
                 "lane does not touch (<code>devlane preview --all</code> shows them)</td></tr>")
    plugins = "".join(f"<tr><td>{e(p['instance'])}</td><td>{e(p['plugin'])}</td><td>{e(p['runtime'])}</td>"
                      f"<td>{e(', '.join(p['dependents']))}</td><td>{e(p['reason'])}</td>"
                      f"<td>{'<br>'.join(e(a) for a in p['actions'])}</td></tr>" for p in view.plugins)
    entries = "".join(f"<li>{e(x['kind'])}/{e(x['name'])}{e(_entry_note(x))} → {e(', '.join(x['backends']))}: "
                      + ", ".join(f'<a href="{e(u)}">{e(u)}</a>' for u in x["urls"]) + "</li>"
                      for x in view.entries)
    objects = "".join(f"<details><summary>{e(name)}</summary><pre>{e(text)}</pre></details>"
                      for name, text in view.files.items())
    css, legend = CSS, LEGEND
    if view.mesh:
        reach = MESH_LEGEND.format(e(mesh_reach.header(view.mesh)))
        css, legend = CSS + MESH_CSS, LEGEND.replace("</p>", reach + "</p>")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>devlane flow {e(view.flow_id)}</title><style>{css}</style></head><body>\n"
            f"<h1>devlane flow <code>{e(view.flow_id)}</code></h1><p>routing {e(view.routing)}</p>\n"
            f"{_mesh_html(view.mesh)}{_isolation_html(view.isolation)}{_footprint_html(view.footprint)}{_reach_html(view.reach)}"
            f"<h2>Entry</h2><ul>{entries}</ul>\n<h2>Flow</h2>\n{legend}\n{svg(view)}\n"
            f"<h2>Plan</h2><table><tr><th>service</th><th>version</th><th>why</th></tr>{rows}</table>\n"
            f"<h2>Plugins</h2><table><tr><th>instance</th><th>plugin</th><th>runtime</th><th>for</th>"
            f"<th>choice</th><th>actions</th></tr>{plugins}</table>\n"
            f"<h2>Rendered objects</h2>{objects}\n</body></html>\n")


def _mesh_html(record: dict | None) -> str:
    """On a mesh: the header that selects the flow, its expression, and (istio) the hosts routed in flows/_mesh/."""
    if not record:
        return ""
    e = html.escape

    def code(text: str) -> str:
        return f"<code>{e(text)}</code>"

    out = (f"<h2>Routing: {e(record['mode'])}</h2><p class=\"mesh\">{mesh_reach.summary(record, code)}; the entry "
           f"adds the member, and each service must propagate {code(record['header'])}. Matched with "
           f"{code(record['match'])}.</p>\n")
    hosts = mesh_reach.hosts(record)
    if hosts:
        out += (f"<p>{mesh_reach.capital(mesh_reach.shared_note(code))}; the rendered objects below hold this flow's "
                "rules alone:</p>"
                f"<ul class=\"hosts\">{''.join(f'<li>{e(h)}</li>' for h in hosts)}</ul>\n")
    hops = mesh_reach.unpropagated(record)
    if hops:
        out += ("<p class=\"propagation\">No sign these services forward the header:</p>"
                f"<ul class=\"unpropagated\">{''.join(f'<li>{e(h)}</li>' for h in hops)}</ul>\n")
    return out


def _footprint_html(rows: list[tuple[str, str]]) -> str:
    if not rows:
        return ""
    e = html.escape
    body = "".join(f"<tr><th>{e(what)}</th><td>{e(value)}</td></tr>" for what, value in rows)
    return f"<h2>Footprint</h2><table class=\"footprint\">{body}</table>\n"


def _reach_html(records: list[dict]) -> str:
    """The state outside the lane its dev pods can still use, each with the fix."""
    if not records:
        return ""
    e = html.escape
    items = "".join(f"<li data-class=\"{e(r['class'])}\">{e(reach.line(r))}"
                    + ("" if r["class"] == "shared" else f"<br>fix: {e(r['fix'])}") + "</li>" for r in records)
    return f"<h2>Isolation: reach beyond the lane</h2><ul class=\"reach\">{items}</ul>\n"


def _isolation_html(lane: dict | None) -> str:
    if not lane:
        return ""
    e = html.escape
    rows = "".join(f"<tr><td>{e(b)}</td><td>{e(f)}</td></tr>" for b, f in lane["namespaces"].items())
    aliases = "".join(f"<li><code>{e(a)}</code></li>" for a in lane["aliases"])
    if lane.get("aliasesHidden"):
        aliases += f"<li>... and {lane['aliasesHidden']} more, of services the lane does not touch</li>"
    needs = "".join(f"<li>{e(n)}</li>" for n in lane["needs"])
    return (f"<h2>Isolation: namespace</h2><table><tr><th>baseline namespace</th><th>flow namespace</th></tr>{rows}"
            f"</table>\n" + (f"<p>Aliases to the baseline:</p><ul>{aliases}</ul>\n" if aliases else "")
            + (f"<p>The lane still needs:</p><ul class=\"needs\">{needs}</ul>\n" if needs else ""))
