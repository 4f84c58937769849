"""Dependency cycles as strongly connected components: real call graphs have them (seat <-> travel), and the
planner treats each as one unit instead of refusing it."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Cycle:
    """One strongly connected component of the dependency graph with at least one edge inside it."""

    members: tuple[str, ...]  # sorted
    loop: tuple[str, ...]  # a shortest cycle through the first member, first member repeated at the end

    def describe(self, shown: int = 12) -> str:
        """`a -> b -> a`; a long loop shows its ends and its length; more members say how many."""
        names = list(self.loop)
        if len(names) <= shown:
            text = " -> ".join(names)
        else:
            half = shown // 2
            text = (f"{' -> '.join(names[:half])} -> ... -> {' -> '.join(names[-half:])} "
                    f"({len(names) - 1:,} services)")
        more = len(self.members) - (len(self.loop) - 1)
        return text + (f" (and {more:,} more service{'s' if more > 1 else ''} in the same cycle)" if more else "")


def cycles(out: Mapping[str, Sequence[str]]) -> list[Cycle]:
    """Every cycle of the graph `out` (node -> successors), by Tarjan's algorithm with an explicit stack, so
    a chain of any length is fine: linear in nodes and edges, deterministic (nodes in sorted order)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[Cycle] = []
    for root in sorted(out):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(out.get(root, ())))]
        while work:
            node, succ = work[-1]
            for nxt in succ:
                if nxt not in out:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(out.get(nxt, ()))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        members.append(m)
                        if m == node:
                            break
                    if len(members) > 1 or node in out.get(node, ()):
                        found.append(_cycle(sorted(members), out))
    return sorted(found, key=lambda c: c.members)


def _cycle(members: list[str], out: Mapping[str, Sequence[str]]) -> Cycle:
    """The component with a shortest loop through its first member (a breadth-first walk inside it)."""
    first, inside = members[0], set(members)
    came: dict[str, str] = {}
    queue = deque([first])
    while queue:
        node = queue.popleft()
        for nxt in out.get(node, ()):
            if nxt == first:
                path = [node]
                while path[-1] != first:
                    path.append(came[path[-1]])
                return Cycle(tuple(members), (first, *reversed(path[:-1]), first))
            if nxt in inside and nxt not in came:
                came[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"no loop through {first}")  # a component always has one
