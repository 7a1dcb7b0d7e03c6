"""``harvestsuite harvester``: run a harvest controller, or store the files a controller could not store."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from harvestdef.cli import AppContext, pass_app
from harvestdef.errors import HarvestSuiteError
from harvestdef.files import exclusive_lock
from harvestdef.settings import Settings

LOCK_FILE = "controller.lock"
log = logging.getLogger(__name__)


@contextmanager
def server_dir_lock(server_dir: Path) -> Iterator[None]:
    """Hold serverDir for this process alone: two controllers must never share one."""
    server_dir.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(server_dir / LOCK_FILE, lambda holder: HarvestSuiteError(
            f"serverDir {server_dir} is in use by {holder}; every harvest controller needs its own serverDir "
            f"(harvester.harvesting.serverdir)")):
        yield


@click.group()
def harvester() -> None:
    """Harvest controllers: take jobs from harvest channels, crawl, post-process, store and report."""


def run_controller(settings: Settings, stop: threading.Event, channels: tuple[str, ...] | None = None) -> None:
    """A harvest controller until ``stop`` is set (or shutdown.txt appears in its serverDir).

    A crawl running when ``stop`` is set is checkpointed or finished as ``shutdownAction`` says. This is
    also the ``harvester`` role of the ``harvestsuite.roles`` entry points, which ``harvestsuite demo`` runs
    in a thread beside the other roles. With ``harvestsuite.metrics.harvesterPort`` set, the controller's
    metrics (harvester/metrics.py) are served there while it runs.
    """
    from harvestdef.metrics import serving
    from harvestdef.queues import open_transport
    from harvester.controller import HarvestController

    server_dir = Path(settings.harvester.serverDir).resolve()
    with server_dir_lock(server_dir), open_transport(settings.queue) as transport:
        controller = HarvestController.from_settings(settings, transport, channels)
        finished = threading.Event()

        def stop_when_asked() -> None:
            # wakes at most every second so it ends with the controller when that stops by itself
            while not finished.is_set():
                if stop.wait(1.0):
                    log.warning("the harvest controller stops after the current step (a running crawl is %s)",
                                "checkpointed" if settings.harvester.shutdownAction == "checkpoint" else "finished")
                    controller.request_stop()
                    return

        watcher = threading.Thread(target=stop_when_asked, name="controller-stop", daemon=True)
        watcher.start()
        click.echo(f"harvest controller {controller.controller_id}: channels {', '.join(controller.options.channels)}, "
                   f"serverDir {server_dir}", err=True)
        try:
            with serving(settings.metrics.bind, settings.metrics.harvesterPort, controller.metrics.registry,
                         f"harvest controller {controller.controller_id}") as endpoint:
                if endpoint is not None:
                    click.echo(f"harvest controller {controller.controller_id}: metrics at {endpoint.url}", err=True)
                controller.run()
        finally:
            finished.set()
            watcher.join()
        click.echo(f"harvest controller {controller.controller_id} stopped", err=True)


@harvester.command()
@click.option("--channel", "channels", multiple=True, metavar="NAME",
              help="Harvest channel to serve (repeatable; selective first). Default: the "
                   "harvester.harvesting.channel setting.")
@pass_app
def run(app: AppContext, channels: tuple[str, ...]) -> None:
    """Run a harvest controller until SIGTERM (or shutdown.txt in its serverDir).

    At start it stops a crawl engine a killed predecessor left running, post-processes and reports every
    job directory left behind, registers for its channels, and resumes a crawl checkpointed at the last
    shutdown if the scheduler grants it again. It never opens the harvest database.
    """
    channel_list = tuple(part.strip() for value in channels for part in value.split(",") if part.strip()) or None
    stop = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        log.warning("%s received", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    run_controller(app.settings, stop, channel_list)


@harvester.command("upload-leftovers")
@pass_app
def upload_leftovers(app: AppContext) -> None:
    """Store in the archive store the files of reported jobs that could not be stored earlier.

    One pass over each such job's files not stored yet. A job reported FAILED only because of an archive
    store outage is reported again, DONE, once all its files are stored. Only for a serverDir whose
    controller is not running (the controller does the same between jobs and at its start).
    """
    from harvestdef.queues import open_transport
    from harvester.controller import HarvestController
    from harvester.jobdir import JobDirectory, JobDirectoryError, unfinished_job_directories

    settings = app.settings
    server_dir = Path(settings.harvester.serverDir).resolve()
    left = stored = 0
    with server_dir_lock(server_dir), open_transport(settings.queue) as transport:
        # The controller's own code stores the files and sends the reports, as between its jobs.
        controller = HarvestController.from_settings(settings, transport)
        for directory in unfinished_job_directories(server_dir):
            try:
                jobdir = JobDirectory.load(directory)
            except JobDirectoryError as exc:
                click.echo(f"skipped: {exc}", err=True)
                continue
            if not controller.postprocessor.pending_uploads(jobdir):
                click.echo(f"{directory.name}: not reported yet; the controller post-processes it at its next start")
                continue
            if controller.store_leftover(jobdir):
                stored += 1
                click.echo(f"{directory.name}: stored, moved to {jobdir.path}")
            else:
                left += 1
                click.echo(f"{directory.name}: still not stored (see the log)", err=True)
    click.echo(f"{stored} jobs stored, {left} left")
    if left:
        raise SystemExit(1)
