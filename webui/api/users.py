"""API routes: users of the web UI and their API tokens (``/api/v1/users``).

Admins list users, change a role, deactivate and reactivate, reset a password, and see and revoke any
user's tokens; every user sees and revokes their own tokens. A change names the ``edition`` it was based
on (409 if the user has moved on), and none may leave the installation without an active admin. Tokens
are made only with ``harvestsuite users token`` on a host with the database (UserRepository.set_password
says why); here they are listed by id, never shown. Every change is audited by UserRepository.
"""

from __future__ import annotations

from typing import Any

from harvestdef.db import schema as s
from harvestdef.model.definitions import Role, User
from harvestdef.repositories.base import fetch_row, stale_edition
from harvestdef.repositories.users import ApiToken, UserRepository, check_role
from webui.api.core import blueprint, body, edition, field, jsonable
from webui.api.errors import ApiError
from webui.auth import ADMIN, READ, AuthError, may, require
from webui.context import actor, current_user, database


def user_json(user: User, tokens: int | None = None) -> dict[str, Any]:
    record = {"name": user.name, "fullname": user.fullname, "email": user.email, "role": user.role.value,
              "active": user.isactive, "created": jsonable(user.created), "edition": user.edition}
    if tokens is not None:
        record["tokens"] = tokens
    return record


def token_json(token: ApiToken) -> dict[str, Any]:
    return {"id": token.token_id, "user": token.user, "created": jsonable(token.created),
            "last_used": jsonable(token.last_used), "revoked": token.revoked}


def admin_or_self(name: str) -> None:
    """Only an admin, or the user ``name``, may do this (403 naming the rule)."""
    user = current_user()
    if user is None or (user.name != name.strip() and not may(ADMIN, user)):
        raise AuthError(403, "only admins, or the user itself, may see or revoke a user's API tokens")


def _keeps_an_admin(users: UserRepository, name: str, role: Role, active: bool) -> None:
    """409 when the change would leave no active admin: nobody could manage users from the web UI then."""
    if role is Role.ADMIN and active:
        return
    others = [user for user in users.list_users() if user.name != name and user.role is Role.ADMIN and user.isactive]
    if not others:
        raise ApiError("conflict", f"user {name} is the last active admin: make another admin first")


@blueprint.get("/users")
@require(ADMIN)
def list_users() -> Any:
    """Every user, by name, with the number of its unrevoked API tokens."""
    with database().connect() as conn:
        users = UserRepository(conn)
        people, tokens = users.list_users(), users.token_counts()
    return {"items": [user_json(user, tokens.get(user.name, 0)) for user in people]}


def change_user(name: str, expected: int, role_text: str | None, active: bool | None) -> User:
    """Give user ``name`` a role or (de)activate it, for the API and the Users page alike; what does not
    change is not written. A stale ``expected`` edition is refused (409) before anything is written, and so
    is a change that would leave no active admin."""
    with database().begin() as conn:
        users = UserRepository(conn, actor())
        current = users.get(name)
        if expected != current.edition:
            raise stale_edition(conn, actor(), "users", current.user_id, "user", expected,
                                fetch_row(conn, s.users, "user_id", current.user_id))
        role = check_role(role_text) if role_text is not None else current.role
        active = current.isactive if active is None else active
        _keeps_an_admin(users, current.name, role, active)
        updated = current
        if role is not current.role:
            updated = users.set_role(current.name, role, updated.edition)
        if active != current.isactive:
            updated = users.set_active(current.name, active, updated.edition)
    return updated


def revoke(name: str, token_id: int) -> ApiToken:
    """Revoke user ``name``'s API token ``token_id`` (the caller checked who may); 404 if it is not theirs."""
    admin_or_self(name)
    with database().begin() as conn:
        users = UserRepository(conn, actor())
        if users.token(token_id).user != name.strip():
            raise ApiError("not_found", f"API token {token_id} is not a token of user {name}")
        return users.revoke_token(token_id)


@blueprint.patch("/users/<name>")
@require(ADMIN)
def update_user(name: str) -> Any:
    """Change a user's ``role`` or ``active``; 409 if ``edition`` is stale or no active admin would be left.

    A deactivated user's sessions are refused from its next request and its API tokens at the latest
    harvestsuite.webui.tokenCacheSeconds later; a new role applies from the user's next request."""
    data = body()
    return user_json(change_user(name, edition(data), field(data, "role", str, required=False),
                                 field(data, "active", bool, required=False)))


@blueprint.put("/users/<name>/password")
@require(ADMIN)
def reset_password(name: str) -> Any:
    """Set a user's ``password`` (a forgotten or leaked one); every session of the user ends."""
    data = body()
    expected = edition(data)
    password = field(data, "password", str)
    with database().begin() as conn:
        updated = UserRepository(conn, actor()).set_password(name, password, expected)
    return user_json(updated)


@blueprint.get("/users/<name>/tokens")
@require(READ)
def list_tokens(name: str) -> Any:
    """A user's API tokens, newest first: id, created, last used (to the minute), revoked. Admins see
    anybody's; every user sees their own."""
    admin_or_self(name)
    with database().connect() as conn:
        tokens = UserRepository(conn).tokens(name)
    return {"items": [token_json(token) for token in tokens]}


@blueprint.delete("/users/<name>/tokens/<int:token_id>")
@require(READ)
def revoke_token(name: str, token_id: int) -> Any:
    """Revoke one of a user's API tokens for good (admins any user's, every user their own); a web UI that
    cached it refuses it at the latest harvestsuite.webui.tokenCacheSeconds later."""
    return token_json(revoke(name, token_id))
