"""The scope asked again as a URI comes to be fetched: Heritrix's Preselector with recheckScope, which
NetarchiveSuite's templates turn on.

A URI is scoped when it is found; an operator's reject rule added later (a live change of the running
crawl) must stop the URIs already queued too. So the first step of the chain asks the operators' reject
rules (harvester/engine/frontier/scope.py, ``rejects_now``) about each URI taken from the frontier: one they reject
ends -5000 (Heritrix's OUT_OF_SCOPE, "out of scope upon reexamination") with a crawl.log line and no fetch.
The template's own rules decided already when the URI was queued and are not asked again. Prerequisites
(DNS, robots.txt) are the fetches of other URIs and pass.
"""

from __future__ import annotations

from harvester.engine.chain import OUT_OF_SCOPE, Curi, Outcome
from harvester.engine.frontier.scope import Scope


class Preselector:
    """The chain's first step; reads ``scope``'s reject rules afresh for every URI."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    async def process(self, curi: Curi) -> Outcome | None:
        if curi.uri.is_prerequisite or not self.scope.reject_rules:
            return None
        if self.scope.rejects_now(curi.uri.url):
            return curi.fail(OUT_OF_SCOPE)
        return None
