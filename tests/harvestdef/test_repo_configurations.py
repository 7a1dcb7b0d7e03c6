"""Configurations: create/update/delete under the domain's edition, limits, seed lists of the same domain,
the default configuration. Every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest

from harvestdef.errors import ConflictError, NotFoundError, RefusedLinesError, StaleEditionError, ValidationError
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.seedlists import SeedListRepository
from tests.harvestdef.factories import make_configuration, make_domain, make_selective_harvest, make_template


def test_create_with_template_limits_and_seedlist(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        template = make_template(conn, "small")
        seedlist = SeedListRepository(conn).create("kb.dk", "news", "https://kb.dk/news\n", domain.edition)
        config = ConfigurationRepository(conn, "alice").create(
            "kb.dk", "news", "small", ["news"], domain.edition + 1, maxobjects=5000, maxbytes=-1, maxrate=60,
            comments="front page")
        listed = ConfigurationRepository(conn).list_for_domain("kb.dk")
        audit = AuditRepository(conn).changes_of("configurations", config.config_id)
    assert (config.template_name, config.template_id) == ("small", template.template_id)
    assert (config.maxobjects, config.maxbytes, config.maxrate) == (5000, -1, 60)
    assert config.seedlist_ids == (seedlist.seedlist_id,) and not config.is_default
    assert [c.name for c in listed] == ["defaultconfig", "news"]
    assert audit[0].actor == "alice" and audit[0].after["seedlists"] == [seedlist.seedlist_id]


@pytest.mark.parametrize("limit", ["maxobjects", "maxbytes", "maxrate"])
def test_limits_below_minus_one_are_refused(engine, limit):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        repository = ConfigurationRepository(conn)
        with pytest.raises(ValidationError, match=f"{limit} must be -1"):
            repository.create("kb.dk", "bad", "default_orderxml", ["defaultseeds"], domain.edition, **{limit: -2})
        with pytest.raises(ValidationError, match=f"{limit} must be -1"):
            repository.update("kb.dk", "defaultconfig", domain.edition, **{limit: -5})
        assert repository.create("kb.dk", "zero", "default_orderxml", ["defaultseeds"], domain.edition,
                                 **{limit: 0}).name == "zero"


def test_seedlist_of_another_domain_is_refused(engine):
    with engine.begin() as conn:
        kb = make_domain(conn, "kb.dk")
        other = make_domain(conn, "dr.dk")
        foreign = SeedListRepository(conn).get("dr.dk", "defaultseeds")
        repository = ConfigurationRepository(conn)
        with pytest.raises(RefusedLinesError, match="belongs to domain dr.dk, not to kb.dk"):
            repository.create("kb.dk", "mixed", "default_orderxml", [foreign.seedlist_id], kb.edition)
        with pytest.raises(RefusedLinesError, match="domain kb.dk has no seed list nosuch"):
            repository.create("kb.dk", "mixed", "default_orderxml", ["nosuch"], kb.edition)
        # every seed list that is not the domain's is named, each with its place in the list
        with pytest.raises(RefusedLinesError) as refused:
            repository.create("kb.dk", "mixed", "default_orderxml", ["nosuch", "defaultseeds", foreign.seedlist_id,
                                                                     "other"], kb.edition)
        assert [(r.line, r.text) for r in refused.value.refusals] == [
            (1, "nosuch"), (3, str(foreign.seedlist_id)), (4, "other")]
        assert refused.value.field == "seedlists"
        with pytest.raises(ValidationError, match="at least one seed list"):
            repository.create("kb.dk", "empty", "default_orderxml", [], kb.edition)
        assert DomainRepository(conn).get("dr.dk").edition == other.edition


def test_unknown_template_is_not_found(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        with pytest.raises(NotFoundError, match="nosuch"):
            ConfigurationRepository(conn).create("kb.dk", "x", "nosuch", ["defaultseeds"], domain.edition)


def test_duplicate_configuration_name_is_a_conflict(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
    taken = "a configuration named defaultconfig already exists on domain kb.dk"
    with engine.begin() as conn, pytest.raises(ConflictError, match=taken):
        ConfigurationRepository(conn).create("kb.dk", "defaultconfig", "default_orderxml", ["defaultseeds"],
                                             domain.edition)


def test_update_changes_only_what_is_given_and_bumps_domain_edition(engine):
    with engine.begin() as conn:
        config = make_configuration(conn, name="news", maxbytes=1000)
        domain = DomainRepository(conn).get(config.domain_name)
        make_template(conn, "other")
        updated = ConfigurationRepository(conn).update(
            config.domain_name, "news", domain.edition, template="other", maxobjects=10, new_name="news2")
        after = DomainRepository(conn).get(config.domain_name)
    assert (updated.name, updated.template_name, updated.maxobjects, updated.maxbytes) == ("news2", "other", 10, 1000)
    assert after.edition == domain.edition + 1


def test_stale_domain_edition_refuses_configuration_change_and_leaves_it(engine):
    with engine.begin() as conn:
        config = make_configuration(conn, name="news", maxbytes=1000)
        stale = DomainRepository(conn).get(config.domain_name).edition
        DomainRepository(conn).edit(config.domain_name, stale, comments="someone else")
    with engine.begin() as conn, pytest.raises(StaleEditionError, match="domain"):
        ConfigurationRepository(conn).update(config.domain_name, "news", stale, maxbytes=5)
    with engine.connect() as conn:
        assert ConfigurationRepository(conn).get(config.domain_name, "news") == config


def test_set_default_and_delete_rules(engine):
    with engine.begin() as conn:
        config = make_configuration(conn, name="news")
        name = config.domain_name
        repository = ConfigurationRepository(conn)
        edition = DomainRepository(conn).get(name).edition
        with pytest.raises(ValidationError, match="default configuration"):
            repository.delete(name, "defaultconfig", edition)
        now_default = repository.set_default(name, "news", edition)
        assert now_default.is_default and DomainRepository(conn).get(name).defaultconfig_id == config.config_id
        edition += 1
        old_default = repository.get(name, "defaultconfig").config_id
        repository.delete(name, "defaultconfig", edition)
        assert [c.name for c in repository.list_for_domain(name)] == ["news"]
        make_configuration(conn, name, name="used")
        make_selective_harvest(conn, "hd")
        harvests = HarvestRepository(conn)
        harvests.add_configurations("hd", [(name, "used")], harvests.get("hd").edition)
        with pytest.raises(ValidationError, match="a harvest definition refers to it"):
            repository.delete(name, "used", DomainRepository(conn).get(name).edition)
        deleted = AuditRepository(conn).changes_of("configurations", old_default)
        assert deleted[0].action == "delete" and deleted[0].before["name"] == "defaultconfig"
