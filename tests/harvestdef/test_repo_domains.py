"""Domains: creation with the default configuration and seed list, names (IDN, IP, invalid), search,
comments with optimistic locking, aliases and their expiry, crawler traps. Every test runs on SQLite
and on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Connection, event, select

from harvestdef.db import schema as s
from harvestdef.errors import ConflictError, DomainNameError, NotFoundError, StaleEditionError, ValidationError
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.definitioncounts import IP_ADDRESS_TLD
from harvestdef.repositories.domains import DomainDefaults, DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.seedlists import SeedListRepository
from harvestdef.traps import CrawlerTrapError
from tests.harvestdef.factories import (
    ensure_default_template,
    make_configuration,
    make_domain,
    make_selective_harvest,
)


def test_create_makes_default_configuration_and_seedlist_from_settings(engine, settings):
    defaults = DomainDefaults.from_settings(settings)
    with engine.begin() as conn:
        ensure_default_template(conn, defaults)
        domain = DomainRepository(conn, "curator1", defaults).create("KB.dk", comments="national library")
        config = ConfigurationRepository(conn).default_of("kb.dk")
        seedlist = SeedListRepository(conn).get_by_id(config.seedlist_ids[0])
    assert domain.name == "kb.dk" and domain.comments == "national library" and domain.edition == 1
    assert domain.defaultconfig_id == config.config_id and config.is_default
    assert config.name == settings.domain.defaultConfig
    assert config.template_name == settings.domain.defaultOrderxml
    assert (config.maxbytes, config.maxobjects, config.maxrate) == (
        settings.domain.defaultMaxbytes, settings.domain.defaultMaxobjects, settings.domain.defaultMaxrate)
    assert seedlist.name == settings.domain.defaultSeedlist
    assert seedlist.seeds == ("http://www.kb.dk", "https://www.kb.dk", "http://kb.dk", "https://kb.dk")


def test_idn_domain_is_stored_in_unicode_with_punycode_seeds(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "xn--kbenhavn-54a.dk")
        by_unicode = DomainRepository(conn).get("KØBENHAVN.dk")
        by_punycode = DomainRepository(conn).get("xn--kbenhavn-54a.dk")
        seeds = SeedListRepository(conn).get(domain.name, "defaultseeds").seeds
    assert domain.name == "københavn.dk"
    assert by_unicode == by_punycode == domain
    assert seeds == ("http://www.xn--kbenhavn-54a.dk", "https://www.xn--kbenhavn-54a.dk",
                     "http://xn--kbenhavn-54a.dk", "https://xn--kbenhavn-54a.dk")


def test_ip_domain_gets_two_seeds_without_www(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "127.0.0.1")
        seeds = SeedListRepository(conn).get(domain.name, "defaultseeds").seeds
    assert domain.name == "127.0.0.1"
    assert seeds == ("http://127.0.0.1", "https://127.0.0.1")


@pytest.mark.parametrize("name, reason", [
    ("www.kb.dk", "not a registered domain"),
    ("co.uk", "public suffix"),
    ("kb", "no top-level domain"),
    ("bad_name.dk", "not a valid host name"),
    ("-kb.dk", "invalid label|not a valid host name"),
    ("", "empty"),
])
def test_invalid_names_are_refused_with_the_reason(engine, name, reason):
    with engine.begin() as conn:
        ensure_default_template(conn)
        with pytest.raises(DomainNameError, match=reason):
            DomainRepository(conn).create(name)
        assert DomainRepository(conn).count() == 0


def test_duplicate_domain_is_a_conflict_naming_it(engine):
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
    with engine.begin() as conn, pytest.raises(ConflictError, match="kb.dk"):
        DomainRepository(conn).create("KB.DK")


def test_missing_default_template_is_not_found(engine):
    with engine.begin() as conn:
        repository = DomainRepository(conn, defaults=DomainDefaults(template_name="no_such_template"))
        with pytest.raises(NotFoundError, match="no_such_template"):
            repository.create("kb.dk")


def test_search_with_wildcards_is_paginated_and_ordered(engine):
    names = ["alpha.dk", "beta.dk", "gamma.dk", "alpha.se", "delta.org", "under_score.dk".replace("_", "-")]
    with engine.begin() as conn:
        for name in names:
            make_domain(conn, name)
        repository = DomainRepository(conn)

        def found(pattern: str, after: str | None = None, size: int = 100) -> list[str]:
            return [row.domain.name for row in repository.search_page(pattern, after, size)]

        dk = found("*.dk")
        first_page = found("*.dk", size=2)
        second_page = found("*.dk", first_page[-1], 2)
        alpha = found("alpha.*")
        exact = found("beta.dk")
        everything = found("*")
    assert dk == sorted(n for n in names if n.endswith(".dk"))
    assert first_page + second_page == dk[:4]
    assert alpha == ["alpha.dk", "alpha.se"]
    assert exact == ["beta.dk"]
    assert everything == sorted(names)


def test_search_treats_like_characters_literally_and_accepts_punycode(engine):
    with engine.begin() as conn:
        make_domain(conn, "abc.dk")
        make_domain(conn, "københavn.dk")
        repository = DomainRepository(conn)
        assert [row.domain.name for row in repository.search_page("a%", None, 10)] == []
        assert [row.domain.name for row in repository.search_page("a_c.dk", None, 10)] == []
        assert [row.domain.name for row in repository.search_page("xn--kbenhavn-54a.*", None, 10)] == [
            "københavn.dk"]


def _search_page_and_plan(conn: Connection, *args: object) -> tuple[list[str], str]:
    """search_page's names, and on PostgreSQL the plan of the very query it ran (else ""). Sequential
    scans are priced out for the transaction, so the plan shows which index the query can use rather than
    what the planner prefers for a table of a few rows."""
    statements: list[tuple[str, object]] = []

    def record(_conn: object, _cursor: object, statement: str, parameters: object, *_args: object) -> None:
        statements.append((statement, parameters))

    event.listen(conn, "before_cursor_execute", record)
    try:
        names = [row.domain.name for row in DomainRepository(conn).search_page(*args)]
    finally:
        event.remove(conn, "before_cursor_execute", record)
    if conn.dialect.name != "postgresql":
        return names, ""
    statement, parameters = statements[-1]
    conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
    plan = "\n".join(conn.exec_driver_sql("EXPLAIN " + statement, parameters).scalars())
    conn.exec_driver_sql("RESET enable_seqscan")
    return names, plan


def test_text_anywhere_searches_use_the_trigram_indexes_on_postgresql(engine):
    """``*abc*`` in names and text in comments or crawler traps: the same rows on both databases, found
    through the pg_trgm indexes on PostgreSQL rather than by reading the domains table."""
    with engine.begin() as conn:
        for name in ["kulturarv.dk", "arkiv-kultur.dk", "netarkivet.dk", "kb.dk", "sb.dk"]:
            make_domain(conn, name)
        repository = DomainRepository(conn)
        repository.edit("kb.dk", 1, comments="Det Kgl. Bibliotek, NATIONAL library",
                        crawlertraps=".*/kalender/.*")
        repository.edit("sb.dk", 1, comments="Statsbiblioteket", crawlertraps=".*/Kalender/.*\n.*/print/.*")
        # (search_page's arguments, the names found, the index its plan reads). A later page (``after``)
        # also has the name index's range to choose from, which wins or loses by the table's size: no plan
        # is asserted for it.
        searches = [
            (("*kultur*", None, 10), ["arkiv-kultur.dk", "kulturarv.dk"], "domainnametrgm"),
            (("*ark*.dk", None, 1), ["arkiv-kultur.dk"], "domainnametrgm"),
            (("*arkiv*", "arkiv-kultur.dk", 10), ["netarkivet.dk"], None),
            (("national", None, 10, "comments"), ["kb.dk"], "domaincommentstrgm"),
            (("bibliotek", None, 10, "comments"), ["kb.dk", "sb.dk"], "domaincommentstrgm"),
            (("kalender", None, 10, "crawlertraps"), ["kb.dk", "sb.dk"], "domaincrawlertrapstrgm"),
        ]
        for arguments, expected, index in searches:
            names, plan = _search_page_and_plan(conn, *arguments)
            assert names == expected, arguments
            assert engine.dialect.name != "postgresql" or index is None or index in plan, plan


def test_editing_comments_with_stale_edition_is_refused_and_row_unchanged(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
    with engine.begin() as conn:
        updated = DomainRepository(conn, "alice").edit("kb.dk", domain.edition, comments="first")
    assert updated.edition == domain.edition + 1 and updated.comments == "first"
    with engine.begin() as conn, pytest.raises(StaleEditionError, match="changed by somebody else"):
        DomainRepository(conn, "bob").edit("kb.dk", domain.edition, comments="second")
    with engine.connect() as conn:
        after = DomainRepository(conn).get("kb.dk")
        changes = AuditRepository(conn).changes_of("domains", domain.domain_id)
    assert after == updated
    assert [(c.actor, c.action) for c in changes][:1] == [("alice", "update")]
    assert changes[0].before["comments"] == "" and changes[0].after["comments"] == "first"


def test_alias_set_renew_expire_and_clear(engine, settings):
    defaults = DomainDefaults.from_settings(settings)
    confirmed = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
        alias = make_domain(conn, "kglbib.dk")
        repository = DomainRepository(conn, "curator", defaults)
        alias = repository.edit("kglbib.dk", alias.edition, alias_of="kb.dk", now=confirmed)
        assert alias.alias_of == "kb.dk" and alias.lastaliasupdate == confirmed
        assert repository.aliases_of("kb.dk") == ["kglbib.dk"]
        timeout = timedelta(seconds=settings.domain.aliasTimeout)
        assert not repository.is_alias_expired(alias, confirmed + timeout - timedelta(seconds=1))
        assert repository.is_alias_expired(alias, confirmed + timeout)
        summary = list(repository.alias_summary(confirmed + timeout))
        assert [(info.domain, info.alias_of, expired) for info, expired in summary] == [
            ("kglbib.dk", "kb.dk", True)]
        # naming the present target again is the renewal: it expires a full timeout from then
        renewed = repository.edit("kglbib.dk", alias.edition, alias_of="kb.dk", now=confirmed + timeout)
        assert renewed.alias_of == "kb.dk" and renewed.lastaliasupdate == confirmed + timeout
        assert not repository.is_alias_expired(renewed, confirmed + timeout + timedelta(days=1))
        cleared = repository.edit("kglbib.dk", renewed.edition, clear_alias=True)
        assert cleared.alias_of is None and cleared.lastaliasupdate is None
        assert not repository.is_alias_expired(cleared, confirmed + 10 * timeout)


def test_alias_cannot_point_to_itself_or_to_an_alias_or_chain(engine):
    with engine.begin() as conn:
        for name in ("kb.dk", "kglbib.dk", "royal.dk"):
            make_domain(conn, name)
        repository = DomainRepository(conn)
        with pytest.raises(ValidationError, match="alias of itself"):
            repository.edit("kb.dk", 1, alias_of="KB.dk")
        repository.edit("kglbib.dk", 1, alias_of="kb.dk")
        with pytest.raises(ValidationError, match="is itself an alias"):
            repository.edit("royal.dk", 1, alias_of="kglbib.dk")
        with pytest.raises(ValidationError, match="kglbib.dk is an alias of it"):
            repository.edit("kb.dk", 1, alias_of="royal.dk")
        assert repository.get("royal.dk").alias_of is None and repository.get("kb.dk").alias_of is None


def test_crawler_traps_validated_blank_lines_dropped_duplicates_removed(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        repository = DomainRepository(conn)
        updated = repository.set_crawler_traps(
            "kb.dk", ".*/calendar/.*\n\n  .*\\?sort=.*  \n.*/calendar/.*\n", domain.edition)
        stored = conn.scalar(select(s.domains.c.crawlertraps).where(s.domains.c.name == "kb.dk"))
    assert updated.crawlertraps == (".*/calendar/.*", ".*\\?sort=.*")
    assert stored == ".*/calendar/.*\n.*\\?sort=.*"


def test_crawler_trap_regex_error_names_the_line_and_keeps_old_traps(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        domain = DomainRepository(conn).set_crawler_traps("kb.dk", "good.*", domain.edition)
    with engine.begin() as conn, pytest.raises(CrawlerTrapError) as caught:
        DomainRepository(conn).set_crawler_traps("kb.dk", "ok.*\n\n.*(unclosed\n", domain.edition)
    assert caught.value.line == 3 and caught.value.expression == ".*(unclosed"
    assert "line 3" in str(caught.value) and "the group is never closed" in str(caught.value)
    with engine.connect() as conn:
        assert DomainRepository(conn).get("kb.dk").crawlertraps == ("good.*",)


def test_get_unknown_domain_is_not_found(engine):
    with engine.connect() as conn, pytest.raises(NotFoundError, match="nosuch.dk"):
        DomainRepository(conn).get("nosuch.dk")


def test_creation_is_audited_with_the_actor(engine):
    with engine.begin() as conn:
        ensure_default_template(conn)
        domain = DomainRepository(conn, "curator7").create("kb.dk")
        changes = AuditRepository(conn).changes_of("domains", domain.domain_id)
        config_changes = AuditRepository(conn).changes_of("configurations", domain.defaultconfig_id)
    assert [(c.actor, c.action) for c in changes] == [("curator7", "insert")]
    assert changes[0].after["name"] == "kb.dk" and changes[0].after["defaultconfig"] == domain.defaultconfig_id
    assert config_changes[0].after["name"] == "defaultconfig"


def test_alias_summary_pages_by_target_then_alias(engine, settings):
    defaults = DomainDefaults.from_settings(settings)
    confirmed = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    with engine.begin() as conn:
        for name in ("a.dk", "b.dk", "x1.dk", "x2.dk", "x3.dk"):
            make_domain(conn, name)
        repository = DomainRepository(conn, "curator", defaults)
        for alias, target in (("x3.dk", "a.dk"), ("x1.dk", "b.dk"), ("x2.dk", "a.dk")):
            repository.edit(alias, repository.get(alias).edition, alias_of=target, now=confirmed)
        first = list(repository.alias_summary(confirmed, limit=2))
        rest = list(repository.alias_summary(confirmed, after=("a.dk", "x3.dk"), limit=2))
    assert [(info.alias_of, info.domain) for info, _ in first] == [("a.dk", "x2.dk"), ("a.dk", "x3.dk")]
    assert [(info.alias_of, info.domain) for info, _ in rest] == [("b.dk", "x1.dk")]
    assert repository.alias_timeout() == timedelta(seconds=settings.domain.aliasTimeout)


def test_tld_counts_group_domains_by_their_last_label_and_ip_addresses_apart(engine):
    with engine.begin() as conn:
        for name in ("kb.dk", "sb.dk", "københavn.dk", "example.com", "b.co.uk", "10.0.0.1", "192.168.1.1"):
            make_domain(conn, name)
        repository = DomainRepository(conn)
        counts = repository.tld_counts()
        assert counts == [(IP_ADDRESS_TLD, 2), ("com", 1), ("dk", 3), ("uk", 1)]
        assert repository.tld_counts(after="com", limit=1) == [("dk", 3)]


def test_unused_configurations_and_seed_lists_page_by_id_and_count(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "unused.dk")
        spare_list = SeedListRepository(conn).create("unused.dk", "spare", ["http://unused.dk/x"], domain.edition)
        spare = make_configuration(conn, "unused.dk", "spare-config")
        used = make_configuration(conn, "unused.dk", "used-config")
        harvest = make_selective_harvest(conn)
        HarvestRepository(conn).add_configurations(harvest.name, [("unused.dk", "used-config")], harvest.edition)
        configurations, seedlists = ConfigurationRepository(conn), SeedListRepository(conn)
        assert [(c.domain, c.name) for c in configurations.unused(None, 10)] == [("unused.dk", "spare-config")]
        assert configurations.count_unused() == 1
        assert configurations.unused(spare.config_id, 10) == []
        assert [(u.domain, u.name) for u in seedlists.unused(None, 10)] == [("unused.dk", "spare")]
        assert seedlists.count_unused() == 1 and seedlists.unused(spare_list.seedlist_id, 10) == []
        assert used.config_id not in [c.config_id for c in configurations.unused(None, 10)]
