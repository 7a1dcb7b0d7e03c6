"""The scheduler process: leadership, the minute tick and the intake of messages.

``harvestsuite scheduler run`` builds a ``SchedulerService`` and calls ``run``: it waits to become the
leader (scheduler.leader), then, while it leads, ticks every jobgenerationperiod seconds on APScheduler's
thread (first tick at once; one at a time, late ticks coalesced), and at once when its intake (a thread or
an intake process) records a job's end (DONE or FAILED), so that the snapshot step after it and the jobs
waiting for it do not wait for the period, while its own threads take messages:

* the scheduler queue: ready messages, claims, registrations, heartbeats and job statuses;
* the monitor queue: progress and frontier reports;
* the dead-letter queue: every message anybody dead-lettered, kept in dead_letters.

A leader whose database does not answer for a while goes on leading while its lease lasts (its ticks and
messages fail meanwhile, and are tried again); one that loses the leadership for certain steps down: the
threads of that term of leadership end, the lock is released, and it waits to lead again as at its start.
``run`` returns only when ``stop`` is set.

A message is acknowledged only after the transaction that recorded it has committed, so a scheduler that
dies in between sees it again (every handler is idempotent). One that cannot be decoded, or whose major
schema version is not ours, is dead-lettered with the reason and the intake goes on.

Messages are handled in batches (``handle_batch``) by the handlers of scheduler.handlers, whose table
says which handler takes which message type; a single message is a batch of one, the same code path.
An intake thread of the scheduler queue takes the messages that wait for it (up to ``intake_batch``)
and records them in one transaction (scheduler.batch): one commit, one INSERT of audit rows and one
update of each run summary for all of them, and a controller's ready messages taken together count as
its newest one (one idle controller releases one job whichever it is). The transaction takes its row
locks in one order: the controllers' rows (ready messages, heartbeats, registrations, by controller)
before the jobs' (claims and statuses, by job, a job's messages in the order they came), the summaries
last. If anything in a batch of several fails, it is rolled back and each message is handled again as a
batch of its own, as if it had come alone; a single message that fails is returned to its queue for a
later try, and so is a message whose answer could not be sent after the commit. The database's errors
reach this module as DatabaseError (scheduler.batch.transaction translates them), so it catches our
errors only.

Beside the tick, every liveChangeInterval seconds on a thread of its own, the leader sends the live
changes and control actions that operators made to running jobs to the controllers holding their claims
(scheduler.livechanges); the controllers' answers come back on the scheduler queue like their statuses.
``send_live_changes`` is one such sending, for tests.

The tick decides each NEW job's deduplication sources (scheduler.dedupsources), which asks the archive
store (harvestsuite.archive.root) only whether jobs' entries files exist; the controllers build the indexes.

Every sendIntervalMs the leader starts sending the webhook deliveries that are due (scheduler.webhooks),
each webhook in a lane of its own, so a slow receiver holds back only its own deliveries and never the
sending of the others; the events' rows are written where they happen, on any scheduler process, and only
the leader sends them. Its shutdown aborts the attempts in flight rather than wait for their receivers.

The running scheduler counts what it does in ``metrics`` (scheduler.metrics): every tick, what the tick did,
the depths of the queues measured after it, its leadership and the messages it handled; the dispatcher
counts releases and claims. Its role serves them on ``harvestsuite.metrics.schedulerPort``.

``tick_once`` is one tick after draining what waits in the queues, one sending of the live changes due and
one of the webhook deliveries due: ``harvestsuite scheduler tick --once`` for tests and for cron. The tick
decides the jobs' deduplication sources itself, so what the next ``tick --once`` sees does not depend on
timing.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.process
import os
import queue as queue_module
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from harvestdef.archive import ArchiveStore
from harvestdef.db.availability import unavailability
from harvestdef.db.types import utcnow
from harvestdef.errors import HarvestSuiteError, QueueError, StaleJobError
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
    MessageError,
    RegistrationRequest,
    decode_with_time,
)
from harvestdef.model.controllers import LostControllerRule
from harvestdef.model.status import JobStatus
from harvestdef.queues import Delivery, QueueNames, Transport
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.settings import Settings
from scheduler.batch import in_lock_order
from scheduler.dedupsources import JobReadiness
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import DeadLetter, StatusIntake
from scheduler.jobgen.generate import GenerationOptions
from scheduler.leader import FencedOut, LeaderLock
from scheduler.livechanges import LiveChangeSender
from scheduler.metrics import CounterGrowth, SchedulerMetrics
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions, TickReport
from scheduler.webhooks import WebhookSender

log = logging.getLogger(__name__)

ENDED = (JobStatus.DONE, JobStatus.FAILED)  # a CrawlStatus saying so wakes the tick (``_wake_tick``)
# What an intake process puts on its queue to the leader process, beside its counters, when it records an end.
WAKE_TICK = "wake-tick"

_SCHEDULER_MESSAGES = (HarvesterReady, ClaimRequest, RegistrationRequest, HarvesterStatus, CrawlStatus, JobEvent,
                       LiveChangeResult)
_MONITOR_MESSAGES = (CrawlProgress, FrontierReport, CrawlTally)


@dataclass(frozen=True)
class ServiceOptions:
    tick_period: int = 60
    leader_lease: int = 60
    leader_renew_interval: float = 15.0  # less than leader_lease: failed renewals are tried again within it
    history_sample_rate: int = 300
    recent_history_window: int = 900
    intake_threads: int = 4
    intake_processes: int = 1
    intake_batch: int = 25  # messages of the scheduler queue recorded in one transaction, at most
    live_change_interval: int = 2
    live_change_resend_after: int = 60
    webhook_send_interval: float = 1.0

    @classmethod
    def from_settings(cls, settings: Settings) -> ServiceOptions:
        return cls(tick_period=settings.scheduler.jobgenerationperiod,
                   leader_lease=settings.scheduler.leaderLeaseTime,
                   leader_renew_interval=settings.scheduler.leaderRenewInterval
                   or max(1.0, settings.scheduler.leaderLeaseTime / 4),
                   history_sample_rate=settings.scheduler.historySampleRate,
                   recent_history_window=settings.scheduler.recentHistoryWindow,
                   intake_threads=settings.scheduler.intakeThreads,
                   intake_processes=settings.scheduler.intakeProcesses,
                   live_change_interval=settings.scheduler.liveChangeInterval,
                   live_change_resend_after=settings.scheduler.liveChangeResendAfter,
                   webhook_send_interval=settings.notifications.webhookSendIntervalMs / 1000)


class SchedulerService:
    def __init__(self, engine: Engine, transport: Transport, names: QueueNames, ticker: Ticker,
                 handlers: MessageHandlers, options: ServiceOptions, webhooks: WebhookSender | None = None,
                 metrics: SchedulerMetrics | None = None) -> None:
        self.engine = engine
        self.transport = transport
        self.names = names
        self.ticker = ticker
        self.handlers = handlers
        self.options = options
        self.leader = LeaderLock(engine, options.leader_lease)
        self.live_changes = LiveChangeSender(engine, transport, names,
                                             timedelta(seconds=options.live_change_resend_after))
        self._live_changes_failing = False
        self.webhooks = webhooks or WebhookSender(engine)
        self._webhooks_failing = False
        # messages returned to their queue because the database does not answer: said once per outage
        self._intake_waiting = False
        self.handled = 0
        self.metrics = metrics if metrics is not None else SchedulerMetrics()
        self.settings: Settings | None = None  # set by from_settings; worker processes are built from it
        # A tick asked for at once (``_wake_tick``): the term's APScheduler while it leads, and whether a tick
        # runs or is wanted again, under one lock so that no wish falls between a tick's end and its check.
        self._tick_lock = threading.Lock()
        self._tick_scheduler: Any = None
        self._ticking = False
        self._tick_wanted = False
        # how a job's end asks for a tick: this process's own, or (in an intake process) the leader process's
        self.on_job_end: Callable[[], None] = self._wake_tick

    @classmethod
    def from_settings(cls, settings: Settings, engine: Engine, transport: Transport) -> SchedulerService:
        names = QueueNames(settings.queue.environmentName)
        notifier = Notifier.from_settings(settings.notifications)
        generation = GenerationOptions.from_settings(settings)
        sched = settings.scheduler
        readiness = JobReadiness.from_settings(settings, notifier) if settings.jobgen.deduplicationEnabled else None
        ticker = Ticker(engine, generation, TickOptions(
            job_timeout=sched.jobtimeouttime, lost=LostControllerRule.from_settings(settings),
            claim_grace_time=sched.claimGraceTime,
            postpone_unregistered_channel=settings.jobgen.postponeUnregisteredChannel,
            history_sample_rate=sched.historySampleRate), notifier,
            readiness=readiness, transport=transport, names=names, store=ArchiveStore.from_settings(settings))
        metrics = SchedulerMetrics()
        dispatcher = Dispatcher(names, DispatchOptions(
            ready_max_age=sched.readyMaxAge, deduplication_enabled=settings.jobgen.deduplicationEnabled,
            limit_submitted_jobs_in_queue=sched.limitSubmittedJobsInQueue,
            submitted_jobs_in_queue_limit=sched.submittedJobsInQueueLimit), metrics)
        intake = StatusIntake(notifier, sched.historySampleRate, sched.recentHistoryWindow)
        service = cls(engine, transport, names, ticker, MessageHandlers(engine, transport, dispatcher, intake),
                      ServiceOptions.from_settings(settings), WebhookSender.from_settings(settings, engine), metrics)
        service.settings = settings
        return service

    # ------------------------------------------------------------------ messages
    def _decode(self, delivery: Delivery) -> tuple[Delivery, object, datetime] | None:
        """The delivery's message and when it was sent; None when it could not be decoded, in which case it
        has been dead-lettered saying why (or, if even that failed, returned to its queue)."""
        if delivery.queue == self.names.dead_letter:
            return delivery, DeadLetter(delivery.headers.get("x-original-queue", "?"),
                                        delivery.headers.get("x-reason", "no reason given"), delivery.body), utcnow()
        expected = _MONITOR_MESSAGES if delivery.queue == self.names.monitor else _SCHEDULER_MESSAGES
        try:
            message, sent_at = decode_with_time(delivery.body, expected)
        except MessageError as exc:
            log.error("message on %s dead-lettered: %s", delivery.queue, exc)
            try:
                self.transport.dead_letter(delivery, str(exc))
            except QueueError as failure:
                log.error("message on %s could not be dead-lettered now, returned to its queue: %s",
                          delivery.queue, failure)
                with contextlib.suppress(QueueError):
                    self.transport.nack(delivery, requeue=True)
            return None
        return delivery, message, sent_at

    def handle_batch(self, deliveries: list[Delivery]) -> None:
        """Decode, carry out and acknowledge messages of one queue in one transaction; one message is a batch
        of one. If a batch of several fails, each message is handled again as a batch of its own; a single
        message that fails is returned to its queue for a later try. Never raises."""
        decoded = [item for item in map(self._decode, deliveries) if item is not None]
        if not decoded:
            return
        work, spare = in_lock_order(decoded)
        try:
            _, failed = self.handlers.carry_out([(message, sent_at) for _, message, sent_at in work])
        except (HarvestSuiteError, OSError) as exc:
            if len(decoded) > 1:
                log.info("%d messages of %s could not be recorded together (%s); one by one instead",
                         len(decoded), decoded[0][0].queue, exc)
                for delivery, _, _ in decoded:
                    self.handle_batch([delivery])
                return
            (delivery, _, _), = decoded
            if isinstance(exc, StaleJobError):
                # another handler changed the job meanwhile: a second look sees its new state
                log.info("message on %s raced another change of its job, returned to its queue: %s",
                         delivery.queue, exc)
            elif (unavailable := unavailability(exc)) is not None:
                # the same reason for every message while it lasts: said once, and once more when it ends
                if not self._intake_waiting:
                    self._intake_waiting = True
                    log.warning("messages wait in their queues while the harvest database does not answer "
                                "(%s); they are handled once it does", unavailable)
            else:
                log.error("message on %s could not be handled now, returned to its queue: %s", delivery.queue, exc)
            with contextlib.suppress(QueueError):
                self.transport.nack(delivery, requeue=True)
            if not isinstance(exc, StaleJobError):
                time.sleep(0.5)  # the database or broker is failing: do not spin on the same message
            return
        if self._intake_waiting:
            self._intake_waiting = False
            log.warning("the harvest database answers again: the messages that waited are being handled")
        handled = list(spare)
        ended = False
        for index, (delivery, message, _) in enumerate(work):
            if index in failed:
                log.error("message on %s could not be answered now, returned to its queue: %s", delivery.queue,
                          failed[index])
                with contextlib.suppress(QueueError):
                    self.transport.nack(delivery, requeue=True)
            else:
                handled.append(delivery)
                ended = ended or (isinstance(message, CrawlStatus) and message.status in ENDED)
        if ended:
            self.on_job_end()
        # The batch's acknowledgements together: one handoff to the transport, and on RabbitMQ a single
        # multiple-ack when this thread holds every message up to the last of them.
        try:
            if len(handled) == 1:
                self.transport.ack(handled[0])
            elif handled:
                self.transport.ack_many(handled)
        except QueueError as exc:  # recorded already: a redelivery is a repeat, which changes nothing
            log.warning("acknowledging messages of %s: %s", decoded[0][0].queue, exc)
        self.handled += len(decoded)
        if handled:
            self.metrics.messages.labels(queue=decoded[0][0].queue).inc(len(handled))

    # ------------------------------------------------------------------ draining and ticking
    def drain(self, max_messages: int | None = None) -> int:
        """Handle every message waiting now in the scheduler's three queues; returns how many."""
        count = 0
        for queue in (self.names.scheduler, self.names.monitor, self.names.dead_letter):
            while max_messages is None or count < max_messages:
                delivery = self.transport.get(queue)
                if delivery is None:
                    break
                self.handle_batch([delivery])
                count += 1
        return count

    def tick_once(self, now: datetime | None = None) -> TickReport:
        """One tick (after draining the queues), then one sending of the live changes due, if this scheduler
        can be the leader."""
        if not self.leader.try_acquire():
            raise HarvestSuiteError("another scheduler is running on this database; this tick did nothing")
        try:
            self.drain()
            report = self.ticker.tick(now)
            report.live_changes_sent = self.live_changes.send(now)
            report.webhook_attempts = self.webhooks.send_due(now)
            return report
        finally:
            self.leader.release()

    def send_live_changes(self, now: datetime | None = None) -> int:
        """Send the live changes due now (scheduler.livechanges) once, as the running scheduler does every
        liveChangeInterval seconds; returns how many were sent. Only the leader sends: a scheduler that is
        not running takes the leadership for this sending.

        :raise HarvestSuiteError: another scheduler leads (nothing was sent); DatabaseError or QueueError
            when the database or the transport failed.
        """
        if self.leader.is_held:
            return self.live_changes.send(now)
        if not self.leader.try_acquire():
            raise HarvestSuiteError("another scheduler is running on this database; no live change was sent")
        try:
            return self.live_changes.send(now)
        finally:
            self.leader.release()

    # ------------------------------------------------------------------ the long-running process
    def _intake_loop(self, queue: str, stop: threading.Event) -> None:
        batched = queue == self.names.scheduler and self.options.intake_batch > 1
        while not stop.is_set():
            deliveries: list[Delivery] = []
            try:
                delivery = self.transport.receive(queue, timeout=1.0)
                if delivery is not None:
                    deliveries.append(delivery)
                    # what has arrived meanwhile joins it, without waiting for more
                    while batched and len(deliveries) < self.options.intake_batch:
                        delivery = self.transport.receive(queue, timeout=0)
                        if delivery is None:
                            break
                        deliveries.append(delivery)
            except QueueError as exc:
                log.warning("receiving from %s: %s", queue, exc)
                if not deliveries:
                    stop.wait(1.0)
                    continue
            if deliveries:
                self.handle_batch(deliveries)

    def run(self, stop: threading.Event, on_leader: Callable[[], None] | None = None) -> None:
        """Lead until ``stop`` is set: wait for leadership, then tick and take messages. A scheduler that
        loses the leadership (its lease ran out while the database did not answer, scheduler.leader) stops
        acting, and waits to lead again as at its start; ``on_leader`` is called at every start of leading."""
        for queue in (self.names.scheduler, self.names.monitor, self.names.dead_letter):
            self.transport.declare(queue)
        while self._wait_for_leadership(stop):
            self.metrics.leading(True)
            if on_leader is not None:
                on_leader()
            try:
                self._lead(stop)
            finally:
                self.metrics.leading(False)
            if not stop.is_set():
                log.error("leadership lost; this scheduler stopped acting and waits to lead again")

    def _wait_for_leadership(self, stop: threading.Event) -> bool:
        """Try the lock every few seconds until it is ours (True) or ``stop`` is set (False)."""
        said = None
        while not stop.is_set() and not self.leader.try_acquire():
            why = ("the harvest database does not answer; waiting for it to lead" if self.leader.is_unanswered
                   else "another scheduler is the leader on this database; waiting to take over")
            if why != said:  # once, and again when the reason changes
                log.warning("%s", why)
                said = why
            stop.wait(min(5.0, self.options.leader_renew_interval))
        return not stop.is_set()

    def _lead(self, stop: threading.Event) -> None:
        """Act as the leader until ``stop`` is set or the leadership is lost; returns with every thread of
        this term ended and the lock released."""
        from apscheduler.schedulers.background import BackgroundScheduler

        term = threading.Event()  # the end of this term of leadership: what its threads watch
        ticker = BackgroundScheduler(timezone="UTC")
        ticker.add_job(self._tick_safely, "interval", seconds=self.options.tick_period, id="tick",
                       next_run_time=datetime.now().astimezone(), max_instances=1, coalesce=True,
                       misfire_grace_time=self.options.tick_period)
        # beside the tick, on a thread of its own, so a long tick (a snapshot's job generation) does not hold
        # back an operator's pause
        ticker.add_job(self._send_live_changes_safely, "interval", seconds=self.options.live_change_interval,
                       id="live-changes", next_run_time=datetime.now().astimezone(), max_instances=1,
                       coalesce=True, misfire_grace_time=self.options.live_change_interval)
        threads = [threading.Thread(target=self._intake_loop, args=(queue, term), name=f"intake-{queue}-{n}",
                                    daemon=True)
                   for queue, count in ((self.names.scheduler, self.options.intake_threads),
                                        (self.names.monitor, 1), (self.names.dead_letter, 1))
                   for n in range(count)]
        # the webhook deliveries due: each sending only starts the lanes of the webhooks that have none, so it
        # returns at once and a slow receiver holds back neither the tick nor the other webhooks. A loop of its
        # own rather than an interval job: the interval counts from the end of a sending, so a sending slower
        # than the interval (a busy database) delays the next one instead of being skipped with a warning.
        self.webhooks.reopen()
        threads.append(threading.Thread(target=self._webhook_loop, args=(term,), name="webhooks", daemon=True))
        ticker.start()
        with self._tick_lock:
            self._tick_scheduler = ticker
        for thread in threads:
            thread.start()
        workers, workers_stop, counts = self._start_intake_processes()
        adding = threading.Thread(target=self._add_intake_counts, args=(counts, term), name="intake-counts",
                                  daemon=True)
        adding.start()
        try:
            # a renewal the database cannot answer keeps the leadership while the lease lasts
            # (scheduler.leader); False means it is lost for certain
            while not stop.wait(self.options.leader_renew_interval):
                if not self.leader.renew():
                    break
        finally:
            term.set()
            self.webhooks.close()  # first: aborts the attempts in flight, so nothing below waits for a receiver
            workers_stop.set()
            for worker in workers:
                worker.join(timeout=30)
                if worker.is_alive():
                    worker.kill()
            adding.join(timeout=10)
            self._add_intake_counts(counts, None)  # what the intake processes sent as they stopped
            with self._tick_lock:
                self._tick_scheduler = None
            ticker.shutdown(wait=True)
            for thread in threads:
                thread.join(timeout=10)
            # A subscription holds up to its prefetch of messages the loops never took: kept, they would
            # wait with a standby (a controller's claim unanswered) until its connection closed. Cancelled,
            # they go back to their queues for the leader.
            for queue in (self.names.scheduler, self.names.monitor, self.names.dead_letter):
                try:
                    self.transport.unsubscribe(queue)
                except QueueError as exc:
                    log.warning("giving back the messages of %s after leading: %s", queue, exc)
            self.leader.release()

    def _start_intake_processes(self) -> tuple[list[multiprocessing.process.BaseProcess], Any, Any]:
        """Child processes that take messages from the scheduler's queue beside this one's threads: the
        handlers are safe to run side by side (compare-and-set, row locks), and a Python process gets
        one core's worth of work done, whatever its number of threads. They send the growth of their
        counters through the returned queue (scheduler.metrics.CounterGrowth)."""
        context = multiprocessing.get_context("spawn")
        workers_stop = context.Event()
        counts = context.Queue()
        workers: list[multiprocessing.process.BaseProcess] = []
        if self.settings is None:
            return workers, workers_stop, counts
        for number in range(1, self.options.intake_processes):
            worker = context.Process(target=_intake_worker, args=(self.settings, workers_stop, os.getpid(),
                                                                  self.leader.lock_pid, counts),
                                     name=f"scheduler-intake-{number}", daemon=True)
            worker.start()
            workers.append(worker)
        return workers, workers_stop, counts

    def _add_intake_counts(self, counts: Any, term: threading.Event | None) -> None:
        """Add what the intake processes counted to this process's metrics, and tick at once for each end they
        recorded (``WAKE_TICK``), until ``term`` is set; with ``term`` None, what is waiting now."""
        while True:
            try:
                item = counts.get(timeout=0.5)
            except queue_module.Empty:
                if term is None or term.is_set():
                    return
                continue
            if item == WAKE_TICK:
                self._wake_tick()
            else:
                self.metrics.add_counts(item)

    def _wake_tick(self) -> None:
        """A job has ended: tick at once rather than at the next period, so that the snapshot step after it is
        generated, and the jobs that waited for it are decided, now. A tick that runs meanwhile is followed by
        another. Only the leading process ticks: an intake process asks it through its queue (``WAKE_TICK``)."""
        from apscheduler.jobstores.base import JobLookupError

        with self._tick_lock:
            self._tick_wanted = True
            if self._ticking or self._tick_scheduler is None:
                return
            with contextlib.suppress(JobLookupError):  # the term has ended and its scheduler with it
                self._tick_scheduler.modify_job("tick", next_run_time=datetime.now().astimezone())

    def _tick_safely(self) -> None:
        with self._tick_lock:
            self._ticking = True
        try:
            while True:
                with self._tick_lock:
                    self._tick_wanted = False
                self._tick_once_safely()
                with self._tick_lock:
                    # decided under the lock: a wish made after this look starts the next tick itself
                    if not self._tick_wanted or not self.leader.is_held:
                        self._ticking = False
                        return
        finally:
            with self._tick_lock:
                self._ticking = False

    def _tick_once_safely(self) -> None:
        if not self.leader.is_held:
            return  # its lease ran out: the loop in ``_lead`` steps down at its next look
        started = time.monotonic()
        try:
            report = self.ticker.tick()
        except Exception as exc:  # noqa: BLE001 - a failed tick is logged; the next one runs as usual
            self.metrics.tick_failed()
            _log_failure(exc, "tick failed", f"the next tick, in {self.options.tick_period} s, tries again")
            return
        self.metrics.tick_completed(
            time.monotonic() - started, time.time(), report.generation_seconds,
            sum(len(job_ids) for job_ids in report.generated.values()), len(report.deactivated),
            {"timed_out": len(report.timed_out), "interrupted": len(report.interrupted),
             "resubmitted": len(report.resubmitted)}, report.dedup_decisions, len(report.indexing))
        self._measure_queues()

    def _measure_queues(self) -> None:
        """The depths of every harvest channel's job queue and of the scheduler's own queues, for the metrics.
        A queue that cannot be counted now keeps its last figure, and so do those after it, which a broker that
        is away would hold up as long each; the next tick measures again."""
        try:
            with self.engine.connect() as conn:
                channels = [channel.name for channel in ChannelRepository(conn).all_channels()]
        except Exception as exc:  # noqa: BLE001 - the tick said what the database does; only figures wait
            log.debug("queue depths not measured: %s", exc)
            return
        queues = [self.names.jobs(channel) for channel in channels]
        queues += [self.names.scheduler, self.names.monitor, self.names.dead_letter]
        depths = []
        for queue in queues:
            try:
                depths.append((queue, self.transport.message_count(queue)))
            except Exception as exc:  # noqa: BLE001 - only figures wait; the tick's own work is done
                log.debug("cannot count the messages of %s: %s", queue, exc)
                break
        self.metrics.queues_measured(depths)

    def _send_live_changes_safely(self) -> None:
        """One sending of the running scheduler's; a failure is logged once, not every few seconds, until a
        sending succeeds again."""
        if not self.leader.is_held:
            return  # leadership lost: the loop in ``_lead`` steps down at its next look
        try:
            self.live_changes.send()
        except Exception as exc:  # noqa: BLE001 - the next sending tries again
            if not self._live_changes_failing:
                _log_failure(exc, "sending live changes failed",
                             f"trying again every {self.options.live_change_interval} s")
            self._live_changes_failing = True
            return
        if self._live_changes_failing:
            log.warning("sending live changes works again")
            self._live_changes_failing = False


    def _webhook_loop(self, term: threading.Event) -> None:
        """Start the due webhook lanes every webhook_send_interval seconds until ``term`` is set."""
        while not term.is_set():
            self._send_webhooks_safely()
            term.wait(self.options.webhook_send_interval)

    def _send_webhooks_safely(self) -> None:
        """Start the lanes of the webhooks with due deliveries; a failing database is logged once until it
        works again (the deliveries wait in their table meanwhile)."""
        if not self.leader.is_held:
            return
        try:
            self.webhooks.start_due()
        except Exception as exc:  # noqa: BLE001 - the next sending tries again
            if not self._webhooks_failing:
                _log_failure(exc, "sending webhook deliveries failed",
                             f"trying again every {self.options.webhook_send_interval:g} s")
            self._webhooks_failing = True
            return
        if self._webhooks_failing:
            log.warning("sending webhook deliveries works again")
            self._webhooks_failing = False


