"""Link discovery: what becomes of a URL found in a page (an outlink, an embed, a redirect's Location) or
given as a seed. The rule is Heritrix's shortest hop path: a URL is scheduled when the scope accepts it
with the hop path it was found by; found again by a shorter path, a queued URL is re-queued with it, a URL
the hop limit rejected gets a new chance, and a fetched page's outlinks that the hop limit had rejected are
offered again. So the order pages are fetched in (one fetched late, after an error) never leaves a URL at a
longer path than its shortest, with the hop limit losing what lies beyond it: wpull's depth bug, as
mnbot's database documentation describes it.

It asks the scope and the queue assignment, and records into the frontier; it does not fetch, parse, log
or count anything but the discovered total (through ``on_discovered``).
"""

from __future__ import annotations

from collections.abc import Callable

from harvester.engine.frontier.frontier import DONE, QUEUED, CrawlUri, Frontier
from harvester.engine.frontier.queuepolicy import QueueAssignment
from harvester.engine.frontier.scope import Scope, canonical_url


class LinkDiscovery:
    """Offers found URLs to scope and frontier. ``on_discovered`` is called once for each URL met for the
    first time and scheduled; ``on_scheduled`` whenever a URL was (re)queued, to wake idle workers.

    ``scope`` is read afresh for every URL offered, so a Scope put in its place (on the crawl's loop) decides
    from the next URL on."""

    def __init__(self, frontier: Frontier, scope: Scope, queue_assignment: QueueAssignment,
                 on_discovered: Callable[[], None], on_scheduled: Callable[[], None]) -> None:
        self.frontier = frontier
        self.scope = scope
        self.queue_assignment = queue_assignment
        self.on_discovered = on_discovered
        self.on_scheduled = on_scheduled

    def seed(self, url: str) -> None:
        """Schedule a seed (already canonical): hop path empty, its own seed."""
        self.on_discovered()
        self.frontier.schedule(self.queue_assignment.key(url), CrawlUri(url, "", "", url))

    def add_seed(self, url: str) -> bool:
        """A seed added while the crawl runs (Heritrix's addedSeed, canonical already): the scope takes it as
        a seed (its SURT prefix, where a rule has seedsAsSurtPrefixes) and it is scheduled, unscoped as seeds
        are, unless already included. True if it was scheduled."""
        self.scope.add_seed(url)
        return self.schedule(url, "", "", url, apply_scope=False, force=False)

    def schedule(self, url: str, hop_path: str, via: str, seed: str, *, apply_scope: bool, force: bool) -> bool:
        """Schedule a URL given from outside the crawl (Heritrix's Frontier.schedule of an imported URI):
        through the scope only when ``apply_scope``; not if already included, unless ``force`` and it is done
        (a queued URL stays one entry, as Heritrix's queues hold a URI once). True if it was scheduled."""
        frontier = self.frontier
        state = frontier.state.get(url)
        if state == QUEUED or (state == DONE and not force):
            return False
        if apply_scope and not self.scope.decide(url, hop_path)[0]:
            return False
        if state is None:
            self.on_discovered()
        frontier.schedule(self.queue_assignment.key(url), CrawlUri(url, hop_path, via, seed))
        self.on_scheduled()
        return True

    def include(self, url: str, hop_path: str, *, apply_scope: bool) -> bool:
        """Take a URL as already included without fetching it (Heritrix's considerIncluded), through the scope
        only when ``apply_scope``. True if it was not included before."""
        frontier = self.frontier
        state = frontier.state.get(url)
        if frontier.is_included(url) or (apply_scope and not self.scope.decide(url, hop_path)[0]):
            return False
        if state is None:
            self.on_discovered()
        frontier.consider_included(url, hop_path)
        return True

    def discover(self, raw: str, hop: str, parent: CrawlUri, base: str) -> None:
        """A link as written in ``parent`` (relative to ``base``), found by the hop letter ``hop``."""
        url = canonical_url(raw, base)
        if url is not None:
            self.offer(url, parent.hop_path + hop, parent.url, parent.seed, hop)

    def offer(self, url: str, hop_path: str, via: str, seed: str, hop: str = "L") -> None:
        """Offer a URL found by ``via``: schedule it, or improve its hop path (the shortest-path rule)."""
        frontier = self.frontier
        # one look-up for the state and the best path: most links of a page name URLs met before
        seen = frontier.seen(url)
        state = seen[0] if seen is not None else None
        if seen is not None and len(hop_path) >= len(seen[1]):
            return
        if state == DONE:
            frontier.note_shorter_path(url, hop_path)
            # A fetched page found closer to a seed: outlinks it lost to the hop limit may now be in scope.
            for child, child_hop in frontier.take_deferred(url):
                self.offer(child, hop_path + child_hop, url, seed, child_hop)
            return
        accepted, by_hops = self.scope.decide(url, hop_path)
        if accepted:
            uri = CrawlUri(url, hop_path, via, seed)
            key = self.queue_assignment.key(url)
            if state == QUEUED:
                frontier.supersede(key, uri)
            else:
                if state is None:
                    self.on_discovered()
                frontier.schedule(key, uri)
            self.on_scheduled()
        elif by_hops:
            frontier.note_hop_rejected(url, hop_path, via, hop)
        elif state is None:
            frontier.note_out_of_scope(url, hop_path)
