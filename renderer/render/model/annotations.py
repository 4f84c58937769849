"""The `kardinal.dev.service/*` and `devlane.dev/*` annotations a node reads, and the unknown or misplaced ones."""

from __future__ import annotations

from ...core.names import DEVLANE as D
from ...core.names import KARDINAL as K
from ...errors import Diagnostics, Where
from ..inputs.document import Document
from .plugin_definitions import PluginDef, add_plugin_def, parse_plugin_definition
from .records import POD_KINDS

KNOWN_KARDINAL = {
    "dependencies", "stateful", "external", "shared", "plugin-definition", "plugins",
    "ingress", "gateway", "route", "host",
    "propagates",  # devlane's: the Service's code forwards the routing header (checks.propagation)
}


KNOWN_DEVLANE = {"container", "workload", "no-rewrite", "flow", "volume"}


SERVICE_ONLY = {"dependencies", "stateful", "external", "shared", "plugin-definition", "plugins", "host", "propagates"}


NODE_KEYS = {"dependencies", "stateful", "plugins"}  # also read on a workload that is a node of its own


ENTRY_KINDS = {"ingress": "Ingress", "gateway": "Gateway", "route": "HTTPRoute"}


def boolean(value: object, key: str, doc: Document, diags: Diagnostics) -> bool | None:
    text = str(value).strip()
    if text in ("true", "false"):
        return text == "true"
    diags.error(f'annotation {key} must be "true" or "false", got {value!r}', doc.where(key), code="bad-annotation")
    return None


def node_annotations(doc: Document, stateful: bool, diags: Diagnostics, plugin_defs: dict[str, PluginDef]):
    """stateful, dependencies, plugins and no-rewrite, as annotated on a Service or a lone workload."""
    ann = doc.annotations
    if K + "stateful" in ann:
        value = boolean(ann[K + "stateful"], K + "stateful", doc, diags)
        stateful = stateful if value is None else value
    dependencies = parse_dependencies(str(ann[K + "dependencies"]), doc, diags) if K + "dependencies" in ann else []
    plugins = []
    if K + "plugins" in ann:
        plugins = parse_plugins_ref(ann[K + "plugins"], doc, stateful, doc.where(K + "plugins"), diags, plugin_defs)
    no_rewrite = (frozenset(x.strip() for x in str(ann[D + "no-rewrite"]).split(",") if x.strip())
                  if D + "no-rewrite" in ann else frozenset())
    return stateful, dependencies, plugins, no_rewrite


def check_annotation_keys(documents: list[Document], diags: Diagnostics) -> None:
    for doc in documents:
        for key in doc.annotations:
            if key.startswith(K):
                short = key[len(K) :]
                if short not in KNOWN_KARDINAL:
                    diags.error(f"unknown annotation {key}", doc.where(),
                                hint=f"known keys: {', '.join(K + k for k in sorted(KNOWN_KARDINAL))}",
                                code="unknown-key")
                elif short in SERVICE_ONLY and doc.kind != "Service" and not (short in NODE_KEYS
                                                                              and doc.kind in POD_KINDS):
                    diags.warn(f"{key} is only read on Services; ignored on {doc.kind}", doc.where())
                elif short in ENTRY_KINDS and doc.kind not in (ENTRY_KINDS[short], "Service"):
                    diags.warn(f"{key} is only read on {ENTRY_KINDS[short]} objects; ignored", doc.where())
            elif key.startswith(D) and key[len(D) :] not in KNOWN_DEVLANE:
                diags.error(f"unknown annotation {key}", doc.where(),
                            hint=f"known keys: {', '.join(D + k for k in sorted(KNOWN_DEVLANE))}", code="unknown-key")
            elif key == "kardinal.dev/plugins":
                diags.warn("annotation kardinal.dev/plugins is not read (Kardinal never read it either)", doc.where(),
                           hint="use kardinal.dev.service/plugins with a plugin-definition pseudo-Service",
                           code="ignored-key")


def parse_dependency_item(item: str) -> tuple[str, str] | None:
    """Parse one `svc:portName` item; None when malformed."""
    item = item.strip()
    svc, sep, port = item.partition(":")
    if not sep or not svc.strip() or not port.strip() or ":" in port:
        return None
    return svc.strip(), port.strip()


def parse_dependencies(value: str, doc: Document, diags: Diagnostics) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in value.split(","):
        if not item.strip():
            continue
        parsed = parse_dependency_item(item)
        if parsed is None:
            diags.error(f"bad dependency {item.strip()!r} in {K}dependencies", doc.where(K + "dependencies"),
                        hint='write "service:portName", e.g. "postgres:tcp" (the port name of the target Service)',
                        code="bad-dependency")
        elif parsed not in out:
            out.append(parsed)
    return out


def parse_plugins_ref(value: object, doc: Document, stateful: bool, where: Where, diags: Diagnostics,
                       plugin_defs: dict[str, PluginDef]) -> list[str]:
    text = str(value)
    if text.lstrip().startswith(("-", "[")):
        diags.warn("an inline plugin list in kardinal.dev.service/plugins is the legacy (pre-Oct-2024) form", where,
                   hint="move it to a plugin-definition pseudo-Service and list servicenames here", code="deprecated")
        names = []
        for pdef in parse_plugin_definition(text, doc, diags, legacy_service=(doc.name, stateful)):
            add_plugin_def(pdef, plugin_defs, diags)
            names.append(pdef.servicename)
        return names
    return [p.strip() for p in text.split(",") if p.strip()]
