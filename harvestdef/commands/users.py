"""``harvestsuite users``: the web UI's users and their API tokens."""

from __future__ import annotations

import sys

import click

from harvestdef.cli import AppContext, echo_table, pass_app
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
@click.option("--label", default="", help="What the token is for (a script, a machine), as its list shows it.")
@pass_app
def token(app: AppContext, name: str, label: str) -> None:
    """Print a new API token of user NAME (for Authorization: Bearer TOKEN); it is shown only now. For
    scripts: users make their own on the web UI's API tokens page."""
    from harvestdef.repositories.users import UserRepository

    with app.engine().begin() as conn:
        click.echo(UserRepository(conn).create_token(name, label))


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


def _when(value: object) -> str:
    from harvestdef.times import utc_text

    return utc_text(value) if value is not None else "never"


@users.command(name="list")
@pass_app
def list_users(app: AppContext) -> None:
    """List the users: name, role, active or not, when created, unrevoked API tokens."""
    from harvestdef.repositories.users import UserRepository

    with app.engine().connect() as conn:
        repository = UserRepository(conn)
        people, tokens = repository.list_users(), repository.token_counts()
    echo_table(("NAME", "ROLE", "ACTIVE", "CREATED", "TOKENS"), [
        (user.name, user.role.value, "yes" if user.isactive else "no", _when(user.created),
         f"{tokens.get(user.name, 0):,}") for user in people])


def _set_active(app: AppContext, name: str, active: bool, actor: str) -> None:
    from harvestdef.db.engine import write_transaction
    from harvestdef.repositories.users import UserRepository

    with write_transaction(app.engine()) as conn:
        repository = UserRepository(conn, actor=actor)
        repository.set_active(name, active, repository.get(name).edition)


@users.command()
@click.argument("name")
@click.option("--actor", default="system", show_default=True, help="Who does it (written to the audit log).")
@pass_app
def deactivate(app: AppContext, name: str, actor: str) -> None:
    """Deactivate user NAME: its sessions are refused from their next request, its API tokens at the latest
    harvestsuite.webui.tokenCacheSeconds later. Nothing of the user is deleted; reactivate brings it back."""
    _set_active(app, name, False, actor)
    click.echo(f"user {name} deactivated: its sessions and API tokens are refused")


@users.command()
@click.argument("name")
@click.option("--actor", default="system", show_default=True, help="Who does it (written to the audit log).")
@pass_app
def reactivate(app: AppContext, name: str, actor: str) -> None:
    """Reactivate user NAME: it may log in again, and its unrevoked API tokens work again."""
    _set_active(app, name, True, actor)
    click.echo(f"user {name} reactivated")


@users.command()
@click.argument("name")
@pass_app
def tokens(app: AppContext, name: str) -> None:
    """List user NAME's API tokens, newest first: id, label, created, last used (to the minute), revoked or
    not."""
    from harvestdef.repositories.users import UserRepository

    with app.engine().connect() as conn:
        listed = UserRepository(conn).tokens(name)
    if not listed:
        click.echo(f"user {name} has no API token")
        return
    echo_table(("ID", "LABEL", "CREATED", "LAST USED", "STATE"), [
        (str(item.token_id), item.label, _when(item.created), _when(item.last_used),
         "revoked" if item.revoked else "valid") for item in listed])


@users.command()
@click.argument("token_id", type=int)
@click.option("--actor", default="system", show_default=True, help="Who does it (written to the audit log).")
@pass_app
def revoke(app: AppContext, token_id: int, actor: str) -> None:
    """Revoke API token TOKEN_ID (its id, as `users tokens` lists it) for good; a web UI that cached it refuses
    it at the latest harvestsuite.webui.tokenCacheSeconds later."""
    from harvestdef.db.engine import write_transaction
    from harvestdef.repositories.users import UserRepository

    with write_transaction(app.engine()) as conn:
        revoked = UserRepository(conn, actor=actor).revoke_token(token_id)
    click.echo(f"API token {revoked.token_id} of user {revoked.user} revoked")
