"""A harvest controller without a crawler, for tests and bench/dispatch.py: it speaks the whole protocol
(harvester/protocol.py) over a real transport, and reports a made-up domain report instead of crawling."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field

from harvestdef.messages import DomainReport, DomainStats, HarvesterStatus
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.queues import QueueNames, Transport
from harvester.protocol import SchedulerLink, SchedulerSilentError

log = logging.getLogger(__name__)


def made_up_report(domains: dict[str, str], objects: int = 10, size: int = 1000) -> DomainReport:
    """Every domain of the job harvested completely: ``objects`` objects of ``size`` bytes, half new."""
    return DomainReport(default_stop_reason=StopReason.DOWNLOAD_COMPLETE, domains=[
        DomainStats(domain=domain, configuration=config, objects=objects, bytes=objects * size,
                    novel_objects=objects // 2, novel_bytes=objects // 2 * size,
                    duplicate_objects=objects - objects // 2, duplicate_bytes=(objects - objects // 2) * size,
                    stop_reason=StopReason.DOWNLOAD_COMPLETE)
        for domain, config in sorted(domains.items())])


@dataclass
class SimController:
    transport: Transport
    names: QueueNames
    controller_id: str
    channels: list[str]
    ready_delay: float = 0.5
    crawl_seconds: float = 0.0
    answer_timeout: float = 20.0
    poll: float = 0.02  # seconds between looks at the job queues while idle
    subscribe: bool = False  # wait on a subscription instead of looking every ``poll`` seconds
    heartbeat_interval: float = 30.0
    crawled: list[tuple[int, str]] = field(default_factory=list)  # (job id, attempt id)
    refused: list[tuple[int, str, str]] = field(default_factory=list)  # (job id, attempt id, reason)
    current: int | None = None
    taken: set[tuple[int, str]] = field(default_factory=set)  # what a real controller keeps in its job directories
    ready_messages: int = 0  # sent so far

    def __post_init__(self) -> None:
        self.link = SchedulerLink(self.transport, self.names, self.controller_id, socket.gethostname(),
                                  self.channels, self.answer_timeout)

    def heartbeat(self, current_job: int | None = None, attempt: str | None = None) -> None:
        self.link.send_heartbeat(HarvesterStatus(
            controller_id=self.controller_id, host=socket.gethostname(), pid=os.getpid(), version="test",
            channels=self.link.channels, free_disk_bytes=10**12, load_average=0.0, memory_rss_bytes=0,
            paused=False, current_job_id=current_job, current_attempt_id=attempt,
            current_job_state="crawling" if current_job else "idle"))

    def step(self, wait: float = 0.0) -> bool:
        """Take, claim and crawl one job if one waits (or comes within ``wait`` seconds); True if a job was
        crawled."""
        taken = self.link.take_job(wait)
        if taken is None:
            return False
        job = taken.job
        if (job.job_id, job.attempt_id) in self.taken:
            # a redelivery of a job this controller has already taken (its ack was lost): never twice
            self.transport.ack(taken.delivery)
            return False
        try:
            answer = self.link.claim(job)
        except SchedulerSilentError:
            self.transport.nack(taken.delivery)  # the answer was lost; the job waits for another claim
            return False
        if not answer.granted:
            self.refused.append((job.job_id, job.attempt_id, answer.reason))
            self.transport.ack(taken.delivery)
            return False
        # Persisted (nothing to persist here), then acknowledged early: the crawl may outlive consumer_timeout.
        self.taken.add((job.job_id, job.attempt_id))
        self.transport.ack(taken.delivery)
        self.current = job.job_id
        self.link.report(job, JobStatus.STARTED)
        if self.crawl_seconds:
            time.sleep(self.crawl_seconds)
        self.link.report(job, JobStatus.DONE, made_up_report(job.domain_configurations))
        self.crawled.append((job.job_id, job.attempt_id))
        self.current = None
        return True

    def run(self, stop: threading.Event, max_jobs: int | None = None) -> None:
        """Register, then while idle send ready messages and take jobs until ``stop`` or ``max_jobs``."""
        self.link.register()
        self.heartbeat()
        last_ready = last_heartbeat = time.monotonic() - self.ready_delay
        while not stop.is_set() and (max_jobs is None or len(self.crawled) < max_jobs):
            if time.monotonic() - last_heartbeat >= self.heartbeat_interval:
                self.heartbeat()
                last_heartbeat = time.monotonic()
            if time.monotonic() - last_ready >= self.ready_delay:
                self.link.send_ready()
                self.ready_messages += 1
                last_ready = time.monotonic()
            if self.step(self.poll if self.subscribe else 0.0):
                last_ready = 0.0
            elif not self.subscribe:
                stop.wait(self.poll)
