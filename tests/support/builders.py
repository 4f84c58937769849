"""Builders of the small manifests tests put in repositories."""

from __future__ import annotations

import json

import yaml


def app_yaml(name: str, plugins: str | None = None, containers: list[dict] | None = None, port: int = 80) -> str:
    """A Deployment and the Service selecting it (annotated with the Kardinal plugins it uses), as a YAML
    stream ending with `---`."""
    containers = containers or [{"name": "main", "image": f"{name}:1"}]
    annotations = "{}" if plugins is None else f"{{kardinal.dev.service/plugins: {json.dumps(plugins)}}}"
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n"
        f"  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n"
        f"    spec: {{containers: {json.dumps(containers)}}}\n---\n"
        f"apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  annotations: {annotations}\nspec:\n"
        f"  selector: {{app: {name}}}\n  ports: [{{name: http, port: {port}}}]\n---\n"
    )


def plugin_definition(entries: list[dict], name: str = "plugin-defs") -> str:
    """A pseudo-Service whose `kardinal.dev.service/plugin-definition` lists `entries`, ending with `---`."""
    obj = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "annotations": {
               "kardinal.dev.service/plugin-definition": yaml.safe_dump(list(entries), sort_keys=False)}}}
    return yaml_doc(obj)


def yaml_doc(obj: dict) -> str:
    """One YAML document ending with `---`."""
    return yaml.safe_dump(obj, sort_keys=False) + "---\n"


def entry_ingress(backend: str, host: str = "shop.example.com", port: int = 80) -> str:
    """An Ingress annotated as the flow entry, routing `host` to Service `backend`, ending with `---`."""
    return yaml_doc({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                     "metadata": {"name": f"{backend}-entry", "annotations": {"kardinal.dev.service/ingress": "true"}},
                     "spec": {"rules": [{"host": host, "http": {"paths": [{
                         "path": "/", "pathType": "Prefix",
                         "backend": {"service": {"name": backend, "port": {"number": port}}}}]}}]}})


# A Helm chart whose objects are named after the release: `<release>-api`, a Deployment and its Service.
SHOP_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
    "values.yaml": "image: api:1\nreplicas: 1\nlogLevel: info\n",
    "templates/api.yaml": """
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-api}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}-api}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}-api}}
    spec:
      containers:
        - {name: api, image: {{ .Values.image | quote }}, env: [{name: LOG_LEVEL, value: {{ .Values.logLevel }}}]}
---
apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-api}
spec:
  selector: {app: {{ .Release.Name }}-api}
  ports: [{name: http, port: 80}]
""",
}
