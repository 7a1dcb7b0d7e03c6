"""``harvestsuite dedup``: the deduplication entries in the archive store, starting with their rebuild into
partitions per domain (harvestdef/dedup/rebuild.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from harvestdef.cli import AppContext, pass_app


@click.group()
def dedup() -> None:
    """Deduplication entries in the archive store: rebuild."""


@dedup.command()
@click.option("--dry-run", is_flag=True, help="Count the jobs that would be rebuilt; write nothing.")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where a job's sorted copy is made before it is stored (default: the system's temporary "
                   "directory); it needs room for a few times the largest job's entries, uncompressed.")
@pass_app
def rebuild(app: AppContext, dry_run: bool, work_dir: Path | None) -> None:
    """Give every stored job without partitions (dedup/JOB.gz and no dedup/JOB.domains) its partitions:
    dedup/JOB.by-domain.gz, its entries in domain order, and the directory dedup/JOB.domains beside the
    entries file, which stays as it is; SHA256SUMS then lists both.

    A job's own domains are those of its configurations in the harvest database; a job the database does
    not have gets none, which is said. A job that has its directory is skipped, so a rerun after an
    interruption goes on where it stopped. A job whose entries cannot be read is named with the reason
    and left as it is; the others go on, and the exit status is then 1.
    """
    from harvestdef.archive import ArchiveStore
    from harvestdef.dedup.rebuild import JobResult, RebuildOutcome, StoredJob, count_jobs, rebuild_store

    store = ArchiveStore.from_settings(app.settings)
    store.require_root()
    counted = count_jobs(store)
    if dry_run:
        click.echo(f"would rebuild {counted.pending:,} job(s); {counted.partitioned:,} have their partitions "
                   f"already (dry run: nothing written)")
        return

    started = time.monotonic()
    entries = 0
    current: list[StoredJob] = []

    def show(_: object) -> str:
        if not current:
            return ""
        rate = entries / max(time.monotonic() - started, 1e-9)
        return f"job {current[0].job_id} of harvest {current[0].harvest_id}, {rate:,.0f} entries/s"

    with click.progressbar(length=counted.pending, label="rebuilding", file=sys.stderr, show_eta=True,
                           show_pos=True, item_show_func=show) as bar:
        def on_start(job: StoredJob) -> None:
            current[:] = [job]
            bar.update(0)

        def on_done(result: JobResult) -> None:
            nonlocal entries
            if result.outcome is RebuildOutcome.DONE:
                return
            entries += result.entries
            # off the line the bar is drawn on, when it is drawn (on a terminal)
            newline = "\n" if sys.stderr.isatty() else ""
            if result.outcome is RebuildOutcome.FAILED:
                click.echo(f"{newline}{result.name}: not rebuilt: {result.reason}", err=True)
            elif result.own_domains is None:
                click.echo(f"{newline}{result.name} is not in the harvest database: partitioned with own domains: "
                           "none", err=True)
            bar.update(1)

        try:
            summary = rebuild_store(store, app.engine(), work_dir=work_dir, on_start=on_start, on_done=on_done)
        except KeyboardInterrupt:
            click.echo("\ninterrupted: the jobs rebuilt so far keep their partitions and the job under way has "
                       "none; run the same command again to go on", err=True)
            raise
    rate = summary.entries / summary.seconds if summary.seconds else 0.0
    unknown = f" ({summary.unknown:,} not in the harvest database: no own domains)" if summary.unknown else ""
    click.echo(f"rebuilt {summary.rebuilt:,} job(s){unknown}, skipped {summary.skipped:,} as done, failed "
               f"{len(summary.failed):,}; {summary.entries:,} entries in {summary.seconds:.1f} s "
               f"({rate:,.0f} entries/s)")
    if summary.failed:
        listed = "\n".join(f"  {result.name}: {result.reason}" for result in summary.failed)
        # a ClickException, not ctx.exit(1): harvestsuite's main() drops the status of a plain exit
        raise click.ClickException(f"{len(summary.failed):,} job(s) not rebuilt, left as they were (the others "
                                   f"are done):\n{listed}")
