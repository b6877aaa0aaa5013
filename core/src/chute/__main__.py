"""``python -m chute``: the ``chute`` command (chute.tools.cli)."""

import sys

from chute.tools.cli import main

sys.exit(main())
