"""The crawl's per-URL state on disk, so memory stays bounded at any crawl size.

Heritrix keeps its already-seen set (BdbUriUniqFilter) and its queues (BdbFrontier) in BDB-JE behind a
bounded cache; this store does the same with one SQLite file:

- ``seen``: every URL the crawl has met, with its state (queued, done, hop-rejected, out of scope) and its
  shortest hop path, behind an LRU cache of ``cache_size`` URLs and a write buffer flushed in batches;
- ``pending``: queued URIs beyond the few at each queue's head (harvester/engine/frontier/frontier.py);
- ``deferred``: outlinks a page lost to the hop limit, offered again if the page is found by a shorter path;
- ``digests``: within-job payload digests of non-text captures, for revisit records.

Writes are not synced one by one: a checkpoint (``backup``) is the crawl's durable state, as in Heritrix.
This module knows nothing of HTTP, scope or WARCs.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

FLUSH_SIZE = 4096

_SCHEMA = """
CREATE TABLE IF NOT EXISTS seen (url TEXT PRIMARY KEY, state TEXT NOT NULL, best_path TEXT NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (seq INTEGER PRIMARY KEY, queue TEXT NOT NULL, hops INTEGER NOT NULL,
    url TEXT NOT NULL, hop_path TEXT NOT NULL, via TEXT NOT NULL, seed TEXT NOT NULL, attempts INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS pending_order ON pending (queue, hops, seq);
CREATE INDEX IF NOT EXISTS pending_url ON pending (url);
CREATE TABLE IF NOT EXISTS deferred (via TEXT NOT NULL, url TEXT NOT NULL, hop TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS deferred_via ON deferred (via);
CREATE TABLE IF NOT EXISTS digests (key TEXT PRIMARY KEY, url TEXT NOT NULL, date TEXT NOT NULL,
    record_id TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
"""

PendingRow = tuple[int, str, int, str, str, str, str, int]  # seq, queue, hops, url, hop_path, via, seed, attempts


class UrlStore:
    """One crawl's URL state in ``path``; ``fresh`` starts empty, else the file (a checkpoint's copy) is kept."""

    def __init__(self, path: Path, cache_size: int = 50_000, fresh: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # Durability comes from checkpoints; between them, speed. The page cache is bounded too.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute("PRAGMA cache_size=-16384")
        self._db.executescript(_SCHEMA)
        self.cache_size = cache_size
        self._cache: OrderedDict[str, tuple[str, str]] = OrderedDict()
        # True while every URL the file holds is in the cache as well (a fresh store, none evicted yet): a URL
        # missing from the cache is then unknown without asking SQLite, as most URLs a crawl meets first are
        self._cache_holds_all = fresh
        self._dirty: dict[str, tuple[str, str]] = {}
        self._pending_buffer: list[PendingRow] = []
        self._deferred_buffer: list[tuple[str, str, str]] = []
        row = self._db.execute("SELECT value FROM counters WHERE name = 'seen'").fetchone()
        self.seen_count = row[0] if row else 0

    # -- seen URLs ------------------------------------------------------------------------------------------
    def lookup(self, url: str) -> tuple[str, str] | None:
        """(state, best hop path) of a URL met before, else None."""
        entry = self._dirty.get(url)
        if entry is not None:
            return entry
        entry = self._cache.get(url)
        if entry is not None:
            self._cache.move_to_end(url)
            return entry
        if self._cache_holds_all:
            return None
        row = self._db.execute("SELECT state, best_path FROM seen WHERE url = ?", (url,)).fetchone()
        if row is None:
            return None
        self._remember(url, (row[0], row[1]))
        return row[0], row[1]

    def note(self, url: str, state: str | None = None, best_path: str | None = None) -> None:
        """Set a URL's state and/or best hop path (what is not given stays as it was)."""
        current = self.lookup(url)
        if current is None:
            self.seen_count += 1
            current = ("", "")
        entry = (state if state is not None else current[0], best_path if best_path is not None else current[1])
        self._dirty[url] = entry
        self._remember(url, entry)
        if len(self._dirty) >= FLUSH_SIZE:
            self._flush_seen()

    def _remember(self, url: str, entry: tuple[str, str]) -> None:
        self._cache[url] = entry
        self._cache.move_to_end(url)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)  # still in _dirty until flushed if it changed
            self._cache_holds_all = False

    def count_state(self, state: str) -> int:
        self.flush()
        return self._db.execute("SELECT COUNT(*) FROM seen WHERE state = ?", (state,)).fetchone()[0]

    # -- pending URIs ---------------------------------------------------------------------------------------
    def push_pending(self, row: PendingRow) -> None:
        self._pending_buffer.append(row)
        if len(self._pending_buffer) >= FLUSH_SIZE:
            self._flush_pending()

    def update_pending(self, url: str, hops: int, hop_path: str, via: str) -> bool:
        """A queued URL found by a shorter path: rewrite its row. False if it is not on disk."""
        for index, row in enumerate(self._pending_buffer):
            if row[3] == url:
                self._pending_buffer[index] = (row[0], row[1], hops, url, hop_path, via, row[6], row[7])
                return True
        cursor = self._db.execute("UPDATE pending SET hops = ?, hop_path = ?, via = ? WHERE url = ?",
                                  (hops, hop_path, via, url))
        return cursor.rowcount > 0

    def take_pending(self, queue: str, limit: int) -> list[PendingRow]:
        """The next ``limit`` URIs of a queue, shortest hop path first, removed from disk.

        One transaction for the buffered rows, the read and the delete: in autocommit each deleted row was
        a commit of its own, a WAL append and a lock taken and released, for every queue head refilled."""
        self._db.execute("BEGIN")
        try:
            if self._pending_buffer:
                self._db.executemany("INSERT INTO pending VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._pending_buffer)
            rows = self._db.execute("SELECT seq, queue, hops, url, hop_path, via, seed, attempts FROM pending "
                                    "WHERE queue = ? ORDER BY hops, seq LIMIT ?", (queue, limit)).fetchall()
            if rows:
                self._db.executemany("DELETE FROM pending WHERE seq = ?", [(row[0],) for row in rows])
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._pending_buffer.clear()
        return rows

    def delete_pending(self, matches: Callable[[str], bool]) -> list[tuple[str, str]]:
        """Remove from disk every queued URI whose URL ``matches``; their (queue, URL)."""
        self._flush_pending()
        # The test runs inside SQLite's scan, so a queue of millions is never read into memory at once.
        self._db.create_function("harvestsuite_matches", 1, lambda url: bool(matches(url)), deterministic=True)
        try:
            rows = self._db.execute("SELECT seq, queue, url FROM pending WHERE harvestsuite_matches(url)").fetchall()
        finally:
            self._db.create_function("harvestsuite_matches", 1, None)
        if rows:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM pending WHERE seq = ?", [(row[0],) for row in rows])
            self._db.execute("COMMIT")
        return [(queue, url) for _, queue, url in rows]

    def pending_counts(self) -> dict[str, int]:
        self._flush_pending()
        return dict(self._db.execute("SELECT queue, COUNT(*) FROM pending GROUP BY queue").fetchall())

    def max_sequence(self) -> int:
        self._flush_pending()
        return self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM pending").fetchone()[0]

    # -- deferred outlinks ----------------------------------------------------------------------------------
    def defer(self, via: str, url: str, hop: str) -> None:
        self._deferred_buffer.append((via, url, hop))
        if len(self._deferred_buffer) >= FLUSH_SIZE:
            self._flush_deferred()

    def take_deferred(self, via: str) -> list[tuple[str, str]]:
        self._flush_deferred()
        rows = self._db.execute("SELECT url, hop FROM deferred WHERE via = ?", (via,)).fetchall()
        if rows:
            self._db.execute("DELETE FROM deferred WHERE via = ?", (via,))
        return rows

    # -- within-job digests ---------------------------------------------------------------------------------
    def digest(self, key: str) -> tuple[str, str, str] | None:
        row = self._db.execute("SELECT url, date, record_id FROM digests WHERE key = ?", (key,)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def put_digest(self, key: str, original: tuple[str, str, str]) -> None:
        self._db.execute("INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?)", (key, *original))

    # -- durability -----------------------------------------------------------------------------------------
    def _flush_seen(self) -> None:
        if self._dirty:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO seen VALUES (?, ?, ?)",
                                 [(url, state, path) for url, (state, path) in self._dirty.items()])
            self._db.execute("INSERT OR REPLACE INTO counters VALUES ('seen', ?)", (self.seen_count,))
            self._db.execute("COMMIT")
            self._dirty.clear()

    def _flush_pending(self) -> None:
        if self._pending_buffer:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT INTO pending VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._pending_buffer)
            self._db.execute("COMMIT")
            self._pending_buffer.clear()

    def _flush_deferred(self) -> None:
        if self._deferred_buffer:
            self._db.executemany("INSERT INTO deferred VALUES (?, ?, ?)", self._deferred_buffer)
            self._deferred_buffer.clear()

    def flush(self) -> None:
        self._flush_seen()
        self._flush_pending()
        self._flush_deferred()

    def backup(self, target: Path) -> None:
        """A consistent copy of the whole store (the crawl is paused while a checkpoint is taken)."""
        self.flush()
        with sqlite3.connect(target) as copy:
            self._db.backup(copy)
        copy.close()

    def close(self) -> None:
        self.flush()
        self._db.close()
