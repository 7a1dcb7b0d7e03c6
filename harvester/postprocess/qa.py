"""The QA report of one job: what became of its seeds, which embedded resources its captured pages miss and
why, and how each host answered. Computed in post-processing from the job's own files (every launch's
crawl.log and the crawl's WARCs), never by crawling again.

Rules:

* A seed's outcome is its own crawl.log line (discovery path "-"); its final status follows its redirects
  (lines whose last hop is R, found by their via column) to the end of the chain. It is captured when that
  final status is 200-399 after the chain ends; otherwise ``reason`` says why in words
  (``describe_fetch_status``), as the domain report's NothingHarvested findings do.
* A missing resource is an embedded resource (last hop E in crawl.log, or referenced by a captured HTML or
  CSS response: img/src, srcset, link rel=stylesheet, script/src, frames, CSS url(), the engine's own
  extractors in harvester/engine/extraction/links.py) that no crawl.log line of the job fetched with 200-399. Its
  reason, from its last crawl.log line: ``out_of_scope`` (-5000), ``robots`` (-9998, -61), ``budget``
  (-5003, with the quota annotation), ``destination_refused`` (-5005: an address harvesting does not
  connect to, harvestdef/destinations.py), ``http_error`` (400 and up), ``network_error`` (any other negative
  code), or, absent from crawl.log, ``never_reached`` (the crawl ended first). A crawler does not log what
  it leaves out of scope when it finds it (Heritrix does not, nor does the bundled engine), so a reference
  absent from crawl.log whose domain is none of the job's is ``out_of_scope``, not ``never_reached``.
* Excluded, not missing: a resource kept out by what an operator or the harvest decided is no fault of the
  crawl, so it is counted apart, with the rule or change that kept it out (``ExcludedGroup``): a reject rule
  added while the crawl ran (a live change: who and which change; the URL fully matched by its regex, within
  its domain when it was given one), the deletion of queued URIs (a live change: ``delete_queued``'s regex,
  or crawl.log's -6000), a crawler trap of the job's crawl template (its REJECT regex lists), and a budget
  (-5003: a domain budget set while the crawl ran names its change, else it is the configuration's own
  object or byte limit, the quota annotation saying which). Only resources that would otherwise be
  ``never_reached``, ``out_of_scope`` by a -5000 line or ``budget`` are tested: a rule explains nothing
  about an HTTP error. A domain whose crawl ended at its object or byte limit (its stop reason in the
  domain report) had the rest of its resources kept out by that limit: what of it crawl.log never reached
  is excluded by the budget too, since a crawler stops queuing a domain's URIs at its limit without logging
  them.
* Hosts: lines per fetch status and failures (HTTP 400 and up, and network errors) per host; the hosts
  that failed most are listed first.

Size: a broad crawl's log has millions of lines, so counts are exact and lists are capped, each with its
total. Memory grows with the number of hosts and seeds, never with the lines: which URLs crawl.log fetched
and which page needs which resource are joined in a temporary SQLite file, not in dictionaries. WARC
payloads are read as streams, at most the extractors' bound of each.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader

from harvestdef.domainnames import domain_of_url
from harvestdef.errors import DomainNameError, PatternError
from harvestdef.messages import QaSummary
from harvestdef.patterns import BacktrackingPattern, CrawlPatterns, compile_crawl_pattern
from harvester.engine.extraction.links import extract_links, extractor_for
from harvester.engine.frontier.scope import canonical_url
from harvester.heritrix3.scripting import domain_reject_regex
from harvester.postprocess.crawllogreader import (
    ANNOTATIONS,
    DISCOVERY_PATH,
    STATUS,
    URL,
    VIA,
    CrawlLogReader,
    describe_fetch_status,
)
from harvester.postprocess.domainreport import normalised_domains

# 2: ``excluded``, ``excluded_resources`` and ``pages_captured``; a report of version 1 has none of them and
# reads as none excluded, its captured pages not counted
QA_REPORT_VERSION = 2
MAX_SEEDS = 1000          # seeds listed (those not captured first); the counts cover all
MAX_RESOURCES = 50        # missing resources listed per reason
MAX_PAGES = 5             # pages listed per missing resource
MAX_HOSTS = 100           # hosts listed with their status counts, most lines first
MAX_FAILING_HOSTS = 10    # the hosts that failed most
_BATCH = 5000             # rows per executemany into the temporary database

# The reasons a resource is missing, in the order the report lists them, with their words.
REASONS: dict[str, str] = {
    "out_of_scope": "out of scope",
    "robots": "precluded by robots.txt",
    "budget": "budget reached",
    "destination_refused": "refused destination: not a public address",
    "http_error": "HTTP error",
    "network_error": "network error",
    "never_reached": "never reached: the crawl ended before it got to them",
}
# The ways an operator's rule or the harvest's budget keeps a resource out, in the order the report lists them.
EXCLUSIONS = ("reject_rule", "deleted_from_queue", "crawler_trap", "budget")
# the kinds of OperatorRule: the live changes that keep URIs out, and the template's traps
REJECT, DELETE_QUEUED, BUDGET, CRAWLER_TRAP = "reject", "delete_queued", "budget", "crawler_trap"
_RULE_EXCLUSION = {REJECT: "reject_rule", DELETE_QUEUED: "deleted_from_queue", CRAWLER_TRAP: "crawler_trap",
                   BUDGET: "budget"}
_DELETED_BY_OPERATOR = -6000
_TRAP_SECONDS = 0.05  # a backtracking trap's time per URL, as the engine gives it (harvester/engine/frontier/scope.py)
_ROBOTS = frozenset({-9998, -61})
_QUOTA_PREFIX = "Q:"
# the annotations a missing resource's detail repeats: the quota it hit, the kind of a refused destination
_TOLD_PREFIXES = (_QUOTA_PREFIX, "destinationRefused:")


def _is_fetched(status: int) -> bool:
    return 200 <= status < 400


def _is_failure(status: int) -> bool:
    """A host's failure: an HTTP error or a network error (not a rule of the crawl's, such as scope)."""
    return status >= 400 or _reason_of(status) == "network_error"


def _reason_of(status: int) -> str | None:
    """The missing-resource reason of a crawl.log status; None for one that fetched the resource."""
    if status == -5000:
        return "out_of_scope"
    if status in _ROBOTS:
        return "robots"
    if status == -5003:
        return "budget"
    if status == -5005:
        return "destination_refused"
    if status >= 400 or 0 < status < 200:
        return "http_error" if status >= 400 else None
    if status < 0:
        return "network_error"
    return None if _is_fetched(status) else "network_error"


@dataclass
class SeedOutcome:
    """One seed: its own crawl.log status (None when it is not in crawl.log), the URL and status at the end
    of its redirects, whether that was captured, and why not in words."""

    seed: str
    status: int | None
    final_url: str
    final_status: int | None
    captured: bool
    reason: str | None = None


@dataclass
class MissingResource:
    """An embedded resource the job did not capture: its last crawl.log status (None: not in crawl.log),
    that status in words with the annotation it repeats (``annotation``: a quota, a refused destination's
    kind), and the pages that need it (at most MAX_PAGES, ``pages_total`` all of them)."""

    url: str
    status: int | None
    detail: str
    pages: list[str]
    pages_total: int
    annotation: str | None = None  # the crawl.log annotation the detail repeats (a quota, a refused kind)


@dataclass
class MissingGroup:
    """The missing resources of one reason: at most MAX_RESOURCES listed, ``resources_total`` all."""

    reason: str
    words: str
    resources: list[MissingResource]
    resources_total: int
    pages_total: int


@dataclass
class OperatorRule:
    """What keeps URIs out of a job: a live change (``kind`` reject, delete_queued or budget, with its
    ``author``, ``version`` and when it was applied, ``at``) or a crawler trap of the job's template (no
    author, version or time). ``regex`` is Java's dialect as given; ``domain`` confines a reject rule, and
    names a budget's domain."""

    kind: str
    regex: str | None = None
    domain: str | None = None
    author: str | None = None
    version: int | None = None
    at: str | None = None


