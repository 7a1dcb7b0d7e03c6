"""The browser crawler's Chromium: headless, driven by Playwright, every request through the recording proxy.

One browser per crawl, started at the first page and again after it was stopped; one page at a time. A
page is loaded, scrolled and given up to ``settle_time`` for its network to go quiet, all within
``page_time_limit``; then the links of its DOM (after its scripts ran, frames included) are read. While it
loads, the resident memory of the browser's processes is watched: past ``memory_limit`` the browser is
killed, and started afresh for the next page.

What a browser must not do in a crawl it cannot: downloads are refused (the proxy recorded the bytes; no
file is written outside the WARC), a pop-up or any other new page is closed at once, dialogs are
dismissed, service workers are blocked (their fetches would bypass the page).

It loads pages and reads links; it records nothing (the proxy's exchange handler does) and decides nothing
about retries or scope.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright

    from harvestdef.settings import CrawlerSettings

# The reasons a page could not be loaded, written as crawl.log annotations (docs/browser.md).
TIME_LIMIT = "browserTimeLimit"
MEMORY_LIMIT = "browserMemoryLimit"
CRASHED = "browserCrashed"

SCROLLS = 3                      # scrolls down by two screens each, to start lazy loading
MEMORY_POLL_SECONDS = 0.2
CLOSE_TIMEOUT_SECONDS = 5.0
START_TIMEOUT_SECONDS = 60.0
# Chromium's own requests (updates, metrics, safe browsing) would go through the proxy into the crawl: off.
QUIET_ARGS = ("--disable-background-networking", "--disable-component-update", "--disable-domain-reliability",
              "--disable-sync", "--no-pings", "--no-first-run", "--disable-client-side-phishing-detection",
              "--disable-features=OptimizationHints,MediaRouter,Translate")
# href of links and areas, in the document and every frame, as the browser resolved them
LINKS_SCRIPT = "() => Array.from(document.querySelectorAll('a[href], area[href]'), a => a.href)"


async def _quietly(action: Awaitable[object]) -> None:
    """Close a pop-up, dismiss a dialog: gone meanwhile is as good as done."""
    with contextlib.suppress(Exception):
        await action


@dataclass(frozen=True)
class BrowserOptions:
    """The browser crawler's limits (harvestsuite.crawler.browser.*, docs/browser.md)."""

    executable: str = "/usr/bin/chromium"
    pages_per_minute_per_host: int = 30
    page_time_limit: float = 30.0
    settle_time: float = 3.0
    memory_limit: int = 1_500_000_000

    @classmethod
    def from_settings(cls, crawler: CrawlerSettings) -> BrowserOptions:
        return cls(executable=crawler.browserExecutable,
                   pages_per_minute_per_host=crawler.browserPagesPerMinutePerHost,
                   page_time_limit=float(crawler.browserPageTimeLimit), settle_time=float(crawler.browserSettleTime),
                   memory_limit=crawler.browserMemoryLimit)

    @property
    def page_interval_seconds(self) -> float:
        """The least time between the starts of two pages of one queue (0: no such limit)."""
        return 60.0 / self.pages_per_minute_per_host if self.pages_per_minute_per_host else 0.0


@dataclass(frozen=True)
class PageLoad:
    """How a page's load ended: the links its DOM had, and why it could not be loaded (None: it was)."""

    links: tuple[str, ...] = ()
    failure: str | None = None


