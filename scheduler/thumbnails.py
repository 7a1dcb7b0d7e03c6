"""The QA worker: a thumbnail of each seed of every DONE job, as the replay service replays it.

Theory of operation. ``harvestsuite qa thumbnails run`` is a process of its own beside the scheduler (on
its host, or any host with the harvest database, the archive store and the replay service within reach),
never on a harvester: harvesters neither read the database nor replay. It takes a pass every
``thumbnailIntervalMs``:

1. It asks whether pictures can be taken here at all: Chromium at ``harvestsuite.qa.chromium``, Playwright
   for Python, and a replay service at ``harvestsuite.replay.url`` that answers. If not, each DONE job that
   was never tried gets a SKIPPED row with that note, and the pass ends; the job stays DONE.
2. Otherwise it takes up to ``jobsPerPass`` DONE jobs without a MADE row, newest first, each at least
   ``thumbnailDelayMs`` after its end (the replay service finds a new job's files within its own sync
   interval), jobs never tried before SKIPPED ones, and opens one Chromium for them all.
3. For each seed of a job (its first ``maxSeedsPerJob``) without a row: pywb's CDX API names the job's own
   capture of the seed (the capture in one of the job's WARCs, in the harvest's collection ``harvest-<id>``);
   Chromium loads its replay at that timestamp, pictures the replayed page (scheduler/camera.py), and the
   picture is stored in the archive
   store beside the job's files as ``thumbnails/<sha1 of the seed>.png``; then the seed's row names it, with
   the camera's note when the replayed page navigated away by itself (the picture is then of the seed's own
   capture without its scripts). A seed the job did not capture, or whose replay did not load, gets a row
   with the note instead. Chromium loads from the replay service only (scheduler/camera.py).
4. When every seed has its row, the job's SHA256SUMS is written again (it then lists the pictures) and the
   job gets its MADE row.

Idempotent and resumable: a seed with a row is never pictured again and a MADE job never taken again. A
worker that died after storing a picture but before writing its row finds the picture stored (stored files
never change, harvestdef/archive.py) and writes the row for it without taking it again. A replay service or
Chromium that fails midway ends the pass with the job unfinished; the next pass goes on where it stopped.
Several workers on one database do no harm (a row is written once), though one is all a site needs.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from harvestdef.archive import ArchiveStore
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import ArchiveStoreError, HarvestSuiteError, ReplayUnavailableError
from harvestdef.replay.captures import check_answers, job_capture, replay_url_of
from harvestdef.replay.layout import harvest_collection
from harvestdef.repositories.base import database_errors
from harvestdef.repositories.thumbnails import (
    JobToThumbnail,
    ThumbnailRepository,
    ThumbnailState,
    thumbnail_name,
)
from scheduler.camera import Camera, CameraError

if TYPE_CHECKING:
    from harvestdef.settings import Settings

log = logging.getLogger("harvestsuite.qa")

UNLIMITED = -1
# How long a question to the replay service (is it there, which captures has it) may take.
LOOKUP_TIMEOUT = 30.0
NOT_CAPTURED = "not captured by this job"
NO_REPLAY_URL = "no replay service: harvestsuite.replay.url is empty"


def _with_scheme(seed: str) -> str:
    """A seed as a URL: seed lists may leave out the scheme, as Heritrix, which adds http://, allows."""
    return seed if "://" in seed else f"http://{seed}"


@dataclass
class PassResult:
    """What one pass did: jobs finished (MADE), jobs given a SKIPPED note, pictures stored, and the note of a
    pass that could make none."""

    jobs_made: int = 0
    jobs_skipped: int = 0
    thumbnails: int = 0
    note: str | None = None