def _log_failure(exc: Exception, what: str, then: str) -> None:
    """A database that does not answer, or a leadership that ended, in one line (nobody's fault, no bug);
    anything else with its traceback."""
    reason = unavailability(exc) or (str(exc) if isinstance(exc, FencedOut) else None)
    if reason is not None:
        log.warning("%s: %s; %s", what, reason, then)
    else:
        log.exception("%s; %s", what, then)


def _intake_worker(settings: Settings, stop: Any, parent_pid: int, lock_pid: int | None, counts: Any) -> None:
    """A child process of the leading scheduler: takes messages from the scheduler's queue until the leader
    says stop or is gone; its transactions are fenced by the leader's lock session ``lock_pid``
    (PostgreSQL). Every second, and as it stops, it puts the growth of its counters on ``counts`` for the
    leader process's /metrics."""
    from harvestdef.db.engine import engine_from_settings
    from harvestdef.queues import open_transport

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    engine = engine_from_settings(settings.database)
    transport = open_transport(settings.queue)
    service = SchedulerService.from_settings(settings, engine, transport)
    service.on_job_end = lambda: counts.put(WAKE_TICK)
    if lock_pid is not None:
        service.leader.follow(lock_pid)
        service.leader.install_fence(engine)
    local_stop = threading.Event()
    threads = [threading.Thread(target=service._intake_loop, args=(service.names.scheduler, local_stop),
                                daemon=True) for _ in range(service.options.intake_threads)]
    for thread in threads:
        thread.start()
    growth = CounterGrowth(service.metrics.registry)
    try:
        while not stop.wait(1.0) and os.getppid() == parent_pid:
            if grown := growth.take():
                counts.put(grown)
    finally:
        local_stop.set()
        for thread in threads:
            thread.join(timeout=10)
        if grown := growth.take():
            counts.put(grown)
        transport.close()
        engine.dispose()
