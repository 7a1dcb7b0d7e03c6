"""The per-domain report of a finished crawl: objects, bytes and stop reason per domain.

Rules, as NetarchiveSuite's HarvestReportGenerator applies them:

* The default stop reason comes from the last line of progress-statistics.log: "CRAWL ENDED" with "Ended by
  operator" is DOWNLOAD_UNFINISHED, with "Timelimit hit" TIME_LIMIT, otherwise DOWNLOAD_COMPLETE; no
  "CRAWL ENDED" or no file is DOWNLOAD_UNFINISHED. One deviation: an abnormal end ("Abnormal exit from
  crawling", older releases' "Exited abnormally") is DOWNLOAD_UNFINISHED here (NetarchiveSuite reports
  such a crawl as complete).
* A line belongs to the domain of its source-tag seed (column 11) unless that is "-" or the caller
  disregards seed information; then to the domain of its URI (``dns:host`` belongs to host's domain).
* Status >= 0: one object, and the bytes of its ``content-size:`` annotation (0 without one; column 3 is
  not used). A ``duplicate:`` annotation makes it a duplicate, otherwise it is novel; both count in the
  objects and bytes.
* Status -5003 with ``Q:groupMaxAllKb`` sets SIZE_LIMIT, with ``Q:groupMaxFetchSuccesses`` OBJECT_LIMIT,
  but only while the domain's reason is still the default: the first quota hit wins.

Two changes from NetarchiveSuite: every domain configuration of the job gets a row, also
one that produced nothing, so continuation steps do not lose it; and domains outside the job are dropped
here, with their number in the result so the controller can log it. The log is streamed; memory grows
with the number of distinct domains and seeds, not with the number of lines.

Nothing harvested is a finding (ours; NetarchiveSuite reports such a domain as DOWNLOAD_COMPLETE with 0
objects and says no more). A seed's outcome is its own crawl.log line, the one with discovery path "-":

* answered: a status of 200-399, a page or a redirect;
* fetched but failed: an HTTP error, 400 and above (also below 200);
* not fetched: a negative status (DNS, connection, robots.txt, scope, quota...: Heritrix's
  FetchStatusCodes).

A domain gets the finding ``nothing_harvested`` when it has no object at all, or when at least one of its
seeds is in crawl.log and none of them was answered (a DNS record and a robots.txt are objects, so a domain
whose only seed robots.txt precluded has two objects and still nothing of its own). Its reason names the
most telling seed outcome, in ``_TELLING`` order: a failed DNS lookup, then a connection that failed, a
robots.txt refusal, a scope or operator block, any other failure before a response, an HTTP 5xx, an
HTTP 4xx. The stop reason stays NetarchiveSuite's: the finding is told beside it, never instead of it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harvestdef.domainnames import domain_of_url, to_unicode
from harvestdef.errors import DomainNameError
from harvestdef.messages import NO_SEED_IN_CRAWL_LOG, DomainReport, DomainStats, NothingHarvested
from harvestdef.model.status import StopReason
from harvester.postprocess.crawllogreader import (
    ANNOTATIONS,
    DISCOVERY_PATH,
    MAX_EXAMPLES,
    SOURCE_TAG,
    STATUS,
    URL,
    CrawlLogReader,
    InvalidLine,
    describe_fetch_status,
)

log = logging.getLogger(__name__)

QUOTA_BLOCKED = "-5003"  # compared as text: the reader has checked it is an integer
QUOTA_REASONS = {"Q:groupMaxAllKb": StopReason.SIZE_LIMIT, "Q:groupMaxFetchSuccesses": StopReason.OBJECT_LIMIT}
MAX_OUTSIDE_EXAMPLES = 10
_CACHE_LIMIT = 1_000_000  # cached seed/host -> domain answers; cleared when reached, to bound memory


@dataclass(frozen=True, slots=True)
class DomainReportResult:
    """The report and what the controller should log beside it.

    ``domains_outside_job`` counts the distinct domains in crawl.log that are not in the job's map (their
    lines are left out of the report); ``outside_examples`` names the first few. ``unattributed_lines``
    counts lines whose seed and URI have no domain (a public suffix, a malformed host).
    """

    report: DomainReport
    domains_outside_job: int
    outside_examples: tuple[str, ...]
    lines_read: int
    invalid_lines: int
    invalid_examples: tuple[InvalidLine, ...]
    unattributed_lines: int


# How telling a failed seed's status is, most telling first: the failure that says most of why a domain
# got nothing names it. Statuses not listed rank by _telling().
_TELLING: tuple[frozenset[int], ...] = (
    frozenset({-1, -6, -60}),                              # the name does not resolve
    frozenset({-2, -3, -4, -8, -404}),                     # the server does not answer
    frozenset({-9998, -61}),                               # robots.txt keeps the crawler out
    frozenset({-5000, -5001, -5002, -5005, -4000, -4001, -4002}),  # scope, trap, operator or destination rules
)
_OTHER_NOT_FETCHED = len(_TELLING)
_SERVER_ERROR = _OTHER_NOT_FETCHED + 1
_CLIENT_ERROR = _SERVER_ERROR + 1


def _telling(status: int) -> int:
    """The rank of a failed seed's status: lower is more telling."""
    for rank, statuses in enumerate(_TELLING):
        if status in statuses:
            return rank
    if status < 100:
        return _OTHER_NOT_FETCHED
    return _SERVER_ERROR if status >= 500 else _CLIENT_ERROR


