"""The `harvestsuite` command as a person runs it: a real subprocess, its output and exit status."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from sqlalchemy import create_engine, select

from harvestdef.db import schema as s


def run(*args: str, cwd=None, env_extra=None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTSUITE")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "harvestdef", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_db_init_creates_sqlite_file_in_working_directory_and_is_idempotent(tmp_path):
    first = run("db", "init", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "created" in first.stdout
    assert (tmp_path / "harvestsuite.db").exists()
    second = run("db", "init", cwd=tmp_path)
    assert second.returncode == 0 and "up to date" in second.stdout
    engine = create_engine(f"sqlite:///{tmp_path / 'harvestsuite.db'}")
    with engine.connect() as conn:
        assert len(conn.execute(select(s.harvestchannel)).all()) == 2
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
