"""Logging in, who may do what, and CSRF protection.

Every request but the login page and static files needs a user: from the session cookie (pages, and API
calls made by the pages) or from ``Authorization: Bearer TOKEN`` (scripts). What a role may do is one
table, ``PERMISSIONS``: every role reads; curators write definitions; operators act on jobs; archivists
export statistics; admins do all of that and manage users, crawl templates, harvest channels, extended
field definitions and the system. Only admins see a crawl template's credential values (passwords, form
items, cookie values): every other role reads the template as ``readable_template`` masks it, in the pages,
the API and the downloads (harvestdef/templatesecrets.py).

A state-changing request authenticated by the session cookie must carry the session's CSRF token, as the
form field ``csrf_token`` or the header ``X-CSRF-Token``; one authenticated by an API token needs none
(a browser never sends that header on its own).

Sessions: the cookie is signed, and it also carries the user's session generation
(harvestdef/repositories/users.py), checked against the database on every request. Logging out and
changing the password raise the generation, so every session of the user ends at once, in every client,
a copy of the cookie included.

Logins are throttled per user name and per client address (harvestdef/repositories/logins.py): past the
free failures, an attempt within the wait gets 429 with Retry-After and its password is not checked. Every
failed and every refused login is logged with the name and the address.
"""

from __future__ import annotations

import functools
import hmac
import logging
import math
import secrets
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import Blueprint, Flask, abort, flash, g, redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from flask_babel import ngettext
from werkzeug.wrappers import Response

from harvestdef.db.engine import write_transaction
from harvestdef.errors import HarvestSuiteError
from harvestdef.model.definitions import Role, User
from harvestdef.repositories.logins import LoginPolicy, LoginThrottle
from harvestdef.repositories.users import UserRepository
from harvestdef.templatesecrets import masked_template
from webui.context import current_user, database, settings, token_cache, token_uses

log = logging.getLogger(__name__)

blueprint = Blueprint("auth", __name__, template_folder="templates")

READ, CURATE, OPERATE, EXPORT, ADMIN, SECRETS = "read", "curate", "operate", "export", "admin", "secrets"
PERMISSIONS: dict[str, frozenset[Role]] = {
    READ: frozenset(Role),
    CURATE: frozenset({Role.CURATOR, Role.ADMIN}),
    OPERATE: frozenset({Role.OPERATOR, Role.ADMIN}),
    EXPORT: frozenset({Role.ARCHIVIST, Role.CURATOR, Role.ADMIN}),
    ADMIN: frozenset({Role.ADMIN}),
    SECRETS: frozenset({Role.ADMIN}),
}
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
OPEN_ENDPOINTS = {"auth.login", "language.choose", "static"}
API_PREFIX = "/api/"
# The API's page for people (webui/api/docs.py): under the API's prefix, yet a page, answered as pages are.
API_DOCS = "/api/v1/docs"

_F = TypeVar("_F", bound=Callable[..., Any])


