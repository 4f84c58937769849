"""Dependency cycles: each reported once, by a walk that handles a chain of any length."""

from __future__ import annotations

from ...errors import Diagnostics
from .records import ServiceNode


def check_cycles(services: dict[str, ServiceNode], diags: Diagnostics) -> None:
    """Report each dependency cycle once; a depth-first walk with an explicit stack, so a chain of any
    length is fine."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    reported: set[frozenset[str]] = set()
    for start in sorted(services):
        if start in state:
            continue
        state[start] = 1
        path, at = [start], {start: 0}
        pending = [iter(services[start].dependencies)]
        while pending:
            for dep, _ in pending[-1]:
                if dep not in services:
                    continue
                if state.get(dep) == 1:
                    cycle = [*path[at[dep]:], dep]
                    if frozenset(cycle) not in reported:
                        reported.add(frozenset(cycle))
                        diags.error(f"dependency cycle: {_chain(cycle)}", services[dep].doc.where(),
                                    hint="kardinal.dev.service/dependencies must form a graph without cycles",
                                    code="cycle")
                elif dep not in state:
                    state[dep], at[dep] = 1, len(path)
                    path.append(dep)
                    pending.append(iter(services[dep].dependencies))
                    break
            else:
                done = path.pop()
                del at[done]
                state[done] = 2
                pending.pop()


def _chain(names: list[str], shown: int = 12) -> str:
    """`a -> b -> a`; a long cycle shows its ends and how many services it has."""
    if len(names) <= shown:
        return " -> ".join(names)
    half = shown // 2
    return f"{' -> '.join(names[:half])} -> ... -> {' -> '.join(names[-half:])} ({len(names) - 1:,} services)"
