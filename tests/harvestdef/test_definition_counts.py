"""The definitions' overview summaries (domains per TLD, unused configurations and seed lists) stay equal to
what a full scan computes, through every kind of write: domains created one by one and imported in bulk,
deleted; configurations and seed lists created, updated, made default and deleted; harvests naming and
dropping configurations; and ``rebuild_definition_counts`` repairs rows written behind their back.
Every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, Engine, select, text

from harvestdef.bulkimport import DomainImporter
from harvestdef.db import schema as s
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.definitioncounts import (
    IP_ADDRESS_TLD,
    configuration_is_unused,
    rebuild_definition_counts,
    seedlist_is_unused,
    tld_totals,
)
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.seedlists import SeedListRepository
from tests.harvestdef.factories import make_configuration, make_domain, make_selective_harvest
from tests.harvestdef.test_bulkimport import DEFAULTS, ensure_template, write_lines


def summaries(conn: Connection) -> tuple[list[tuple[str, int]], list[int], list[int]]:
    return (DomainRepository(conn).tld_counts(),
            [row.config_id for row in ConfigurationRepository(conn).unused(None, 1000)],
            [row.seedlist_id for row in SeedListRepository(conn).unused(None, 1000)])


def scanned(conn: Connection) -> tuple[list[tuple[str, int]], list[int], list[int]]:
    """The same three from the definitions themselves."""
    c, d = s.configurations, s.domains
    configurations = conn.scalars(select(c.c.config_id).join(d, d.c.domain_id == c.c.domain_id)
                                  .where(configuration_is_unused()).order_by(c.c.config_id)).all()
    seedlists = conn.scalars(select(s.seedlists.c.seedlist_id).where(seedlist_is_unused())
                             .order_by(s.seedlists.c.seedlist_id)).all()
    tlds = [(row.tld, int(row.domains))
            for row in conn.execute(tld_totals(conn, select(s.domains.c.name)).order_by("tld"))]
    return tlds, list(configurations), list(seedlists)


def assert_in_step(conn: Connection) -> tuple[list[tuple[str, int]], list[int], list[int]]:
    kept = summaries(conn)
    assert kept == scanned(conn)
    repository = ConfigurationRepository(conn)
    assert repository.count_unused() == len(kept[1])
    assert SeedListRepository(conn).count_unused() == len(kept[2])
    return kept


def test_domains_created_and_deleted_one_by_one_are_counted_per_tld(engine: Engine) -> None:
    with engine.begin() as conn:
        for name in ("kb.dk", "dr.dk", "bbc.co.uk", "192.168.0.1", "københavn.dk", "example.com"):
            make_domain(conn, name)
        assert assert_in_step(conn)[0] == [(IP_ADDRESS_TLD, 1), ("com", 1), ("dk", 3), ("uk", 1)]
        for name in ("example.com", "dr.dk"):
            domain = DomainRepository(conn).get(name)
            DomainRepository(conn).delete(name, domain.edition)
        assert assert_in_step(conn)[0] == [(IP_ADDRESS_TLD, 1), ("dk", 2), ("uk", 1)]


def test_bulk_import_counts_its_domains_and_a_rerun_counts_nothing_twice(engine: Engine, tmp_path: Path) -> None:
    ensure_template(engine)
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
    path = write_lines(tmp_path / "domains.txt", ["kb.dk", "dr.dk", "bbc.co.uk", "10.0.0.1", "kb.se"])
    for _ in range(2):
        DomainImporter(engine, DEFAULTS, batch_size=2).run(path)
        with engine.connect() as conn:
            assert assert_in_step(conn)[0] == [(IP_ADDRESS_TLD, 1), ("dk", 2), ("se", 1), ("uk", 1)]


def test_unused_follows_configurations_seed_lists_defaults_and_harvests(engine: Engine) -> None:
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        assert assert_in_step(conn)[1:] == ([], [])  # the default configuration uses the default seed list
        seedlist = SeedListRepository(conn).create("kb.dk", "spare", ["https://kb.dk/spare"], domain.edition)
        assert assert_in_step(conn)[2] == [seedlist.seedlist_id]
        config = make_configuration(conn, "kb.dk", "news")  # with its own seed list, used by it
        assert assert_in_step(conn)[1:] == ([config.config_id], [seedlist.seedlist_id])
        configurations = ConfigurationRepository(conn)
        edition = DomainRepository(conn).get("kb.dk").edition
        configurations.update("kb.dk", "news", edition, seedlists=["news", "spare"])
        assert assert_in_step(conn)[1:] == ([config.config_id], [])
        configurations.set_default("kb.dk", "news", DomainRepository(conn).get("kb.dk").edition)
        old_default = configurations.get("kb.dk", "defaultconfig").config_id
        assert assert_in_step(conn)[1] == [old_default]
        harvest = make_selective_harvest(conn, "weekly")
        harvest = HarvestRepository(conn).add_configurations("weekly", [("kb.dk", "defaultconfig")], harvest.edition)
        assert assert_in_step(conn)[1] == []
        HarvestRepository(conn).remove_configuration("weekly", "kb.dk", "defaultconfig", harvest.edition)
        assert assert_in_step(conn)[1] == [old_default]
        configurations.set_default("kb.dk", "defaultconfig", DomainRepository(conn).get("kb.dk").edition)
        configurations.delete("kb.dk", "news", DomainRepository(conn).get("kb.dk").edition)
        assert assert_in_step(conn)[1:] == ([], [*sorted(
            conn.scalars(select(s.seedlists.c.seedlist_id).where(s.seedlists.c.name.in_(["news", "spare"]))))])
        DomainRepository(conn).delete("kb.dk", DomainRepository(conn).get("kb.dk").edition)
        assert assert_in_step(conn) == ([], [], [])


def test_rebuild_repairs_rows_written_behind_the_summaries_back(engine: Engine) -> None:
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        SeedListRepository(conn).create("kb.dk", "spare", ["https://kb.dk/spare"], domain.edition)
        conn.execute(text("DELETE FROM domain_tld_counts"))
        conn.execute(text("DELETE FROM unused_seedlists"))
        conn.execute(text("INSERT INTO unused_configurations (config_id, domain_id) VALUES (999, 999)"))
        assert summaries(conn) != scanned(conn)
        assert rebuild_definition_counts(conn) == (1, 0, 1)
        assert assert_in_step(conn)[0] == [("dk", 1)]