@dataclass
class ExcludedGroup:
    """The resources one rule kept out (``rule`` None: the configurations' own budgets): at most
    MAX_RESOURCES listed, ``resources_total`` all; ``reason`` one of EXCLUSIONS."""

    reason: str
    rule: OperatorRule | None
    resources: list[MissingResource]
    resources_total: int
    pages_total: int


@dataclass
class HostFigures:
    """One host's crawl.log lines per fetch status (as text keys, for JSON) and its failures."""

    host: str
    lines: int
    failures: int
    statuses: dict[str, int]


@dataclass
class QaReport:
    """The QA report of one job (module docstring); ``to_json``/``from_json`` give its document."""

    job_id: int
    harvest_id: int
    seeds: list[SeedOutcome]
    seeds_total: int
    seeds_not_captured: int
    missing: list[MissingGroup]
    missing_resources: int
    pages_with_missing_resources: int
    hosts: list[HostFigures]
    hosts_total: int
    failing_hosts: list[HostFigures]
    statuses: dict[str, int]
    lines_read: int
    version: int = QA_REPORT_VERSION
    notes: list[str] = field(default_factory=list)
    excluded: list[ExcludedGroup] = field(default_factory=list)
    excluded_resources: int = 0
    pages_captured: int | None = None  # captured HTML and CSS responses read for references; None: version 1

    @property
    def summary(self) -> QaSummary:
        return QaSummary(self.seeds_total, self.seeds_not_captured, self.pages_with_missing_resources,
                         self.missing_resources)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> QaReport:
        data: dict[str, Any] = json.loads(text)
        data["seeds"] = [SeedOutcome(**seed) for seed in data["seeds"]]
        data["missing"] = [MissingGroup(**{**group, "resources": [MissingResource(**r) for r in group["resources"]]})
                           for group in data["missing"]]
        data["hosts"] = [HostFigures(**host) for host in data["hosts"]]
        data["failing_hosts"] = [HostFigures(**host) for host in data["failing_hosts"]]
        data["excluded"] = [ExcludedGroup(**{**group, "rule": OperatorRule(**group["rule"]) if group["rule"] else None,
                                             "resources": [MissingResource(**r) for r in group["resources"]]})
                            for group in data.get("excluded", [])]
        return cls(**data)


