"""Names, labels and annotation keys of dev objects: `<name>-<flowId>`, shortened with a stable hash past 63."""

from __future__ import annotations

import hashlib

MAX_NAME = 63
KARDINAL = "kardinal.dev.service/"  # Kardinal's annotation prefix
DEVLANE = "devlane.dev/"  # devlane's own annotation and label prefix
FLOW_LABEL = "devlane.dev/flow"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "devlane"
SHARED = "shared"  # the flow id of the copies every flow shares


def suffixed(base: str, suffix: str, limit: int = MAX_NAME) -> str:
    """`base-suffix`, or `<base prefix>-<hash8>-suffix` when that is longer than `limit`.

    The hash covers the full untruncated name, so two long names never collide after shortening.
    """
    full = f"{base}-{suffix}" if base else suffix
    if len(full) <= limit:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    keep = max(limit - len(suffix) - len(digest) - 2, 0)
    prefix = base[:keep].rstrip("-._")
    return f"{prefix}-{digest}-{suffix}" if prefix else f"{digest}-{suffix}"[-limit:]


def dev_name(name: str, flow_id: str) -> str:
    return suffixed(name, flow_id)


def dev_label_value(value: str, flow_id: str) -> str:
    """A pod label value no baseline selector can match."""
    return suffixed(str(value), flow_id)


def flow_labels(version: str) -> dict[str, str]:
    """The labels every rendered object of a flow (or of `shared`) carries."""
    return {FLOW_LABEL: version, MANAGED_BY: MANAGED_BY_VALUE}


def flow_uuid(instance: str, flow_id: str) -> str:
    """Kardinal's `flow_uuid` of a plugin instance: `<servicename>-<flowId>`."""
    return f"{instance}-{flow_id}"
