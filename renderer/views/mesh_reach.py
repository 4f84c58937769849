"""How requests reach a flow on a mesh, in the words every front door uses.

On a mesh (`gateway-api`, `istio`) a flow is found by the header its entry adds, not by copies along the
path, so a reader needs the mode, the header, and which dev versions the mesh reaches by it (the rest, TCP
copies, are reached through rewritten references). The terminal tree, the HTML page and the PR comment all
phrase that from the `mesh` record of `flow.metadata` here, so they never disagree. Routing `none` has no
record: every function is only called with one, and each view stays as it was without it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..render.checks import propagation
from ..render.routing.mesh import MESH_DIR

SHARED_DIR = f"flows/{MESH_DIR}/"
REACH = {"header": "by header", "rewrite": "by rewritten references"}  # how a dev version is reached, in words


def header(record: dict) -> str:
    """What a request carries to reach the flow: `baggage devlane-flow=pr-1`."""
    return f"{record['header']} {record['member']}"


def summary(record: dict, code: Callable[[str], str] = str) -> str:
    """The one sentence on how the mesh routes the flow; `code` marks the literal parts (Markdown, HTML)."""
    return (f"routing {code(record['mode'])}: requests carrying {code(header(record))} reach this flow's dev "
            "versions; the rest reach the baseline")


def shared_note(code: Callable[[str], str] = str) -> str:
    """istio: where the VirtualServices this flow needs live, and that other flows share them."""
    return f"the per-host VirtualServices are in {code(SHARED_DIR)} (shared by every flow)"


def capital(text: str) -> str:
    """`text` opening a sentence (`str.capitalize` would lower `VirtualServices`)."""
    return text[:1].upper() + text[1:]


def hosts(record: dict) -> list[str]:
    """istio: each baseline host the shared VirtualServices send to this flow's dev Service, in words."""
    return [f"{h['service']} -> {h['dev']} (port{'s' * (len(h['ports']) > 1)} {', '.join(map(str, h['ports']))})"
            for h in record.get("hosts") or []]


def reach(name: str, version: str, kind: str, by_header: frozenset[str] | set[str]) -> str:
    """`header` when the mesh reaches this dev service by the flow header (an HTTP or gRPC port), `rewrite`
    when its callers' dev copies name it (TCP), empty for the baseline and external services."""
    if version == "baseline" or kind != "service":
        return ""
    return "header" if name in by_header else "rewrite"


def unpropagated(record: dict) -> list[str]:
    """Each service on a header-routed path with no sign that it forwards the header, in words
    (`checks.propagation`)."""
    return [propagation.line(r) for r in record.get("unpropagated") or []]
