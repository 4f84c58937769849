"""Shell completion from the parser itself (issue 46, point 3): `devlane completion SHELL` prints argcomplete's
script; bash (installed here) loads it and completes commands, options and choices by asking the real `devlane`;
zsh and fish scripts are made and answered by the same protocol (their shells are not installed here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

DEVLANE = shutil.which("devlane") or ""


def completion(shell: str) -> str:
    done = subprocess.run([sys.executable, "-m", "renderer.cli", "completion", shell], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("line", "expected"), [
    ("devlane ren", {"render"}),
    ("devlane render --ser", {"--service", "--services"}),
    ("devlane plugins lo", {"lock"}),
    ("devlane lint --routing ", {"none", "gateway-api", "istio"}),
    ("devlane completion f", {"fish"}),
])  # fmt: skip
def test_bash_completes_from_the_parser(line: str, expected: set[str]):
    if not DEVLANE or shutil.which("bash") is None:
        pytest.skip("bash or the devlane entry point is not installed")
    words = line.split() + ([""] if line.endswith(" ") else [])
    script = (f"source <({DEVLANE} completion bash)\n"
              "fn=$(complete -p devlane | sed -E 's/.*-F ([^ ]+) .*/\\1/')\n"
              f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
              f"COMP_CWORD={len(words) - 1}\n"
              f"$fn devlane {words[-1]!r} {words[-2]!r}\n"
              "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert {w.strip() for w in done.stdout.splitlines() if w.strip()} == expected, done.stdout + done.stderr


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete "), ("zsh", "#compdef devlane"),
                                               ("fish", "complete --command devlane")])
def test_each_shell_gets_a_script_for_devlane(shell: str, marker: str):
    assert marker in completion(shell)


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_are_answered_by_the_same_parser(shell: str, tmp_path):
    """What their scripts ask `devlane` at a TAB (argcomplete's protocol), answered for that shell."""
    answer = tmp_path / "answer"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_SHELL": shell, "COMP_LINE": "devlane render --ser",
           "COMP_POINT": "20", "_ARGCOMPLETE_STDOUT_FILENAME": str(answer), "_ARGCOMPLETE_IFS": "\n"}
    done = subprocess.run([sys.executable, "-m", "renderer.cli"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said = answer.read_text()
    assert "--service" in said and "--services" in said and "--flow" not in said
