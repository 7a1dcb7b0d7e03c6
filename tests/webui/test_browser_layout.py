"""The main pages in Debian's chromium at 1280 px, with data: no table overflows its page, and times carry
the reader's own zone beside UTC where it differs.

A table fits when its right edge lies within the page's content, or when it sits in a .table-scroll box
that does and scrolls it (the statistics runs table of many stop reasons). The page itself never scrolls
sideways, and neither does <main>. Each page is saved as a screenshot (tests/webui/browser.py says where).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, update

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus, StopReason
from tests.webui.browser import ServedWebui, log_in, screenshot
from tests.webui.test_history import record_runs
from tests.webui.test_system import add_harvesters

pytestmark = pytest.mark.timeout(300)

WIDTH = 1280
PAGES = ["/", "/definitions/harvests", "/definitions/harvests/daily", "/definitions/schedules",
         "/definitions/templates", "/definitions/domains?q=*.dk", "/definitions/domains/alpha.dk",
         "/definitions/channels", "/status/",
         "/status/jobs/1", "/status/jobs/3", "/status/running", "/status/waiting", "/history/",
         "/history/harvests/daily", "/history/domains/alpha.dk", "/system", "/system/users"]
LONG_ERROR = ("crawl ended abnormally: the controller could not reach "
              "http://www.alpha.dk/a/very/long/path/that/goes/on/and/on/without/any/space/to/break/it/at/all/index.html")


def seed(directory: Path) -> None:
    """The served web UI's database with runs, history, controllers, a long error and every stop reason in
    a run's figures (eighteen columns in the statistics runs table)."""
    engine = open_engine(f"sqlite:///{directory / 'harvest.db'}")
    try:
        record_runs(engine)
        add_harvesters(engine)
        with engine.begin() as conn:
            conn.execute(update(s.jobs).where(s.jobs.c.job_id == 3).values(harvest_errors=LONG_ERROR,
                                                                            enddate=utcnow()))
            conn.execute(update(s.jobs).where(s.jobs.c.job_id == 2).values(startdate=utcnow() - timedelta(hours=1),
                                                                            enddate=utcnow()))
            conn.execute(update(s.harvest_run_summary).where(s.harvest_run_summary.c.harvest_num == 2).values(
                {f"stop_{reason.name.lower()}": 1_234 + int(reason) for reason in StopReason}))
            conn.execute(insert(s.scheduler_lock).values(name="scheduler", holder="sched-host:4242",
                                                         acquired_at=utcnow(),
                                                         expires_at=utcnow() + timedelta(minutes=1)))
        assert JobStatus.FAILED  # job 3 of record_runs failed: the overview lists it with its error
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def webui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedWebui]:
    directory = tmp_path_factory.mktemp("layout")
    with ServedWebui(directory, users=("admin",)) as served:
        seed(directory)
        yield served


def _page(browser: Any, webui: ServedWebui, zone: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": WIDTH, "height": 900}, base_url=webui.url, timezone_id=zone)
    context.set_default_timeout(15_000)
    page = context.new_page()
    log_in(page, webui.url, "admin")
    yield page
    context.close()


@pytest.fixture
def page(browser: Any, webui: ServedWebui) -> Iterator[Any]:
    yield from _page(browser, webui, "UTC")


OVERFLOWS = """() => {
  const main = document.querySelector('main');
  const box = main.getBoundingClientRect();
  const style = getComputedStyle(main);
  const right = box.right - parseFloat(style.paddingRight) + 1;  // a pixel for rounding
  const found = [];
  for (const table of main.querySelectorAll('table')) {
    const edge = table.getBoundingClientRect().right;
    if (edge <= right) continue;
    const scroller = table.closest('.table-scroll');
    const scrolls = scroller && scroller.scrollWidth > scroller.clientWidth;
    if (scrolls && scroller.getBoundingClientRect().right <= right) continue;
    found.push(`${(table.querySelector('th') || table).textContent.trim().slice(0, 40)}: right edge ${Math.round(edge)}`
               + ` past ${Math.round(right)}`);
  }
  return {found, page: document.documentElement.scrollWidth, main: [main.scrollWidth, main.clientWidth],
          tables: main.querySelectorAll('table').length, scrolling: main.querySelectorAll('.table-scroll').length};
}"""


def test_no_table_overflows_its_page_at_1280_px(page, tmp_path):
    scrolled = 0
    for path in PAGES:
        response = page.goto(path)
        assert response.status == 200, path
        page.wait_for_load_state()
        layout = page.evaluate(OVERFLOWS)
        name = "layout" + (re.sub(r"[^a-z0-9]+", "-", path).strip("-") and "-" + re.sub(r"[^a-z0-9]+", "-", path)
                           .strip("-"))
        screenshot(page, tmp_path, name)
        assert layout["tables"], f"{path} has no table: this check proves nothing there"
        assert not layout["found"], f"{path}: tables overflow the page: {layout['found']}"
        assert layout["page"] <= WIDTH, f"{path} is {layout['page']} px wide at {WIDTH} px"
        assert layout["main"][0] <= layout["main"][1], f"{path}: the content scrolls sideways: {layout['main']}"
        scrolled += layout["scrolling"]
    assert scrolled, "no page had a table wide enough to scroll in its box: the statistics table should"
    # the eighteen-column runs table keeps its last column reachable inside its box
    page.goto("/history/harvests/daily")
    scroller = page.locator(".table-scroll").first
    scroller.evaluate("box => box.scrollLeft = box.scrollWidth")
    assert page.get_by_role("columnheader", name=re.compile("TIME_")).is_visible()
    screenshot(page, tmp_path, "layout-statistics-scrolled")


def test_times_show_the_readers_zone_beside_utc_where_it_differs(browser, webui, tmp_path):
    # the zone as the browser's English names it: an abbreviation, or the offset where it knows none
    for zone, names in (("Europe/Copenhagen", "CET|CEST|GMT\\+1|GMT\\+2"), ("America/New_York", "EST|EDT|GMT-5|GMT-4")):
        expected = re.compile(rf"^\((\d{{4}}-\d\d-\d\d )?\d\d:\d\d:\d\d ({names})\)$")
        for page in _page(browser, webui, zone):
            page.goto("/status/")
            first = page.locator("time[datetime]").first
            utc = first.get_attribute("datetime")
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", utc)
            assert first.inner_text() == f"{utc[:10]} {utc[11:19]} UTC"
            local = page.locator(".local-time")
            assert local.count() == page.locator("time[datetime]").count() > 0
            assert expected.match(local.first.inner_text()), local.first.inner_text()
            screenshot(page, tmp_path, f"layout-times-{zone.replace('/', '-')}")
    for page in _page(browser, webui, "UTC"):
        page.goto("/status/")
        assert page.locator("time[datetime]").count() > 0 and page.locator(".local-time").count() == 0
