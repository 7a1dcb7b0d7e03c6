"""Each job deduplicates against the earlier captures of its own domains, on PostgreSQL and RabbitMQ, through
the real pipeline: the scheduler (a thread of the test) decides each job's sources and dispatches;
``harvestsuite harvester run`` builds the job's index from those sources' partitions in the archive store,
drives the bundled engine over the demo site, post-processes and stores (docs/scheduler.md, Deduplication).

A selective harvest of one big and one small domain, in jobs of their own, run twice: run 2's small job is
given run 1's small job alone as its source, its index holds that domain's captures and nothing of the big
one, and run 2 stores every unchanged photo of both as a revisit naming run 1's capture.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.dedup import DedupIndex, read_entries
from harvestdef.dedup.partitions import domain_of_entry_url
from harvestdef.demo.site import HOSTS, DemoSite
from tests.harvester.conftest import OUR_TEMPLATE, Harvesting, fast_politeness
from tests.harvester.test_dedup_chain import (
    DemoSiteForHarvesting,
    assert_revisits_name_the_first_capture,
    photo_captures,
    run_jobs,
)
from tests.scheduler.factories import add_config, make_selective, template_id
from tests.servers import AMQP_URL, require_rabbitmq

BIG = next(host for host in HOSTS if host.name == "www.byhistorie.dk")
SMALL = next(host for host in HOSTS if host.name == "www.havbrug.org")


@pytest.fixture
def harvesting(tmp_path: Path, postgresql_url: str) -> Iterator[Harvesting]:
    require_rabbitmq()
    with DemoSite() as site:
        harvesting = Harvesting(tmp_path, DemoSiteForHarvesting(site), AMQP_URL,
                                fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8")), database_url=postgresql_url)
        try:
            yield harvesting
        finally:
            harvesting.close()


def job_domains(h: Harvesting, job_id: int) -> set[str]:
    with h.engine.connect() as conn:
        return set(conn.scalars(
            select(s.domains.c.name).join(s.configurations, s.configurations.c.domain_id == s.domains.c.domain_id)
            .join(s.job_configs, s.job_configs.c.config_id == s.configurations.c.config_id)
            .where(s.job_configs.c.job_id == job_id)))


def job_sources(h: Harvesting, job_id: int) -> str:
    with h.engine.connect() as conn:
        return conn.scalar(select(s.job_dedup_sources.c.sources).where(s.job_dedup_sources.c.job_id == job_id))


@pytest.mark.rabbitmq
@pytest.mark.postgres
def test_a_small_domains_job_is_given_its_own_history_and_every_unchanged_photo_is_a_revisit(harvesting):
    h = harvesting
    with h.engine.begin() as conn:
        config_ids = []
        # two templates (the same crawl settings): job generation puts each domain in a job of its own
        for host, template in ((BIG, "big_template"), (SMALL, "test_template")):
            template_id(conn, template, h.template)
            domain_id = conn.execute(insert(s.domains).values(name=host.domain, edition=1)).inserted_primary_key[0]
            config_id = add_config(conn, domain_id, "defaultconfig", template=template, seeds=h.seed(host.name))
            conn.execute(update(s.domains).where(s.domains.c.domain_id == domain_id).values(defaultconfig=config_id))
            config_ids.append(config_id)
        make_selective(conn, 100, "big-and-small", config_ids, nextdate=utcnow() - timedelta(seconds=5))
    h.start_scheduler()
    controller = h.start_controller()
    runs = []
    for number in (1, 2):
        if number > 1:
            h.run_again(100)
        runs.append(run_jobs(h, 100, harvest_num=number))
    by_domain = [{next(iter(job_domains(h, job.job_id))): job for job in jobs} for jobs in runs]
    assert [set(run) for run in by_domain] == [{BIG.domain, SMALL.domain}] * 2

    small1, small2 = by_domain[0][SMALL.domain], by_domain[1][SMALL.domain]
    big1 = by_domain[0][BIG.domain]
    assert job_sources(h, small2.job_id) == f"100/{small1.job_id}", "only the job that harvested it before"
    assert job_sources(h, by_domain[1][BIG.domain].job_id) == f"100/{big1.job_id}"

    # the small job's index: the small domain's captures of run 1, and nothing of the big domain
    (index_path,) = (h.server_dir).rglob(f"{small2.job_id}_*/dedup-index.sqlite")
    small_entries = {(e.digest, e.url) for e in small1.entries}
    big_entries = list(read_entries(h.archive / "100" / str(big1.job_id) / "dedup" / f"{big1.job_id}.gz"))
    assert small_entries and len(big_entries) > 3 * len(small_entries)
    with DedupIndex(index_path) as index:
        assert len(index) == len(small_entries), "sized by its own domain's history"
        assert index.job_ids == (small1.job_id,)
        assert all(index.lookup(digest, url) is not None for digest, url in small_entries)
        assert all(index.lookup(e.digest, e.url) is None for e in big_entries)
    assert all(domain_of_entry_url(url) == SMALL.domain for _, url in small_entries)
    controller.wait_for_log(rf"job {small2.job_id}: deduplication index of {len(small_entries)} \(digest, URL\) pairs "
                        rf"for 1 of its 1 domains from jobs {small1.job_id} ", timeout=5)

    # run 2 stores every unchanged photo as a revisit naming run 1's capture
    assert_revisits_name_the_first_capture(photo_captures(runs[0]), runs[1], "run 2")
    assert len(photo_captures(runs[0])) == BIG.photos + SMALL.photos
