"""A harvest controller's side of the messaging protocol with the scheduler (docs/messages.md).

``SchedulerLink`` sends what a controller tells the scheduler (registration, ready messages, heartbeats,
claims, job statuses, progress and frontier reports) and takes what it receives (DoOneCrawl messages from
its channels' job queues, registration and claim answers on its own durable queue). It never opens the
harvest database.

Taking a job is two steps: ``take_job`` gets one DoOneCrawl message (channels in order of preference;
one that fails validation is dead-lettered with the reason, and the next one is tried), then ``claim``
asks the scheduler for its attempt. Only a granted claim may be crawled; the caller acknowledges the
message once it has persisted the job (or at once when the claim is refused). The scheduler grants an
attempt again to the controller that holds it (a controller that restarted asks again for the job in its
job directory), so a controller must look at its own jobs before it starts a crawl: a redelivered
message of a job it already holds (its acknowledgement was lost) is acknowledged and dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from harvestdef.errors import HarvestSuiteError
from harvestdef.messages import (
    ERROR_DETAILS_LIMIT,
    ERROR_SUMMARY_LIMIT,
    ClaimAnswer,
    ClaimRequest,
    CrawlProgress,
    CrawlStatus,
    CrawlTally,
    DomainReport,
    DoOneCrawl,
    FrontierReport,
    HarvesterReady,
    HarvesterStatus,
    JobEvent,
    LiveChangeResult,
    MessageError,
    RegistrationAnswer,
    RegistrationRequest,
    clip,
    decode,
    encode,
)
from harvestdef.model.status import JobStatus
from harvestdef.queues import Delivery, QueueNames, Transport

log = logging.getLogger(__name__)


class RegistrationRefusedError(HarvestSuiteError):
    """The scheduler refused this controller's channels; the message names the reason."""


class SchedulerSilentError(HarvestSuiteError):
    """No answer from the scheduler within the claim timeout."""


@dataclass(frozen=True)
class TakenJob:
    """A DoOneCrawl message taken from a job queue, not yet acknowledged."""

    delivery: Delivery
    job: DoOneCrawl


def receive_message(transport: Transport, queue: str, timeout: float) -> tuple[Delivery, object] | None:
    """The next message of ``queue`` within ``timeout`` seconds, decoded, not yet settled; None if none came.
    A message that does not decode is dead-lettered with the reason (and None returned): it never stops the
    receiver."""
    delivery = transport.receive(queue, timeout=timeout)
    if delivery is None:
        return None
    try:
        return delivery, decode(delivery.body)
    except MessageError as exc:
        transport.dead_letter(delivery, str(exc))
        return None


