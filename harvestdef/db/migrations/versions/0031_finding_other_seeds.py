"""harvest_findings.other_seeds_failed: how many more of a domain's seeds failed than the one its reason names

Revision ID: 0031_finding_other_seeds
Revises: 0030_reason_phrases
Create Date: 2026-12-12 00:00:00.000000

A finding's reason is kept in English ("DNS lookup failed (-6) for http://dead.example/ (and 2 other seeds
failed)"), what the API answers; its parts are kept beside it (fetch_status, seed and now the count of the
other failed seeds), from which a page says it in its own language. Rows written before have the count
only in their words: it is read from them once here, for the rows whose words end in that clause.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = '0031_finding_other_seeds'
down_revision = '0030_reason_phrases'
branch_labels = None
depends_on = None

_OTHERS = re.compile(r" \(and (\d+) other seeds? failed\)$")
_BATCH = 1000


def upgrade() -> None:
    op.add_column("harvest_findings", sa.Column("other_seeds_failed", sa.Integer()))
    conn = op.get_bind()
    findings = sa.table("harvest_findings", sa.column("historyinfo_id", sa.BigInteger),
                        sa.column("reason", sa.String), sa.column("fetch_status", sa.Integer),
                        sa.column("other_seeds_failed", sa.Integer))
    # a finding that names a seed and no count had one failed seed; those with a count are read in batches
    conn.execute(findings.update().where(findings.c.fetch_status.is_not(None)).values(other_seeds_failed=0))
    after = -1
    while True:
        rows = conn.execute(
            sa.select(findings.c.historyinfo_id, findings.c.reason)
            .where(findings.c.fetch_status.is_not(None), findings.c.reason.like("% other seed% failed)"),
                   findings.c.historyinfo_id > after)
            .order_by(findings.c.historyinfo_id).limit(_BATCH)).all()
        if not rows:
            return
        counts = [{"id": row.historyinfo_id, "others": int(found[1])}
                  for row in rows if (found := _OTHERS.search(row.reason))]
        if counts:
            conn.execute(findings.update().where(findings.c.historyinfo_id == sa.bindparam("id"))
                         .values(other_seeds_failed=sa.bindparam("others")), counts)
        after = rows[-1].historyinfo_id


def downgrade() -> None:
    with op.batch_alter_table("harvest_findings") as batch:
        batch.drop_column("other_seeds_failed")
