"""The JSON API under ``/api/v1``: the data and actions of every page, described at ``/api/v1/openapi.json``
and shown to people at ``/api/v1/docs``.

Each area's routes live in a module of its own on the one blueprint of ``webui.api.core``; the description
is webui/api/openapi.py, and every error a view lets out is answered here by webui/api/errors.py's rule.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, make_response, render_template, request
from flask_babel import gettext as _
from werkzeug.exceptions import HTTPException

from webui.api import errors
from webui.api.core import blueprint
from webui.auth import is_api_request


def _page_message(error: HTTPException) -> str:
    """What a page says of Werkzeug's 4xx: its own description where a view gave one (already in the page's
    language), else the sentence of its status in the page's language."""
    if error.description != type(error).description:
        return str(error.description)
    if error.code == 404:
        return _("There is no page at %(path)s: the address is mistyped, or what it named is gone.",
                 path=request.path)
    if error.code == 405:
        return _("%(path)s does not take a %(method)s request: use the page's own links and buttons.",
                 path=request.path, method=request.method)
    if error.code == 413:
        return _("What was sent is too large for this web UI.")
    return _("The request could not be read: reload the page and try again.")


def _error_page(error: HTTPException) -> Any:
    """Werkzeug's 4xx of a page (an unknown address, a method a route does not take) as a page of the web
    UI, in its language, with the headers Werkzeug gives it (a 405's Allow)."""
    status = error.code or 400
    response = make_response(render_template("error.html", status=status, message=_page_message(error)), status)
    for name, value in error.get_headers():
        if name.lower() != "content-type":
            response.headers[name] = value
    return response


def answer_error(error: Exception) -> Any:
    """Every exception a view lets out, answered by the rule of webui/api/errors.py: a JSON error under
    /api/v1, a page of the web UI elsewhere (error.html, Werkzeug's 4xx too)."""
    if not is_api_request() and isinstance(error, HTTPException) and errors.is_client_error(error):
        return _error_page(error)
    translated = errors.translate(error)
    if not is_api_request():
        from webui.refusal_words import words  # it imports the API's errors, which this package holds
        return render_template("error.html", status=translated.status, message=words(translated)[1]), \
            translated.status
    response = errors.error_response(translated.code, translated.message, translated.field,
                                     error_id=translated.error_id)
    if isinstance(error, HTTPException):  # a 405's Allow, a 401's WWW-Authenticate...
        for name, value in error.get_headers():
            if name.lower() != "content-type":
                response.headers[name] = value
    return response


def init_app(app: Flask) -> None:
    from webui.api import (  # noqa: F401 - their routes join the blueprint
        changes,
        channels,
        crawllog,
        crawltemplates,
        docs,
        domains,
        exports,
        extendedfields,
        harvests,
        harvestseeds,
        history,
        jobfiles,
        jobs,
        live,
        openapi,
        schedules,
        status,
        summaries,
        system,
        traps,
        users,
        webhooks,
    )
    app.register_blueprint(blueprint)
    app.register_blueprint(docs.docs)
    # Exception: every error, ours or not, goes through the one translation (Flask picks the handler of
    # the nearest class, so webui.auth's AuthError keeps its own).
    app.register_error_handler(Exception, answer_error)
