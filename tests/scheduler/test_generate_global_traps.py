"""Global crawler traps in the jobs: every job's template gets the expressions of the active lists, by list
name, each once, and nothing of an inactive list. Both databases."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import select

from harvestdef.db import schema as s
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from tests.scheduler.factories import T0, add_global_traps, make_domain, make_snapshot

NOW = T0 + timedelta(days=3)
TRAPS = {".*/calendar/.*", ".*/kalender/.*", ".*;jsessionid=.*", ".*/never/.*"}


def test_the_active_lists_expressions_go_into_each_job_by_list_name_each_once(engine):
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
        add_global_traps(conn, "sessions", [".*;jsessionid=.*", ".*/calendar/.*"])
        add_global_traps(conn, "calendars", [".*/calendar/.*", ".*/kalender/.*"])
        add_global_traps(conn, "inactive", [".*/never/.*"], active=False)
        make_snapshot(conn, 7, "broad")
    assert generate_jobs(engine, "broad", GenerationOptions(next_job_id=100), NOW).job_ids == [100]
    with engine.connect() as conn:
        document = conn.scalar(select(s.jobs.c.orderxmldoc).where(s.jobs.c.job_id == 100))
    traps = [value for value in re.findall(r"<value>([^<]*)</value>", document) if value in TRAPS]
    assert traps == [".*/calendar/.*", ".*/kalender/.*", ".*;jsessionid=.*"]
