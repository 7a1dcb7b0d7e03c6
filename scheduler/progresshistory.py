"""A running job's progress samples (runningjobshistory): dense while recent, thinned for the long history.

Every progress report of a running job (one each ``crawlLoopWaitTime``) is stored as a sample, so the
live view's chart has points from the crawl's first seconds. Samples older than
``harvestsuite.scheduler.recentHistoryWindow`` are thinned to one each ``historySampleRate``: the oldest
sample is kept, then each sample at least that long after the last one kept, and the rest deleted. That
is the rule NetarchiveSuite stores samples by, applied later, so a week-long crawl keeps about as many
rows as it did there (2016 at 300 s) plus those of the recent window. Once the job ends (its final
status, a timeout or a resubmission by the scheduler's tick) its whole history is thinned so.

The rule is idempotent (samples already thinned are spaced by the rate, so thinning them again keeps every
one), which lets each thinning start at the newest sample kept before the previous one's cutoff instead of
at the job's first sample, and lets a restarted scheduler, which knows no previous cutoff, thin from the
start once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import Connection, and_, bindparam, delete, func, select

from harvestdef.db import schema as s


def samples_to_thin(times: Sequence[datetime], rate: timedelta) -> list[int]:
    """The positions in ``times`` (oldest first) of the samples to delete: the first is kept, then each at
    least ``rate`` after the last one kept."""
    doomed: list[int] = []
    kept: datetime | None = None
    for position, moment in enumerate(times):
        if kept is None or moment - kept >= rate:
            kept = moment
        else:
            doomed.append(position)
    return doomed


def thin_history(conn: Connection, job_id: int, rate: timedelta, cutoff: datetime | None,
                 since: datetime | None = None) -> int:
    """Thin the job's samples older than ``cutoff`` (all of them when None) to one each ``rate``; ``since``:
    the previous thinning's cutoff, where the samples before were thinned already. Returns how many went."""
    r = s.runningjobshistory
    query = select(r.c.harvestname, r.c.elapsedseconds, r.c.tstamp).where(r.c.jobid == job_id)
    if cutoff is not None:
        query = query.where(r.c.tstamp < cutoff)
    if since is not None:
        # the newest sample the previous thinning kept is where the rule starts again
        anchor = conn.scalar(select(func.max(r.c.tstamp)).where(r.c.jobid == job_id, r.c.tstamp < since))
        if anchor is not None:
            query = query.where(r.c.tstamp >= anchor)
    rows = list(conn.execute(query.order_by(r.c.tstamp, r.c.elapsedseconds)))
    doomed = [rows[position] for position in samples_to_thin([row.tstamp for row in rows], rate)]
    if doomed:
        conn.execute(delete(r).where(and_(r.c.jobid == job_id, r.c.harvestname == bindparam("name"),
                                          r.c.elapsedseconds == bindparam("elapsed"),
                                          r.c.tstamp == bindparam("at"))),
                     [{"name": row.harvestname, "elapsed": row.elapsedseconds, "at": row.tstamp} for row in doomed])
    return len(doomed)
