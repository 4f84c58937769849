"""PyYAML's safe loading through its C parser, as devlane itself loads YAML: the same objects as `yaml.safe_load`
(the same resolver and constructor), several times faster on the large files tests read (CRDs, rendered lanes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml


def safe_load(stream: str | bytes) -> Any:
    return yaml.load(stream, Loader=yaml.CSafeLoader)


def safe_load_all(stream: str | bytes) -> Iterator[Any]:
    return yaml.load_all(stream, Loader=yaml.CSafeLoader)
