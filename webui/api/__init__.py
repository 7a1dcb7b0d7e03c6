"""The JSON API under ``/api/v1``: the data and actions of every page, described at ``/api/v1/openapi.json``.

Each area's routes live in a module of its own on the one blueprint of ``webui.api.core``.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Flask, current_app, jsonify, render_template
from werkzeug.exceptions import HTTPException

from webui.api import errors
from webui.api.core import blueprint
from webui.api.parameters import declared
from webui.auth import PERMISSIONS, is_api_request

_PARAMETER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


@blueprint.route("/openapi.json")
def openapi() -> Any:
    """This description: every route of the API with its methods, summary, path and query parameters."""
    paths: dict[str, dict[str, Any]] = {}
    prefix = blueprint.url_prefix or ""
    for rule in current_app.url_map.iter_rules():
        if not rule.rule.startswith(prefix):
            continue
        view = current_app.view_functions[rule.endpoint]
        path = _PARAMETER.sub(r"{\1}", rule.rule[len(prefix):])
        summary = (view.__doc__ or "").strip().split("\n")[0]
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            paths.setdefault(path, {})[method.lower()] = {
                "summary": summary, "operationId": f"{rule.endpoint}.{method.lower()}",
                "parameters": [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                               for name in rule.arguments] + [parameter.describe() for parameter in declared(view)],
                "security": [{"bearer": []}, {"session": []}],
                **_permission_of(view)}
    return jsonify({
        "openapi": "3.1.0",
        "info": {"title": "HarvestSuite API", "version": "1"},
        "servers": [{"url": prefix}],
        "components": {"securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "session": {"type": "apiKey", "in": "cookie", "name": "session"}}},
        "paths": paths,
    })


def _permission_of(view: Any) -> dict[str, Any]:
    """The route's permission of webui.auth.PERMISSIONS and the roles that have it (every logged-in user
    may read this description itself)."""
    permission = getattr(view, "permission", None)
    if permission is None:
        return {}
    return {"x-permission": permission, "x-roles": sorted(role.value for role in PERMISSIONS[permission])}


def answer_error(error: Exception) -> Any:
    """Every exception a view lets out, answered by the rule of webui/api/errors.py: a JSON error under
    /api/v1, an error page elsewhere (Werkzeug's own page for its 4xx, as before)."""
    if not is_api_request() and isinstance(error, HTTPException) and errors.is_client_error(error):
        return error
    translated = errors.translate(error)
    if not is_api_request():
        return render_template("error.html", status=translated.status, message=translated.message), \
            translated.status
    return errors.error_response(translated.code, translated.message, translated.field,
                                 error_id=translated.error_id)


def init_app(app: Flask) -> None:
    from webui.api import (  # noqa: F401 - their routes join the blueprint
        crawltemplates,
        domains,
        exports,
        extendedfields,
        harvests,
        history,
        jobs,
        schedules,
        summaries,
        system,
    )
    app.register_blueprint(blueprint)
    # Exception: every error, ours or not, goes through the one translation (Flask picks the handler of
    # the nearest class, so webui.auth's AuthError keeps its own).
    app.register_error_handler(Exception, answer_error)
