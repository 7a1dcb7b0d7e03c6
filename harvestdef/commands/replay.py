"""``harvestsuite replay``: the replay service (pywb over the archive store) and its environment."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from harvestdef.cli import AppContext, pass_app


@click.group()
def replay() -> None:
    """Replay of the archive store with pywb, a service of its own."""


@replay.command("install")
@pass_app
def install(app: AppContext) -> None:
    """Build pywb's virtual environment at harvestsuite.replay.pywbVenv (from PyPI; once, then reused)."""
    from harvestdef.replay.environment import ensure_environment

    venv = ensure_environment(Path(app.settings.replay.pywbVenv), progress=click.echo)
    click.echo(f"pywb is installed in {venv}")


@replay.command("run")
@pass_app
def run(app: AppContext) -> None:
    """Serve the archive store with pywb until SIGTERM or Ctrl-C.

    Collections: `all` (every stored job) and `harvest-<id>` (the jobs of one harvest definition), read from
    the stored CDXJ indexes; new jobs and harvests are picked up while it runs.
    """
    from harvestdef.replay.service import ReplayService

    service = ReplayService.from_settings(app.settings)
    service.check()
    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    click.echo(f"replay: pywb on http://{service.bind}:{service.port}/ (collection `all` and harvest-<id>)")
    code = service.run(stop)
    if code:
        raise SystemExit(code)
