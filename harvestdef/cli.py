"""The ``harvestsuite`` command.

The top-level group loads settings once (``--config FILE`` or ``HARVESTSUITE_CONFIG``, then environment,
then ``--set KEY=VALUE``) and collects its subcommand groups from the ``harvestsuite.commands`` entry
points, so each package (harvestdef, scheduler, harvester, webui) contributes its own commands and
harvestdef never imports the others. Errors of ours are shown as one line without a traceback.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harvestdef.errors import HarvestSuiteError
from harvestdef.settings import Settings, load_settings, log_effective

if TYPE_CHECKING:
    # SQLAlchemy costs a sixth of a second to import, and the harvester's and crawl engine's processes never
    # open the harvest database
    from sqlalchemy import Engine

ENTRY_POINT_GROUP = "harvestsuite.commands"


@dataclass
class AppContext:
    """What every subcommand gets as ``ctx.obj``: the frozen settings and a lazily opened database."""

    settings: Settings
    _engine: Engine | None = field(default=None, repr=False)

    def engine(self) -> Engine:
        if self._engine is None:
            from harvestdef.db.engine import engine_from_settings

            self._engine = engine_from_settings(self.settings.database)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


pass_app = click.make_pass_decorator(AppContext)


class PluginGroup(click.Group):
    """A group whose subcommands come from entry points, loaded when first asked for."""

    def _plugins(self) -> dict[str, Any]:
        return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._plugins()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        plugin = self._plugins().get(cmd_name)
        if plugin is None:
            return None
        try:
            return plugin.load()
        except ImportError as exc:
            # A broken installation must say which command and why, not vanish from the list.
            raise click.ClickException(
                f"the '{cmd_name}' commands cannot be loaded ({plugin.value}): {exc}") from exc


def _parse_sets(values: tuple[str, ...]) -> dict[str, str]:
    overrides = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        overrides[key.strip()] = value
    return overrides


@click.group(cls=PluginGroup)
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="TOML settings file (default: $HARVESTSUITE_CONFIG).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override one setting, e.g. --set harvestsuite.database.url=sqlite:///x.db")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, sets: tuple[str, ...], verbose: int) -> None:
    """HarvestSuite: plan and run large web harvests."""
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if verbose < 2:
        # pika logs every failed connection attempt and closed channel as an error; the queue transport says
        # what happened and what it does about it in one line of its own
        logging.getLogger("pika").setLevel(logging.CRITICAL)
        # APScheduler logs two lines at INFO for every run of every job (the scheduler's tick each second):
        # they would bury what the scheduler says itself
        logging.getLogger("apscheduler.executors").setLevel(logging.WARNING)
    settings = load_settings(config_file, overrides=_parse_sets(sets))
    log_effective(settings)
    app = AppContext(settings)
    ctx.obj = app
    ctx.call_on_close(app.close)


@cli.command("settings")
@click.pass_obj
def show_settings(app: AppContext) -> None:
    """Print every setting with its effective value."""
    for key, value in sorted(app.settings.effective().items()):
        shown = "****" if "password" in key.lower() else value
        click.echo(f"{key} = {shown!r}")


def command_as_run(argv0: str | None = None, cwd: Path | None = None) -> str:
    """This ``harvestsuite`` command as a person can type it again here, for messages that name a command:
    ``harvestsuite`` when that name on PATH is this very command, else its path (relative to the working
    directory when under it: ``.venv/bin/harvestsuite``), or ``PYTHON -m harvestdef`` when it was run so; each
    path quoted as a shell word."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    cwd = Path.cwd() if cwd is None else cwd

    def as_typed(path: Path) -> str:
        path = path.absolute()
        if path.is_relative_to(cwd):
            typed = os.path.join(".", path.relative_to(cwd)) if path.parent == cwd else str(path.relative_to(cwd))
        else:
            typed = str(path)
        return shlex.quote(typed)

    script = Path(argv0)
    if script.name == "__main__.py" and script.parent.name == "harvestdef":
        return f"{as_typed(Path(sys.executable))} -m harvestdef"
    if script.name != "harvestsuite" or not script.is_file():
        return "harvestsuite"
    on_path = shutil.which("harvestsuite")
    if on_path is not None and Path(on_path).resolve() == script.resolve():
        return "harvestsuite"
    return as_typed(script)


def echo_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Rows under a header line, each column as wide as its widest cell, two spaces apart: what the list
    commands print (``jobs list``, ``users list``)."""
    table = [tuple(header), *(tuple(row) for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    """Console entry point; our own errors become one line on stderr and exit status 2."""
    try:
        # Without standalone mode click returns the command's value, or the code given to ctx.exit().
        result = cli.main(args=argv, prog_name="harvestsuite", standalone_mode=False)
    except HarvestSuiteError as exc:
        click.echo(f"harvestsuite: error: {exc}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("harvestsuite: aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return result if isinstance(result, int) else 0
