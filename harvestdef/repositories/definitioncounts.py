"""The definitions' overview summaries: domains per TLD and the configurations and seed lists nothing uses.

Grouping 2,000,000 domain names by TLD, or testing every configuration for use, takes seconds per page.
So the overviews read summary tables (harvestdef/db/schema.py: domain_tld_counts, unused_configurations,
unused_seedlists), and whatever writes domains, configurations, seed lists, a domain's default or a
harvest's configurations brings them up to date in the same transaction:

- ``add_tld_counts(conn, names, +1 | -1)`` after creating domains and before deleting them, with a query of
  their names (one row, or a bulk import's staging table: the database groups them);
- ``recheck_unused(conn, domain_ids)`` after changing anything that decides whether a domain's
  configurations and seed lists are used: it tests that domain's few configurations and seed lists again;
- ``rebuild_definition_counts(conn)`` computes all of it from scratch (``harvestsuite db
  rebuild-summaries``, and the migration that added the tables), for rows written by other means.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, Select, Table, case, delete, exists, func, insert, or_, select
from sqlalchemy.dialects import postgresql, sqlite

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql

IP_ADDRESS_TLD = "(IP address)"


def _last_label(conn: Connection, name: Any) -> Any:
    if is_postgresql(conn.engine):
        return func.split_part(name, ".", -1)  # PostgreSQL 14 and later; a regex took 8 times longer
    # SQLite has no split from the end: cut what rtrim leaves up to the last dot
    return func.substr(name, func.length(func.rtrim(name, func.replace(name, ".", ""))) + 1)


def tld_totals(conn: Connection, names: Select[Any]) -> Select[Any]:
    """(tld, domains) for the names the one-column query ``names`` yields, grouped by the database.

    Domains named by an IP address count under IP_ADDRESS_TLD, not under their last octet. Only the
    grouped labels are tested for IP addresses (an IPv4's is its last octet, an IPv6 has no dot), not
    every name: real TLDs are never all digits.
    """
    named = names.subquery()
    name = next(iter(named.c))
    label = _last_label(conn, name)
    labels = select(label.label("label"), func.count().label("domains")).group_by(label).subquery()
    ip = or_(labels.c.label.regexp_match("^[0-9]+$"), labels.c.label.contains(":"))
    tld = case((ip, IP_ADDRESS_TLD), else_=labels.c.label).label("tld")
    return select(tld, func.sum(labels.c.domains).label("domains")).group_by(tld)


def add_tld_counts(conn: Connection, names: Select[Any], sign: int) -> None:
    """Count the domains ``names`` selects in (``sign`` +1: just created) or out (-1: about to be deleted)."""
    if sign not in (1, -1):
        raise ValueError(f"sign must be 1 or -1, not {sign!r}")
    totals = [(row.tld, int(row.domains) * sign) for row in conn.execute(tld_totals(conn, names))]
    if not totals:
        return
    dialect = postgresql if is_postgresql(conn.engine) else sqlite
    table = s.domain_tld_counts
    for tld, delta in totals:
        upsert = dialect.insert(table).values(tld=tld, domains=delta)
        conn.execute(upsert.on_conflict_do_update(index_elements=[table.c.tld],
                                                  set_={"domains": table.c.domains + upsert.excluded.domains}))
    conn.execute(delete(table).where(table.c.tld.in_([tld for tld, _ in totals]), table.c.domains <= 0))


def configuration_is_unused() -> Any:
    """No harvest definition names the configuration, and it is not the default, which snapshot harvests
    use: deleting it or cleaning it up changes no harvest. Over configurations joined to their domain."""
    c, d = s.configurations, s.domains
    return (~exists().where(s.harvest_configs.c.config_id == c.c.config_id)) & or_(
        d.c.defaultconfig.is_(None), d.c.defaultconfig != c.c.config_id)


def seedlist_is_unused() -> Any:
    """No configuration uses the seed list."""
    return ~exists().where(s.config_seedlists.c.seedlist_id == s.seedlists.c.seedlist_id)


def _unused_configurations() -> Select[Any]:
    c, d = s.configurations, s.domains
    return (select(c.c.config_id, c.c.domain_id).join(d, d.c.domain_id == c.c.domain_id)
            .where(configuration_is_unused()))


def _unused_seedlists() -> Select[Any]:
    return select(s.seedlists.c.seedlist_id, s.seedlists.c.domain_id).where(seedlist_is_unused())


def _fill(conn: Connection, table: Table, unused: Select[Any]) -> None:
    """Insert the (key, domain_id) rows ``unused`` selects into its summary table."""
    conn.execute(insert(table).from_select([next(iter(table.primary_key)).name, "domain_id"], unused))


def recheck_unused(conn: Connection, domain_ids: Iterable[int] | Select[Any]) -> None:
    """Test the configurations and seed lists of these domains for use again (ids, or a query of them)."""
    ids = domain_ids if isinstance(domain_ids, Select) else sorted(set(domain_ids))
    if not isinstance(ids, Select) and not ids:
        return
    for table, unused, owner in ((s.unused_configurations, _unused_configurations(), s.configurations),
                                 (s.unused_seedlists, _unused_seedlists(), s.seedlists)):
        conn.execute(delete(table).where(table.c.domain_id.in_(ids)))
        _fill(conn, table, unused.where(owner.c.domain_id.in_(ids)))


def rebuild_definition_counts(conn: Connection) -> tuple[int, int, int]:
    """Compute all three summaries again; returns (TLDs, unused configurations, unused seed lists)."""
    conn.execute(delete(s.domain_tld_counts))
    conn.execute(insert(s.domain_tld_counts).from_select(["tld", "domains"],
                                                         tld_totals(conn, select(s.domains.c.name))))
    counts = [conn.scalar(select(func.count()).select_from(s.domain_tld_counts)) or 0]
    for table, unused in ((s.unused_configurations, _unused_configurations()),
                          (s.unused_seedlists, _unused_seedlists())):
        conn.execute(delete(table))
        _fill(conn, table, unused)
        counts.append(conn.scalar(select(func.count()).select_from(table)) or 0)
    return counts[0], counts[1], counts[2]
