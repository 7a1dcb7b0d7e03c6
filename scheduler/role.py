"""The ``scheduler`` and ``qa`` roles of the ``harvestsuite.roles`` entry points: the scheduler and the QA
worker, which ``harvestsuite demo`` runs in threads beside the other roles (harvestdef/demo/runner.py).

Loading the entry point imports every module the two run, in the thread that loads it: the demo loads all
its roles before it starts their threads. harvester/role.py says why. The QA worker's browser (Playwright,
an optional dependency that only that worker imports) is left to it.
"""

from __future__ import annotations

import apscheduler.schedulers.background  # noqa: F401 - the service's ticks, imported as it starts

import harvestdef.db.engine  # noqa: F401
import harvestdef.metrics  # noqa: F401 - the role's metrics endpoint
import harvestdef.queues  # noqa: F401
import scheduler.service  # noqa: F401 - job generation, dispatch, intake, supervision
import scheduler.thumbnails  # noqa: F401 - the QA worker
from scheduler.commands import run_qa_worker, run_scheduler

__all__ = ["run_qa_worker", "run_scheduler"]
