"""The Danish pages in Debian's chromium: the footer's switch, the navigation and headings in Danish, the choice
kept after a reload and across pages, and English again at the switch's other button."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.webui.browser import ServedWebui, log_in, screenshot

pytestmark = pytest.mark.timeout(300)

DANISH_NAVIGATION = ["Oversigt", "Definitioner", "Høststatus", "Historik", "System"]


@pytest.fixture
def webui(tmp_path: Path) -> Iterator[ServedWebui]:
    with ServedWebui(tmp_path, users=("admin",)) as served:
        yield served


@pytest.fixture
def page(browser: Any, webui: ServedWebui) -> Iterator[Any]:
    # the browser asks for English, as the other browser tests' do: the switch, not the browser, makes it Danish
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=webui.url, locale="en-US")
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def navigation(page: Any) -> list[str]:
    return [" ".join(text.split()) for text in page.locator("header.top nav a").all_inner_texts()]


def test_the_switch_makes_the_pages_danish_and_keeps_them_so(page, webui, tmp_path):
    log_in(page, webui.url, "admin")
    assert navigation(page) == ["Overview", "Definitions", "Harvest status", "History", "System"]
    assert page.locator("html").get_attribute("lang") == "en"

    page.locator("footer.bottom form.language").get_by_role("button", name="Dansk").click()
    page.wait_for_load_state()
    assert navigation(page) == DANISH_NAVIGATION
    assert page.get_by_role("heading", name="Oversigt", exact=True).is_visible()
    assert "Logget ind som admin." in page.locator("main").inner_text()
    assert page.locator("html").get_attribute("lang") == "da"
    assert page.get_by_role("button", name="Log ud").is_visible()
    screenshot(page, tmp_path, "language-overview-da")

    page.get_by_role("link", name="Høststatus").click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="Høststatus", exact=True).is_visible()
    assert page.get_by_role("button", name="Filtrér").is_visible()
    page.reload()
    assert page.get_by_role("heading", name="Høststatus", exact=True).is_visible()
    assert navigation(page) == DANISH_NAVIGATION
    screenshot(page, tmp_path, "language-status-da")

    page.get_by_role("link", name="Definitioner").click()
    page.get_by_role("link", name="Høstdefinitioner").first.click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="Høstdefinitioner", exact=True).is_visible()
    assert page.get_by_role("link", name="Ny tværsnitshøstning").is_visible()
    screenshot(page, tmp_path, "language-harvests-da")

    page.get_by_role("button", name="Log ud").click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="Log ind", exact=True).is_visible()
    screenshot(page, tmp_path, "language-login-da")

    page.locator("footer.bottom form.language").get_by_role("button", name="English").click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="Log in", exact=True).is_visible()
