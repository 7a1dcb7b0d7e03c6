"""The PostgreSQL bulk path of writing job_configs: foreign keys dropped for the load and added back,
validated, in the run's own transaction."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, text

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.jobgen.packing import PackingRules
from tests.scheduler.factories import T0, make_domain, make_snapshot


def foreign_keys(conn) -> list[str]:
    return sorted(conn.scalars(text("SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                                    "WHERE conrelid = CAST('job_configs' AS regclass) AND contype = 'f'")))


def test_bulk_load_keeps_the_foreign_keys(postgresql_url):
    engine = open_engine(postgresql_url)
    try:
        init_database(engine)
        with engine.begin() as conn:
            before = foreign_keys(conn)
            for i in range(40):
                make_domain(conn, f"d{i:02}.dk")
            make_snapshot(conn, 1, "broad", maxbytes=10_000_000)
        options = GenerationOptions(rules=PackingRules(fixed_domain_count_snapshot=7), bulk_check_threshold=1)
        result = generate_jobs(engine, "broad", options, T0 + timedelta(days=1))
        with engine.connect() as conn:
            assert foreign_keys(conn) == before and before
            assert conn.scalar(select(func.count()).select_from(s.job_configs)) == 40
            assert len(result.job_ids) == 6
            assert all(conn.scalars(select(s.jobs.c.seedlist)))
    finally:
        engine.dispose()
