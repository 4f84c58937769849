"""`devlane plugins lock | fetch | prepare` (placeholder; filled in by the sources work)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def add_parsers(sub: argparse._SubParsersAction, common: Callable[..., None]) -> None:
    return None
