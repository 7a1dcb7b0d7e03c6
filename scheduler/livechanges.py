"""Live changes of running jobs, the scheduler's part (docs/scheduler.md, Live changes): sending each pending
change to the controller that holds its job's claim, settling it with that controller's answer, and refusing
what a job leaves pending when it stops running.

Operators' control actions (pause, resume, checkpoint, stop, fail) and live changes are rows of
job_changes, which the web UI writes pending; harvestdef.repositories.jobchanges has their states and the
table of their moves. Nothing here decides whether a change makes sense: the controller does, and says so.

* Sending (``LiveChangeSender.send``: every liveChangeInterval seconds on the leading scheduler, and once
  from ``SchedulerService.send_live_changes`` and ``tick_once``). The pending changes of STARTED jobs that
  a controller has claimed, never sent or not sent for liveChangeResendAfter seconds, go as LiveChange
  messages to that controller's durable control queue: per job its control actions first, then its live
  changes, each in version order, the order the controller carries them out in. Only the changes due go:
  one sent before waits in the durable queue ahead of those sent after it, so a flood of changes does not
  fill the queue with copies of the earlier ones at every round. They are marked sent once
  the broker has confirmed them; one not confirmed stays due for the next round. A scheduler that dies
  between the confirm and the mark sends it again, which is harmless: a controller applies a version once
  and answers a repeat with what it answered before. A controller that is away finds them in its durable
  queue when it comes back (one copy more for every resend interval it stays away).
* Settling (``settle``, the handler of LiveChangeResult). The answer of the job's current attempt, from the
  controller that holds it, settles a pending change applied or refused with the controller's reason, the
  time and the attempt, audited in the job's trail. Any other answer changes nothing and is logged: one of
  another attempt or controller, of a change there is not, or a repeat for a change settled already.
* Ending (``refuse_left_changes``). Whoever moves a job out of SUBMITTED or STARTED (the intake's final
  status, the tick's timeout and resubmissions, a dead-lettered DoOneCrawl) refuses its pending changes in
  the same transaction, with a reason that says what happened. A resubmitted job's changes are not carried
  to the new job: its crawl starts from its crawl template. The tick also refuses what a job that ended by
  other means has left pending (``refuse_changes_of_ended_jobs``; the web UI stored a change as the job
  ended, say), so no change waits for ever.

Locks: every write to a job's changes holds the job's row first (JobChangeRepository.add, a status change
and the refusal that follows it, ``settle``, and the sender's mark, one job per transaction), so writers of
one job's changes queue on that row and never deadlock on the rows of its changes.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, Engine

from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.livechanges import PENDING, REFUSED
from harvestdef.messages import LiveChange, LiveChangeResult, MessageError, encode
from harvestdef.model.status import JobStatus
from harvestdef.queues import PublishFailures, QueueNames, Transport
from harvestdef.repositories.audit import AuditBatch
from harvestdef.repositories.base import SYSTEM_ACTOR, database_errors, record_audit
from harvestdef.repositories.jobchanges import JobChangeRepository, Outgoing
from scheduler.batch import Batch

log = logging.getLogger(__name__)

# A job in one of these has stopped running for good: whatever it still has pending will never be applied.
_ENDED = (JobStatus.DONE, JobStatus.FAILED, JobStatus.RESUBMITTED, JobStatus.FAILED_REJECTED)


# ---------------------------------------------------------------------- reasons
def ended_reason(job_id: int, status: JobStatus, how: str) -> str:
    """Why a change is refused when its job ended ``status``; ``how`` says who ended it and why."""
    return f"job {job_id} ended {status} ({how}) before its controller applied this change"


def resubmitted_reason(job_id: int, new_job_id: int, why: str) -> str:
    """Why a change is refused when its job was resubmitted: the change stays with the old job."""
    return (f"job {job_id} was resubmitted as job {new_job_id} ({why}) before its controller applied this "
            f"change; the new job's crawl starts from its crawl template, without the changes made to this one")


# ---------------------------------------------------------------------- ending
def lock_job(conn: Connection, job_id: int) -> None:
    """Hold the job's row until the transaction ends: every writer of a job's changes does so first."""
    JobChangeRepository(conn).lock_job(job_id)


def refuse_left_changes(conn: Connection, job_id: int, reason: str, now: datetime, *,
                        audit: AuditBatch | None = None, actor: str = SYSTEM_ACTOR) -> int:
    """Refuse the pending changes of a job that stopped running, in the caller's transaction, which holds
    the job's row (it has just changed the job's status); returns how many there were. Audited in the
    job's trail when there were any."""
    refused = JobChangeRepository(conn).refuse_pending(job_id, reason, now)
    if refused:
        before, after = {"changes_pending": refused}, {"changes_pending": 0, "changes_refused": refused,
                                                       "reason": reason}
        if audit is not None:
            audit.record(actor, "jobs", job_id, "update", before, after)
        else:
            record_audit(conn, actor, "jobs", job_id, "update", before, after)
    return refused