def is_answered(status: int) -> bool:
    """A seed's status that counts as harvested: a page or a redirect (200-399)."""
    return 200 <= status < 400


class _Counts:
    """One domain's running figures while the log is read, and what became of its seeds."""

    __slots__ = ("objects", "bytes", "duplicate_objects", "duplicate_bytes", "stop_reason", "seeds_answered",
                 "seeds_failed", "telling")

    def __init__(self, stop_reason: StopReason):
        self.objects = 0
        self.bytes = 0
        self.duplicate_objects = 0
        self.duplicate_bytes = 0
        self.stop_reason = stop_reason
        self.seeds_answered = 0
        self.seeds_failed = 0
        self.telling: tuple[int, int, str] | None = None  # (rank, status, seed) of the most telling failure

    def add_seed(self, status: int, seed: str) -> None:
        """Count a seed's own crawl.log line; the first seed of the most telling rank is kept."""
        if is_answered(status):
            self.seeds_answered += 1
            return
        self.seeds_failed += 1
        rank = _telling(status)
        if self.telling is None or rank < self.telling[0]:
            self.telling = (rank, status, seed)

    def nothing_harvested(self) -> NothingHarvested | None:
        """The finding that this domain got nothing (module docstring), or None."""
        if self.seeds_answered or (self.objects and not self.seeds_failed):
            return None
        if self.telling is None:
            return NothingHarvested(NO_SEED_IN_CRAWL_LOG)
        _, status, seed = self.telling
        reason = f"{describe_fetch_status(status)} for {seed}"
        others = self.seeds_failed - 1
        if others:
            reason += f" (and {others} other seed{'s' if others > 1 else ''} failed)"
        return NothingHarvested(reason, status, seed, others)


_UNATTRIBUTED = _Counts(StopReason.DOWNLOAD_UNFINISHED)  # marks lines whose seed or URI has no domain


def _leading_int(text: str) -> int:
    """``1288,3t`` -> 1288; 0 when the value is not a number."""
    value = text.partition(",")[0]
    return int(value) if value.isdigit() else 0


