"""0013_harvest_findings on a database with history: rows with no object are flagged without a reason, each
run gets its count, the rest stays, and a downgrade takes it all away again; 0031_finding_other_seeds reads
the count of the other failed seeds from the words of findings written before it (SQLite and PostgreSQL)."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import alembic_config, upgrade_database

BEFORE = "0010_definition_summaries"
EARLIER = "no object harvested (recorded before reasons were kept)"


def test_upgrade_flags_earlier_history_without_objects_and_counts_it_per_run(database_url):
    engine = open_engine(database_url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), BEFORE)
            conn.execute(text("INSERT INTO ordertemplates (name, orderxml) VALUES ('t', '<beans/>')"))
            conn.execute(text("INSERT INTO domains (name, edition) VALUES ('kb.dk', 1)"))
            for config_id in (1, 2):
                conn.execute(text("INSERT INTO configurations (config_id, name, domain_id, template_id) "
                                  "VALUES (:id, :name, 1, 1)"), {"id": config_id, "name": f"c{config_id}"})
            conn.execute(text(
                "INSERT INTO harvestdefinitions (harvest_id, name, comments, numevents, submitted, isactive, "
                "edition) VALUES (3, 'daily', '', 0, '2026-01-01', true, 1)"))
            conn.execute(text(
                "INSERT INTO jobs (job_id, harvest_id, status, channel, snapshot, forcemaxbytes, orderxml, "
                "orderxmldoc, seedlist, harvest_num, edition) "
                "VALUES (7, 3, 3, 'FOCUSED', false, -1, 't', '<beans/>', '', 2, 1)"))
            for historyinfo_id, objects in ((1, 0), (2, 12)):
                conn.execute(text(
                    "INSERT INTO historyinfo (historyinfo_id, stopreason, objectcount, bytecount, config_id, "
                    "harvest_id, job_id, harvest_time) VALUES (:id, 0, :objects, 0, :id, 3, 7, '2026-01-01')"),
                    {"id": historyinfo_id, "objects": objects})
            conn.execute(text(
                "INSERT INTO harvest_run_summary (harvest_id, harvest_num, configurations, updated_at) "
                "VALUES (3, 2, 2, '2026-01-01')"))
        upgrade_database(engine)
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn, opts=s.compare_options()), s.metadata) == []
            findings = conn.execute(select(s.harvest_findings)).mappings().all()
            assert [dict(row) for row in findings] == [
                {"historyinfo_id": 1, "job_id": 7, "config_id": 1, "harvest_id": 3, "harvest_num": 2,
                 "reason": EARLIER, "fetch_status": None, "seed": None, "other_seeds_failed": None}]
            assert conn.execute(select(s.harvest_run_summary.c.configurations,
                                       s.harvest_run_summary.c.nothing_harvested)).one() == (2, 1)
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), BEFORE)
        with engine.connect() as conn:
            assert "harvest_findings" not in inspect(conn).get_table_names()
            assert "nothing_harvested" not in {c["name"] for c in inspect(conn).get_columns("harvest_run_summary")}
            assert conn.execute(text("SELECT configurations FROM harvest_run_summary")).scalar() == 2
    finally:
        engine.dispose()


def test_upgrade_reads_the_count_of_other_failed_seeds_from_earlier_findings(database_url):
    engine = open_engine(database_url)
    reasons = {1: ("DNS lookup failed (-6) for http://a.invalid/ (and 2 other seeds failed)", -6),
               2: ("HTTP 500 for http://b.dk/ (and 1 other seed failed)", 500),
               3: ("HTTP 404 for http://c.dk/", 404),
               4: ("no object harvested: no seed of the domain is in crawl.log", None)}
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0030_reason_phrases")
            for historyinfo_id, (reason, status) in reasons.items():
                conn.execute(text(
                    "INSERT INTO harvest_findings (historyinfo_id, config_id, harvest_id, reason, fetch_status, seed)"
                    " VALUES (:id, 1, 3, :reason, :status, :seed)"),
                    {"id": historyinfo_id, "reason": reason, "status": status,
                     "seed": None if status is None else "http://x/"})
        upgrade_database(engine)
        with engine.connect() as conn:
            counts = dict(conn.execute(select(s.harvest_findings.c.historyinfo_id,
                                              s.harvest_findings.c.other_seeds_failed)).all())
            assert counts == {1: 2, 2: 1, 3: 0, 4: None}
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), "0030_reason_phrases")
        with engine.connect() as conn:
            assert "other_seeds_failed" not in {c["name"] for c in inspect(conn).get_columns("harvest_findings")}
            assert conn.execute(text("SELECT count(*) FROM harvest_findings")).scalar() == 4
    finally:
        engine.dispose()
