"""The deduplication index file: every (digest, URL) capture of a set of jobs, in one SQLite file.

It answers both matching methods of the DeDuplicator (docs/architecture.md, Deduplication): by
digest, the earliest capture of a payload under any URL; by URL, the earliest capture of that URL with
that payload. So it keeps every (digest, URL) pair, each with its earliest capture::

    capture(digest TEXT, url TEXT, date INTEGER, record_id TEXT, warc_file_id INTEGER, warc_offset INTEGER,
            PRIMARY KEY (digest, url)) WITHOUT ROWID
    warc_file(id INTEGER PRIMARY KEY, name TEXT UNIQUE)     a job has few WARC files and millions of captures
    original(digest TEXT PRIMARY KEY, url TEXT) WITHOUT ROWID
        only digests captured under more than one URL: the URL of the earliest capture; for the others
        the one row in capture is the answer, so most digests cost nothing here
    meta(key TEXT PRIMARY KEY, value TEXT)                  format, job_ids, missing_job_ids, pairs

``digest`` is the WARC form ``sha1:BASE32``; ``date`` is the 14 digits yyyyMMddHHmmss (UTC) as an integer.

The writer builds the file under a temporary name beside its path, without journal or fsync while it
loads, and renames it into place only when its with-block ends without error: a crash or an error leaves
no index, never half of one. Bulk captures (``add_many``, and staging files that other processes wrote
with ``write_staging``) go to an unindexed staging table and are sorted and merged into ``capture`` once,
which is what makes millions of entries a matter of a minute. The staging table and the sort's spill files
live in SQLite's temporary directory (SQLITE_TMPDIR, else TMPDIR, else /var/tmp), which needs room for
them: each is about the size of the finished index.

The reader opens the file read-only and immutable, so several crawls may share one index.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType

from harvestdef.dedup.entries import DedupEntry, EntryFields
from harvestdef.errors import DedupFormatError
from harvestdef.files import fsync_directory

# Stored in meta; the reader refuses any other (the first format, one row per digest, had no meta table).
FORMAT = "2"
_DATE = re.compile(r"\d{14}", re.ASCII)
_STAGING_COLUMNS = "digest TEXT, url TEXT, date INTEGER, record_id TEXT, warc_file_id INTEGER, warc_offset INTEGER"
_SCHEMA = (
    "PRAGMA page_size = 8192",
    """CREATE TABLE capture (
        digest TEXT NOT NULL,
        url TEXT NOT NULL,
        date INTEGER NOT NULL,
        record_id TEXT,
        warc_file_id INTEGER,
        warc_offset INTEGER,
        PRIMARY KEY (digest, url)
    ) WITHOUT ROWID""",
    "CREATE TABLE warc_file (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
    "CREATE TABLE original (digest TEXT PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TEMP TABLE staging (" + _STAGING_COLUMNS + ")",
    "CREATE TEMP TABLE warc_file_map (part_id INTEGER PRIMARY KEY, id INTEGER NOT NULL)",
)
# A staging file: one process's share of the entries, numbered WARC files and all, for add_staging. A
# working file, so neither journalled nor synced.
_STAGING_FILE = (
    "PRAGMA journal_mode = OFF",
    "PRAGMA synchronous = OFF",
    "CREATE TABLE staging (" + _STAGING_COLUMNS + ")",
    "CREATE TABLE warc_file (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
)
# The file is unreachable under its temporary name until renamed, so it needs neither a journal nor fsync
# while loading; it is fsynced once, before the rename.
_BUILD_PRAGMAS = (
    "PRAGMA journal_mode = OFF",
    "PRAGMA synchronous = OFF",
    "PRAGMA locking_mode = EXCLUSIVE",
    "PRAGMA temp_store = FILE",
    "PRAGMA cache_size = -131072",  # 128 MiB: the sort of the staged entries runs in memory chunks this large
    "PRAGMA threads = 2",           # helper threads for that sort
)
# Here and in _ORIGINALS: with one min() in a query, SQLite takes the bare columns from the row holding
# the minimum, so each pair keeps its earliest capture whole.
_MERGE = """INSERT INTO capture (digest, url, date, record_id, warc_file_id, warc_offset)
    SELECT digest, url, min(date), record_id, warc_file_id, warc_offset FROM staging WHERE true
    GROUP BY digest, url
    ON CONFLICT (digest, url) DO UPDATE SET date = excluded.date, record_id = excluded.record_id,
        warc_file_id = excluded.warc_file_id, warc_offset = excluded.warc_offset
    WHERE excluded.date < capture.date"""
_ORIGINALS = """INSERT INTO original (digest, url)
    SELECT digest, url FROM (SELECT digest, url, min(date), count(*) AS urls FROM capture GROUP BY digest)
    WHERE urls > 1"""
_SELECT = """SELECT c.url, c.date, c.record_id, w.name, c.warc_offset
    FROM capture AS c LEFT JOIN warc_file AS w ON w.id = c.warc_file_id"""
_BY_URL = _SELECT + " WHERE c.digest = ?1 AND c.url = ?2"
_BY_DIGEST = _SELECT + """ WHERE c.digest = ?1 AND c.url = coalesce(
    (SELECT url FROM original WHERE digest = ?1), (SELECT url FROM capture WHERE digest = ?1 LIMIT 1))"""


class DedupIndexWriter:
    """Builds an index file at ``path``; it appears there when the with-block ends without error.

    ``add``, ``add_many`` and ``add_staging`` keep one capture per (digest, URL) pair, the earliest.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._temporary: Path | None = None
        self._connection: sqlite3.Connection | None = None
        self._warc_file_ids: dict[str, int] = {}
        self._staged = 0
        self._job_ids: tuple[int, ...] = ()
        self._missing_job_ids: tuple[int, ...] = ()

    def __enter__(self) -> DedupIndexWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._temporary = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}-{secrets.token_hex(6)}")
        self._connection = sqlite3.connect(self._temporary, isolation_level=None)
        try:
            for statement in _BUILD_PRAGMAS + _SCHEMA:
                self._connection.execute(statement)
        except BaseException:
            self._discard()
            raise
        return self

    def set_jobs(self, job_ids: Iterable[int], missing_job_ids: Iterable[int] = ()) -> None:
        """Record which jobs' entries the index holds and which were asked for but had none."""
        self._job_ids = tuple(sorted(set(job_ids)))
        self._missing_job_ids = tuple(sorted(set(missing_job_ids)))

    def add(self, digest: str, url: str, date: str, record_id: str | None = None,
            warc_file: str | None = None, warc_offset: int | None = None) -> bool:
        """Add one capture; False when the (digest, URL) pair was present (the earlier capture is kept)."""
        _check_date(date, digest, url)
        if self._staged:
            self._merge_staging()
        connection = self._transaction("add")
        row = connection.execute("SELECT date FROM capture WHERE digest = ? AND url = ?", (digest, url)).fetchone()
        values = (int(date), record_id, self._warc_file_id(warc_file), warc_offset, digest, url)
        if row is None:
            connection.execute("INSERT INTO capture (date, record_id, warc_file_id, warc_offset, digest, url) "
                               "VALUES (?, ?, ?, ?, ?, ?)", values)
            return True
        if int(date) < row[0]:
            connection.execute("UPDATE capture SET date = ?, record_id = ?, warc_file_id = ?, warc_offset = ? "
                               "WHERE digest = ? AND url = ?", values)
        return False

    def add_many(self, entries: Iterable[DedupEntry]) -> int:
        """Add captures in bulk and return how many were taken; pairs met before are merged when the block
        ends (the earliest capture of each pair is kept), so this does not say which pairs were new."""
        connection = self._transaction("add_many")
        fields = ((entry.digest, entry.url, entry.date, entry.record_id, entry.warc_file, entry.warc_offset)
                  for entry in entries)
        count = connection.executemany("INSERT INTO staging VALUES (?, ?, ?, ?, ?, ?)",
                                       _staging_rows(fields, self._warc_file_id)).rowcount
        self._staged += count
        return count

    def add_fields(self, fields: Iterable[EntryFields]) -> int:
        """add_many for captures as read_entry_fields yields them, without a DedupEntry per capture."""
        connection = self._transaction("add_fields")
        count = connection.executemany("INSERT INTO staging VALUES (?, ?, ?, ?, ?, ?)",
                                       _staging_rows(fields, self._warc_file_id)).rowcount
        self._staged += count
        return count

    @contextlib.contextmanager
    def all_or_nothing(self) -> Iterator[None]:
        """Captures added in the block are kept only if it ends without error (one job's entries, say)."""
        connection = self._transaction("all_or_nothing")
        staged = self._staged
        connection.execute("SAVEPOINT part")
        try:
            yield
        except BaseException:
            connection.execute("ROLLBACK TO part")
            connection.execute("RELEASE part")
            self._staged = staged
            raise
        connection.execute("RELEASE part")

    def add_staging(self, path: Path) -> int:
        """Add the captures of a staging file written by write_staging and return how many it held."""
        connection = self._open("add_staging")
        if connection.in_transaction:
            connection.execute("COMMIT")
        connection.execute("ATTACH DATABASE ? AS part", (str(path),))
        try:
            connection.execute("BEGIN")
            # The part numbers its WARC files its own way: map them to this writer's numbers.
            connection.execute("DELETE FROM warc_file_map")
            connection.executemany("INSERT INTO warc_file_map (part_id, id) VALUES (?, ?)", [
                (number, self._warc_file_id(name))
                for number, name in connection.execute("SELECT id, name FROM part.warc_file").fetchall()])
            count = connection.execute(
                "INSERT INTO staging SELECT s.digest, s.url, s.date, s.record_id, m.id, s.warc_offset "
                "FROM part.staging AS s LEFT JOIN warc_file_map AS m ON m.part_id = s.warc_file_id").rowcount
            connection.execute("COMMIT")
        finally:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            connection.execute("DETACH DATABASE part")
        self._staged += count
        return count

    def _warc_file_id(self, name: str | None) -> int | None:
        if name is None:
            return None
        found = self._warc_file_ids.get(name)
        if found is None:
            found = self._warc_file_ids[name] = len(self._warc_file_ids) + 1
        return found

    def _merge_staging(self) -> None:
        connection = self._transaction("merge")
        connection.execute(_MERGE)
        connection.execute("DELETE FROM staging")
        self._staged = 0

    def _open(self, what: str) -> sqlite3.Connection:
        if self._connection is None:
            raise RuntimeError(f"DedupIndexWriter.{what} outside its with-block")
        return self._connection

    def _transaction(self, what: str) -> sqlite3.Connection:
        """The connection inside a transaction: without one, every statement would write its pages out."""
        connection = self._open(what)
        if not connection.in_transaction:
            connection.execute("BEGIN")
        return connection

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._connection is None or self._temporary is None:
            return
        try:
            if exc_type is None:
                self._finish()
                _fsync_file(self._temporary)
                os.replace(self._temporary, self.path)
                fsync_directory(self.path.parent)
        finally:
            self._discard()

    def _finish(self) -> None:
        if self._staged:
            self._merge_staging()
        connection = self._transaction("finish")
        connection.execute(_ORIGINALS)
        connection.executemany("INSERT INTO warc_file (id, name) VALUES (?, ?)",
                               ((number, name) for name, number in self._warc_file_ids.items()))
        pairs = connection.execute("SELECT count(*) FROM capture").fetchone()[0]
        connection.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", (
            ("format", FORMAT),
            ("job_ids", ",".join(map(str, self._job_ids))),
            ("missing_job_ids", ",".join(map(str, self._missing_job_ids))),
            ("pairs", str(pairs))))
        connection.execute("COMMIT")
        connection.close()
        self._connection = None

    def _discard(self) -> None:
        """Close the connection and remove the temporary file (a no-op for a file already renamed)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._temporary is not None:
            self._temporary.unlink(missing_ok=True)
            self._temporary = None


def write_staging(path: Path, fields: Iterable[EntryFields]) -> int:
    """Write captures (as read_entry_fields yields them) to a new staging file for
    DedupIndexWriter.add_staging, and return how many; several processes can so load jobs at once.

    The file is a working file, neither journalled nor fsynced; on an error it is removed.
    """
    path = Path(path)
    warc_file_ids: dict[str, int] = {}

    def warc_file_id(name: str | None) -> int | None:
        return None if name is None else warc_file_ids.setdefault(name, len(warc_file_ids) + 1)

    connection = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in _STAGING_FILE:
            connection.execute(statement)
        connection.execute("BEGIN")
        count = connection.executemany("INSERT INTO staging VALUES (?, ?, ?, ?, ?, ?)",
                                       _staging_rows(fields, warc_file_id)).rowcount
        connection.executemany("INSERT INTO warc_file (id, name) VALUES (?, ?)",
                               ((number, name) for name, number in warc_file_ids.items()))
        connection.execute("COMMIT")
    except BaseException:
        connection.close()
        path.unlink(missing_ok=True)
        raise
    connection.close()
    return count


def _staging_rows(fields: Iterable[EntryFields],
                  warc_file_id: Callable[[str | None], int | None]) -> Iterator[tuple[object, ...]]:
    """Entry fields -> staging rows: the date as an integer, the WARC file by number."""
    for digest, url, date, record_id, warc_file, warc_offset in fields:
        _check_date(date, digest, url)
        yield digest, url, int(date), record_id, warc_file_id(warc_file), warc_offset


class DedupIndex:
    """Reads an index file: ``lookup`` returns the earliest capture that matches, or None."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        self._meta: dict[str, str] = {}

    def __enter__(self) -> DedupIndex:
        if not self.path.is_file():
            raise FileNotFoundError(f"deduplication index {self.path} does not exist")
        # immutable: a finished index never changes (a rebuild replaces the file by rename, and this
        # connection keeps reading the file it opened), so SQLite may skip the file locking and change
        # detection it would otherwise do on every query, which costs more than the lookup itself.
        self._connection = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True,
                                           check_same_thread=False)
        try:
            # Enough for every interior page of a 100-million-capture index, so a lookup reads about one page
            # from the file. Not mmap: that would put the whole file into the crawler's resident memory.
            self._connection.execute("PRAGMA cache_size = -65536")
            self._meta = dict(self._connection.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            self._close()
            raise DedupFormatError(self.path, None, f"not a deduplication index: {exc}") from exc
        if self._meta.get("format") != FORMAT:
            self._close()
            raise DedupFormatError(self.path, None, f"index format {self._meta.get('format')!r}, "
                                                    f"this version reads {FORMAT!r}")
        return self

    def lookup(self, digest: str, url: str | None = None) -> DedupEntry | None:
        """The earliest capture of ``digest``: under any URL when ``url`` is None (matching by digest),
        else under ``url`` only (matching by URL), None when there is none."""
        if self._connection is None:
            raise RuntimeError("DedupIndex.lookup outside its with-block")
        if url is None:
            row = self._connection.execute(_BY_DIGEST, (digest,)).fetchone()
        else:
            row = self._connection.execute(_BY_URL, (digest, url)).fetchone()
        if row is None:
            return None
        return DedupEntry(digest, row[0], f"{row[1]:014d}", row[2], row[3], row[4])

    @property
    def job_ids(self) -> tuple[int, ...]:
        """The jobs whose entries the index holds."""
        return self._id_list("job_ids")

    @property
    def missing_job_ids(self) -> tuple[int, ...]:
        """The jobs that were asked for but left out, because they had no stored entries."""
        return self._id_list("missing_job_ids")

    def __len__(self) -> int:
        """The number of (digest, URL) pairs."""
        self._open_meta()
        return int(self._meta["pairs"])

    def _id_list(self, key: str) -> tuple[int, ...]:
        value = self._open_meta()[key]
        return tuple(int(part) for part in value.split(",")) if value else ()

    def _open_meta(self) -> dict[str, str]:
        if self._connection is None:
            raise RuntimeError("DedupIndex used outside its with-block")
        return self._meta

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._close()


def _check_date(date: str, digest: str, url: str) -> None:
    if not isinstance(date, str) or not _DATE.fullmatch(date):
        raise ValueError(f"capture of {url!r} ({digest}): date must be 14 digits (yyyyMMddHHmmss), got {date!r}")


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as file:
        os.fsync(file.fileno())
