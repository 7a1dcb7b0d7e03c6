"""Logging in, who may do what, and CSRF protection.

Every request but the login page and static files needs a user: from the session cookie (pages, and API
calls made by the pages) or from ``Authorization: Bearer TOKEN`` (scripts). What a role may do is one
table, ``PERMISSIONS``: every role reads; curators write definitions; operators act on jobs; archivists
export statistics; admins do all of that and manage users, crawl templates, harvest channels, extended
field definitions and the system.

A state-changing request authenticated by the session cookie must carry the session's CSRF token, as the
form field ``csrf_token`` or the header ``X-CSRF-Token``; one authenticated by an API token needs none
(a browser never sends that header on its own).
"""

from __future__ import annotations

import functools
import hmac
import secrets
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import Blueprint, Flask, abort, flash, g, redirect, render_template, request, session, url_for
from werkzeug.wrappers import Response

from harvestdef.model.definitions import Role, User
from harvestdef.repositories.users import UserRepository
from webui.context import current_user, database, token_cache

blueprint = Blueprint("auth", __name__, template_folder="templates")

READ, CURATE, OPERATE, EXPORT, ADMIN = "read", "curate", "operate", "export", "admin"
PERMISSIONS: dict[str, frozenset[Role]] = {
    READ: frozenset(Role),
    CURATE: frozenset({Role.CURATOR, Role.ADMIN}),
    OPERATE: frozenset({Role.OPERATOR, Role.ADMIN}),
    EXPORT: frozenset({Role.ARCHIVIST, Role.CURATOR, Role.ADMIN}),
    ADMIN: frozenset({Role.ADMIN}),
}
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
OPEN_ENDPOINTS = {"auth.login", "static"}
API_PREFIX = "/api/"

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
         ADMIN: "only admins do this"}


def csrf_token() -> str:
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = secrets.token_urlsafe(32)
    return token


def is_api_request() -> bool:
    return request.path.startswith(API_PREFIX)


def _user_for_token(token: str) -> User | None:
    with database().begin() as conn:
        return UserRepository(conn).user_for_token(token)


def _load_user() -> Response | None:
    g.user = None
    g.by_token = False
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        g.user = token_cache().user_for(header[len("Bearer "):].strip(), _user_for_token)
        if g.user is None:
            raise AuthError(401, "the API token is unknown or revoked")
        g.by_token = True
        return None
    name = session.get("user")
    if name:
        with database().connect() as conn:
            row_user = UserRepository(conn).find(name)
        if row_user is not None and row_user.isactive and row_user.edition == session.get("edition"):
            g.user = row_user
        else:
            session.clear()
    if request.endpoint in OPEN_ENDPOINTS:
        return None
    if g.user is None:
        if is_api_request():
            raise AuthError(401, "log in first: send Authorization: Bearer TOKEN (harvestsuite users token NAME)")
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


def _safe_next(target: str | None) -> str:
    """Only a path on this site: never redirect a login to somewhere else."""
    if not target:
        return url_for("system.home")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/"):
        return url_for("system.home")
    return target


@blueprint.route("/login", methods=["GET", "POST"])
def login() -> Any:
    if request.method == "POST":
        sent = request.form.get("csrf_token", "")
        if not sent or not hmac.compare_digest(sent.encode(), session.get("csrf", "").encode()):
            abort(400, "the login form's CSRF token is missing or wrong: reload the page")
        with database().begin() as conn:
            user = UserRepository(conn).authenticate(request.form.get("name", ""), request.form.get("password", ""))
        if user is None:
            flash("Unknown user or wrong password.", "error")
            return render_template("login.html"), 401
        session.clear()
        session.permanent = True
        session["user"] = user.name
        session["edition"] = user.edition
        csrf_token()
        return redirect(_safe_next(request.args.get("next")))
    return render_template("login.html")


@blueprint.route("/logout", methods=["POST"])
def logout() -> Any:
    session.clear()
    return redirect(url_for("auth.login"))