def operator_rules(live_changes: Iterable[Mapping[str, Any]], traps: Iterable[str] = ()) -> list[OperatorRule]:
    """The rules that keep URIs out of a job: its applied live changes that do (changes.jsonl's entries:
    reject, delete_queued, budget), in version order, then the crawler traps of its template."""
    rules = []
    for entry in sorted(live_changes, key=lambda entry: int(entry.get("version", 0))):
        kind = entry.get("kind")
        if entry.get("state") != "applied" or kind not in (REJECT, DELETE_QUEUED, BUDGET):
            continue
        payload = entry.get("payload") or {}
        rules.append(OperatorRule(kind, regex=payload.get("regex"), domain=payload.get("domain"),
                                  author=str(entry.get("author", "")), version=int(entry["version"]),
                                  at=str(entry.get("happened_at", "")) or None))
    rules += [OperatorRule(CRAWLER_TRAP, regex=trap) for trap in dict.fromkeys(traps)]
    return rules


class _Hosts:
    """Status counts per host; memory grows with the hosts, not the lines."""

    def __init__(self) -> None:
        self.by_host: dict[str, HostFigures] = {}
        self.statuses: dict[str, int] = {}

    def add(self, url: str, status: str) -> None:
        host = _host(url)
        figures = self.by_host.get(host)
        if figures is None:
            figures = self.by_host[host] = HostFigures(host, 0, 0, {})
        figures.lines += 1
        figures.statuses[status] = figures.statuses.get(status, 0) + 1
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if _is_failure(int(status)):
            figures.failures += 1

    def listed(self) -> list[HostFigures]:
        return sorted(self.by_host.values(), key=lambda h: (-h.lines, h.host))[:MAX_HOSTS]

    def failing(self) -> list[HostFigures]:
        failed = [h for h in self.by_host.values() if h.failures]
        return sorted(failed, key=lambda h: (-h.failures, h.host))[:MAX_FAILING_HOSTS]


def _host(url: str) -> str:
    if url.startswith("dns:"):
        return url[4:]
    rest = url.partition("://")[2] or url
    for separator in "/?#":
        rest = rest.partition(separator)[0]
    return rest.lower()


