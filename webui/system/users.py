"""Pages of the users and their API tokens: admins manage users (role, active, password) on
``/system/users``; every user sees and revokes their own tokens on ``/system/users/NAME/tokens`` (admins
anybody's). Each form goes through the same actions as the API (webui/api/users.py), so a refusal reads the
same: nothing is changed, and the users' page is shown again with the refusal at the top and in the row of
the user it concerns, beside the field (webui/formfields.py). Passwords typed are not sent back in a page.
"""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _

from harvestdef.errors import HarvestSuiteError
from harvestdef.model.definitions import Role
from harvestdef.repositories.users import UserRepository
from webui.api.errors import ApiError
from webui.api.users import admin_or_self, change_user, revoke
from webui.auth import ADMIN, READ, require
from webui.context import actor, database
from webui.formfields import refuse
from webui.system import blueprint


def _edition() -> int:
    try:
        return int(request.form.get("edition", ""))
    except ValueError:
        raise ApiError("invalid", "edition is missing: reload the page and try again", "edition") from None


def _users_page() -> str:
    with database().connect() as conn:
        repository = UserRepository(conn)
        people, tokens = repository.list_users(), repository.token_counts()
    return render_template("system/users.html", people=people, tokens=tokens, roles=[role.value for role in Role],
                           refused_user=request.view_args.get("name") if request.method == "POST" else None)


def _refused(field: str, message: str) -> tuple[str, int]:
    """The users' page again, status 400, with ``message`` at the top and beside ``field`` of that user."""
    flash(message, "error")
    refuse(field, message)
    return _users_page(), 400


@blueprint.get("/system/users")
@require(ADMIN)
def users() -> Any:
    """Every user with its role, whether active, and its unrevoked API tokens."""
    return _users_page()


@blueprint.post("/system/users/<name>")
@require(ADMIN)
def change(name: str) -> Any:
    """A user's new role, or its deactivation or reactivation (the form's ``active``: yes or no)."""
    active = {"yes": True, "no": False}.get(request.form.get("active", ""))
    try:
        changed = change_user(name, _edition(), request.form.get("role") or None, active)
    except (ApiError, HarvestSuiteError) as exc:
        return _refused("active" if active is not None else "role", _(
            "User %(name)s was not changed: %(reason)s.", name=name, reason=getattr(exc, "message", exc)))
    else:
        flash(_("User %(name)s is now %(role)s, active.", name=changed.name, role=changed.role.value)
              if changed.isactive else
              _("User %(name)s is now %(role)s, deactivated: its sessions and API tokens are refused.",
                name=changed.name, role=changed.role.value))
    return redirect(url_for("system.users"))


@blueprint.post("/system/users/<name>/password")
@require(ADMIN)
def reset_password(name: str) -> Any:
    """Set a user's password (forgotten or leaked); every session of the user ends."""
    new, repeated = request.form.get("new_password", ""), request.form.get("repeated_password", "")
    if new != repeated:
        return _refused("repeated_password", _(
            "The password of %(name)s was not changed: the new password and its repetition differ.", name=name))
    try:
        with database().begin() as conn:
            UserRepository(conn, actor()).set_password(name, new, _edition())
    except (ApiError, HarvestSuiteError) as exc:
        return _refused("new_password", _("The password of %(name)s was not changed: %(reason)s.", name=name,
                                          reason=getattr(exc, "message", exc)))
    else:
        flash(_("The password of %(name)s is changed; every session of the user has ended.", name=name))
    return redirect(url_for("system.users"))


@blueprint.get("/system/users/<name>/tokens")
@require(READ)
def tokens(name: str) -> Any:
    """A user's API tokens: admins see anybody's, every user their own."""
    admin_or_self(name)
    with database().connect() as conn:
        listed = UserRepository(conn).tokens(name)
    return render_template("system/tokens.html", name=name, tokens=listed)


@blueprint.post("/system/users/<name>/tokens/<int:token_id>/revoke")
@require(READ)
def revoke_token(name: str, token_id: int) -> Any:
    """Revoke one API token for good."""
    try:
        revoked = revoke(name, token_id)
    except (ApiError, HarvestSuiteError) as exc:
        flash(_("API token %(id)s was not revoked: %(reason)s.", id=token_id, reason=getattr(exc, "message", exc)),
              "error")
    else:
        flash(_("API token %(id)s of %(name)s is revoked: it is refused from now on (at the latest "
                "harvestsuite.webui.tokenCacheSeconds later by a web UI that had it in hand).",
                id=revoked.token_id, name=revoked.user))
    return redirect(url_for("system.tokens", name=name))
