"""A job's deduplication entries kept per domain: the entries file in domain order, and its directory.

A later job deduplicates against the earlier captures of its own domains only (docs/architecture.md,
Deduplication), so a job's entries are stored grouped by the registered domain of each capture's URL:

``dedup/<job_id>.gz``
    the entries file (harvestdef.dedup.entries), its lines in order of (domain, digest, URL) and cut into
    gzip members of whole domains, each member at most about ``MEMBER_BYTES`` of text unless one domain
    alone is larger. A series of gzip members is one gzip file, so every reader of entries files reads it
    as it reads any other.
``dedup/<job_id>.domains``
    its directory, UTF-8 text. The first line is ``#harvestsuite-dedup-partitions 1 data=<name>``, the
    entries file's name in the job's directory; then one line per domain, in domain order::

        domain  offset  length  skip  count  own

    where ``offset`` and ``length`` are the bytes of the gzip member that holds the domain, ``skip`` the
    lines of other domains before it in that member, ``count`` its own lines, and ``own`` 1 when the
    domain is one of the job's domains (0 for the hosts its pages embedded from elsewhere).

A domain's lines are so read with one range read of its member, never the rest of the file. The domain of
a URL is the registered domain of its host (``www.bbc.co.uk`` -> ``bbc.co.uk``); a host that has none
(an IP address stays itself, a malformed name is kept as it is written) is its own domain.

One more partition, under the name ``*``, holds the payloads this job captured under two registered
domains or more (logos, pixels, shared scripts), each with its earliest capture, at most
``SHARED_LIMIT`` of them, the most widely shared first. It serves matching by digest, where a payload
first captured under another domain is still the same payload.

Writing sorts through SQLite in a working file, so memory stays bounded whatever the number of entries;
the entries file and the directory are written under temporary names and renamed when complete, the
directory last, so a directory is never read beside half an entries file.
"""

from __future__ import annotations

import gzip
import io
import os
import secrets
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harvestdef.dedup.entries import EntryFields, entry_line, parse_entry_line
from harvestdef.domainnames import registered_domain
from harvestdef.errors import DedupFormatError, DomainNameError
from harvestdef.files import fsync_directory

FORMAT = "1"
HEADER = "#harvestsuite-dedup-partitions"
#: The partition of payloads captured under several domains.
SHARED = "*"
#: Uncompressed text per gzip member: small domains share a member, so a domain of three captures does not
#: cost a gzip stream of its own, and a range read is still a few kilobytes.
MEMBER_BYTES = 64 * 1024
#: At most this many payloads in the shared partition of one job.
SHARED_LIMIT = 10_000
_COMPRESS_LEVEL = 6


def directory_name(job_id: int) -> str:
    """The directory's name inside the job's archive-store directory."""
    return f"dedup/{job_id}.domains"


@lru_cache(maxsize=262_144)
def domain_of_host(host: str) -> str:
    """The partition a host's captures go to: its registered domain, or the host itself if it has none."""
    try:
        return registered_domain(host)
    except DomainNameError:
        return host.lower()


def domain_of_entry_url(url: str) -> str:
    """The partition of a capture's URL (``http(s)://host[:port]/...``), without parsing it whole."""
    rest = url.split("://", 1)[-1]
    end = len(rest)
    for stop in "/?#":
        found = rest.find(stop)
        if 0 <= found < end:
            end = found
    authority = rest[:end].rsplit("@", 1)[-1]
    if authority.startswith("["):
        host = authority[1:authority.find("]")] if "]" in authority else authority[1:]
    else:
        host = authority.split(":", 1)[0]
    return domain_of_host(host.rstrip(".").lower())


@dataclass(frozen=True)
class Segment:
    """Where one domain's lines are in the entries file."""
    offset: int
    length: int
    skip: int
    count: int
    own: bool


@dataclass(frozen=True)
class PartitionDirectory:
    """A job's directory: the entries file's name and each domain's segment."""
    data_name: str
    segments: Mapping[str, Segment]

    def own_domains(self) -> list[str]:
        return [domain for domain, segment in self.segments.items() if segment.own]


