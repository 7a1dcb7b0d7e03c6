"""The harvest database: schema creation, idempotent init, migrations, and the DDL file."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, select, text
from sqlalchemy.engine import make_url

from harvestdef.db import schema as s
from harvestdef.db.ddl import postgresql_ddl
from harvestdef.db.defaults import BROWSER_CHANNEL, DEFAULT_CHANNELS, DEFAULT_SCHEDULES
from harvestdef.db.engine import open_engine
from harvestdef.db.init import alembic_config, head_revision, init_database, upgrade_database
from harvestdef.errors import DatabaseError
from tests.servers import PG_ADMIN_URL

ROOT = Path(__file__).resolve().parents[2]

# The exact column names, in the order of NetarchiveSuite 8.1's PostgreSQL script
# (deploy/deploy-core/scripts/postgresql/netarchivesuite_init.sql)
NAS_COLUMNS = {
    "schemaversions": "tablename version",
    "domains": "domain_id name comments defaultconfig crawlertraps edition alias lastaliasupdate",
    "configurations": "config_id name comments domain_id template_id maxobjects maxrate overridelimits maxbytes",
    "config_passwords": "config_id password_id",
    "config_seedlists": "config_id seedlist_id",
    "seedlists": "seedlist_id name comments domain_id seeds",
    "passwords": "password_id name comments domain_id url realm username password",
    "ownerinfo": "ownerinfo_id domain_id created info",
    "historyinfo": "historyinfo_id stopreason objectcount bytecount config_id harvest_id job_id harvest_time",
    "harvestdefinitions": "harvest_id name comments numevents submitted isactive edition channel_id audience",
    "fullharvests": "harvest_id maxobjects previoushd maxbytes maxjobrunningtime isindexready",
    "partialharvests": "harvest_id schedule_id nextdate",
    "harvest_configs": "harvest_id config_id",
    "schedules": "schedule_id name comments startdate enddate maxrepeats timeunit numtimeunits anytime onminute "
                 "onhour ondayofweek ondayofmonth edition",
    "ordertemplates": "template_id name orderxml isactive",
    "jobs": "job_id harvest_id status channel snapshot forcemaxbytes forcemaxcount forcemaxrunningtime orderxml "
            "orderxmldoc seedlist harvest_num harvest_errors harvest_error_details upload_errors "
            "upload_error_details startdate enddate submitteddate creationdate resubmitted_as_job num_configs "
            "edition continuationof harvestname_prefix",
    "job_configs": "job_id config_id",
    "global_crawler_trap_lists": "global_crawler_trap_list_id name description isactive",
    "global_crawler_trap_expressions": "id crawler_trap_list_id trap_expression",
    "runningjobshistory": "jobid harvestname hosturl progress queuedfilescount totalqueuescount "
                          "activequeuescount retiredqueuescount exhaustedqueuescount elapsedseconds alertscount "
                          "downloadedfilescount currentprocessedkbpersec processedkbpersec "
                          "currentprocesseddocspersec processeddocspersec activetoecount status tstamp",
    "runningjobsmonitor": "jobid harvestname hosturl progress queuedfilescount totalqueuescount "
                          "activequeuescount retiredqueuescount exhaustedqueuescount elapsedseconds alertscount "
                          "downloadedfilescount currentprocessedkbpersec processedkbpersec "
                          "currentprocesseddocspersec processeddocspersec activetoecount status tstamp "
                          "totalbyteswritten",
    "frontierreportmonitor": "jobid filterid tstamp domainname currentsize totalenqueues sessionbalance lastcost "
                             "averagecost lastdequeuetime waketime totalspend totalbudget errorcount lastpeekuri "
                             "lastqueueduri",
    "extendedfieldtype": "extendedfieldtype_id name",
    "extendedfield": "extendedfield_id extendedfieldtype_id name format defaultvalue options datatype mandatory "
                     "sequencenr",
    "extendedfieldvalue": "extendedfieldvalue_id extendedfield_id instance_id content",
    "harvestchannel": "id name issnapshot isdefault comments",
    "eav_type_attribute": "tree_id id name class_namespace class_name datatype viewtype def_int def_datetime "
                          "def_varchar def_text",
    "eav_attribute": "tree_id id entity_id type_id val_int val_datetime val_varchar val_text",
}


def test_every_netarchivesuite_table_and_column_exists(engine):
    inspector = inspect(engine)
    tables = set(inspector.get_table_names())
    for table, columns in NAS_COLUMNS.items():
        assert table in tables, table
        present = {c["name"] for c in inspector.get_columns(table)}
        missing = set(columns.split()) - present
        assert not missing, f"{table} lacks {missing}"


def test_named_indexes_exist(engine):
    inspector = inspect(engine)
    names = {ix["name"] for t in ("historyinfo", "jobs", "domains", "configurations", "partialharvests")
             for ix in inspector.get_indexes(t)}
    for index in ("historyinfoharvest", "historyinfoconfigharvest", "historyinfojobharvest",
                  "historyinfoharvestconfig", "historyinfoconfig", "historyinfojob", "jobstatus", "jobharvestid",
                  "jobcontroller",
                  "configurationmaxbytes", "aliasindex", "partialharvestsnextdate"):
        assert index in names


def test_init_inserts_default_rows_once(engine):
    init_database(engine)  # a second time: nothing is duplicated
    with engine.connect() as conn:
        schedules = conn.execute(select(s.schedules.c.name, s.schedules.c.timeunit, s.schedules.c.maxrepeats)
                                 ).all()
        channels = conn.execute(select(s.harvestchannel.c.name, s.harvestchannel.c.issnapshot,
                                       s.harvestchannel.c.isdefault)).all()
        versions = dict(conn.execute(select(s.schemaversions.c.tablename, s.schemaversions.c.version)).all())
    assert sorted(r.name for r in schedules) == sorted(name for name, *_ in DEFAULT_SCHEDULES)
    assert {r.name: r.maxrepeats for r in schedules}["Once"] == 1
    assert {r.name: (r.issnapshot, r.isdefault) for r in channels} == {
        name: (snap, default) for name, snap, default, _ in (*DEFAULT_CHANNELS, BROWSER_CHANNEL)}
    assert versions["jobs"] == 10 and versions["domains"] == 3


def test_init_loads_the_default_templates(engine):
    with engine.connect() as conn:
        names = set(conn.scalars(select(s.ordertemplates.c.name)))
    expected = {p.stem for p in (ROOT / "templates").glob("*.cxml")}
    assert expected <= names


def test_upgrade_without_schema_is_a_clear_error(database_url):
    engine = open_engine(database_url)
    try:
        with pytest.raises(DatabaseError, match="db init"):
            upgrade_database(engine)
    finally:
        engine.dispose()


def test_migrations_from_empty_match_the_schema(database_url):
    """The Alembic chain, run from nothing, builds exactly what schema.py describes."""
    engine = open_engine(database_url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "head")
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn, opts=s.compare_options()), s.metadata)
            assert MigrationContext.configure(conn).get_current_revision() == head_revision()
        assert diffs == []
    finally:
        engine.dispose()


def test_sql_file_is_exactly_the_ddl_output():
    on_disk = (ROOT / "sql" / "createfullhddb.sql").read_text(encoding="utf-8")
    assert on_disk == postgresql_ddl(), "sql/createfullhddb.sql is stale: harvestsuite db ddl > sql/createfullhddb.sql"


@pytest.mark.postgres
def test_sql_file_loads_into_empty_postgresql_with_psql_and_init_accepts_it(postgresql_database):
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"hs_ddl_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(PG_ADMIN_URL).set(database=name)
        result = subprocess.run(
            ["psql", "-v", "ON_ERROR_STOP=1", "-q", "-h", url.host, "-p", str(url.port or 5432),
             "-U", url.username, "-d", name, "-f", str(ROOT / "sql" / "createfullhddb.sql")],
            capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        engine = open_engine(url.render_as_string(hide_password=False))
        try:
            assert init_database(engine) == "up to date"
            with engine.connect() as conn:
                # the default channels and BROWSER
                assert conn.scalar(text("select count(*) from harvestchannel")) == len(DEFAULT_CHANNELS) + 1
        finally:
            engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_upgrade_from_0008_adds_the_trigram_indexes_on_postgresql_only(database_url):
    """0009 on a database at 0008: PostgreSQL gets the domains' trigram indexes, with pg_trgm's operator
    class named by its schema (the tests' pg_trgm lives off the search_path); SQLite gets nothing."""
    engine = open_engine(database_url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0008_job_dispatch_index")
            conn.execute(text("INSERT INTO domains (name, comments, edition) VALUES ('kb.dk', 'Bibliotek', 1)"))
        assert upgrade_database(engine).done == "upgraded 0008_job_dispatch_index -> " + head_revision()
        with engine.connect() as conn:
            indexes = {i["name"] for i in inspect(conn).get_indexes("domains")}
            assert compare_metadata(MigrationContext.configure(conn, opts=s.compare_options()), s.metadata) == []
            if engine.dialect.name == "postgresql":
                definitions = conn.scalars(text(
                    "SELECT indexdef FROM pg_indexes WHERE tablename = 'domains' AND indexname LIKE '%trgm'"
                    " AND schemaname = current_schema()")).all()
                assert len(definitions) == 3 and all("USING gin" in d and "gin_trgm_ops" in d for d in definitions)
        trigram = set(s.DOMAIN_TRIGRAM_INDEXES)
        assert indexes & trigram == (trigram if engine.dialect.name == "postgresql" else set())
    finally:
        engine.dispose()


def test_upgrade_of_a_harvestsuite_database_from_0006_keeps_its_rows_and_matches_the_schema(database_url):
    """0007 on a database HarvestSuite made before it: boolean flags become 0/1, integers and doubles
    NUMERIC, constraints and indexes get NetarchiveSuite's names; rows stay, in SQLite's batch mode too."""
    engine = open_engine(database_url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0006_summary_index")
            conn.execute(text("INSERT INTO ordertemplates (name, orderxml) VALUES ('t', '<beans/>')"))
            conn.execute(text("INSERT INTO domains (name, edition) VALUES ('kb.dk', 1)"))
            conn.execute(text("INSERT INTO configurations (name, domain_id, template_id) VALUES ('c', 1, 1)"))
            conn.execute(text("UPDATE domains SET defaultconfig = 1"))
            conn.execute(text("INSERT INTO extendedfieldtype (extendedfieldtype_id, name) VALUES (1, 'domains')"))
            conn.execute(text(
                "INSERT INTO extendedfield (extendedfieldtype_id, name, format, defaultvalue, options, datatype, "
                "mandatory, historize) VALUES (1, 'f', '', '', 'a,b', 6, true, false)"))
            conn.execute(text("INSERT INTO extendedfieldvalue (extendedfield_id, instance_id, content) "
                              "VALUES (1, 1, 'a')"))
            conn.execute(text(
                "INSERT INTO runningjobsmonitor (jobid, harvestname, progress, processeddocspersec, tstamp) "
                "VALUES (7, 'h', 12.5, 3, '2026-01-01 00:00:00')"))
        assert upgrade_database(engine).done == "upgraded 0006_summary_index -> " + head_revision()
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn, opts=s.compare_options()), s.metadata) == []
            assert conn.execute(select(s.extendedfield.c.mandatory, s.extendedfield.c.historize)).one() == (
                True, False)
            assert conn.execute(text("SELECT mandatory FROM extendedfield")).scalar() == 1
            assert conn.execute(select(s.domains.c.defaultconfig)).scalar() == 1
            assert conn.execute(select(s.runningjobsmonitor.c.progress)).scalar() == 12.5
            assert {i["name"] for i in inspect(conn).get_indexes("runningjobshistory")} >= {
                "runningjobshistorycrawljobid", "runningjobshistorycrawltime"}
    finally:
        engine.dispose()


def test_dry_run_is_refused_on_sqlite_where_ddl_cannot_be_rolled_back(sqlite_url):
    engine = open_engine(sqlite_url)
    try:
        init_database(engine)
        with pytest.raises(DatabaseError, match="PostgreSQL"):
            upgrade_database(engine, dry_run=True)
    finally:
        engine.dispose()
