"""Creating and upgrading the harvest database (``harvestsuite db init`` / ``db upgrade``).

A new database gets the whole schema, is stamped at the newest Alembic revision and receives the
default rows. An existing one is upgraded with Alembic and gets any default rows it lacks, so ``init``
may run any number of times. A database loaded from sql/createfullhddb.sql (no alembic_version table)
is recognised by its tables and stamped at the baseline before upgrading.

A NetarchiveSuite harvest database (its schemaversions rows, none of HarvestSuite's tables) is taken over
by ``db upgrade``: the whole Alembic chain runs on it in one transaction, the baseline adding only what
HarvestSuite has beyond NetarchiveSuite's tables. ``db init`` refuses it and says so, because inserting
default rows first would put HarvestSuite's channels and schedules beside the site's own.

After every upgrade the sequences are moved past the ids in their tables (rows that came by a dump or
by NetarchiveSuite's max + 1 ids), and ``db upgrade`` reports rows that break a foreign key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, Inspector, event, inspect, text
from sqlalchemy.exc import SQLAlchemyError

from harvestdef.db.defaults import insert_defaults
from harvestdef.db.integrity import advance_sequences, orphan_report
from harvestdef.db.schema import metadata
from harvestdef.errors import DatabaseError

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
BASELINE_REVISION = "0001_baseline"
# A table (or "table.column") each revision creates, newest first: the newest present tells the revision of
# tables loaded from a sql/createfullhddb.sql without alembic_version (the DDL of that revision).
MARKER_TABLES = (("0031_finding_other_seeds", "harvest_findings.other_seeds_failed"),
                 ("0030_reason_phrases", "harvest_state.reason_phrase"),
                 ("0029_scheduler_hearing", "scheduler_hearing"),
                 ("0028_job_dedup_sources", "job_dedup_sources"),
                 ("0027_job_ends", "job_ends"),
                 ("0026_api_token_labels", "api_tokens.label"),
                 ("0025_job_controller_index", "jobs#jobcontroller"),
                 ("0023_harvest_hub", "harvest_run_requests"),
                 ("0022_webhooks", "webhook_deliveries"),
                 ("0021_seed_thumbnails", "job_thumbnails"),
                 ("0020_job_qa_summaries", "job_qa_summaries"),
                 ("0019_crawl_tally", "running_domain_counts"),
                 ("0018_min_space_left", "harvesters.min_space_left"),
                 ("0017_job_changes", "job_changes"),
                 ("0016_crawl_log_tail", "runningjobsmonitor.crawllogtail"),
                 ("0015_heartbeat_interval", "harvesters.heartbeat_interval"),
                 ("0014_dedup_coverage", "harvest_run_dedup_index.refusal"),
                 ("0013_harvest_findings", "harvest_findings"),
                 ("0012_job_events", "job_events"),
                 ("0011_user_sessions", "login_failures"),
                 ("0010_definition_summaries", "domain_tld_counts"),
                 ("0009_domain_trigram", "domains#domainnametrgm"),
                 ("0008_job_dispatch_index", "jobs#jobchannelstatus"),
                 ("0007_netarchivesuite_compat", "runningjobshistory.totalbyteswritten"),
                 ("0006_summary_index", "config_history_summary#config_history_summary_harvest_bytes"),
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


def is_netarchivesuite_database(conn: Connection) -> bool:
    """NetarchiveSuite's tables, recognised by its schemaversions rows, without any of HarvestSuite's."""
    inspector = inspect(conn)
    if not inspector.has_table("schemaversions") or inspector.has_table("alembic_version"):
        return False
    if inspector.has_table("audit_log"):
        return False
    return bool(conn.scalar(text("SELECT count(*) FROM schemaversions")))


@dataclass
class UpgradeResult:
    """What ``db upgrade`` did, what it found, and in a dry run the statements it would run."""

    done: str
    findings: list[str] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.done


def init_database(engine: Engine) -> str:
    """Create or upgrade the schema and insert missing default rows; returns what was done."""
    try:
        with engine.begin() as conn:
            if not has_schema(conn):
                metadata.create_all(conn)
                command.stamp(alembic_config(conn), "head")
                done = "created"
            elif is_netarchivesuite_database(conn):
                raise DatabaseError(
                    f"{engine.url!r} is a NetarchiveSuite harvest database; take it over with "
                    "`harvestsuite db upgrade` (it keeps its channels and schedules), then run `db init`")
            else:
                done = _upgrade(conn).done
            insert_defaults(conn)
            advance_sequences(conn)
    except SQLAlchemyError as exc:
        raise DatabaseError(f"initialising the harvest database {engine.url!r} failed: {exc}") from exc
    log.info("harvest database %s: %s", engine.url, done)
    return done


def upgrade_database(engine: Engine, dry_run: bool = False) -> UpgradeResult:
    """Apply pending migrations to an existing database, HarvestSuite's or NetarchiveSuite's, in one transaction.

    With ``dry_run`` every statement is run, recorded and rolled back: the statements of a migration that
    looks at the database first (0007) depend on what is there, so they are shown as they would run on it.
    """
    if dry_run and engine.dialect.name != "postgresql":
        # Python's sqlite3 commits DDL as it runs, so there would be nothing left to roll back
        raise DatabaseError("`db upgrade --sql` needs PostgreSQL, whose DDL is transactional; "
                            "on SQLite, upgrade a copy of the file instead")
    statements: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement.strip())

    try:
        with engine.connect() as conn:
            transaction = conn.begin()
            try:
                if not has_schema(conn):
                    raise DatabaseError(
                        f"{engine.url!r} has no harvest database; run `harvestsuite db init` first")
                if dry_run:
                    event.listen(conn, "before_cursor_execute", record)
                result = _upgrade(conn)
                result.findings.extend(orphan_report(conn))
            except BaseException:
                transaction.rollback()
                raise
            if dry_run:
                event.remove(conn, "before_cursor_execute", record)
                transaction.rollback()
                result.statements = statements
            else:
                transaction.commit()
            return result
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


def _upgrade(conn: Connection) -> UpgradeResult:
    before = current_revision(conn)
    config = alembic_config(conn)
    if before is None and is_netarchivesuite_database(conn):
        # every revision from the baseline on; the baseline sees NetarchiveSuite's tables and adds ours
        command.upgrade(config, "head")
        findings = [*config.attributes.get("report", []), *advance_sequences(conn)]
        return UpgradeResult(f"took over a NetarchiveSuite database -> {current_revision(conn)}", findings)
    if before is None:
        # Tables without a revision: loaded from sql/createfullhddb.sql (the newest schema), or a
        # NetarchiveSuite database at the baseline. The newest revision's tables tell which.
        inspector = inspect(conn)
        before = next((revision for revision, marker in MARKER_TABLES if _has_marker(inspector, marker)),
                      BASELINE_REVISION)
        command.stamp(config, before)
    command.upgrade(config, "head")
    after = current_revision(conn)
    findings = [*config.attributes.get("report", []), *advance_sequences(conn)]
    return UpgradeResult("up to date" if after == before else f"upgraded {before} -> {after}", findings)
