"""Header propagation on a header-routed lane (`--routing gateway-api|istio`): each service that passes a lane's
request on toward a dev version must forward the routing header (`baggage`), or the next hop goes to the baseline.

Why: the mesh routes each hop by the header the caller sends, and a service forwards a header only if its code
(or an agent in its pod) copies it from the request it serves to the requests it makes. Kardinal's users lost
requests to production silently where a service did not (kardinal#154); devlane's static route proof shows the
routes exist, not that the header survives each hop. No manifest proves that code forwards a header, so devlane
looks for evidence and names each hop without any:

- OpenTelemetry auto-instrumentation (`instrumentation.opentelemetry.io/inject-<language>` on the pod): the
  Operator's agents propagate `tracecontext` and `baggage` by default, and so do the repository's
  `Instrumentation` resources unless they set `propagators` without `baggage`;
- `OTEL_PROPAGATORS` with `baggage` in a container's env (an SDK configured to propagate it);
- `kardinal.dev.service/propagates: "true"` on the Service (or `propagates: true` in `.devlane.yaml`
  `services:`): the user vouches that the code forwards it.

A hop without evidence is a warning (an error under `--strict`) in plan, render, the PR comment and the preview.
"""

from __future__ import annotations

from collections import deque

from ...core.k8s import all_containers, pod_template
from ...core.names import KARDINAL
from ...errors import Diagnostics, Problem, Where
from ..copies.dev_set import DevSet
from ..model.records import Model, ServiceNode

PROPAGATES = KARDINAL + "propagates"
INJECT = "instrumentation.opentelemetry.io/inject-"


def hops(model: Model, dev: DevSet) -> list[tuple[str, str, str]]:
    """(caller, callee, entry) for each call on a path from an entry that leads to a service routed by the header:
    the caller must forward the header for the callee (or a service after it) to be the lane's."""
    routed = set(dev.by_header)
    if not routed:
        return []
    parents: dict[str, set[str]] = {}
    for key, node in model.services.items():
        for dep, _ in node.dependencies:
            parents.setdefault(dep, set()).add(key)
    leads = set(routed)  # the services from which a header-routed dev service is reachable (themselves included)
    queue = deque(sorted(routed))
    while queue:
        for p in sorted(parents.get(queue.popleft(), ())):
            if p not in leads:
                leads.add(p)
                queue.append(p)
    out: dict[tuple[str, str], str] = {}
    for entry in model.entries:
        seen: set[str] = set()
        queue = deque(b for b in entry.backends if b in model.services and b in leads)
        while queue:
            key = queue.popleft()
            if key in seen:
                continue
            seen.add(key)
            for dep, _ in model.services[key].dependencies:
                if dep in leads and dep in model.services:
                    out.setdefault((key, dep), entry.doc.ref)
                    queue.append(dep)
    return [(caller, callee, entry) for (caller, callee), entry in sorted(out.items())]


def evidence(node: ServiceNode, agents_carry: bool = True) -> str | None:
    """What shows that `node`'s pods forward `baggage`, or None; `agents_carry`: whether the OpenTelemetry agents
    propagate it (`_agents_carry`)."""
    said = str(node.doc.annotations.get(PROPAGATES, "")).strip().lower()
    if said == "true":
        return f"{PROPAGATES}: \"true\""
    if said == "false" or node.workload is None:
        return None
    template = pod_template(node.workload.doc.obj) or {}
    meta = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    for key, value in sorted(annotations.items()):
        if str(key).startswith(INJECT) and str(value).strip().lower() not in ("false", "") and agents_carry:
            return f"{key}: {value}"
    for c in all_containers(template.get("spec") or {}):
        for e in c.get("env") or []:
            if isinstance(e, dict) and e.get("name") == "OTEL_PROPAGATORS" and "baggage" in [
                    p.strip() for p in str(e.get("value", "")).split(",")]:
                return f"OTEL_PROPAGATORS={e['value']}"
    return None


def _agents_carry(model: Model) -> bool:
    """Whether the OpenTelemetry agents propagate `baggage`: the Operator's default, unless an `Instrumentation`
    of the repository lists `propagators` without it."""
    for d in model.documents:  # by kind first: no other object's body is decoded
        if d.kind == "Instrumentation" and d.api_version.startswith("opentelemetry.io/"):
            spec = d.obj.get("spec") if isinstance(d.obj.get("spec"), dict) else {}
            listed = spec.get("propagators")
            if isinstance(listed, list) and "baggage" not in [str(p) for p in listed]:
                return False
    return True


def unpropagated(model: Model, dev: DevSet) -> list[dict]:
    """Each service that must forward the header and shows no sign of it: `{service, calls, entry}` (what
    flow.metadata's mesh record keeps, for the PR comment and the preview)."""
    callees: dict[str, list[tuple[str, str]]] = {}
    for caller, callee, entry in hops(model, dev):
        callees.setdefault(caller, []).append((callee, entry))
    carry = _agents_carry(model) if callees else True
    return [{"service": model.services[caller].doc.ref, "calls": [model.services[c].name for c, _ in calls],
             "entry": calls[0][1]}
            for caller, calls in sorted(callees.items()) if evidence(model.services[caller], carry) is None]


def line(record: dict) -> str:
    """One unpropagated hop in words, for every front door."""
    return (f"{record['service']} passes the lane's requests on to {', '.join(record['calls'])} (from "
            f"{record['entry']}), but nothing shows it forwards the baggage header")


MOST = 20  # past this many, one problem names the first few and the count (flow.metadata lists every one)
HINT = ("add OpenTelemetry auto-instrumentation (pod annotation instrumentation.opentelemetry.io/inject-<language>: "
        "\"true\"), or set OTEL_PROPAGATORS=tracecontext,baggage for its SDK; once you know its code forwards baggage, "
        f"annotate the Service {PROPAGATES}: \"true\"")


def problems(found: list[dict], strict: bool = False) -> list[Problem]:
    """One warning (an error under --strict) per service of `found` (`unpropagated`); past `MOST` of them, one
    that names the first ten and counts the rest."""
    diags = Diagnostics()
    say = diags.error if strict else diags.warn
    if len(found) > MOST:
        names = ", ".join(r["service"] for r in found[:10])
        say(f"header routing: {len(found):,} services pass the lane's requests on with no sign that they forward the "
            f"baggage header ({names}, ...): a request that leaves one without it reaches the baseline",
            Where(object=found[0]["service"]), hint=HINT + " (flow.metadata mesh.unpropagated lists every one)",
            code="header-propagation")
        return diags.problems
    for record in found:
        say(f"header routing: {line(record)}: a request that leaves it without the header reaches the baseline",
            Where(object=record["service"]), hint=HINT, code="header-propagation")
    return diags.problems