@dataclass(frozen=True)
class PartitionSummary:
    entries: int
    domains: int
    shared: int
    text_bytes: int


def write_partitioned(fields: Iterable[EntryFields], data_path: Path, directory_path: Path,
                      own_domains: Iterable[str], work_dir: Path | None = None) -> PartitionSummary:
    """Write ``fields`` (as read_entry_fields yields them) as an entries file in domain order at
    ``data_path`` and its directory at ``directory_path``; ``own_domains`` are the job's domains.

    :raise ValueError: an entry that read_entries would refuse.
    """
    data_path, directory_path = Path(data_path), Path(directory_path)
    own = {domain.lower() for domain in own_domains}
    work = Path(work_dir or data_path.parent)
    token = f"{os.getpid()}-{secrets.token_hex(6)}"
    sort_file = work / f".partitions-{token}.sqlite"
    data_temporary = data_path.with_name(f".{data_path.name}.tmp-{token}")
    directory_temporary = directory_path.with_name(f".{directory_path.name}.tmp-{token}")
    connection = sqlite3.connect(sort_file, isolation_level=None)
    try:
        for statement in ("PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF", "PRAGMA temp_store = FILE",
                          "PRAGMA cache_size = -65536",
                          "CREATE TABLE entry (domain TEXT NOT NULL, digest TEXT NOT NULL, url TEXT NOT NULL, "
                          "date TEXT NOT NULL, line TEXT NOT NULL)"):
            connection.execute(statement)
        connection.execute("BEGIN")
        entries = connection.executemany("INSERT INTO entry VALUES (?, ?, ?, ?, ?)", (
            (domain_of_entry_url(item[1]), item[0], item[1], item[2], entry_line(*item)) for item in fields)).rowcount
        connection.execute("COMMIT")
        shared = connection.execute(
            "SELECT digest, min(date) FROM entry GROUP BY digest HAVING count(DISTINCT domain) > 1 "
            "ORDER BY count(DISTINCT domain) DESC, digest LIMIT ?", (SHARED_LIMIT,)).fetchall()
        connection.execute("CREATE TEMP TABLE shared_digest (digest TEXT PRIMARY KEY, date TEXT) WITHOUT ROWID")
        connection.executemany("INSERT INTO shared_digest VALUES (?, ?)", shared)
        shared_lines = connection.execute(
            "SELECT min(e.line) FROM entry AS e JOIN shared_digest AS s ON s.digest = e.digest AND s.date = e.date "
            "GROUP BY e.digest ORDER BY e.digest")
        writer = _write_files((line for (line,) in shared_lines), connection.execute(
            "SELECT domain, line FROM entry ORDER BY domain, digest, url, date"), own, data_path, directory_path,
            data_temporary, directory_temporary)
        return PartitionSummary(entries=entries, domains=len(writer.segments) - 1, shared=len(shared),
                                text_bytes=writer.text_bytes)
    finally:
        connection.close()
        for path in (sort_file, data_temporary, directory_temporary):
            path.unlink(missing_ok=True)


def _write_files(shared_lines: Iterable[str], lines: Iterable[tuple[str, str]], own: set[str], data_path: Path,
                 directory_path: Path, data_temporary: Path, directory_temporary: Path) -> _MemberWriter:
    """Write the entries file (the shared partition, then ``lines``: (domain, line) in domain order) and its
    directory under their temporary names, then rename both into place, the directory last."""
    with open(data_temporary, "xb") as raw:
        writer = _MemberWriter(raw)
        writer.domain(SHARED, own=False)
        for line in shared_lines:
            writer.line(line)
        for domain, line in lines:
            if domain != writer.current:
                writer.domain(domain, own=domain in own)
            writer.line(line)
        writer.close()
        raw.flush()
        os.fsync(raw.fileno())
    with open(directory_temporary, "x", encoding="utf-8", newline="\n") as text:
        text.write(f"{HEADER} {FORMAT} data={data_path.name}\n")
        for domain, segment in writer.segments.items():
            text.write(f"{domain}\t{segment.offset}\t{segment.length}\t{segment.skip}\t{segment.count}\t"
                       f"{int(segment.own)}\n")
        text.flush()
        os.fsync(text.fileno())
    os.replace(data_temporary, data_path)
    os.replace(directory_temporary, directory_path)
    fsync_directory(directory_path.parent)
    return writer