class AuthError(Exception):
    """Not logged in (401) or not allowed (403); the message says which permission was missing."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def may(permission: str, user: User | None = None) -> bool:
    user = user or current_user()
    return user is not None and user.role in PERMISSIONS[permission]


def require(permission: str) -> Callable[[_F], _F]:
    """The view needs ``permission``; others get 403 naming it."""
    def decorate(view: _F) -> _F:
        @functools.wraps(view)
        def checked(*args: Any, **kwargs: Any) -> Any:
            user = current_user()
            if user is None:
                raise AuthError(401, "log in first")
            if not may(permission, user):
                raise AuthError(403, f"the {user.role.value} role may not {permission}: "
                                     f"{_WHAT[permission]}")
            return view(*args, **kwargs)
        checked.permission = permission  # type: ignore[attr-defined]  # openapi.json names it
        return checked  # type: ignore[return-value]
    return decorate


_WHAT = {READ: "read", CURATE: "curators and admins change definitions",
         OPERATE: "operators and admins act on jobs", EXPORT: "archivists, curators and admins export",
         ADMIN: "only admins do this", SECRETS: "only admins see credential values"}


def readable_template(document: str) -> str:
    """A crawl template (or a job's filled one) as the current user may read it: whole for admins, its
    credential values masked for every other role."""
    return document if may(SECRETS) else masked_template(document)


def csrf_token() -> str:
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = secrets.token_urlsafe(32)
    return token


def is_api_request() -> bool:
    path = request.path
    return path.startswith(API_PREFIX) and path != API_DOCS and not path.startswith(API_DOCS + "/")


def _token_owner(token: str) -> tuple[User, int] | None:
    # reads only: the use is noted, and written in the background (webui/tokenuse.py)
    with database().connect() as conn:
        return UserRepository(conn).token_owner(token)


def _load_user() -> Response | None:
    g.user = None
    g.by_token = False
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        owner = token_cache().user_for(header[len("Bearer "):].strip(), _token_owner)
        if owner is None:
            raise AuthError(401, "the API token is unknown or revoked")
        g.user, token_id = owner
        token_uses().note(token_id)
        g.by_token = True
        return None
    name = session.get("user")
    if name:
        with database().connect() as conn:
            g.user = UserRepository(conn).session_user(name, session.get("generation"))
        if g.user is None:
            session.clear()
    if request.endpoint in OPEN_ENDPOINTS:
        return None
    if g.user is None:
        if is_api_request():
            raise AuthError(401, "log in first: send Authorization: Bearer TOKEN, a token made on your API tokens "
                                     "page (or with harvestsuite users token NAME)")
        return redirect(url_for("auth.login", next=request.full_path if request.query_string else request.path))
    if request.method in UNSAFE_METHODS:
        sent = request.headers.get("X-CSRF-Token") or request.form.get("csrf_token", "")
        if not sent or not hmac.compare_digest(sent.encode(), session.get("csrf", "").encode()):
            raise AuthError(403, "the form's CSRF token is missing or wrong: reload the page and try again")
    return None


def _auth_error(error: AuthError) -> Any:
    if is_api_request():
        from webui.api.errors import error_response
        return error_response("unauthorized" if error.status == 401 else "forbidden", error.message, None,
                              error.status)
    if error.status == 401:
        return redirect(url_for("auth.login"))
    return render_template("error.html", status=error.status, message=error.message), error.status


def init_app(app: Flask) -> None:
    app.before_request(_load_user)
    app.register_error_handler(AuthError, _auth_error)
    app.jinja_env.globals.update(csrf_token=csrf_token, may=may, current_user=current_user,
                                 has_endpoint=lambda endpoint: endpoint in app.view_functions,
                                 READ=READ, CURATE=CURATE, OPERATE=OPERATE, EXPORT=EXPORT, ADMIN=ADMIN)


def safe_next(target: str | None) -> str:
    """Only a path on this site: never redirect a login or the language switch to somewhere else (a browser
    reads "/\\host" as "//host")."""
    if not target:
        return url_for("system.home")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("/\\"):
        return url_for("system.home")
    return target


def _policy() -> LoginPolicy:
    return LoginPolicy.from_settings(settings().webui)


def _throttled(name: str, template: str, **context: Any) -> Any | None:
    """The 429 answer if a login of ``name`` from this address must wait still; None if it may be tried."""
    address = request.remote_addr
    with database().connect() as conn:
        wait = LoginThrottle(conn, _policy()).wait_for(name, address)
    if wait <= 0:
        return None
    seconds = max(1, math.ceil(wait))
    log.warning("login of user %r from %s refused: too many failed logins, %d s to wait", name, address, seconds)
    flash(ngettext("Too many failed logins of this user or from this address: try again in %(num)s second.",
                   "Too many failed logins of this user or from this address: try again in %(num)s seconds.",
                   seconds), "error")
    return render_template(template, **context), 429, {"Retry-After": str(seconds)}


def _check_password(name: str, password: str) -> User | None:
    """The user if the password is right, counting the failure (and logging it) if not."""
    address = request.remote_addr
    with database().connect() as conn:
        user = UserRepository(conn).authenticate(name, password)
        # a login with no failures before it writes nothing: logins do not queue for the write lock
        forgets = user is not None and LoginThrottle(conn, _policy()).has_failures(name)
    if user is not None and not forgets:
        return user
    with write_transaction(database()) as conn:
        throttle = LoginThrottle(conn, _policy())
        if user is not None:
            throttle.record_success(name)
            return user
        counts = throttle.record_failure(name, address)
    log.warning("failed login of user %r from %s (%d in a row of the user, %d of the address; next wait %g s)",
                name, address, counts.user_failures, counts.address_failures, counts.wait)
    return None


def _start_session(user: User) -> None:
    with database().connect() as conn:
        generation = UserRepository(conn).session_generation(user.name)
    session.clear()
    session.permanent = True
    session["user"] = user.name
    session["generation"] = generation
    csrf_token()


def check_form_csrf(what: str) -> None:
    sent = request.form.get("csrf_token", "")
    # bytes: compare_digest raises on a str that is not ASCII, which a client may send
    if not sent or not hmac.compare_digest(sent.encode(), session.get("csrf", "").encode()):
        abort(400, _("the %(form)s form's CSRF token is missing or wrong: reload the page", form=what))


@blueprint.route("/login", methods=["GET", "POST"])
def login() -> Any:
    if request.method == "POST":
        check_form_csrf("login")
        name = request.form.get("name", "").strip()
        refused = _throttled(name, "login.html")
        if refused is not None:
            return refused
        user = _check_password(name, request.form.get("password", ""))
        if user is None:
            flash(_("Unknown user or wrong password."), "error")
            return render_template("login.html"), 401
        _start_session(user)
        return redirect(safe_next(request.args.get("next")))
    return render_template("login.html")


@blueprint.route("/logout", methods=["POST"])
def logout() -> Any:
    """End every session of the user, in every client (a copied cookie too), not only this one."""
    user = current_user()
    if user is not None and not g.by_token:
        with write_transaction(database()) as conn:
            UserRepository(conn).end_sessions(user.name)
    session.clear()
    return redirect(url_for("auth.login"))


@blueprint.route("/password", methods=["GET", "POST"])
def password() -> Any:
    """The logged-in user's own password: the current one, then the new one twice. Every session of the
    user ends with the change, this one too: the user logs in again with the new password."""
    user = current_user()
    if user is None or g.by_token:
        raise AuthError(401, "log in first")
    if request.method == "GET":
        return render_template("password.html")
    refused = _throttled(user.name, "password.html")
    if refused is not None:
        return refused
    new, repeated = request.form.get("new_password", ""), request.form.get("repeated_password", "")
    if _check_password(user.name, request.form.get("password", "")) is None:
        flash(_("The current password is wrong."), "error")
        return render_template("password.html"), 401
    if new != repeated:
        flash(_("The new password and its repetition differ."), "error")
        return render_template("password.html"), 400
    try:
        with write_transaction(database()) as conn:
            UserRepository(conn, actor=user.name).set_password(user.name, new, user.edition)
    except HarvestSuiteError as exc:
        from webui.refusal_words import said  # the refusals' words need the API's errors, which import this module
        flash(_("The password was not changed: %(reason)s.", reason=said(exc)), "error")
        return render_template("password.html"), 400
    log.info("user %r changed the password from %s; every session of the user ended", user.name,
             request.remote_addr)
    session.clear()
    flash(_("Password changed: every session of yours has ended. Log in with the new password."))
    return redirect(url_for("auth.login"))
