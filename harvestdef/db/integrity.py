"""What a harvest database holds that its constraints do not guarantee, and sequences behind their tables.

A NetarchiveSuite database has no foreign keys, and a data-only dump is loaded with triggers disabled,
so rows may point at rows that do not exist (a domain's ``defaultconfig = -1`` left by a creation that
failed half-way, a job of a deleted harvest definition). They are reported by table and id, never
deleted or changed: the site decides. NetarchiveSuite also assigns some ids as max + 1 in code, so its
sequences can lag behind their tables; :func:`advance_sequences` moves every sequence past the highest
id before HarvestSuite draws from it.

This module reads and moves sequences only; it changes no row.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, text

# How many ids of orphan rows a report names per foreign key; the count is always exact.
SHOWN_IDS = 20


@dataclass(frozen=True)
class ForeignKey:
    """``table.column`` refers to ``referred.referred_column``; ``key`` names the referring row."""

    table: str
    column: str
    referred: str
    referred_column: str
    key: str

    @property
    def name(self) -> str:
        """PostgreSQL's default constraint name, the one schema.py's unnamed foreign keys get."""
        return f"{self.table}_{self.column}_fkey"


# The foreign keys among NetarchiveSuite's tables (schema.py; NetarchiveSuite declares none).
NETARCHIVESUITE_FOREIGN_KEYS: tuple[ForeignKey, ...] = (
    ForeignKey("domains", "alias", "domains", "domain_id", "domain_id"),
    ForeignKey("domains", "defaultconfig", "configurations", "config_id", "domain_id"),
    ForeignKey("configurations", "domain_id", "domains", "domain_id", "config_id"),
    ForeignKey("configurations", "template_id", "ordertemplates", "template_id", "config_id"),
    ForeignKey("extendedfield", "extendedfieldtype_id", "extendedfieldtype", "extendedfieldtype_id",
               "extendedfield_id"),
    ForeignKey("global_crawler_trap_expressions", "crawler_trap_list_id", "global_crawler_trap_lists",
               "global_crawler_trap_list_id", "id"),
    ForeignKey("harvestdefinitions", "channel_id", "harvestchannel", "id", "harvest_id"),
    ForeignKey("ownerinfo", "domain_id", "domains", "domain_id", "ownerinfo_id"),
    ForeignKey("passwords", "domain_id", "domains", "domain_id", "password_id"),
    ForeignKey("seedlists", "domain_id", "domains", "domain_id", "seedlist_id"),
    ForeignKey("config_passwords", "password_id", "passwords", "password_id", "config_id"),
    ForeignKey("config_passwords", "config_id", "configurations", "config_id", "password_id"),
    ForeignKey("config_seedlists", "seedlist_id", "seedlists", "seedlist_id", "config_id"),
    ForeignKey("config_seedlists", "config_id", "configurations", "config_id", "seedlist_id"),
    ForeignKey("extendedfieldvalue", "extendedfield_id", "extendedfield", "extendedfield_id",
               "extendedfieldvalue_id"),
    ForeignKey("fullharvests", "harvest_id", "harvestdefinitions", "harvest_id", "harvest_id"),
    ForeignKey("fullharvests", "previoushd", "harvestdefinitions", "harvest_id", "harvest_id"),
    ForeignKey("harvest_configs", "config_id", "configurations", "config_id", "harvest_id"),
    ForeignKey("harvest_configs", "harvest_id", "harvestdefinitions", "harvest_id", "config_id"),
    ForeignKey("jobs", "harvest_id", "harvestdefinitions", "harvest_id", "job_id"),
    ForeignKey("partialharvests", "schedule_id", "schedules", "schedule_id", "harvest_id"),
    ForeignKey("partialharvests", "harvest_id", "harvestdefinitions", "harvest_id", "harvest_id"),
    ForeignKey("job_configs", "job_id", "jobs", "job_id", "config_id"),
)


@dataclass(frozen=True)
class Orphans:
    """Rows of ``foreign_key.table`` whose ``column`` names no row of the referred table."""

    foreign_key: ForeignKey
    count: int
    ids: tuple[int, ...]

    def describe(self) -> str:
        fk = self.foreign_key
        shown = ", ".join(str(i) for i in self.ids) + (", ..." if self.count > len(self.ids) else "")
        return (f"{self.count} row(s) of {fk.table} whose {fk.column} names no {fk.referred}.{fk.referred_column} "
                f"({fk.table}.{fk.key} {shown})")


def find_orphans(conn: Connection, fk: ForeignKey) -> Orphans | None:
    """The rows breaking ``fk``, or None; one anti-join, so it scales with the tables."""
    where = (f"FROM {fk.table} t WHERE t.{fk.column} IS NOT NULL AND NOT EXISTS "
             f"(SELECT 1 FROM {fk.referred} r WHERE r.{fk.referred_column} = t.{fk.column})")
    count = conn.execute(text(f"SELECT count(*) {where}")).scalar_one()
    if not count:
        return None
    ids = tuple(conn.scalars(text(f"SELECT t.{fk.key} {where} ORDER BY t.{fk.key} LIMIT {SHOWN_IDS}")))
    return Orphans(fk, count, ids)


def orphan_report(conn: Connection) -> list[str]:
    """One line per foreign key that rows break; empty when every row's references exist."""
    found = (find_orphans(conn, fk) for fk in NETARCHIVESUITE_FOREIGN_KEYS)
    return [f"orphan rows: {orphans.describe()}" for orphans in found if orphans is not None]


# Sequences that no column owns, with the column they number.
_UNOWNED_SEQUENCES = {"jobs_job_id_seq": ("jobs", "job_id")}


def advance_sequences(conn: Connection) -> list[str]:
    """Move each sequence of the current schema past the highest id of its column (PostgreSQL only).

    A sequence is only ever moved forward, so ids already handed out are never handed out again.
    Returns one line per sequence moved.
    """
    if conn.dialect.name != "postgresql":
        return []
    owned = conn.execute(text(
        "SELECT s.relname, t.relname, a.attname FROM pg_class s "
        "JOIN pg_depend d ON d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') "
        "JOIN pg_class t ON t.oid = d.refobjid "
        "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid "
        "WHERE s.relkind = 'S' AND s.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())"
    )).all()
    numbered = {sequence: (table, column) for sequence, table, column in owned}
    for sequence, (table, column) in _UNOWNED_SEQUENCES.items():
        if conn.scalar(text("SELECT to_regclass(:name)"), {"name": sequence}) is not None:
            numbered.setdefault(sequence, (table, column))
    moved = []
    for sequence, (table, column) in sorted(numbered.items()):
        highest = conn.scalar(text(f"SELECT max({column}) FROM {table}"))
        last_value, is_called = conn.execute(text(f"SELECT last_value, is_called FROM {sequence}")).one()
        next_value = last_value + 1 if is_called else last_value
        if highest is not None and highest >= next_value:
            conn.execute(text("SELECT setval(CAST(:sequence AS regclass), :value)"),
                         {"sequence": sequence, "value": highest})
            moved.append(f"sequence {sequence} moved past {table}.{column} {highest}")
    return moved
