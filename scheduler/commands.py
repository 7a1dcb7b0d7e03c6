"""``harvestsuite jobgen``: generate, preview and plan jobs (docs/jobgen.md, Commands)."""

from __future__ import annotations

import json
import sys
import threading

import click

from harvestdef.cli import AppContext, echo_table, pass_app
from harvestdef.errors import PlanInputError
from harvestdef.settings import Settings
from harvestdef.words import plural


@click.group()
def jobgen() -> None:
    """Job generation: generate a harvest's jobs, preview them, or plan offline from JSON."""


@jobgen.command()
@click.argument("harvest_name")
@pass_app
def preview(app: AppContext, harvest_name: str) -> None:
    """The jobs the next run of HARVEST_NAME would make, writing nothing."""
    from scheduler.jobgen.generate import GenerationOptions
    from scheduler.previews import preview_summary

    summary = preview_summary(app.engine(), harvest_name, GenerationOptions.from_settings(app.settings))
    click.echo(f"harvest {summary['harvest']} ({summary['type']}, run {summary['run']}): "
               f"{plural(summary['configurations'], 'configuration')} in {plural(len(summary['jobs']), 'job')}, "
               f"expected objects {summary['expected_objects']:,}, expected bytes {summary['expected_bytes']:,}")
    if not summary["jobs"]:
        return

    def limit(value: int, unit: str = "", unlimited: tuple[int, ...] = (-1,)) -> str:
        return "unlimited" if value in unlimited else f"{value:,}{unit}"

    echo_table(("JOB", "TEMPLATE", "CONFIGURATIONS", "EXPECTED OBJECTS", "EXPECTED BYTES", "MAX OBJECTS/DOMAIN",
                "MAX BYTES/DOMAIN", "MAX TIME"), [
        (str(job["job"]), job["template"], f"{job['configurations']:,}", f"{job['expected_objects']:,}",
         f"{job['expected_bytes']:,}", limit(job["max_objects_per_domain"]), limit(job["max_bytes_per_domain"]),
         limit(job["max_running_time"], " s", (-1, 0)))
        for job in summary["jobs"]])


@jobgen.command()
@click.argument("harvest_name")
@pass_app
def generate(app: AppContext, harvest_name: str) -> None:
    """Generate the jobs of one run of HARVEST_NAME now (all in one transaction)."""
    from scheduler.jobgen.generate import GenerationOptions, generate_jobs

    result = generate_jobs(app.engine(), harvest_name, GenerationOptions.from_settings(app.settings))
    ids = f" (jobs {result.job_ids[0]}-{result.job_ids[-1]})" if result.job_ids else ""
    click.echo(f"harvest {result.harvest_name} run {result.harvest_num}: {plural(len(result.jobs), 'job')}{ids}")


