"""The JSON API under ``/api/v1``: the data and actions of every page, described at ``/api/v1/openapi.json``
and shown to people at ``/api/v1/docs``.

Each area's routes live in a module of its own on the one blueprint of ``webui.api.core``; the description
is webui/api/openapi.py, and every error a view lets out is answered here by webui/api/errors.py's rule.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, render_template
from werkzeug.exceptions import HTTPException

from webui.api import errors
from webui.api.core import blueprint
from webui.auth import is_api_request


def answer_error(error: Exception) -> Any:
    """Every exception a view lets out, answered by the rule of webui/api/errors.py: a JSON error under
    /api/v1, an error page elsewhere (Werkzeug's own page for its 4xx, as before)."""
    if not is_api_request() and isinstance(error, HTTPException) and errors.is_client_error(error):
        return error
    translated = errors.translate(error)
    if not is_api_request():
        return render_template("error.html", status=translated.status, message=translated.message), \
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
