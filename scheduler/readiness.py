"""Readiness, the middle of every scheduler tick (scheduler/tick.py): which harvests run now, and why the others
wait (NetarchiveSuite's HarvestDefinitionDBDAO.getReadyHarvestDefinitions, with reasons).

A selective or event harvest is ready when it is active and its nextdate has come, and, with
postponeUnregisteredChannel, a registered controller serves its channel. A run asked for outside the
schedule ("run now", harvestdef.repositories.runrequests) makes a selective harvest ready whatever its next
run date and active flag, and a snapshot step whatever its active flag; the rest holds. The run takes the
request in its own transaction, so one request makes one run. A snapshot step is ready when it is active
(or asked to run), has not run (numevents < 1), its previous step (if any) has jobs and none of them is NEW,
SUBMITTED or STARTED. Nothing is built before a step: isindexready is set when the step is otherwise ready,
and each of its jobs then waits for its own sources.

The deduplication sources of the NEW jobs not yet ready are decided here too (scheduler.dedupsources): each
job is ready once the earlier jobs holding its domains' captures have ended and enough of their entries
are stored; the jobs that wait, and why, are told by the tick report and, for a selective harvest that
waits for its next run, the harvest's state.

Why each harvest waits, was generated or was deactivated is kept in harvest_state (``set_harvest_state``,
written only when it changes), in English and as its phrase (harvestdef/harvestreasons.py). Readiness
reads harvests and their runs' jobs directly (a few queries over every active harvest, each shaped for its
question) and writes harvest_state, the scheduler's own note for the UI; a definition changes only through
HarvestRepository, audited.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import Connection, Engine, and_, func, or_, select, update

from harvestdef import harvestreasons as reasons
from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.model.controllers import Hearing, last_sign_of_life
from harvestdef.model.definitions import RunOutlook
from harvestdef.model.status import JobStatus
from harvestdef.phrases import Phrase
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.schedules import scheduler_zone
from scheduler.dedupsources import HarvestRun, JobReadiness, StoredEntries, chain_jobs, has_index_ready
from scheduler.jobgen.generate import GenerationOptions
from scheduler.tickreport import TickOptions, TickReport

log = logging.getLogger(__name__)

WAITING, GENERATING, GENERATED, DEACTIVATED, FINISHED = "waiting", "generating", "generated", "deactivated", "finished"
_UNFINISHED = [int(JobStatus.NEW), int(JobStatus.SUBMITTED), int(JobStatus.STARTED)]


def set_harvest_state(conn: Connection, harvest_id: int, state: str, reason: Phrase | str, now: datetime) -> bool:
    """Store why the harvest is where it is, in English and, given as a phrase, as the phrase's JSON too (a
    page says it in its language by code: harvestdef/harvestreasons.py); True if that changed."""
    hs = s.harvest_state
    english = str(reason)[:2000]
    said = reasons.stored(reason) if isinstance(reason, Phrase) else None
    current = conn.execute(select(hs.c.state, hs.c.reason, hs.c.reason_phrase)
                           .where(hs.c.harvest_id == harvest_id)).first()
    if current is not None and tuple(current) == (state, english, said):
        return False
    values = {"state": state, "reason": english, "reason_phrase": said, "changed_at": now}
    if current is None:
        conn.execute(hs.insert().values(harvest_id=harvest_id, **values))
    else:
        conn.execute(update(hs).where(hs.c.harvest_id == harvest_id).values(**values))
    return True


class HarvestReadiness:
    """The readiness of one scheduler's harvests (see the module's docstring). ``readiness`` decides the
    deduplication sources of NEW jobs; None means deduplication is off (harvester.deduplication.enabled):
    jobs go without, and isindexready is set directly. ``hearing`` is the scheduler's hearing now
    (Supervisor.heard): a controller's silence while it heard nothing does not make it lost."""

    def __init__(self, engine: Engine, generation: GenerationOptions, options: TickOptions,
                 readiness: JobReadiness | None, hearing: Callable[[], Hearing]) -> None:
        self.engine = engine
        self.generation = generation
        self.options = options
        self.readiness = readiness
        self.hearing = hearing

    def _served_channels(self, conn: Connection, now: datetime) -> set[str]:
        """The channels of accepted controllers that are not lost (a registration counts as a sign of life)."""
        h = s.harvesters
        served: set[str] = set()
        for channels, last_heartbeat, registered_at, interval in conn.execute(select(
                h.c.channels, h.c.last_heartbeat, h.c.registered_at, h.c.heartbeat_interval)
                .where(h.c.accepted.is_(True))):
            if not self.options.lost.is_lost(last_sign_of_life(last_heartbeat, registered_at), interval, now,
                                             self.hearing()):
                served.update(name for name in channels.split(",") if name)
        return served

    def ready_harvests(self, now: datetime, report: TickReport,
                        waiting_for_index: dict[int, tuple[str, Phrase]]) -> list[tuple[int, str]]:
        """The harvests to generate now; the others get the reason they wait, to which
        ``waiting_for_index`` (harvest id -> name, note) adds why the jobs of their runs wait. A harvest
        that readiness does not look at (an ended schedule, a snapshot step that ran) keeps its state: the
        next tick would have nothing to replace a note with once the index is built."""
        hd, full, partial, ch, j = (s.harvestdefinitions, s.fullharvests, s.partialharvests, s.harvestchannel,
                                    s.jobs)
        ready: list[tuple[int, str]] = []
        with write_transaction(self.engine) as conn:
            served = self._served_channels(conn, now)
            default_selective = conn.scalar(select(ch.c.name).where(ch.c.issnapshot.is_(False),
                                                                    ch.c.isdefault.is_(True)))
            requested = select(s.harvest_run_requests.c.harvest_id)
            selective = conn.execute(
                select(hd.c.harvest_id, hd.c.name, partial.c.nextdate, ch.c.name.label("channel"),
                       hd.c.harvest_id.in_(requested).label("requested"))
                .join(partial, partial.c.harvest_id == hd.c.harvest_id)
                .outerjoin(ch, ch.c.id == hd.c.channel_id)
                .where(or_(and_(hd.c.isactive.is_(True), partial.c.nextdate.is_not(None)),
                           hd.c.harvest_id.in_(requested)))).all()
            for harvest_id, name, nextdate, channel, is_requested in selective:
                channel = channel or default_selective
                index_note = waiting_for_index.get(harvest_id)
                also = index_note[1] if index_note else None
                if not is_requested and nextdate > now:
                    self._wait(conn, harvest_id, name, reasons.joined(reasons.next_run(nextdate), also), now,
                               report)
                elif self.options.postpone_unregistered_channel and channel not in served:
                    self._wait(conn, harvest_id, name, reasons.joined(
                        reasons.run_asked_for() if is_requested else None, reasons.postponed(channel), also),
                        now, report)
                else:
                    ready.append((harvest_id, name))
            self._note_ended(conn, now, report, waiting_for_index)

            snapshots = conn.execute(
                select(hd.c.harvest_id, hd.c.name, full.c.previoushd, full.c.isindexready)
                .join(full, full.c.harvest_id == hd.c.harvest_id)
                .where(or_(hd.c.isactive.is_(True), hd.c.harvest_id.in_(requested)), hd.c.numevents < 1)).all()
            for harvest_id, name, previous, index_ready in snapshots:
                if previous is not None:
                    total, unfinished = conn.execute(select(
                        func.count(), func.count().filter(j.c.status.in_(_UNFINISHED)))
                        .where(j.c.harvest_id == previous)).one()
                    if total == 0:
                        self._wait(conn, harvest_id, name, reasons.previous_step_without_jobs(previous), now,
                                   report)
                        continue
                    if unfinished:
                        self._wait(conn, harvest_id, name,
                                   reasons.previous_step_unfinished(previous, unfinished, total), now, report)
                        continue
                if not index_ready:
                    # each job of the step waits for its own sources once generated (_index_runs)
                    HarvestRepository(conn).mark_index_ready(harvest_id)
                ready.append((harvest_id, name))
        return ready

    def _note_ended(self, conn: Connection, now: datetime, report: TickReport,
                    waiting_for_index: dict[int, tuple[str, Phrase]]) -> None:
        """Active selective harvests without a next run: one that never ran waits, saying it never will and
        why; one that has run is finished, with its last run."""
        hd, partial = s.harvestdefinitions, s.partialharvests
        harvests = HarvestRepository(conn, clock=lambda: now,
                                     zone=scheduler_zone(self.generation.timezone))
        for (harvest_id,) in conn.execute(
                select(hd.c.harvest_id).join(partial, partial.c.harvest_id == hd.c.harvest_id)
                .where(hd.c.isactive.is_(True), partial.c.nextdate.is_(None))).all():
            harvest = harvests.get_by_id(harvest_id)
            outlook = harvests.outlook(harvest)
            index_note = waiting_for_index.get(harvest_id)
            also = index_note[1] if index_note else None
            if outlook.outlook is RunOutlook.CANNOT_RUN:
                self._wait(conn, harvest_id, harvest.name,
                           reasons.joined(reasons.never_runs(outlook.reason_phrase), also), now, report)
                continue
            report.finished[harvest.name] = outlook.reason
            finished = reasons.finished(outlook.reason_phrase, outlook.last_run, outlook.last_run_at)
            if set_harvest_state(conn, harvest_id, FINISHED, reasons.joined(finished, also), now):
                log.info("harvest definition %r is finished: %s", harvest.name, outlook.reason)

    def _wait(self, conn: Connection, harvest_id: int, name: str, reason: Phrase, now: datetime,
              report: TickReport) -> None:
        report.waiting[name] = str(reason)
        if set_harvest_state(conn, harvest_id, WAITING, reason, now):
            log.info("harvest definition %r is waiting: %s", name, reason)

    # ------------------------------------------------------------------ deduplication indexes
    def index_runs(self, report: TickReport,
                    harvest_ids: set[int] | None = None) -> dict[int, tuple[str, Phrase]]:
        """Decide the deduplication sources of the NEW jobs of every run that has jobs not ready (of
        ``harvest_ids`` if given); returns harvest id -> (name, why its runs' jobs wait)."""
        waiting: dict[int, tuple[str, Phrase]] = {}
        readiness = self.readiness
        if readiness is None:
            return waiting
        j, hd = s.jobs, s.harvestdefinitions
        query = (select(j.c.harvest_id, j.c.harvest_num, j.c.snapshot, hd.c.name).distinct()
                 .select_from(j.join(hd, hd.c.harvest_id == j.c.harvest_id))
                 .where(j.c.status == int(JobStatus.NEW), ~has_index_ready(j))
                 .order_by(j.c.harvest_id, j.c.harvest_num))
        if harvest_ids is not None:
            query = query.where(j.c.harvest_id.in_(harvest_ids))
        stored = StoredEntries(readiness.store)
        with write_transaction(self.engine) as conn:
            for harvest_id, harvest_num, snapshot, name in conn.execute(query).all():
                candidates = chain_jobs(conn, HarvestRun(harvest_id, harvest_num), snapshot)
                note = readiness.run_note(conn, harvest_id, harvest_num, candidates, stored,
                                          report.dedup_decisions)
                if note is None:
                    continue
                note = reasons.run_jobs_wait(harvest_num, note)
                if harvest_id in waiting:
                    note = reasons.joined(waiting[harvest_id][1], note)
                assert note is not None
                waiting[harvest_id] = (name, note)
                report.indexing[name] = str(note)
        return waiting


__all__ = ["DEACTIVATED", "FINISHED", "GENERATED", "GENERATING", "HarvestReadiness", "WAITING", "set_harvest_state"]
