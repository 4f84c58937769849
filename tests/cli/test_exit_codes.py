"""One exit-code contract and kubectl's manners for mistakes (issue 46, points 2 and 3), walked over every command
the parser has: 0 success, 1 the input or the world is wrong, 2 the command line is wrong; a usage error is one
line and a hint (`did you mean`), never the whole usage; every `--help` ends with examples."""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys

import pytest
from support import EXAMPLE

from renderer.cli import build_parser, main


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, parser)]
    return [leaf for name, sub in subs[0].choices.items() for leaf in _leaves(sub, (*path, name))]


LEAVES = _leaves(build_parser())
IDS = [" ".join(p) for p, _ in LEAVES]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def test_every_command_is_walked():
    assert len(LEAVES) >= 20 and ("render",) in [p for p, _ in LEAVES] and ("plugins", "lock") in [p for p, _ in LEAVES]


@pytest.mark.parametrize(("path", "parser"), LEAVES, ids=IDS)
def test_an_unknown_option_is_one_line_and_a_hint_exit_2(path, parser):
    """Named before a missing required argument: the unknown option may be the typo of the missing one."""
    code, out, err = run(*path, "--no-such-flag")
    assert code == 2 and out == ""
    assert err.splitlines() == [f"devlane {' '.join(path)}: error: unrecognized arguments: --no-such-flag",
                                f"hint: see: devlane {' '.join(path)} --help"]


@pytest.mark.parametrize(("path", "parser"), [(p, s) for p, s in LEAVES if any(
    o.startswith("--") and len(o) > 6 and o != "--help" for a in s._actions for o in a.option_strings)], ids=lambda x:
    " ".join(x) if isinstance(x, tuple) else "")
def test_a_misspelt_option_gets_did_you_mean(path, parser):
    option = next(o for a in parser._actions for o in a.option_strings if o.startswith("--") and len(o) > 6
                  and o != "--help")
    typo = option[:-2] + option[-1] + option[-2]  # the last two letters swapped
    code, _, err = run(*path, typo)
    assert code == 2
    assert err.splitlines()[1].startswith(f"hint: did you mean {option}")


@pytest.mark.parametrize(("path", "parser"), LEAVES, ids=IDS)
def test_every_help_ends_with_examples(path, parser):
    code, out, _ = run(*path, "--help")
    assert code == 0
    examples = out.split("\nexamples:\n", 1)[1].splitlines()
    assert 1 <= len(examples) <= 4 and all(line.startswith("  devlane ") for line in examples)


FLOW = ["--flow", "pr-1", "--service", "a=b:1"]
# what each command needs besides its repository, so that the path is what is wrong
NEEDS = {"render": FLOW, "plan": FLOW, "preview": FLOW, "provision": FLOW, "delete": ["--flow", "pr-1"],
         "gc": ["--keep", "pr-1"], "status": ["--flow", "pr-1"], "verify": ["--flow", "pr-1", "--server"],
         "plugins describe": ["seed"]}


@pytest.mark.parametrize("path", [p for p, s in LEAVES if any(a.dest == "repo" for a in s._actions)
                                  and p != ("diff",)], ids=" ".join)
def test_a_repository_path_that_does_not_exist_is_a_usage_error(path, tmp_path):
    """`diff` reads its repository at two git refs, where the work tree need not hold it: not here."""
    needs = NEEDS.get(" ".join(path), [])
    named = needs[:1] if path == ("plugins", "describe") else []
    code, _, err = run(*path, *named, str(tmp_path / "nowhere"), *needs[len(named):])
    assert code == 2, err
    assert f"repository directory {tmp_path / 'nowhere'} does not exist" in err


@pytest.mark.parametrize(("argv", "code", "said"), [
    (["render", str(EXAMPLE), "--flow", "PR_1", "--service", "orders=x:1"], 2, "invalid flow id 'PR_1'"),
    (["render", str(EXAMPLE), "--flow", "pr-1", "--service", "orders=bad^image"], 2, "the image 'bad^image'"),
    (["plan", str(EXAMPLE), "--flow", "pr-1"], 2, "the flow changes no service"),
    (["render", str(EXAMPLE), "--service", "orders=x:1"], 2, "a flow is required"),
    (["render", str(EXAMPLE), "--flow", "pr-1", "--services", "orders=x:1"], 2, "did you mean --service orders=x:1?"),
    (["rendr"], 2, "did you mean render?"),
    (["plugins", "lok"], 2, "did you mean lock?"),
    (["render", str(EXAMPLE), "--flow", "pr-1", "--service", "nosuch=x:1"], 1, "flow target 'nosuch'"),
    (["render", str(EXAMPLE), "--flow", "pr-1", "--service", "orders=x:1", "--stdout"], 0, ""),
])  # fmt: skip
def test_the_same_mistake_gets_the_same_code_everywhere(argv, code, said):
    got, _, err = run(*argv)
    assert got == code, err
    assert said in err
    assert "usage:" not in err


def test_bad_repository_content_is_1(tmp_path):
    (tmp_path / "app.yaml").write_text("kind: Service\nmetadata: {name: x\n")
    code, out, err = run("lint", str(tmp_path))
    assert code == 1 and "app.yaml" in out + err


@pytest.mark.e2e  # the CLI as a process, its stdout a pipe closed early
@pytest.mark.parametrize("argv", [["plan", str(EXAMPLE), "--flow", "pr-1", "--service", "orders=x:1"],
                                  ["render", str(EXAMPLE), "--flow", "pr-1", "--service", "orders=x:1", "--stdout"],
                                  ["lint", str(EXAMPLE), "-o", "json"]], ids=["plan", "render", "lint"])
def test_a_closed_stdout_ends_the_command_quietly(argv):
    """`devlane plan ... | head -1`: the reader went away; the command ends without a word, as `git log | head`."""
    child = subprocess.Popen([sys.executable, "-m", "renderer.cli", *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.readline()
    child.stdout.close()
    err = child.stderr.read().decode()
    child.wait(timeout=60)
    assert child.returncode in (0, 141) and err == "", err  # 0: it had written everything before the reader left