def browser_memory(root_pid: int) -> tuple[int, list[int]]:
    """Memory of the Chromium processes descended from ``root_pid`` and their pids, read from /proc: each
    process's proportional set size (its resident pages, those it shares divided among their sharers), summed,
    so the browser's shared code counts once and not in every one of its processes."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after its last ')'
        name_end = stat.rfind(")")
        parent = int(stat[name_end + 2:].split()[1])
        names[int(entry.name)] = stat[stat.find("(") + 1:name_end]
        children.setdefault(parent, []).append(int(entry.name))
    pids, stack = [], list(children.get(root_pid, []))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        if "chrom" in names.get(pid, ""):
            pids.append(pid)
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
    return total, pids


class Chromium:
    """The crawl's browser, through the proxy at ``proxy_port``, sending ``user_agent``."""

    def __init__(self, options: BrowserOptions, proxy_port: int, user_agent: str) -> None:
        self.options = options
        self.proxy_port = proxy_port
        self.user_agent = user_agent
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._page: Page | None = None
        self._opening = False

    async def _ensure(self) -> BrowserContext:
        if self._context is not None:
            return self._context
        if self._playwright is None:
            from playwright.async_api import async_playwright
            self._playwright = await async_playwright().start()
        self._browser = await self._playwright.chromium.launch(
            executable_path=self.options.executable, headless=True,
            # <-loopback>: Chromium sends loopback hosts past any proxy unless told not to.
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--proxy-bypass-list=<-loopback>",
                  *QUIET_ARGS],
            proxy={"server": f"http://127.0.0.1:{self.proxy_port}"})
        self._context = await self._browser.new_context(
            ignore_https_errors=True, accept_downloads=False, service_workers="block", user_agent=self.user_agent)
        self._context.on("page", self._close_other_page)
        return self._context

    async def ready(self) -> BrowserContext | None:
        """The browser, started if it is not running; None if it would not start (the next call tries anew)."""
        try:
            async with asyncio.timeout(START_TIMEOUT_SECONDS):
                return await self._ensure()
        except Exception:  # noqa: BLE001 - a browser that does not start fails the page, whatever the error
            await self.stop()
            return None

    def _close_other_page(self, page: Page) -> None:
        if self._opening:  # the page this crawler opens: announced before new_page returns it
            self._opening = False
            return
        if page is not self._page:
            asyncio.ensure_future(_quietly(page.close()))

    async def load(self, url: str, headers: dict[str, str]) -> PageLoad:
        """Load ``url`` and read its links, within the page time limit and the memory limit; every request of
        the page carries ``headers`` (the proxy's visit token)."""
        context = await self.ready()
        if context is None:
            return PageLoad(failure=CRASHED)
        failed = True
        over_memory = asyncio.Event()
        watch = asyncio.create_task(self._watch_memory(over_memory))
        visit = asyncio.create_task(self._visit(context, url, headers))
        memory = asyncio.create_task(over_memory.wait())
        try:
            done, _ = await asyncio.wait((visit, memory), timeout=self.options.page_time_limit,
                                         return_when=asyncio.FIRST_COMPLETED)
            if visit in done and visit.exception() is None and not over_memory.is_set():
                failed = not await self._blanked()
                return PageLoad(links=visit.result())
            if over_memory.is_set():
                return PageLoad(failure=MEMORY_LIMIT)
            if done:  # the page or the browser failed under it: the next page gets a new browser
                await self.stop()
                return PageLoad(failure=CRASHED)
            return PageLoad(failure=TIME_LIMIT)
        finally:
            for task in (memory, visit, watch):
                task.cancel()
            await asyncio.gather(memory, visit, watch, return_exceptions=True)
            if failed:
                # A page that failed is not used again: closed (the browser stopped if it will not close).
                page, self._page = self._page, None
                if page is not None and not await self._closed(page):
                    await self.stop()

    async def _blanked(self) -> bool:
        """Take the page to about:blank, so that nothing of the last document runs on into the next visit;
        False if it would not go."""
        if self._page is None:
            return True
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
                await self._page.goto("about:blank")
            return True
        except Exception:  # noqa: BLE001 - a page that cannot leave its document is closed, whatever the error
            return False

    async def _visit(self, context: BrowserContext, url: str, headers: dict[str, str]) -> tuple[str, ...]:
        from playwright.async_api import Error as PlaywrightError
        page = self._page
        if page is None or page.is_closed():
            # One page serves visit after visit (a new page costs a renderer's start); the first of a browser
            # is opened here.
            self._opening = True
            page = self._page = await context.new_page()
            page.on("dialog", lambda dialog: asyncio.ensure_future(_quietly(dialog.dismiss())))
        await page.set_extra_http_headers(headers)
        try:
            await page.goto(url, wait_until="load")
        except PlaywrightError as exc:
            # A download (refused) or an error page still leaves what the proxy recorded; only a page that
            # is gone has nothing more to give.
            if page.is_closed() or "Target page, context or browser has been closed" in str(exc):
                raise
            return ()
        for _ in range(SCROLLS):
            with contextlib.suppress(PlaywrightError):
                await page.evaluate("window.scrollBy(0, 2 * window.innerHeight)")
                await asyncio.sleep(0.05)
        with contextlib.suppress(PlaywrightError):
            await page.wait_for_load_state("networkidle", timeout=self.options.settle_time * 1000)
        links: list[str] = []
        for frame in page.frames:
            with contextlib.suppress(PlaywrightError):
                links.extend(await frame.evaluate(LINKS_SCRIPT))
        return tuple(dict.fromkeys(link for link in links if isinstance(link, str)))

    async def _closed(self, page: Page) -> bool:
        """Close ``page``; False if it would not close (a renderer stuck in a script, a browser gone)."""
        if self._browser is None:
            return True
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
                await page.close(run_before_unload=False)
            return True
        except Exception:  # noqa: BLE001 - a browser that cannot close a page is stopped, whatever the error
            return False

    async def _watch_memory(self, over: asyncio.Event) -> None:
        while True:
            await asyncio.sleep(MEMORY_POLL_SECONDS)
            used, pids = browser_memory(os.getpid())
            if used > self.options.memory_limit:
                over.set()
                self._kill(pids)
                self._browser = self._context = self._page = None  # dead: the next page starts another
                return

    @staticmethod
    def _kill(pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    async def stop(self) -> None:
        """Stop the browser (started again by the next page); Playwright's driver stays."""
        browser, self._browser, self._context, self._page = self._browser, None, None, None
        if browser is None:
            return
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
                await browser.close()
        except Exception:  # noqa: BLE001 - a browser that does not close is killed
            self._kill(browser_memory(os.getpid())[1])

    async def close(self) -> None:
        await self.stop()
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None
