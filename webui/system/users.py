"""Pages of the users and their API tokens: admins add users and manage them (role, active, password) on
``/system/users``; every user makes, sees and revokes their own tokens on ``/system/users/NAME/tokens``
(admins see and revoke anybody's). Each form goes through the same actions as the API (webui/api/users.py),
so a refusal reads the same: nothing is changed, and the page is shown again with what was typed and each
refusal beside its field (webui/formfields.py), the refusal of a listed user's change also at the top and in
that user's row. Passwords typed are not sent back in a page.
The users table's column lengths, which the add-user form shows and checks, are read from the schema.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from flask import flash, redirect, render_template, request, session, url_for
from flask_babel import gettext as _

from harvestdef.db import schema as s
from harvestdef.errors import ConflictError, FieldError, HarvestSuiteError
from harvestdef.model.definitions import Role
from harvestdef.repositories.users import MAX_TOKEN_LABEL_LENGTH, MIN_PASSWORD_LENGTH, UserRepository
from harvestdef.validation import column_length
from webui.api.errors import ApiError
from webui.api.users import add_user, admin_or_self, change_user, make_token, revoke
from webui.auth import ADMIN, READ, require
from webui.context import actor, current_user, database
from webui.formatting import role_name
from webui.formfields import refuse
from webui.refusal_words import said
from webui.system import blueprint

NAME_LENGTH = column_length(s.users.c.name)
FULLNAME_LENGTH = column_length(s.users.c.fullname)
# the fields of the form that adds a user that a refusal may name; the form gives back what was typed into
# them (never the passwords: webui/system/templates/system/users.html)
ADDED_FIELDS = ("name", "fullname", "role")
# The tokens page's form carries a random one-time mark. Making a token records the mark with the token's id
# in the session, so the same form sent again (the page of the secret reloaded) makes no second token but
# says which token it made. The session is a signed cookie that its holder reads: it holds the mark and the
# id, never the secret, which is in the one answer that made the token and nowhere else (the database keeps
# its digest). The session travels with the browser, so this holds across any number of web UI processes;
# the latest MADE_TOKENS_KEPT marks are kept.
MADE_TOKENS = "made_tokens"
MADE_TOKENS_KEPT = 20


def _edition() -> int:
    try:
        return int(request.form.get("edition", ""))
    except ValueError:
        raise ApiError("invalid", "edition is missing: reload the page and try again", "edition") from None


def _users_page() -> str:
    with database().connect() as conn:
        repository = UserRepository(conn)
        people, tokens = repository.list_users(), repository.token_counts()
    # each role's option is sent as its code name and shown in the page's language
    return render_template("system/users.html", people=people, tokens=tokens,
                           roles=[(role.value, role_name(role)) for role in Role],
                           name_length=NAME_LENGTH, fullname_length=FULLNAME_LENGTH,
                           min_password_length=MIN_PASSWORD_LENGTH,
                           refused_user=request.view_args.get("name") if request.method == "POST" else None)


def _refused(field: str, message: str) -> tuple[str, int]:
    """The users' page again, status 400, with ``message`` at the top and beside ``field`` of that user."""
    flash(message, "error")
    refuse(field, message)
    return _users_page(), 400


@blueprint.get("/system/users")
@require(ADMIN)
def users() -> Any:
    """Every user with its role, whether active, and its unrevoked API tokens; and the form that adds one."""
    return _users_page()


def _exists(name: str) -> bool:
    with database().connect() as conn:
        return UserRepository(conn).find(name) is not None


def _taken(name: str) -> str:
    return _("A user named %(name)s exists already; a deactivated user keeps its name, so reactivate it instead.",
             name=name)


def _new_user_refusals(added: dict[str, str], password: str, repeated: str) -> dict[str, str]:
    """What is wrong with the new user's fields, by field, every one at once; empty if nothing is."""
    refusals = {}
    if not added["name"]:
        refusals["name"] = _("A user needs a name.")
    elif len(added["name"]) > NAME_LENGTH:
        refusals["name"] = _("A name has at most %(num)s characters; this one has %(count)s.", num=NAME_LENGTH,
                             count=len(added["name"]))
    elif _exists(added["name"]):
        refusals["name"] = _taken(added["name"])
    if len(added["fullname"]) > FULLNAME_LENGTH:
        refusals["fullname"] = _("A full name has at most %(num)s characters; this one has %(count)s.",
                                 num=FULLNAME_LENGTH, count=len(added["fullname"]))
    if added["role"] not in {role.value for role in Role}:
        refusals["role"] = _("%(role)s is not a role: choose curator, operator, archivist or admin.",
                             role=repr(added["role"]))
    if len(password) < MIN_PASSWORD_LENGTH:
        refusals["password"] = _("A password needs at least %(num)s characters; this one has %(count)s.",
                                 num=MIN_PASSWORD_LENGTH, count=len(password))
    elif password != repeated:
        refusals["repeated_password"] = _("The password and its repetition differ.")
    return refusals


