"""trigram indexes on domains.name, comments and crawlertraps, for searching text anywhere in them (PostgreSQL)

Revision ID: 0009_domain_trigram
Revises: 0008_job_dispatch_index
Create Date: 2026-11-23 00:00:00.000000

A domain search for ``*abc*`` in the names, or for text in the comments or crawler traps, is a LIKE or
ILIKE '%abc%' that no B-tree answers, so it read all of the domains table. A pg_trgm GIN index answers
it from the rows that hold the pattern's trigrams. SQLite has no such index: nothing to do there.

pg_trgm exists once per database, in the schema it was created in (often an "extensions" schema that
is not on the search_path), so the operator class is named with that schema. The statement is the one
schema.py runs after creating the domains table, written out here so this revision stays as it is
when the schema changes.
"""

from __future__ import annotations

from alembic import op

revision = '0009_domain_trigram'
down_revision = '0008_job_dispatch_index'
branch_labels = None
depends_on = None

INDEXES = {"domainnametrgm": "name", "domaincommentstrgm": "comments", "domaincrawlertrapstrgm": "crawlertraps"}


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    creates = "\n".join(f"    EXECUTE 'CREATE INDEX IF NOT EXISTS {index} ON domains USING gin ({column} ' "
                        f"|| opclass || ')';" for index, column in INDEXES.items())
    op.execute(
        "DO $trgm$\n"
        "DECLARE\n"
        "    opclass text;\n"
        "BEGIN\n"
        "    CREATE EXTENSION IF NOT EXISTS pg_trgm;\n"
        "    SELECT quote_ident(n.nspname) || '.gin_trgm_ops' INTO opclass\n"
        "        FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';\n"
        f"{creates}\n"
        "END\n"
        "$trgm$")


def downgrade() -> None:
    # the extension stays: other tables or databases' users may rely on it
    if op.get_context().dialect.name != "postgresql":
        return
    for index in INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {index}")
