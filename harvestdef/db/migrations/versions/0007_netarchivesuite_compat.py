"""NetarchiveSuite's column types, sequence names, nullability and indexes; foreign keys on its tables

Revision ID: 0007_netarchivesuite_compat
Revises: 0006_summary_index
Create Date: 2026-11-23 06:30:00.000000

Brings both kinds of database to schema.py: a HarvestSuite database (narrower types, SQLAlchemy's
sequence names, NOT NULL that NetarchiveSuite lacks) and a NetarchiveSuite database taken over in place
(no foreign keys, none of HarvestSuite's unique keys). Every step looks at the database first, so one
revision serves both. No row is changed: types only widen, and a foreign key that existing rows break
is added NOT VALID (PostgreSQL checks new rows only) and reported by `db upgrade`.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import context, op

import harvestdef.db.types
from harvestdef.db.integrity import NETARCHIVESUITE_FOREIGN_KEYS, find_orphans

revision = '0007_netarchivesuite_compat'
down_revision = '0006_summary_index'
branch_labels = None
depends_on = None

log = logging.getLogger(__name__)

# NetarchiveSuite's sequence of each table (schema.NETARCHIVESUITE_SEQUENCES as of this revision).
SEQUENCES = {
    "ordertemplates": ("template_id", "ordertemplates_id_seq"),
    "domains": ("domain_id", "domains_id_seq"),
    "configurations": ("config_id", "configurations_id_seq"),
    "seedlists": ("seedlist_id", "seedlists_id_seq"),
    "passwords": ("password_id", "passwords_id_seq"),
    "ownerinfo": ("ownerinfo_id", "ownerinfo_id_seq"),
    "historyinfo": ("historyinfo_id", "historyinfo_id_seq"),
    "harvestchannel": ("id", "harvestchannel_id_seq"),
    "schedules": ("schedule_id", "schedules_id_seq"),
    "global_crawler_trap_lists": ("global_crawler_trap_list_id", "global_crawler_trap_list_id_seq"),
    "global_crawler_trap_expressions": ("id", "global_crawler_trap_expressions_id_seq"),
    "extendedfieldtype": ("extendedfieldtype_id", "extendedfieldtype_id_seq"),
    "extendedfield": ("extendedfield_id", "extendedfield_id_seq"),
    "extendedfieldvalue": ("extendedfieldvalue_id", "extendedfieldvalue_id_seq"),
    "eav_attribute": ("id", "eav_attribute_seq"),
    # ours: NetarchiveSuite inserts its EAV types with explicit ids and has no sequence for them
    "eav_type_attribute": ("id", "eav_type_attribute_id_seq"),
}

_MONITOR_VALUES = ("hosturl", "progress", "queuedfilescount", "totalqueuescount", "activequeuescount",
                   "retiredqueuescount", "exhaustedqueuescount", "alertscount", "downloadedfilescount",
                   "currentprocessedkbpersec", "processedkbpersec", "currentprocesseddocspersec",
                   "processeddocspersec", "activetoecount", "status", "totalbyteswritten")
# Columns NetarchiveSuite's DDL (or HarvestSuite's earlier revisions) declare NOT NULL where schema.py
# does not: HarvestSuite writes NULL for what a controller did not report.
NULLABLE = (
    [("extendedfield", c) for c in ("format", "defaultvalue", "options")]
    + [("global_crawler_trap_expressions", "trap_expression"), ("domains", "defaultconfig"),
       ("jobs", "forcemaxrunningtime")]
    + [("runningjobshistory", c) for c in _MONITOR_VALUES]
    + [("runningjobsmonitor", c) for c in (*_MONITOR_VALUES, "elapsedseconds", "tstamp")]
)
NUMERIC = ([(t, c) for t in ("runningjobshistory", "runningjobsmonitor")
            for c in ("progress", "currentprocesseddocspersec", "processeddocspersec")]
           + [("frontierreportmonitor", "lastcost"), ("frontierreportmonitor", "averagecost")])
BIGINT = (("config_passwords", "password_id"), ("config_seedlists", "seedlist_id"),
          ("eav_type_attribute", "id"), ("eav_attribute", "id"))
VARCHAR = (("extendedfield", "options", 1000), ("global_crawler_trap_lists", "description", 30000))
# name: (table, columns, unique)
INDEXES = {
    "domainnameid": ("domains", ("name",), False),
    "passwordname": ("passwords", ("name",), False),
    "passworddomain": ("passwords", ("domain_id",), False),
    "ownerinfodomain": ("ownerinfo", ("domain_id",), False),
    "gctlistsid": ("global_crawler_trap_lists", ("global_crawler_trap_list_id",), False),
    "gctexprid": ("global_crawler_trap_expressions", ("id",), False),
    "gctexprlistid": ("global_crawler_trap_expressions", ("crawler_trap_list_id",), False),
    "harvestchannelnameid": ("harvestchannel", ("name",), False),
    "runningjobshistorycrawljobid": ("runningjobshistory", ("jobid",), False),
    "runningjobshistorycrawltime": ("runningjobshistory", ("elapsedseconds",), False),
    "eav_type_attribute_idx": ("eav_type_attribute", ("tree_id", "id"), True),
}
# ours: (table, constraint, columns); added only where no two rows already share the columns
UNIQUE_KEYS = (("configurations", "configurations_domain_name_key", ("domain_id", "name")),
               ("seedlists", "seedlists_domain_name_key", ("domain_id", "name")),
               ("passwords", "passwords_domain_name_key", ("domain_id", "name")))
FRONTIER_KEY = "pkfrontierreportlines"  # NetarchiveSuite's name for (jobid, filterid, domainname)


def _report(line: str) -> None:
    """Pass a finding to `harvestsuite db upgrade`, which prints it, and to the log."""
    log.warning("%s", line)
    context.config.attributes.setdefault("report", []).append(line)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _upgrade_postgresql(op.get_bind())
    else:
        _upgrade_sqlite()


# ---------------------------------------------------------------- PostgreSQL

def _columns(bind: sa.Connection, table: str) -> dict[str, sa.Row]:
    rows = bind.execute(sa.text(
        "SELECT column_name, data_type, character_maximum_length, is_nullable FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = :table"), {"table": table})
    return {row.column_name: row for row in rows}


def _index_columns(bind: sa.Connection, name: str) -> tuple[str, ...] | None:
    rows = bind.execute(sa.text(
        "SELECT a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true "
        "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
        "WHERE c.relname = :name AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
        "ORDER BY k.n"), {"name": name}).scalars().all()
    return tuple(rows) or None


def _has_constraint(bind: sa.Connection, table: str, name: str) -> bool:
    return bind.scalar(sa.text(
        "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = current_schema() "
        "AND table_name = :table AND constraint_name = :name"), {"table": table, "name": name}) > 0


def _upgrade_postgresql(bind: sa.Connection) -> None:
    _sequences_postgresql(bind)
    for table, column in ("extendedfield", "mandatory"), ("extendedfield", "historize"):
        if _columns(bind, table)[column].data_type == "boolean":
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} DROP DEFAULT")
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE integer "
                       f"USING CASE WHEN {column} THEN 1 ELSE 0 END")
    op.execute("ALTER TABLE extendedfield ALTER COLUMN historize SET DEFAULT 0")
    for table, column, length in VARCHAR:
        if (_columns(bind, table)[column].character_maximum_length or 0) < length:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE varchar({length})")
    for table, column in NUMERIC:
        if _columns(bind, table)[column].data_type != "numeric":
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE numeric")
    for table, column in BIGINT:
        if _columns(bind, table)[column].data_type == "integer":
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE bigint")
    if "totalbyteswritten" not in _columns(bind, "runningjobshistory"):
        op.add_column("runningjobshistory", sa.Column("totalbyteswritten", sa.BigInteger(),
                                                      server_default=sa.text("0"), nullable=True))
    op.execute("ALTER TABLE runningjobsmonitor ALTER COLUMN totalbyteswritten SET DEFAULT 0")
    for table, column in NULLABLE:
        if _columns(bind, table)[column].is_nullable == "NO":
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} DROP NOT NULL")
    if _index_columns(bind, "runningjobshistoryjobid") is not None:
        op.execute("ALTER INDEX runningjobshistoryjobid RENAME TO runningjobshistorycrawljobid")
    _indexes(lambda name: _index_columns(bind, name))
    if _has_constraint(bind, "frontierreportmonitor", "frontierreportmonitor_jobid_filterid_domainname_key"):
        op.execute("ALTER TABLE frontierreportmonitor RENAME CONSTRAINT "
                   f"frontierreportmonitor_jobid_filterid_domainname_key TO {FRONTIER_KEY}")
    _foreign_keys_postgresql(bind)
    _unique_keys_postgresql(bind)


def _sequences_postgresql(bind: sa.Connection) -> None:
    """NetarchiveSuite's names; a HarvestSuite database's SERIAL sequences are renamed, keeping their values."""
    for table, (column, sequence) in SEQUENCES.items():
        if bind.scalar(sa.text("SELECT to_regclass(:name)"), {"name": sequence}) is None:
            serial = bind.scalar(sa.text("SELECT pg_get_serial_sequence(:table, :column)"),
                                 {"table": table, "column": column})
            if serial is not None:
                op.execute(f"ALTER SEQUENCE {serial} RENAME TO {sequence}")
            else:
                op.execute(f"CREATE SEQUENCE {sequence}")
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET DEFAULT nextval('{sequence}'::regclass)")
        op.execute(f"ALTER SEQUENCE {sequence} OWNED BY {table}.{column}")


def _foreign_keys_postgresql(bind: sa.Connection) -> None:
    inspector = sa.inspect(bind)
    for fk in NETARCHIVESUITE_FOREIGN_KEYS:
        present = [f for f in inspector.get_foreign_keys(fk.table) if f["constrained_columns"] == [fk.column]]
        deferred = " DEFERRABLE INITIALLY DEFERRED" if fk.column == "defaultconfig" else ""
        if present:
            if deferred:
                op.execute(f"ALTER TABLE {fk.table} ALTER CONSTRAINT {present[0]['name']}{deferred}")
            continue
        orphans = find_orphans(bind, fk)
        not_valid = ""
        if orphans is not None:
            not_valid = " NOT VALID"
            _report(f"foreign key {fk.name} added NOT VALID (new rows are checked, these are kept): "
                    f"{orphans.describe()}")
        op.execute(f"ALTER TABLE {fk.table} ADD CONSTRAINT {fk.name} FOREIGN KEY ({fk.column}) "
                   f"REFERENCES {fk.referred} ({fk.referred_column}){deferred}{not_valid}")


def _unique_keys_postgresql(bind: sa.Connection) -> None:
    for table, name, columns in UNIQUE_KEYS:
        if _has_constraint(bind, table, name):
            continue
        listed = ", ".join(columns)
        duplicates = bind.scalar(sa.text(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} GROUP BY {listed} HAVING count(*) > 1) d"))
        if duplicates:
            _report(f"unique key {name} not added: {duplicates} value(s) of ({listed}) occur in more than "
                    f"one row of {table}; rename them and add it with "
                    f"ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE ({listed})")
            continue
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE ({listed})")
    if not bind.scalar(sa.text(
            "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = current_schema() "
            "AND table_name = 'schemaversions' AND constraint_type = 'PRIMARY KEY'")):
        if not bind.scalar(sa.text("SELECT count(*) FROM (SELECT 1 FROM schemaversions GROUP BY tablename "
                                   "HAVING count(*) > 1) d")):
            op.execute("ALTER TABLE schemaversions ADD PRIMARY KEY (tablename)")
        else:
            _report("schemaversions has a table name twice; its primary key on tablename was not added")


def _indexes(columns_of) -> None:  # noqa: ANN001 - a lookup of an index's columns by name, or None
    for name, (table, columns, unique) in INDEXES.items():
        existing = columns_of(name)
        if existing == columns:
            continue
        if existing is not None:
            op.drop_index(name, table_name=table)
        op.create_index(name, table, list(columns), unique=unique)


# ---------------------------------------------------------------- SQLite (HarvestSuite databases only)

def _upgrade_sqlite() -> None:
    # Recreating a table that others refer to (batch mode) drops it for a moment, which the foreign keys
    # of the referring rows forbid. Python's sqlite3 opens no transaction before DDL, so foreign_keys can
    # be switched off here; inside a transaction (after DML) that is a no-op and deferring them works.
    op.execute("PRAGMA foreign_keys = OFF")
    op.execute("PRAGMA defer_foreign_keys = ON")
    try:
        _recreate_sqlite_tables()
    finally:
        op.execute("PRAGMA foreign_keys = ON")
    violations = op.get_bind().execute(sa.text("PRAGMA foreign_key_check")).all()
    for table, rowid, referred, _ in violations[:20]:
        _report(f"orphan row: {table} rowid {rowid} refers to a missing row of {referred}")


def _recreate_sqlite_tables() -> None:
    numeric = sa.Numeric(asdecimal=False)
    with op.batch_alter_table("extendedfield") as batch:
        batch.alter_column("format", existing_type=sa.String(50), nullable=True)
        batch.alter_column("defaultvalue", existing_type=sa.String(50), nullable=True)
        batch.alter_column("options", existing_type=sa.String(50), type_=sa.String(1000), nullable=True)
        batch.alter_column("mandatory", existing_type=sa.Boolean(), type_=harvestdef.db.types.IntBoolean(),
                           existing_nullable=False)
        batch.alter_column("historize", existing_type=sa.Boolean(), type_=harvestdef.db.types.IntBoolean(),
                           server_default=sa.text("0"), existing_nullable=True)
    with op.batch_alter_table("domains") as batch:
        batch.drop_constraint("domains_defaultconfig_fkey", type_="foreignkey")
        batch.create_foreign_key("domains_defaultconfig_fkey", "configurations", ["defaultconfig"], ["config_id"],
                                 deferrable=True, initially="DEFERRED")
    with op.batch_alter_table("global_crawler_trap_expressions") as batch:
        batch.alter_column("trap_expression", existing_type=sa.String(1000), nullable=True)
    for table in ("runningjobshistory", "runningjobsmonitor"):
        with op.batch_alter_table(table) as batch:
            for column in ("progress", "currentprocesseddocspersec", "processeddocspersec"):
                batch.alter_column(column, type_=numeric, existing_nullable=True)
            if table == "runningjobshistory":
                batch.add_column(sa.Column("totalbyteswritten", sa.BigInteger(), server_default=sa.text("0"),
                                           nullable=True))
            else:
                batch.alter_column("totalbyteswritten", existing_type=sa.BigInteger(),
                                   server_default=sa.text("0"), existing_nullable=True)
    with op.batch_alter_table("frontierreportmonitor") as batch:
        batch.alter_column("lastcost", type_=numeric, existing_nullable=False)
        batch.alter_column("averagecost", type_=numeric, existing_nullable=False)
        batch.drop_constraint("frontierreportmonitor_jobid_filterid_domainname_key", type_="unique")
        batch.create_unique_constraint(FRONTIER_KEY, ["jobid", "filterid", "domainname"])
    inspector = sa.inspect(op.get_bind())
    if any(i["name"] == "runningjobshistoryjobid" for i in inspector.get_indexes("runningjobshistory")):
        op.drop_index("runningjobshistoryjobid", table_name="runningjobshistory")

    def columns_of(name: str) -> tuple[str, ...] | None:
        table = INDEXES[name][0]
        found = [i for i in sa.inspect(op.get_bind()).get_indexes(table) if i["name"] == name]
        return tuple(found[0]["column_names"]) if found else None

    _indexes(columns_of)


def downgrade() -> None:
    raise NotImplementedError("0007 widens types and adds NetarchiveSuite's names; it is not undone")
