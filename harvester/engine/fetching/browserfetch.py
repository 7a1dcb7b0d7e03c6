"""The browser crawler's fetch step: in place of step.py's HTTP fetch, a URI taken from the frontier is
loaded as a page in Chromium (browser.py) through the recording proxy (recordingproxy.py). Everything before
it in the chain (reject rules, DNS, quotas, robots.txt, login forms) and everything after a capture
(records, deduplication, crawl.log, statistics, quotas, link discovery through scope, traps and hop limits)
is the engine's own: this step only decides what the browser's requests are and records them through the
disposition.

A page's visit (``PageVisit``) is the exchange handler of the proxy while the page loads. Each request is
sent on by the crawl's fetcher with the browser's own headers, plus what the template's cookie store and
credential store add (a login form's session cookie, posted by the chain's login prerequisite, joins the
browser's cookies; a 401 of a server the credentials cover is answered). Its requests:
- the page's own URL (the first GET of it) is the page's document: fetched, relayed, and recorded when the
  visit ends, with the page's hop path and via, and annotated with the reason if the page did not finish;
- a URL its document redirected to (hop ``R``) and every other request (hop ``E``, an embed: scripts,
  styles, images, fetch()/XHR calls, frames) are recorded as they come, via the page, without robots.txt or
  scope (a browser needs a page's requisites as the page names them). A URL the crawl already captured is
  fetched for the page but not recorded again: a URL has one capture per crawl, as in Heritrix.
After the load, the links of the page's DOM are offered to discovery with hop ``L``. A request to a host
the destination policy refuses (harvestdef/destinations.py: a script's POST to a loopback port, an image on
a private address) is answered nothing and never sent on; its crawl.log line is -5005 with the reason.

Outcomes: a document that failed on the network is retried as step.py retries (maxRetries, backoff);
a page the browser could not load (time limit, memory limit, crash) is tried once more at once, the
browser restarted if it was stopped, and then ends: with its document's status and the reason annotated if
the document came, else with BROWSER_FAILED (-8000) and the reason. The queue then rests for the template's
politeness, and at least ``60 / pagesPerMinutePerHost`` seconds after the page's document was asked for
(the page's start, when it never was).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from harvester.engine.chain import DOMAIN_LOOKUP_FAILED, Curi, Outcome
from harvester.engine.config import CrawlConfig
from harvester.engine.disposition import Disposition
from harvester.engine.fetching.browser import BrowserOptions, Chromium
from harvester.engine.fetching.fetch import DESTINATION_REFUSED, Fetcher, FetchResult
from harvester.engine.fetching.prerequisites import host_address
from harvester.engine.fetching.recordingproxy import VISIT_HEADER, ProxyAnswer, ProxyRequest, RecordingProxy
from harvester.engine.fetching.servercache import ServerCache
from harvester.engine.fetching.step import MAX_BACKOFF_SECONDS, Politeness
from harvester.engine.frontier.discovery import LinkDiscovery
from harvester.engine.frontier.frontier import DONE, CrawlUri, Frontier
from harvester.engine.frontier.scope import canonical_url

# crawl.log status of a page the browser could not load (not one of Heritrix's codes; docs/browser.md)
BROWSER_FAILED = -8000
BROWSER_RETRIES = 1
# the reason of a page whose load ended without its document ever being asked for (an error page of the browser)
NO_DOCUMENT = "browserNoDocument"


class BrowserPages:
    """The crawl's browser and recording proxy, started at the first page, closed with the crawl."""

    def __init__(self, options: BrowserOptions, user_agent: str) -> None:
        self.options = options
        self.user_agent = user_agent
        self.proxy = RecordingProxy()
        self.chromium: Chromium | None = None
        # one page at a time: the proxy's requests belong to the page loading
        self.lock = asyncio.Lock()

    async def browser(self) -> Chromium:
        if self.chromium is None:
            port = await self.proxy.start()
            self.chromium = Chromium(self.options, port, self.user_agent)
        return self.chromium

    async def close(self) -> None:
        if self.chromium is not None:
            await self.chromium.close()
        await self.proxy.close()


class PageVisit:
    """One page's load: the proxy's exchange handler while it lasts."""

    def __init__(self, step: BrowserFetchProcessor, curi: Curi) -> None:
        self.step = step
        self.curi = curi
        self.document: FetchResult | None = None  # the page's own response, recorded when the visit ends
        self.document_failure: int | None = None  # its negative status, when the network failed it
        self.redirects: set[str] = set()
        self.document_asked_at: float | None = None  # monotonic time the document was asked of its host
        self.in_flight: set[asyncio.Task] = set()
        self.has_ended = False

    async def exchange(self, request: ProxyRequest) -> ProxyAnswer:
        if self.has_ended:
            return ProxyAnswer(None)
        task = asyncio.current_task()
        assert task is not None
        self.in_flight.add(task)
        try:
            return await self._exchange(request)
        finally:
            self.in_flight.discard(task)

    async def _exchange(self, request: ProxyRequest) -> ProxyAnswer:
        step, page = self.step, self.curi.uri
        url = canonical_url(request.url) or request.url
        hop = "R" if url in self.redirects else "E"
        is_document = (self.document is None and self.document_failure is None and request.method == "GET"
                       and url == page.url)
        uri = page if is_document else CrawlUri(url, page.hop_path + hop, page.url, page.seed)
        if is_document:
            self.document_asked_at = time.monotonic()
        address = step.address(uri, self.curi.thread)
        refusal = step.servers.refusal(urlsplit(url).hostname or "")
        if refusal is not None:
            # a page's request to a refused destination (a script's POST to loopback...) gets no answer, and
            # its crawl.log line says why; the document's own refusal ends the page as the chain would
            if is_document:
                self.document_failure = DESTINATION_REFUSED
            elif not step.frontier.is_done(url):
                step.disposition.record_failure(uri, DESTINATION_REFUSED, self.curi.thread, [refusal.annotation])
            return ProxyAnswer(None)
        if address is None:
            if is_document:
                self.document_failure = DOMAIN_LOOKUP_FAILED
            return ProxyAnswer(None)
        result = await step.fetch(request, address)
        if self.has_ended:  # the page was given up while this was fetched: nothing to record
            result.close()
            return ProxyAnswer(None)
        if result.status < 0:
            if is_document:
                self.document_failure = result.status
            result.close()
            return ProxyAnswer(None)
        if is_document or hop == "R":
            location = result.header("location") if 300 <= result.status < 400 else ""
            target = canonical_url(location, url) if location else None
            if target:
                self.redirects.add(target)
        if is_document:
            self.document = result
            return ProxyAnswer(result, proxy_closes=False)
        if not step.frontier.is_done(url):
            step.disposition.record_capture(step.queue_key(url), uri, result, self.curi.thread, extract=False)
        return ProxyAnswer(result)

    async def end(self) -> None:
        """No more exchanges: those in flight are given up (the page is closed, no one waits for them)."""
        self.has_ended = True
        for task in list(self.in_flight):
            task.cancel()
        await asyncio.gather(*self.in_flight, return_exceptions=True)