def _last_line(path: Path, block: int = 8192) -> str:
    """The last non-blank line of a file, read from its end (progress-statistics.log can be large)."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        tail = b""
        position = end
        while position > 0:
            step = min(block, position)
            position -= step
            handle.seek(position)
            tail = handle.read(step) + tail
            stripped = tail.rstrip()
            if b"\n" in stripped:
                return stripped.rsplit(b"\n", 1)[1].decode("utf-8", "replace").strip()
        return tail.decode("utf-8", "replace").strip()


def stop_reason_from_progress_log(path: Path | None) -> StopReason:
    """The default stop reason of a crawl from the last line of its progress-statistics.log (the rule above)."""
    if path is None or not Path(path).is_file():
        return StopReason.DOWNLOAD_UNFINISHED
    line = _last_line(Path(path))
    if "CRAWL ENDED" not in line:
        return StopReason.DOWNLOAD_UNFINISHED
    # Heritrix 3's CrawlStatus.FINISHED_ABNORMAL reads "Abnormal exit from crawling"; "Exited abnormally" is
    # the wording of older releases and of NetarchiveSuite's documentation
    if "Ended by operator" in line or "Abnormal exit from crawling" in line or "Exited abnormally" in line:
        return StopReason.DOWNLOAD_UNFINISHED
    if "Timelimit hit" in line:
        return StopReason.TIME_LIMIT
    return StopReason.DOWNLOAD_COMPLETE


def _authority(url: str) -> str:
    """The host[:port] part of a URL (or the host of ``dns:host``), cheaply: the cache key for its domain."""
    if url.startswith("dns:"):
        return url[4:]
    start = url.find("://")
    rest = url[start + 3:] if start >= 0 else url
    end = len(rest)
    for separator in "/?#":
        index = rest.find(separator)
        if 0 <= index < end:
            end = index
    return rest[:end]


class _DomainResolver:
    """Domain of a seed or URI, cached by host: a log repeats a few thousand hosts millions of times."""

    def __init__(self) -> None:
        self._by_authority: dict[str, str | None] = {}

    def of_url(self, url: str) -> str | None:
        authority = _authority(url)
        try:
            return self._by_authority[authority]
        except KeyError:
            pass
        if len(self._by_authority) >= _CACHE_LIMIT:
            self._by_authority.clear()
        try:
            domain = domain_of_url("http://" + authority)
        except DomainNameError:
            domain = None
        self._by_authority[authority] = domain
        return domain


class DomainTally:
    """The counts per job domain, line by line; the per-line path is kept to a few dictionary lookups.

    ``job_domains`` maps each domain's normalised name (``normalised_domains``) to the job's own; the
    counts are kept by normalised name. Lines may come in any number of ``add_fields`` calls, so a crawl.log
    still being written can be counted as it grows (harvester/livetally.py)."""

    def __init__(self, job_domains: Mapping[str, str], default: StopReason, use_seed: bool):
        self.job_domains = job_domains
        self.default = default
        self.use_seed = use_seed
        self.counts: dict[str, _Counts] = {}
        self.outside: set[str] = set()
        self.outside_examples: list[str] = []
        self.unattributed = 0
        self.resolver = _DomainResolver()
        # seed -> its domain's counts; None for a domain outside the job, _UNATTRIBUTED for no domain
        self._by_seed: dict[str, _Counts | None] = {}

    def _entry(self, domain: str | None) -> _Counts | None:
        """The counts of a job domain; None for a domain outside the job (which is remembered and counted),
        _UNATTRIBUTED when there is no domain."""
        if domain is None:
            return _UNATTRIBUTED
        entry = self.counts.get(domain)
        if entry is None and domain in self.job_domains:
            entry = self.counts[domain] = _Counts(self.default)
        elif entry is None and domain not in self.outside:
            self.outside.add(domain)
            if len(self.outside_examples) < MAX_OUTSIDE_EXAMPLES:
                self.outside_examples.append(domain)
        return entry

    def add(self, reader: CrawlLogReader) -> None:
        self.add_fields(reader.fields())

    def add_fields(self, lines: Iterable[list[str]]) -> None:
        """Count valid crawl.log lines, split into their columns (CrawlLogReader.fields' rule)."""
        by_seed, default, use_seed = self._by_seed, self.default, self.use_seed
        discovery_path = DISCOVERY_PATH  # a local: this loop runs once per line of a ten-million-line log
        for fields in lines:
            seed = fields[SOURCE_TAG]
            if use_seed and seed != "-":
                try:
                    entry = by_seed[seed]
                except KeyError:
                    if len(by_seed) >= _CACHE_LIMIT:
                        by_seed.clear()
                    entry = by_seed[seed] = self._entry(self.resolver.of_url(seed))
            else:
                entry = self._entry(self.resolver.of_url(fields[URL]))
            if entry is None:
                continue
            if entry is _UNATTRIBUTED:
                self.unattributed += 1
                continue
            status = fields[STATUS]
            if fields[discovery_path] == "-":  # a seed's own line: few, so their cost stays off the hot path
                entry.add_seed(int(status), fields[URL])
            try:
                annotations = fields[ANNOTATIONS]
            except IndexError:
                annotations = "-"
            if status[0] != "-":
                start = annotations.find("content-size:")
                size = 0
                if start >= 0:
                    try:
                        size = int(annotations[start + 13:])  # usually the last annotation
                    except ValueError:
                        size = _leading_int(annotations[start + 13:])
                entry.objects += 1
                entry.bytes += size
                if "duplicate:" in annotations and (annotations.startswith("duplicate:")
                                                    or ",duplicate:" in annotations):
                    entry.duplicate_objects += 1
                    entry.duplicate_bytes += size
            elif status == QUOTA_BLOCKED and entry.stop_reason is default:
                for annotation in annotations.split(","):
                    reason = QUOTA_REASONS.get(annotation)
                    if reason is not None:
                        entry.stop_reason = reason
                        break


def normalised_domains(domains: Iterable[str]) -> dict[str, str]:
    """Each of the job's domains by its normalised name (lower case, Unicode), as DomainTally counts them."""
    return {_normalised(domain): domain for domain in domains}


def _normalised(domain: str) -> str:
    name = domain.strip().rstrip(".").lower()
    try:
        return to_unicode(name)
    except DomainNameError:
        return name


def _crawl_log_paths(crawl_log: Path | Iterable[Path] | None) -> list[Path]:
    if crawl_log is None:
        return []
    if isinstance(crawl_log, (str, os.PathLike)):
        return [Path(crawl_log)]
    return [Path(path) for path in crawl_log]


def build_domain_report(crawl_log: Path | Iterable[Path] | None, progress_statistics_log: Path | None,
                        domain_configurations: Mapping[str, str], disregard_seed_url_info: bool = False,
                        forced_stop_reason: StopReason | None = None) -> DomainReportResult:
    """The domain report of one job from its crawl.log (or the logs of its launches, in order).

    ``domain_configurations`` maps each domain of the job (Unicode names, as harvestdef stores them) to its
    configuration name; every one gets a row. ``forced_stop_reason`` replaces the default stop reason from
    progress-statistics.log, e.g. DOWNLOAD_UNFINISHED for a crawl the stall watchdog stopped; a domain that
    hit a quota keeps its quota reason. A missing crawl.log gives rows with nothing harvested.
    """
    default = forced_stop_reason if forced_stop_reason is not None \
        else stop_reason_from_progress_log(progress_statistics_log)
    job_domains = normalised_domains(domain_configurations)
    tally = DomainTally(job_domains, default, use_seed=not disregard_seed_url_info)
    lines_read = invalid_lines = 0
    invalid_examples: list[InvalidLine] = []
    for path in _crawl_log_paths(crawl_log):
        if not path.is_file():
            log.warning("crawl.log %s does not exist; its domains get nothing from it", path)
            continue
        reader = CrawlLogReader(path)
        tally.add(reader)
        lines_read += reader.lines_read
        invalid_lines += reader.invalid_lines
        invalid_examples.extend(reader.invalid_examples[:max(0, MAX_EXAMPLES - len(invalid_examples))])
        if reader.invalid_lines:
            log.warning("%s: %d invalid lines skipped (first: line %d, %s)", path, reader.invalid_lines,
                        reader.invalid_examples[0].number, reader.invalid_examples[0].reason)
    rows = []
    for normalised, domain in sorted(job_domains.items()):
        entry = tally.counts.get(normalised) or _Counts(default)
        rows.append(DomainStats(
            domain=domain, configuration=domain_configurations[domain], objects=entry.objects,
            bytes=entry.bytes, novel_objects=entry.objects - entry.duplicate_objects,
            novel_bytes=entry.bytes - entry.duplicate_bytes, duplicate_objects=entry.duplicate_objects,
            duplicate_bytes=entry.duplicate_bytes, stop_reason=entry.stop_reason,
            nothing_harvested=entry.nothing_harvested()))
    return DomainReportResult(
        report=DomainReport(default_stop_reason=default, domains=rows), domains_outside_job=len(tally.outside),
        outside_examples=tuple(tally.outside_examples), lines_read=lines_read, invalid_lines=invalid_lines,
        invalid_examples=tuple(invalid_examples), unattributed_lines=tally.unattributed)
