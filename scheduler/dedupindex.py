"""The deduplication index of each harvest run: which jobs it covers, building it, and whether the run's
jobs may be dispatched (design.md §Deduplication, reference §6.4).

Which jobs a run deduplicates against (``deduplication_jobs``):

* a selective or event harvest's run N: every job of its run N − 1, whatever its status; run 1 has none;
* a snapshot step: every job of the steps before it in its chain of previoushd links, and of the chain of
  the most recent other snapshot harvest submitted before it. The step's own jobs are not among them:
  the index is built before they exist, and one index serves every job of the run.

An empty set means no deduplication for the run: no index, and its jobs carry an empty job list.

State shared by every scheduler process lives in harvest_run_dedup_index, one row per run
(harvest_id, harvest_num). A row with ``ready`` set lets the run's NEW jobs be dispatched
(``has_index_ready``, which the dispatcher adds to its query); the row names the index file, relative to
the archive store's root, and the jobs it was built from. A selective or event harvest's first run
needs no row. Failed builds are counted in the row with the last error; a later build that succeeds
clears them.

NetarchiveSuite's rule (reference §6.4): an index is used only when the entries of at least
``satisfactory_percentage`` (harvester.indexserver.satisfactorythresholdpercentage, 70) of the jobs it
is built from could be read; the jobs without readable entries are left out of it. Below, no index is
stored, the run is not ready, and the row's ``refusal`` says how many of how many and which jobs; the
refusal is not a failure (nothing broke), so it is told once, and the count is made again whenever the
run is asked for (every tick), which costs a look at which entries files exist while too few do.

``DedupIndexBuilder`` builds indexes on threads of its own, at most one build per set of job ids at a
time (a second request for a set being built only adds its run to that build), and writes each outcome
into the rows of the runs that asked for it. What is being built and how far it got is kept in memory
only: after a restart, a run without a ready row is simply asked for again, and an index file already
in the store is reused.

This module decides neither when a harvest is ready (scheduler.tick) nor which job goes next
(scheduler.dispatch).

harvest_run_dedup_index is read and written here directly: the row is this module's own record of a
build (its job set, its file, its failures), shared by the scheduler's processes, and no definition or
job's state; the snapshot's isindexready goes through HarvestRepository.mark_index_ready.
"""

from __future__ import annotations

import concurrent.futures
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, Connection, Engine, Table, and_, bindparam, exists, or_, select

from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.engine import upsert, write_transaction
from harvestdef.db.types import utcnow
from harvestdef.dedup import BuiltIndex, build_index
from harvestdef.errors import DedupCoverageError, HarvestSuiteError
from harvestdef.settings import Settings
from scheduler.notify import Notifier

log = logging.getLogger(__name__)

# A first failure is often a passing glitch of the store; people are told once it keeps failing.
NOTIFY_AFTER_FAILURES = 3


@dataclass(frozen=True, order=True)
class HarvestRun:
    """One run of a harvest definition: the jobs it generated share harvest_id and harvest_num."""

    harvest_id: int
    harvest_num: int

    def __str__(self) -> str:
        return f"harvest {self.harvest_id} run {self.harvest_num}"


@dataclass(frozen=True)
class RunIndex:
    """A row of harvest_run_dedup_index."""

    run: HarvestRun
    job_ids: tuple[int, ...]
    ready: bool
    index_path: str | None
    missing_job_ids: tuple[int, ...]
    entries: int | None
    failures: int
    error: str | None
    refusal: str | None = None


def deduplication_jobs(conn: Connection, run: HarvestRun, snapshot: bool) -> list[tuple[int, int]]:
    """The (harvest_id, job_id) pairs of the jobs ``run`` deduplicates against, by ascending job id."""
    j = s.jobs
    if snapshot:
        where = j.c.harvest_id.in_(_earlier_snapshot_steps(conn, run.harvest_id))
    else:
        where = and_(j.c.harvest_id == run.harvest_id, j.c.harvest_num == run.harvest_num - 1)
    return [(harvest_id, job_id) for harvest_id, job_id in conn.execute(
        select(j.c.harvest_id, j.c.job_id).where(where).order_by(j.c.job_id))]


