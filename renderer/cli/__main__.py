"""`python -m renderer.cli`: the same as the `devlane` command."""

from . import run

run()
