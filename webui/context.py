"""What every view needs: the settings, the harvest database, and the logged-in user.

The engine is opened once per app (closed at interpreter exit when the app opened it); each view opens
its own connection or transaction with ``database()`` and closes it where it opened it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import Flask, current_app, g
from sqlalchemy import Engine

from harvestdef.db.engine import engine_from_settings
from harvestdef.model.definitions import User
from harvestdef.settings import Settings
from webui.tokencache import TokenCache
from webui.tokenuse import TokenUseRecorder

EXTENSION = "harvestsuite"


@dataclass
class WebuiContext:
    settings: Settings
    engine: Engine
    tokens: TokenCache = field(init=False)
    token_uses: TokenUseRecorder = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = TokenCache(self.settings.webui.tokenCacheSeconds)
        self.token_uses = TokenUseRecorder(self.engine, self.settings.webui.tokenUseInterval)

    @classmethod
    def attach(cls, app: Flask, settings: Settings, engine: Engine | None) -> WebuiContext:
        context = cls(settings, engine or engine_from_settings(settings.database))
        app.extensions[EXTENSION] = context
        return context


def webui_context() -> WebuiContext:
    return current_app.extensions[EXTENSION]


def webui_context_of(app: Flask) -> WebuiContext:
    """The context of ``app``, outside a request (the server that stops it)."""
    return app.extensions[EXTENSION]


def token_cache() -> TokenCache:
    """The API tokens this app found valid lately (webui/tokencache.py)."""
    return webui_context().tokens


def token_uses() -> TokenUseRecorder:
    """Where this app notes the uses of API tokens, written in the background (webui/tokenuse.py)."""
    return webui_context().token_uses


def database() -> Engine:
    """The harvest database of this app."""
    return webui_context().engine


def settings() -> Settings:
    return webui_context().settings


def current_user() -> User | None:
    """The user of this request (logged in by session or by API token), or None."""
    return g.get("user")


def actor() -> str:
    """The name the audit log records for this request's changes."""
    user = current_user()
    return user.name if user is not None else "anonymous"
