"""The deduplication index file: a SQLite file with one row per payload digest.

Table ``dedup(digest TEXT PRIMARY KEY, url TEXT NOT NULL, date TEXT NOT NULL, record_id TEXT,
warc_file TEXT, warc_offset INTEGER)``; ``date`` is 14 digits (yyyyMMddHHmmss, UTC) and ``digest`` is
the WARC form, ``sha1:BASE32``. The writer keeps the first capture of a digest (the original, which later
revisits refer to). The reader opens the file read-only, so several crawls may share one index.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

_SCHEMA = """CREATE TABLE IF NOT EXISTS dedup (
    digest TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    date TEXT NOT NULL,
    record_id TEXT,
    warc_file TEXT,
    warc_offset INTEGER
)"""
_DATE = re.compile(r"^\d{14}$")


@dataclass(frozen=True)
class DedupEntry:
    """The original capture of a payload."""
    digest: str
    url: str
    date: str
    record_id: str | None = None
    warc_file: str | None = None
    warc_offset: int | None = None


class DedupIndexWriter:
    """Builds an index file; ``add`` keeps the first entry per digest. Commits when the block ends."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None

    def __enter__(self) -> DedupIndexWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(self.path)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute(_SCHEMA)
        return self

    def add(self, digest: str, url: str, date: str, record_id: str | None = None,
            warc_file: str | None = None, warc_offset: int | None = None) -> bool:
        """Add one capture; False when the digest was already present (the earlier capture stays)."""
        if self._connection is None:
            raise RuntimeError("DedupIndexWriter.add outside its with-block")
        if not _DATE.match(date):
            raise ValueError(f"date must be 14 digits (yyyyMMddHHmmss), got {date!r}")
        cursor = self._connection.execute(
            "INSERT OR IGNORE INTO dedup (digest, url, date, record_id, warc_file, warc_offset) "
            "VALUES (?, ?, ?, ?, ?, ?)", (digest, url, date, record_id, warc_file, warc_offset))
        return cursor.rowcount == 1

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._connection is None:
            return
        try:
            if exc_type is None:
                self._connection.commit()
            else:
                self._connection.rollback()
        finally:
            self._connection.close()
            self._connection = None


class DedupIndex:
    """Reads an index file: ``lookup(digest)`` returns the original capture or None."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None

    def __enter__(self) -> DedupIndex:
        if not self.path.is_file():
            raise FileNotFoundError(f"deduplication index {self.path} does not exist")
        self._connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        return self

    def lookup(self, digest: str) -> DedupEntry | None:
        if self._connection is None:
            raise RuntimeError("DedupIndex.lookup outside its with-block")
        row = self._connection.execute(
            "SELECT digest, url, date, record_id, warc_file, warc_offset FROM dedup WHERE digest = ?",
            (digest,)).fetchone()
        return DedupEntry(*row) if row else None

    def __len__(self) -> int:
        if self._connection is None:
            raise RuntimeError("DedupIndex used outside its with-block")
        return self._connection.execute("SELECT count(*) FROM dedup").fetchone()[0]

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
