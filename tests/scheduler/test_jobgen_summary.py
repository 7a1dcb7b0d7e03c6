"""Selection reads each configuration's best history row from config_history_summary when it is current,
and from historyinfo otherwise; both give the same candidates, seed lists and traps (SQLite and
PostgreSQL), also for configurations with several seed lists."""

from __future__ import annotations

import random
from datetime import timedelta

from sqlalchemy import insert, select, update

from harvestdef.db import schema as s
from harvestdef.model.status import StopReason
from harvestdef.repositories.history import rebuild_summaries
from scheduler.jobgen.memberseeds import MemberSeeds
from scheduler.jobgen.packing import HarvestLimits, PackingRules
from scheduler.jobgen.selection import HarvestSource, select_candidates, summary_is_current
from tests.scheduler.factories import T0, add_history, make_domain, make_selective, make_snapshot, set_attribute

NOW = T0 + timedelta(days=400)
YEAR = 31_536_000
COLUMNS = ("config_id", "domain", "group", "max_objects", "max_bytes", "best_objects", "best_bytes", "best_stop",
           "expected")


def _candidates(conn, source, limits):
    seeds = MemberSeeds()
    found = select_candidates(conn, source, limits, PackingRules(), NOW, YEAR, batch_size=7, seeds=seeds)
    assert len(seeds) == len(found)
    return ({column: list(getattr(found, column)) for column in COLUMNS} | {"groups": found.groups}
            | {"seeds": [seeds.text([index]) for index in range(len(found))], "traps": seeds.traps})


def _add_seedlist(conn, config_id, seeds):
    domain_id = conn.scalar(select(s.configurations.c.domain_id).where(s.configurations.c.config_id == config_id))
    seedlist_id = conn.execute(insert(s.seedlists).values(name=f"more-{config_id}-{len(seeds)}", domain_id=domain_id,
                                                          seeds=seeds)).inserted_primary_key[0]
    conn.execute(insert(s.config_seedlists).values(config_id=config_id, seedlist_id=seedlist_id))


def test_summary_and_historyinfo_give_the_same_candidates(engine):
    draw = random.Random(13)
    with engine.begin() as conn:
        configs = [make_domain(conn, f"d{number:03d}.dk", maxbytes=draw.choice([-1, 10_000_000, 1_000_000_000]),
                               maxobjects=draw.choice([-1, -1, 500]))[1] for number in range(60)]
        set_attribute(conn, configs[3], "MAX_HOPS", 5)
        for config in configs[::7]:  # a second seed list: the configuration's history counts once
            _add_seedlist(conn, config, f"http://more{config}.dk/\nhttp://more{config}.dk/x")
        # no seed in its only list: not a candidate; no seed in its first list but in its second: one
        conn.execute(update(s.seedlists).where(s.seedlists.c.seedlist_id.in_(
            select(s.config_seedlists.c.seedlist_id).where(s.config_seedlists.c.config_id.in_(configs[5:7]))))
                     .values(seeds="# nothing yet\n"))
        _add_seedlist(conn, configs[6], "http://d006.dk/")
        conn.execute(update(s.domains).where(s.domains.c.domain_id.in_(
            select(s.configurations.c.domain_id).where(s.configurations.c.config_id.in_(configs[::9]))))
                     .values(crawlertraps=".*/x/.*"))
        for harvest_id in (1, 2, 3):
            make_snapshot(conn, harvest_id, f"step{harvest_id}", previous=harvest_id - 1 or None)
        for config in configs[:50]:
            for step in range(draw.randint(1, 6)):
                objects = draw.choice([0, 10, 49, 300, 300, 5000])
                add_history(conn, config, draw.choice([1, 2]), objects, objects * draw.randint(1, 90_000),
                            draw.choice(list(StopReason)), T0 + timedelta(days=draw.choice([step, 3])))
        assert not summary_is_current(conn)
        make_selective(conn, 4, "selective", configs[::4])
        sources = [(HarvestSource(3, True, 2), HarvestLimits(True, -1, 100_000_000)),
                   (HarvestSource(3, True), HarvestLimits(True, 100, -1)),
                   (HarvestSource(4, False), HarvestLimits(False))]
        from_history = [_candidates(conn, source, limits) for source, limits in sources]
        rebuild_summaries(conn)
        assert summary_is_current(conn)
        assert [_candidates(conn, source, limits) for source, limits in sources] == from_history
        # a row written past the summary sends the run back to historyinfo, and it sees the row
        add_history(conn, configs[55], 2, 7, 7, StopReason.DOWNLOAD_COMPLETE, NOW)
        assert not summary_is_current(conn)
        found = _candidates(conn, HarvestSource(3, True), HarvestLimits(True, 100, -1))
        assert found["best_objects"][found["config_id"].index(configs[55])] == 7
    first = from_history[1]
    assert configs[5] not in first["config_id"] and first["seeds"][first["config_id"].index(configs[6])].endswith(
        "http://d006.dk/")
    assert first["seeds"][first["config_id"].index(configs[7])] == (f"http://www.d007.dk\nhttps://d007.dk\n"
                                                                    f"http://more{configs[7]}.dk/\n"
                                                                    f"http://more{configs[7]}.dk/x")
    assert first["traps"][first["config_id"].index(configs[9])] == ("d009.dk", ".*/x/.*")
