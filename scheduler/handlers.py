"""The scheduler's one table of message handlers, by message type, and the one way they are carried out.

Every message the scheduler takes (the scheduler queue's, the monitor queue's, and a dead letter) has one
handler, ``handler(batch, message, sent_at)``, which records it in a ``scheduler.batch.Batch`` and leaves
there what must wait for the commit. ``MessageHandlers.carry_out`` runs the handlers of one or more
messages in one batch: the intake's batch of many and a single message are the same code path, a single
message being a batch of one. What a handler returns (the job released, the claim's answer, whether a
status changed) comes back for the caller; the service only acknowledges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from harvestdef.db.types import utcnow
from harvestdef.messages import (
    ClaimRequest,
    CrawlProgress,
    CrawlStatus,
    CrawlTally,
    FrontierReport,
    HarvesterReady,
    HarvesterStatus,
    JobEvent,
    LiveChangeResult,
    RegistrationRequest,
)
from harvestdef.queues import Transport
from scheduler.batch import Batch, transaction
from scheduler.dispatch import Dispatcher
from scheduler.intake import DeadLetter, StatusIntake
from scheduler.livechanges import settle

Handler = Callable[[Batch, Any, datetime], Any]


class MessageHandlers:
    """The handler of each message type, and their batches."""

    def __init__(self, engine: Engine, transport: Transport, dispatcher: Dispatcher, intake: StatusIntake) -> None:
        self.engine = engine
        self.transport = transport
        self.table: dict[type, Handler] = {
            HarvesterReady: dispatcher.ready,
            ClaimRequest: dispatcher.claim,
            RegistrationRequest: intake.registration,
            HarvesterStatus: intake.heartbeat,
            CrawlStatus: intake.crawl_status,
            JobEvent: intake.job_event,
            LiveChangeResult: settle,
            CrawlProgress: intake.progress,
            FrontierReport: intake.frontier_report,
            CrawlTally: intake.tally,
            DeadLetter: intake.dead_letter,
        }

    def carry_out(self, messages: Sequence[tuple[object, datetime]]) -> tuple[list[Any], dict[int, BaseException]]:
        """Record ``messages`` (each with the time it was sent) in one transaction, in the order given; then
        send their answers and run their steps. Returns what each handler returned, and the messages
        (by index) whose answer or step failed after the commit, with the error.

        :raise HarvestSuiteError: a handler failed or the transaction could not commit (DatabaseError for
            the database's own errors); nothing of any of the messages was recorded.
        """
        results: list[Any] = []
        with transaction(self.engine, self.transport) as batch:
            for index, (message, sent_at) in enumerate(messages):
                batch.message = index
                results.append(self.table[type(message)](batch, message, sent_at))
        return results, batch.run_after_commit()

    def carry_out_one(self, message: object, sent_at: datetime | None = None) -> Any:
        """One message in a batch of its own (sent now, unless ``sent_at`` says when); returns what its handler
        returned, and raises the error of an answer or step that failed after the commit."""
        (result,), failed = self.carry_out([(message, sent_at or utcnow())])
        if failed:
            raise next(iter(failed.values()))
        return result