class SchedulerLink:
    def __init__(self, transport: Transport, names: QueueNames, controller_id: str, host: str,
                 channels: list[str], answer_timeout: float = 30.0, stop: threading.Event | None = None) -> None:
        self.transport = transport
        self.names = names
        self.controller_id = controller_id
        self.host = host
        self.channels = [name.strip().upper() for name in channels if name.strip()]
        self.answer_timeout = answer_timeout
        self.reply_queue = names.controller(controller_id)
        # where the live changes of the crawled job come; the scheduler names it in each grant
        self.control_queue = names.control(controller_id)
        # Set when the controller is stopping: waiting for an answer ends at once (as if none came).
        self.stop = stop or threading.Event()

    # ------------------------------------------------------------------ answers on our own queue
    def _await_answer(self, kind: type, matches: object) -> object:
        deadline = time.monotonic() + self.answer_timeout
        while (left := deadline - time.monotonic()) > 0 and not self.stop.is_set():
            received = receive_message(self.transport, self.reply_queue, min(left, 1.0))
            if received is None:
                continue
            delivery, message = received
            self.transport.ack(delivery)
            if isinstance(message, kind) and matches(message):  # type: ignore[operator]
                return message
            log.info("%s on %s ignored while waiting for a %s", type(message).__name__, self.reply_queue,
                     kind.__name__)
        if self.stop.is_set():
            raise SchedulerSilentError(f"stopped while waiting for a {kind.__name__} on {self.reply_queue}")
        raise SchedulerSilentError(f"no {kind.__name__} from the scheduler on {self.reply_queue} within "
                                   f"{self.answer_timeout:.0f} s")

    def register(self) -> RegistrationAnswer:
        """Register for our channels and wait for the answer.

        :raise RegistrationRefusedError: a channel is unknown (the reason names it).
        :raise SchedulerSilentError: no answer within the timeout.
        """
        self.transport.declare(self.reply_queue)
        self.transport.publish(self.names.scheduler, encode(RegistrationRequest(
            controller_id=self.controller_id, host=self.host, channels=self.channels, reply_queue=self.reply_queue)))
        answer = self._await_answer(RegistrationAnswer, lambda m: m.controller_id == self.controller_id)
        assert isinstance(answer, RegistrationAnswer)
        if not answer.accepted:
            raise RegistrationRefusedError(f"the scheduler refused harvest controller {self.controller_id}: "
                                           f"{answer.reason}")
        return answer

    def claim(self, job: DoOneCrawl, resume: bool = False) -> ClaimAnswer:
        """Ask for the job's attempt; only a granted one may be crawled."""
        self.transport.publish(self.names.scheduler, encode(ClaimRequest(
            job_id=job.job_id, attempt_id=job.attempt_id, controller_id=self.controller_id,
            reply_queue=self.reply_queue, resume=resume)))
        answer = self._await_answer(ClaimAnswer, lambda m: (m.job_id, m.attempt_id) == (job.job_id, job.attempt_id))
        assert isinstance(answer, ClaimAnswer)
        if answer.granted and answer.control_queue:
            self.control_queue = answer.control_queue
        return answer

    # ------------------------------------------------------------------ jobs
    def take_job(self, wait: float = 0.0) -> TakenJob | None:
        """One DoOneCrawl message from our channels' queues, selective first as listed; None if none came.

        With one channel and ``wait`` > 0 it waits on a subscription (the transport's prefetch should be 1)
        and cancels it as soon as a message came, before the caller acknowledges it: a controller that is
        busy crawling must hold no second job. With several channels it looks at each queue in order.
        """
        if wait > 0 and len(self.channels) == 1:
            queue = self.names.jobs(self.channels[0])
            deadline = time.monotonic() + wait
            while (left := deadline - time.monotonic()) > 0:
                delivery = self.transport.receive(queue, timeout=left)
                if delivery is None:
                    return None
                taken = self._decoded(queue, delivery)
                if taken is not None:
                    self.transport.unsubscribe(queue)
                    return taken
            return None
        for channel in self.channels:
            queue = self.names.jobs(channel)
            while (delivery := self.transport.get(queue)) is not None:
                taken = self._decoded(queue, delivery)
                if taken is not None:
                    return taken
        return None

    def _decoded(self, queue: str, delivery: Delivery) -> TakenJob | None:
        try:
            job = decode(delivery.body, DoOneCrawl)
        except MessageError as exc:
            log.error("DoOneCrawl message on %s dead-lettered: %s", queue, exc)
            self.transport.dead_letter(delivery, str(exc))
            return None
        assert isinstance(job, DoOneCrawl)
        return TakenJob(delivery, job)

    # ------------------------------------------------------------------ telling the scheduler
    def send_ready(self) -> None:
        self.transport.publish(self.names.scheduler, encode(HarvesterReady(
            controller_id=self.controller_id, host=self.host, channels=self.channels)))

    def send_heartbeat(self, status: HarvesterStatus) -> None:
        self.transport.publish(self.names.scheduler, encode(status))

    def report(self, job: DoOneCrawl, status: JobStatus, domain_report: DomainReport | None = None,
               harvest_errors: str = "", harvest_error_details: str = "", upload_errors: str = "",
               upload_error_details: str = "") -> None:
        """A CrawlStatus of ``job``, its error texts cut to the contract's limits."""
        self.transport.publish(self.names.scheduler, encode(CrawlStatus(
            job_id=job.job_id, attempt_id=job.attempt_id, controller_id=self.controller_id, status=status,
            domain_report=domain_report, harvest_errors=clip(harvest_errors, ERROR_SUMMARY_LIMIT),
            harvest_error_details=clip(harvest_error_details, ERROR_DETAILS_LIMIT),
            upload_errors=clip(upload_errors, ERROR_SUMMARY_LIMIT),
            upload_error_details=clip(upload_error_details, ERROR_DETAILS_LIMIT))))

    def send_status(self, status: CrawlStatus) -> None:
        """A CrawlStatus made by the caller (from post-processing's report: the final status, or the second
        report of a job whose files were stored after an archive store outage)."""
        self.transport.publish(self.names.scheduler, encode(status))

    def send_job_event(self, job: DoOneCrawl, kind: str, checkpoint: str, happened_at: datetime) -> None:
        """A checkpoint or resume of the job's crawl, for the job page."""
        self.transport.publish(self.names.scheduler, encode(JobEvent(
            job_id=job.job_id, attempt_id=job.attempt_id, controller_id=self.controller_id, kind=kind,
            checkpoint=checkpoint, happened_at=happened_at.isoformat())))

    def send_live_change_result(self, result: LiveChangeResult) -> None:
        """Whether a live change of the running job was applied or refused, for the job's change list."""
        self.transport.publish(self.names.scheduler, encode(result))

    def send_live_change_results(self, results: Sequence[LiveChangeResult]) -> None:
        """The answers of a round of live changes, published together and their confirms awaited together.

        :raise PublishFailures: some were not confirmed (the scheduler sends those changes again, and hears
            the answer then)."""
        if results:
            self.transport.publish_many([(self.names.scheduler, encode(result)) for result in results])

    def send_progress(self, progress: CrawlProgress) -> None:
        self.transport.publish(self.names.monitor, encode(progress))

    def send_tally(self, tally: CrawlTally) -> None:
        """What the crawl's crawl.log says so far, for the running job's page."""
        self.transport.publish(self.names.monitor, encode(tally))

    def send_frontier_report(self, report: FrontierReport) -> None:
        self.transport.publish(self.names.monitor, encode(report))
