"""`devlane cmp` (placeholder until the front-doors work lands)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def add_parsers(sub: argparse._SubParsersAction, common: Callable[..., None]) -> None:
    """Register the command on the top-level subparsers; `common(parser, flow=True)` adds the flow options."""
    return None
