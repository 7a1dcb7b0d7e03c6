"""The jobs a run writes, checked job by job against their definition read one job at a time: job_configs as
packing made them, and each job's seed list and domain traps from its configurations' seed lists and domains
in domain-name order. The writer reads all jobs in one bulk pass (an aggregate per job on PostgreSQL, one
ordered row stream on SQLite); this pins that pass to the plain per-job reading on both databases."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import insert, select, update

from harvestdef.db import schema as s
from harvestdef.domainnames import to_punycode
from harvestdef.model.status import StopReason
from harvestdef.traps import parse_stored_traps
from scheduler.jobgen.building import domain_scoped_trap, seeds_of
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.jobgen.packing import PackingRules
from tests.scheduler.factories import (
    T0,
    add_config,
    add_global_traps,
    add_history,
    make_domain,
    make_selective,
    make_snapshot,
)

NOW = T0 + timedelta(days=2)
TRAPS = re.compile(r"<value>(.*?)</value>")


def _build(conn) -> list[int]:
    """Domains with the cases the writer must keep apart; returns the config ids of a selective harvest."""
    chosen = []
    for number in range(45):
        name = f"{'xyz'[number % 3]}site{number:02}.dk"
        seeds = None
        if number % 9 == 4:  # comments, blank lines, padding, a seed shared with another domain
            seeds = f"# comment\n\n  http://www.{name}/  \r\nhttp://shared.example/\n#http://off.{name}"
        elif number % 9 == 5:  # IDN host: its punycode form follows it
            seeds = f"http://www.blåbær{number}.dk/\nhttps://{name}\nhttp://shared.example/"
        traps = None
        if number % 5 == 1:
            traps = ".*/calendar/.*\n\n.*[?&]sort=.*"
        elif number % 5 == 2:
            traps = ""
        domain_id, config_id = make_domain(conn, name, maxbytes=[-1, 5_000_000, 1_000_000_000][number % 3],
                                           template=["default_orderxml", "other_orderxml"][number % 2],
                                           seeds=seeds, traps=traps)
        if number % 7 == 3:  # a second seed list on the same configuration
            seedlist_id = conn.execute(insert(s.seedlists).values(
                name="extra", domain_id=domain_id, seeds=f"http://extra.{name}/\nhttp://www.{name}/")
            ).inserted_primary_key[0]
            conn.execute(insert(s.config_seedlists).values(config_id=config_id, seedlist_id=seedlist_id))
        if number % 4 == 0:
            chosen.append(config_id)
            if number % 8 == 0:
                chosen.append(add_config(conn, domain_id, "second", seeds=f"http://second.{name}/"))
    conn.execute(update(s.ordertemplates).where(s.ordertemplates.c.name == "other_orderxml")
                 .values(orderxml="<beans>%{CRAWLERTRAPS_PLACEHOLDER}</beans>"))
    add_global_traps(conn, "global", [".*/cgi-bin/.*"])
    return chosen


def _expected_documents(conn, job_id: int, fixed_traps: list[str]) -> tuple[str, list[str]]:
    """The job's seed list and trap list, read for this job alone."""
    jc, c, d, cs, sl = s.job_configs, s.configurations, s.domains, s.config_seedlists, s.seedlists
    rows = conn.execute(select(d.c.name, d.c.crawlertraps, sl.c.seeds)
                        .select_from(jc.join(c, c.c.config_id == jc.c.config_id)
                                     .join(d, d.c.domain_id == c.c.domain_id)
                                     .outerjoin(cs, cs.c.config_id == c.c.config_id)
                                     .outerjoin(sl, sl.c.seedlist_id == cs.c.seedlist_id))
                        .where(jc.c.job_id == job_id).order_by(d.c.name, sl.c.seedlist_id)).all()
    seeds = "\n".join(dict.fromkeys(seeds_of(seedlist for _, _, seedlist in rows)))
    traps = dict.fromkeys(fixed_traps)
    for domain, stored in dict.fromkeys((domain, stored) for domain, stored, _ in rows if stored):
        for trap in parse_stored_traps(stored):
            traps.setdefault(domain_scoped_trap(domain, trap), None)
    return seeds, list(traps)


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@pytest.mark.parametrize(("bulk", "history"), [(False, False), (False, True), (True, False)])
def test_each_job_holds_its_members_seeds_and_traps(engine, bulk, history):
    # bulk: a run big enough to set job_configs' foreign keys aside, which PostgreSQL does; SQLite writes
    # such a run as any other, and its jobs must hold the same
    with engine.begin() as conn:
        chosen = _build(conn)
        if history:  # not in config_history_summary: selection folds historyinfo
            for number, config_id in enumerate(chosen):
                add_history(conn, config_id, 1, 10 + number, 10_000, StopReason(number % 3))
        make_snapshot(conn, 1, "broad", maxbytes=10_000_000)
        make_selective(conn, 2, "chosen", chosen, traps=".*/selective-trap/.*")
    options = GenerationOptions(rules=PackingRules(fixed_domain_count_snapshot=6, fixed_domain_count_focused=4),
                                bulk_check_threshold=1 if bulk else 10**9)
    for harvest_id, fixed in ((1, [".*/cgi-bin/.*"]), (2, [".*/cgi-bin/.*", ".*/selective-trap/.*"])):
        result = generate_jobs(engine, harvest_id, options, NOW)
        assert len(result.job_ids) > 3
        with engine.connect() as conn:
            for job_id, job in zip(result.job_ids, result.jobs, strict=True):
                members = set(conn.scalars(select(s.job_configs.c.config_id)
                                           .where(s.job_configs.c.job_id == job_id)))
                assert len(members) == len(job) == conn.scalar(
                    select(s.jobs.c.num_configs).where(s.jobs.c.job_id == job_id))
                seedlist, document = conn.execute(select(s.jobs.c.seedlist, s.jobs.c.orderxmldoc)
                                                  .where(s.jobs.c.job_id == job_id)).one()
                seeds, traps = _expected_documents(conn, job_id, fixed)
                assert seedlist == seeds and seeds
                assert [_unescape(trap) for trap in TRAPS.findall(document)] == traps
    with engine.connect() as conn:
        every_seed = "\n".join(conn.scalars(select(s.jobs.c.seedlist).where(s.jobs.c.harvest_id == 1)))
    idn = "http://www.blåbær5.dk/"
    assert f"{idn}\nhttp://www.{to_punycode('blåbær5.dk')}/" in every_seed and "# comment" not in every_seed
    assert every_seed.count("http://shared.example/") < 10
