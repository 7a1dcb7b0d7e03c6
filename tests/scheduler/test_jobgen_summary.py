"""Selection reads each configuration's best history row from config_history_summary when it is current,
and from historyinfo otherwise; both give the same candidates (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
from datetime import timedelta

from harvestdef.model.status import StopReason
from harvestdef.repositories.history import rebuild_summaries
from scheduler.jobgen.packing import HarvestLimits, PackingRules
from scheduler.jobgen.selection import HarvestSource, select_candidates, summary_is_current
from tests.scheduler.factories import T0, add_history, make_domain, make_selective, make_snapshot, set_attribute

NOW = T0 + timedelta(days=400)
YEAR = 31_536_000
COLUMNS = ("config_id", "domain", "group", "max_objects", "max_bytes", "best_objects", "best_bytes", "best_stop",
           "expected")


def _candidates(conn, source, limits):
    found = select_candidates(conn, source, limits, PackingRules(), NOW, YEAR, batch_size=7)
    return {column: list(getattr(found, column)) for column in COLUMNS} | {"groups": found.groups}


def test_summary_and_historyinfo_give_the_same_candidates(engine):
    draw = random.Random(13)
    with engine.begin() as conn:
        configs = [make_domain(conn, f"d{number:03d}.dk", maxbytes=draw.choice([-1, 10_000_000, 1_000_000_000]),
                               maxobjects=draw.choice([-1, -1, 500]))[1] for number in range(60)]
        set_attribute(conn, configs[3], "MAX_HOPS", 5)
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
