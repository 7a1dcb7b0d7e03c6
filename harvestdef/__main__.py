"""``python -m harvestdef`` is the ``harvestsuite`` command."""

import sys

from harvestdef.cli import main

# Guarded: worker processes started with "spawn" (the scheduler's intake processes) import this module again.
if __name__ == "__main__":
    sys.exit(main())
