"""Pictures of replayed pages: headless Chromium (Debian's package) driven by Playwright for Python.

``Camera.unavailable`` says in words why no picture can be taken here (no Chromium at the configured path,
no Playwright), before anything is started. Used as a context manager, the camera starts Playwright and one
Chromium, and stops both on leaving, whatever happened. ``picture`` loads one URL in a fresh browser context
with a 1280 x 800 viewport and a device scale factor of ``width / 1280``, so Chromium itself renders the
replayed page ``width`` pixels wide: no image library is needed, and the PNG is small.

A page that fails to load in time, or that the replay service answers with a server error, is an outcome
(``Picture.note``), not an exception: the job goes on with its next seed. A browser that cannot start or
dies midway is a CameraError: the pass stops, and the next one starts a new browser.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from harvestdef.errors import HarvestSuiteError

VIEWPORT_WIDTH, VIEWPORT_HEIGHT = 1280, 800
# pywb's framed replay page holds the replayed page in this frame (its templates/frame_insert.html).
REPLAY_FRAME = "#replay_iframe"


class CameraError(HarvestSuiteError):
    """Chromium cannot be started, or stopped answering; the message says which and why."""


@dataclass(frozen=True)
class Picture:
    """A page's picture as PNG bytes, or the note why there is none."""

    png: bytes | None
    note: str | None = None


def _chromium_arguments() -> list[str]:
    """Chromium keeps its sandbox (user namespaces) around the archived pages' scripts, except as root,
    where it refuses to start with it (a container's root user)."""
    return ["--headless", "--disable-gpu", *(["--no-sandbox"] if os.geteuid() == 0 else [])]


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
        try:
            context = self._browser.new_context(viewport={"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT},
                                                device_scale_factor=self.width / VIEWPORT_WIDTH)
        except sync_api.Error as exc:
            raise CameraError(f"chromium at {self.chromium} stopped answering: {exc.message}") from exc
        try:
            return self._picture(context, url, sync_api)
        except sync_api.TimeoutError:
            return Picture(None, f"the replay did not load within {self.page_timeout:g} s "
                                 "(harvestsuite.qa.pageTimeoutMs)")
        except sync_api.Error as exc:
            if not self._browser.is_connected():
                raise CameraError(f"chromium at {self.chromium} died: {exc.message}") from exc
            return Picture(None, f"the replay could not be loaded: {exc.message.splitlines()[0]}")
        finally:
            if self._browser.is_connected():
                context.close()

    def _picture(self, context: Any, url: str, sync_api: Any) -> Picture:
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
