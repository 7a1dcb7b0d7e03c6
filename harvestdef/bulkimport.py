"""Bulk import of domains from a file of domain names or URLs (``harvestsuite domains import``).

Each line (UTF-8; blank lines and ``#`` comments ignored) names a domain, a host or a URL; it becomes its
registered domain (IDNs stored in Unicode) by the same rule as every other way of creating domains
(harvestdef.domainnames.domain_of_typed), and a line taken as another name is counted (``taken_as_domain``)
and reported to ``on_note``. The whole file is checked before anything is written: if any line is refused,
every refused line is reported (``on_bad_line``: file, line number, line, reason), RefusedLinesError is
raised and nothing is stored. Every new domain gets, as NetarchiveSuite's
Domain.getDefaultDomain does, a configuration (settings.domain.defaultConfig, on the
template settings.domain.defaultOrderxml, with the default limits), a seed list
(settings.domain.defaultSeedlist, the default seeds) linked to it, and domains.defaultconfig set.

How it stays fast (2 million lines in under a minute on PostgreSQL on two cores): lines are read in
blocks and checked as a stream (by a worker process for large files), good names go into a staging table
(COPY on PostgreSQL, executemany on SQLite), and each batch is written with a handful of set-based
INSERT ... SELECT statements. On PostgreSQL ids are drawn from the sequences first, so one statement
inserts domains, configurations, seed lists and links with defaultconfig already set. A large batch
drops the secondary indexes and unique constraints of the four domain tables and turns the foreign-key
triggers off for its transaction (session_replication_role, when the role may; otherwise it drops the
foreign keys too), loads, and restores everything in the same transaction (the steps of
harvestdef.bulkload).

How it stays correct when interrupted: each batch is one transaction, so a batch is either wholly in
the database or not at all; a rerun finds the committed domains already present. A domain that exists
without a default configuration (from any cause) is repaired: whatever it lacks of configuration, seed
list, link and defaultconfig is added. One audit_log row describes the whole import; every batch
updates its counts, and ``complete`` says whether the run got to the end of the file.

How it shares SQLite with running writers (the demo's scheduler, controller and web UI): a batch reads
before it writes, and a deferred SQLite transaction that does so fails at its first write ("database is
locked") whenever another writer committed after its read. So each SQLite batch takes the write lock first
(BEGIN IMMEDIATE, as harvestdef.db.engine.write_transaction does), waiting up to ``lock_timeout`` seconds
for it; its names are read and parsed before, not while it holds the lock; batches are small (50,000
names, about a second of writing; after a batch that held the lock longer, on a loaded machine, the next
is smaller in proportion, down to 10,000 names) and a pause after each commit lets every writer that waited in
SQLite's busy handler take its turn. A lock not had within the timeout stops the import with a sentence
that says so, the committed batches kept. PostgreSQL's batches are ordinary transactions beside others.

Memory: only the set of names seen so far (for the duplicate count) grows with the file.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from sqlalchemy import Connection, Engine, insert, literal_column, select, text, update
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

from harvestdef.bulkload import copy_rows, restore_constraints, set_aside_constraints, skip_foreign_key_checks
from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql
from harvestdef.db.types import utcnow
from harvestdef.domainnames import MAX_URL_LENGTH, default_seeds, domain_of_typed, public_suffixes
from harvestdef.errors import (
    DatabaseBusyError,
    DatabaseError,
    DomainNameError,
    LineRefusal,
    NotFoundError,
    RefusedLinesError,
    causes,
    shown,
)
from harvestdef.phrases import N_, Phrase, english, phrase
from harvestdef.repositories.definitioncounts import add_tld_counts, recheck_unused
from harvestdef.repositories.domains import DomainDefaults
from harvestdef.settings import Settings

# The common line, "example.dk" or "http://www.example.dk/path", is handled without the general URL
# parser, IDNA codec and checks of harvestdef.domainnames, which cost ~70 µs a line (two minutes for two
# million lines). The fast path accepts only plain lower-ASCII host names that those checks would accept
# unchanged (no "--", so no punycode; no numeric last label, so no IP address), a port from 1 to 65535 and
# a path of printable ASCII without spaces, and asks the same public-suffix list; everything else takes the
# general path. tests/harvestdef/test_bulkimport.py checks that both paths agree.
_SIMPLE_LINE = re.compile(r"(?:https?://)?([a-z0-9.-]+)(?::([0-9]{1,5}))?(?:[/?#][!-~]*)?",
                          re.ASCII | re.IGNORECASE)
_PLAIN_HOST = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9-]{1,63}(?<!-))+", re.ASCII)
_MAX_HOST_LENGTH = 253

# Refused lines a RefusedLinesError of an import carries (on_bad_line gets every one of them).
KEPT_REFUSALS = 1000

# Rows per executemany on SQLite.
_SQLITE_CHUNK = 10_000
# Names per SQLite transaction: about a second of holding the write lock on two cores, so the writers
# beside an import wait no longer than that, while the pauses between batches add under 2 s to 800,000.
_SQLITE_BATCH = 50_000
# A SQLite batch that held the write lock longer than this (a loaded machine, a slow disk) makes the next
# one smaller in proportion, down to _SQLITE_SMALLEST_BATCH names, and quicker ones let it grow back to the
# batch size: a lease renewal or a job's status waiting beside the import is let in after about this long,
# however slow the machine is today.
_SQLITE_HOLD_SECONDS = 1.0
_SQLITE_SMALLEST_BATCH = 10_000
# SQLite's busy handler lets a waiting writer try again at most every 100 ms: a pause this long after
# each commit gives every writer that waited for the import's lock a try before the next batch takes it.
_SQLITE_PAUSE = 0.1
_DOMAIN_TABLES = ("domains", "configurations", "seedlists", "config_seedlists")


def _next_sqlite_batch(size: int, largest: int, held: float) -> int:
    """The names of the next SQLite batch after one of ``size`` held the write lock ``held`` seconds:
    scaled to hold it about _SQLITE_HOLD_SECONDS, within _SQLITE_SMALLEST_BATCH (or ``largest``, if
    smaller) and ``largest``, and at most doubled at once."""
    smallest = min(largest, _SQLITE_SMALLEST_BATCH)
    wanted = size * _SQLITE_HOLD_SECONDS / max(held, 1e-3)
    return max(smallest, min(largest, 2 * size, int(wanted)))


def domain_of_line(line: str) -> str:
    """The registered domain named by one stripped input line; DomainNameError with the reason if none."""
    match = _SIMPLE_LINE.fullmatch(line)
    if match is not None and len(line) <= MAX_URL_LENGTH and (match.group(2) is None
                                                              or 0 < int(match.group(2)) < 65536):
        host = match.group(1).lower()
        if (len(host) <= _MAX_HOST_LENGTH and "--" not in host and _PLAIN_HOST.fullmatch(host)
                and not host.rpartition(".")[2].isdigit()):
            domain = public_suffixes().privatesuffix(host)
            if domain is not None:
                return domain
    return domain_of_typed(line).domain


def is_plain_domain(domain: str) -> bool:
    """True if the default seeds are the plain ``http(s)://[www.]D`` forms (no IDN, no IP address, not a
    www host itself: domainnames.default_seeds)."""
    return (domain.isascii() and ":" not in domain and not domain.rpartition(".")[2].isdigit()
            and not domain.startswith("www."))


def seeds_of(domain: str) -> str:
    """The default seed list of a domain as stored: the seeds, newline-joined."""
    if is_plain_domain(domain):
        # the plain-ASCII case of default_seeds, without its per-call IP address parse
        return f"http://www.{domain}\nhttps://www.{domain}\nhttp://{domain}\nhttps://{domain}"
    return "\n".join(default_seeds(domain))


# The seed list of a plain domain is built by the database from the name (``:newline`` is "\n"), so the
# staging rows stay small; only IDNs and IP addresses carry their seeds (seeds_of) into the database.
_PLAIN_SEEDS_SQL = ("'http://www.' || n.name || :newline || 'https://www.' || n.name || :newline || "
                    "'http://' || n.name || :newline || 'https://' || n.name")


@dataclass(frozen=True)
class BadLine:
    """A line that names no domain: where it is, what it says, and why it was refused."""

    path: str
    line_number: int
    text: str
    reason: str
    # the reason as a phrase, which the domains page says in its language; ``reason`` is its English
    phrase: Phrase | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.path}:{self.line_number}: {self.text}: {self.reason}"


@dataclass(frozen=True)
class TakenLine:
    """A line that was taken as another name than it says: ``www.kb.dk`` or a URL as its registered domain."""

    path: str
    line_number: int
    text: str
    domain: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line_number}: {self.text} was taken as {self.domain}"


@dataclass
class ImportCounts:
    """What an import did; ``already_present`` includes ``repaired`` (present, but had no configuration)."""

    lines_read: int = 0
    domains_created: int = 0
    already_present: int = 0
    repaired: int = 0
    duplicates_in_file: int = 0
    bad_lines: int = 0
    taken_as_domain: int = 0
    batches: int = 0
    complete: bool = False
    seconds: float = 0.0

    def summary(self) -> str:
        return (f"lines read: {self.lines_read}, domains created: {self.domains_created}, "
                f"already present: {self.already_present} (repaired: {self.repaired}), "
                f"duplicates in file: {self.duplicates_in_file}, bad lines: {self.bad_lines}, "
                f"taken as their registered domain: {self.taken_as_domain}, "
                f"seconds: {self.seconds:.1f}")


class _Bad(NamedTuple):
    """A line that names no domain, as a parsing worker returns it."""

    text: str
    reason: str | Phrase


class _Taken(NamedTuple):
    """A line that names its domain by a host or URL: the line, and its entry as a plain or other domain."""

    text: str
    entry: str | tuple[str, str]


# One parsed line: None (blank or comment), a plain domain, (domain, seeds) for an IDN or IP domain, _Taken
# for either of those written as a host or URL, or _Bad.
_Entry = str | tuple[str, str] | _Taken | _Bad | None


def parse_block(block: bytes, starts_file: bool) -> list[_Entry]:
    """Parse whole lines of the file, one entry per line (runs in worker processes for large files)."""
    entries: list[_Entry] = []
    lines = block.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    for index, raw in enumerate(lines):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            entries.append(_Bad(shown(raw.decode("utf-8", "replace").strip()),
                                phrase(N_("not UTF-8 (%(reason)s)"), reason=exc.reason)))
            continue
        if starts_file and index == 0:
            line = line.lstrip("\ufeff").strip()
        if not line or line.startswith("#"):
            entries.append(None)
            continue
        try:
            domain = domain_of_line(line)
        except DomainNameError as exc:
            entries.append(_Bad(shown(line), exc.reason_phrase))
            continue
        entry = domain if is_plain_domain(domain) else (domain, seeds_of(domain))
        # a plain name as typed (any case, a final dot) is no note; a host, a URL or punycode is
        entries.append(entry if line.rstrip(".").lower() == domain else _Taken(line, entry))
    return entries


def _parse_job(job: tuple[bytes, bool]) -> list[_Entry]:
    return parse_block(*job)


def _blocks(stream: BinaryIO, size: int) -> Iterator[tuple[bytes, bool]]:
    """The file in blocks of about ``size`` bytes, each ending at a line end; True for the first block."""
    first = True
    while True:
        block = stream.read(size)
        if not block:
            return
        if not block.endswith(b"\n"):
            block += stream.readline()
        yield block, first
        first = False


@dataclass
class _Reader:
    """Reads the file in blocks, counting lines, reporting bad ones and dropping duplicates.

    With ``workers`` > 0 the blocks are parsed by that many processes, up to ``prefetch`` blocks ahead,
    so parsing goes on while the database works on the previous rows. Entries come back in file order,
    so line numbers and "first seen" are the same either way.
    """

    path: Path
    name: str
    counts: ImportCounts
    on_bad_line: Callable[[BadLine], None]
    on_progress: Callable[[int], None]
    on_note: Callable[[TakenLine], None] = field(default=lambda _: None)
    workers: int = 0
    block_bytes: int = 1 << 20
    prefetch: int = 24
    seen: set[str] = field(default_factory=set)

    def names(self) -> Iterator[tuple[str, str | None]]:
        """(domain, seeds or None for plain domains) for every good, first-seen name of the file."""
        counts, seen = self.counts, self.seen
        with self.path.open("rb") as stream:
            for block, entries in self._parsed(_blocks(stream, self.block_bytes)):
                for entry in entries:
                    counts.lines_read += 1
                    if entry is None:
                        continue
                    if type(entry) is _Taken:
                        counts.taken_as_domain += 1
                        taken = entry.entry
                        self.on_note(TakenLine(str(self.path), counts.lines_read, shown(entry.text),
                                               taken if type(taken) is str else taken[0]))
                        entry = taken
                    if type(entry) is str:
                        domain, seeds = entry, None
                    elif type(entry) is tuple:
                        domain, seeds = entry
                    else:
                        counts.bad_lines += 1
                        reason = entry.reason
                        self.on_bad_line(BadLine(self.name, counts.lines_read, entry.text, english(reason),
                                                 reason if isinstance(reason, Phrase) else None))
                        continue
                    if domain in seen:
                        counts.duplicates_in_file += 1
                        continue
                    seen.add(domain)
                    yield domain, seeds
                self.on_progress(len(block))

    def _parsed(self, blocks: Iterator[tuple[bytes, bool]]) -> Iterator[tuple[bytes, list[_Entry]]]:
        if self.workers <= 0:
            for block, first in blocks:
                yield block, parse_block(block, first)
            return
        # fork where there is fork: spawn would re-run a calling script that lacks a __main__ guard. The
        # workers only parse; they never touch the database connections they inherit.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with multiprocessing.get_context(method).Pool(self.workers) as pool:
            pending: deque[tuple[bytes, AsyncResult[list[_Entry]]]] = deque()
            for block, first in blocks:
                pending.append((block, pool.apply_async(_parse_job, ((block, first),))))
                if len(pending) >= self.prefetch:
                    done, result = pending.popleft()
                    yield done, result.get()
            while pending:
                done, result = pending.popleft()
                yield done, result.get()


def _interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among the exceptions ``exc`` was raised while handling."""
    return any(isinstance(cause, KeyboardInterrupt) for cause in causes(exc))


