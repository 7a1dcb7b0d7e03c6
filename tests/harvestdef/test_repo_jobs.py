"""The job repository's question before an operator's restart: does a controller still crawl the job?"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, insert

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.model.controllers import LostControllerRule
from harvestdef.model.status import JobStatus
from harvestdef.repositories.jobs import JobRepository, new_job_row
from tests.harvestdef.factories import make_selective_harvest

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_a_controller_crawls_a_job_while_its_heartbeats_name_the_current_attempt(engine: Engine) -> None:
    with write_transaction(engine) as conn:
        harvest = make_selective_harvest(conn)
        row = new_job_row(job_id=7, harvest_id=harvest.harvest_id, channel="FOCUSED", snapshot=False,
                          orderxml="default_orderxml", harvest_num=1, creationdate=NOW,
                          orderxmldoc="<beans/>", seedlist="http://www.example.dk", num_configs=0)
        row.update(status=int(JobStatus.FAILED), attempt_id="a1")
        JobRepository(conn).insert([row], {})
        conn.execute(insert(s.harvesters).values(
            controller_id="c1", host="h1", channels="FOCUSED", accepted=True, current_job_id=7,
            current_attempt_id="a1", last_heartbeat=NOW - timedelta(seconds=100), heartbeat_interval=30.0))
    with engine.connect() as conn:
        jobs = JobRepository(conn)
        job = jobs.get(7, with_documents=False)
        crawling = jobs.crawling_controller(job, LostControllerRule(lost_after_heartbeats=10), now=NOW)
        assert crawling is not None and crawling.controller_id == "c1"
        # judged by the interval the controller states (30 s), not the rule's default for those that state none
        lost_by_its_interval = LostControllerRule(lost_after_heartbeats=3, default_heartbeat_interval=1000)
        assert jobs.crawling_controller(job, lost_by_its_interval, now=NOW) is None, "lost: not crawling"
        other_attempt = dataclasses.replace(job, attempt_id="a2")
        assert jobs.crawling_controller(other_attempt, LostControllerRule(), now=NOW) is None
