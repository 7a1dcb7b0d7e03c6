"""Bulk import of domains on SQLite and PostgreSQL: rows and seeds, odd lines, reruns, interruptions, the CLI."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, func, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from harvestdef import bulkimport
from harvestdef.bulkimport import BadLine, DomainImporter, TakenLine, domain_of_line, seeds_of
from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from harvestdef.domainnames import default_seeds, domain_of_url
from harvestdef.errors import DomainNameError, NotFoundError, RefusedLinesError
from harvestdef.repositories.domains import DomainDefaults
from harvestdef.settings import Settings
from tests.dblocks import writers_held

DEFAULTS = DomainDefaults.from_settings(Settings())

GOOD_LINES = {
    "example.dk": "example.dk",
    "www.example.dk": "example.dk",
    "http://news.bbc.co.uk/world/": "bbc.co.uk",
    "HTTPS://WWW.Kb.DK:443/x?y=z": "kb.dk",
    "københavn.dk": "københavn.dk",
    "http://www.xn--kbenhavn-54a.dk/": "københavn.dk",
    "127.0.0.1": "127.0.0.1",
    "http://10.1.2.3:8080/": "10.1.2.3",
    "user.github.io": "user.github.io",
    "http://www.gov.pl/web/": "www.gov.pl",
}
BAD_LINES = ["co.uk", "foo", "bad..name.dk", "-dash.dk", "http://", "under_score.dk"]


def ensure_template(engine: Engine) -> None:
    """db init loads templates/*.cxml; while that directory lacks default_orderxml, add a minimal one."""
    with engine.begin() as conn:
        if not conn.scalar(select(func.count()).select_from(s.ordertemplates)
                           .where(s.ordertemplates.c.name == DEFAULTS.template_name)):
            conn.execute(insert(s.ordertemplates).values(name=DEFAULTS.template_name, orderxml="<beans/>"))


def as_from_a_terminal(command: list[str]) -> list[str]:
    """``command`` with SIGINT at its default, as a shell in a terminal starts it: a test suite started in the
    background of a shell without job control (a CI runner, ``nohup``) has SIGINT ignored, its children
    inherit that, and Python then installs no KeyboardInterrupt for Ctrl-C (coreutils' env resets it)."""
    return ["env", "--default-signal=INT", *command]


def interrupt_mid_import(process: subprocess.Popen, engine: Engine, committed: Callable[[], bool],
                         within: float = 600) -> str:
    """Ctrl-C an import process once ``committed()`` says enough of its batches are in, and before its last
    one: the other writers are held while the signal is sent, so the batch the import is writing waits for
    them and the interrupt meets it before its commit, however fast or slow the machine; its stderr."""
    try:
        deadline = time.monotonic() + within
        while not committed() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, f"the import ended before it was interrupted:\n{process.stderr.read()}"
        assert committed(), f"no batch committed within {within} s"
        with writers_held(engine):
            process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return stderr


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def complete_domains(engine: Engine) -> dict[str, dict]:
    """Every domain with its default configuration and that configuration's seed lists."""
    query = (select(s.domains.c.name, s.domains.c.defaultconfig, s.configurations.c.name.label("config"),
                    s.configurations.c.maxbytes, s.configurations.c.maxobjects, s.configurations.c.maxrate,
                    s.configurations.c.template_id, s.seedlists.c.name.label("seedlist"), s.seedlists.c.seeds,
                    s.seedlists.c.domain_id.label("seedlist_domain"), s.domains.c.domain_id)
             .select_from(s.domains)
             .join(s.configurations, s.configurations.c.config_id == s.domains.c.defaultconfig)
             .join(s.config_seedlists, s.config_seedlists.c.config_id == s.configurations.c.config_id)
             .join(s.seedlists, s.seedlists.c.seedlist_id == s.config_seedlists.c.seedlist_id))
    with engine.connect() as conn:
        rows = [dict(row) for row in conn.execute(query).mappings()]
    by_name = {row["name"]: row for row in rows}
    assert len(by_name) == len(rows), "a domain has more than one default seed list link"
    return by_name


def count(engine: Engine, table: str) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(s.metadata.tables[table])) or 0


@pytest.mark.parametrize("line", [*GOOD_LINES, *BAD_LINES, "ab--cd.dk", "xn--zz.dk", "www.example.dk.",
                                  "1.2.3.4.dk", "a.b", "ftp://ftp.example.org/pub", "http://user@example.com/",
                                  "EXAMPLE.COM", "x" * 64 + ".dk", "example.123", "kb.dk:0/", "kb.dk:65536",
                                  "kb.dk/a b", "kb.dk/\x00", "kb.dk/" + "x" * 3000, "http://kb.dk:8080/ø"])
def test_fast_path_agrees_with_domain_of_url(line: str) -> None:
    """The fast path answers what the general rule (domain_of_typed, here through domain_of_url) answers."""
    try:
        expected = domain_of_url(line)
    except DomainNameError:
        with pytest.raises(DomainNameError):
            domain_of_line(line)
        return
    assert domain_of_line(line) == expected
    assert seeds_of(expected) == "\n".join(default_seeds(expected))


def test_import_creates_domains_with_configuration_and_seed_list(engine: Engine, tmp_path: Path) -> None:
    ensure_template(engine)
    path = write_lines(tmp_path / "domains.txt", ["# a curator's list", "", *GOOD_LINES])
    counts = DomainImporter(engine, DEFAULTS, actor="curator").run(path)
    expected = sorted(set(GOOD_LINES.values()))
    assert (counts.lines_read, counts.domains_created, counts.duplicates_in_file, counts.bad_lines) == (
        len(GOOD_LINES) + 2, len(expected), len(GOOD_LINES) - len(expected), 0)
    assert counts.complete and counts.already_present == 0
    domains = complete_domains(engine)
    assert sorted(domains) == expected
    with engine.connect() as conn:
        template_id = conn.scalar(select(s.ordertemplates.c.template_id)
                                  .where(s.ordertemplates.c.name == DEFAULTS.template_name))
    for name, row in domains.items():
        assert row["config"] == DEFAULTS.config_name and row["seedlist"] == DEFAULTS.seedlist_name
        assert (row["maxbytes"], row["maxobjects"], row["maxrate"], row["template_id"]) == (
            DEFAULTS.maxbytes, DEFAULTS.maxobjects, DEFAULTS.maxrate, template_id)
        assert row["seedlist_domain"] == row["domain_id"]
        assert row["seeds"].split("\n") == default_seeds(name)
    assert domains["københavn.dk"]["seeds"].startswith("http://www.xn--kbenhavn-54a.dk\n")
    assert domains["127.0.0.1"]["seeds"] == "http://127.0.0.1\nhttps://127.0.0.1"
    assert count(engine, "domains") == count(engine, "configurations") == count(engine, "seedlists") == len(expected)
    with engine.connect() as conn:
        audit = conn.execute(select(s.audit_log).where(s.audit_log.c.action == "import")).mappings().one()
    assert audit["actor"] == "curator" and audit["tablename"] == "domains"
    assert json.loads(audit["after"])["domains_created"] == len(expected)
    assert json.loads(audit["after"])["complete"] is True


def test_bad_lines_are_reported_with_line_numbers_and_nothing_is_imported(engine: Engine, tmp_path: Path) -> None:
    ensure_template(engine)
    lines = ["good-one.dk", *BAD_LINES, "good-two.se"]
    path = write_lines(tmp_path / "mixed.txt", lines)
    with path.open("ab") as stream:
        stream.write(b"caf\xe9.fr\n")  # Latin-1, not UTF-8
    reported: list[BadLine] = []
    with pytest.raises(RefusedLinesError) as refused:
        DomainImporter(engine, DEFAULTS, on_bad_line=reported.append).run(path)
    assert [(bad.line_number, bad.text) for bad in reported] == [
        *((number, line) for number, line in enumerate(BAD_LINES, start=2)), (len(lines) + 1, "caf\ufffd.fr")]
    assert str(reported[0]) == f"{path}:2: co.uk: {reported[0].reason}" and "public suffix" in reported[0].reason
    assert "UTF-8" in reported[-1].reason
    assert refused.value.total == len(BAD_LINES) + 1 and refused.value.field == "file"
    assert [(r.line, r.reason) for r in refused.value.refusals] == [(b.line_number, b.reason) for b in reported]
    assert count(engine, "domains") == count(engine, "seedlists") == count(engine, "audit_log") == 0


def test_second_run_creates_nothing(engine: Engine, tmp_path: Path) -> None:
    ensure_template(engine)
    path = write_lines(tmp_path / "domains.txt", [f"site{number}.dk" for number in range(50)])
    first = DomainImporter(engine, DEFAULTS, batch_size=16).run(path)
    second = DomainImporter(engine, DEFAULTS, batch_size=16).run(path)
    assert (first.domains_created, first.batches) == (50, 4)
    assert (second.domains_created, second.already_present, second.repaired) == (0, 50, 0)
    assert count(engine, "domains") == count(engine, "configurations") == count(engine, "config_seedlists") == 50
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).where(s.audit_log.c.action == "import")) == 2


def test_sqlite_batches_that_held_the_lock_too_long_make_the_next_smaller(engine: Engine, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch that held SQLite's write lock longer than _SQLITE_HOLD_SECONDS (here: any) makes the next one
    smaller, down to the smallest batch, so the writers beside an import on a loaded machine get their turn
    as often as on a quiet one; nothing is lost or doubled by the change of size."""
    if engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's batches are ordinary transactions beside the other writers")
    ensure_template(engine)
    monkeypatch.setattr(bulkimport, "_SQLITE_HOLD_SECONDS", 1e-9)
    monkeypatch.setattr(bulkimport, "_SQLITE_SMALLEST_BATCH", 10)
    names = [f"slow{number}.dk" for number in range(100)]
    path = write_lines(tmp_path / "domains.txt", names)
    counts = DomainImporter(engine, DEFAULTS, batch_size=40).run(path)
    # 40, then the smallest batch of 10 six times
    assert (counts.domains_created, counts.batches, counts.complete) == (100, 7, True)
    assert sorted(complete_domains(engine)) == sorted(names)


def test_interrupted_import_is_completed_by_a_rerun(engine: Engine, tmp_path: Path) -> None:
    ensure_template(engine)
    names = [f"news{number}.dk" for number in range(40)]
    path = write_lines(tmp_path / "domains.txt", [f"http://www.{name}/" for name in names])
    stopped = DomainImporter(engine, DEFAULTS, batch_size=15, stop_after_batches=1).run(path)
    assert (stopped.batches, stopped.domains_created, stopped.complete) == (1, 15, False)
    assert len(complete_domains(engine)) == 15
    with engine.connect() as conn:
        audit = json.loads(conn.scalar(select(s.audit_log.c.after).where(s.audit_log.c.action == "import")))
    assert audit["complete"] is False and audit["domains_created"] == 15
    rerun = DomainImporter(engine, DEFAULTS, batch_size=15).run(path)
    assert (rerun.domains_created, rerun.already_present, rerun.complete) == (25, 15, True)
    assert sorted(complete_domains(engine)) == sorted(names)
    assert count(engine, "domains") == count(engine, "configurations") == count(engine, "seedlists") == 40


def test_half_created_domains_are_repaired(engine: Engine, tmp_path: Path) -> None:
    ensure_template(engine)
    with engine.begin() as conn:
        bare = conn.execute(insert(s.domains).values(name="bare.dk", edition=1)).inserted_primary_key[0]
        template_id = conn.scalar(select(s.ordertemplates.c.template_id)
                                  .where(s.ordertemplates.c.name == DEFAULTS.template_name))
        half = conn.execute(insert(s.domains).values(name="half.dk", edition=1)).inserted_primary_key[0]
        conn.execute(insert(s.configurations).values(name=DEFAULTS.config_name, domain_id=half,
                                                     template_id=template_id, maxobjects=-1, maxbytes=5))
    path = write_lines(tmp_path / "domains.txt", ["bare.dk", "www.half.dk", "new.dk"])
    counts = DomainImporter(engine, DEFAULTS).run(path)
    assert (counts.domains_created, counts.already_present, counts.repaired) == (1, 2, 2)
    domains = complete_domains(engine)
    assert sorted(domains) == ["bare.dk", "half.dk", "new.dk"]
    assert domains["bare.dk"]["domain_id"] == bare
    assert domains["half.dk"]["maxbytes"] == 5  # its existing configuration is kept, not duplicated
    assert count(engine, "configurations") == 3 and count(engine, "seedlists") == 3


def test_missing_template_is_a_clear_error(engine: Engine, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "domains.txt", ["example.dk"])
    defaults = DomainDefaults(template_name="no_such_template")
    with pytest.raises(NotFoundError, match="no_such_template"):
        DomainImporter(engine, defaults).run(path)
    assert count(engine, "domains") == 0


@pytest.mark.postgres
def test_bulk_path_restores_indexes_and_constraints(postgresql_url: str, tmp_path: Path) -> None:
    engine = open_engine(postgresql_url)
    try:
        init_database(engine)
        ensure_template(engine)
        with engine.connect() as conn:
            before = list(conn.scalars(CATALOG))
        path = write_lines(tmp_path / "domains.txt", [f"bulk{number}.dk" for number in range(300)])
        counts = DomainImporter(engine, DEFAULTS, batch_size=100, rebuild_indexes=True).run(path)
        assert counts.domains_created == 300 and counts.batches == 3
        with engine.connect() as conn:
            assert list(conn.scalars(CATALOG)) == before
        assert len(complete_domains(engine)) == 300
    finally:
        engine.dispose()


def harvestsuite(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("harvestsuite") or str(Path(sys.executable).with_name("harvestsuite"))
    return subprocess.run([script, "--set", f"harvestsuite.database.url={database_url}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_cli_exit_status_and_output(engine: Engine, database_url: str, tmp_path: Path) -> None:
    ensure_template(engine)
    clean = write_lines(tmp_path / "clean.txt", ["example.dk", "www.example.dk", "kb.dk"])
    result = harvestsuite(database_url, "domains", "import", str(clean), "--actor", "alice")
    assert result.returncode == 0, result.stderr
    assert ("lines read: 3, domains created: 2, already present: 0 (repaired: 0), duplicates in file: 1, "
            "bad lines: 0, taken as their registered domain: 1") in result.stdout
    mixed = write_lines(tmp_path / "mixed.txt", ["kb.dk", "co.uk", "new.dk"])
    result = harvestsuite(database_url, "domains", "import", str(mixed))
    assert result.returncode == 1
    assert f"{mixed}:2: co.uk: the host 'co.uk' is a public suffix" in result.stderr
    assert f"{mixed}: 1 bad line(s), reported above; nothing was imported" in result.stderr
    assert sorted(complete_domains(engine)) == ["example.dk", "kb.dk"]
    result = harvestsuite(database_url, "domains", "import", str(write_lines(mixed, ["kb.dk", "new.dk"])))
    assert result.returncode == 0 and "domains created: 1, already present: 1" in result.stdout
    with engine.connect() as conn:
        actors = list(conn.scalars(select(s.audit_log.c.actor).where(s.audit_log.c.action == "import")
                                   .order_by(s.audit_log.c.audit_id)))
    assert actors == ["alice", "system"]


def test_parallel_parsing_and_parts_give_the_same_result(engine: Engine, tmp_path: Path) -> None:
    """Worker processes and a batch written in parts: same line numbers, same rows as the plain path."""
    ensure_template(engine)
    lines = []
    for number in range(120):
        lines.append(f"https://www.site{number}.dk/" if number % 3 else f"site{number}.dk")
        if number % 25 == 0:
            lines += ["co.uk", f"site{number}.dk", f"ærø{number}.dk"]
    path = write_lines(tmp_path / "domains.txt", lines)
    reported: list[BadLine] = []
    taken: list[TakenLine] = []
    importer = DomainImporter(engine, DEFAULTS, parse_workers=1, parallel_from_bytes=0, copy_size=7,
                              batch_size=40, on_bad_line=reported.append, on_note=taken.append)
    with pytest.raises(RefusedLinesError):
        importer.run(path)
    assert [bad.line_number for bad in reported] == [number for number, line in enumerate(lines, 1)
                                                     if line == "co.uk"]
    assert count(engine, "domains") == 0
    lines = [line for line in lines if line != "co.uk"]
    counts = importer.run(write_lines(path, lines))
    assert (counts.lines_read, counts.domains_created, counts.duplicates_in_file, counts.bad_lines) == (
        len(lines), 125, 5, 0)
    assert counts.taken_as_domain == len(taken) == sum(line.startswith("https://") for line in lines)
    assert str(taken[0]) == f"{path}:4: https://www.site1.dk/ was taken as site1.dk"
    domains = complete_domains(engine)
    assert len(domains) == 125 and domains["ærø0.dk"]["seeds"].split("\n") == default_seeds("ærø0.dk")


def test_sigint_then_rerun_leaves_exactly_one_complete_domain_per_name(
        engine: Engine, database_url: str, tmp_path: Path) -> None:
    """Ctrl-C a real import process after its first batch, then run it again."""
    ensure_template(engine)
    names = [f"signal{number}.dk" for number in range(60_000)]
    path = write_lines(tmp_path / "domains.txt", names)
    script = shutil.which("harvestsuite") or str(Path(sys.executable).with_name("harvestsuite"))
    # small batches: hundreds of commits, so the import is still running when the first is seen
    process = subprocess.Popen(as_from_a_terminal([script, "--set", f"harvestsuite.database.url={database_url}",
                                                   "domains", "import", str(path), "--batch-size", "200"]),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr = interrupt_mid_import(process, engine, lambda: count(engine, "domains") > 0)
    assert process.returncode == 130, stderr
    assert "run the same import again" in stderr
    interrupted = count(engine, "domains")
    assert 0 < interrupted < len(names)
    assert len(complete_domains(engine)) == interrupted  # every committed domain is complete
    result = harvestsuite(database_url, "domains", "import", str(path))
    assert result.returncode == 0, result.stderr
    assert f"domains created: {len(names) - interrupted}, already present: {interrupted}" in result.stdout
    assert sorted(complete_domains(engine)) == sorted(names)
    assert count(engine, "configurations") == count(engine, "seedlists") == len(names)


CATALOG = text(
    "SELECT conname || ' ' || pg_get_constraintdef(oid) || ' ' || convalidated FROM pg_constraint "
    "WHERE conrelid IN ('domains'::regclass, 'configurations'::regclass, 'seedlists'::regclass, "
    "'config_seedlists'::regclass) UNION ALL SELECT indexdef FROM pg_indexes "
    "WHERE schemaname = current_schema() AND tablename IN ('domains', 'configurations', 'seedlists', "
    "'config_seedlists') ORDER BY 1")


@pytest.mark.postgres
def test_bulk_path_without_superuser_drops_and_restores_foreign_keys(postgresql_database: str,
                                                                     tmp_path: Path) -> None:
    """A role that may not turn triggers off: the foreign keys are dropped, restored and validated."""
    suffix = uuid.uuid4().hex[:8]
    role, schema = f"hs_importer_{suffix}", f"importer_{suffix}"
    owner = create_engine(postgresql_database, isolation_level="AUTOCOMMIT")
    with owner.connect() as conn:
        conn.execute(text(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER'))
        conn.execute(text(f'CREATE SCHEMA "{schema}" AUTHORIZATION "{role}"'))
    url = make_url(postgresql_database).set(username=role).update_query_dict(
        {"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
    engine = open_engine(url)
    try:
        init_database(engine)
        ensure_template(engine)
        with engine.connect() as conn:
            before = list(conn.scalars(CATALOG))
        path = write_lines(tmp_path / "domains.txt", [f"plain{number}.dk" for number in range(200)])
        counts = DomainImporter(engine, DEFAULTS, batch_size=150, rebuild_indexes=True).run(path)
        assert (counts.domains_created, counts.batches) == (200, 2)
        with engine.connect() as conn:
            assert list(conn.scalars(CATALOG)) == before
        assert len(complete_domains(engine)) == 200
    finally:
        engine.dispose()
        with owner.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            conn.execute(text(f'DROP ROLE "{role}"'))
        owner.dispose()


def test_constraints_set_aside_come_back_the_same(postgresql_url: str) -> None:
    """harvestdef.bulkload drops foreign keys, unique constraints and secondary indexes and restores them
    exactly, in one transaction (the domain import and job generation rely on it)."""
    from harvestdef.bulkload import constraints_set_aside, lock_tables_nowait

    engine = open_engine(postgresql_url)
    init_database(engine)
    tables = ["domains", "configurations", "seedlists", "config_seedlists"]
    definitions = text(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = ANY(CAST(:t AS regclass[])) UNION ALL SELECT indrelid::regclass::text, "
        "indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
        "WHERE indrelid = ANY(CAST(:t AS regclass[])) ORDER BY 1, 2, 3")
    try:
        with engine.begin() as conn:
            before = conn.execute(definitions, {"t": tables}).all()
            # the domains' trigram indexes are GIN: restored with their access method and operator class
            assert sum("USING gin" in row[2] and "gin_trgm_ops" in row[2] for row in before) == 3
            assert lock_tables_nowait(conn, [(table, "SHARE ROW EXCLUSIVE") for table in tables])
            with constraints_set_aside(conn, tables):
                left = conn.execute(definitions, {"t": tables}).all()
                assert {row[1] for row in left if "_pkey" not in row[1]} == set()
            assert conn.execute(definitions, {"t": tables}).all() == before
    finally:
        engine.dispose()


def test_a_database_error_raised_while_handling_ctrl_c_counts_as_the_interrupt() -> None:
    # Ctrl-C inside psycopg's COPY leaves the connection busy, and the rollback on the way out fails: that
    # error is raised while the KeyboardInterrupt is handled, and must not turn the interrupt into exit 2
    from harvestdef.bulkimport import _interrupted

    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OperationalError("ROLLBACK", {}, Exception("another command is already in progress"))  # noqa: B904
    except OperationalError as exc:
        assert _interrupted(exc)
    assert not _interrupted(OperationalError("SELECT 1", {}, Exception("server closed the connection")))