class ThumbnailWorker:
    """Thumbnails of DONE jobs' seeds over ``engine``'s harvest database and ``store`` (module docstring)."""

    def __init__(self, engine: Engine, store: ArchiveStore, camera: Camera, replay_url: str, *,
                 interval: float, delay: float, max_seeds: int, jobs_per_pass: int,
                 lookup_timeout: float = LOOKUP_TIMEOUT) -> None:
        self.engine = engine
        self.store = store
        self.camera = camera
        self.replay_url = replay_url.rstrip("/")
        self.interval = interval
        self.delay = delay
        self.max_seeds = max_seeds
        self.jobs_per_pass = jobs_per_pass
        self.lookup_timeout = lookup_timeout

    @classmethod
    def from_settings(cls, settings: Settings, engine: Engine) -> ThumbnailWorker:
        qa = settings.qa
        return cls(engine, ArchiveStore.from_settings(settings),
                   Camera(Path(qa.chromium), qa.thumbnailWidth, qa.pageTimeoutMs / 1000), settings.replay.url,
                   interval=qa.thumbnailIntervalMs / 1000, delay=qa.thumbnailDelayMs / 1000,
                   max_seeds=qa.maxSeedsPerJob, jobs_per_pass=qa.jobsPerPass)

    def run(self, stop: threading.Event, on_pass: Callable[[PassResult], None] = lambda result: None) -> None:
        """A pass at once, then one every interval, until ``stop`` is set. A pass that fails is logged and the
        next one tries again: a database or store outage must not end the worker."""
        while not stop.is_set():
            try:
                on_pass(self.run_once())
            except HarvestSuiteError as exc:
                log.error("qa: the thumbnail pass failed: %s", exc)
            stop.wait(self.interval)

    def unavailable(self) -> str | None:
        """Why no thumbnail can be made now, in words; None when they can."""
        note = self.camera.unavailable()
        if note is not None:
            return note
        if not self.replay_url:
            return NO_REPLAY_URL
        try:
            check_answers(self.replay_url, self.lookup_timeout)
        except ReplayUnavailableError as exc:
            return str(exc)
        return None

    def run_once(self) -> PassResult:
        """One pass (module docstring, steps 1-4)."""
        note = self.unavailable()
        ended_before = utcnow() - timedelta(seconds=self.delay)
        with database_errors("reading the jobs that wait for thumbnails"), self.engine.connect() as conn:
            jobs = ThumbnailRepository(conn).jobs_waiting(self.jobs_per_pass, ended_before,
                                                          retry_skipped=note is None)
        result = PassResult(note=note)
        if note is not None:
            for job in jobs:
                self._finish(job, ThumbnailState.SKIPPED, note)
                result.jobs_skipped += 1
            if jobs:
                log.warning("qa: no thumbnails for %d jobs: %s", len(jobs), note)
            return result
        if not jobs:
            return result
        try:
            with self.camera:
                for job in jobs:
                    result.thumbnails += self._make(job)
                    result.jobs_made += 1
        except (CameraError, ReplayUnavailableError, ArchiveStoreError) as exc:
            # the job stays unfinished; the next pass goes on with the seeds it had not reached
            log.error("qa: thumbnail pass stopped: %s", exc)
        return result

    def _make(self, job: JobToThumbnail) -> int:
        """Every seed of ``job`` without a row gets one; then the job its MADE row. The pictures stored."""
        seeds = job.seeds if self.max_seeds == UNLIMITED else job.seeds[:self.max_seeds]
        with database_errors(f"reading job {job.job_id}'s thumbnails"), self.engine.connect() as conn:
            done = ThumbnailRepository(conn).seeds_done(job.job_id)
        warcs = self._warc_names(job)
        collection = harvest_collection(job.harvest_id)
        made = named = 0
        for seed in seeds:
            if seed in done:
                continue
            url = _with_scheme(seed)
            capture = job_capture(self.replay_url, collection, url, warcs, self.lookup_timeout)
            if capture is None:
                self._record(job, seed, note=NOT_CAPTURED)
                continue
            name = thumbnail_name(seed)
            note = None
            if not self.store.has(job.harvest_id, job.job_id, name):
                picture = self.camera.picture(replay_url_of(self.replay_url, collection, capture.timestamp,
                                                                   url))
                if picture.png is None:
                    self._record(job, seed, capture_time=capture.timestamp, note=picture.note)
                    continue
                self._store(job, name, picture.png)
                made += 1
                note = picture.note  # beside a picture: what it shows (the page navigated away)
            self._record(job, seed, name=name, capture_time=capture.timestamp, note=note)
            named += 1
        if named:
            self.store.write_checksums(job.harvest_id, job.job_id)
        note = None
        if len(seeds) < len(job.seeds):
            note = (f"the first {len(seeds)} of {len(job.seeds)} seeds (harvestsuite.qa.maxSeedsPerJob)")
        self._finish(job, ThumbnailState.MADE, note)
        log.info("qa: job %d: %d thumbnails made of %d seeds", job.job_id, made, len(seeds))
        return made

    def _warc_names(self, job: JobToThumbnail) -> frozenset[str]:
        directory = self.store.job_path(job.harvest_id, job.job_id)
        if not directory.is_dir():
            return frozenset()
        try:
            return frozenset(path.name for path in directory.iterdir()
                             if path.is_file() and path.name.endswith((".warc.gz", ".warc")))
        except OSError as exc:
            raise ArchiveStoreError(f"cannot list job {job.job_id}'s files in {directory}: {exc}") from exc

    def _store(self, job: JobToThumbnail, name: str, png: bytes) -> None:
        with tempfile.TemporaryDirectory(prefix="harvestsuite-thumbnail-") as directory:
            source = Path(directory) / "thumbnail.png"
            source.write_bytes(png)
            self.store.store(source, job.harvest_id, job.job_id, name)

    def _record(self, job: JobToThumbnail, seed: str, *, name: str | None = None, capture_time: str | None = None,
                note: str | None = None) -> None:
        # one transaction per seed: a worker that dies midway keeps every seed it finished
        with database_errors(f"recording a thumbnail of job {job.job_id}"), write_transaction(self.engine) as conn:
            ThumbnailRepository(conn).record_seed(job, seed, name=name, capture_time=capture_time, note=note)

    def _finish(self, job: JobToThumbnail, state: ThumbnailState, note: str | None) -> None:
        with database_errors(f"finishing job {job.job_id}'s thumbnails"), write_transaction(self.engine) as conn:
            ThumbnailRepository(conn).finish(job, state, note)
