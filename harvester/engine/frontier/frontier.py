"""The frontier: per-queue work lists, politeness, and shortest-path hop counts.

A queue is a host, or a registered domain when the configuration's queue-assignment policy says so
(NetarchiveSuite's DomainnameQueueAssignmentPolicy); quotas are counted per queue, which is the group.
Within a queue, URIs leave shortest hop path first. At most ``parallel_queues`` URIs of a queue are in
flight (the value when the queue was made: a change while the crawl runs applies to new queues), and a
queue rests ``politeness delay`` after each fetch.

A queue whose group is over its quota is retired, as Heritrix's WorkQueueFrontier retires it: its URIs
wait in it, are not taken and do not count as queued, so the crawl can end with them there; a queue
brought back (a budget raised) counts them again and offers them.

Memory is bounded as in Heritrix's BdbFrontier: only the first ``head_size`` URIs of each queue are in
memory; the rest of the queue, the already-seen set with each URL's state and shortest path, and the
deferred outlinks live in a UrlStore (SQLite, harvester/engine/frontier/urlstore.py) behind a bounded cache.
A queue's head is refilled from disk shortest hop path first; a URI queued later with a shorter path than
the head's waits until the head is fetched (the order within a queue is a preference, the hop counts are
exact).

The hop-count rule: a URL's hop path is its shortest discovery path, whatever order pages are fetched in
(wpull keeps the first path found, so a page fetched late stores its links too deep and a hop limit loses
them):
- found again by a shorter path while queued: its entry is replaced (in memory the longer one is skipped
  when popped; on disk its row is rewritten);
- rejected by the hop limit, then found by a shorter path: it is scoped again and may be queued;
- found by a shorter path after it was fetched: its outlinks that the hop limit rejected are offered again
  with the shorter path (they are remembered for exactly this reason).
Queued URIs an operator deletes (``delete_matching``) leave their queues, in memory and on disk, and are
taken as included, so they are never fetched nor queued again.
The frontier does no network I/O; the crawl threads (harvester/engine/crawlthreads.py) drive it,
checkpoints copy its store.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harvester.engine.frontier.urlstore import UrlStore
from harvester.engine.reporting.reports import QueueReport
from harvester.engine.reporting.stats import DISREGARD_STATUSES

HEAD_SIZE = 8  # URIs of a queue kept in memory; the rest wait on disk

QUEUED, DONE, HOP_REJECTED, OUT_OF_SCOPE = "Q", "D", "H", "O"


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
    parallel: int = 1                                 # URIs of this queue in flight at once at most
    retired_reason: str | None = None                 # quota annotation once the group is over budget
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

    on_disk: int = 0                                  # further URIs of this queue in the store

    def __len__(self) -> int:
        return len(self.heap) + self.on_disk

    @property
    def size(self) -> int:
        return len(self.heap) + self.on_disk

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

    def report_category(self, now: float) -> str:
        """The frontier report's category of this queue (WorkQueueFrontier's): RETIRED, IN-PROCESS, SNOOZED,
        READY, or "" when exhausted."""
        if self.retired_reason:
            return "RETIRED"
        if self.in_flight:
            return "IN-PROCESS"
        if self.size and self.ready_at > now:
            return "SNOOZED"
        return "READY" if self.size else ""

    def report(self, now: float) -> QueueReport:
        """This queue's figures for the frontier report (WorkQueue.reportTo)."""
        category = self.report_category(now)
        return QueueReport(
            key=self.key, items=self.size, category=category, last_enqueued=self.last_enqueued,
            last_peeked=self.last_peeked,
            wakes_in_ms=int((self.ready_at - now) * 1000) if category == "SNOOZED" else 0,
            total_scheduled=self.total_scheduled, fetch_successes=self.successes, fetch_failures=self.failures,
            fetch_disregards=self.disregards, fetch_responses=self.responses, robots_denials=self.robots_denials,
            success_bytes=self.success_bytes, total_bytes=self.total_bytes, fetch_non_responses=self.non_responses,
            last_success_time=self.last_success_time)


class _StateView:
    """``frontier.state``, read only: a URL's state (QUEUED, DONE, HOP_REJECTED, OUT_OF_SCOPE) from the store."""

    def __init__(self, store: UrlStore) -> None:
        self._store = store

    def get(self, url: str, default: str | None = None) -> str | None:
        entry = self._store.lookup(url)
        return entry[0] if entry is not None else default

    def __contains__(self, url: str) -> bool:
        return self._store.lookup(url) is not None

    def __len__(self) -> int:
        return self._store.seen_count