def _spooled(spool: Iterable[str]) -> Iterator[tuple[str, str]]:
    """The spool's lines as (domain, line): a ``#domain`` line starts each domain's lines."""
    domain = ""
    for line in spool:
        if line[0] == "#":
            domain = line[1:-1]
        else:
            yield domain, line


class _MemberWriter:
    """Writes lines into gzip members of whole domains and notes each domain's segment."""

    def __init__(self, raw: io.BufferedWriter) -> None:
        self.raw = raw
        self.segments: dict[str, Segment] = {}
        self.current: str | None = None
        self.text_bytes = 0
        self._member_start = 0
        self._member_lines = 0
        self._member_text = 0
        self._buffer: list[str] = []
        self._open: list[tuple[str, int, int, bool]] = []  # (domain, skip, count, own) in this member

    def domain(self, domain: str, own: bool) -> None:
        if self._member_text >= MEMBER_BYTES:
            self._flush_member()
        self.current = domain
        self._open.append((domain, self._member_lines, 0, own))

    def line(self, line: str) -> None:
        domain, skip, count, own = self._open[-1]
        self._open[-1] = (domain, skip, count + 1, own)
        self._buffer.append(line)
        self._member_lines += 1
        self._member_text += len(line)

    def close(self) -> None:
        self._flush_member()

    def _flush_member(self) -> None:
        if not self._open:
            return
        text = "".join(self._buffer).encode("utf-8")
        self.text_bytes += len(text)
        member = gzip.compress(text, compresslevel=_COMPRESS_LEVEL, mtime=0)
        self.raw.write(member)
        for domain, skip, count, own in self._open:
            self.segments[domain] = Segment(self._member_start, len(member), skip, count, own)
        self._member_start += len(member)
        self._buffer, self._open = [], []
        self._member_lines = self._member_text = 0


def parse_directory(text: str, source: object) -> PartitionDirectory:
    """A directory's text -> PartitionDirectory; ``source`` names it in errors.

    :raise DedupFormatError: not a directory of this format, or a line that is not six fields.
    """
    lines = text.split("\n")
    header = lines[0].split(" ")
    if len(header) != 3 or header[0] != HEADER or not header[2].startswith("data="):
        raise DedupFormatError(source, 1, f"not a deduplication partition directory: {lines[0][:80]!r}")
    if header[1] != FORMAT:
        raise DedupFormatError(source, 1, f"partition directory format {header[1]!r}, this version reads {FORMAT!r}")
    if lines[-1] != "":
        raise DedupFormatError(source, len(lines), "the last line has no newline (file cut short?)")
    segments: dict[str, Segment] = {}
    for number, line in enumerate(lines[1:-1], start=2):
        fields = line.split("\t")
        if len(fields) != 6 or not all(field.isdigit() for field in fields[1:]):
            raise DedupFormatError(source, number, "expected a domain and five non-negative integers")
        segments[fields[0]] = Segment(int(fields[1]), int(fields[2]), int(fields[3]), int(fields[4]),
                                      fields[5] == "1")
    return PartitionDirectory(header[2][len("data="):], segments)


def read_segment(member: bytes, segment: Segment, source: object) -> Iterator[EntryFields]:
    """The entries of one domain, from the bytes of its gzip member.

    :raise DedupFormatError: the member does not decompress or holds fewer lines than the directory says.
    """
    try:
        text = zlib.decompress(member, wbits=31).decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise DedupFormatError(source, None, f"the member at offset {segment.offset} is unreadable: {exc}") from exc
    lines = text.split("\n")
    wanted = lines[segment.skip:segment.skip + segment.count]
    if len(wanted) != segment.count or segment.skip + segment.count >= len(lines):
        raise DedupFormatError(source, None, f"the member at offset {segment.offset} holds fewer lines than "
                                             f"its directory says ({segment.skip} + {segment.count})")
    for number, line in enumerate(wanted, start=segment.skip + 1):
        yield parse_entry_line(line + "\n", source, number)


