"""The web UI through Flask's test client, on a fresh harvest database (SQLite, and PostgreSQL where the test
asks for ``database_url``'s postgresql parameter): a user of every role, with an API token each, and
clients logged in through the login form as a browser is. For the browser tests: ``harvestsuite webui run``
with a curator (``webui``) and a page of Debian's chromium on it (``page``); a module that serves other
users, or a page of another kind, defines its own fixture of the same name."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, select

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import load_settings
from tests.databases import PASSWORD, ROLES, Templates
from webui import create_app

if TYPE_CHECKING:
    from tests.webui.browser import ServedWebui

def database_with_users(url: str) -> Iterator[Engine]:
    """The harvest database at ``url`` with a user of every role (``ROLES``, password ``PASSWORD``), opened and
    disposed of after: the ``webui_engine`` of this conftest (SQLite), and of a test module that runs on both
    databases (``database_url``, the module marked ``@pytest.mark.database("users")``)."""
    engine = open_engine(url)
    try:
        with engine.connect() as conn:
            missing = set(ROLES) - set(conn.scalars(select(s.users.c.name)))
        if missing:
            raise AssertionError(f"{url} has no user {', '.join(sorted(missing))}: mark the test module "
                                 "@pytest.mark.database(\"users\") so that its database_url is a copy of that template")
        yield engine
    finally:
        engine.dispose()


@pytest.fixture
def webui_engine(tmp_path: Path, database_templates: Templates) -> Iterator[Engine]:
    yield from database_with_users(database_templates.sqlite_copy("users", tmp_path / "harvest.db"))


@pytest.fixture
def app(webui_engine: Engine, tmp_path: Path) -> Flask:
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive"),
                                                    "harvestsuite.webui.tokenUseInterval": 1})
    return create_app(settings, webui_engine, {"TESTING": True})


@pytest.fixture
def tokens(webui_engine: Engine) -> dict[str, str]:
    """An API token per role: ``tokens["curator"]``."""
    with webui_engine.begin() as conn:
        return {role: UserRepository(conn).create_token(role) for role in ROLES}


@pytest.fixture
def api(app: Flask, tokens: dict[str, str]) -> Callable[..., object]:
    """``api("curator", "post", "/api/v1/domains", json={...})``: a call with that role's bearer token."""
    client = app.test_client()

    def call(role: str, method: str, path: str, **kwargs: object):
        headers = {"Authorization": f"Bearer {tokens[role]}", **kwargs.pop("headers", {})}  # type: ignore[dict-item]
        return getattr(client, method)(path, headers=headers, **kwargs)
    return call


def csrf_of(client: FlaskClient, path: str = "/login") -> str:
    page = client.get(path).get_data(as_text=True)
    match = re.search(r'name="csrf_token" value="([^"]+)"', page) or re.search(
        r'name="csrf-token" content="([^"]+)"', page)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


@pytest.fixture
def login(app: Flask) -> Callable[[str], FlaskClient]:
    """A client logged in as the user of ``role`` through the login form; ``client.csrf`` is its token."""
    def log_in(role: str) -> FlaskClient:
        client = app.test_client()
        token = csrf_of(client)
        response = client.post("/login", data={"name": role, "password": PASSWORD, "csrf_token": token})
        assert response.status_code == 302, response.get_data(as_text=True)
        client.csrf = csrf_of(client, "/")  # type: ignore[attr-defined]
        return client
    return log_in


@pytest.fixture
def webui(tmp_path: Path) -> Iterator[ServedWebui]:
    """``harvestsuite webui run`` on a fresh database with one user, the curator (tests/webui/browser.py)."""
    # imported here: tests/webui/browser.py imports this module for PASSWORD and ROLES
    from tests.webui.browser import ServedWebui

    with ServedWebui(tmp_path, users=("curator",)) as served:
        yield served


@pytest.fixture
def page(browser: Any, webui: ServedWebui) -> Iterator[Any]:
    """A page of the module's chromium (tests/conftest.py) at 1280 px, with ``webui`` as its base URL."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=webui.url)
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()
