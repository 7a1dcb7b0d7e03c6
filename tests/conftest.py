"""Fixtures shared by the whole suite: settings, and a fresh harvest database per test on SQLite and on
the real PostgreSQL.

A test that starts from a harvest database gets a copy of a template made once per process
(tests/databases.py): a SQLite file, or a PostgreSQL database of its own. A test that starts from an empty
database gets a SQLite file, or on PostgreSQL a schema of its own in the run's database (created here,
dropped at the end), through the connection's search_path, so tests never see each other's rows.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from harvestdef.db.engine import open_engine
from harvestdef.settings import Settings, load_settings
from tests.databases import KINDS, Templates, install_pg_trgm
from tests.servers import PG_ADMIN_URL, in_ci, require_postgresql

SHARED_DIR = Path(__file__).resolve().parent.parent.parent / "shared"
_schema_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the checkout (NetarchiveSuite's crawl templates and DDL under fixtures/).

    A clone on its own has no ../shared: the tests that read it skip, saying why, unless CI is set, where
    a missing fixture is a failure (the same rule as for the servers, tests/servers.py).
    """
    if not SHARED_DIR.is_dir():
        message = f"{SHARED_DIR} is missing: this test reads NetarchiveSuite's files from ../shared/fixtures"
        if in_ci():
            pytest.fail(message + "; CI=true, so this is a failure, not a skip")
        pytest.skip(message)
    return SHARED_DIR


@pytest.fixture(scope="session")
def postgresql_database() -> Iterator[str]:
    """URL of a database made for this test run, dropped after it."""
    require_postgresql()
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"hs_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        install_pg_trgm(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _postgresql_schema_url(database_url: str) -> Iterator[str]:
    schema = f"t{next(_schema_numbers)}_{uuid.uuid4().hex[:6]}"
    owner = create_engine(database_url, isolation_level="AUTOCOMMIT")
    with owner.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield make_url(database_url).update_query_dict(
            {"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
    finally:
        with owner.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        owner.dispose()


@pytest.fixture(scope="session")
def database_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Templates]:
    """The harvest databases this process copies for its tests (tests/databases.py)."""
    templates = Templates(tmp_path_factory.mktemp("templates"), PG_ADMIN_URL)
    try:
        yield templates
    finally:
        templates.close()


def database_kind(request: pytest.FixtureRequest) -> str | None:
    """What the test's database holds at the start: the kind its ``database`` marker names
    (``@pytest.mark.database("users")``), else a harvest database if it asks for ``engine``, else nothing."""
    marker = request.node.get_closest_marker("database")
    if marker is not None:
        kind = marker.args[0]
        if kind not in KINDS:
            raise ValueError(f"@pytest.mark.database({kind!r}): the kinds are {', '.join(KINDS)}")
        return kind
    return "harvest" if "engine" in request.fixturenames else None


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The test's database, a SQLite file or a PostgreSQL database: a copy of a template of the kind
    ``database_kind`` says, or else empty (on PostgreSQL a fresh schema in the run's database)."""
    kind = database_kind(request)
    if request.param == "sqlite":
        if kind is None:
            yield f"sqlite:///{tmp_path / 'harvest.db'}"
        else:
            yield request.getfixturevalue("database_templates").sqlite_copy(kind, tmp_path / "harvest.db")
        return
    request.applymarker(pytest.mark.postgres)
    require_postgresql()
    if kind is None:
        yield from _postgresql_schema_url(request.getfixturevalue("postgresql_database"))
    else:
        yield from request.getfixturevalue("database_templates").postgresql_copy(kind)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'harvest.db'}"


@pytest.fixture
def postgresql_url(postgresql_database: str) -> Iterator[str]:
    """An empty schema on PostgreSQL only (for tests of COPY and other PostgreSQL paths)."""
    yield from _postgresql_schema_url(postgresql_database)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return load_settings(environ={}, overrides={"harvestsuite.database.url": database_url})


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """A harvest database with its schema and default rows, on SQLite and on PostgreSQL (``database_url``
    is a copy of the template, tests/databases.py)."""
    engine = open_engine(database_url)
    try:
        yield engine
    finally:
        engine.dispose()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the tests marked ``broker_restart`` last: they stop the broker or change its settings, which
    would disturb every other test that uses it meanwhile. The cluster files marked
    ``slow`` go first: the cluster stage hands its files out in this order (--no-loadscope-reorder), so each
    worker starts on one of the longest. The independent tests keep their order: handing their slowest out
    first made that stage slower (18.2 against 16.2 minutes on two cores), the heavy tests then running all
    at once."""
    items.sort(key=lambda item: (item.get_closest_marker("broker_restart") is not None,
                                 item.get_closest_marker("slow") is None))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium through Playwright, one per test module (tests/webui/browser.py says how it starts);
    the test skips saying why when it is missing and CI is unset."""
    from tests.webui.browser import launch_chromium, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()
