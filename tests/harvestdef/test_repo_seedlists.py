"""Seed lists: normalisation, the seed rule, validSeedRegex, IDN hosts, the 8 MiB cap, editions. Both databases."""

from __future__ import annotations

import pytest

from harvestdef.errors import ConflictError, RefusedLinesError, StaleEditionError, ValidationError
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.seedlists import MAX_SEEDLIST_BYTES, SeedListRepository
from harvestdef.settings import load_settings
from tests.harvestdef.factories import make_domain


def test_seeds_are_normalised_one_per_line(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        seedlist = SeedListRepository(conn).create(
            "kb.dk", "news", "  https://kb.dk/a  \r\n\n\thttps://kb.dk/b\nhttps://kb.dk/a\n", domain.edition)
    assert seedlist.seeds == ("https://kb.dk/a", "https://kb.dk/b")
    assert seedlist.seeds_text == "https://kb.dk/a\nhttps://kb.dk/b"


def test_idn_hosts_are_accepted_and_stored_as_the_crawler_uses_them(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "københavn.dk")
        seedlist = SeedListRepository(conn).create(
            "xn--kbenhavn-54a.dk", "idn",
            ["http://www.københavn.dk/", "https://xn--kbenhavn-54a.dk/", "KØBENHAVN.dk/x"], domain.edition)
    assert seedlist.seeds == ("http://www.xn--kbenhavn-54a.dk/", "https://xn--kbenhavn-54a.dk/",
                              "http://xn--kbenhavn-54a.dk/x")


def test_valid_seed_regex_from_settings_is_enforced_and_reports_lines(engine, database_url):
    settings = load_settings(environ={}, overrides={"harvestsuite.database.url": database_url,
                                                     "harvester.datamodel.domain.validSeedRegex": r"^https?://.*$"})
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        repository = SeedListRepository.from_settings(conn, settings)
        with pytest.raises(RefusedLinesError) as refused:
            repository.create("kb.dk", "bad", "http://kb.dk\nHTTP://kb.dk/y\n\nkb.dk/x", domain.edition)
        assert [(r.line, r.text) for r in refused.value.refusals] == [(2, "HTTP://kb.dk/y"), (4, "kb.dk/x")]
        assert "validSeedRegex" in refused.value.refusals[0].reason
        assert repository.create("kb.dk", "good", "http://kb.dk\nhttps://kb.dk", domain.edition).seeds == (
            "http://kb.dk", "https://kb.dk")


def test_a_seed_without_a_host_is_refused(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        with pytest.raises(ValidationError, match="line 1: 'http:///path': not a URL: no host"):
            SeedListRepository(conn).create("kb.dk", "bad", "http:///path", domain.edition)


def test_more_than_8_mib_is_refused(engine):
    seed = "http://kb.dk/" + "x" * 1000
    count = MAX_SEEDLIST_BYTES // len(seed) + 10
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        with pytest.raises(ValidationError, match="at most 8388608"):
            SeedListRepository(conn).create("kb.dk", "huge", [f"{seed}{i}" for i in range(count)], domain.edition)


def test_update_with_stale_domain_edition_leaves_seeds(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        seedlist = SeedListRepository(conn).create("kb.dk", "news", "https://kb.dk/a", domain.edition)
        updated = SeedListRepository(conn).update("kb.dk", "news", domain.edition + 1, seeds="https://kb.dk/b",
                                                  comments="moved")
    assert updated.seeds == ("https://kb.dk/b",) and updated.comments == "moved"
    with engine.begin() as conn, pytest.raises(StaleEditionError):
        SeedListRepository(conn).update("kb.dk", "news", domain.edition + 1, seeds="https://kb.dk/c")
    with engine.connect() as conn:
        assert SeedListRepository(conn).get("kb.dk", "news") == updated
        assert DomainRepository(conn).get("kb.dk").edition == domain.edition + 2
    assert seedlist.seedlist_id == updated.seedlist_id


def test_duplicate_seedlist_name_is_a_conflict(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
    taken = "a seed list named defaultseeds already exists on domain kb.dk"
    with engine.begin() as conn, pytest.raises(ConflictError, match=taken):
        SeedListRepository(conn).create("kb.dk", "defaultseeds", "http://kb.dk", domain.edition)
