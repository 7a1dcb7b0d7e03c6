"""0027_job_ends on a database with jobs an operator stopped or failed before: each ended job gets its row in
job_ends from its first applied stop or fail, the words leave its harvest errors (the rest stay), a job still
running and a refused stop are left alone, and a downgrade puts the words back (SQLite and PostgreSQL)."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import alembic_config, upgrade_database

BEFORE = "0026_api_token_labels"
STOP_WORDS = "the crawl was stopped by admin (change 2)"
FAIL_WORDS = "the crawl was ended as failed by ops2 (change 1)"


def test_upgrade_moves_an_operators_end_out_of_the_harvest_errors(database_url):
    engine = open_engine(database_url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), BEFORE)
            conn.execute(text(
                "INSERT INTO harvestdefinitions (harvest_id, name, comments, numevents, submitted, isactive, "
                "edition) VALUES (3, 'daily', '', 0, '2026-01-01', true, 1)"))
            # job 7 DONE, stopped; job 8 FAILED, failed with a real error beside; job 9 STARTED with a stop
            # applied (its report on the way); job 10 DONE with a refused stop
            for job_id, status, errors in ((7, 3, STOP_WORDS), (8, 4, f"{FAIL_WORDS}; no WARC files were written"),
                                           (9, 2, None), (10, 3, "crawl ended abnormally")):
                conn.execute(text(
                    "INSERT INTO jobs (job_id, harvest_id, status, channel, snapshot, forcemaxbytes, orderxml, "
                    "orderxmldoc, seedlist, harvest_num, edition, harvest_errors, harvest_error_details) "
                    "VALUES (:id, 3, :status, 'FOCUSED', false, -1, 't', '<beans/>', '', 1, 1, :errors, :errors)"),
                    {"id": job_id, "status": status, "errors": errors})
            for job_id, version, kind, author, state in ((7, 1, "pause", "admin", "applied"),
                                                         (7, 2, "stop", "admin", "applied"),
                                                         (8, 1, "fail", "ops2", "applied"),
                                                         (9, 1, "stop", "admin", "applied"),
                                                         (10, 1, "stop", "admin", "refused")):
                conn.execute(text(
                    "INSERT INTO job_changes (job_id, version, kind, payload, author, created, state, applied) "
                    "VALUES (:job, :version, :kind, '{}', :author, '2026-03-01 10:00:00', :state, "
                    "'2026-03-01 10:42:00')"),
                    {"job": job_id, "version": version, "kind": kind, "author": author, "state": state})
        upgrade_database(engine)
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn, opts=s.compare_options()), s.metadata) == []
            ends = {row.job_id: (row.cause, row.author, row.change_version, row.budget_limit, row.ended_at.hour,
                                 row.ended_at.minute) for row in conn.execute(select(s.job_ends))}
            assert ends == {7: ("stop", "admin", 2, None, 10, 42), 8: ("fail", "ops2", 1, None, 10, 42)}
            errors = dict(conn.execute(select(s.jobs.c.job_id, s.jobs.c.harvest_errors)).all())
            details = dict(conn.execute(select(s.jobs.c.job_id, s.jobs.c.harvest_error_details)).all())
            assert errors == {7: None, 8: "no WARC files were written", 9: None, 10: "crawl ended abnormally"}
            assert details == errors
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), BEFORE)
        with engine.connect() as conn:
            assert "job_ends" not in inspect(conn).get_table_names()
            errors = dict(conn.execute(text("SELECT job_id, harvest_errors FROM jobs")).all())
            assert errors[7] == STOP_WORDS and errors[8] == f"{FAIL_WORDS}; no WARC files were written"
    finally:
        engine.dispose()
