"""`python -m renderer.cli`: the same as the `devlane` command."""

import sys

from . import main

sys.exit(main())
