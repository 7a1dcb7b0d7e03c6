"""One write transaction for several of the scheduler queue's messages, and what must happen around its commit.

The scheduler's cost per message was mostly per transaction: a commit, and one INSERT per audit row
and per summary. A ``Batch`` is the transaction of one or more messages; handlers write into it, and
leave with it what has to wait:

* audit rows (``AuditBatch``) and historyinfo rows with both summaries (``HistoryBatch``), written
  together at its end, so they still commit with the changes or not at all;
* the running-job monitor rows of the jobs that ended, removed together at its end;
* publishes that must be confirmed before the commit is trusted (DoOneCrawl: scheduler.dispatch),
  sent at its end, after the handlers' writes, so a handler that fails publishes nothing;
* what happens once it has committed (answers to claims and registrations, log lines, notifications),
  per message, so the message whose answer could not be sent is the one returned to its queue.

``transaction`` opens and finishes a batch; ``Batch.after_commit`` then runs the steps it was given and
says which messages' steps failed. The handlers of scheduler.dispatch and scheduler.intake take a batch,
and their public methods run a batch of one message, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from sqlalchemy import Connection, Engine, delete

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.messages import ClaimRequest, CrawlStatus, HarvesterReady
from harvestdef.queues import Delivery, Transport
from harvestdef.repositories.audit import AuditBatch
from harvestdef.repositories.base import SYSTEM_ACTOR
from harvestdef.repositories.history import HistoryBatch, HistoryWriter
from harvestdef.repositories.jobs import JobRepository

log = logging.getLogger(__name__)

# Publishes of one batch wait for their confirms side by side: the transport pipelines the confirms of
# several threads on one connection, and the batch's row locks are held until the last one is in.
_T = TypeVar("_T")

_publishers = ThreadPoolExecutor(max_workers=8, thread_name_prefix="batch-publish")


@dataclass
class Batch:
    """The transaction of one or more messages, and what its handlers left for its end."""

    conn: Connection
    audit: AuditBatch = field(default_factory=AuditBatch)
    history: HistoryBatch = field(default_factory=HistoryBatch)
    ended_jobs: list[int] = field(default_factory=list)
    confirmed_publishes: list[tuple[str, bytes]] = field(default_factory=list)
    steps_after_commit: list[tuple[int, Callable[[], None]]] = field(default_factory=list)
    message: int = 0  # the index of the message being handled, whose after-commit steps are added

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

    def after_commit(self, step: Callable[[], None]) -> None:
        self.steps_after_commit.append((self.message, step))

    def finish(self, transport: Transport) -> None:
        """Everything that must precede the commit: the gathered writes and the confirmed publishes.

        History goes last: its run summary rows are shared by every transaction that ends a job of the
        run, so they are locked for the commit only, not while the broker confirms. A failure after the
        publishes (the database, or the commit) leaves messages of attempts the database never recorded,
        which is safe (scheduler.dispatch)."""
        if self.ended_jobs:
            ended = sorted(set(self.ended_jobs))
            self.conn.execute(delete(s.runningjobsmonitor).where(s.runningjobsmonitor.c.jobid.in_(ended)))
            self.conn.execute(delete(s.frontierreportmonitor).where(s.frontierreportmonitor.c.jobid.in_(ended)))
        self.audit.flush(self.conn)
        if len(self.confirmed_publishes) == 1:
            transport.publish(*self.confirmed_publishes[0])
        elif self.confirmed_publishes:
            futures = [_publishers.submit(transport.publish, queue, body) for queue, body in self.confirmed_publishes]
            errors = [future.exception() for future in futures]
            for error in errors:
                if error is not None:
                    raise error
        self.history.flush(self.conn)

    def run_after_commit(self) -> dict[int, BaseException]:
        """Run the steps left for after the commit; returns the messages whose step failed, with the error.
        A failed step does not stop the steps of the other messages. The messages' steps run side by side
        (a message's own in order): most publish an answer, and a controller waits for it."""
        by_message: dict[int, list[Callable[[], None]]] = {}
        for message, step in self.steps_after_commit:
            by_message.setdefault(message, []).append(step)

        def run(steps: list[Callable[[], None]]) -> None:
            for step in steps:
                step()

        if len(by_message) <= 1:
            outcomes = {message: _outcome(run, steps) for message, steps in by_message.items()}
        else:
            futures = {message: _publishers.submit(run, steps) for message, steps in by_message.items()}
            outcomes = {message: future.exception() for message, future in futures.items()}
        return {message: error for message, error in outcomes.items() if error is not None}


def _outcome(run: Callable[[list[Callable[[], None]]], None], steps: list[Callable[[], None]]
             ) -> BaseException | None:
    try:
        run(steps)
    except Exception as exc:  # noqa: BLE001 - the message is returned to its queue, the others go on
        return exc
    return None


@contextmanager
def transaction(engine: Engine, transport: Transport) -> Iterator[Batch]:
    """A batch in a write transaction, finished and committed when the block ends (rolled back if it raises).
    The caller runs ``run_after_commit`` afterwards."""
    with write_transaction(engine) as conn:
        batch = Batch(conn)
        yield batch
        batch.finish(transport)


def in_lock_order(decoded: list[tuple[Delivery, object, datetime]]
                   ) -> tuple[list[tuple[Delivery, object, datetime]], list[Delivery]]:
    """The decoded messages of a batch in the order its transaction takes row locks: the controllers' rows
    (ready messages, heartbeats, registrations, by controller) before the jobs' (claims and statuses, by
    job, a job's messages in the order they came), so two batches never wait on each other in a cycle;
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
        elif isinstance(message, ClaimRequest | CrawlStatus):
            work.append(((1, "", message.job_id, index), item))
        else:
            work.append(((0, getattr(message, "controller_id", ""), 0, index), item))
    work.sort(key=lambda keyed: keyed[0])
    return [item for _, item in work], spare


def run_one(engine: Engine, transport: Transport, handle: Callable[[Batch], _T]) -> _T:
    """``handle`` in a batch of its own; the steps after the commit run, and the first failure is raised."""
    with transaction(engine, transport) as batch:
        result = handle(batch)
    failed = batch.run_after_commit()
    if failed:
        raise next(iter(failed.values()))
    return result
