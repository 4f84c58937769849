"""Names and label values of dev objects: `<name>-<flowId>`, shortened with a stable hash past 63."""

from __future__ import annotations

import hashlib

MAX_NAME = 63
FLOW_LABEL = "devlane.dev/flow"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "devlane"


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
