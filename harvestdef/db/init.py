"""Creating and upgrading the harvest database (``harvestsuite db init`` / ``db upgrade``).

A new database gets the whole schema, is stamped at the newest Alembic revision and receives the
default rows. An existing one is upgraded with Alembic and gets any default rows it lacks, so ``init``
may run any number of times. A database loaded from sql/createfullhddb.sql (no alembic_version table)
is recognised by its tables and stamped at the baseline before upgrading.
"""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, Inspector, inspect
from sqlalchemy.exc import SQLAlchemyError

from harvestdef.db.defaults import insert_defaults
from harvestdef.db.schema import metadata
from harvestdef.errors import DatabaseError

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
BASELINE_REVISION = "0001_baseline"
# A table (or "table.column") each revision creates, newest first: the newest present tells the revision of
# tables loaded from a sql/createfullhddb.sql without alembic_version (the DDL of that revision).
MARKER_TABLES = (("0006_summary_index", "config_history_summary#config_history_summary_harvest_bytes"),
                 ("0005_domain_active", "domains.isactive"), ("0004_api_tokens", "api_tokens"),
                 ("0003_dedup_index", "harvest_run_dedup_index"), ("0002_scheduler", "scheduler_lock"))


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migrations directory has no revision"
    return head


def current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def has_schema(conn: Connection) -> bool:
    return inspect(conn).has_table("domains")


def init_database(engine: Engine) -> str:
    """Create or upgrade the schema and insert missing default rows; returns what was done."""
    try:
        with engine.begin() as conn:
            if not has_schema(conn):
                metadata.create_all(conn)
                command.stamp(alembic_config(conn), "head")
                done = "created"
            else:
                done = _upgrade(conn)
            insert_defaults(conn)
    except SQLAlchemyError as exc:
        raise DatabaseError(f"initialising the harvest database {engine.url!r} failed: {exc}") from exc
    log.info("harvest database %s: %s", engine.url, done)
    return done


def upgrade_database(engine: Engine) -> str:
    """Apply pending migrations to an existing database."""
    try:
        with engine.begin() as conn:
            if not has_schema(conn):
                raise DatabaseError(
                    f"{engine.url!r} has no harvest database; run `harvestsuite db init` first")
            return _upgrade(conn)
    except SQLAlchemyError as exc:
        raise DatabaseError(f"upgrading the harvest database {engine.url!r} failed: {exc}") from exc


def _has_marker(inspector: Inspector, marker: str) -> bool:
    """Whether the table ``marker`` exists, or for ``table.column`` that column, for ``table#index`` that index."""
    table, _, index = marker.partition("#")
    table, _, column = table.partition(".")
    if not inspector.has_table(table):
        return False
    if index:
        return any(i["name"] == index for i in inspector.get_indexes(table))
    return not column or any(c["name"] == column for c in inspector.get_columns(table))


def _upgrade(conn: Connection) -> str:
    before = current_revision(conn)
    config = alembic_config(conn)
    if before is None:
        # Tables without a revision: loaded from sql/createfullhddb.sql (the newest schema), or a
        # NetarchiveSuite database at the baseline. The newest revision's tables tell which.
        inspector = inspect(conn)
        before = next((revision for revision, marker in MARKER_TABLES if _has_marker(inspector, marker)),
                      BASELINE_REVISION)
        command.stamp(config, before)
    command.upgrade(config, "head")
    after = current_revision(conn)
    return "up to date" if after == before else f"upgraded {before} -> {after}"
