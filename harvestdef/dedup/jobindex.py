"""A job's own deduplication index: the earlier captures of the job's domains, read from their partitions.

A job deduplicates against the captures of its own domains (docs/architecture.md, Deduplication). Its
``sources`` are the earlier jobs that harvested those domains, newest first. For each of the job's
domains the newest source whose partitions hold that domain gives its captures: a source's entries hold
its revisits as the originals they point at, so the newest holding a domain leads to the first capture
of each unchanged payload, however many runs revisited it since. What the builder reads is:

* each source's partition directory (``dedup/<job_id>.domains``, a line per domain it captured);
* the gzip members that hold the job's domains, one range read each, never the rest of the entries file;
* each used source's shared partition (payloads it captured under several domains, at most
  harvestdef.dedup.partitions.SHARED_LIMIT), which serves matching by digest across domains.

A source stored before partitions existed has an entries file and no directory: its whole entries file
is read and only the job's domains kept (``harvestsuite dedup rebuild`` gives such jobs their directory).
A source whose directory, members or entries cannot be read is left out whole: the domains it would have
given are taken from the next older source that holds them, and the index names it as missing.

The index is the SQLite file of harvestdef.dedup.index, written under a temporary name and renamed when
complete, so a crash while building leaves none, never half of one.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harvestdef.archive import ArchiveStore
from harvestdef.dedup.entries import EntryFields, entries_name, parse_entry_line, read_entry_fields
from harvestdef.dedup.index import DedupIndex, DedupIndexWriter
from harvestdef.dedup.partitions import (
    SHARED,
    PartitionDirectory,
    Segment,
    directory_name,
    domain_of_entry_url,
    parse_directory,
)
from harvestdef.errors import ArchiveStoreError, DedupFormatError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobIndex:
    """What ``build_job_index`` made."""
    path: Path
    domains: int                        # the job's domains
    domains_found: int                  # of those, the ones some source holds captures of
    source_job_ids: tuple[int, ...]     # the sources whose captures the index holds
    unreadable_job_ids: tuple[int, ...]  # sources left out: their partitions could not be read
    whole_job_ids: tuple[int, ...]      # sources without a directory, whose whole entries file was read
    pairs: int                          # (digest, URL) pairs in the index
    bytes_read: int                     # bytes read from the archive store
    seconds: float


@dataclass
class _Plan:
    """What to read from one source."""
    harvest_id: int
    job_id: int
    directory: PartitionDirectory | None      # None: no directory, the whole entries file is read
    segments: dict[str, Segment] = field(default_factory=dict)  # the shared partition under SHARED
    domains: set[str] = field(default_factory=set)   # for a source without directory


def build_job_index(store: ArchiveStore, sources: Sequence[tuple[int, int]], domains: Iterable[str], path: Path,
                    progress: Callable[[int, int], None] | None = None) -> JobIndex:
    """Build at ``path`` the index of ``domains`` from ``sources`` ((harvest_id, job_id), newest first).

    ``progress(sources_done, sources_total)`` is called after each source is read.
    """
    started = time.monotonic()
    wanted = {domain.lower() for domain in domains}
    pending = set(wanted)
    bytes_read = 0
    used: list[int] = []
    whole: list[int] = []
    unreadable: list[int] = []
    with DedupIndexWriter(path) as writer:
        for number, (harvest_id, job_id) in enumerate(sources, start=1):
            if not pending:
                break
            try:
                plan, read = _plan_source(store, harvest_id, job_id, pending)
                bytes_read += read
                if plan.segments or plan.domains:
                    with writer.all_or_nothing():
                        bytes_read += _add_source(store, plan, writer)
                    if plan.segments or plan.domains:  # a source read whole may have held none of them
                        used.append(job_id)
                        if plan.directory is None:
                            whole.append(job_id)
                    pending -= set(plan.segments) | plan.domains
            except (DedupFormatError, ArchiveStoreError, OSError, UnicodeDecodeError) as exc:
                # the domains it would have given stay pending, for an older source that holds them
                log.warning("deduplication partitions of job %d left out: %s", job_id, exc)
                unreadable.append(job_id)
            if progress is not None:
                progress(number, len(sources))
        writer.set_jobs(used, unreadable)
    with DedupIndex(path) as index:
        pairs = len(index)
    return JobIndex(path=path, domains=len(wanted), domains_found=len(wanted) - len(pending),
                    source_job_ids=tuple(sorted(used)), unreadable_job_ids=tuple(sorted(unreadable)),
                    whole_job_ids=tuple(sorted(whole)), pairs=pairs, bytes_read=bytes_read,
                    seconds=time.monotonic() - started)


def _plan_source(store: ArchiveStore, harvest_id: int, job_id: int, pending: set[str]) -> tuple[_Plan, int]:
    """Which of ``pending`` the source holds, and the bytes read to know it."""
    if store.has(harvest_id, job_id, directory_name(job_id)):
        raw = store.read_bytes(harvest_id, job_id, directory_name(job_id))
        directory = parse_directory(raw.decode("utf-8"), f"{harvest_id}/{job_id}/{directory_name(job_id)}")
        plan = _Plan(harvest_id, job_id, directory)
        plan.segments = {domain: segment for domain in pending
                         if (segment := directory.segments.get(domain)) is not None and segment.count}
        if plan.segments and (shared := directory.segments.get(SHARED)) is not None and shared.count:
            plan.segments[SHARED] = shared
        return plan, len(raw)
    if store.has(harvest_id, job_id, entries_name(job_id)):
        # Stored before partitions: which of them it holds is known only once _add_source has read it.
        return _Plan(harvest_id, job_id, None, domains=set(pending)), 0
    return _Plan(harvest_id, job_id, None), 0


def _add_source(store: ArchiveStore, plan: _Plan, writer: DedupIndexWriter) -> int:
    """Add a source's captures of its planned domains; returns the bytes read."""
    if plan.directory is None:
        path = store.job_path(plan.harvest_id, plan.job_id) / entries_name(plan.job_id)
        held: set[str] = set()
        writer.add_fields(_of_domains(read_entry_fields(path), plan.domains, held))
        plan.domains = held  # one pass: the planned domains it turned out to hold
        return path.stat().st_size
    name = plan.directory.data_name
    if "/" in name or not name:
        raise DedupFormatError(f"{plan.harvest_id}/{plan.job_id}/{directory_name(plan.job_id)}", 1,
                               f"data={name!r} is not a file name beside the directory")
    data = f"dedup/{name}"
    by_member: dict[tuple[int, int], list[Segment]] = {}
    for segment in plan.segments.values():
        by_member.setdefault((segment.offset, segment.length), []).append(segment)
    read = 0
    source = f"{plan.harvest_id}/{plan.job_id}/{data}"
    for (offset, length), segments in sorted(by_member.items()):
        member = store.read_range(plan.harvest_id, plan.job_id, data, offset, length)
        read += len(member)
        # A member holds many small domains: decompress it once for all of them, not once per domain.
        lines = _member_lines(member, offset, source)
        writer.add_fields(item for segment in segments for item in _segment_fields(lines, segment, source))
    return read


def _member_lines(member: bytes, offset: int, source: str) -> list[str]:
    """A gzip member's lines, the text after its last newline (empty if the member is whole) last."""
    try:
        return zlib.decompress(member, wbits=31).decode("utf-8").split("\n")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise DedupFormatError(source, None, f"the member at offset {offset} is unreadable: {exc}") from exc


def _segment_fields(lines: list[str], segment: Segment, source: str) -> Iterator[EntryFields]:
    """The entries of one domain from its member's lines, as read_segment gives them."""
    if segment.skip + segment.count >= len(lines):
        raise DedupFormatError(source, None, f"the member at offset {segment.offset} holds fewer lines than "
                                             f"its directory says ({segment.skip} + {segment.count})")
    for number in range(segment.skip, segment.skip + segment.count):
        yield parse_entry_line(lines[number] + "\n", source, number + 1)


def _of_domains(fields: Iterable[EntryFields], domains: set[str], held: set[str]) -> Iterator[EntryFields]:
    """The captures of ``domains``; ``held`` gathers the domains met."""
    for item in fields:
        domain = domain_of_entry_url(item[1])
        if domain in domains:
            held.add(domain)
            yield item


__all__ = ["JobIndex", "build_job_index"]
