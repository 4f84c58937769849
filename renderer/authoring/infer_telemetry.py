"""Telemetry sinks for `devlane init`: tracing, metrics and log collectors, by their image or their port.

Every service of an app names its tracing backend (`jaeger:6831` in each copy of `jaeger-config.yml`), so reading
those names as dependencies floods the graph with edges nobody would write: a lane reports to the baseline's
collector by design (its spans and logs are what a reviewer looks at). init lists such a sink as telemetry, with
the services that name it, and writes no dependency on it; nor does it read the sink's own configuration (a
Prometheus scrape list, a collector's exporters) as the sink's dependencies.
"""

from __future__ import annotations

import re

from ..core.k8s import all_containers
from ..render.model.records import Model, ServiceNode
from .infer_facts import Edge, Evidence, Telemetry, evidence

# words of an image's name (its last path segment, or its vendor's) that say it collects telemetry
IMAGE_WORDS = frozenset({
    "jaeger", "jaegertracing", "zipkin", "openzipkin", "opentelemetry", "otel", "otelcol", "tempo", "loki",
    "promtail", "prometheus", "pushgateway", "fluentd", "fluent", "fluentbit", "logstash", "filebeat", "seq",
    "datalust", "statsd", "graphite", "datadog", "instana", "newrelic", "signoz", "alloy",
})
# ports only a telemetry sink listens on: Jaeger (agent UDP, collector), Zipkin, OTLP, Fluentd forward, StatsD,
# Datadog APM, Instana's agent
PORTS = frozenset({5775, 6831, 6832, 14250, 14267, 14268, 9411, 4317, 4318, 55680, 55681, 24224, 8125, 8126, 42699})
_WORD = re.compile(r"[a-z0-9]+")


def _image_words(image: str) -> set[str]:
    path = image.split("@", 1)[0].lower().split("/")
    words = set(_WORD.findall(path[-1].split(":", 1)[0]))
    return words | (set(_WORD.findall(path[-2])) if len(path) > 1 else set())


def telemetry_sign(node: ServiceNode) -> tuple[str, Evidence] | None:
    """Why `node` is a telemetry sink (its image, else a port only sinks use), with the evidence; None if not."""
    if node.workload is None:
        return None
    spec = node.workload.pod_template.get("spec") or {}
    for c in all_containers(spec):
        image = str(c.get("image") or "")
        words = sorted(_image_words(image) & IMAGE_WORDS)
        if words:
            path = f"spec.template.spec.containers[{c.get('name', 0)}].image"
            return f"{node.workload.doc.ref} runs {image} ({words[0]})", evidence(node.workload.doc, path, image)
    if not node.is_service:
        return None
    for i, port in enumerate((node.doc.obj.get("spec") or {}).get("ports") or []):
        if isinstance(port, dict) and str(port.get("port")) in {str(p) for p in PORTS}:
            return (f"Service {node.ref} listens on port {port.get('port')}, a telemetry port",
                    evidence(node.doc, f"spec.ports[{i}].port", port.get("port")))
    return None


def split_telemetry(model: Model, edges: list[Edge]) -> tuple[list[Edge], list[Telemetry]]:
    """The edges without those to or from a telemetry sink, and each sink with the services that name it."""
    signs = {key: sign for key, node in model.services.items() if (sign := telemetry_sign(node)) is not None}
    kept = [e for e in edges if e.target not in signs and e.source not in signs]
    readers: dict[str, set[str]] = {key: set() for key in signs}
    for e in edges:
        if e.target in signs and e.source not in signs:
            readers[e.target].add(e.source)
    sinks = [Telemetry(key, reason, ev, tuple(sorted(readers[key]))) for key, (reason, ev) in sorted(signs.items())]
    return kept, sinks