@jobgen.command()
@click.argument("plan_file", type=click.File("r", encoding="utf-8"))
@pass_app
def plan(app: AppContext, plan_file: click.utils.LazyFile) -> None:
    """Plan jobs offline from PLAN_FILE (JSON; - for stdin), without a database; jobs as JSON on stdout."""
    from scheduler.jobgen.plan import plan as make_plan

    try:
        document = json.load(plan_file)
    except json.JSONDecodeError as exc:
        raise PlanInputError([("$", f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}")]) from None
    try:
        answer = make_plan(document, app.settings.jobgen)
    except PlanInputError as exc:
        # one line per error, every error; exit status 2 as for any other input error of ours
        failure = click.ClickException("the plan input is wrong:\n" + "\n".join(
            f"  {path}: {message}" for path, message in exc.errors))
        failure.exit_code = 2
        raise failure from exc
    json.dump(answer, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


@click.group()
def scheduler() -> None:
    """The scheduler: ticks every minute, dispatches jobs, takes the controllers' reports."""


def _service(app: AppContext):  # noqa: ANN202 - the service type is imported lazily
    from harvestdef.queues import open_transport
    from scheduler.service import SchedulerService

    transport = open_transport(app.settings.queue)
    return transport, SchedulerService.from_settings(app.settings, app.engine(), transport)


def run_scheduler(settings: Settings, stop: threading.Event) -> None:
    """The scheduler until ``stop`` is set, on a database connection and a queue transport of its own.

    It is also the ``scheduler`` role of the ``harvestsuite.roles`` entry points, which ``harvestsuite demo``
    runs in a thread beside the other roles. With ``harvestsuite.metrics.schedulerPort`` set, its metrics
    (scheduler.metrics) are served there while it runs, a scheduler that waits to lead included.
    """
    from harvestdef.db.engine import engine_from_settings
    from harvestdef.metrics import serving
    from harvestdef.queues import open_transport
    from scheduler.service import SchedulerService

    engine = engine_from_settings(settings.database)
    try:
        with open_transport(settings.queue) as transport:
            service = SchedulerService.from_settings(settings, engine, transport)
            # the engine is this scheduler's alone: each of its transactions checks that it leads
            # (scheduler.leader, fencing)
            service.leader.install_fence(engine)
            with serving(settings.metrics.bind, settings.metrics.schedulerPort, service.metrics.registry,
                         "the scheduler") as endpoint:
                if endpoint is not None:
                    click.echo(f"scheduler: metrics at {endpoint.url}", err=True)
                service.run(stop, on_leader=lambda: click.echo("scheduler: running as the leader", err=True))
    finally:
        engine.dispose()


@scheduler.command()
@pass_app
def run(app: AppContext) -> None:
    """Run the scheduler until SIGTERM or Ctrl-C: wait to be the only one on this database, then tick every
    jobgenerationperiod seconds (first at once) and handle the controllers' messages."""
    import signal

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    run_scheduler(app.settings, stop)


@scheduler.command()
@click.option("--once", is_flag=True, required=True, help="One tick, then exit (for tests and cron).")
@pass_app
def tick(app: AppContext, once: bool) -> None:
    """Handle the messages waiting now, then one tick: supervision, deduplication indexes, readiness, job
    generation; then one sending of the live changes and of the webhook deliveries that are due. Returns
    once the deduplication indexes the tick asked for are built or have failed; the next tick acts on the
    outcome."""
    transport, service = _service(app)
    try:
        report = service.tick_once()
    finally:
        transport.close()
    for name, job_ids in sorted(report.generated.items()):
        click.echo(f"generated {name}: {len(job_ids)} jobs")
    for name, reason in sorted(report.waiting.items()):
        click.echo(f"waiting {name}: {reason}")
    for name, reason in sorted(report.deactivated.items()):
        click.echo(f"deactivated {name}: {reason}")
    for name, reason in sorted(report.indexing.items()):
        click.echo(f"indexing {name}: {reason}")
    for name, reason in sorted(report.finished.items()):
        click.echo(f"finished {name}: {reason}")
    for job_id in report.timed_out:
        click.echo(f"timed out job {job_id}")
    for old, new in sorted(report.resubmitted.items()):
        click.echo(f"resubmitted job {old} as {new}")
    for job_id in report.interrupted:
        click.echo(f"interrupted job {job_id}")
    for job_id, count in sorted(report.changes_refused.items()):
        click.echo(f"refused {count} pending live changes of ended job {job_id}")
    if report.live_changes_sent:
        click.echo(f"sent {report.live_changes_sent} live changes")
    if report.webhook_attempts:
        click.echo(f"attempted {report.webhook_attempts} webhook deliveries (their outcome: the webhooks page of "
                   "the System section)")


@click.group()
def jobs() -> None:
    """Jobs: list them, restart a failed one, reject or unreject it."""


@jobs.command("list")
@click.option("--status", "statuses", multiple=True, help="NEW, SUBMITTED, STARTED, DONE, FAILED, ... (repeatable)")
@click.option("--harvest", default=None, help="Only the jobs of this harvest definition (its name or id).")
@click.option("--limit", type=int, default=50, show_default=True)
@pass_app
def list_jobs(app: AppContext, statuses: tuple[str, ...], harvest: str | None, limit: int) -> None:
    """The newest jobs under a header line: id, status, harvest and run, channel, controller, start and end
    (UTC), errors."""
    from harvestdef.errors import NotFoundError
    from harvestdef.model.status import JobStatus
    from harvestdef.repositories.harvests import HarvestRepository
    from harvestdef.repositories.jobs import JobRepository
    from harvestdef.times import utc_text

    try:
        wanted = [JobStatus[name.strip().upper()] for name in statuses] or None
    except KeyError as exc:
        raise click.BadParameter(f"unknown job status {exc.args[0]!r}; one of "
                                 f"{', '.join(status.name for status in JobStatus)}", param_hint="--status") from None
    with app.engine().connect() as conn:
        harvests = HarvestRepository(conn)
        harvest_id = None
        if harvest is not None:
            try:
                harvest_id = (harvests.get_by_id(int(harvest)) if harvest.strip().isdigit()
                              else harvests.get(harvest)).harvest_id
            except NotFoundError:
                raise click.BadParameter(f"no harvest definition named {harvest!r}",
                                         param_hint="--harvest") from None
        rows = JobRepository(conn).list_jobs(wanted, harvest_id=harvest_id, limit=limit, newest_first=True)
        names = {number: harvests.get_by_id(number).name for number in {job.harvest_id for job in rows}}
    echo_table(("JOB", "STATUS", "HARVEST", "RUN", "CHANNEL", "CONTROLLER", "STARTED", "ENDED", "ERRORS"), [
        (str(job.job_id), f"{job.status}{' (interrupted)' if job.interrupted else ''}", names[job.harvest_id],
         str(job.harvest_num), job.channel, job.controller or "-", utc_text(job.startdate) if job.startdate else "-",
         utc_text(job.enddate) if job.enddate else "-", job.harvest_errors or "") for job in rows])
    if not rows:
        click.echo("no job matches", err=True)


@jobs.command()
@click.argument("job_id", type=int)
@pass_app
def restart(app: AppContext, job_id: int) -> None:
    """Restart a FAILED job: a copy goes NEW, the old one becomes RESUBMITTED (refused while it may still run)."""
    import getpass

    from harvestdef.db.engine import write_transaction
    from harvestdef.model.controllers import LostControllerRule
    from harvestdef.repositories.jobs import JobRepository

    with write_transaction(app.engine()) as conn:
        new = JobRepository(conn, actor=getpass.getuser()).restart(
            job_id, LostControllerRule.from_settings(app.settings), app.settings.database.nextJobId)
    click.echo(f"job {job_id} restarted as job {new.job_id}")


@jobs.command()
@click.argument("job_id", type=int)
@click.option("--undo", is_flag=True, help="Unreject: FAILED_REJECTED back to FAILED.")
@pass_app
def reject(app: AppContext, job_id: int, undo: bool) -> None:
    """Mark a FAILED job as not to be harvested again (FAILED_REJECTED), or undo that."""
    import getpass

    from harvestdef.db.engine import write_transaction
    from harvestdef.repositories.jobs import JobRepository

    with write_transaction(app.engine()) as conn:
        repository = JobRepository(conn, actor=getpass.getuser())
        if undo:
            repository.unreject(job_id)
        else:
            repository.reject(job_id)
    click.echo(f"job {job_id} {'unrejected' if undo else 'rejected'}")


def run_qa_worker(settings: Settings, stop: threading.Event) -> None:
    """The QA worker until ``stop`` is set, on a database connection of its own.

    It is also the ``qa`` role of the ``harvestsuite.roles`` entry points, which ``harvestsuite demo`` runs
    beside its replay service (and only then: thumbnails are pictures of replayed pages).
    """
    from harvestdef.db.engine import engine_from_settings
    from scheduler.thumbnails import PassResult, ThumbnailWorker

    def report(result: PassResult) -> None:
        if result.jobs_made:
            click.echo(f"qa: {plural(result.jobs_made, 'job')} done, {plural(result.thumbnails, 'thumbnail')} made",
                       err=True)

    engine = engine_from_settings(settings.database)
    try:
        ThumbnailWorker.from_settings(settings, engine).run(stop, on_pass=report)
    finally:
        engine.dispose()


@click.group()
def qa() -> None:
    """Quality assurance after the harvest: thumbnails of each DONE job's seeds as replayed."""


@qa.group()
def thumbnails() -> None:
    """The QA worker that pictures each seed of a DONE job through the replay service."""


@thumbnails.command("run")
@click.option("--once", is_flag=True, help="One pass over the jobs waiting now, then exit (for tests and cron).")
@pass_app
def run_thumbnails(app: AppContext, once: bool) -> None:
    """Make thumbnails of the seeds of DONE jobs with headless Chromium through the replay service, every
    harvestsuite.qa.thumbnailIntervalMs, until SIGTERM or Ctrl-C; with --once, one pass."""
    import signal

    from scheduler.thumbnails import PassResult, ThumbnailWorker

    worker = ThumbnailWorker.from_settings(app.settings, app.engine())

    def report(result: PassResult) -> None:
        if result.jobs_made or result.jobs_skipped or once:
            skipped = f", {result.jobs_skipped} skipped: {result.note}" if result.jobs_skipped else ""
            click.echo(f"qa: {plural(result.jobs_made, 'job')} done, {plural(result.thumbnails, 'thumbnail')} made"
                       f"{skipped}")

    if once:
        report(worker.run_once())
        return
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    click.echo(f"qa: making thumbnails every {worker.interval:g} s through {worker.replay_url or '(no replay URL)'}")
    worker.run(stop, on_pass=report)
