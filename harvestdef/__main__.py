"""``python -m harvestdef`` is the ``harvestsuite`` command."""

import sys

from harvestdef.cli import main

sys.exit(main())