def _ignore(_: Any) -> None:
    return None


class DomainImporter:
    """Imports a file of domains into the harvest database, batch by batch (see the module docstring)."""

    def __init__(self, engine: Engine, defaults: DomainDefaults, actor: str = "system",
                 batch_size: int | None = None, bulk_threshold: int = 100_000,
                 rebuild_indexes: bool | None = None,
                 on_bad_line: Callable[[BadLine], None] = _ignore, on_progress: Callable[[int], None] = _ignore,
                 stop_after_batches: int | None = None, parse_workers: int | None = None,
                 parallel_from_bytes: int = 16 << 20, copy_size: int | None = None,
                 lock_timeout: float = 30.0, on_note: Callable[[TakenLine], None] = _ignore) -> None:
        """``batch_size``: names per transaction (default 2,000,000 on PostgreSQL, 50,000 on SQLite).

        ``rebuild_indexes``: drop and restore indexes and constraints during a batch (PostgreSQL only);
        None decides per batch: when it adds at least ``bulk_threshold`` domains and a quarter of those
        present. ``stop_after_batches`` ends the run after that many committed batches, as an interruption
        would (the audit row then says complete = false). ``parse_workers`` processes parse files of at
        least ``parallel_from_bytes`` (default: one per core but one, at least one); they parse while the
        names are copied into the database. ``copy_size`` splits a PostgreSQL batch into parts written
        one after the other (default: one part; on two cores, parts measured slower than one statement).
        ``lock_timeout``: seconds a SQLite batch waits for the write lock (harvestsuite.database.importLockTimeout).
        """
        self.engine = engine
        self.defaults = defaults
        self.actor = actor
        self.postgresql = is_postgresql(engine)
        self.batch_size = batch_size or (2_000_000 if self.postgresql else _SQLITE_BATCH)
        self.bulk_threshold = bulk_threshold
        self.rebuild_indexes = rebuild_indexes
        self.on_bad_line = on_bad_line
        self.on_progress = on_progress
        self.on_note = on_note
        self.stop_after_batches = stop_after_batches
        self.parse_workers = max(1, (os.cpu_count() or 2) - 1) if parse_workers is None else parse_workers
        self.parallel_from_bytes = parallel_from_bytes
        self.copy_size = copy_size or self.batch_size
        self.lock_timeout = lock_timeout

    @classmethod
    def from_settings(cls, engine: Engine, settings: Settings, **options: Any) -> DomainImporter:
        options.setdefault("lock_timeout", settings.database.importLockTimeout)
        return cls(engine, DomainDefaults.from_settings(settings), **options)

    def check(self, path: Path | str, source_name: str | None = None) -> ImportCounts:
        """Read the whole file, writing nothing: every refused line goes to ``on_bad_line``, and if there is
        one, RefusedLinesError names them (the first KEPT_REFUSALS) with their count. ``source_name`` as for
        ``run``."""
        path = Path(path)
        name = source_name or str(path)
        counts = ImportCounts()
        refusals: list[LineRefusal] = []

        def refused(bad: BadLine) -> None:
            self.on_bad_line(bad)
            if len(refusals) < KEPT_REFUSALS:
                refusals.append(LineRefusal(bad.line_number, bad.text, bad.reason, bad.phrase))

        workers = self.parse_workers if path.stat().st_size >= self.parallel_from_bytes else 0
        for _ in _Reader(path, name, counts, refused, _ignore, workers=workers).names():
            pass
        if counts.bad_lines:
            raise RefusedLinesError(name, refusals, "file", total=counts.bad_lines)
        return counts

    def run(self, path: Path | str, source_name: str | None = None) -> ImportCounts:
        """Import ``path``; returns the counts. Raises NotFoundError if the default template is missing,
        RefusedLinesError (nothing stored) if a line is refused (``check``), DatabaseError (a sentence
        without SQL) if the database fails or stays locked.

        ``source_name`` names the file in bad-line reports, errors and the audit log (default: the path),
        for a file that lives under a temporary name (the web UI's upload).
        """
        path = Path(path)
        name = source_name or str(path)
        started = time.monotonic()
        self.check(path, name)
        counts = ImportCounts()
        workers = self.parse_workers if path.stat().st_size >= self.parallel_from_bytes else 0
        names = _Reader(path, name, counts, self.on_bad_line, self.on_progress, self.on_note,
                        workers=workers).names()
        audit_id: int | None = None
        try:
            with self.engine.connect() as conn:
                template_id = self._template_id(conn)
                conn.commit()
                size = self.batch_size
                with self._lock_timeout(conn):
                    while True:
                        batch = None if self.postgresql else list(itertools.islice(names, size))
                        with conn.begin():
                            if self.postgresql:
                                staged, created, repaired, exhausted = self._batch_postgresql(
                                    conn, names, template_id)
                            else:
                                # the write lock first: this batch reads, then writes (module docstring)
                                conn.exec_driver_sql("BEGIN IMMEDIATE")
                                locked = time.monotonic()
                                staged, created, repaired = self._batch_sqlite(conn, batch, template_id)
                                exhausted = len(batch) < size
                            if staged:
                                counts.domains_created += created
                                counts.already_present += staged - created
                                counts.repaired += repaired
                                counts.batches += 1
                            counts.complete = exhausted
                            counts.seconds = time.monotonic() - started
                            audit_id = self._audit(conn, audit_id, name, counts)
                        if exhausted or (self.stop_after_batches is not None
                                         and counts.batches >= self.stop_after_batches):
                            break
                        if not self.postgresql:
                            size = _next_sqlite_batch(size, self.batch_size, time.monotonic() - locked)
                            time.sleep(_SQLITE_PAUSE)
        except SQLAlchemyError as exc:
            if _interrupted(exc):
                # Ctrl-C landed inside a statement (psycopg's COPY): the rollback on the way out then found
                # the connection still busy and its error took the interrupt's place. It was an interrupt.
                raise KeyboardInterrupt from exc
            if not isinstance(exc, OperationalError):
                raise self._database_error(name, counts, exc) from exc
            if not self.postgresql and "locked" in str(exc.orig):
                raise DatabaseBusyError(
                    f"the import of {name} stopped: the harvest database stayed locked by other writers for "
                    f"{self.lock_timeout:g} s. The {counts.batches} batches committed before "
                    f"({counts.domains_created} domains created) stay stored; import the same file again to "
                    f"complete it") from exc
            raise self._database_error(name, counts, exc) from exc
        finally:
            names.close()
        counts.seconds = time.monotonic() - started
        return counts

    @contextmanager
    def _lock_timeout(self, conn: Connection) -> Iterator[None]:
        """SQLite's busy timeout of this connection set to ``lock_timeout`` for the import, then put back."""
        if self.postgresql:
            yield
            return
        previous = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()
        conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(self.lock_timeout * 1000)}")
        conn.commit()  # ends the transaction SQLAlchemy began for the pragmas; each batch begins its own
        try:
            yield
        finally:
            conn.rollback()
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(previous)}")
            conn.commit()

    @staticmethod
    def _database_error(name: str, counts: ImportCounts, exc: SQLAlchemyError) -> DatabaseError:
        # the driver's own message: SQLAlchemy's str() appends the SQL statement and its parameters
        # (and PostgreSQL's own message may go on to quote the statement on the lines after its first)
        cause = (str(exc.orig).splitlines() or [""])[0] if isinstance(exc, DBAPIError) else type(exc).__name__
        return DatabaseError(f"the import of {name} stopped: the harvest database failed ({cause}). The "
                             f"{counts.batches} batches committed before ({counts.domains_created} domains "
                             f"created) stay stored; import the same file again to complete it")

    # ------------------------------------------------------------------ steps

    def _template_id(self, conn: Connection) -> int:
        template_id = conn.scalar(select(s.ordertemplates.c.template_id).where(
            s.ordertemplates.c.name == self.defaults.template_name))
        if template_id is None:
            raise NotFoundError("crawl template for new domains (harvester.datamodel.domain.defaultOrderxml)",
                                self.defaults.template_name)
        return template_id

    def _batch_sqlite(self, conn: Connection, names: list[tuple[str, str | None]], template_id: int
                      ) -> tuple[int, int, int]:
        """One batch on SQLite, in a transaction that holds the write lock: stage with executemany, add the
        domains, then complete them all."""
        conn.execute(text("DROP TABLE IF EXISTS temp.import_names"))
        conn.execute(text("CREATE TEMP TABLE import_names (name TEXT NOT NULL PRIMARY KEY, seeds TEXT)"))
        statement = text("INSERT INTO import_names (name, seeds) VALUES (:name, :seeds)")
        for start in range(0, len(names), _SQLITE_CHUNK):
            conn.execute(statement, [{"name": name, "seeds": seeds}
                                     for name, seeds in names[start:start + _SQLITE_CHUNK]])
        staged = len(names)
        if not staged:
            return 0, 0, 0
        new_names = "import_names n WHERE NOT EXISTS (SELECT 1 FROM domains d WHERE d.name = n.name)"
        add_tld_counts(conn, select(literal_column("n.name").label("name")).select_from(text(new_names)), 1)
        created = conn.execute(text(f"INSERT INTO domains (name, edition) SELECT n.name, 1 FROM {new_names}")).rowcount
        incomplete = self._collect_incomplete(conn, None)
        if incomplete:
            self._complete_incomplete(conn, template_id)
        return staged, created, incomplete - created

    def _batch_postgresql(self, conn: Connection, names: Iterator[tuple[str, str | None]], template_id: int
                          ) -> tuple[int, int, int, bool]:
        """One batch on PostgreSQL, written copy_size names at a time: COPY, then set-based inserts."""
        conn.execute(text("SET LOCAL work_mem = '256MB'"))
        conn.execute(text("CREATE TEMP TABLE import_names (name text NOT NULL, seeds text) ON COMMIT DROP"))
        # Names are unique within the file, so a staged name can only clash with a domain that existed
        # before this batch: the checks look at those alone (a cheap range on the primary key).
        existing_until = conn.scalar(text("SELECT coalesce(max(domain_id), 0) FROM domains"))
        sequences = conn.execute(text(
            "SELECT pg_get_serial_sequence('domains', 'domain_id'), "
            "pg_get_serial_sequence('configurations', 'config_id'), "
            "pg_get_serial_sequence('seedlists', 'seedlist_id')")).one()
        staged = created = repaired = 0
        exhausted = False
        restore: list[str] | None = None  # None until the first part has decided
        while staged < self.batch_size and not exhausted:
            conn.execute(text("TRUNCATE import_names"))
            limit = min(self.copy_size, self.batch_size - staged)
            part = copy_rows(conn, "import_names", ("name", "seeds"), itertools.islice(names, limit))
            exhausted = part < limit
            if not part:
                break
            staged += part
            incomplete = self._collect_incomplete(conn, existing_until)
            new = self._plan_new(conn, existing_until, sequences)
            if restore is None:
                restore = self._prepare_bulk(conn, template_id) if new and self._is_bulk(conn, new) else []
            if new:
                self._insert_new(conn, template_id)
                add_tld_counts(conn, select(literal_column("name")).select_from(text("import_new")), 1)
            if incomplete:
                self._complete_incomplete(conn, template_id)
            created += new
            repaired += incomplete
        restore_constraints(conn, restore or [])
        if restore:
            # the planner's picture of tables that just grew many-fold, for the job generator's next run
            conn.execute(text(f"ANALYZE {', '.join(_DOMAIN_TABLES)}"))
        return staged, created, repaired, exhausted

    def _plan_new(self, conn: Connection, existing_until: int, sequences: Any) -> int:
        """import_new: the staged names that are not domains yet, with their ids drawn from the sequences."""
        conn.execute(text("DROP TABLE IF EXISTS import_new"))
        return conn.execute(text(
            "CREATE TEMP TABLE import_new ON COMMIT DROP AS "
            f"SELECT n.name, coalesce(n.seeds, {_PLAIN_SEEDS_SQL}) AS seeds, "
            "nextval(CAST(:domain_sequence AS regclass)) AS domain_id, "
            "nextval(CAST(:config_sequence AS regclass)) AS config_id, "
            "nextval(CAST(:seedlist_sequence AS regclass)) AS seedlist_id "
            "FROM import_names n WHERE NOT EXISTS "
            "(SELECT 1 FROM domains d WHERE d.name = n.name AND d.domain_id <= :existing_until)"),
            {"domain_sequence": sequences[0], "config_sequence": sequences[1], "seedlist_sequence": sequences[2],
             "existing_until": existing_until, "newline": "\n"}).rowcount

    def _collect_incomplete(self, conn: Connection, existing_until: int | None) -> int:
        """import_incomplete: staged names whose domain exists without a default configuration."""
        conn.execute(text("DROP TABLE IF EXISTS import_incomplete"))
        limit = "" if existing_until is None else "AND d.domain_id <= :existing_until "
        # CROSS JOIN keeps SQLite looking each staged name up in domains: with a plain join it scanned every
        # domain in every batch, which made many small batches cost more than a few big ones
        conn.execute(text(
            f"CREATE TEMP TABLE import_incomplete AS SELECT d.domain_id, coalesce(n.seeds, {_PLAIN_SEEDS_SQL}) "
            f"AS seeds FROM import_names n CROSS JOIN domains d "
            f"WHERE d.name = n.name AND d.defaultconfig IS NULL {limit}"),
            {"existing_until": existing_until, "newline": "\n"})
        return conn.scalar(text("SELECT count(*) FROM import_incomplete")) or 0

    def _prepare_bulk(self, conn: Connection, template_id: int) -> list[str]:
        """Make a large batch fast: foreign-key checks off (or the keys dropped), indexes dropped.

        Returns the statements that restore what was dropped.
        """
        # the template must stay while rows that are not checked point at it
        if conn.scalar(text("SELECT template_id FROM ordertemplates WHERE template_id = :template FOR KEY SHARE"),
                       {"template": template_id}) is None:
            raise NotFoundError("crawl template", template_id)
        # Checking foreign keys row by row costs more than the inserts; the new rows reference only
        # each other and the template locked above, so they are consistent by construction.
        triggers_off = skip_foreign_key_checks(conn)
        # Primary keys stay (other tables point at them); the rest is rebuilt in one pass each at the end.
        return set_aside_constraints(conn, _DOMAIN_TABLES, foreign_keys=not triggers_off)

    def _insert_new(self, conn: Connection, template_id: int) -> None:
        """import_new's domains with their configuration, seed list and link, in one statement.

        The foreign keys between domains and configurations run both ways; PostgreSQL checks them at the
        end of the statement, so one statement can insert both sides.
        """
        d = self.defaults
        conn.execute(text(
            "WITH new_domains AS (INSERT INTO domains (domain_id, name, defaultconfig, edition) "
            "  SELECT domain_id, name, config_id, 1 FROM import_new), "
            "new_configurations AS (INSERT INTO configurations "
            "  (config_id, name, comments, domain_id, template_id, maxobjects, maxrate, maxbytes) "
            "  SELECT config_id, :config, '', domain_id, :template, :maxobjects, :maxrate, :maxbytes FROM import_new), "
            "new_seedlists AS (INSERT INTO seedlists (seedlist_id, name, comments, domain_id, seeds) "
            "  SELECT seedlist_id, :seedlist, '', domain_id, seeds FROM import_new) "
            "INSERT INTO config_seedlists (config_id, seedlist_id) SELECT config_id, seedlist_id FROM import_new"),
            {"config": d.config_name, "template": template_id, "maxobjects": d.maxobjects, "maxrate": d.maxrate,
             "maxbytes": d.maxbytes, "seedlist": d.seedlist_name})

    def _is_bulk(self, conn: Connection, new: int) -> bool:
        if self.rebuild_indexes is not None:
            return self.rebuild_indexes
        if new < self.bulk_threshold:
            return False
        present = conn.scalar(text("SELECT count(*) FROM domains")) or 0
        return new * 4 >= present

    def _complete_incomplete(self, conn: Connection, template_id: int) -> None:
        """Give every domain in import_incomplete what it lacks: configuration, seed list, link, defaultconfig.

        Each statement adds only what is missing, so a domain left half-made by anything (an older
        tool, a crash elsewhere) is completed and nothing is ever added twice.
        """
        d = self.defaults
        names = {"config": d.config_name, "seedlist": d.seedlist_name}
        conn.execute(text(
            "INSERT INTO configurations (name, comments, domain_id, template_id, maxobjects, maxrate, maxbytes) "
            "SELECT CAST(:config AS VARCHAR), '', i.domain_id, :template, :maxobjects, :maxrate, :maxbytes "
            "FROM import_incomplete i "
            "WHERE NOT EXISTS (SELECT 1 FROM configurations c WHERE c.domain_id = i.domain_id AND c.name = :config)"),
            {**names, "template": template_id, "maxobjects": d.maxobjects, "maxrate": d.maxrate,
             "maxbytes": d.maxbytes})
        conn.execute(text(
            "INSERT INTO seedlists (name, comments, domain_id, seeds) "
            "SELECT CAST(:seedlist AS VARCHAR), '', i.domain_id, i.seeds FROM import_incomplete i "
            "WHERE NOT EXISTS (SELECT 1 FROM seedlists l WHERE l.domain_id = i.domain_id AND l.name = :seedlist)"),
            names)
        conn.execute(text(
            "INSERT INTO config_seedlists (config_id, seedlist_id) SELECT c.config_id, l.seedlist_id "
            # CROSS JOIN keeps SQLite from looping over configurations by name (quadratic) first
            "FROM import_incomplete i CROSS JOIN configurations c CROSS JOIN seedlists l "
            "WHERE c.domain_id = i.domain_id AND c.name = :config "
            "AND l.domain_id = i.domain_id AND l.name = :seedlist "
            "AND NOT EXISTS (SELECT 1 FROM config_seedlists x "
            "                  WHERE x.config_id = c.config_id AND x.seedlist_id = l.seedlist_id)"), names)
        conn.execute(text(
            "UPDATE domains SET defaultconfig = (SELECT c.config_id FROM configurations c "
            "                                    WHERE c.domain_id = domains.domain_id AND c.name = :config) "
            "WHERE defaultconfig IS NULL AND domain_id IN (SELECT domain_id FROM import_incomplete)"), names)
        # a configuration that was there before may have just become its domain's default
        recheck_unused(conn, select(literal_column("domain_id").label("domain_id"))
                       .select_from(text("import_incomplete")))

    def _audit(self, conn: Connection, audit_id: int | None, name: str, counts: ImportCounts) -> int:
        """Write (first batch) or update (later batches) the one audit_log row of this import."""
        after = json.dumps({"file": name, **asdict(counts), "seconds": round(counts.seconds, 1)},
                           sort_keys=True)
        if audit_id is None:
            return conn.execute(insert(s.audit_log).values(
                changed_at=utcnow(), actor=self.actor, tablename="domains", row_key=f"import {name}"[:300],
                action="import", before=None, after=after)).inserted_primary_key[0]
        conn.execute(update(s.audit_log).where(s.audit_log.c.audit_id == audit_id).values(
            changed_at=utcnow(), after=after))
        return audit_id