class _Seeds:
    """Each seed's own line and its redirect chain, followed as crawl.log tells it: a redirect's target is
    logged after its source, so only the URLs of the chains so far are remembered."""

    def __init__(self, seeds: Sequence[str]):
        # as the crawler logs them (a seed typed without its path is logged with "/")
        self.seeds = list(dict.fromkeys(canonical_url(seed) or seed for seed in seeds))
        self.status: dict[str, int] = {}       # a chain URL's latest status
        self.redirect: dict[str, str] = {}     # source -> the target crawl.log found by an R hop from it
        self.in_chain: set[str] = set(self.seeds)

    def add(self, url: str, status: int, hop_path: str, via: str | None) -> None:
        if hop_path.endswith("R") and via in self.in_chain and url != via:
            self.redirect.setdefault(via, url)
            self.in_chain.add(url)
        # a retry that fetched it wins over earlier failures; a later failure never undoes a fetch
        if url in self.in_chain and (url not in self.status or not _is_fetched(self.status[url])
                                     or _is_fetched(status)):
            self.status[url] = status

    def outcomes(self) -> list[SeedOutcome]:
        return [self._outcome(seed) for seed in self.seeds]

    def _outcome(self, seed: str) -> SeedOutcome:
        status = self.status.get(seed)
        if status is None:
            return SeedOutcome(seed, None, seed, None, False, "not in crawl.log: the crawl ended before it")
        url, seen = seed, {seed}
        while url in self.redirect and self.redirect[url] not in seen:
            url = self.redirect[url]
            seen.add(url)
        final = self.status.get(url)
        if final is None:
            return SeedOutcome(seed, status, url, None, False,
                               f"redirected to {url}, which is not in crawl.log: the crawl ended before it")
        if 200 <= final < 300:
            return SeedOutcome(seed, status, url, final, True)
        if 300 <= final < 400:
            return SeedOutcome(seed, status, url, final, False,
                               f"{describe_fetch_status(final)}: a redirect the crawl did not follow")
        where = "" if url == seed else f" after redirects, at {url}"
        return SeedOutcome(seed, status, url, final, False, f"{describe_fetch_status(final)}{where}")


class _Joins:
    """The temporary database that joins what crawl.log fetched with what pages need.

    ``logged``: every URL in crawl.log, with whether any line fetched it; ``failed``: the last failed line
    of each embedded URL; ``needs``: (resource, page) pairs from E lines' via column and from the pages'
    references."""

    def __init__(self, path: Path):
        self.db = sqlite3.connect(path)
        self.db.executescript("""
            PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
            CREATE TABLE logged (url TEXT PRIMARY KEY, fetched INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE failed (url TEXT PRIMARY KEY, status INTEGER NOT NULL, quota TEXT) WITHOUT ROWID;
            CREATE TABLE needs (url TEXT NOT NULL, page TEXT NOT NULL, PRIMARY KEY (url, page)) WITHOUT ROWID;
            CREATE TABLE missing (url TEXT PRIMARY KEY, reason TEXT NOT NULL, status INTEGER, quota TEXT,
                                  exclusion TEXT, rule INTEGER) WITHOUT ROWID;
        """)
        self.logged: list[tuple[str, int]] = []
        self.failed: list[tuple[str, int, str | None]] = []
        self.needs: list[tuple[str, str]] = []

    def close(self) -> None:
        self.db.close()

    def flush(self) -> None:
        with self.db:
            self.db.executemany("INSERT INTO logged VALUES (?, ?) ON CONFLICT (url) DO UPDATE "
                                "SET fetched = max(fetched, excluded.fetched)", self.logged)
            self.db.executemany("INSERT INTO failed VALUES (?, ?, ?) ON CONFLICT (url) DO UPDATE "
                                "SET status = excluded.status, quota = excluded.quota", self.failed)
            self.db.executemany("INSERT OR IGNORE INTO needs VALUES (?, ?)", self.needs)
        self.logged.clear()
        self.failed.clear()
        self.needs.clear()

    def _maybe_flush(self) -> None:
        if len(self.logged) + len(self.needs) >= _BATCH:
            self.flush()

    def add_line(self, url: str, status: int, hop_path: str, via: str | None, annotations: str) -> None:
        self.logged.append((url, 1 if _is_fetched(status) else 0))
        if hop_path.endswith("E") and not _is_fetched(status):
            quota = next((a for a in annotations.split(",") if a.startswith(_TOLD_PREFIXES)), None)
            self.failed.append((url, status, quota))
            if via:
                self.needs.append((url, via))
        self._maybe_flush()

    def add_reference(self, url: str, page: str) -> None:
        self.needs.append((url, page))
        self._maybe_flush()


def _pieces(stream: Any) -> Iterator[bytes]:
    while piece := stream.read(1 << 16):
        yield piece