def _earlier_snapshot_steps(conn: Connection, harvest_id: int) -> list[int]:
    """The steps before ``harvest_id`` in its previoushd chain, and the chain of the most recent other
    snapshot harvest submitted before it (reference §6.4)."""
    full, hd = s.fullharvests, s.harvestdefinitions

    def chain(start: int | None) -> list[int]:
        steps: list[int] = []
        while start is not None and start not in steps:  # a cycle of previoushd links ends the chain
            steps.append(start)
            start = conn.scalar(select(full.c.previoushd).where(full.c.harvest_id == start))
        return steps

    own = chain(harvest_id)
    continued = select(full.c.previoushd).where(full.c.previoushd.is_not(None))
    submitted = conn.scalar(select(hd.c.submitted).where(hd.c.harvest_id == harvest_id))
    older = None
    if submitted is not None:
        older = conn.scalar(
            select(hd.c.harvest_id).join(full, full.c.harvest_id == hd.c.harvest_id)
            .where(hd.c.harvest_id.not_in(own), hd.c.harvest_id.not_in(continued), hd.c.submitted < submitted)
            .order_by(hd.c.submitted.desc(), hd.c.harvest_id.desc()).limit(1))
    return sorted(set(own[1:]) | set(chain(older)))


def has_index_ready(jobs: Table) -> ColumnElement[bool]:
    """SQL: the run of a row of ``jobs`` has its deduplication index, or needs none (first selective run)."""
    r = s.harvest_run_dedup_index
    return or_(and_(jobs.c.snapshot.is_(False), jobs.c.harvest_num <= 1),
               exists().where(r.c.harvest_id == jobs.c.harvest_id, r.c.harvest_num == jobs.c.harvest_num,
                              r.c.ready.is_(True)))


_RUN_INDEX = select(s.harvest_run_dedup_index).where(
    s.harvest_run_dedup_index.c.harvest_id == bindparam("harvest_id"),
    s.harvest_run_dedup_index.c.harvest_num == bindparam("harvest_num"))  # built once: every release reads it


def find_run_index(conn: Connection, run: HarvestRun) -> RunIndex | None:
    row = conn.execute(_RUN_INDEX, {"harvest_id": run.harvest_id, "harvest_num": run.harvest_num}).first()
    if row is None:
        return None
    return RunIndex(run=run, job_ids=parse_job_ids(row.job_ids), ready=row.ready, index_path=row.index_path,
                    missing_job_ids=parse_job_ids(row.missing_job_ids or ""), entries=row.entries,
                    failures=row.failures, error=row.error, refusal=row.refusal)


def record_ready(conn: Connection, run: HarvestRun, job_ids: Sequence[int], built: BuiltIndex | None) -> None:
    """The run's index is built (``built``), or it needs none (``built`` None, ``job_ids`` empty)."""
    upsert(conn, s.harvest_run_dedup_index, ("harvest_id", "harvest_num"), [{
        "harvest_id": run.harvest_id, "harvest_num": run.harvest_num, "job_ids": format_job_ids(job_ids),
        "ready": True, "index_path": built.relative_path if built else None,
        "missing_job_ids": format_job_ids(built.missing_job_ids) if built else "",
        "entries": built.entries if built else None, "failures": 0, "error": None, "refusal": None,
        "changed_at": utcnow()}])


def record_refusal(conn: Connection, run: HarvestRun, job_ids: Sequence[int], refusal: str) -> bool:
    """The run's index was refused (too few readable entries): the run is not ready, and ``refusal`` says
    why. True when that is news (the run was not refused, or for another reason), so people are told once.
    A run that is ready already stays ready, as with a failure."""
    r = s.harvest_run_dedup_index
    before = conn.scalar(select(r.c.refusal).where(r.c.harvest_id == run.harvest_id,
                                                   r.c.harvest_num == run.harvest_num))
    upsert(conn, r, ("harvest_id", "harvest_num"), [{
        "harvest_id": run.harvest_id, "harvest_num": run.harvest_num, "job_ids": format_job_ids(job_ids),
        "ready": False, "failures": 0, "refusal": refusal[:2000], "changed_at": utcnow()}],
        set_=lambda excluded: {"refusal": excluded.refusal, "changed_at": excluded.changed_at})
    return before != refusal[:2000]


