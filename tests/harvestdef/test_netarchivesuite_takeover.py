"""Taking over a real NetarchiveSuite harvest database, on the real PostgreSQL.

NetarchiveSuite's own DDL (../shared/fixtures/netarchivesuite/netarchivesuite_init.sql) is loaded with
psql, then rows are written with the statements its DAOs use (DomainDBDAO.create: the domain first with
``defaultconfig = -1``, then seed lists, configurations and the update; HarvestDefinitionDBDAO.create:
no channel_id; JobDBDAO.create: explicit job ids; ExtendedFieldDBDAO: integer flags and long options,
values numbered max + 1 without the sequence; RunningJobsInfoDBDAO: numeric progress and costs). Then
either ``db upgrade`` in place, or a data-only pg_dump loaded into sql/createfullhddb.sql and upgraded.
Either way every row NetarchiveSuite wrote is unchanged, and import and job generation work on it.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from sqlalchemy import Connection, Engine, create_engine, insert, select, text
from sqlalchemy.engine import make_url

from harvestdef.cli import cli
from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import head_revision, init_database, upgrade_database
from harvestdef.errors import DatabaseError
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from tests.servers import PG_ADMIN_URL

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LONG_OPTIONS = ",".join(f"option{i:03d}" for i in range(60))  # 539 characters: fits 1000, not 50
NAS_TABLES = tuple(sorted(set(s.SCHEMA_VERSIONS) - {"schemaversions"}))


@pytest.fixture(scope="module")
def nas_ddl(shared_dir: Path) -> str:
    """NetarchiveSuite's script without its GRANTs (no role netarchivesuite here) and its index tablespace."""
    script = (shared_dir / "fixtures" / "netarchivesuite" / "netarchivesuite_init.sql").read_text("utf-8")
    script = re.sub(r"^GRANT [^;]*;", "", script, flags=re.MULTILINE)
    return script.replace(" TABLESPACE tsindex", "")