def write_partitioned_sorted(partitions: Iterable[tuple[str, Iterable[EntryFields]]], data_path: Path,
                             directory_path: Path, own_domains: Iterable[str],
                             work_dir: Path | None = None) -> PartitionSummary:
    """write_partitioned for entries already grouped and ordered, without its sort: the same entries file
    and directory, byte for byte.

    ``partitions`` yields (domain, its entries) in domain order, each domain the one domain_of_entry_url
    gives its entries' URLs, the entries (as read_entry_fields yields them) in order of (digest, URL, date).
    The caller names each domain because finding a URL's registered domain costs more than writing its
    line; that each URL holds its domain is checked, the orders are checked.

    The shared partition comes first in the file but is known only once every entry is seen, so the lines
    go to a working text file and are read back into the members; memory holds one small record per
    distinct payload of the job, for the shared partition.

    :raise ValueError: an entry that read_entries would refuse, a URL without its domain, or the domains
        or a domain's entries out of order.
    """
    data_path, directory_path = Path(data_path), Path(directory_path)
    own = {domain.lower() for domain in own_domains}
    work = Path(work_dir or data_path.parent)
    token = f"{os.getpid()}-{secrets.token_hex(6)}"
    spool_file = work / f".partitions-{token}.txt"
    data_temporary = data_path.with_name(f".{data_path.name}.tmp-{token}")
    directory_temporary = directory_path.with_name(f".{directory_path.name}.tmp-{token}")
    # digest -> [last domain, distinct domains, earliest date, least line of that date]
    payloads: dict[str, list] = {}
    entries = 0
    try:
        with open(spool_file, "x", encoding="utf-8", newline="\n") as spool:
            last_domain: str | None = None
            for domain, fields in partitions:
                if last_domain is not None and domain <= last_domain:
                    raise ValueError(f"domain {domain!r} is out of order: after {last_domain!r}")
                last: tuple[str, str, str] | None = None
                for item in fields:
                    line = entry_line(*item)
                    key = (item[0], item[1], item[2])
                    if last is not None and key < last:
                        raise ValueError(f"dedup entry {key!r} is out of order: the entries of a domain must be "
                                         f"sorted by digest, URL and date")
                    if domain not in item[1].lower():
                        raise ValueError(f"dedup entry {key!r} is not under the domain {domain!r}")
                    if last is None:
                        # Entry lines begin with "sha1:", so a line beginning with "#" marks the next domain.
                        spool.write(f"#{domain}\n")
                        last_domain = domain
                    last = key
                    spool.write(line)
                    entries += 1
                    seen = payloads.get(item[0])
                    if seen is None:
                        payloads[item[0]] = [domain, 1, item[2], line]
                        continue
                    if seen[0] != domain:
                        seen[0] = domain
                        seen[1] += 1
                    if item[2] < seen[2] or (item[2] == seen[2] and line < seen[3]):
                        seen[2], seen[3] = item[2], line
        # As write_partitioned's query: the most widely shared first, then by digest; written by digest.
        widest = sorted(((-seen[1], digest, seen[3]) for digest, seen in payloads.items() if seen[1] > 1))
        shared = sorted((digest, line) for _, digest, line in widest[:SHARED_LIMIT])
        payloads.clear()
        with open(spool_file, encoding="utf-8", newline="\n") as spool:
            writer = _write_files((line for _, line in shared), _spooled(spool), own, data_path, directory_path,
                                  data_temporary, directory_temporary)
        return PartitionSummary(entries=entries, domains=len(writer.segments) - 1, shared=len(shared),
                                text_bytes=writer.text_bytes)
    finally:
        for path in (spool_file, data_temporary, directory_temporary):
            path.unlink(missing_ok=True)


__all__ = ["FORMAT", "MEMBER_BYTES", "SHARED", "SHARED_LIMIT", "PartitionDirectory", "PartitionSummary", "Segment",
           "directory_name", "domain_of_entry_url", "domain_of_host", "parse_directory", "read_segment",
           "write_partitioned", "write_partitioned_sorted"]
