"""Giving the jobs stored before partitions existed their partitions (``harvestsuite dedup rebuild``).

Such a job has ``dedup/<job_id>.gz`` in whatever order its crawl wrote it and no directory, so a later
job's index reads and filters that whole file (harvestdef.dedup.jobindex). The rebuild writes, for each
such job, a copy of its entries in domain order with its directory (harvestdef.dedup.partitions) and
stores them beside the original:

``dedup/<job_id>.by-domain.gz``
    the same entries in domain order, in gzip members of whole domains;
``dedup/<job_id>.domains``
    its directory, whose header names ``data=<job_id>.by-domain.gz``.

The stored entries file is never changed, since a stored file never changes (harvestdef/archive.py).
Both files are written in a working directory, then stored with ``ArchiveStore.store``, which is atomic:
the data file first and the directory last, so a directory in the store always has its data, and a job
has its directory only once it is complete; then SHA256SUMS is written again with both.

A job with a directory is done and skipped, so a rerun after an interruption goes on where it stopped;
a job stopped between its two stores is done again from the start, and storing the same bytes again
is a no-op. The one thing done for a skipped job is to complete its SHA256SUMS when an interruption
came between the directory's store and the checksums.

A job's own domains (the ``own`` flag of its directory) are the domains of its configurations in the
harvest database (job_configs -> configurations -> domains); a job the database does not have under the
harvest it is stored under is partitioned all the same, with no own domains. They are read from the schema
here, 500 jobs a query: a migration's one read of many jobs, which no repository offers.

Only jobs whose upload has finished (their SHA256SUMS lists the entries file) are taken, so a job that a
harvester is storing now, whose directory comes after its entries file, is never raced. The store is
walked one harvest directory at a time, never listed whole.
"""

from __future__ import annotations

import enum
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, select

from harvestdef.archive import CHECKSUMS, ArchiveStore
from harvestdef.db import schema as s
from harvestdef.dedup.entries import entries_name, read_entry_fields
from harvestdef.dedup.partitions import PartitionSummary, directory_name, domain_of_host, write_partitioned
from harvestdef.errors import ArchiveStoreError, DedupFormatError

#: Pending jobs whose own domains are looked up in one query.
LOOKUP_BATCH = 500


def by_domain_name(job_id: int) -> str:
    """The name of a rebuilt job's entries in domain order, inside its archive-store directory."""
    return f"dedup/{job_id}.by-domain.gz"


class RebuildOutcome(enum.Enum):
    REBUILT = "rebuilt"
    DONE = "done"        # had its directory already: skipped
    FAILED = "failed"


@dataclass(frozen=True)
class StoredJob:
    """A job directory of the store that holds an entries file."""
    harvest_id: int
    job_id: int
    partitioned: bool   # it has its directory


@dataclass(frozen=True)
class JobResult:
    """What the rebuild did with one job."""
    harvest_id: int
    job_id: int
    outcome: RebuildOutcome
    entries: int = 0
    own_domains: int | None = None   # None: the job is not in the harvest database
    reason: str | None = None        # why it failed

    @property
    def name(self) -> str:
        return f"job {self.job_id} of harvest {self.harvest_id}"


@dataclass
class RebuildSummary:
    """What ``rebuild_store`` did over the whole store."""
    rebuilt: int = 0
    skipped: int = 0
    unknown: int = 0                 # of the rebuilt, those not in the harvest database
    entries: int = 0                 # entries of the rebuilt jobs
    seconds: float = 0.0
    failed: list[JobResult] = field(default_factory=list)


@dataclass(frozen=True)
class StoreCount:
    """Jobs with an entries file, by whether they have their directory."""
    pending: int
    partitioned: int


def stored_jobs(store: ArchiveStore) -> Iterator[StoredJob]:
    """Every job of the store that has an entries file, by harvest id and job id.

    Only the job ids of one harvest directory are held at a time; names that are not a number as
    ``ArchiveStore.job_path`` writes it (``dedup-index``, ``007``) are not job directories.
    """
    for harvest_id in _numbered_directories(store.root):
        for job_id in _numbered_directories(store.root / str(harvest_id)):
            if store.has(harvest_id, job_id, entries_name(job_id)) and _upload_finished(store, harvest_id, job_id):
                yield StoredJob(harvest_id, job_id, store.has(harvest_id, job_id, directory_name(job_id)))


