"""One write transaction for several of the scheduler queue's messages, and what must happen around its commit.

Most of the scheduler's cost per message is per transaction: a commit, and one INSERT per audit row
and per summary. A ``Batch`` is the transaction of one or more messages; handlers write into it, and
leave with it what has to wait:

* audit rows (``AuditBatch``) and historyinfo rows with both summaries (``HistoryBatch``), written
  together at its end, so they still commit with the changes or not at all;
* the running-job monitor rows of the jobs that ended, removed together at its end;
* publishes that must be confirmed before the commit is trusted (DoOneCrawl: scheduler.dispatch),
  sent at its end, after the handlers' writes, so a handler that fails publishes nothing;
* steps that decide from the batch's writes as a whole, run last (``before_commit``): whether a harvest run
  a job of which ended is done, for its webhook event (scheduler.intake);
* what goes out once it has committed: the answers to claims and registrations, and the steps (log
  lines, notifications) of each message, so the message whose answer could not be sent is the one
  returned to its queue.

Both kinds of publishes go to the transport together (``Transport.publish_many``): one handoff, and
their confirms awaited side by side, not one after another.

``transaction`` opens and finishes a batch; it is the only way the scheduler's message handlers get a
transaction, and where the database's errors become ours (DatabaseError, through
harvestdef.repositories.base.database_errors), so the intake catches HarvestSuiteError only.
``Batch.run_after_commit`` then publishes the answers, runs the steps it was given and says which
messages' answers or steps failed. The handlers (scheduler.handlers has their table) take a batch,
whether it carries one message or several.

``finish`` removes the running-job monitor rows of the jobs that ended with a direct statement: those
rows are the live figures of a running job, written by the intake (scheduler.intake) and shown by the
web UI, never a definition or a job's state, and they have no repository.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, Engine, delete

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.messages import ClaimRequest, CrawlStatus, HarvesterReady, LiveChangeResult
from harvestdef.queues import Delivery, PublishFailures, QueueError, Transport
from harvestdef.repositories.audit import AuditBatch
from harvestdef.repositories.base import SYSTEM_ACTOR, database_errors
from harvestdef.repositories.history import HistoryBatch, HistoryWriter
from harvestdef.repositories.jobs import JobRepository

log = logging.getLogger(__name__)

@dataclass
class Batch:
    """The transaction of one or more messages, and what its handlers left for its end."""

    conn: Connection
    transport: Transport
    audit: AuditBatch = field(default_factory=AuditBatch)
    history: HistoryBatch = field(default_factory=HistoryBatch)
    ended_jobs: list[int] = field(default_factory=list)
    confirmed_publishes: list[tuple[str, bytes]] = field(default_factory=list)
    answers: list[tuple[int, str, bytes]] = field(default_factory=list)  # (message, queue, body)
    steps_after_commit: list[tuple[int, Callable[[], None]]] = field(default_factory=list)
    # run last before the commit, after the history and its run summaries; one step per key
    last_steps: dict[Hashable, Callable[[Connection], None]] = field(default_factory=dict)
    message: int = 0  # the index of the message being handled, whose answers and steps are added

    def jobs(self, actor: str = SYSTEM_ACTOR) -> JobRepository:
        return JobRepository(self.conn, actor=actor, audit=self.audit)

    def history_writer(self) -> HistoryWriter:
        return HistoryWriter(self.conn, self.history)

    def job_ended(self, job_id: int) -> None:
        """The job leaves the running-jobs monitor (NetarchiveSuite's JobEndedMessage) with this commit."""
        self.ended_jobs.append(job_id)

    def publish_before_commit(self, queue: str, body: bytes) -> None:
        """Published, and its confirm awaited, before the transaction commits; a failed publish rolls it back."""
        self.confirmed_publishes.append((queue, body))

    def answer_after_commit(self, queue: str, body: bytes) -> None:
        """Published (confirmed) once the transaction has committed, with the batch's other answers; if it
        fails, the message being handled is returned to its queue and its steps do not run."""
        self.answers.append((self.message, queue, body))

    def before_commit(self, key: Hashable, step: Callable[[Connection], None]) -> None:
        """Run ``step`` on the transaction last, once the run summaries are written (a step given again under
        the same ``key`` runs once): what depends on every job of the batch having ended, such as whether a
        harvest run is done, is decided there, while the run's summary row is locked, so two batches that end
        a run's last jobs side by side decide it one after the other."""
        self.last_steps.setdefault(key, step)

    def after_commit(self, step: Callable[[], None]) -> None:
        """Run once the transaction has committed and the message's answers are confirmed."""
        self.steps_after_commit.append((self.message, step))

    def finish(self) -> None:
        """Everything that must precede the commit: the gathered writes and the confirmed publishes.

        History goes last: its run summary rows are shared by every transaction that ends a job of the
        run, so they are locked for the commit only, not while the broker confirms. A failure after the
        publishes (the database, or the commit) leaves messages of attempts the database never recorded,
        which is safe (scheduler.dispatch)."""
        if self.ended_jobs:
            ended = sorted(set(self.ended_jobs))
            self.conn.execute(delete(s.runningjobsmonitor).where(s.runningjobsmonitor.c.jobid.in_(ended)))
            self.conn.execute(delete(s.frontierreportmonitor).where(s.frontierreportmonitor.c.jobid.in_(ended)))
            self.conn.execute(delete(s.running_domain_counts).where(s.running_domain_counts.c.jobid.in_(ended)))
        self.audit.flush(self.conn)
        if len(self.confirmed_publishes) == 1:
            self.transport.publish(*self.confirmed_publishes[0])
        elif self.confirmed_publishes:
            self.transport.publish_many(self.confirmed_publishes)  # PublishFailures rolls the batch back
        self.history.flush(self.conn)
        for step in self.last_steps.values():
            step(self.conn)

    def run_after_commit(self) -> dict[int, BaseException]:
        """Publish the answers, then run the steps left for after the commit; returns the messages whose
        answer or step failed, with the error. A failure does not stop the other messages' answers and
        steps; a message's own steps stop at its first failure."""
        failed: dict[int, BaseException] = {}
        if self.answers:
            try:
                self.transport.publish_many([(queue, body) for _, queue, body in self.answers])
            except PublishFailures as exc:
                for index, error in exc.failures.items():
                    failed.setdefault(self.answers[index][0], error)
            except QueueError as exc:
                for message, _, _ in self.answers:
                    failed.setdefault(message, exc)
        for message, step in self.steps_after_commit:
            if message in failed:
                continue
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - the message is returned to its queue, the others go on
                failed[message] = exc
        return failed


@contextmanager
def transaction(engine: Engine, transport: Transport) -> Iterator[Batch]:
    """A batch in a write transaction, finished and committed when the block ends (rolled back if it raises).
    The caller runs ``run_after_commit`` afterwards."""
    with database_errors("recording messages of the scheduler's queues"), write_transaction(engine) as conn:
        batch = Batch(conn, transport)
        yield batch
        batch.finish()


def in_lock_order(decoded: list[tuple[Delivery, object, datetime]]
                   ) -> tuple[list[tuple[Delivery, object, datetime]], list[Delivery]]:
    """The decoded messages of a batch in the order its transaction takes row locks: the controllers' rows
    (ready messages, heartbeats, registrations, by controller) before the jobs' (claims, statuses and the
    answers to live changes, by job, a job's messages in the order they came), so two batches never wait on
    each other in a cycle;
    and apart, the ready messages that a newer one of the same controller in the batch stands for (one
    idle controller releases one job, whichever ready message it answers)."""
    newest_ready: dict[str, int] = {}
    for index, (_, message, sent_at) in enumerate(decoded):
        if isinstance(message, HarvesterReady):
            seen = newest_ready.get(message.controller_id)
            if seen is None or decoded[seen][2] <= sent_at:
                newest_ready[message.controller_id] = index
    work: list[tuple[tuple[int, str, int, int], tuple[Delivery, object, datetime]]] = []
    spare: list[Delivery] = []
    for index, item in enumerate(decoded):
        message = item[1]
        if isinstance(message, HarvesterReady) and newest_ready[message.controller_id] != index:
            spare.append(item[0])
        elif isinstance(message, ClaimRequest | CrawlStatus | LiveChangeResult):
            work.append(((1, "", message.job_id, index), item))
        else:
            work.append(((0, getattr(message, "controller_id", ""), 0, index), item))
    work.sort(key=lambda keyed: keyed[0])
    return [item for _, item in work], spare
