"""Which configurations a harvest yields (docs/jobgen.md, NetarchiveSuite's rules), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from harvestdef.db import schema as s
from harvestdef.model.status import StopReason
from scheduler.jobgen.packing import HarvestLimits, PackingRules
from scheduler.jobgen.selection import HarvestSource, has_active_seed, select_candidates
from tests.scheduler.factories import (
    T0,
    add_config,
    add_history,
    make_domain,
    make_selective,
    make_snapshot,
    set_attribute,
)

NOW = T0 + timedelta(days=10)
YEAR = 31_536_000


def selected(conn, source, limits=None, rules=None):
    found = select_candidates(conn, source, limits or HarvestLimits(True), rules or PackingRules(), NOW, YEAR,
                              batch_size=3)
    return found, list(found.config_id)


def test_active_seed_rule():
    assert has_active_seed("  http://kb.dk \n")
    assert has_active_seed("# comment\n\n   \nhttp://kb.dk")
    assert not has_active_seed("# only\n   # indented comment\n\n  ")
    assert not has_active_seed("")


def test_first_snapshot_takes_default_configurations_in_domain_name_order(engine):
    with engine.begin() as conn:
        _, z = make_domain(conn, "zz.dk")
        a_domain, a = make_domain(conn, "aa.dk")
        add_config(conn, a_domain, "other")  # not the default: not in a snapshot
        _, m = make_domain(conn, "mm.dk")
        _, commented = make_domain(conn, "commented.dk", seeds="# http://commented.dk\n  \n")
        _, alias_new = make_domain(conn, "alias-new.dk", alias_of=a_domain, lastaliasupdate=NOW - timedelta(days=1))
        _, alias_old = make_domain(conn, "alias-old.dk", alias_of=a_domain,
                                   lastaliasupdate=NOW - timedelta(seconds=YEAR + 1))
        _, zero = make_domain(conn, "zero.dk", maxbytes=0)
        make_snapshot(conn, 1, "broad")
        _, ids = selected(conn, HarvestSource(1, True))
        assert ids == [a, alias_old, m, zero, z]
        _, ids = selected(conn, HarvestSource(1, True), rules=PackingRules(exclude_domains_with_zero_budget=True))
        assert ids == [a, alias_old, m, z]
        assert commented not in ids and alias_new not in ids


def test_history_of_same_domain_and_configuration_name_gives_the_best_row(engine):
    with engine.begin() as conn:
        domain, config = make_domain(conn, "kb.dk")
        _, other = make_domain(conn, "dr.dk")
        make_snapshot(conn, 1, "old")
        make_snapshot(conn, 2, "broad")
        add_history(conn, config, 1, 400, 400 * 38_000, StopReason.SIZE_LIMIT, T0)
        add_history(conn, config, 1, 300, 300 * 38_000, StopReason.SIZE_LIMIT, T0 + timedelta(days=1))
        add_history(conn, other, 1, 9999, 1, StopReason.DOWNLOAD_COMPLETE, T0)  # another domain's row
        found, ids = selected(conn, HarvestSource(2, True), HarvestLimits(True, -1, -1))
        index = ids.index(config)
        assert (found.best_objects[index], found.best_stop[index]) == (400, StopReason.SIZE_LIMIT)
        # the configuration's 1 GB gives the maximum: 400 + (1e9 / 38,000 - 400) / 2
        assert found.expected[index] == 400 + (1_000_000_000 // 38_000 - 400) // 2
        # a newer complete row ends the walk before the older, larger one
        add_history(conn, config, 1, 50, 50 * 38_000, StopReason.DOWNLOAD_COMPLETE, T0 + timedelta(days=2))
        found, ids = selected(conn, HarvestSource(2, True), HarvestLimits(True, -1, -1))
        assert found.best_objects[ids.index(config)] == 50


def test_continuation_snapshot_inclusion_rules(engine):
    with engine.begin() as conn:
        make_snapshot(conn, 1, "step1", maxbytes=10_000_000)
        make_snapshot(conn, 2, "step2", maxbytes=-1, previous=1)
        rows = {}
        for name, stop, maxbytes, maxobjects, objects, size in [
            ("complete.dk", StopReason.DOWNLOAD_COMPLETE, -1, -1, 10, 100),
            ("unfinished.dk", StopReason.DOWNLOAD_UNFINISHED, -1, -1, 10, 100),
            ("sizelimit.dk", StopReason.SIZE_LIMIT, -1, -1, 10, 10_000_000),
            ("objectlimit.dk", StopReason.OBJECT_LIMIT, -1, -1, 10, 100),
            ("timelimit.dk", StopReason.TIME_LIMIT, -1, -1, 10, 100),
            ("cfgsize-same.dk", StopReason.CONFIG_SIZE_LIMIT, 5_000_000, -1, 10, 5_000_000),
            ("cfgsize-raised.dk", StopReason.CONFIG_SIZE_LIMIT, 6_000_000, -1, 10, 5_000_000),
            ("cfgsize-unlimited.dk", StopReason.CONFIG_SIZE_LIMIT, -1, -1, 10, 5_000_000),
            ("cfgobj-same.dk", StopReason.CONFIG_OBJECT_LIMIT, -1, 100, 100, 100),
            ("cfgobj-raised.dk", StopReason.CONFIG_OBJECT_LIMIT, -1, 101, 100, 100),
        ]:
            _, config = make_domain(conn, name, maxbytes=maxbytes, maxobjects=maxobjects)
            add_history(conn, config, 1, objects, size, stop)
            rows[name] = config
        _, never = make_domain(conn, "never-crawled.dk")  # no historyinfo row in step 1: not carried over
        alias_domain, aliased = make_domain(conn, "aliased.dk")
        add_history(conn, aliased, 1, 10, 100, StopReason.SIZE_LIMIT)
        _, target = make_domain(conn, "target.dk")
        conn.execute(update(s.domains).where(s.domains.c.domain_id == alias_domain)
                     .values(alias=target, lastaliasupdate=NOW))
        _, ids = selected(conn, HarvestSource(2, True, previous_harvest_id=1))
        assert sorted(ids) == sorted(rows[name] for name in (
            "sizelimit.dk", "objectlimit.dk", "timelimit.dk", "cfgsize-raised.dk", "cfgsize-unlimited.dk",
            "cfgobj-raised.dk"))
        assert never not in ids


def test_continuation_uses_the_newest_row_of_the_previous_step_per_configuration(engine):
    with engine.begin() as conn:
        make_snapshot(conn, 1, "step1")
        make_snapshot(conn, 2, "step2", previous=1)
        _, config = make_domain(conn, "kb.dk")
        add_history(conn, config, 1, 10, 100, StopReason.SIZE_LIMIT, T0, job_id=1)
        add_history(conn, config, 1, 10, 100, StopReason.DOWNLOAD_COMPLETE, T0 + timedelta(hours=1), job_id=2)
        _, ids = selected(conn, HarvestSource(2, True, previous_harvest_id=1))
        assert ids == []


def test_selective_harvest_yields_its_harvest_configs_with_attributes(engine):
    with engine.begin() as conn:
        domain, default = make_domain(conn, "kb.dk")
        extra = add_config(conn, domain, "extra", maxbytes=5)
        _, unused = make_domain(conn, "dr.dk")
        _, no_seeds = make_domain(conn, "empty.dk", seeds="")
        set_attribute(conn, extra, "MAX_HOPS", 3)
        set_attribute(conn, extra, "HONOR_ROBOTS_DOT_TXT", 1)
        make_selective(conn, 5, "news", [default, extra, no_seeds])
        found, ids = selected(conn, HarvestSource(5, False), HarvestLimits(False))
        assert ids == [default, extra]
        assert found.attributes(0) == (20, 0, 1)
        assert found.attributes(1) == (3, 1, 1)
        assert found.template_name(1) == "default_orderxml"
        assert unused not in ids