def record_failure(conn: Connection, run: HarvestRun, job_ids: Sequence[int], error: str) -> int:
    """Count a failed build of the run's index; returns its failures since the last success. A run that is
    ready already stays ready (a repeated request for it may fail without harm)."""
    r = s.harvest_run_dedup_index
    upsert(conn, r, ("harvest_id", "harvest_num"), [{
        "harvest_id": run.harvest_id, "harvest_num": run.harvest_num, "job_ids": format_job_ids(job_ids),
        "ready": False, "failures": 1, "error": error[:2000], "changed_at": utcnow()}],
        set_=lambda excluded: {"failures": r.c.failures + 1, "error": excluded.error,
                               "changed_at": excluded.changed_at})
    return conn.scalar(select(r.c.failures).where(r.c.harvest_id == run.harvest_id,
                                                  r.c.harvest_num == run.harvest_num))


def format_job_ids(job_ids: Sequence[int]) -> str:
    return ",".join(str(job_id) for job_id in sorted(job_ids))


def parse_job_ids(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


class _BuildAbandoned(Exception):
    """Raised from a build's progress callback when the builder closes: the build stops at its next job."""


@dataclass
class _Build:
    job_ids: tuple[int, ...]
    jobs: tuple[tuple[int, int], ...]
    runs: set[HarvestRun]
    done: int = 0
    total: int = 0
    future: concurrent.futures.Future[None] | None = field(default=None, repr=False)


class DedupIndexBuilder:
    """Builds the indexes that ``request`` asks for on up to ``builders`` threads (made when first needed),
    and records each outcome in harvest_run_dedup_index; see the module docstring."""

    def __init__(self, engine: Engine, store: ArchiveStore, notifier: Notifier, builders: int = 2,
                 satisfactory_percentage: int = 70) -> None:
        if builders < 1:
            raise ValueError(f"builders must be at least 1, got {builders}")
        if not 0 <= satisfactory_percentage <= 100:
            raise ValueError(f"satisfactory_percentage is a percentage from 0 to 100, got {satisfactory_percentage}")
        self.engine = engine
        self.store = store
        self.notifier = notifier
        self.satisfactory_percentage = satisfactory_percentage
        self.builders = builders
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=builders,
                                                               thread_name_prefix="dedup-index")
        self._lock = threading.Lock()
        self._builds: dict[tuple[int, ...], _Build] = {}
        self._closing = threading.Event()

    @classmethod
    def from_settings(cls, settings: Settings, engine: Engine, notifier: Notifier) -> DedupIndexBuilder:
        return cls(engine, ArchiveStore.from_settings(settings), notifier, settings.scheduler.dedupIndexBuilders,
                   settings.scheduler.satisfactorythresholdpercentage)

    def request(self, run: HarvestRun, jobs: Sequence[tuple[int, int]]) -> None:
        """Build the index of ``jobs`` ((harvest_id, job_id) pairs, not empty) for ``run``, unless that set
        is being built already, in which case the run is recorded with that build's outcome."""
        if not jobs:
            raise ValueError(f"{run}: an index of no jobs is never built; the run needs none")
        job_ids = tuple(sorted(job_id for _, job_id in jobs))
        with self._lock:
            if self._closing.is_set():
                return
            build = self._builds.get(job_ids)
            if build is not None:
                build.runs.add(run)
                return
            build = _Build(job_ids, tuple(jobs), {run}, total=len(job_ids))
            self._builds[job_ids] = build
            build.future = self._executor.submit(self._build, build)
        log.info("%s: building the deduplication index of %d jobs", run, len(job_ids))

    def progress(self, job_ids: Sequence[int]) -> tuple[int, int] | None:
        """(jobs read, jobs in all) of the build of ``job_ids`` waiting or running now; None if there is none."""
        with self._lock:
            build = self._builds.get(tuple(sorted(job_ids)))
            return (build.done, build.total) if build is not None else None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every build asked for so far has recorded its outcome; False if ``timeout`` ran out."""
        with self._lock:
            futures = [build.future for build in self._builds.values() if build.future is not None]
        _, not_done = concurrent.futures.wait(futures, timeout=timeout)
        return not not_done

    def close(self) -> None:
        """Drop the builds that wait and stop the running ones before their next job; records nothing for them."""
        self._closing.set()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def reopen(self) -> None:
        """Take requests again after ``close`` (a scheduler that leads again), on fresh threads; the builds
        that ``close`` dropped are asked for again by the next tick."""
        with self._lock:
            if not self._closing.is_set():
                return
            self._builds = {key: build for key, build in self._builds.items()
                            if build.future is not None and not build.future.done()}
            self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=self.builders,
                                                                   thread_name_prefix="dedup-index")
            self._closing = threading.Event()

    # ------------------------------------------------------------------ on a builder thread
    def _build(self, build: _Build) -> None:
        def progress(done: int, total: int) -> None:
            if self._closing.is_set():
                raise _BuildAbandoned()
            with self._lock:
                build.done, build.total = done, total

        try:
            try:
                built = build_index(self.store, build.jobs, progress, self.satisfactory_percentage)
            except _BuildAbandoned:
                log.info("deduplication index of %d jobs abandoned: the scheduler stops", len(build.job_ids))
                return
            except DedupCoverageError as exc:
                refusal = str(exc)
                log.warning("deduplication index of %d jobs (%s) refused: %s", len(build.job_ids),
                            ", ".join(str(run) for run in sorted(build.runs)), refusal)
                self._record(build, lambda conn, run: self._record_refusal(conn, run, build, refusal))
                return
            except Exception as exc:  # noqa: BLE001 - any failure is recorded, and the build asked for again
                # an unreachable store or a full disk is told by its message; anything else is a bug
                expected = isinstance(exc, HarvestSuiteError | OSError | sqlite3.Error)
                log.warning("deduplication index of %d jobs (%s) failed: %s", len(build.job_ids),
                            ", ".join(str(run) for run in sorted(build.runs)), exc, exc_info=not expected)
                error = str(exc) or type(exc).__name__
                self._record(build, lambda conn, run: self._record_failure(conn, run, build, error))
                return
            if built.missing_job_ids:
                log.warning("deduplication index %s: %d of %d jobs have no readable entries and are left out: %s",
                            built.relative_path, len(built.missing_job_ids), len(build.job_ids),
                            format_job_ids(built.missing_job_ids))
            log.info("deduplication index %s %s: %d entries from %d jobs", built.relative_path,
                     "reused" if built.reused else "built", built.entries,
                     len(build.job_ids) - len(built.missing_job_ids))
            self._record(build, lambda conn, run: record_ready(conn, run, build.job_ids, built))
        finally:
            with self._lock:  # whatever happened, the set is no longer being built
                self._builds.pop(build.job_ids, None)

    def _record_failure(self, conn: Connection, run: HarvestRun, build: _Build, error: str) -> None:
        failures = record_failure(conn, run, build.job_ids, error)
        if failures == NOTIFY_AFTER_FAILURES:
            self.notifier.notify(f"Deduplication index of {run} keeps failing",
                                 f"Building the deduplication index of {run} ({len(build.job_ids)} jobs) failed "
                                 f"{failures} times; the last error: {error}. The run's jobs are not dispatched "
                                 "until it is built; the scheduler tries again at every tick.")

    def _record_refusal(self, conn: Connection, run: HarvestRun, build: _Build, refusal: str) -> None:
        if record_refusal(conn, run, build.job_ids, refusal):
            self.notifier.notify(f"Deduplication index of {run} refused",
                                 f"The deduplication index of {run} ({len(build.job_ids)} jobs) was refused: "
                                 f"{refusal}. The run's jobs are not dispatched until enough of those jobs' "
                                 "entries are stored; the scheduler counts again at every tick.")

    def _record(self, build: _Build, write: Callable[[Connection, HarvestRun], None]) -> None:
        """Write the outcome for every run of the build, including runs that join while it is written; the
        set stops being built (``progress`` None) only once every row is committed."""
        written: set[HarvestRun] = set()
        while True:
            with self._lock:
                runs = build.runs - written
                if not runs:
                    self._builds.pop(build.job_ids, None)
                    return
            try:
                with write_transaction(self.engine) as conn:
                    for run in sorted(runs):
                        write(conn, run)
            except Exception:  # noqa: BLE001 - the thread's top: logged; without a row the run is asked for again
                log.exception("the outcome of the deduplication index of %d jobs could not be recorded",
                              len(build.job_ids))
                return
            written |= runs


__all__ = ["DedupIndexBuilder", "HarvestRun", "RunIndex", "deduplication_jobs", "find_run_index",
           "format_job_ids", "has_index_ready", "parse_job_ids", "record_failure", "record_ready", "record_refusal"]
