"""``harvestsuite db``: create, upgrade and describe the harvest database."""

from __future__ import annotations

import click

from harvestdef.cli import AppContext, pass_app


@click.group()
def db() -> None:
    """The harvest database: init, upgrade, ddl."""


@db.command()
@pass_app
def init(app: AppContext) -> None:
    """Create the harvest database (or bring it up to date) and insert the default rows. Idempotent."""
    from harvestdef.db.init import init_database

    done = init_database(app.engine())
    click.echo(f"harvest database {app.engine().url.render_as_string(hide_password=True)}: {done}")


@db.command()
@click.option("--sql", "dry_run", is_flag=True,
              help="Print the statements the upgrade runs on this database, then roll them back.")
@pass_app
def upgrade(app: AppContext, dry_run: bool) -> None:
    """Apply pending schema migrations (Alembic) to an existing harvest database.

    A NetarchiveSuite harvest database is taken over in place: HarvestSuite's tables and columns are
    added, its own rows, channels and schedules are kept. Rows that break a foreign key are reported.
    """
    from harvestdef.db.init import upgrade_database

    result = upgrade_database(app.engine(), dry_run=dry_run)
    for statement in result.statements:
        click.echo(statement.rstrip(";") + ";")
    for finding in result.findings:
        click.echo(f"  {finding}", err=True)
    url = app.engine().url.render_as_string(hide_password=True)
    suffix = " (dry run: rolled back, nothing changed)" if dry_run else ""
    click.echo(f"harvest database {url}: {result.done}{suffix}", err=dry_run)


@db.command()
def ddl() -> None:
    """Print the PostgreSQL DDL (the content of sql/createfullhddb.sql)."""
    from harvestdef.db.ddl import postgresql_ddl

    click.echo(postgresql_ddl(), nl=False)


@db.command("rebuild-summaries")
@pass_app
def rebuild_summaries(app: AppContext) -> None:
    """Compute the summaries again: per harvest run and per configuration from historyinfo and jobs, and
    the definitions' overviews (domains per TLD, unused configurations and seed lists) from the definitions.

    Status intake and the writers of definitions keep them up to date; this is for rows written by other
    means (imports, NetarchiveSuite data, benchmarks). One transaction: readers see the old summaries
    until it commits.
    """
    from harvestdef.db.engine import write_transaction
    from harvestdef.repositories.definitioncounts import rebuild_definition_counts
    from harvestdef.repositories.history import rebuild_summaries as rebuild

    with write_transaction(app.engine()) as conn:
        runs, configurations = rebuild(conn, progress=lambda n: click.echo(f"  {n:,} configurations", err=True))
        tlds, unused_configurations, unused_seedlists = rebuild_definition_counts(conn)
    click.echo(f"summaries rebuilt: {runs} harvest runs, {configurations} domain configurations; {tlds} TLDs, "
               f"{unused_configurations} unused configurations, {unused_seedlists} unused seed lists")
