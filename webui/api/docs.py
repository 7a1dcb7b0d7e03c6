"""The API described for people: ``/api/v1/`` answers with where the description and its page are and the
resources a client starts from, each with its link, and
``/api/v1/docs`` is a page of the web UI that renders ``/api/v1/openapi.json`` with Swagger UI.

Swagger UI's files (its script bundle and style sheet) come from the flask-swagger-ui package, which ships
them as they are released, and are served from here under ``/api/v1/docs/assets/``: the page loads nothing
from another origin (its online validator, which would send the description out, is switched off in
static/apidocs.js). The page is a page of the UI, not an answer of the API: it has a blueprint of its own,
so openapi.json does not list it, and webui.auth treats its paths as pages (a login form, not a 401).
Calls made from it with "Try it out" are the logged-in user's own, with the session's CSRF token.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

from flask import Blueprint, abort, current_app, render_template, send_from_directory, url_for
from flask_babel import gettext as _

from webui.api.core import blueprint
from webui.api.shapes import STRING, answers, described, shape
from webui.auth import API_DOCS, READ, require

docs = Blueprint("apidocs", __name__, url_prefix=API_DOCS)

# the Swagger UI files the page uses, of those the package ships
ASSETS = frozenset({"swagger-ui-bundle.js", "swagger-ui.css"})
ASSET_MAX_AGE = 7 * 24 * 3600  # the page asks for them with the Swagger UI version in the URL


@functools.cache
def swagger_ui_files() -> Path:
    """The directory of Swagger UI's files in the installed flask-swagger-ui package."""
    spec = importlib.util.find_spec("flask_swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the API page needs the Python package flask-swagger-ui (a dependency of harvestsuite): "
                           "pip install -e .")
    return Path(next(iter(spec.submodule_search_locations))) / "dist"


@functools.cache
def swagger_ui_version() -> str:
    return (swagger_ui_files() / "VERSION").read_text(encoding="utf-8").strip().lstrip("v")


RESOURCE = shape({"name": described(STRING, "the resource's path below /api/v1/"),
                  "url": STRING, "summary": described(STRING, "what GET on it answers")})


def resources() -> list[dict[str, str]]:
    """The API's resources a client starts from: every GET route without a path parameter (the lists, and
    what the status and definition pages show), by path, each with the first sentence of its description."""
    found = []
    for rule in current_app.url_map.iter_rules():
        if not rule.endpoint.startswith("api.") or rule.arguments or "GET" not in (rule.methods or ()):
            continue
        path = rule.rule.removeprefix(blueprint.url_prefix or "").strip("/")
        if not path or rule.endpoint in ("api.api_index", "api.openapi"):
            continue
        doc = (current_app.view_functions[rule.endpoint].__doc__ or "").strip()
        found.append({"name": path, "url": url_for(rule.endpoint),
                      "summary": " ".join(doc.split("\n\n", 1)[0].split())})
    return sorted(found, key=lambda resource: resource["name"])


@blueprint.get("/")
@answers(shape({"title": STRING, "description": described(STRING, "this API's OpenAPI 3.1 description"),
                "docs": described(STRING, "the page that renders the description, for people"),
                "resources": {"type": "array", "items": RESOURCE,
                              "description": "every resource a client starts from, by name, with its link"}}))
@require(READ)
def api_index() -> Any:
    """Where this API is described (its OpenAPI description, ``description``, and the page that renders it,
    ``docs``) and its resources with their links (``resources``)."""
    return {"title": "HarvestSuite API, version 1", "description": url_for("api.openapi"),
            "docs": url_for("apidocs.page"), "resources": resources()}


@docs.get("")
@require(READ)
def page() -> Any:
    """The API page: the description rendered by Swagger UI, every route with its roles and parameters."""
    return render_template("apidocs.html", swagger_ui_version=swagger_ui_version())


@docs.get("/assets/<name>")
@require(READ)
def asset(name: str) -> Any:
    """One of Swagger UI's files, from the installed package."""
    if name not in ASSETS:
        abort(404, _("no file %(name)s of the API page", name=repr(name)))
    return send_from_directory(swagger_ui_files(), name, max_age=ASSET_MAX_AGE)