def _captured_pages(warcs: Iterable[Path]) -> Iterator[tuple[str, list[str]]]:
    """(page URL, the embedded resources it references, canonical) of every captured HTML or CSS response."""
    for path in warcs:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                status = record.http_headers.get_statuscode() or ""
                content_type = record.http_headers.get_header("Content-Type") or ""
                if not status.startswith("2") or extractor_for(content_type) is None:
                    continue
                page = record.rec_headers.get_header("WARC-Target-URI") or ""
                encoding = record.http_headers.get_header("Content-Encoding") or ""
                # The payload as sent, de-chunked but not decoded: extract_links undoes the content encoding
                # within its bound, where warcio's decoding would inflate a compression bomb whole.
                stream_in = record.raw_stream
                if "chunked" in (record.http_headers.get_header("Transfer-Encoding") or "").lower():
                    stream_in = ChunkedDataReader(stream_in)
                links, base = extract_links(_pieces(stream_in), content_type, encoding)
                base_url = canonical_url(base, page) if base else page
                embedded = {url for raw, hop in links if hop == "E"
                            and (url := canonical_url(raw, base_url or page)) is not None and url != page}
                yield page, sorted(embedded)


class _Exclusions:
    """Which rule kept a URL out (``exclusion``): the first reject or delete_queued change, in version order,
    whose regex fully matches it, then the first crawler trap that does; for a URL over quota, the newest
    budget change of its domain, or none (the configurations' own limits); so too for a URL never reached of
    a domain in ``limited`` (its crawl ended at its limit). A trap that only a backtracking matcher runs and
    that runs out of its time on a URL rejects it, as in the crawl."""

    def __init__(self, rules: Sequence[OperatorRule], notes: list[str], limited: Iterable[str] = ()):
        self.rules = list(rules)
        self._limited = normalised_domains(limited)
        self._changes: list[tuple[int, Any]] = []
        self._traps: list[tuple[int, Any]] = []
        self._budgets: dict[str, int] = {}
        for index, rule in enumerate(self.rules):
            if rule.kind == BUDGET:
                if rule.domain:
                    self._budgets[next(iter(normalised_domains([rule.domain])))] = index
                continue
            if not rule.regex:
                continue
            try:
                regex = (domain_reject_regex(rule.domain, rule.regex) if rule.kind == REJECT and rule.domain
                         else rule.regex)
                compiled = compile_crawl_pattern(regex, _TRAP_SECONDS)
            except (PatternError, ValueError) as exc:
                notes.append(f"{_rule_words(rule)} cannot be matched here, so what it kept out counts as "
                             f"missing: {exc}")
                continue
            (self._traps if rule.kind == CRAWLER_TRAP else self._changes).append((index, compiled))
        # every trap at once first: a template has hundreds, and most URLs match none
        try:
            self._any_trap = (CrawlPatterns(tuple(self.rules[i].regex or "" for i, _ in self._traps), _TRAP_SECONDS)
                              if self._traps else None)
        except PatternError:
            self._any_trap = None

    def exclusion(self, url: str, reason: str, status: int | None) -> tuple[str, int | None] | None:
        """(exclusion, index of the rule or None) of a missing resource, None when no rule explains it."""
        if reason == "budget" or (reason == "never_reached" and self._domain_of(url) in self._limited):
            return "budget", self._budget_of(url)
        for index, compiled in self._changes:
            if _full_match(compiled, url):
                return _RULE_EXCLUSION[self.rules[index].kind], index
        if self._traps and (self._any_trap is None or self._any_trap.fullmatch_any(url) is not False):
            for index, compiled in self._traps:
                if _full_match(compiled, url):
                    return "crawler_trap", index
        if status == _DELETED_BY_OPERATOR:
            return "deleted_from_queue", None
        return None

    def _budget_of(self, url: str) -> int | None:
        domain = self._domain_of(url)
        return None if domain is None else self._budgets.get(domain)

    @staticmethod
    def _domain_of(url: str) -> str | None:
        try:
            return next(iter(normalised_domains([domain_of_url(url)])))
        except DomainNameError:
            return None


def _full_match(compiled: Any, url: str) -> bool:
    try:
        return bool(compiled.fullmatch(url))
    except TimeoutError:
        return isinstance(compiled, BacktrackingPattern)


def _rule_words(rule: OperatorRule) -> str:
    if rule.kind == CRAWLER_TRAP:
        return f"the crawler trap {rule.regex!r}"
    return f"change {rule.version} ({rule.kind} {rule.regex!r} by {rule.author})"


