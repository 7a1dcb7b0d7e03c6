"""The `harvestsuite` command as a person runs it: a real subprocess, its output and exit status."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from sqlalchemy import create_engine, select

from harvestdef.db import schema as s


def run(*args: str, cwd=None, env_extra=None, input_text=None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTSUITE")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "harvestdef", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120, input=input_text)


def test_db_init_creates_sqlite_file_in_working_directory_and_is_idempotent(tmp_path):
    first = run("db", "init", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "created" in first.stdout
    assert (tmp_path / "harvestsuite.db").exists()
    second = run("db", "init", cwd=tmp_path)
    assert second.returncode == 0 and "up to date" in second.stdout
    engine = create_engine(f"sqlite:///{tmp_path / 'harvestsuite.db'}")
    with engine.connect() as conn:
        assert [row.name for row in conn.execute(select(s.harvestchannel))] == ["SNAPSHOT", "FOCUSED", "BROWSER"]
    engine.dispose()


@pytest.mark.postgres
def test_db_init_on_postgresql_with_only_the_url_changed(postgresql_url, tmp_path):
    result = run("--set", f"harvestsuite.database.url={postgresql_url}", "db", "init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "created" in result.stdout
    assert not (tmp_path / "harvestsuite.db").exists()


def test_bad_setting_is_one_line_error_without_traceback(tmp_path):
    config = tmp_path / "hs.toml"
    config.write_text("[harvester.scheduler]\njobgenerationperiod = 'x'\n")
    result = run("--config", str(config), "db", "init", cwd=tmp_path)
    assert result.returncode == 2
    assert "jobgenerationperiod" in result.stderr and "expected int" in result.stderr
    assert "Traceback" not in result.stderr


def test_settings_command_lists_effective_values(tmp_path):
    result = run("--set", "harvester.scheduler.jobGen.config.maxTotalSize=77", "settings", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "harvester.scheduler.jobGen.config.maxTotalSize = 77" in result.stdout


def test_ddl_command_prints_postgresql_ddl(tmp_path):
    result = run("db", "ddl", cwd=tmp_path)
    assert result.returncode == 0
    assert "CREATE TABLE historyinfo" in result.stdout


def test_exit_code_given_to_ctx_exit_reaches_the_shell():
    import click

    from harvestdef.cli import cli, main

    @cli.command("exit-with-three", hidden=True)
    @click.pass_context
    def exit_with_three(ctx: click.Context) -> None:
        ctx.exit(3)

    try:
        assert main(["exit-with-three"]) == 3
    finally:
        cli.commands.pop("exit-with-three")


def test_list_commands_print_a_header_line_names_and_the_one_time_format(tmp_path):
    from datetime import timedelta

    from sqlalchemy import update

    from harvestdef.db.types import utcnow
    from harvestdef.model.status import JobStatus
    from harvestdef.repositories.jobs import JobRepository, new_job_row
    from tests.scheduler.factories import T0, make_domain, make_selective

    database = tmp_path / "harvest.db"
    url = ("--set", f"harvestsuite.database.url=sqlite:///{database}")
    assert run(*url, "db", "init", cwd=tmp_path).returncode == 0
    engine = create_engine(f"sqlite:///{database}")
    started = utcnow().replace(microsecond=123456)
    with engine.begin() as conn:
        _, config_id = make_domain(conn, "kb.dk")
        make_selective(conn, 7, "News and local history", [config_id])
        row = {**new_job_row(job_id=41, harvest_id=7, channel="FOCUSED", snapshot=False, orderxml="default_orderxml",
                             harvest_num=3, creationdate=T0), "status": int(JobStatus.DONE)}
        JobRepository(conn).insert([row], {41: [config_id]})
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 41).values(
            startdate=started, enddate=started + timedelta(minutes=5)))
    engine.dispose()

    listed = run(*url, "jobs", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    header, job = listed.stdout.splitlines()
    assert header.split() == ["JOB", "STATUS", "HARVEST", "RUN", "CHANNEL", "CONTROLLER", "STARTED", "ENDED", "ERRORS"]
    assert job.startswith("41 ") and " News and local history " in job and " 3 " in job
    start = f"{started:%Y-%m-%d %H:%M:%S} UTC"
    assert start in job and f"{started + timedelta(minutes=5):%Y-%m-%d %H:%M:%S} UTC" in job
    assert ".123456" not in job and not re.search(r"\d{4}-\d\d-\d\dT\d\d", job)
    # columns line up under the header
    assert header.index("HARVEST") == job.index("News") and header.index("STARTED") == job.index(start)
    assert run(*url, "jobs", "list", "--harvest", "News and local history", cwd=tmp_path).stdout == listed.stdout
    assert run(*url, "jobs", "list", "--harvest", "7", cwd=tmp_path).stdout == listed.stdout
    unknown = run(*url, "jobs", "list", "--harvest", "nosuch", cwd=tmp_path)
    assert unknown.returncode == 2 and "no harvest definition named 'nosuch'" in unknown.stderr
    none = run(*url, "jobs", "list", "--status", "FAILED", cwd=tmp_path)
    assert none.stdout.split() == header.split() and "no job matches" in none.stderr

    assert run(*url, "users", "add", "alice", "--role", "curator", input_text="a long password\n",
               cwd=tmp_path).returncode == 0
    users = run(*url, "users", "list", cwd=tmp_path).stdout.splitlines()
    assert users[0].split() == ["NAME", "ROLE", "ACTIVE", "CREATED", "TOKENS"]
    assert users[1].split()[:3] == ["alice", "curator", "yes"] and users[1].endswith(" UTC  0")


def test_a_message_names_the_command_as_it_can_be_run_here(tmp_path, monkeypatch):
    from pathlib import Path

    from harvestdef.cli import command_as_run

    script = tmp_path / ".venv" / "bin" / "harvestsuite"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert command_as_run(str(script), cwd=tmp_path) == ".venv/bin/harvestsuite"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert command_as_run(str(script), cwd=elsewhere) == str(script)
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin:/bin")
    assert command_as_run(str(script), cwd=elsewhere) == "harvestsuite"
    main_module = Path(__file__).resolve().parents[2] / "harvestdef" / "__main__.py"
    assert command_as_run(str(main_module), cwd=elsewhere) == f"{sys.executable} -m harvestdef"
    assert command_as_run("/usr/lib/python3/dist-packages/pytest.py", cwd=elsewhere) == "harvestsuite"
