"""The command line's manners, as kubectl's and git's: a usage error is one line and a hint (`did you mean
--service?`), never the whole usage (that is `--help`'s), exit 2; `--help` ends with two or three examples.

`DevlaneParser` is the class of every parser (argparse builds the sub-commands' parsers with their parent's class).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from typing import NoReturn

# Examples shown at the end of each command's --help, by the command's path (`plugins lock`).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "render": ("devlane render examples/bookshop --flow pr-7 --service orders=ghcr.io/acme/orders:pr-7",
               "devlane render . --flow pr-7 --services auto --base origin/main --image-template "
               "'ghcr.io/acme/{service}:pr-7'",
               "devlane render . --flow pr-7 --service orders=ghcr.io/acme/orders:pr-7 --stdout | kubectl apply -f -"),
    "plan": ("devlane plan examples/bookshop --flow pr-7 --service orders=ghcr.io/acme/orders:pr-7",
             "devlane plan . --flow pr-7 --service orders=IMAGE --routing gateway-api -o json",
             "devlane plan . --flow pr-7 --service orders=IMAGE --all   # every baseline service, not only neighbours"),
    "lint": ("devlane lint examples/bookshop", "devlane lint . --routing istio -o json"),
    "provision": ("devlane provision . --flow pr-7 --service orders=IMAGE --lanes-branch devlane-lanes",),
    "delete": ("devlane delete . --flow pr-7", "devlane delete . --flow pr-7 --lanes-branch devlane-lanes"),
    "gc": ("devlane gc . --keep pr-7 pr-9 --dry-run", "devlane gc . --expired",
           "devlane gc --cluster --keep pr-7 --yes"),
    "status": ("devlane status . --flow pr-7", "devlane status . --flow pr-7 --wait --timeout 5m -o json"),
    "verify": ("devlane verify . --flow pr-7 --server",),
    "cmp": ("devlane cmp generate   # run by Argo CD's plugin sidecar, with ARGOCD_APP_PARAMETERS",),
    "diff": ("devlane diff . --base origin/main --head HEAD --flow pr-7 --services auto --image-template "
             "'ghcr.io/acme/{service}:pr-7'",
             "devlane diff . --base origin/main --head HEAD --flow pr-7 --service orders=IMAGE -o markdown"),
    "preview": ("devlane preview examples/bookshop --flow pr-7 --service orders=ghcr.io/acme/orders:pr-7",
                "devlane preview . --flow pr-7 --service orders=IMAGE --html lane.html"),
    "init": ("devlane init .   # a dry run: the diff and what was inferred, with the evidence",
             "devlane init . --config   # everything in .devlane.yaml, the manifests untouched"),
    "plugins": ("devlane plugins list .", "devlane plugins lock .", "devlane plugins new my-plugin"),
    "cache": ("devlane cache stats", "devlane cache clear"),
    "completion": ("devlane completion bash > ~/.local/share/bash-completion/completions/devlane",
                   "devlane completion zsh > \"${fpath[1]}/_devlane\"",
                   "devlane completion fish > ~/.config/fish/completions/devlane.fish"),
}


class DevlaneParser(argparse.ArgumentParser):
    """argparse, with kubectl's manners for mistakes: one line, a hint, exit 2; an unknown option is named before
    anything else (`--flw pr-1` is a typo of --flow, not a missing --flow)."""

    def error(self, message: str) -> NoReturn:
        hint = suggestion(self, message) or f"see: {self.prog} --help"
        self.exit(2, f"{self.prog}: error: {message}\nhint: {hint}\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def, override]
        """As argparse's, but an unknown option is reported first, by the (sub-)command that was given it, which
        knows the options it was close to."""
        argv = sys.argv[1:] if args is None else list(args)
        parser, unknown = _unknown_options(self, argv)
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        parsed, extras = self.parse_known_args(argv, namespace)
        if extras:
            chosen(self, parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def _unknown_options(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The (sub-)command `argv` names, and the `--options` in it that command does not have (nor abbreviates
    uniquely, as argparse allows), read before argparse checks what is required."""
    current, unknown = parser, []
    for token in argv:
        if token == "--":
            break
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and token in subs[0].choices:
            current = subs[0].choices[token]
        elif token.startswith("--"):
            name = token.split("=", 1)[0]
            options = _options(current)
            if name not in options and len([o for o in options if o.startswith(name)]) != 1:
                unknown.append(token)
    return current, unknown


def chosen(parser: argparse.ArgumentParser, parsed: argparse.Namespace) -> argparse.ArgumentParser:
    """The deepest sub-command parser `parsed` went through (`devlane plugins lock`), else `parser`."""
    current = parser
    while True:
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(parsed, subs[0].dest, None) if subs else None
        if not subs or name not in subs[0].choices:
            return current
        current = subs[0].choices[name]


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions for s in a.option_strings if s.startswith("--")]


def _close(word: str, candidates: list[str]) -> str | None:
    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.75)
    return found[0] if found else None


def suggestion(parser: argparse.ArgumentParser, message: str) -> str | None:
    """`did you mean ...?` for a mistyped option, sub-command or option name given a value it does not take."""
    unknown = re.match(r"unrecognized arguments: (.*)", message)
    if unknown:
        for word in unknown.group(1).split():
            if word.startswith("--"):
                close = _close(word.split("=", 1)[0], _options(parser))
                if close:
                    return f"did you mean {close}? (see: {parser.prog} --help)"
        return None
    choice = re.match(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        argument, value, among = choice.groups()
        names = re.findall(r"'([^']*)'", among)
        close = _close(value, names)
        if close:
            return f"did you mean {close}? (see: {parser.prog} --help)"
        if argument.startswith("--"):  # `--services orders=IMG`: an option whose neighbour takes that value
            other = _close(argument, [o for o in _options(parser) if o != argument])
            if other:
                return f"did you mean {other} {value}? (see: {parser.prog} --help)"
    return None


def add_examples(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Each command's examples at the end of its --help (sub-commands inherit their group's when they have none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                key = f"{path} {name}".strip()
                examples = EXAMPLES.get(key) or EXAMPLES.get(key.split()[0])
                if examples and not sub.epilog:
                    sub.epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples)
                    sub.formatter_class = argparse.RawDescriptionHelpFormatter
                add_examples(sub, key)
