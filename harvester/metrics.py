"""A harvest controller's figures for Prometheus (docs/metrics.md): its state and current job, its crawl's
fetches, bytes, fetch rate and frontier, the free disk of its serverDir, and how long post-processing and
uploads take.

``ControllerMetrics`` holds them in a registry of its own (harvestdef/metrics.py says why); the controller's
role serves it on ``harvestsuite.metrics.harvesterPort``. The state, the current job and the free disk are
read from the controller when scraped; the crawl's figures are those of its last status poll (every
crawlLoopWaitTime seconds), the same the CrawlProgress message of that poll carries.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from harvester.heritrix3.model import JobResource

log = logging.getLogger(__name__)

# Post-processing a job: seconds for a small selective job, an hour or more for a snapshot job's WARCs.
POSTPROCESSING_BUCKETS = (1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0)
# Storing a job's files: a copy, an fsync and a checksum per file, and backoffs while the store is out.
UPLOAD_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)


class ControllerMetrics:
    """The metrics of the controller ``controller_id``. ``state``, ``current_job`` and ``free_disk`` are asked
    at each scrape: the controller's state (one of ``states``), its job's id (None: no job) and the bytes
    free in its serverDir."""

    def __init__(self, controller_id: str, host: str, channels: Iterable[str], version: str,
                 states: Iterable[str], state: Callable[[], str], current_job: Callable[[], int | None],
                 free_disk: Callable[[], int], registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        Info("harvestsuite_harvester", "The harvest controller: its id, host, channels and version",
             registry=r).info({"controller_id": controller_id, "host": host, "channels": ",".join(channels),
                               "version": version})
        self.state = Gauge("harvestsuite_harvester_state", "1 for the controller's state (STARTING, IDLE, PAUSED, "
                           "CRAWLING, POSTPROCESSING, STOPPING), 0 for the others", ["state"], registry=r)
        for name in states:
            self.state.labels(state=name).set_function(lambda name=name: 1.0 if state() == name else 0.0)
        current = Gauge("harvestsuite_harvester_current_job_id",
                        "Id of the job the controller crawls or post-processes; 0 = none", registry=r)
        current.set_function(lambda: float(current_job() or 0))

        def disk() -> float:
            try:
                return float(free_disk())
            except OSError as exc:  # serverDir gone or unmounted: no figure rather than a failed scrape
                log.warning("free disk of serverDir not measured: %s", exc)
                return math.nan

        Gauge("harvestsuite_harvester_disk_free_bytes", "Bytes free in the controller's serverDir (below "
              "minSpaceLeft it pauses)", registry=r).set_function(disk)
        self.urls_fetched = Counter("harvestsuite_harvester_urls_fetched", "URLs the controller's crawls "
                                    "downloaded, as their crawler counts them", registry=r)
        self.written_bytes = Counter("harvestsuite_harvester_written_bytes", "Bytes the controller's crawls "
                                     "downloaded, as their crawler counts them", registry=r)
        self.crawl_urls_fetched = Gauge("harvestsuite_harvester_crawl_urls_fetched",
                                        "URLs the current crawl downloaded; 0 = no crawl", registry=r)
        self.crawl_written_bytes = Gauge("harvestsuite_harvester_crawl_written_bytes",
                                         "Bytes the current crawl downloaded; 0 = no crawl", registry=r)
        self.fetch_rate = Gauge("harvestsuite_harvester_fetch_rate_urls_per_second",
                                "The current crawl's downloads per second, as its crawler reports them now",
                                registry=r)
        self.frontier_queued = Gauge("harvestsuite_harvester_frontier_queued_urls",
                                     "URLs queued in the current crawl's frontier; 0 = no crawl", registry=r)
        self.jobs_finished = Counter("harvestsuite_harvester_jobs_finished", "Jobs the controller post-processed "
                                     "and reported, by the status reported (DONE or FAILED)", ["status"], registry=r)
        self.postprocessing_duration = Histogram("harvestsuite_harvester_postprocessing_duration_seconds",
                                                 "Seconds one job's post-processing took, its upload included",
                                                 buckets=POSTPROCESSING_BUCKETS, registry=r)
        self.upload_duration = Histogram("harvestsuite_harvester_upload_duration_seconds",
                                         "Seconds one upload of a job's files to the archive store took, its "
                                         "passes and backoffs included", buckets=UPLOAD_BUCKETS, registry=r)
        self._counted: tuple[int, int] | None = (0, 0)

    def crawl_started(self, resumed: bool) -> None:
        """A crawl starts; a resumed one's crawler counts from its checkpoint, which were counted before."""
        self._counted = None if resumed else (0, 0)
        self.crawl_ended()

    def crawl_status(self, status: JobResource) -> None:
        """One status poll of the crawl."""
        uris, sizes, rates = status.uri_totals_report, status.size_totals_report, status.rate_report
        fetched = uris.downloaded_uri_count if uris else 0
        written = sizes.total if sizes else 0
        if self._counted is None:
            self._counted = (fetched, written)
        fetched_before, written_before = self._counted
        # the counters never go back, even if a crawler's count did
        self.urls_fetched.inc(max(0, fetched - fetched_before))
        self.written_bytes.inc(max(0, written - written_before))
        self._counted = (max(fetched, fetched_before), max(written, written_before))
        self.crawl_urls_fetched.set(fetched)
        self.crawl_written_bytes.set(written)
        self.frontier_queued.set(uris.queued_uri_count if uris else 0)
        self.fetch_rate.set(rates.current_docs_per_second if rates else 0.0)

    def crawl_ended(self) -> None:
        for gauge in (self.crawl_urls_fetched, self.crawl_written_bytes, self.frontier_queued, self.fetch_rate):
            gauge.set(0)

    def job_finished(self, status: str, seconds: float) -> None:
        self.jobs_finished.labels(status=status).inc()
        self.postprocessing_duration.observe(seconds)

    def upload_done(self, seconds: float) -> None:
        self.upload_duration.observe(seconds)


__all__ = ["ControllerMetrics"]
