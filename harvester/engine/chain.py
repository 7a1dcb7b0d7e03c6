"""The processor chain: what the crawl does with one URI taken from the frontier, step by step.

Order of work for each URI (do not reorder: each step relies on the one before):
0. the operators' reject rules, asked again: a URI one of them rejects ends -5000 unfetched (frontier/preselector.py);
1. DNS prerequisite once per host (``dns:`` record and crawl.log line, answered from ``--hosts``); a host
   without an address ends the URI -6, a host the destination policy refuses ends it -5005 with
   ``destinationRefused:KIND``, never connected to (fetching/prerequisites.py, DnsPrerequisite);
2. quota of the URI's group (-5003 with ``Q:groupMaxFetchSuccesses`` / ``Q:groupMaxAllKb``; frontier/quota.py);
3. robots.txt prerequisite once per host:port, unless the policy is ``ignore``, then its rules (-9998;
   fetching/prerequisites.py, RobotsPrerequisite); its Sitemap lines are offered with ExtractorRobotsTxt;
3a. a login form of the credential store, posted once before its server's other URIs (fetching/prerequisites.py,
   FormLoginPrerequisite; only with HtmlFormCredentials);
4. fetch; network errors are retried with backoff up to maxRetries (fetching/step.py);
5. deduplication (revisit record) or a response record; crawl.log; statistics; quotas (disposition.py);
6. politeness: the queue rests after the fetch (fetching/step.py);
7. outlinks and redirects offered to scope and frontier with their hop paths (disposition.py, through
   frontier/discovery.py).
Crawl limits are not a step (limits.py; the crawl controller checks them between URIs): they end the crawl
with FINISHED_DATA_LIMIT / FINISHED_DOCUMENT_LIMIT / FINISHED_TIME_LIMIT.

Each step is an object with one method, ``process(curi) -> Outcome | None``: None passes the URI on, an
Outcome ends its processing. The chain runs on the crawl's event loop, one URI per crawl thread at a time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from harvester.engine.frontier.frontier import CrawlUri, WorkQueue

if TYPE_CHECKING:
    from harvester.engine.disposition import Disposition

# crawl.log statuses of a URI the chain ends before a fetch (Heritrix's FetchStatusCodes).
DNS_FAILED = -1
DOMAIN_LOOKUP_FAILED = -6
OUT_OF_SCOPE = -5000
QUOTA_BLOCKED = -5003
# DESTINATION_REFUSED (-5005, ours) is fetching/fetch.py's: the fetcher refuses such an address too.
ROBOTS_PRECLUDED = -9998


@dataclass
class Curi:
    """One URI on its way through the chain (Heritrix's CrawlURI): the frontier's entry and its queue, the
    crawl thread handling it, where it goes, the host's address once the DNS step has it, and how it is
    fetched (a login form's URI is POSTed with its form's body)."""

    uri: CrawlUri
    queue: WorkQueue
    thread: int
    host: str
    port: int
    started: float = field(default_factory=time.monotonic)
    address: str | None = None
    method: str = "GET"
    body: bytes = b""

    @classmethod
    def taken(cls, uri: CrawlUri, queue: WorkQueue, thread: int) -> Curi:
        """A URI just taken from ``queue`` by crawl thread ``thread``."""
        parts = urlsplit(uri.url)
        return cls(uri, queue, thread, parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"

    def fail(self, status: int, annotations: Sequence[str] = ()) -> Outcome:
        """The URI ends with ``status`` before any fetch of its own; its queue is free again at once."""
        return Outcome(ready_at=self.started, failure=status, annotations=tuple(annotations))


@dataclass(frozen=True)
class Outcome:
    """How a URI's processing ended. ``ready_at``: when its queue may be used again (None: the URI went back
    on its queue to be retried, which released the queue). ``failure``: a status the chain records for the
    URI (None: the step recorded what there was to record)."""

    ready_at: float | None
    failure: int | None = None
    annotations: tuple[str, ...] = ()


class Processor(Protocol):
    async def process(self, curi: Curi) -> Outcome | None: ...


class ProcessorChain:
    """The steps in their order; the last one (the fetch) always ends a URI's processing."""

    def __init__(self, processors: Sequence[Processor], disposition: Disposition) -> None:
        self.processors = tuple(processors)
        self.disposition = disposition

    async def process(self, curi: Curi) -> float | None:
        """Run ``curi`` through the chain; returns when its queue may be used again (None: already released)."""
        for processor in self.processors:
            outcome = await processor.process(curi)
            if outcome is not None:
                if outcome.failure is not None:
                    self.disposition.record_failure(curi.uri, outcome.failure, curi.thread, list(outcome.annotations))
                return outcome.ready_at
        raise AssertionError(f"no step of the chain ended {curi.uri.url}")
