"""Seed thumbnails: what the QA worker made of each DONE job (scheduler/thumbnails.py), for the job and
harvest pages.

Two tables. ``seed_thumbnails`` has one row per seed the worker has dealt with: the name of its stored
image in the job's directory of the archive store, or the note why it has none (not captured in the job,
the replay did not load in time). ``job_thumbnails`` has one row per job whose pass is over: MADE (every
seed has its row) or SKIPPED (none could be made: no Chromium, no Playwright, no replay service; the note
says which).

The rows make the worker idempotent and resumable: a seed with a row is not made again, and a job with a
MADE row is never taken again, so a worker that died midway goes on with the seeds it had not reached. A
SKIPPED job is taken again by a pass that can make thumbnails, and never by one that cannot: its note stays
as it was. A row is written once; a second worker that races the first adds nothing.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, exists, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus

_jobs, _seeds = s.job_thumbnails, s.seed_thumbnails


class ThumbnailState(enum.Enum):
    """How a job's thumbnail pass ended."""

    MADE = "MADE"        # every seed has its row: a thumbnail or the note why not
    SKIPPED = "SKIPPED"  # none could be made; the note says why, and a pass that can make them takes it again


THUMBNAILS_DIR = "thumbnails"


def seed_key(seed: str) -> str:
    """The key of a seed in its job: the sha1 of its URL, hex (a seed is a URL of any length)."""
    return hashlib.sha1(seed.encode("utf-8")).hexdigest()


def thumbnail_name(seed: str) -> str:
    """The seed's picture in its job's directory of the archive store."""
    return key_thumbnail_name(seed_key(seed))


def key_thumbnail_name(key: str) -> str:
    """The picture of the seed whose key is ``key`` in its job's directory of the archive store."""
    return f"{THUMBNAILS_DIR}/{key}.png"


@dataclass(frozen=True)
class JobToThumbnail:
    """A DONE job that has no thumbnails yet: its run, its seeds and when it ended."""

    job_id: int
    harvest_id: int
    harvest_num: int
    seeds: tuple[str, ...]
    enddate: datetime | None


@dataclass(frozen=True)
class SeedThumbnail:
    """One seed's outcome: ``name`` its image in the job's directory of the store, or ``note`` why none."""

    job_id: int
    seed: str
    harvest_id: int
    harvest_num: int
    name: str | None
    capture_time: str | None
    note: str | None

    @property
    def key(self) -> str:
        return seed_key(self.seed)


@dataclass(frozen=True)
class JobThumbnails:
    """A job's thumbnails: its pass's state and note (None: not over yet) and its seeds' rows."""

    job_id: int
    state: ThumbnailState | None
    note: str | None
    seeds: tuple[SeedThumbnail, ...]


def _seed(row: object) -> SeedThumbnail:
    return SeedThumbnail(**{name: getattr(row, name) for name in
                            ("job_id", "seed", "harvest_id", "harvest_num", "name", "capture_time", "note")})


_SEED_COLUMNS = (_seeds.c.job_id, _seeds.c.seed, _seeds.c.harvest_id, _seeds.c.harvest_num, _seeds.c.name,
                 _seeds.c.capture_time, _seeds.c.note)


