"""What one fetched URI leaves in the WARC: a response and request pair, or a revisit record when the same
payload was captured before (Heritrix's DeDuplicator, NetarchiveSuite's deduplication), and dns: records.

It decides duplicate or not and writes the records; it does not fetch, count statistics, write crawl.log or
extract links. The WARC writer, the within-job digest store and the dedup index are given to it already
open: the crawl controller opens and closes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harvestdef.dedup import DedupIndex
from harvestdef.patterns import CompiledPattern, compile_pattern
from harvester.engine.config import CrawlConfig
from harvester.engine.fetching.fetch import FetchResult
from harvester.engine.frontier.urlstore import UrlStore
from harvester.engine.warcwriting.warc import WarcFileWriter, iso_to_14, warc_date

DUPLICATE_ANNOTATION = "duplicate:digest"


@dataclass(frozen=True)
class DedupRules:
    """The DeDuplicator bean's settings: whether it is there, matching by URL or by digest only, and the
    mimetype filter (a regular expression, black- or whitelisting)."""

    is_enabled: bool
    is_by_url: bool
    mime_filter: str
    is_mime_filter_blacklist: bool
    # compiled once, by RE2 like every pattern of the crawler-beans (harvester/engine/config.py checked it)
    _mime_regex: CompiledPattern | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_mime_regex", compile_pattern(self.mime_filter) if self.mime_filter else None)

    @classmethod
    def from_config(cls, config: CrawlConfig) -> DedupRules:
        return cls(config.dedup_enabled, config.dedup_by_url, config.dedup_mime_filter,
                   config.dedup_mime_filter_is_blacklist)

    def applies_to(self, status: int, mime: str, annotations: list[str]) -> bool:
        """Only a whole 2xx capture is deduplicated: a retried or truncated one (any annotation) is kept."""
        return self.is_enabled and 200 <= status < 300 and not annotations and self.is_mime_eligible(mime)

    def is_mime_eligible(self, mime: str) -> bool:
        matches = self._mime_regex is not None and self._mime_regex.match(mime) is not None
        return not matches if self.is_mime_filter_blacklist else matches


class CaptureRecorder:
    """Writes each capture's records. ``warc`` is None when the WARC writer is disabled: then nothing is
    written, and nothing is remembered for later duplicates either (there is no record to point at)."""

    def __init__(self, warc: WarcFileWriter | None, store: UrlStore, dedup_index: DedupIndex | None,
                 rules: DedupRules) -> None:
        self.warc = warc
        self.store = store
        self.dedup_index = dedup_index
        self.rules = rules

    def record_exchange(self, url: str, result: FetchResult, mime: str, annotations: list[str]) -> bool:
        """Write the capture of ``url``; True when it was a duplicate and written as a revisit record.

        ``annotations`` are the crawl.log annotations so far (retries, truncation); they decide whether
        deduplication applies and whether the response record is marked truncated.
        """
        assert result.spool is not None  # a response was received: there is something to record
        digest = result.payload_digest
        # An empty payload is no content to point at: its digest is every empty response's, so a revisit of
        # it would say an error page, or a head cut at the caps, is some other capture.
        dedup_applies = result.payload_length > 0 and self.rules.applies_to(result.status, mime, annotations)
        original = None
        seen_key = ""
        if dedup_applies:
            # By URL (NetarchiveSuite's templates) a capture repeats only the same URL's with this payload.
            seen_key = f"{digest} {url}" if self.rules.is_by_url else digest
            original = self.store.digest(seen_key)
            if original is None and self.dedup_index is not None:
                entry = self.dedup_index.lookup(digest, url if self.rules.is_by_url else None)
                if entry is not None:
                    original = (entry.url, entry.date, entry.record_id or "")
        if original is not None:
            if self.warc is not None:
                self.warc.write_revisit(url, result.started, result.address, result.raw_request,
                                        result.spool.head(), digest, original[0],
                                        _date_14_to_warc(original[1]), original[2] or None)
            return True
        if self.warc is not None:
            written = self.warc.write_exchange(url, result.started, result.address, result.raw_request,
                                               result.spool, _truncation(annotations))
            if dedup_applies:
                self.store.put_digest(seen_key, (url, iso_to_14(warc_date(result.started)), written.record_id))
        return False

    def record_dns(self, dns_uri: str, started: float, answer: bytes) -> None:
        if self.warc is not None:
            self.warc.write_dns(dns_uri, started, answer)


def _truncation(annotations: list[str]) -> str | None:
    """The WARC-Truncated reason for the crawl.log truncation annotations: Heritrix's for ``lenTrunc`` and
    the time cuts. A head cut at the engine's header caps (``headerTrunc``) is cut at a configured length, the
    WARC 1.1 specification's ``length``; Heritrix writes its own token ``long-headers`` there, which no
    reader of the standard knows, and crawl.log's ``headerTrunc`` tells the two cuts apart."""
    if "lenTrunc" in annotations or "headerTrunc" in annotations:
        return "length"
    if "timeTrunc" in annotations:
        return "time"
    return None


def _date_14_to_warc(date: str) -> str:
    if len(date) >= 14 and date[:14].isdigit():
        return f"{date[0:4]}-{date[4:6]}-{date[6:8]}T{date[8:10]}:{date[10:12]}:{date[12:14]}Z"
    return date