@blueprint.post("/system/users")
@require(ADMIN)
def add() -> Any:
    """Add a user with a role and a password; refused, the form comes back as typed (but for the
    passwords) with each refusal beside its field."""
    added = {field: request.form.get(field, "").strip() for field in ADDED_FIELDS}
    refusals = _new_user_refusals(added, request.form.get("password", ""), request.form.get("repeated_password", ""))
    if not refusals:
        try:
            created = add_user(added["name"], added["role"], request.form.get("password", ""), added["fullname"])
        except ConflictError:  # added meanwhile by somebody else
            refusals["name"] = _taken(added["name"])
        except FieldError as exc:
            refusals[exc.field if exc.field in ADDED_FIELDS else "name"] = said(exc)
        else:
            flash(_("User %(name)s is added as %(role)s; it logs in with the password you gave it.",
                    name=created.name, role=role_name(created.role)))
            return redirect(url_for("system.users"))
    flash(_("The user was not added: %(reasons)s", reasons=" ".join(refusals.values())), "error")
    for field, message in refusals.items():
        refuse(field, message)
    return _users_page(), 400


@blueprint.post("/system/users/<name>")
@require(ADMIN)
def change(name: str) -> Any:
    """A user's new role, or its deactivation or reactivation (the form's ``active``: yes or no)."""
    active = {"yes": True, "no": False}.get(request.form.get("active", ""))
    try:
        changed = change_user(name, _edition(), request.form.get("role") or None, active)
    except (ApiError, HarvestSuiteError) as exc:
        return _refused("active" if active is not None else "role", _(
            "User %(name)s was not changed: %(reason)s.", name=name, reason=said(exc)))
    else:
        flash(_("User %(name)s is now %(role)s, active.", name=changed.name, role=role_name(changed.role))
              if changed.isactive else
              _("User %(name)s is now %(role)s, deactivated: its sessions and API tokens are refused.",
                name=changed.name, role=role_name(changed.role)))
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
                                          reason=said(exc)))
    else:
        flash(_("The password of %(name)s is changed; every session of the user has ended.", name=name))
    return redirect(url_for("system.users"))


def _tokens_page(name: str, **context: Any) -> str:
    admin_or_self(name)
    with database().connect() as conn:
        listed = UserRepository(conn).tokens(name)
    user = current_user()
    return render_template("system/tokens.html", name=name, tokens=listed,
                           own=user is not None and user.name == name.strip(), label_length=MAX_TOKEN_LABEL_LENGTH,
                           once=secrets.token_urlsafe(16), **context)


def _made_with(once: str) -> int | None:
    """The id of the token that the form of the one-time mark ``once`` made in this session, if it made one."""
    for sent, token_id in session.get(MADE_TOKENS, []):
        if hmac.compare_digest(sent, once):
            return int(token_id)
    return None


def _remember_made(once: str, token_id: int) -> None:
    session[MADE_TOKENS] = [*session.get(MADE_TOKENS, [])[-(MADE_TOKENS_KEPT - 1):], [once, token_id]]


def _made_already(name: str, token_id: int) -> Any:
    """The tokens page for a form sent again that made a token before: it names the token, makes none."""
    with database().connect() as conn:
        made = UserRepository(conn).token(token_id)  # tokens are revoked, never deleted
    return _tokens_page(name, made_already=made), 200, {"Cache-Control": "no-store"}


@blueprint.get("/system/users/<name>/tokens")
@require(READ)
def tokens(name: str) -> Any:
    """A user's API tokens, and for the user itself the form that makes one: admins see anybody's, every user
    their own."""
    return _tokens_page(name)


@blueprint.post("/system/users/<name>/tokens")
@require(READ)
def make(name: str) -> Any:
    """Make an API token of one's own, named by its label: the page shows its secret this once. The form sent
    again with the same one-time mark (the secret's page reloaded) makes none and says which it made."""
    label = request.form.get("label", "").strip()
    once = request.form.get("once", "")
    made_before = _made_with(once) if once else None
    if made_before is not None:
        return _made_already(name, made_before)
    field: str | None = "label"
    if not once:
        field, refusal = None, _("The form was sent without its one-time mark, which keeps it from making a second "
                                 "token when it is sent again: reload the page and make the token once more.")
    elif not label:
        refusal = _("A token needs a label: name it after the script or machine that will use it.")
    elif len(label) > MAX_TOKEN_LABEL_LENGTH:
        refusal = _("A label has at most %(num)s characters; this one has %(count)s.", num=MAX_TOKEN_LABEL_LENGTH,
                    count=len(label))
    else:
        try:
            secret, made = make_token(name, label)
        except FieldError as exc:
            refusal = exc.problem
        else:
            _remember_made(once, made.token_id)
            # the secret is in this answer only: never kept in the session, nor in a cache
            return _tokens_page(name, secret=secret, made=made), 201, {"Cache-Control": "no-store"}
    # refused: the form again with what was typed, the refusal beside the label and at the top
    flash(refusal, "error")
    refuse(field, refusal)
    return _tokens_page(name), 400


@blueprint.post("/system/users/<name>/tokens/<int:token_id>/revoke")
@require(READ)
def revoke_token(name: str, token_id: int) -> Any:
    """Revoke one API token for good."""
    try:
        revoked = revoke(name, token_id)
    except (ApiError, HarvestSuiteError) as exc:
        flash(_("API token %(id)s was not revoked: %(reason)s.", id=token_id, reason=said(exc)),
              "error")
    else:
        flash(_("API token %(id)s (%(label)s) of %(name)s is revoked: it is refused from now on (at the latest "
                "harvestsuite.webui.tokenCacheSeconds later by a web UI that had it in hand).",
                id=revoked.token_id, label=revoked.label or _("no label"), name=revoked.user))
    return redirect(url_for("system.tokens", name=name))
