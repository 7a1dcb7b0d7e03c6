"""The web UI for curators, operators and archivists, and its JSON API (docs/architecture.md, Packages and
who imports whom).

``create_app`` is all this module holds: it reads the settings once, opens the harvest
database, counts every request by route (``metrics``, served by the role on its own port), and registers one
blueprint per section: ``auth`` (login), ``language`` (the pages' language),
``definitions``, ``status`` (harvest status), ``history``, ``system``, and ``api`` (``/api/v1``, the same data
and actions as JSON).
"""

from __future__ import annotations

import datetime
import logging
import secrets
from typing import Any

from flask import Flask
from sqlalchemy import Engine

from harvestdef.settings import Settings, load_settings

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None, engine: Engine | None = None,
               test_config: dict[str, Any] | None = None) -> Flask:
    """The web UI on the harvest database of ``settings`` (or ``engine``, which the caller keeps owning)."""
    from harvestdef.db.guard import guard_writes
    from webui import (
        api,
        auth,
        definitions,
        formatting,
        formfields,
        history,
        language,
        live_words,
        metrics,
        qa,
        refusal_words,
        replaylinks,
        routing,
        status,
        system,
    )
    from webui.context import WebuiContext
    from webui.jsonbody import JsonBodyProvider

    settings = settings or load_settings()
    app = Flask(__name__)
    secret = settings.webui.secretKey
    if not secret:
        log.warning("harvestsuite.webui.secretKey is not set: sessions end when the web UI restarts")
        secret = secrets.token_urlsafe(32)
    app.config.update(
        SECRET_KEY=secret,
        PERMANENT_SESSION_LIFETIME=datetime.timedelta(seconds=settings.webui.sessionLifetime),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.webui.secureCookies,
        MAX_CONTENT_LENGTH=256 * 1024 * 1024,
        JSON_SORT_KEYS=False,
    )
    if test_config:
        app.config.update(test_config)
    app.json = JsonBodyProvider(app)
    metrics.init_app(app)  # first of the hooks: a request's time counts from its arrival
    context = WebuiContext.attach(app, settings, engine)
    guard_writes(context.engine)
    routing.init_app(app)
    auth.init_app(app)
    app.before_request(routing.refuse_unstorable_text)
    language.init_app(app)
    formatting.init_app(app)
    formfields.init_app(app)
    live_words.init_app(app)
    refusal_words.init_app(app)
    qa.init_app(app)
    replaylinks.init_app(app, settings.replay.url)
    for section in (auth, definitions, status, history, system):
        app.register_blueprint(section.blueprint)
    api.init_app(app)
    return app