def _upload_finished(store: ArchiveStore, harvest_id: int, job_id: int) -> bool:
    """The job's SHA256SUMS lists its entries file: post-processing writes it once every file is stored. A job
    still being stored is left to its harvester, which stores the directory of its own after the entries
    file (harvester/jobdir.py); a rebuild's directory in its place would make that store a conflict."""
    sums = store.job_path(harvest_id, job_id) / CHECKSUMS
    try:
        text = sums.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    name = entries_name(job_id)
    return any(line.rstrip("\n").endswith(f"  {name}") for line in text.splitlines())


def count_jobs(store: ArchiveStore) -> StoreCount:
    """How many jobs a rebuild would partition, and how many have their directory already."""
    pending = partitioned = 0
    for job in stored_jobs(store):
        if job.partitioned:
            partitioned += 1
        else:
            pending += 1
    return StoreCount(pending, partitioned)


def own_domains(engine: Engine, harvest_id: int, job_ids: Sequence[int]) -> dict[int, set[str]]:
    """The domains of each job's configurations, for the jobs of ``job_ids`` that the harvest database has
    under ``harvest_id``; a job absent from the result is unknown there.

    A name is taken as its partition's name (harvestdef.dedup.partitions.domain_of_host), so a domain
    written in punycode in the database marks the partition of its Unicode form.
    """
    found: dict[int, set[str]] = {}
    if not job_ids:
        return found
    jc, c, d = s.job_configs, s.configurations, s.domains
    with engine.connect() as conn:
        for job_id in conn.scalars(select(s.jobs.c.job_id).where(s.jobs.c.job_id.in_(job_ids),
                                                                 s.jobs.c.harvest_id == harvest_id)):
            found[job_id] = set()
        rows = conn.execute(
            select(jc.c.job_id, d.c.name)
            .select_from(jc.join(c, c.c.config_id == jc.c.config_id).join(d, d.c.domain_id == c.c.domain_id))
            .where(jc.c.job_id.in_(list(found))))
        for job_id, name in rows:
            found[job_id].add(domain_of_host(name))
    return found


def rebuild_job(store: ArchiveStore, harvest_id: int, job_id: int, own: Iterable[str],
                work_dir: Path) -> PartitionSummary:
    """Partition one job's stored entries file into the store, as the module docstring says.

    :raise DedupFormatError: the stored entries file is unreadable (nothing is stored then).
    :raise ArchiveStoreError: a file could not be stored, or SHA256SUMS not written; the directory is stored
        only after its data file, so a failure before it leaves the job without one.
    """
    work_dir = Path(work_dir)
    data = work_dir / f"{job_id}.by-domain.gz"
    directory = work_dir / f"{job_id}.domains"
    source = store.job_path(harvest_id, job_id) / entries_name(job_id)
    try:
        summary = write_partitioned(read_entry_fields(source), data, directory, own, work_dir)
        store.store(data, harvest_id, job_id, by_domain_name(job_id))
        store.store(directory, harvest_id, job_id, directory_name(job_id))
        store.write_checksums(harvest_id, job_id)
        return summary
    finally:
        data.unlink(missing_ok=True)
        directory.unlink(missing_ok=True)


