"""Job ends: how a job's crawl ended when that was asked for and was no error, one row per job.

The scheduler's status intake writes a job's row with its final status, from the controller's
CrawlStatus.crawl_end: an operator's stop or fail (who, which job change) or a budget of the whole crawl
reached (max_objects, max_bytes, max_running_time, with its limit). The web UI and the API read it, beside
the job's harvest errors, which never hold such an end. A repeated report (the DONE after an archive store
outage) writes the same row again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from harvestdef.db import schema as s
from harvestdef.db.engine import upsert
from harvestdef.messages import BUDGET_END_CAUSES, OPERATOR_END_CAUSES

_ends = s.job_ends


@dataclass(frozen=True)
class JobEnd:
    """One job's end as asked: ``cause`` is a stop or fail (``author``, ``change_version``) or a budget
    (``budget_limit``, None when the controller could not tell it)."""

    job_id: int
    cause: str
    author: str
    change_version: int | None
    budget_limit: int | None
    ended_at: datetime

    @property
    def is_operator_end(self) -> bool:
        return self.cause in OPERATOR_END_CAUSES

    @property
    def is_budget(self) -> bool:
        return self.cause in BUDGET_END_CAUSES


class JobEndRepository:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def record(self, end: JobEnd) -> None:
        """Store ``end`` as its job's; a job's second report replaces the first's."""
        upsert(self.conn, _ends, ["job_id"], [{
            "job_id": end.job_id, "cause": end.cause, "author": end.author, "change_version": end.change_version,
            "budget_limit": end.budget_limit, "ended_at": end.ended_at}])

    def for_jobs(self, job_ids: Sequence[int]) -> dict[int, JobEnd]:
        """The ends of those of ``job_ids`` that have one; one query for a page of jobs."""
        if not job_ids:
            return {}
        rows = self.conn.execute(select(_ends).where(_ends.c.job_id.in_(list(job_ids))))
        return {row.job_id: JobEnd(**row._mapping) for row in rows}
