"""`devlane completion bash|zsh|fish`: the shell's completion script, made from the parser itself by argcomplete
(at each TAB the shell asks `devlane`, which answers from the same parser it parses with: every command, option and
choice, never a list kept by hand)."""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "fish")


def cmd_completion(args: argparse.Namespace) -> int:
    import argcomplete

    print(argcomplete.shellcode(["devlane"], shell=args.shell), end="")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("completion", help="print the shell completion script (bash, zsh or fish)",
                            description="Print the completion script for SHELL; load it as the examples show.")
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    parser.set_defaults(handler=cmd_completion)