class Frontier:
    """The queues and every URL's state; the only writer of both, and of each queue's figures."""

    def __init__(self, store: UrlStore, parallel_queues: int = 1, head_size: int = HEAD_SIZE):
        self.store = store
        self.parallel_queues = parallel_queues
        self.head_size = head_size
        self.queues: dict[str, WorkQueue] = {}
        self.state = _StateView(store)
        self.pending: dict[str, CrawlUri] = {}            # url -> its entry, for URIs in a queue's head
        self._ready: list[tuple[float, int, str]] = []    # (ready_at, sequence, queue key)
        self._sequence = itertools.count(store.max_sequence() + 1)
        self.queued_count = 0
        self.in_flight = 0

    # -- adding ---------------------------------------------------------------------------------------
    def queue_for(self, key: str) -> WorkQueue:
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = WorkQueue(key, parallel=self.parallel_queues)
        return queue

    def schedule(self, key: str, uri: CrawlUri) -> None:
        """Put a URI (already in scope) on its queue: in its head if there is room, else on disk."""
        queue = self.queue_for(key)
        was_idle = not queue.size and queue.in_flight < queue.parallel and not queue.retired_reason
        sequence = next(self._sequence)
        queue.total_scheduled += 1
        queue.last_enqueued = uri.url
        if not queue.on_disk and len(queue.heap) < self.head_size:
            heapq.heappush(queue.heap, (len(uri.hop_path), sequence, uri))
            self.pending[uri.url] = uri
        else:
            self.store.push_pending((sequence, key, len(uri.hop_path), uri.url, uri.hop_path, uri.via, uri.seed,
                                     uri.attempts))
            queue.on_disk += 1
        self.store.note(uri.url, QUEUED, uri.hop_path)
        if not queue.retired_reason:
            self.queued_count += 1
        if was_idle:
            heapq.heappush(self._ready, (queue.ready_at, next(self._sequence), key))

    def supersede(self, key: str, uri: CrawlUri) -> None:
        """A queued URL was found by a shorter path: its entry takes the shorter path."""
        if uri.url in self.pending:
            # In the head: push the shorter entry; the longer one is skipped when popped.
            queue = self.queue_for(key)
            heapq.heappush(queue.heap, (len(uri.hop_path), next(self._sequence), uri))
            self.pending[uri.url] = uri
            self.store.note(uri.url, QUEUED, uri.hop_path)
        elif self.store.update_pending(uri.url, len(uri.hop_path), uri.hop_path, uri.via):
            self.store.note(uri.url, QUEUED, uri.hop_path)
        else:
            self.schedule(key, uri)

    def seen(self, url: str) -> tuple[str, str] | None:
        """(state, best hop path) of a URL met before, else None."""
        return self.store.lookup(url)

    def is_done(self, url: str) -> bool:
        return self.state.get(url) == DONE

    def is_included(self, url: str) -> bool:
        """Queued or done: Heritrix's alreadyIncluded (a URL met only out of scope or past the hop limit is not)."""
        return self.state.get(url) in (QUEUED, DONE)

    def consider_included(self, url: str, hop_path: str) -> None:
        """Take ``url`` as done without fetching it (Heritrix's considerIncluded): it is not scheduled again
        unless forced."""
        self.store.note(url, DONE, hop_path)

    def note_shorter_path(self, url: str, hop_path: str) -> None:
        """A URL (fetched already) was found by a shorter path."""
        self.store.note(url, best_path=hop_path)

    def note_hop_rejected(self, url: str, hop_path: str, via: str, hop: str) -> None:
        """The hop limit rejected ``url`` found by ``hop_path``: remember it as an outlink of ``via``, which
        comes back if ``via`` is found by a shorter path."""
        self.store.note(url, HOP_REJECTED, hop_path)
        self.store.defer(via, url, hop)

    def note_out_of_scope(self, url: str, hop_path: str) -> None:
        self.store.note(url, OUT_OF_SCOPE, hop_path)

    def take_deferred(self, via: str) -> list[tuple[str, str]]:
        return self.store.take_deferred(via)

    # -- taking ---------------------------------------------------------------------------------------
    def next_ready(self, now: float) -> tuple[WorkQueue, CrawlUri] | float | None:
        """The next URI whose queue may be fetched now; else seconds to wait; None when nothing is queued."""
        while self._ready:
            ready_at, _, key = self._ready[0]
            queue = self.queues[key]
            if not queue.size or queue.in_flight >= queue.parallel or queue.retired_reason:
                heapq.heappop(self._ready)
                continue
            if ready_at > now:
                return ready_at - now
            heapq.heappop(self._ready)
            if queue.ready_at > now:
                heapq.heappush(self._ready, (queue.ready_at, next(self._sequence), key))
                continue
            if not queue.heap:
                self._load_head(queue)
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

    def _load_head(self, queue: WorkQueue) -> None:
        rows = self.store.take_pending(queue.key, self.head_size)
        queue.on_disk -= len(rows)
        for sequence, _, hops, url, hop_path, via, seed, attempts in rows:
            uri = CrawlUri(url, hop_path, via, seed, attempts)
            heapq.heappush(queue.heap, (hops, sequence, uri))
            self.pending[url] = uri

    def _requeue_if_more(self, queue: WorkQueue) -> None:
        if queue.size and queue.in_flight < queue.parallel and not queue.retired_reason:
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
        self.store.note(uri.url, QUEUED)
        if not queue.retired_reason:
            self.queued_count += 1
        self.release(queue, ready_at)

    def mark_done(self, uri: CrawlUri) -> None:
        self.store.note(uri.url, DONE)

    # -- each queue's figures -------------------------------------------------------------------------
    def note_outcome(self, key: str, status: int, content_size: int, url: str) -> None:
        """Tally a finished URI on its queue's figures (none if no such queue exists)."""
        queue = self.queues.get(key)
        if queue is not None:
            queue.note(status, content_size, url)

    def note_robots_denial(self, key: str) -> None:
        self.queues[key].robots_denials += 1

    def retire(self, key: str, reason: str | None) -> None:
        """Retire a queue with the quota's annotation (its URIs wait and stop counting as queued), or with
        None bring it back (they count and are offered again)."""
        queue = self.queue_for(key)
        was_retired = queue.retired_reason is not None
        queue.retired_reason = reason
        if reason is not None and not was_retired:
            self.queued_count -= self._waiting(queue)
        elif reason is None and was_retired:
            self.queued_count += self._waiting(queue)
            self._requeue_if_more(queue)

    def _waiting(self, queue: WorkQueue) -> int:
        """The URIs queued in ``queue`` (its head may hold superseded entries too, which do not count)."""
        return queue.on_disk + sum(1 for _, _, uri in queue.heap if self.pending.get(uri.url) is uri)

    def retired_reason(self, key: str) -> str | None:
        queue = self.queues.get(key)
        return queue.retired_reason if queue is not None else None

    def delete_matching(self, matches: Callable[[str], bool]) -> int:
        """Delete every queued URI (in a head, on disk, in a retired queue) whose URL ``matches``; they are
        taken as included and never fetched. Returns how many were deleted. URIs in flight are not queued."""
        deleted: list[str] = []
        for queue in self.queues.values():
            kept = []
            for entry in queue.heap:
                uri = entry[2]
                if self.pending.get(uri.url) is uri and matches(uri.url):
                    del self.pending[uri.url]
                    deleted.append(uri.url)
                    if not queue.retired_reason:
                        self.queued_count -= 1
                elif self.pending.get(uri.url) is uri:
                    kept.append(entry)
            heapq.heapify(kept)
            queue.heap = kept
        for key, url in self.store.delete_pending(matches):
            queue = self.queues[key]
            queue.on_disk -= 1
            if not queue.retired_reason:
                self.queued_count -= 1
            deleted.append(url)
        for url in deleted:
            self.store.note(url, DONE)
        return len(deleted)

    @property
    def seen_count(self) -> int:
        """URLs met so far, in whatever state."""
        return self.store.seen_count

    def is_empty(self) -> bool:
        return self.queued_count == 0 and self.in_flight == 0

    # -- checkpoints ----------------------------------------------------------------------------------
    def spill_heads(self) -> None:
        """Move every queue's head to the store, so that a copy of the store holds the whole frontier
        (called with no fetch in flight, while a checkpoint is taken)."""
        for queue in self.queues.values():
            for hops, sequence, uri in queue.heap:
                if self.pending.get(uri.url) is uri:
                    self.store.push_pending((sequence, queue.key, hops, uri.url, uri.hop_path, uri.via, uri.seed,
                                             uri.attempts))
                    queue.on_disk += 1
            queue.heap.clear()
        self.pending.clear()
        self.store.flush()

    def restore_queues(self) -> None:
        """Queues and counts of a store copied from a checkpoint."""
        for key, count in self.store.pending_counts().items():
            queue = self.queue_for(key)
            queue.on_disk = count
            self.queued_count += count
            heapq.heappush(self._ready, (queue.ready_at, next(self._sequence), key))

    # -- reporting ------------------------------------------------------------------------------------
    def queue_depths(self) -> list[int]:
        return [q.size for q in self.queues.values() if q.size]

    def queue_counts(self, now: float) -> QueueCounts:
        """How many queues are in each condition, for the REST status's frontier figures. Safe to call from
        another thread than the crawl's: the loop may add queues meanwhile, so the values are copied first
        (list() of a dict view is atomic under the GIL)."""
        queues = list(self.queues.values())
        return QueueCounts(
            total=len(queues),
            depths=[q.size for q in queues if q.size],
            retired=sum(1 for q in queues if q.retired_reason),
            active=sum(1 for q in queues if (q.size and not q.retired_reason) or q.in_flight),
            in_process=sum(1 for q in queues if q.in_flight),
            snoozed=sum(1 for q in queues
                        if q.size and not q.in_flight and not q.retired_reason and q.ready_at > now))


@dataclass(frozen=True)
class QueueCounts:
    """Queues by condition at one moment; ``depths`` are the sizes of the non-empty ones."""

    total: int
    depths: list[int]
    retired: int
    active: int          # with URIs waiting or one in flight
    in_process: int      # with a URI in flight
    snoozed: int         # waiting out a politeness delay
