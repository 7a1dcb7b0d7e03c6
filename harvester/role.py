"""The ``harvester`` role of the ``harvestsuite.roles`` entry points: a harvest controller, which
``harvestsuite demo`` runs in a thread beside the other roles (harvestdef/demo/runner.py).

Loading the entry point imports every module the controller runs, in the thread that loads it: the demo
loads all its roles before it starts their threads. Imported as each role started, in threads of their own,
two roles could each hold the import lock of a module of one package that the other waited for (CPython
locks imports one module at a time); CPython then fails one of the imports with a half-made module, as it
did to the web UI and the harvest controller over warcio's modules, and the demo stopped at its start.
``harvestsuite harvester run`` imports them as it starts, in its one thread, so that the other commands
stay quick to start.
"""

from __future__ import annotations

import harvestdef.metrics  # noqa: F401 - the role's metrics endpoint
import harvestdef.queues  # noqa: F401 - the controller's transport
import harvester.controller  # noqa: F401 - the controller, its crawl driver and its post-processing
from harvester.commands import run_controller

__all__ = ["run_controller"]