def _is_job_domain(url: str, job_domains: dict[str, str]) -> bool:
    try:
        domain = domain_of_url(url)
    except DomainNameError:
        return False
    return bool(normalised_domains([domain]).keys() & job_domains.keys())


def build_qa_report(job_id: int, harvest_id: int, seeds: Sequence[str], crawl_logs: Iterable[Path],
                    warcs: Iterable[Path], job_domains: Iterable[str], work_dir: Path | None = None,
                    rules: Sequence[OperatorRule] = (), limited_domains: Iterable[str] = ()) -> QaReport:
    """The QA report of one job from its launches' crawl.logs (in order) and its WARC files.

    ``job_domains`` are the job's domains (what a reference absent from crawl.log must belong to, to be
    "never reached" rather than out of scope); ``work_dir`` holds the temporary database (default: the
    system's temporary directory); ``rules``: what kept URIs out of the job (operator_rules), whose
    resources are excluded rather than missing; ``limited_domains``: the domains whose crawl ended at their
    object or byte limit, whose resources never reached are excluded by that budget."""
    hosts = _Hosts()
    seed_chains = _Seeds(seeds)
    domains = normalised_domains(job_domains)
    notes: list[str] = []
    exclusions = _Exclusions(rules, notes, limited_domains)
    lines_read = 0
    pages_captured = 0
    with tempfile.TemporaryDirectory(prefix="qa-", dir=work_dir) as scratch:
        joins = _Joins(Path(scratch) / "qa.sqlite")
        try:
            for path in crawl_logs:
                if not Path(path).is_file():
                    notes.append(f"{Path(path).parent.parent.name}: no crawl.log")
                    continue
                reader = CrawlLogReader(path)
                for fields in reader.fields():
                    url, status_text, hop_path = fields[URL], fields[STATUS], fields[DISCOVERY_PATH]
                    status = int(status_text)
                    via = None if fields[VIA] == "-" else fields[VIA]
                    hop_path = "" if hop_path == "-" else hop_path
                    hosts.add(url, status_text)
                    seed_chains.add(url, status, hop_path, via)
                    annotations = fields[ANNOTATIONS] if len(fields) > ANNOTATIONS else "-"
                    joins.add_line(url, status, hop_path, via, annotations)
                lines_read += reader.lines_read
                if reader.invalid_lines:
                    notes.append(f"{path.parent.parent.name}: {reader.invalid_lines} invalid crawl.log lines skipped")
            for page, embedded in _captured_pages(warcs):
                pages_captured += 1
                for url in embedded:
                    joins.add_reference(url, page)
            joins.flush()
            groups, missing_total, pages_total, excluded, excluded_total = _missing(joins, domains, exclusions)
        finally:
            joins.close()
    outcomes = seed_chains.outcomes()
    not_captured = sum(1 for outcome in outcomes if not outcome.captured)
    listed = sorted(outcomes, key=lambda outcome: outcome.captured)[:MAX_SEEDS]  # stable: seed order kept
    return QaReport(job_id=job_id, harvest_id=harvest_id, seeds=listed, seeds_total=len(outcomes),
                    seeds_not_captured=not_captured, missing=groups, missing_resources=missing_total,
                    pages_with_missing_resources=pages_total, hosts=hosts.listed(), hosts_total=len(hosts.by_host),
                    failing_hosts=hosts.failing(), statuses=hosts.statuses, lines_read=lines_read, notes=notes,
                    excluded=excluded, excluded_resources=excluded_total, pages_captured=pages_captured)


