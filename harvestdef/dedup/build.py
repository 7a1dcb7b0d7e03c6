"""Building the deduplication index of a set of jobs from their entries files in the archive store.

The index is cached in the store under a name derived from the requested job ids
(``dedup-index/<sha256 of "1,2,3">.sqlite``): a second request for the same jobs reuses the file. A job
without an entries file, or whose entries file cannot be read, is left out and listed as missing, as
NetarchiveSuite's index server leaves out jobs whose crawl.log or CDX it cannot find (reference §6.4). As
there, the index is stored (under the name of the whole job set) only when the jobs whose entries were read
are at least ``threshold_percentage`` of those asked for; below, nothing is stored and DedupCoverageError
says why, so a later request, once the missing entries are stored, builds it whole. The jobs with an
entries file are counted first, so a request that cannot reach the threshold costs no reading. The file
is written under a temporary name and renamed (DedupIndexWriter), so builders that race each other never
expose half an index, and the last rename leaves an equal one.

Reading and parsing the entries files is most of the work, so jobs are loaded by worker processes, one per
CPU, each into its own staging file; this process merges the staging files as they come and sorts the
captures into the index once.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import secrets
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from harvestdef.archive import ArchiveStore
from harvestdef.dedup.entries import entries_name, read_entry_fields
from harvestdef.dedup.index import DedupIndex, DedupIndexWriter, write_staging
from harvestdef.errors import DedupCoverageError, DedupFormatError

INDEX_DIRECTORY = "dedup-index"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuiltIndex:
    """An index file in the archive store; ``job_ids`` are the jobs whose entries it holds."""
    relative_path: str
    path: Path
    job_ids: tuple[int, ...]
    missing_job_ids: tuple[int, ...]      # asked for but left out: no entries stored, or unreadable
    entries: int                 # (digest, URL) pairs in the index
    reused: bool                 # found in the store, not built by this call
    unreadable_job_ids: tuple[int, ...] = ()  # of missing_job_ids, those whose entries file could not be read


def index_relative_path(job_ids: Iterable[int]) -> str:
    """``dedup-index/<sha256 hex of the job ids, ascending, decimal, joined by commas>.sqlite``."""
    ids = sorted(set(job_ids))
    if not ids:
        raise ValueError("no job ids: an index of no jobs means deduplication is off and is never built")
    key = ",".join(str(job_id) for job_id in ids)
    return f"{INDEX_DIRECTORY}/{hashlib.sha256(key.encode('ascii')).hexdigest()}.sqlite"


def build_index(store: ArchiveStore, jobs: Iterable[tuple[int, int]],
                progress: Callable[[int, int], None] | None = None, threshold_percentage: int = 0) -> BuiltIndex:
    """The index of ``jobs`` ((harvest_id, job_id) pairs): reused from the store, or built there.

    ``progress(jobs_done, jobs_total)`` is called after each job is read (jobs without entries first).
    Jobs are read by worker processes started with multiprocessing's spawn method, so a script that calls
    this must keep its top level under ``if __name__ == "__main__":``.

    :raise ValueError: no jobs, one job id under two harvest ids, or a threshold outside 0-100.
    :raise DedupCoverageError: the jobs whose entries could be read are fewer than ``threshold_percentage``
        of ``jobs`` (no index is written then).
    """
    if not 0 <= threshold_percentage <= 100:
        raise ValueError(f"threshold_percentage is a percentage from 0 to 100, got {threshold_percentage}")
    harvest_of: dict[int, int] = {}
    for harvest_id, job_id in jobs:
        if harvest_of.setdefault(job_id, harvest_id) != harvest_id:
            raise ValueError(f"job {job_id} is given under harvests {harvest_of[job_id]} and {harvest_id}")
    relative = index_relative_path(harvest_of)
    path = store.path_of(relative)
    if path.is_file():
        with DedupIndex(path) as index:
            return BuiltIndex(relative, path, index.job_ids, index.missing_job_ids, len(index), reused=True)
    entries_paths = {job_id: store.job_path(harvest_id, job_id) / entries_name(job_id)
                     for job_id, harvest_id in sorted(harvest_of.items())
                     if store.has(harvest_id, job_id, entries_name(job_id))}
    missing = tuple(job_id for job_id in sorted(harvest_of) if job_id not in entries_paths)
    _check_coverage(len(harvest_of), missing, (), threshold_percentage)
    report = _Progress(progress, len(harvest_of))
    for _ in missing:
        report.job_done()
    with DedupIndexWriter(path) as writer:
        unreadable = _load_jobs(writer, path, entries_paths, report)
        # raised inside the block, so the writer discards what it loaded
        _check_coverage(len(harvest_of), missing, unreadable, threshold_percentage)
        loaded = tuple(job_id for job_id in entries_paths if job_id not in unreadable)
        left_out = tuple(sorted(missing + unreadable))
        writer.set_jobs(loaded, left_out)
    with DedupIndex(path) as index:
        pairs = len(index)
    return BuiltIndex(relative, path, loaded, left_out, pairs, reused=False, unreadable_job_ids=unreadable)


def _check_coverage(requested: int, missing: tuple[int, ...], unreadable: tuple[int, ...],
                    threshold_percentage: int) -> None:
    """NetarchiveSuite's satisfactorythresholdpercentage (reference §6.4), taken as "at least"."""
    readable = requested - len(missing) - len(unreadable)
    if readable * 100 < threshold_percentage * requested:
        raise DedupCoverageError(requested, missing, unreadable, threshold_percentage)


class _Progress:
    def __init__(self, callback: Callable[[int, int], None] | None, total: int) -> None:
        self.callback = callback
        self.total = total
        self.done = 0

    def job_done(self) -> None:
        self.done += 1
        if self.callback is not None:
            self.callback(self.done, self.total)


def _load_jobs(writer: DedupIndexWriter, index_path: Path, entries_paths: dict[int, Path],
               report: _Progress) -> tuple[int, ...]:
    """Stage every job's entries in worker processes and add each staging file to ``writer`` as it is done;
    returns the jobs whose entries file could not be read, which add nothing (a job is added whole or not
    at all)."""
    unreadable: list[int] = []
    if not entries_paths:
        return ()
    token = f"{os.getpid()}-{secrets.token_hex(6)}"
    parts = {job_id: index_path.with_name(f".{index_path.name}.part-{job_id}-{token}") for job_id in entries_paths}
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = min(len(entries_paths), cpus)
    # spawn, not fork: the caller (a scheduler) may hold threads and database connections.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        try:
            job_of = {pool.submit(_stage_job, entries_path, parts[job_id]): job_id
                      for job_id, entries_path in entries_paths.items()}
            for future in as_completed(job_of):
                job_id = job_of[future]
                try:
                    future.result()
                except (DedupFormatError, OSError) as exc:
                    # The job's own file that cannot be read leaves the job out; anything else (the staging
                    # file on a full disk, say) is this build's failure, not the job's.
                    if isinstance(exc, OSError) and exc.filename != os.fspath(entries_paths[job_id]):
                        raise
                    log.warning("deduplication entries of job %d left out: %s", job_id, exc)
                    unreadable.append(job_id)
                    report.job_done()
                    continue
                part = parts[job_id]
                writer.add_staging(part)
                part.unlink()
                report.job_done()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for part in parts.values():
                part.unlink(missing_ok=True)
    return tuple(sorted(unreadable))


def _stage_job(entries_path: Path, part: Path) -> int:
    """In a worker process: one job's entries file -> a staging file."""
    return write_staging(part, read_entry_fields(entries_path))
