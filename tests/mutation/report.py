"""The mutation test's report, from the results mutmut left in `mutants/` (run from the checkout's root by
tests/mutation/run.sh): per module the mutants, killed, timed out, survived and the kill rate, then every
surviving mutant with its diff. Exits 1 when a mutant was left unchecked or, with `--ci`, when the kill rate of the
CI subset (tests/mutation/ci-subset.txt) is below the threshold written there.

A mutant is named by mutmut with a number that shifts whenever its function changes, so the survivors accepted as
equivalent (tests/mutation/equivalent.txt) are named by function and fingerprint: a hash of the lines the mutation
changes, which stays the same as long as those lines do. The report prints both for each survivor.

    python tests/mutation/report.py [--ci | --module PATH ...] [--out FILE] [--survivors DIR] [--seconds N]
    python tests/mutation/report.py --globs      the mutmut names of the CI subset, one a line (for `mutmut run`)
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
EQUIVALENT = HERE / "equivalent.txt"
CI_SUBSET = HERE / "ci-subset.txt"
SEP = "\u01c1"  # mutmut's separator of class and method in a mangled name: x<SEP>Class<SEP>method
KILLED = {"killed", "timeout", "segfault"}  # a mutant that makes its tests fail, hang or crash is caught
SURVIVED = {"survived", "no tests"}  # "no tests": no in-process test reaches the function at all


@dataclass
class Mutant:
    name: str  # mutmut's: renderer.core.fence.xǁFenceǁcontains__mutmut_3
    path: str  # renderer/core/fence.py
    status: str  # mutmut's: killed, survived, no tests, timeout, ...

    @property
    def function(self) -> str:
        """The readable name of the mutated function: renderer.core.fence.Fence.contains."""
        module, _, mangled = re.sub(r"__mutmut_\d+$", "", self.name).rpartition(".")
        name = mangled.split(SEP)[1:] if mangled.startswith("x" + SEP) else [mangled.removeprefix("x_")]
        return ".".join([module, *name])

    def glob(self) -> str:
        return re.sub(r"__mutmut_\d+$", "*", self.name)


def statuses() -> dict:
    from mutmut.stats import status_by_exit_code

    return status_by_exit_code


def load(root: Path) -> list[Mutant]:
    """Every mutant of every mutated module, with its status (`mutants/<path>.meta`, mutmut's own record)."""
    status_by_exit_code = statuses()
    found = []
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        path = meta.relative_to(root / "mutants").as_posix().removesuffix(".meta")
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        found += [Mutant(name, path, status_by_exit_code[code]) for name, code in codes.items()]
    return found


def diff(mutant: Mutant) -> str:
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    return get_diff_for_mutant(mutant.name, path=mutant.path)


def fingerprint(mutant: Mutant, text: str) -> str:
    """What the mutation changes, independent of mutmut's numbering: the removed and added lines, stripped."""
    changed = [line[0] + line[1:].strip() for line in text.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]  # fmt: skip
    return hashlib.sha256("\n".join([mutant.function, *changed]).encode()).hexdigest()[:10]


def entries(path: Path) -> list[tuple[str, str]]:
    """The lines of a list file as (first field, rest): comments and blank lines left out."""
    rows = []
    for line in map(str.strip, path.read_text().splitlines()):
        if line and not line.startswith("#"):
            first, _, rest = line.partition(" ")
            rows.append((first, rest.strip()))
    return rows


def equivalents() -> dict[tuple[str, str], str]:
    """(function, fingerprint) -> why that mutant cannot change behaviour."""
    table = {}
    for function, rest in entries(EQUIVALENT):
        fp, _, reason = rest.partition(" ")
        if not reason.strip():
            sys.exit(f"error: {EQUIVALENT}: {function} {fp}: give the reason the mutant is equivalent")
        table[(function, fp)] = reason.strip()
    return table


def ci_subset() -> tuple[float, list[str]]:
    """The CI subset's threshold (percent) and functions."""
    rows = entries(CI_SUBSET)
    thresholds = [float(rest) for first, rest in rows if first == "threshold"]
    if len(thresholds) != 1:
        sys.exit(f"error: {CI_SUBSET}: name the kill-rate threshold once, as `threshold 95.0`")
    return thresholds[0], [first for first, _ in rows if first != "threshold"]


def mangled_glob(function: str) -> str:
    """renderer.core.fence.Fence.contains -> renderer.core.fence.xǁFenceǁcontains* (mutmut's names of its mutants)."""
    parts = function.split(".")
    for i, part in enumerate(parts):  # the first capitalised part is a class, the one after it its method
        if part.lstrip("_")[:1].isupper():
            return ".".join(parts[:i]) + f".x{SEP}{part}{SEP}{parts[i + 1]}*"
    return ".".join(parts[:-1]) + f".x_{parts[-1]}*"


def rate(caught: int, counted: int) -> str:
    return f"{100.0 * caught / counted:6.2f}%" if counted else "     -"


def report(mutants: list[Mutant], *, title: str, survivors_dir: Path | None) -> tuple[list[str], float, int]:
    """The report's lines, the kill rate and the number of mutants left unchecked."""
    known = equivalents()
    used: set[tuple[str, str]] = set()
    by_module: dict[str, Counter] = {}
    left: dict[str, list[tuple[Mutant, str, str]]] = {}
    for m in mutants:
        counts = by_module.setdefault(m.path, Counter())
        counts["mutants"] += 1
        if m.status in SURVIVED:
            text = diff(m)
            fp = fingerprint(m, text)
            if (m.function, fp) in known:
                used.add((m.function, fp))
                counts["equivalent"] += 1
                continue
            left.setdefault(m.path, []).append((m, fp, text))
        counts[m.status] += 1

    header = f"{'module':44} {'mutants':>7} {'killed':>7} {'timeout':>7} {'survived':>8} {'no tests':>8} " \
             f"{'equiv.':>6} {'other':>5} {'unchecked':>9} {'kill rate':>9}"  # fmt: skip
    lines = [title, "", header, "-" * len(header)]
    total: Counter = Counter()
    for path, c in sorted(by_module.items()):
        total.update(c)
        lines.append(row(path, c))
    lines += ["-" * len(header), row("total", total), ""]
    lines.append("kill rate = (killed + timeout) / (mutants - equivalent - unchecked); `no tests`: no in-process test "
                 "reaches the function (counted as survived); other: a crash (caught), suspicious or skipped")
    reported = {m.function for m in mutants}
    stale = sorted(k for k in set(known) - used if k[0] in reported)  # (the CI subset reports a few functions)
    if stale and not any(m.status == "not checked" for m in mutants):
        lines += ["", "Listed as equivalent in tests/mutation/equivalent.txt but not surviving here (killed now, "
                  "or the code changed; remove the entry):"] + [f"  {f} {fp}" for f, fp in stale]
    count = sum(len(v) for v in left.values())
    lines += ["", f"Surviving mutants: {count}. Kill each with a test of what devlane renders or refuses, or list it "
              "in tests/mutation/equivalent.txt as `<function> <fingerprint> <reason>`.", ""]
    for path in sorted(left):
        block = survivors(path, left[path], by_module[path])
        lines += block
        if survivors_dir is not None:
            (survivors_dir / f"mut-survivors-{Path(path).stem}.txt").write_text("\n".join(block) + "\n")
    caught = sum(total[s] for s in KILLED)
    counted = total["mutants"] - total["equivalent"] - total["not checked"]
    return lines, (100.0 * caught / counted if counted else 100.0), total["not checked"]


def row(name: str, c: Counter) -> str:
    other = c["mutants"] - sum(c[s] for s in ("killed", "timeout", "survived", "no tests", "equivalent", "not checked"))
    counted = c["mutants"] - c["equivalent"] - c["not checked"]
    return (f"{name:44} {c['mutants']:7} {c['killed']:7} {c['timeout']:7} {c['survived']:8} {c['no tests']:8} "
            f"{c['equivalent']:6} {other:5} {c['not checked']:9} {rate(sum(c[s] for s in KILLED), counted):>9}")


def survivors(path: str, found: list[tuple[Mutant, str, str]], counts: Counter) -> list[str]:
    unchecked = f", {counts['not checked']} not checked (the run was interrupted)" if counts["not checked"] else ""
    lines = [f"=== {path}: {len(found)} surviving of {counts['mutants']} mutants{unchecked}", ""]
    for m, fp, text in found:
        lines += [f"# {m.function} {fp}   ({m.status}; mutmut: {m.name})", text, ""]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ci", action="store_true", help="report on the CI subset and fail below its threshold")
    parser.add_argument("--globs", action="store_true", help="print the mutmut names of the CI subset and stop")
    parser.add_argument("--out", type=Path, default=Path("mutation-report.txt"))
    parser.add_argument("--survivors", type=Path, help="also write DIR/mut-survivors-<module>.txt for each module")
    parser.add_argument("--seconds", type=int, help="the run's wall time, for the report")
    parser.add_argument("--module", action="append", default=[], help="report on this module only (repeatable)")
    args = parser.parse_args()
    threshold, functions = ci_subset()
    if args.globs:
        print("\n".join(mangled_glob(f) for f in functions))
        return 0
    mutants = load(Path.cwd())
    if not mutants:
        print("error: no mutation results in mutants/: run `bash tests/mutation/run.sh` first", file=sys.stderr)
        return 1
    if args.ci:
        missing = sorted(set(functions) - {m.function for m in mutants})
        if missing:
            print(f"error: {CI_SUBSET} names functions with no mutants (renamed or moved? update it): "
                  + ", ".join(missing), file=sys.stderr)  # fmt: skip
            return 1
        mutants = [m for m in mutants if m.function in functions]
    if args.module:
        mutants = [m for m in mutants if m.path in args.module]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    took = f", {args.seconds // 60} min {args.seconds % 60} s" if args.seconds is not None else ""
    mode = (f"the CI subset (tests/mutation/ci-subset.txt, threshold {threshold}%)" if args.ci
            else f"every mutant of {', '.join(args.module)}" if args.module else "every mutant")
    title = f"Mutation test of devlane's security core (mutmut), {mode}: {when}{took}"
    if args.survivors:
        args.survivors.mkdir(parents=True, exist_ok=True)
    lines, kill_rate, unchecked = report(mutants, title=title, survivors_dir=args.survivors)
    args.out.write_text("\n".join(lines) + "\n")
    summary_end = next(i for i, line in enumerate(lines) if line.startswith("Surviving mutants:"))
    print("\n".join(lines[: summary_end + 1]))
    print(f"(full report with every survivor's diff: {args.out})")
    if unchecked:
        print(f"error: {unchecked} mutants were left unchecked (the run was interrupted)", file=sys.stderr)
        return 1
    if args.ci and kill_rate < threshold:
        print(f"error: the CI subset's kill rate {kill_rate:.2f}% is below its threshold {threshold}%: a test that "
              f"killed a mutant was removed or weakened (see {args.out})", file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
