"""Pictures of replayed pages: headless Chromium (Debian's package) driven by Playwright for Python.

``Camera.unavailable`` says in words why no picture can be taken here (no Chromium at the configured path,
no Playwright), before anything is started. Used as a context manager, the camera starts Playwright and one
Chromium, and stops both on leaving, whatever happened. ``picture`` loads one URL in a fresh browser context
with a 1280 x 800 viewport and a device scale factor of ``width / 1280``, so Chromium itself renders the
replayed page ``width`` pixels wide: no image library is needed, and the PNG is small.

The browser loads from the replay service only. Every request of a context, the replayed page's scripts,
images, frames and navigations included, goes through a route that lets through only what is for the
origin of the URL being pictured (the replay service's) and aborts everything else: an archived page whose
script names ``http://127.0.0.1:PORT/``, an address inside the network or the live web reaches nothing, and
the pictures never mix live content into an archived page. Service workers are blocked, so none can fetch
past the route; Chromium's own background requests are switched off. The number of requests aborted, and
the first of them, are logged.

A seed's page can navigate away by itself (a script setting ``location``, a meta refresh) while it is
pictured, and the picture would show another page. So the replayed page's navigations are watched: a
navigation of the page's frame after its first (a server's redirect is part of that first one, not another)
means it went away. Then the picture is taken again of the seed's own capture, loaded without pywb's frame
and with scripts off, which nothing can move; the Picture's note says the page navigated away, and where.

A page that fails to load in time, or that the replay service answers with a server error, is an outcome
(``Picture.note``), not an exception: the job goes on with its next seed. A browser that cannot start or
dies midway is a CameraError: the pass stops, and the next one starts a new browser.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from harvestdef.errors import HarvestSuiteError

log = logging.getLogger("harvestsuite.qa")

VIEWPORT_WIDTH, VIEWPORT_HEIGHT = 1280, 800
# pywb's framed replay page holds the replayed page in this frame (its templates/frame_insert.html).
REPLAY_FRAME = "#replay_iframe"
# pywb's modifier of a capture replayed without its frame: <replay>/<collection>/<timestamp>mp_/<url>
FRAMELESS = "mp_/"


class CameraError(HarvestSuiteError):
    """Chromium cannot be started, or stopped answering; the message says which and why."""


@dataclass(frozen=True)
class Picture:
    """A page's picture as PNG bytes, or the note why there is none; with a picture, a note says what a reader
    of it must know (the page navigated away, and the seed's own capture is what it shows)."""

    png: bytes | None
    note: str | None = None


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower case: what the route compares."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def original_url(replay_url: str) -> str:
    """The archived page's URL in a replay URL (what follows pywb's ``<timestamp>mp_/``), or the replay URL."""
    at = replay_url.find(FRAMELESS)
    return replay_url[at + len(FRAMELESS):] if at != -1 else replay_url


@dataclass
class _Watch:
    """What one context's route and navigation listener saw: requests aborted, and the page's navigations."""

    origin: str
    blocked: list[str] = field(default_factory=list)
    frame_navigations: list[str] = field(default_factory=list)  # of the replayed page's frame, in order
    top_navigations: list[str] = field(default_factory=list)

    def route(self, route: Any) -> None:
        url = route.request.url
        if origin_of(url) == self.origin:
            route.continue_()
            return
        self.blocked.append(url)
        route.abort("blockedbyclient")

    def request(self, request: Any) -> None:
        """A navigation that is not a redirect of one before it: the main frame's, or the replayed page's."""
        if not request.is_navigation_request() or request.redirected_from is not None:
            return
        try:
            frame = request.frame
        except Exception:  # noqa: BLE001 - a service worker's request has no frame; workers are blocked anyway
            return
        if frame.parent_frame is None:
            self.top_navigations.append(request.url)
        elif FRAMELESS in request.url:
            self.frame_navigations.append(request.url)

    def went_to(self) -> str | None:
        """Where the page navigated after its first load, or None when it stayed."""
        for navigations in (self.frame_navigations, self.top_navigations):
            if len(navigations) > 1:
                return navigations[1]
        return None

    def log_blocked(self, url: str) -> None:
        if self.blocked:
            log.info("qa: %d requests of the replay of %s to other addresses than the replay service %s were "
                     "aborted (the first: %s)", len(self.blocked), url, self.origin, self.blocked[0])


def _chromium_arguments() -> list[str]:
    """Chromium keeps its sandbox (user namespaces) around the archived pages' scripts, except as root,
    where it refuses to start with it (a container's root user). Its own calls out (updates, safe browsing,
    DNS prefetching) are off: the browser is to reach the replay service and nothing else."""
    return ["--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--dns-prefetch-disable",
            *(["--no-sandbox"] if os.geteuid() == 0 else [])]


def _playwright() -> Any:
    """Playwright's synchronous API, imported when a camera is used: the scheduler does not need it."""
    from playwright import sync_api

    return sync_api


class Camera:
    """Headless Chromium at ``chromium``, taking pictures ``width`` pixels wide within ``page_timeout`` s."""

    def __init__(self, chromium: Path, width: int, page_timeout: float) -> None:
        if not 16 <= width <= VIEWPORT_WIDTH:
            raise ValueError(f"a thumbnail's width must be 16 to {VIEWPORT_WIDTH} pixels, got {width}")
        self.chromium = Path(chromium)
        self.width = width
        self.page_timeout = page_timeout
        self._playwright_manager: Any = None
        self._browser: Any = None

    def unavailable(self) -> str | None:
        """Why no picture can be taken here, in words; None when Chromium and Playwright are there."""
        if not self.chromium.is_file():
            return f"no chromium at {self.chromium} (harvestsuite.qa.chromium)"
        if not os.access(self.chromium, os.X_OK):
            return f"chromium at {self.chromium} is not executable (harvestsuite.qa.chromium)"
        try:
            _playwright()
        except ImportError as exc:
            return f"no Playwright for Python in this installation ({exc}); install the `qa` extra"
        return None

    def __enter__(self) -> Camera:
        sync_api = _playwright()
        try:
            self._playwright_manager = sync_api.sync_playwright().start()
            self._browser = self._playwright_manager.chromium.launch(executable_path=str(self.chromium),
                                                                     args=_chromium_arguments())
        except sync_api.Error as exc:
            self._close()
            raise CameraError(f"chromium at {self.chromium} cannot be started: {exc.message}") from exc
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._close()

    def _close(self) -> None:
        browser, manager = self._browser, self._playwright_manager
        self._browser = self._playwright_manager = None
        try:
            if browser is not None:
                browser.close()
        finally:
            if manager is not None:
                manager.stop()

    def picture(self, url: str) -> Picture:
        """The replayed page at ``url`` (pywb's framed replay: its banner above a frame with the page) as a PNG
        of the page's frame alone, ``width`` pixels wide, or the note why none was taken.

        pywb sends a page loaded without its frame (``mp_``) to the framed form by script, so the frame is what
        to picture: the viewport is made taller by the banner's height, which leaves the page's frame the
        1280 x 800 a picture is of.

        :raise CameraError: the browser died or refused a new page.
        """
        if self._browser is None:
            raise CameraError("the camera is not open: use it as a context manager")
        sync_api = _playwright()
        watch = _Watch(origin_of(url))
        context = self._context(watch, sync_api)
        try:
            picture = self._picture(context, url, watch)
            went_to = watch.went_to()
            if picture.png is not None and went_to is not None and watch.frame_navigations:
                picture = self._still_picture(watch.frame_navigations[0], went_to, sync_api)
            return picture
        except sync_api.TimeoutError:
            return Picture(None, f"the replay did not load within {self.page_timeout:g} s "
                                 "(harvestsuite.qa.pageTimeoutMs)")
        except sync_api.Error as exc:
            if not self._browser.is_connected():
                raise CameraError(f"chromium at {self.chromium} died: {exc.message}") from exc
            return Picture(None, f"the replay could not be loaded: {exc.message.splitlines()[0]}")
        finally:
            watch.log_blocked(url)
            if self._browser.is_connected():
                context.close()

    def _context(self, watch: _Watch, sync_api: Any, scripts: bool = True) -> Any:
        """A fresh browser context whose every request passes ``watch``'s route (module docstring)."""
        try:
            context = self._browser.new_context(viewport={"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT},
                                                device_scale_factor=self.width / VIEWPORT_WIDTH,
                                                service_workers="block", java_script_enabled=scripts)
            context.route("**/*", watch.route)
            context.on("request", watch.request)
        except sync_api.Error as exc:
            raise CameraError(f"chromium at {self.chromium} stopped answering: {exc.message}") from exc
        return context

    def _still_picture(self, capture_url: str, went_to: str, sync_api: Any) -> Picture:
        """The seed's own capture at ``capture_url`` (pywb's frameless replay) with scripts off, pictured
        because the replayed page navigated away to ``went_to``."""
        watch = _Watch(origin_of(capture_url))
        context = self._context(watch, sync_api, scripts=False)
        note = (f"the page navigated away by itself, to {original_url(went_to)}: the picture is of the seed's "
                "own capture, without its scripts")
        try:
            page = context.new_page()
            response = page.goto(capture_url, wait_until="load", timeout=self.page_timeout * 1000)
            if response is not None and response.status >= 500:
                return Picture(None, f"{note}, which the replay service answered HTTP {response.status}")
            return Picture(page.screenshot(type="png", timeout=self.page_timeout * 1000), note)
        finally:
            watch.log_blocked(capture_url)
            if self._browser.is_connected():
                context.close()

    def _picture(self, context: Any, url: str, watch: _Watch) -> Picture:
        milliseconds = self.page_timeout * 1000
        page = context.new_page()
        response = page.goto(url, wait_until="load", timeout=milliseconds)
        if response is not None and response.status >= 500:
            return Picture(None, f"the replay service answered HTTP {response.status}")
        frame_element = page.wait_for_selector(REPLAY_FRAME, state="attached", timeout=milliseconds)
        frame = frame_element.content_frame()
        if frame is None:
            return Picture(None, "the replay service's page has no frame with the replayed page")
        # the frame's page is loaded once the frame shows the capture (its URL is set by pywb's script)
        page.wait_for_function(f"() => document.querySelector('{REPLAY_FRAME}').contentWindow.location.href"
                               ".includes('mp_/')", timeout=milliseconds)
        frame.wait_for_load_state("load", timeout=milliseconds)
        box = frame_element.bounding_box()
        banner = round(box["y"]) if box else 0
        page.set_viewport_size({"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT + banner})
        return Picture(frame_element.screenshot(type="png", timeout=milliseconds))
