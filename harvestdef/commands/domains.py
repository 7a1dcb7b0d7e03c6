"""``harvestsuite domains``: the domain list, starting with the bulk import of domains from a file."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harvestdef.cli import AppContext, pass_app


@click.group()
def domains() -> None:
    """Domains: bulk import."""


@domains.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--actor", default="system", show_default=True, help="Who is importing (written to the audit log).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Domains per transaction (default: 2,000,000 on PostgreSQL, 50,000 on SQLite).")
@pass_app
def import_domains(app: AppContext, file: Path, actor: str, batch_size: int | None) -> None:
    """Create a domain, with its default configuration and seed list, for every domain or URL in FILE.

    One name, host or URL per line (UTF-8); blank lines and lines starting with # are ignored; a host or
    URL is taken as its registered domain (www.kb.dk as kb.dk). The whole file is checked first: bad lines
    are reported as FILE:LINE: text: reason, and if there is one, nothing is imported (exit status 1).
    Running it again (for instance after an interruption) creates only what is missing.
    """
    from harvestdef.bulkimport import BadLine, DomainImporter
    from harvestdef.errors import RefusedLinesError

    def report(bad: BadLine) -> None:
        click.echo(str(bad), err=True)

    with click.progressbar(length=file.stat().st_size, label=f"importing {file.name}", file=sys.stderr,
                           show_eta=True, show_percent=True) as bar:
        importer = DomainImporter.from_settings(
            app.engine(), app.settings, actor=actor, batch_size=batch_size,
            on_bad_line=report, on_progress=bar.update)
        try:
            counts = importer.run(file)
        except RefusedLinesError as exc:
            # a ClickException, not ctx.exit(1): harvestsuite's main() drops the status of a plain exit
            raise click.ClickException(f"{file}: {exc.total} bad line(s), reported above; nothing was imported, "
                                       f"correct them and run the import again") from exc
        except KeyboardInterrupt:
            click.echo("\ninterrupted: the batches committed so far stay; run the same import again to complete "
                       "it (nothing is created twice)", err=True)
            raise
    click.echo(counts.summary())
