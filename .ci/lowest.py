"""Print the oldest versions pyproject.toml admits, as pip requirements (`NAME>=X` becomes `NAME==X`): `.ci/run`
installs devlane with them in a throw-away virtualenv and runs the fast tests there, so the lower bounds users may
resolve to are ones CI has seen pass. The test tools come at their own lower bounds too, but for import-linter and
mutmut, which need a newer rich than devlane does (the contract test and the mutation run use the main virtualenv)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

NOT_HERE = {"import-linter", "mutmut"}

project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
for requirement in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
    spec, _, marker = requirement.partition(";")
    found = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(>=|==)\s*([^,\s]+)\s*", spec)
    if found is None:
        sys.exit(f"{requirement!r}: give it a lower bound (>=) that CI tests, or pin it (==)")
    if found[1] not in NOT_HERE:
        print(f"{found[1]}=={found[3]}" + (f"; {marker.strip()}" if marker.strip() else ""))
