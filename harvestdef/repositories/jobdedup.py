"""Each job's deduplication sources, one row per job in job_dedup_sources.

The scheduler writes a NEW job's row once it has decided which earlier jobs hold the captures of the job's
domains (scheduler/dedupsources.py): ready, or held with the reason. The dispatcher reads it into the job's
DoOneCrawl; the web UI and the API show it on the job's page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from harvestdef.db import schema as s
from harvestdef.db.engine import upsert

_sources = s.job_dedup_sources


@dataclass(frozen=True)
class JobDedupSources:
    """A job's row: ``sources`` are (harvest_id, job_id), newest first; ``covered`` of the ``with_history``
    domains (of ``domains``) have stored earlier captures; ``refusal`` says why a job not ``ready`` is held."""
    job_id: int
    ready: bool
    sources: tuple[tuple[int, int], ...]
    domains: int
    with_history: int
    covered: int
    missing_job_ids: tuple[int, ...]
    refusal: str | None
    changed_at: datetime
    refusal_phrase: str | None = None  # the refusal's phrase as its JSON (harvestdef/harvestreasons.py)


class JobDedupRepository:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def find(self, job_id: int) -> JobDedupSources | None:
        row = self.conn.execute(select(_sources).where(_sources.c.job_id == job_id)).first()
        if row is None:
            return None
        return JobDedupSources(job_id=job_id, ready=row.ready, sources=parse_sources(row.sources),
                               domains=row.domains, with_history=row.with_history, covered=row.covered,
                               missing_job_ids=tuple(int(p) for p in (row.missing_job_ids or "").split(",") if p),
                               refusal=row.refusal, changed_at=row.changed_at, refusal_phrase=row.refusal_phrase)

    def record(self, row: JobDedupSources) -> None:
        """Write the job's row, replacing an earlier one (a refusal counted again)."""
        upsert(self.conn, _sources, ("job_id",), [{
            "job_id": row.job_id, "ready": row.ready, "sources": format_sources(row.sources),
            "domains": row.domains, "with_history": row.with_history, "covered": row.covered,
            "missing_job_ids": ",".join(str(job) for job in row.missing_job_ids),
            "refusal": row.refusal[:2000] if row.refusal else None, "refusal_phrase": row.refusal_phrase,
            "changed_at": row.changed_at}])


def format_sources(sources: Iterable[tuple[int, int]]) -> str:
    return ",".join(f"{harvest_id}/{job_id}" for harvest_id, job_id in sources)


def parse_sources(text: str) -> tuple[tuple[int, int], ...]:
    pairs = []
    for part in text.split(","):
        if part:
            harvest_id, _, job_id = part.partition("/")
            pairs.append((int(harvest_id), int(job_id)))
    return tuple(pairs)


__all__ = ["JobDedupRepository", "JobDedupSources", "format_sources", "parse_sources"]
