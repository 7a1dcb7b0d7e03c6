"""job_ends: how a job's crawl ended when that was asked for and was no error

Revision ID: 0027_job_ends
Revises: 0026_api_token_labels
Create Date: 2026-12-08 00:00:00.000000

A controller reports an operator's stop or fail, and a budget of the whole crawl reached, as the final
CrawlStatus's crawl_end (message schema 1.5), and the scheduler keeps it here, one row per job. Before,
a controller named an operator's stop or fail among the job's harvest errors ("the crawl was stopped by
NAME (change V)"), and the web UI took those words out again wherever it showed them. This revision moves
the jobs that ended so into the new table once: each ended job with an applied stop or fail (the first,
which ended its crawl) gets its row, and the words leave its harvest errors. Readers then have one rule for
every job, old or new, and the CSV export, webhooks and SQL of archivists see the errors as they are.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0027_job_ends'
down_revision = '0026_api_token_labels'
branch_labels = None
depends_on = None

# DONE, FAILED, RESUBMITTED, FAILED_REJECTED: jobs whose final report was taken. A job still STARTED has its
# report on the way; the scheduler reads such a report's words as its crawl_end (scheduler/intake.py).
_ENDED = (3, 4, 5, 6)

_jobs = sa.table("jobs", sa.column("job_id", sa.BigInteger()), sa.column("status", sa.Integer()),
                 sa.column("harvest_errors", sa.String()), sa.column("harvest_error_details", sa.String()))
_changes = sa.table("job_changes", sa.column("job_id", sa.BigInteger()), sa.column("version", sa.Integer()),
                    sa.column("kind", sa.String()), sa.column("author", sa.String()),
                    sa.column("state", sa.String()), sa.column("created", harvestdef.db.types.UTCDateTime()),
                    sa.column("applied", harvestdef.db.types.UTCDateTime()))


def _words(kind: str, author: str, version: int) -> str:
    # the words controllers reported (harvestdef.livechanges.end_description), as they were at this revision
    if kind == "fail":
        return f"the crawl was ended as failed by {author} (change {version})"
    return f"the crawl was stopped by {author} (change {version})"


def _without(text: str | None, words: str) -> str | None:
    # the controller joined its errors with "; "; a text that was nothing but the words becomes NULL, as the
    # scheduler stores an empty text
    if not text:
        return text
    kept = "; ".join(part for part in text.split("; ") if part != words)
    return kept or None


def upgrade() -> None:
    ends = op.create_table(
        'job_ends',
        sa.Column('job_id', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('cause', sa.String(length=30), nullable=False),
        sa.Column('author', sa.String(length=100), server_default='', nullable=False),
        sa.Column('change_version', sa.Integer(), nullable=True),
        sa.Column('budget_limit', sa.BigInteger(), nullable=True),
        sa.Column('ended_at', harvestdef.db.types.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint('job_id'))
    bind = op.get_bind()
    # a handful of rows per job an operator ended, read in one pass; the jobs are updated one by one
    first: dict[int, sa.Row] = {}
    for row in bind.execute(
            sa.select(_changes.c.job_id, _changes.c.version, _changes.c.kind, _changes.c.author,
                      _changes.c.created, _changes.c.applied)
            .select_from(_changes.join(_jobs, _jobs.c.job_id == _changes.c.job_id))
            .where(_changes.c.kind.in_(("stop", "fail")), _changes.c.state == "applied",
                   _jobs.c.status.in_(_ENDED))
            .order_by(_changes.c.job_id, _changes.c.version)):
        first.setdefault(row.job_id, row)
    for job_id, change in first.items():
        bind.execute(sa.insert(ends).values(job_id=job_id, cause=change.kind, author=change.author,
                                            change_version=change.version,
                                            ended_at=change.applied or change.created))
        job = bind.execute(sa.select(_jobs.c.harvest_errors, _jobs.c.harvest_error_details)
                           .where(_jobs.c.job_id == job_id)).first()
        words = _words(change.kind, change.author, change.version)
        errors, details = _without(job.harvest_errors, words), _without(job.harvest_error_details, words)
        if (errors, details) != (job.harvest_errors, job.harvest_error_details):
            bind.execute(sa.update(_jobs).where(_jobs.c.job_id == job_id)
                         .values(harvest_errors=errors, harvest_error_details=details))


def downgrade() -> None:
    # the words go back where the older web UI looks for them, before the rest of the errors
    bind = op.get_bind()
    ends = sa.table("job_ends", sa.column("job_id", sa.BigInteger()), sa.column("cause", sa.String()),
                    sa.column("author", sa.String()), sa.column("change_version", sa.Integer()))
    for end in bind.execute(sa.select(ends).where(ends.c.cause.in_(("stop", "fail")))).all():
        job = bind.execute(sa.select(_jobs.c.harvest_errors, _jobs.c.harvest_error_details)
                           .where(_jobs.c.job_id == end.job_id)).first()
        if job is None:
            continue
        words = _words(end.cause, end.author, end.change_version)
        bind.execute(sa.update(_jobs).where(_jobs.c.job_id == end.job_id).values(
            harvest_errors="; ".join(filter(None, (words, job.harvest_errors)))[:300],
            harvest_error_details="; ".join(filter(None, (words, job.harvest_error_details)))[:10000]))
    op.drop_table('job_ends')
