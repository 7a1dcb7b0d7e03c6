"""Harvest databases for tests, copied from templates each test process makes once.

Making a harvest database (``init_database``: the tables and their indexes, the Alembic stamp, the default
rows) costs a third of a second on SQLite and half a second to a second on PostgreSQL, several times that
on a busy machine; scrypt-hashing the web UI's users adds a fifth. A copy costs milliseconds on SQLite
(sqlite3's backup API) and tens of milliseconds on PostgreSQL (``CREATE DATABASE ... TEMPLATE``). So each
kind of database is made once per process (a pytest-xdist worker) and copied for every test that asks for
it; every copy is the test's own and goes when the test ends. The templates are the process's own too, so
no other process is connected to one while it is copied, which PostgreSQL requires.

On PostgreSQL, where a copy still takes a few hundred milliseconds of the server's writing on a busy
machine, the next copy of a kind is made while the test that took the last one runs, and the copies of
tests that ended are dropped meanwhile too: one thread of the process does both, in turn.

Kinds (``KINDS``): ``harvest``, the schema and default rows; ``users``, those and a user of every role in
``ROLES`` with the password ``PASSWORD``.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from harvestdef.repositories.users import UserRepository

ROLES = ("curator", "operator", "archivist", "admin")
PASSWORD = "correct horse battery"


def _harvest(engine: Engine) -> None:
    init_database(engine)


def _users(engine: Engine) -> None:
    init_database(engine)
    with engine.begin() as conn:
        users = UserRepository(conn)
        for role in ROLES:
            users.create(role, role, password=PASSWORD)


KINDS: dict[str, Callable[[Engine], None]] = {"harvest": _harvest, "users": _users}


def install_pg_trgm(database_url: str) -> None:
    """pg_trgm in a schema of its own, as sites install it: off every test's search_path, so the trigram
    indexes must name its operator class with the schema. Created by a test's schema instead, it would go
    with that schema's DROP ... CASCADE, and with it the trigram indexes of every other schema."""
    owner = create_engine(database_url, isolation_level="AUTOCOMMIT")
    try:
        with owner.connect() as conn:
            conn.execute(text("CREATE SCHEMA extensions"))
            conn.execute(text("CREATE EXTENSION pg_trgm SCHEMA extensions"))
            # the roles of the tests that are not the owner (the bulk import's) use its operator class too
            conn.execute(text("GRANT USAGE ON SCHEMA extensions TO PUBLIC"))
    finally:
        owner.dispose()


class Templates:
    """The templates of one test process: SQLite files under ``root``, PostgreSQL databases beside
    ``admin_url``'s, each made on first use; ``close`` drops the PostgreSQL ones."""

    def __init__(self, root: Path, admin_url: str) -> None:
        self.root = root
        self.admin_url = admin_url
        self._prefix = f"hs_tpl_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self._copies = itertools.count(1)
        self._sqlite: dict[str, Path] = {}
        self._postgresql: dict[str, str] = {}
        self._admin: Engine | None = None
        # one thread: a copy, and a drop, never overlaps the making of its template or another copy
        self._server_work = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-databases")
        self._ready: dict[str, Future[str]] = {}
        self._drops: list[Future[None]] = []

    def sqlite_copy(self, kind: str, path: Path) -> str:
        """A copy of the ``kind`` template at ``path``; its URL."""
        template = self._sqlite.get(kind)
        if template is None:
            template = self.root / f"{kind}.db"
            self._fill(kind, f"sqlite:///{template}")
            self._sqlite[kind] = template
        with closing(sqlite3.connect(template)) as source, closing(sqlite3.connect(path)) as copy:
            source.backup(copy)
        return f"sqlite:///{path}"

    def postgresql_copy(self, kind: str) -> Iterator[str]:
        """A new database copied from the ``kind`` template, its URL while the caller needs it; dropped after."""
        ready = self._ready.pop(kind, None) or self._server_work.submit(self._copy, kind)
        name = ready.result()
        self._ready[kind] = self._server_work.submit(self._copy, kind)
        try:
            yield self._url(name)
        finally:
            self._drops.append(self._server_work.submit(self._drop, name))

    def close(self) -> None:
        """Drop the copies made ahead and the templates, once the thread is done; a drop that failed is raised."""
        unused = [future.result() for future in self._ready.values()]
        self._server_work.shutdown(wait=True)
        for name in (*unused, *self._postgresql.values()):
            self._drop(name)
        self._ready.clear()
        self._postgresql.clear()
        for drop in self._drops:
            drop.result()
        if self._admin is not None:
            self._admin.dispose()

    def _copy(self, kind: str) -> str:
        template = self._postgresql.get(kind)
        if template is None:
            template = f"{self._prefix}_{kind}"
            self._create(template)
            url = self._url(template)
            install_pg_trgm(url)
            self._fill(kind, url)
            self._postgresql[kind] = template
        name = f"{self._prefix}_{next(self._copies)}"
        self._create(name, template)
        return name

    def _fill(self, kind: str, url: str) -> None:
        engine = open_engine(url)
        try:
            KINDS[kind](engine)
        finally:
            engine.dispose()

    def _url(self, name: str) -> str:
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)

    def _admin_engine(self) -> Engine:
        if self._admin is None:
            self._admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        return self._admin

    def _create(self, name: str, template: str | None = None) -> None:
        statement = f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
        with self._admin_engine().connect() as conn:
            conn.execute(text(statement))

    def _drop(self, name: str) -> None:
        with self._admin_engine().connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