class BrowserFetchProcessor:
    """The chain's last step for the browser crawler (see the module's docstring)."""

    def __init__(self, config: CrawlConfig, pages: BrowserPages, fetcher: Fetcher, frontier: Frontier,
                 servers: ServerCache, disposition: Disposition, discovery: LinkDiscovery,
                 queue_key: Callable[[str], str], is_stopping: Callable[[], bool],
                 politeness: Callable[[], Politeness]) -> None:
        self.config = config
        self.pages = pages
        self.fetcher = fetcher
        self.frontier = frontier
        self.servers = servers
        self.disposition = disposition
        self.discovery = discovery
        self.queue_key = queue_key
        self.is_stopping = is_stopping
        self.politeness = politeness

    def address(self, uri: CrawlUri, thread: int) -> str | None:
        """The address of ``uri``'s host, looked up (and its ``dns:`` recorded) the first time."""
        return host_address(self.servers, self.disposition, urlsplit(uri.url).hostname or "",
                            self.queue_key(uri.url), uri, thread)

    async def fetch(self, request: ProxyRequest, address: str) -> FetchResult:
        """The browser's request sent on by the crawl's fetcher with the browser's own headers, under
        FetchHTTP's timeouts and length limit, with the job's cookie store and credentials (the template's
        HTTP credentials answer a 401; a login form's session cookie goes with the browser's cookies)."""
        return await self.fetcher.fetch(request.url, "", False, address, request.method, request.body,
                                        headers=list(request.headers))

    async def process(self, curi: Curi) -> Outcome:
        uri = curi.uri
        if self.frontier.state.get(uri.url) == DONE:
            # captured meanwhile as another page's embed: its one capture is that one
            return Outcome(ready_at=time.monotonic())
        pages = self.pages
        async with pages.lock:
            browser = await pages.browser()
            await browser.ready()  # a browser's start is not part of the page's time
            started = time.monotonic()
            visit = PageVisit(self, curi)
            token = secrets.token_hex(16)
            pages.proxy.handlers[token] = visit.exchange
            try:
                load = await browser.load(uri.url, {VISIT_HEADER: token})
            finally:
                del pages.proxy.handlers[token]
                await visit.end()
        return self._loaded(curi, visit, load.links, load.failure, visit.document_asked_at or started)

    def _loaded(self, curi: Curi, visit: PageVisit, links: tuple[str, ...], failure: str | None,
                started: float) -> Outcome:
        config, uri, document = self.config, curi.uri, visit.document
        if failure is not None and uri.attempts < BROWSER_RETRIES and not self.is_stopping():
            if document is not None:
                document.close()
            uri.attempts += 1
            self.frontier.retry_later(curi.queue, uri, time.monotonic())
            return Outcome(ready_at=None)
        if document is None:
            uri.attempts += 1
            status = BROWSER_FAILED
            if failure is None and visit.document_failure is not None:
                status = visit.document_failure  # the network failed the document: retried as step.py does
                if (status != DESTINATION_REFUSED and uri.attempts <= config.max_retries
                        and not self.is_stopping()):
                    backoff = min(MAX_BACKOFF_SECONDS, config.retry_delay_seconds * (2 ** (uri.attempts - 1)))
                    self.frontier.retry_later(curi.queue, uri, time.monotonic() + backoff)
                    return Outcome(ready_at=None)
            annotations = [f"{uri.attempts}t", failure or NO_DOCUMENT]
            if status != BROWSER_FAILED:
                annotations.pop()
            self.disposition.record_failure(uri, status, curi.thread, annotations)
            return Outcome(ready_at=self._ready_at(started, 0))
        with document:
            if failure is not None:
                document.annotations.append(failure)
            self.disposition.record_capture(curi.queue.key, uri, document, curi.thread, extract=False)
            duration_ms = document.duration_ms
        if not self.is_stopping():
            for link in links:
                self.discovery.discover(link, "L", uri, uri.url)
        return Outcome(ready_at=self._ready_at(started, duration_ms))

    def _ready_at(self, started: float, duration_ms: float) -> float:
        delay = self.politeness().delay_ms(duration_ms, None) / 1000
        return max(time.monotonic() + delay, started + self.pages.options.page_interval_seconds)