def rebuild_store(store: ArchiveStore, engine: Engine, work_dir: Path | None = None,
                  on_start: Callable[[StoredJob], None] | None = None,
                  on_done: Callable[[JobResult], None] | None = None) -> RebuildSummary:
    """Partition every job of ``store`` that has an entries file and no directory; skip those that have one.

    ``on_start`` is called before a job is partitioned, ``on_done`` after each job whatever came of it.
    A job that fails (its entries file unreadable, a file that cannot be stored) is in ``failed`` with
    its reason, and the rebuild goes on with the next; working files go under a directory of its own
    in ``work_dir`` (made if missing; default: the system's temporary directory), removed at the end.

    :raise ArchiveStoreError: the store's root is not a directory, at the start or after a job failed
        to store (an unmounted store fails the run, not every job after it).
    """
    store.require_root()
    started = time.monotonic()
    summary = RebuildSummary()
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="harvestsuite-dedup-rebuild-", dir=work_dir))

    def done(result: JobResult) -> None:
        if result.outcome is RebuildOutcome.REBUILT:
            summary.rebuilt += 1
            summary.entries += result.entries
            summary.unknown += result.own_domains is None
        elif result.outcome is RebuildOutcome.DONE:
            summary.skipped += 1
        else:
            summary.failed.append(result)
        if on_done is not None:
            on_done(result)

    def rebuild_batch(harvest_id: int, job_ids: list[int]) -> None:
        owners = own_domains(engine, harvest_id, job_ids)
        for job_id in job_ids:
            if store.has(harvest_id, job_id, directory_name(job_id)):
                # done since it was listed, by another rebuild beside this one
                done(JobResult(harvest_id, job_id, RebuildOutcome.DONE))
                continue
            if on_start is not None:
                on_start(StoredJob(harvest_id, job_id, partitioned=False))
            own = owners.get(job_id)
            try:
                partitioned = rebuild_job(store, harvest_id, job_id, own or (), work)
            except (DedupFormatError, ArchiveStoreError, OSError, ValueError, sqlite3.Error) as exc:
                done(JobResult(harvest_id, job_id, RebuildOutcome.FAILED,
                               own_domains=None if own is None else len(own), reason=str(exc)))
                store.require_root()
                continue
            done(JobResult(harvest_id, job_id, RebuildOutcome.REBUILT, entries=partitioned.entries,
                           own_domains=None if own is None else len(own)))

    try:
        batch: list[int] = []
        batch_harvest = -1
        for job in stored_jobs(store):
            if batch and (job.harvest_id != batch_harvest or len(batch) >= LOOKUP_BATCH):
                rebuild_batch(batch_harvest, batch)
                batch = []
            if job.partitioned:
                try:
                    _complete_checksums(store, job)
                except (ArchiveStoreError, OSError) as exc:
                    done(JobResult(job.harvest_id, job.job_id, RebuildOutcome.FAILED, reason=f"{CHECKSUMS}: {exc}"))
                    continue
                done(JobResult(job.harvest_id, job.job_id, RebuildOutcome.DONE))
                continue
            batch_harvest = job.harvest_id
            batch.append(job.job_id)
        if batch:
            rebuild_batch(batch_harvest, batch)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        summary.seconds = time.monotonic() - started
    return summary


def _complete_checksums(store: ArchiveStore, job: StoredJob) -> None:
    """SHA256SUMS again for a job whose rebuild stopped after storing its directory, before the checksums.

    Only a job with a by-domain file is the rebuild's own: the directory of a job partitioned by its
    harvester is the harvester's to list.
    """
    if not store.has(job.harvest_id, job.job_id, by_domain_name(job.job_id)):
        return
    sums = store.job_path(job.harvest_id, job.job_id) / CHECKSUMS
    try:
        listed = sums.read_text(encoding="utf-8")
    except FileNotFoundError:
        listed = ""
    if f"  {directory_name(job.job_id)}\n" not in listed:
        store.write_checksums(job.harvest_id, job.job_id)


def _numbered_directories(directory: Path) -> list[int]:
    """The subdirectories of ``directory`` named by a number, as ``str(int)`` writes it, in numeric order."""
    numbers = []
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name
            if name.isascii() and name.isdigit() and name == str(int(name)) and entry.is_dir():
                numbers.append(int(name))
    return sorted(numbers)


__all__ = ["LOOKUP_BATCH", "JobResult", "RebuildOutcome", "RebuildSummary", "StoreCount", "StoredJob",
           "by_domain_name", "count_jobs", "own_domains", "rebuild_job", "rebuild_store", "stored_jobs"]
