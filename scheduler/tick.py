"""One scheduler tick: supervision, readiness and job generation (NetarchiveSuite's JobSupervisor, and its
HarvestJobGenerator with HarvestDefinitionDBDAO.getReadyHarvestDefinitions).

A tick, every jobgenerationperiod seconds (first at start), or once with ``harvestsuite scheduler tick
--once``:

1. Supervision of the running jobs (scheduler/supervision.py): jobs timed out, controllers lost or back
   without their job, messages lost; the jobs that stop running so are failed or resubmitted.
2. Deduplication sources of the NEW jobs not yet ready (scheduler/readiness.py, scheduler.dedupsources).
3. Readiness (scheduler/readiness.py): which harvests run now, and why each other waits, kept in
   harvest_state.
4. Generation, harvest by harvest, each run in one transaction (scheduler.jobgen.generate); a failed
   run deactivates its harvest, and the reason is stored and notified (e-mail, and a webhook event recorded
   with the harvest's state). The jobs of each run just made are decided at once (step 2 for those runs),
   not a tick later.
   Before generation, the job-generation previews the web UI asked for are made and stored
   (scheduler.previews), so a preview asked for together with a run shows that run.

The tick's parts read harvests and jobs directly (a few queries over every active harvest and running job,
each shaped for its question) and write harvest_state, the scheduler's own note for the UI; every change of
a job or a definition goes through JobRepository or HarvestRepository, audited.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime

from sqlalchemy import Engine

from harvestdef import harvestreasons as reasons
from harvestdef.archive import ArchiveStore
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import DatabaseError, JobGenerationError
from harvestdef.queues import QueueNames, Transport
from scheduler.dedupsources import JobReadiness
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.notify import Notifier
from scheduler.previews import make_waiting_previews
from scheduler.readiness import DEACTIVATED, GENERATED, GENERATING, HarvestReadiness, set_harvest_state
from scheduler.supervision import Supervisor
from scheduler.tickreport import TickOptions, TickReport

log = logging.getLogger(__name__)


class Ticker:
    """Carries out ticks; one at a time per process (the leader lock makes it one per database).

    ``readiness`` decides the deduplication sources of NEW jobs; None means deduplication is off
    (harvester.deduplication.enabled): jobs go without, and isindexready is set directly.
    """

    def __init__(self, engine: Engine, generation: GenerationOptions, options: TickOptions, notifier: Notifier,
                 readiness: JobReadiness | None = None, transport: Transport | None = None,
                 names: QueueNames | None = None, store: ArchiveStore | None = None, holder: str = "") -> None:
        self.engine = engine
        self.generation = generation
        self.options = options
        self.notifier = notifier
        self.supervision = Supervisor(engine, generation, options, notifier, transport, names, store, holder)
        self.harvests = HarvestReadiness(engine, generation, options, readiness,
                                         lambda: self.supervision.heard)
        self._running = threading.Lock()

    def tick(self, now: datetime | None = None) -> TickReport:
        report = TickReport()
        if not self._running.acquire(blocking=False):
            log.warning("the previous tick is still running; this one is skipped")
            return report
        try:
            now = now or utcnow()
            self.supervise(now, report)
            waiting_for_index = self.harvests.index_runs(report)
            ready = self.harvests.ready_harvests(now, report, waiting_for_index)
            # before generation: a preview asked for with a run shows that run, not the one after it
            self._make_previews(now, report)
            for harvest_id, name in ready:
                self._generate(harvest_id, name, now, report)
            if ready:
                self.harvests.index_runs(report, {harvest_id for harvest_id, _ in ready})
        finally:
            self._running.release()
        if report.generated or report.deactivated or report.timed_out or report.interrupted or report.resubmitted:
            log.info("tick: generated %s; deactivated %s; timed out %s; interrupted %s; resubmitted %s",
                     {name: len(ids) for name, ids in report.generated.items()}, list(report.deactivated),
                     report.timed_out, report.interrupted, report.resubmitted)
        return report

    def supervise(self, now: datetime, report: TickReport) -> None:
        """Supervision alone (scheduler/supervision.py), the first step of a tick."""
        self.supervision.supervise(now, report)

    # ------------------------------------------------------------------ previews
    def _make_previews(self, now: datetime, report: TickReport) -> None:
        """The job-generation previews the web UI asked for (scheduler.previews); a failure to store them is
        logged, and the next tick tries again."""
        try:
            report.previewed = make_waiting_previews(self.engine, self.generation, now)
        except DatabaseError as exc:
            log.warning("the previews asked for could not be made now: %s", exc)

    # ------------------------------------------------------------------ generation
    def _generate(self, harvest_id: int, name: str, now: datetime, report: TickReport) -> None:
        with write_transaction(self.engine) as conn:
            set_harvest_state(conn, harvest_id, GENERATING, reasons.generating(now), now)
        started = time.monotonic()
        try:
            result = generate_jobs(self.engine, harvest_id, self.generation, now)
        except JobGenerationError as exc:
            reason = str(exc)
            report.deactivated[name] = reason
            with write_transaction(self.engine) as conn:
                set_harvest_state(conn, harvest_id, DEACTIVATED, exc.phrase or reason, utcnow())
                self.notifier.events(conn).harvest_deactivated(harvest_id, reason)
            self.notifier.notify(f"Harvest definition {name} deactivated", reason)
            return
        report.generated[name] = result.job_ids
        report.generation_seconds[name] = time.monotonic() - started
        summary = reasons.generated(result.harvest_num, len(result.job_ids), now, result.next_date)
        with write_transaction(self.engine) as conn:
            set_harvest_state(conn, harvest_id, GENERATED, summary, utcnow())


__all__ = ["Ticker", "TickOptions", "TickReport", "set_harvest_state"]