def refuse_changes_of_ended_jobs(engine: Engine, now: datetime) -> dict[int, int]:
    """Refuse the pending changes of jobs that have ended (DONE, FAILED, RESUBMITTED, FAILED_REJECTED)
    whoever ended them; job id -> how many. The pending changes are found through the index on their
    state, so when none is pending this is one look into that index."""
    with database_errors("finding the pending changes of ended jobs"), engine.connect() as conn:
        ended = JobChangeRepository(conn).jobs_with_pending(_ENDED)
    refused: dict[int, int] = {}
    for job_id in ended:
        with database_errors(f"refusing the pending changes of job {job_id}"), write_transaction(engine) as conn:
            lock_job(conn, job_id)
            status = JobChangeRepository(conn).job_status(job_id)
            if status is None or status not in _ENDED:
                continue
            reason = ended_reason(job_id, status, "the change was stored as the job ended")
            count = refuse_left_changes(conn, job_id, reason, now)
        if count:
            refused[job_id] = count
            log.warning("job %d is %s: its %d pending changes are refused", job_id, status, count)
    return refused


# ---------------------------------------------------------------------- settling
def settle(batch: Batch, result: LiveChangeResult, sent_at: datetime) -> bool:
    """Settle a change with its controller's answer; True if it was pending and is settled now. An answer of
    another attempt or controller than the job's, of an unknown change, or for a change settled already
    (a repeat, or the job ended first) changes nothing."""
    job_id, version = result.job_id, result.version
    job = batch.jobs().find(job_id, with_documents=False, for_update=True)
    if job is None:
        log.warning("%s of change %d of unknown job %d ignored", result.state, version, job_id)
        return False
    if job.attempt_id != result.attempt_id or job.controller != result.controller_id:
        log.warning("%s of change %d of job %d from %s (attempt %s) ignored: the job's attempt is %s, granted to "
                    "%s (%s)", result.state, version, job_id, result.controller_id, result.attempt_id,
                    job.attempt_id, job.controller or "nobody", job.status)
        return False
    changes = JobChangeRepository(batch.conn)
    change = changes.get(job_id, version)
    if change is None:
        log.warning("%s of change %d of job %d ignored: the job has no such change", result.state, version, job_id)
        return False
    if change.state != PENDING:
        log.info("%s of change %d of job %d ignored: it is %s already", result.state, version, job_id, change.state)
        return False
    # The controller's clock says when; never before the change was made, whatever the clocks of the hosts.
    when = max(datetime.fromisoformat(result.happened_at).astimezone(UTC), change.created)
    if not changes.settle(job_id, version, result.state, result.reason, when, result.attempt_id):
        return False  # settled since the read: the job's row lock makes this the rare case of a stale read
    batch.audit.record(result.controller_id, "jobs", job_id, "update",
                       {"change_version": version, "change_state": PENDING},
                       {"change_version": version, "change_kind": change.kind, "change_state": result.state,
                        "reason": result.reason, "attempt_id": result.attempt_id})
    batch.after_commit(functools.partial(
        log.info, "change %d (%s) of job %d %s by %s%s", version, change.kind, job_id, result.state,
        result.controller_id, f": {result.reason}" if result.reason else ""))
    return True