def _missing(joins: _Joins, domains: dict[str, str], exclusions: _Exclusions
             ) -> tuple[list[MissingGroup], int, int, list[ExcludedGroup], int]:
    """The missing resources grouped by reason, their number and the number of pages that need any; then
    the excluded ones grouped by the rule that kept them out, and their number."""
    db = joins.db
    with db:
        rows = db.execute("SELECT f.url, f.status, f.quota FROM failed f WHERE NOT EXISTS "
                          "(SELECT 1 FROM logged l WHERE l.url = f.url AND l.fetched = 1)")
        db.executemany("INSERT INTO missing VALUES (?, ?, ?, ?, NULL, NULL)",
                       ((url, _reason_of(status) or "network_error", status, quota) for url, status, quota in rows))
        unlogged = db.execute("SELECT DISTINCT n.url FROM needs n WHERE NOT EXISTS "
                              "(SELECT 1 FROM logged l WHERE l.url = n.url)")
        db.executemany("INSERT INTO missing VALUES (?, ?, NULL, NULL, NULL, NULL)",
                       ((url, "never_reached" if _is_job_domain(url, domains) else "out_of_scope")
                        for (url,) in unlogged))
    _exclude(db, exclusions)
    groups = []
    for reason, words in REASONS.items():
        where = "m.exclusion IS NULL AND m.reason = ?"
        found = _group(db, where, (reason,))
        if found is not None:
            groups.append(MissingGroup(reason, words, *found))
    excluded = []
    for exclusion in EXCLUSIONS:
        keys = [rule for (rule,) in db.execute("SELECT DISTINCT rule FROM missing WHERE exclusion = ? "
                                               "ORDER BY rule IS NOT NULL, rule", (exclusion,))]
        for rule in keys:
            where = "m.exclusion = ? AND " + ("m.rule IS NULL" if rule is None else "m.rule = ?")
            found = _group(db, where, (exclusion,) if rule is None else (exclusion, rule))
            if found is not None:
                excluded.append(ExcludedGroup(exclusion, None if rule is None else exclusions.rules[rule], *found))
    missing_total = db.execute("SELECT count(*) FROM missing WHERE exclusion IS NULL").fetchone()[0]
    excluded_total = db.execute("SELECT count(*) FROM missing WHERE exclusion IS NOT NULL").fetchone()[0]
    pages_total = db.execute("SELECT count(DISTINCT n.page) FROM needs n JOIN missing m ON m.url = n.url "
                             "WHERE m.exclusion IS NULL").fetchone()[0]
    return groups, missing_total, pages_total, excluded, excluded_total


def _exclude(db: sqlite3.Connection, exclusions: _Exclusions) -> None:
    """Mark the missing resources a rule kept out, with the rule: only those no crawl rule of its own
    explains otherwise (never reached, out of scope by a -5000 line, deleted, over quota)."""
    candidates = db.execute("SELECT url, reason, status FROM missing WHERE reason IN ('never_reached', 'budget') "
                            "OR status IN (-5000, ?)", (_DELETED_BY_OPERATOR,))
    marks: list[tuple[str, int | None, str]] = []
    with db:
        for url, reason, status in candidates.fetchall():
            found = exclusions.exclusion(url, reason, status)
            if found is not None:
                marks.append((found[0], found[1], url))
            if len(marks) >= _BATCH:
                db.executemany("UPDATE missing SET exclusion = ?, rule = ? WHERE url = ?", marks)
                marks.clear()
        db.executemany("UPDATE missing SET exclusion = ?, rule = ? WHERE url = ?", marks)


def _group(db: sqlite3.Connection, where: str, arguments: tuple[Any, ...]
           ) -> tuple[list[MissingResource], int, int] | None:
    """The resources of ``missing m`` that ``where`` selects (at most MAX_RESOURCES, each with at most
    MAX_PAGES of the pages that need it), their number and the number of pages needing any; None for none."""
    total = db.execute(f"SELECT count(*) FROM missing m WHERE {where}", arguments).fetchone()[0]
    if not total:
        return None
    pages = db.execute(f"SELECT count(DISTINCT n.page) FROM needs n JOIN missing m ON m.url = n.url WHERE {where}",
                       arguments).fetchone()[0]
    resources = []
    for url, reason, status, quota in db.execute(f"SELECT m.url, m.reason, m.status, m.quota FROM missing m "
                                                 f"WHERE {where} ORDER BY m.url LIMIT ?",
                                                 (*arguments, MAX_RESOURCES)).fetchall():
        needed_by = [page for (page,) in db.execute("SELECT page FROM needs WHERE url = ? ORDER BY page LIMIT ?",
                                                    (url, MAX_PAGES))]
        count = db.execute("SELECT count(*) FROM needs WHERE url = ?", (url,)).fetchone()[0]
        if status is None:
            detail = "not in crawl.log" + ("" if reason == "never_reached" else ": not a domain of the job")
        else:
            detail = describe_fetch_status(status) + (f" ({quota})" if quota else "")
        resources.append(MissingResource(url, status, detail, needed_by, count, quota))
    return resources, total, pages