class ThumbnailRepository:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def _insert(self, table, **values):  # noqa: ANN001, ANN202 - an INSERT ... ON CONFLICT DO NOTHING
        dialect = postgresql if is_postgresql(self.conn.engine) else sqlite
        return dialect.insert(table).values(**values).on_conflict_do_nothing()

    def jobs_waiting(self, limit: int, ended_before: datetime, retry_skipped: bool) -> list[JobToThumbnail]:
        """DONE jobs that ended before ``ended_before`` and have no MADE pass, newest first, at most ``limit``;
        SKIPPED ones too when ``retry_skipped``, after the jobs never tried."""
        j = s.jobs
        passed = select(_jobs.c.job_id).where(_jobs.c.job_id == j.c.job_id)
        if retry_skipped:
            passed = passed.where(_jobs.c.state == ThumbnailState.MADE.value)
        skipped = exists(select(_jobs.c.job_id).where(_jobs.c.job_id == j.c.job_id,
                                                       _jobs.c.state == ThumbnailState.SKIPPED.value))
        rows = self.conn.execute(
            select(j.c.job_id, j.c.harvest_id, j.c.harvest_num, j.c.seedlist, j.c.enddate)
            # a job without an end date (history imported from elsewhere) has ended long ago
            .where(j.c.status == int(JobStatus.DONE), or_(j.c.enddate.is_(None), j.c.enddate < ended_before),
                   ~exists(passed))
            .order_by(skipped, j.c.job_id.desc()).limit(limit))
        return [JobToThumbnail(row.job_id, row.harvest_id, row.harvest_num,
                               tuple(line.strip() for line in (row.seedlist or "").splitlines() if line.strip()),
                               row.enddate) for row in rows]

    def record_seed(self, job: JobToThumbnail, seed: str, *, name: str | None = None,
                    capture_time: str | None = None, note: str | None = None) -> bool:
        """Store one seed's outcome; False if it was stored before (by a worker that raced this one)."""
        statement = self._insert(_seeds, job_id=job.job_id, seed_key=seed_key(seed), seed=seed,
                                 harvest_id=job.harvest_id, harvest_num=job.harvest_num, name=name,
                                 capture_time=capture_time, note=note, tstamp=utcnow())
        return self.conn.execute(statement.returning(_seeds.c.job_id)).first() is not None

    def seeds_done(self, job_id: int) -> dict[str, SeedThumbnail]:
        """The seeds of the job that have their row, by seed."""
        rows = self.conn.execute(select(*_SEED_COLUMNS).where(_seeds.c.job_id == job_id))
        return {row.seed: _seed(row) for row in rows}

    def finish(self, job: JobToThumbnail, state: ThumbnailState, note: str | None = None) -> None:
        """End the job's pass: MADE once every seed has its row, SKIPPED with the note why none was made.

        A SKIPPED row becomes MADE when a later pass makes them; a MADE row never changes.
        """
        values = {"state": state.value, "note": note, "tstamp": utcnow()}
        self.conn.execute(_jobs.update().where(_jobs.c.job_id == job.job_id,
                                               _jobs.c.state == ThumbnailState.SKIPPED.value).values(**values))
        self.conn.execute(self._insert(_jobs, job_id=job.job_id, harvest_id=job.harvest_id,
                                       harvest_num=job.harvest_num, **values))

    def of_job(self, job_id: int) -> JobThumbnails:
        """The job's pass and its seeds' rows, in the order they were made."""
        state = self.conn.execute(select(_jobs.c.state, _jobs.c.note).where(_jobs.c.job_id == job_id)).first()
        rows = self.conn.execute(select(*_SEED_COLUMNS).where(_seeds.c.job_id == job_id)
                                 .order_by(_seeds.c.tstamp, _seeds.c.seed_key))
        return JobThumbnails(job_id, ThumbnailState(state.state) if state else None, state.note if state else None,
                             tuple(_seed(row) for row in rows))

    def newest_run(self, harvest_id: int) -> int | None:
        """The newest run of the harvest that has a thumbnail; None if none has."""
        return self.conn.scalar(select(func.max(_seeds.c.harvest_num))
                                .where(_seeds.c.harvest_id == harvest_id, _seeds.c.name.is_not(None)))

    def of_run(self, harvest_id: int, harvest_num: int, limit: int) -> list[SeedThumbnail]:
        """The seeds of one run that have a thumbnail, by job and seed, at most ``limit``."""
        rows = self.conn.execute(
            select(*_SEED_COLUMNS).where(_seeds.c.harvest_id == harvest_id, _seeds.c.harvest_num == harvest_num,
                                         _seeds.c.name.is_not(None))
            .order_by(_seeds.c.job_id, _seeds.c.seed).limit(limit))
        return [_seed(row) for row in rows]

    def previous_run(self, harvest_id: int, harvest_num: int, seeds: Iterable[str]) -> dict[str, SeedThumbnail]:
        """The same seeds' thumbnails in the run before ``harvest_num`` of the harvest, by seed."""
        keys = sorted({seed_key(seed) for seed in seeds})
        found: dict[str, SeedThumbnail] = {}
        for start in range(0, len(keys), 500):
            batch: Sequence[str] = keys[start:start + 500]
            rows = self.conn.execute(
                select(*_SEED_COLUMNS).where(_seeds.c.harvest_id == harvest_id,
                                             _seeds.c.harvest_num == harvest_num - 1,
                                             _seeds.c.seed_key.in_(batch), _seeds.c.name.is_not(None))
                .order_by(_seeds.c.job_id))
            for row in rows:
                found.setdefault(row.seed, _seed(row))
        return found
