"""``harvestsuite users``: the web UI's users and their API tokens."""

from __future__ import annotations

import sys

import click

from harvestdef.cli import AppContext, pass_app
from harvestdef.model.definitions import Role


@click.group()
def users() -> None:
    """Users of the web UI and the JSON API."""


@users.command()
@click.argument("name")
@click.option("--role", type=click.Choice([role.value for role in Role]), required=True,
              help="curator, operator, archivist or admin.")
@click.option("--fullname", default="", help="The person's name, shown in the UI.")
@pass_app
def add(app: AppContext, name: str, role: str, fullname: str) -> None:
    """Create user NAME; the password is read from stdin (one line), never from the command line."""
    from harvestdef.repositories.users import UserRepository

    if sys.stdin.isatty():
        password = click.prompt("password", hide_input=True, confirmation_prompt=True)
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    with app.engine().begin() as conn:
        user = UserRepository(conn).create(name, role, password=password, fullname=fullname)
    click.echo(f"user {user.name} ({user.role.value}) created")


@users.command()
@click.argument("name")
@pass_app
def token(app: AppContext, name: str) -> None:
    """Print a new API token of user NAME (for Authorization: Bearer TOKEN); it is shown only now."""
    from harvestdef.repositories.users import UserRepository

    with app.engine().begin() as conn:
        click.echo(UserRepository(conn).create_token(name))


@users.command()
@click.argument("name")
@pass_app
def password(app: AppContext, name: str) -> None:
    """Set user NAME's password, read from stdin (one line); every session of the user ends. For a
    forgotten or leaked password: users change their own on the web UI's Password page."""
    from harvestdef.db.engine import write_transaction
    from harvestdef.repositories.users import UserRepository

    if sys.stdin.isatty():
        new_password = click.prompt("new password", hide_input=True, confirmation_prompt=True)
    else:
        new_password = sys.stdin.readline().rstrip("\r\n")
    with write_transaction(app.engine()) as conn:
        repository = UserRepository(conn)
        repository.set_password(name, new_password, repository.get(name).edition)
    click.echo(f"password of user {name} changed; every session of the user has ended")


@users.command()
@click.argument("name")
@click.argument("role", type=click.Choice([role.value for role in Role]))
@click.option("--actor", default="system", show_default=True, help="Who changes it (written to the audit log).")
@pass_app
def role(app: AppContext, name: str, role: str, actor: str) -> None:
    """Give user NAME the role ROLE (curator, operator, archivist or admin). Each request reads the user's
    role anew, so the user's sessions act in it from their next request, and its API tokens at the latest
    harvestsuite.webui.tokenCacheSeconds later."""
    from harvestdef.db.engine import write_transaction
    from harvestdef.repositories.users import UserRepository

    with write_transaction(app.engine()) as conn:
        repository = UserRepository(conn, actor=actor)
        changed = repository.set_role(name, role, repository.get(name).edition)
    click.echo(f"user {changed.name} is now {changed.role.value}")
