"""The frontier: per-queue work lists, politeness, and shortest-path hop counts.

A queue is a host, or a registered domain when the configuration's queue-assignment policy says so
(NetarchiveSuite's DomainnameQueueAssignmentPolicy); quotas are counted per queue, which is the group.
Within a queue, URIs leave shortest hop path first. At most ``parallel_queues`` URIs of a queue are in
flight, and a queue rests ``politeness delay`` after each fetch.

The hop-count rule (the wpull bug, seeds/000): a URL's hop path is its shortest discovery path.
- found again by a shorter path while queued: its entry is replaced (the longer one is skipped when popped);
- rejected by the hop limit, then found by a shorter path: it is scoped again and may be queued;
- found by a shorter path after it was fetched: its outlinks that the hop limit rejected are offered again
  with the shorter path (they are remembered for exactly this reason).
The frontier has no I/O; harvester/engine/crawl.py drives it, harvester/engine/checkpoint.py saves it.
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass, field

from harvester.engine.stats import DISREGARD_STATUSES

QUEUED, DONE, HOP_REJECTED = "Q", "D", "H"


@dataclass(slots=True)
class CrawlUri:
    url: str
    hop_path: str
    via: str
    seed: str
    attempts: int = 0
    is_prerequisite: bool = False


@dataclass
class WorkQueue:
    key: str
    heap: list = field(default_factory=list)           # (hops, sequence, CrawlUri)
    ready_at: float = 0.0
    in_flight: int = 0
    retired_reason: str | None = None                 # quota annotation once the group is over budget
    fetch_successes: int = 0                          # quota counters (2xx, and bytes of every fetch)
    all_bytes: int = 0
    # Heritrix's FetchStats of the queue, for the frontier report.
    total_scheduled: int = 0
    successes: int = 0
    failures: int = 0
    disregards: int = 0
    responses: int = 0
    non_responses: int = 0
    robots_denials: int = 0
    success_bytes: int = 0
    total_bytes: int = 0
    last_success_time: str = ""
    last_enqueued: str | None = None
    last_peeked: str | None = None

    def __len__(self) -> int:
        return len(self.heap)

    def note(self, status: int, content_size: int, url: str) -> None:
        """Tally one finished URI of this queue: a success (status > 0), a disregard or a failure."""
        self.total_bytes += content_size
        if status > 1:
            self.responses += 1
        else:
            self.non_responses += 1  # a DNS lookup or no response at all
        if status > 0:
            self.successes += 1
            self.success_bytes += content_size
            now = time.time()
            self.last_success_time = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + \
                f".{int(now * 1000) % 1000:03d}Z"
        elif status in DISREGARD_STATUSES:
            self.disregards += 1
        else:
            self.failures += 1


class Frontier:
    def __init__(self, parallel_queues: int = 1):
        self.parallel_queues = parallel_queues
        self.queues: dict[str, WorkQueue] = {}
        self.state: dict[str, str] = {}                   # url -> QUEUED / DONE / HOP_REJECTED
        self.best_path: dict[str, str] = {}               # url -> shortest hop path seen (queued/rejected/done)
        self.pending: dict[str, CrawlUri] = {}            # queued url -> its current entry
        self.hop_rejected: dict[str, CrawlUri] = {}
        self.deferred_outlinks: dict[str, list[tuple[str, str]]] = {}  # fetched url -> hop-rejected outlinks
        self._ready: list[tuple[float, int, str]] = []    # (ready_at, sequence, queue key)
        self._sequence = itertools.count()
        self.queued_count = 0
        self.in_flight = 0

    # -- adding ---------------------------------------------------------------------------------------
    def queue_for(self, key: str) -> WorkQueue:
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = WorkQueue(key)
        return queue

    def schedule(self, key: str, uri: CrawlUri) -> None:
        """Put a URI (already in scope) on its queue."""
        queue = self.queue_for(key)
        was_idle = not queue.heap and queue.in_flight < self.parallel_queues
        heapq.heappush(queue.heap, (len(uri.hop_path), next(self._sequence), uri))
        if uri.url not in self.pending:
            queue.total_scheduled += 1
        queue.last_enqueued = uri.url
        self.state[uri.url] = QUEUED
        self.best_path[uri.url] = uri.hop_path
        self.pending[uri.url] = uri
        self.queued_count += 1
        if was_idle:
            heapq.heappush(self._ready, (queue.ready_at, next(self._sequence), key))

    def supersede(self, key: str, uri: CrawlUri) -> None:
        """A queued URL was found by a shorter path: queue the shorter entry, the old one is skipped."""
        if uri.url in self.pending:
            self.queued_count -= 1
        self.schedule(key, uri)

    def is_shorter(self, url: str, hop_path: str) -> bool:
        best = self.best_path.get(url)
        return best is None or len(hop_path) < len(best)

    def knows(self, url: str) -> bool:
        return url in self.state

    # -- taking ---------------------------------------------------------------------------------------
    def next_ready(self, now: float) -> tuple[WorkQueue, CrawlUri] | float | None:
        """The next URI whose queue may be fetched now; else seconds to wait; None when nothing is queued."""
        while self._ready:
            ready_at, _, key = self._ready[0]
            queue = self.queues[key]
            if not queue.heap or queue.in_flight >= self.parallel_queues:
                heapq.heappop(self._ready)
                continue
            if ready_at > now:
                return ready_at - now
            heapq.heappop(self._ready)
            if queue.ready_at > now:
                heapq.heappush(self._ready, (queue.ready_at, next(self._sequence), key))
                continue
            _, _, uri = heapq.heappop(queue.heap)
            if self.pending.get(uri.url) is not uri:
                # Superseded by a shorter path (the entry was re-pushed): skip the stale one.
                self._requeue_if_more(queue)
                continue
            del self.pending[uri.url]
            self.queued_count -= 1
            queue.last_peeked = uri.url
            queue.in_flight += 1
            self.in_flight += 1
            self._requeue_if_more(queue)
            return queue, uri
        return None

    def _requeue_if_more(self, queue: WorkQueue) -> None:
        if queue.heap and queue.in_flight < self.parallel_queues:
            heapq.heappush(self._ready, (queue.ready_at, next(self._sequence), queue.key))

    def release(self, queue: WorkQueue, ready_at: float) -> None:
        """A fetch of this queue ended; it may be taken again at ``ready_at`` (politeness)."""
        queue.in_flight -= 1
        self.in_flight -= 1
        queue.ready_at = max(queue.ready_at, ready_at)
        self._requeue_if_more(queue)

    def retry_later(self, queue: WorkQueue, uri: CrawlUri, ready_at: float) -> None:
        """Put a URI back after a network error; the queue rests until ``ready_at``."""
        heapq.heappush(queue.heap, (len(uri.hop_path), next(self._sequence), uri))
        self.pending[uri.url] = uri
        self.state[uri.url] = QUEUED
        self.queued_count += 1
        self.release(queue, ready_at)

    def mark_done(self, uri: CrawlUri) -> None:
        self.state[uri.url] = DONE

    def is_empty(self) -> bool:
        return self.queued_count == 0 and self.in_flight == 0

    def drop_all(self, key: str) -> list[CrawlUri]:
        """Take every URI off a queue (quota reached: they are logged -5003 by the caller)."""
        queue = self.queues[key]
        dropped = [uri for _, _, uri in queue.heap if self.pending.get(uri.url) is uri]
        for uri in dropped:
            del self.pending[uri.url]
            self.state[uri.url] = DONE
        self.queued_count -= len(dropped)
        queue.heap.clear()
        return dropped

    # -- reporting ------------------------------------------------------------------------------------
    def queue_depths(self) -> list[int]:
        return [len(q.heap) for q in self.queues.values() if q.heap]

    def all_pending(self) -> list[tuple[str, CrawlUri]]:
        return [(key, uri) for key, queue in self.queues.items() for _, _, uri in sorted(queue.heap)
                if self.pending.get(uri.url) is uri]