@contextmanager
def new_database() -> Iterator[str]:
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"hs_nas_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield name
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def url_of(name: str) -> str:
    return make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def psql(name: str, *args: str, stdin: str | None = None) -> None:
    url = make_url(PG_ADMIN_URL)
    result = subprocess.run(
        ["psql", "-v", "ON_ERROR_STOP=1", "-q", "-h", url.host, "-p", str(url.port or 5432), "-U", url.username,
         "-d", name, *args], input=stdin, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def pg_dump(name: str) -> str:
    url = make_url(PG_ADMIN_URL)
    result = subprocess.run(
        ["pg_dump", "--data-only", "--column-inserts", "--disable-triggers", "--exclude-table=schemaversions",
         "-h", url.host, "-p", str(url.port or 5432), "-U", url.username, name],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


# ---------------------------------------------------------------- rows as NetarchiveSuite writes them

def create_domain(conn: Connection, name: str, template: str = "default_orderxml") -> tuple[int, int]:
    """DomainDBDAO.create: the domain with defaultconfig -1, '' for empty comments and traps, then its
    seed list, configuration and link, then the default configuration; one transaction."""
    domain_id = conn.scalar(text(
        "INSERT INTO domains (name, comments, defaultconfig, crawlertraps, edition, alias, lastaliasupdate) "
        "VALUES (:name, '', -1, '', 1, NULL, NULL) RETURNING domain_id"), {"name": name})
    seedlist_id = conn.scalar(text(
        "INSERT INTO seedlists (name, comments, domain_id, seeds) VALUES ('defaultseeds', '', :d, :seeds) "
        "RETURNING seedlist_id"), {"d": domain_id, "seeds": f"http://www.{name}/"})
    config_id = conn.scalar(text(
        "INSERT INTO configurations (name, comments, domain_id, template_id, maxobjects, maxrate, maxbytes) "
        "VALUES ('defaultconfig', '', :d, (SELECT template_id FROM ordertemplates WHERE name = :t), -1, 60, "
        "1000000000) RETURNING config_id"), {"d": domain_id, "t": template})
    conn.execute(text("INSERT INTO config_seedlists (config_id, seedlist_id) VALUES (:c, :s)"),
                 {"c": config_id, "s": seedlist_id})
    conn.execute(text(
        "UPDATE domains SET defaultconfig = (SELECT config_id FROM configurations "
        "WHERE configurations.name = 'defaultconfig' AND configurations.domain_id = :d) WHERE domain_id = :d"),
        {"d": domain_id})
    return domain_id, config_id


def write_netarchivesuite_rows(engine: Engine, orderxml: str) -> None:
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO ordertemplates (name, orderxml, isactive) VALUES ('default_orderxml', :x, "
                          "true)"), {"x": orderxml})
        for name, unit in (("Once a day", 2), ("Once a week", 3), ("Once a month", 4), ("Once an hour", 1)):
            conn.execute(text(
                "INSERT INTO schedules (name, comments, startdate, enddate, maxrepeats, timeunit, numtimeunits, "
                "anytime, onminute, onhour, ondayofweek, ondayofmonth, edition) "
                "VALUES (:n, '', NULL, NULL, NULL, :u, 1, true, NULL, NULL, NULL, NULL, 1)"), {"n": name, "u": unit})
        conn.execute(text("INSERT INTO harvestchannel (name, issnapshot, isdefault, comments) VALUES "
                          "('LOWPRIORITY', true, true, 'snapshot harvests'), "
                          "('HIGHPRIORITY', false, true, 'selective harvests')"))
    with engine.begin() as conn:
        kb_domain, kb_config = create_domain(conn, "kb.dk")
        dr_domain, dr_config = create_domain(conn, "dr.dk")
        conn.execute(text("INSERT INTO passwords (name, comments, domain_id, url, realm, username, password) "
                          "VALUES ('pw', '', :d, 'http://kb.dk/', 'realm', 'user', 'secret')"), {"d": kb_domain})
        conn.execute(text("INSERT INTO ownerinfo (domain_id, created, info) VALUES (:d, '2020-01-01', 'whois')"),
                     {"d": kb_domain})
        conn.execute(text(
            "INSERT INTO eav_attribute (tree_id, entity_id, type_id, val_int) VALUES (2, :c, 1, 5)"), {"c": kb_config})
        # HarvestDefinitionDBDAO.create: harvest_id max + 1, no channel_id
        conn.execute(text(
            "INSERT INTO harvestdefinitions (harvest_id, name, comments, numevents, submitted, isactive, edition, "
            "audience) VALUES (1, 'broad', '', 1, '2020-01-01 10:00', true, 1, NULL), "
            "(2, 'news', '', 0, '2020-02-01 10:00', true, 1, 'public')"))
        conn.execute(text("INSERT INTO fullharvests (harvest_id, maxobjects, maxbytes, maxjobrunningtime, previoushd, "
                          "isindexready) VALUES (1, -1, 500000000, 0, NULL, false)"))
        conn.execute(text(
            "INSERT INTO partialharvests (harvest_id, schedule_id, nextdate, crawlertraps) VALUES "
            "(2, (SELECT schedule_id FROM schedules WHERE name = 'Once a day'), '2026-11-23 06:00', '')"))
        conn.execute(text("INSERT INTO harvest_configs (harvest_id, config_id) VALUES (2, :c)"), {"c": dr_config})
        # JobDBDAO.create: the id assigned in code, the channel by name
        conn.execute(text(
            "INSERT INTO jobs (job_id, harvest_id, status, channel, snapshot, forcemaxcount, forcemaxbytes, "
            "forcemaxrunningtime, orderxml, orderxmldoc, seedlist, harvest_num, startdate, enddate, submitteddate, "
            "creationdate, num_configs, edition, resubmitted_as_job, continuationof, harvestname_prefix) VALUES "
            "(41, 1, 3, 'LOWPRIORITY', true, -1, 500000000, 0, 'default_orderxml', :x, 'http://www.kb.dk/', 0, "
            "'2020-01-02', '2020-01-03', '2020-01-01 11:00', '2020-01-01 10:30', 1, 3, NULL, NULL, '41-1')"),
            {"x": orderxml})
        conn.execute(text("INSERT INTO job_configs (job_id, config_id) VALUES (41, :c)"), {"c": kb_config})
        conn.execute(text(
            "INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id, harvest_id, job_id, "
            "harvest_time) VALUES (0, 120, 4500000, :c, 1, 41, '2020-01-03 12:00')"), {"c": kb_config})
        # ExtendedFieldDBDAO: integer flags, options beyond 50 characters, format and default left NULL
        conn.execute(text(
            "INSERT INTO extendedfield (extendedfield_id, extendedfieldtype_id, name, format, defaultvalue, options, "
            "datatype, mandatory, sequencenr, maxlen, historize) VALUES "
            "(1, 1, 'Curator', NULL, NULL, :options, 6, 1, 1, 100, 0)"), {"options": LONG_OPTIONS})
        conn.execute(text(
            "INSERT INTO extendedfieldvalue (extendedfieldvalue_id, extendedfield_id, content, instance_id) "
            "VALUES ((SELECT coalesce(max(extendedfieldvalue_id), 0) + 1 FROM extendedfieldvalue), 1, 'option007', "
            ":d)"), {"d": kb_domain})
        conn.execute(text("INSERT INTO global_crawler_trap_lists (name, description, isactive) "
                          "VALUES ('calendars', '', true)"))
        conn.execute(text("INSERT INTO global_crawler_trap_expressions (crawler_trap_list_id, trap_expression) "
                          "VALUES (currval('global_crawler_trap_list_id_seq'), '.*calendar.*'), "
                          "(currval('global_crawler_trap_list_id_seq'), NULL)"))
        # RunningJobsInfoDBDAO: numeric progress and docs per second, totalbyteswritten in both tables
        values = ("41, 'broad', 'http://h1:8443', 37.5123456789012345, 10, 5, 2, 0, 1, 600, 0, 120, 55, 50, "
                  "3.75, 2.125, 4, 3, 4500000, '2020-01-02 12:00'")
        columns = ("jobid, harvestname, hosturl, progress, queuedfilescount, totalqueuescount, activequeuescount, "
                   "retiredqueuescount, exhaustedqueuescount, elapsedseconds, alertscount, downloadedfilescount, "
                   "currentprocessedkbpersec, processedkbpersec, currentprocesseddocspersec, processeddocspersec, "
                   "activetoecount, status, totalbyteswritten, tstamp")
        conn.execute(text(f"INSERT INTO runningjobsmonitor ({columns}) VALUES ({values})"))
        conn.execute(text(f"INSERT INTO runningjobshistory ({columns}) VALUES ({values})"))
        conn.execute(text(
            "INSERT INTO frontierreportmonitor (jobid, filterid, tstamp, domainname, currentsize, totalenqueues, "
            "sessionbalance, lastcost, averagecost, lastdequeuetime, waketime, totalspend, totalbudget, errorcount, "
            "lastpeekuri, lastqueueduri) VALUES (41, 'all', '2020-01-02 12:00', 'kb.dk', 3, 10, 0, 1.5, 0.3333, "
            "'', '', 12, 0, 0, 'http://www.kb.dk/a', 'http://www.kb.dk/b')"))
    with engine.begin() as conn:
        # untidy data a long-lived site has: a job of a deleted harvest definition
        conn.execute(text(
            "INSERT INTO jobs (job_id, harvest_id, status, channel, snapshot, orderxml, orderxmldoc, seedlist, "
            "harvest_num, edition) VALUES (40, 999, 4, 'HIGHPRIORITY', false, 'default_orderxml', '', '', 0, 1)"))


def nas_rows(conn: Connection, like: dict[str, dict[str, object]] | None = None) -> dict[str, dict[str, object]]:
    """Every NetarchiveSuite table's rows as text (types may widen), by column name: the columns of ``like``
    (NetarchiveSuite's, as found before the upgrade), or all of them."""
    rows = {}
    for table in NAS_TABLES:
        if like is not None:
            columns = list(like[table]["columns"])
        else:
            columns = conn.execute(text(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = :t ORDER BY ordinal_position"), {"t": table}).scalars().all()
        listed = ", ".join(f"{c}::text" for c in columns)
        found = [tuple(r) for r in conn.execute(text(f"SELECT {listed} FROM {table} ORDER BY 1, 2"))]
        rows[table] = {"columns": tuple(columns), "rows": found}
    return rows


@contextmanager
def netarchivesuite_database(nas_ddl: str) -> Iterator[tuple[str, Engine, dict[str, dict[str, object]]]]:
    orderxml = (ROOT / "templates" / "default_orderxml.cxml").read_text("utf-8")
    with new_database() as name:
        psql(name, stdin=nas_ddl)
        engine = open_engine(url_of(name))
        try:
            write_netarchivesuite_rows(engine, orderxml)
            with engine.connect() as conn:
                before = nas_rows(conn)
            yield name, engine, before
        finally:
            engine.dispose()


def check_harvestsuite_works_on(engine: Engine, before: dict[str, dict[str, object]], tmp_path: Path) -> None:
    with engine.connect() as conn:
        after = nas_rows(conn, like=before)
        for table in before:
            assert after[table] == before[table], table
        # the channels and schedules that came with the data are the defaults; db init adds none
        channels = sorted(conn.execute(text("SELECT name FROM harvestchannel")).scalars())
    assert init_database(engine) == "up to date"
    with engine.connect() as conn:
        assert sorted(conn.execute(text("SELECT name FROM harvestchannel")).scalars()) == channels == [
            "HIGHPRIORITY", "LOWPRIORITY"]
        assert conn.scalar(text("SELECT count(*) FROM schedules WHERE name LIKE 'Once%'")) == 4
        # the extended field reads as NetarchiveSuite wrote it
        from harvestdef.model.definitions import ExtendedFieldType
        from harvestdef.repositories.extendedfields import ExtendedFieldRepository
        fields = ExtendedFieldRepository(conn).fields_of(ExtendedFieldType.DOMAINS)
        assert (fields[0].mandatory, fields[0].defaultvalue, len(fields[0].options)) == (True, "", 60)
        # the monitor rows keep their fractions (NUMERIC there and here)
        m, f = s.runningjobsmonitor, s.frontierreportmonitor
        progress = conn.execute(select(m.c.progress, m.c.processeddocspersec, m.c.totalbyteswritten)).one()
        assert tuple(progress) == (pytest.approx(37.5123456789), 2.125, 4500000)
        assert tuple(conn.execute(select(f.c.lastcost, f.c.averagecost)).one()) == (1.5, pytest.approx(0.3333))
    # HarvestSuite's own ids continue past NetarchiveSuite's
    with engine.begin() as conn:
        new_id = conn.execute(insert(s.extendedfieldvalue).values(
            extendedfield_id=1, instance_id=2, content="option001")).inserted_primary_key[0]
        assert new_id == 2
        conn.execute(text("DELETE FROM extendedfieldvalue WHERE extendedfieldvalue_id = 2"))
    # NetarchiveSuite's way of creating a domain still works (the -1 is checked at commit)
    with engine.begin() as conn:
        create_domain(conn, "statsbiblioteket.dk")
    listing = tmp_path / "domains.txt"
    listing.write_text("netarkivet.dk\nkb.dk\nhttps://www.bibliotek.dk/\n", "utf-8")
    url = engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(cli, ["--set", f"harvestsuite.database.url={url}", "domains", "import", str(listing)])
    assert result.exit_code == 0, result.output
    snapshot = generate_jobs(engine, "broad", GenerationOptions(), NOW)
    selective = generate_jobs(engine, "news", GenerationOptions(), NOW)
    assert snapshot.harvest_num == 2 and min(snapshot.job_ids) > 41
    assert min(selective.job_ids) > max(snapshot.job_ids)
    with engine.connect() as conn:
        channel = dict(conn.execute(select(s.jobs.c.job_id, s.jobs.c.channel).where(s.jobs.c.job_id > 41)).all())
        assert {channel[i] for i in snapshot.job_ids} == {"LOWPRIORITY"}
        assert {channel[i] for i in selective.job_ids} == {"HIGHPRIORITY"}
        # kb.dk's configuration has NetarchiveSuite's EAV value MAX_HOPS = 5, the others the default 20
        seeds_and_order = conn.execute(select(s.jobs.c.seedlist, s.jobs.c.orderxmldoc).where(
            s.jobs.c.job_id.in_(snapshot.job_ids))).all()
        hops = {("kb.dk" in seeds): re.search(r'name="maxHops" value="(\d+)"', order).group(1)
                for seeds, order in seeds_and_order}
        assert hops == {True: "5", False: "20"}
        names = set(conn.scalars(select(s.domains.c.name)))
        assert {"kb.dk", "dr.dk", "statsbiblioteket.dk", "netarkivet.dk", "bibliotek.dk"} <= names


def test_db_init_on_a_netarchivesuite_database_says_to_upgrade_and_changes_nothing(nas_ddl):
    with netarchivesuite_database(nas_ddl) as (_name, engine, before):
        with pytest.raises(DatabaseError, match="db upgrade"):
            init_database(engine)
        with engine.connect() as conn:
            assert nas_rows(conn) == before
            assert not conn.scalar(text("SELECT to_regclass('audit_log') IS NOT NULL"))


def test_dry_run_prints_the_statements_and_changes_nothing(nas_ddl):
    with netarchivesuite_database(nas_ddl) as (name, engine, before):
        result = upgrade_database(engine, dry_run=True)
        assert any(st.startswith("CREATE TABLE audit_log") for st in result.statements)
        assert any("NOT VALID" in st for st in result.statements)
        printed = CliRunner().invoke(cli, ["--set", f"harvestsuite.database.url={url_of(name)}", "db", "upgrade",
                                           "--sql"])
        assert printed.exit_code == 0, printed.output
        assert "CREATE TABLE audit_log" in printed.output and "rolled back, nothing changed" in printed.output
        with engine.connect() as conn:
            assert not conn.scalar(text("SELECT to_regclass('audit_log') IS NOT NULL"))
            assert nas_rows(conn) == before


def test_db_upgrade_takes_over_a_netarchivesuite_database_in_place(nas_ddl, tmp_path):
    with netarchivesuite_database(nas_ddl) as (_name, engine, before):
        result = upgrade_database(engine)
        assert result.done.startswith("took over a NetarchiveSuite database")
        findings = "\n".join(result.findings)
        # the job of a deleted harvest definition is kept and named; its foreign key checks new rows only
        assert "jobs_harvest_id_fkey added NOT VALID" in findings and "jobs.job_id 40" in findings
        assert "orphan rows: 1 row(s) of jobs whose harvest_id names no harvestdefinitions" in findings
        with engine.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == head_revision()
            assert compare_metadata(MigrationContext.configure(conn, opts=s.compare_options()), s.metadata) == []
            indexes = set(conn.scalars(text("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")))
            assert {"ownerinfodomain", "passworddomain", "passwordname", "gctexprlistid",
                    "runningjobshistorycrawltime", "domainnameid"} <= indexes
        check_harvestsuite_works_on(engine, before, tmp_path)


def test_a_data_only_dump_loads_into_createfullhddb_and_upgrades(nas_ddl, tmp_path):
    with netarchivesuite_database(nas_ddl) as (nas_name, nas_engine, before):
        dump = pg_dump(nas_name)
    with new_database() as name:
        psql(name, "-f", str(ROOT / "sql" / "createfullhddb.sql"))
        psql(name, stdin=dump)
        engine = open_engine(url_of(name))
        try:
            result = CliRunner().invoke(cli, ["--set", f"harvestsuite.database.url={url_of(name)}", "db", "upgrade"])
            assert result.exit_code == 0, result.output
            assert "orphan rows: 1 row(s) of jobs" in result.output
            assert "sequence extendedfieldvalue_id_seq moved past" in result.output
            check_harvestsuite_works_on(engine, before, tmp_path)
        finally:
            engine.dispose()


def test_upgrade_of_a_harvestsuite_database_renames_its_sequences_keeping_their_values(postgresql_url):
    from alembic import command

    from harvestdef.db.init import alembic_config

    engine = open_engine(postgresql_url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0006_summary_index")
            conn.execute(text("INSERT INTO harvestchannel (name, issnapshot, isdefault) VALUES ('A', true, true)"))
            assert conn.scalar(text("SELECT last_value FROM harvestchannel_id_seq")) == 1
            conn.execute(text("INSERT INTO domains (name, edition) VALUES ('kb.dk', 1), ('dr.dk', 1)"))
        upgrade_database(engine)
        with engine.begin() as conn:
            assert conn.scalar(text("SELECT to_regclass('domains_domain_id_seq')")) is None
            assert conn.scalar(text("SELECT last_value FROM domains_id_seq")) == 2
            assert conn.scalar(text("INSERT INTO domains (name, edition) VALUES ('sb.dk', 1) RETURNING domain_id")) == 3
    finally:
        engine.dispose()