# ---------------------------------------------------------------------- sending
def live_change(outgoing: Outgoing) -> LiveChange:
    """The message of one pending change, to the attempt that holds its job's claim.

    :raise MessageError: the stored change does not make a valid message (a row written by other means).
    """
    change = outgoing.change
    return LiveChange(job_id=change.job_id, attempt_id=outgoing.attempt_id, version=change.version,
                      kind=change.kind, payload=json.dumps(change.payload, sort_keys=True), author=change.author,
                      created=change.created.astimezone(UTC).isoformat())


class LiveChangeSender:
    """Sends the pending changes of running jobs to their controllers; one round at a time."""

    def __init__(self, engine: Engine, transport: Transport, names: QueueNames, resend_after: timedelta) -> None:
        self.engine = engine
        self.transport = transport
        self.names = names
        self.resend_after = resend_after
        self._round = threading.Lock()

    def send(self, now: datetime | None = None) -> int:
        """One round: every change due is published, confirmed, then marked sent; returns how many were sent.

        :raise DatabaseError: the changes could not be read, or their sending not noted (they are sent
            again at the next round).
        :raise QueueError: the transport failed; nothing was marked sent.
        """
        with self._round:
            now = now or utcnow()
            with database_errors("reading the live changes to send"), self.engine.connect() as conn:
                outgoing = JobChangeRepository(conn).to_send(now, self.resend_after)
            if not outgoing:
                return 0
            messages: list[tuple[Outgoing, bytes]] = []
            for item in outgoing:
                try:
                    messages.append((item, encode(live_change(item))))
                except MessageError as exc:
                    self._refuse_unsendable(item, str(exc), now)
            sent = self._publish(messages)
            self._mark_sent(sent, now)
            return len(sent)

    def _publish(self, messages: Sequence[tuple[Outgoing, bytes]]) -> list[Outgoing]:
        """Publish in the order given (job, version) and await the confirms; the changes confirmed."""
        if not messages:
            return []
        failed: dict[int, object] = {}
        try:
            self.transport.publish_many([(self.names.control(item.controller_id), body) for item, body in messages])
        except PublishFailures as exc:
            failed = dict(exc.failures)
            for index, error in failed.items():
                change = messages[index][0].change
                log.warning("change %d of job %d was not confirmed; it is sent again at the next round: %s",
                            change.version, change.job_id, error)
        return [item for index, (item, _) in enumerate(messages) if index not in failed]

    def _mark_sent(self, sent: Sequence[Outgoing], now: datetime) -> None:
        """Note the sending, one job per transaction under the job's row lock (see the module docstring)."""
        by_job: dict[int, list[Outgoing]] = {}
        for item in sent:
            by_job.setdefault(item.change.job_id, []).append(item)
        for job_id, items in sorted(by_job.items()):
            with database_errors(f"noting the sending of job {job_id}'s changes"), \
                    write_transaction(self.engine) as conn:
                lock_job(conn, job_id)
                JobChangeRepository(conn).mark_sent([(job_id, item.change.version) for item in items], now)
            log.info("job %d: changes %s sent to %s (attempt %s)", job_id,
                     ", ".join(str(item.change.version) for item in items), items[0].controller_id,
                     items[0].attempt_id)

    def _refuse_unsendable(self, item: Outgoing, error: str, now: datetime) -> None:
        """A stored change that makes no valid message is refused saying why, rather than tried for ever."""
        change = item.change
        reason = f"the scheduler cannot send this change: {error}"
        with database_errors(f"refusing change {change.version} of job {change.job_id}"), \
                write_transaction(self.engine) as conn:
            lock_job(conn, change.job_id)
            if JobChangeRepository(conn).settle(change.job_id, change.version, REFUSED, reason, now, ""):
                record_audit(conn, SYSTEM_ACTOR, "jobs", change.job_id, "update",
                             {"change_version": change.version, "change_state": PENDING},
                             {"change_version": change.version, "change_kind": change.kind,
                              "change_state": REFUSED, "reason": reason})
        log.error("change %d of job %d refused: %s", change.version, change.job_id, reason)


__all__ = ["LiveChangeSender", "ended_reason", "live_change", "refuse_changes_of_ended_jobs", "refuse_left_changes",
           "resubmitted_reason", "settle"]
