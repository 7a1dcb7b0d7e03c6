"""API routes: users of the web UI and their API tokens (``/api/v1/users``).

Admins add users, list them, change a role, deactivate and reactivate (a user is never deleted: its
history names it), reset a password, and see and revoke any user's tokens; every user makes, sees and
revokes their own tokens. A change names the ``edition`` it was based on (409 if the user has moved on),
and none may leave the installation without an active admin. A token is made with a label, in a logged-in
session (never with a token: UserRepository.set_password says why), and its secret is answered once, at
its making; after that it is listed by id and label, never shown. Every change is audited by
UserRepository. The users table is read directly for one thing only: the row as it is now, which a stale
edition's message names.
"""

from __future__ import annotations

from typing import Any

from flask import g

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
    return {"id": token.token_id, "user": token.user, "label": token.label, "created": jsonable(token.created),
            "last_used": jsonable(token.last_used), "revoked": token.revoked}


def admin_or_self(name: str) -> None:
    """Only an admin, or the user ``name``, may do this (403 naming the rule)."""
    user = current_user()
    if user is None or (user.name != name.strip() and not may(ADMIN, user)):
        raise AuthError(403, "only admins, or the user itself, may see or revoke a user's API tokens")


def add_user(name: str, role_text: str, password: str, fullname: str = "") -> User:
    """A new active user, for the API and the Users page alike: a taken name is a 409, a role that is not
    one of the four or a password shorter than the rule's a 400 naming it."""
    role = check_role(role_text)
    with database().begin() as conn:
        return UserRepository(conn, actor()).create(name, role, password=password, fullname=fullname)


def make_token(name: str, label: str) -> tuple[str, ApiToken]:
    """A new API token of user ``name``, made by that user in a logged-in session: the secret (shown this
    once) and what is kept of it. Nobody makes another's token, and a call authenticated by a token makes
    none, so a leaked token cannot outlive its revocation in a token it made."""
    user = current_user()
    if user is None or user.name != name.strip():
        raise AuthError(403, "every user makes their own API tokens, nobody another's")
    if g.get("by_token"):
        raise AuthError(403, "an API token is made in a logged-in session (the API tokens page), not with "
                             "another token")
    with database().begin() as conn:
        return UserRepository(conn, actor()).create_labelled_token(name, label)


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


@blueprint.post("/users")
@require(ADMIN)
def create_user() -> Any:
    """Add a user: ``name``, ``role``, ``password`` (at least 8 characters) and optionally ``fullname``.

    409 if the name is taken (a deactivated user keeps its name: reactivate it instead)."""
    data = body()
    created = add_user(field(data, "name", str), field(data, "role", str), field(data, "password", str),
                       field(data, "fullname", str, required=False, default=""))
    return user_json(created, 0), 201


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
    """A user's API tokens, newest first: id, label, created, last used (to the minute), revoked. Admins see
    anybody's; every user sees their own."""
    admin_or_self(name)
    with database().connect() as conn:
        tokens = UserRepository(conn).tokens(name)
    return {"items": [token_json(token) for token in tokens]}


@blueprint.post("/users/<name>/tokens")
@require(READ)
def create_token(name: str) -> Any:
    """Make an API token of your own, named by its ``label``; the answer's ``token`` is its secret, shown
    this once.

    Only the user ``name`` itself, logged in (the session's cookie and CSRF token): a call with an API token
    is refused (403), so a token never makes another. Send the secret as ``Authorization: Bearer TOKEN``."""
    token, kept = make_token(name, field(body(), "label", str))
    return {**token_json(kept), "token": token}, 201


@blueprint.delete("/users/<name>/tokens/<int:token_id>")
@require(READ)
def revoke_token(name: str, token_id: int) -> Any:
    """Revoke one of a user's API tokens for good (admins any user's, every user their own); a web UI that
    cached it refuses it at the latest harvestsuite.webui.tokenCacheSeconds later."""
    return token_json(revoke(name, token_id))
