"""The running job's progress chart in Debian's chromium, during a real crawl: the scheduler (a thread), a
harvest controller process with its bundled engine, RabbitMQ and the local test site, and the web UI as a
process of its own on the same database. The chart has points from the crawl's first seconds, they are
stored (a reload still shows them), and a crawl that waits between fetches for its politeness delay reads
as normal progress, in English and in Danish."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.site import TestSite
from tests.harvester.conftest import OUR_TEMPLATE, Harvesting, fast_politeness
from tests.harvester.test_live_steering import running_job
from tests.servers import AMQP_URL, require_rabbitmq
from tests.webui.browser import ServedWebui, log_in, screenshot

pytestmark = [pytest.mark.timeout(300), pytest.mark.rabbitmq]

# what the page shows within this many seconds of the crawl's start
FIRST_SECONDS = 20.0
POINTS = "(document.querySelector('svg[data-live=\"chart\"] polyline[data-series=\"downloaded\"]')?.points.length || 0)"
# the politeness line shown and the holding-back box hidden at one and the same moment
WAITING_NOT_HELD_BACK = ("(() => { const w = document.querySelector('[data-live=\"waiting\"]'); "
                         "const b = document.querySelector('[data-live=\"holding_back\"]'); "
                         "return w && !w.hidden && w.textContent.length > 0 && b.hidden; })()")


def polite_template() -> str:
    """1.5 s between two fetches from a host: the crawl's queues spend nearly all their time snoozed."""
    text = fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8"))
    text = re.sub(r"disposition\.minDelayMs=\d+", "disposition.minDelayMs=1500", text)
    return re.sub(r"disposition\.maxDelayMs=\d+", "disposition.maxDelayMs=1500", text)


@pytest.fixture
def crawling(tmp_path: Path) -> Iterator[tuple[ServedWebui, Harvesting, int]]:
    """A selective harvest of kulturarv.dk crawled at 1.5 s a host, and a web UI polling every second."""
    require_rabbitmq()
    with TestSite(stall_seconds=60.0) as site:
        h = Harvesting(tmp_path, site, AMQP_URL, polite_template())
        try:
            harvest_id = h.selective_harvest("polite", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
            # the web UI on the harvesting's database (ServedWebui's db init finds it made and changes nothing)
            with ServedWebui(tmp_path, users=("curator",),
                             settings={"harvestsuite.webui.livePollIntervalMs": "1000"}) as webui:
                h.start_scheduler()
                h.start_controller(**{"harvester.harvesting.frontier.frontierReportWaitTime": 2})
                yield webui, h, running_job(h, harvest_id)
        finally:
            h.close()


def test_the_chart_has_points_from_the_first_seconds_kept_over_a_reload_and_politeness_is_no_trouble(
        browser: Any, crawling: tuple[ServedWebui, Harvesting, int], tmp_path: Path) -> None:
    webui, _, job_id = crawling
    started = time.monotonic()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=webui.url, locale="en-US")
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        log_in(page, webui.url, "curator")
        page.goto(f"/status/jobs/{job_id}")
        left = FIRST_SECONDS - (time.monotonic() - started)
        assert left > 0, f"the page took more than {FIRST_SECONDS} s to load"
        page.wait_for_function(f"{POINTS} >= 4", timeout=left * 1000)
        assert page.locator('[data-live="chart_note"]').inner_text().endswith("progress samples")

        page.wait_for_function(WAITING_NOT_HELD_BACK, timeout=30_000)
        waiting = page.locator('[data-live="waiting"]')
        assert waiting.inner_text().startswith("Waiting between fetches as the politeness rules ask")
        assert "error-message" not in (waiting.get_attribute("class") or "")
        assert page.locator('[data-live="holding_back"] li').count() == 0
        shown = page.evaluate(POINTS)
        screenshot(page, tmp_path, "live-chart-en")

        # stored, not the browser's memory: a reload starts with as many points at least
        page.reload()
        page.wait_for_load_state("domcontentloaded")
        assert page.evaluate("document.getElementById('live-initial') !== null"), "the crawl ended too soon"
        page.wait_for_function(f"{POINTS} >= {shown}", timeout=5_000)
        assert page.evaluate("JSON.parse(document.getElementById('live-initial').textContent).history.length") \
            >= shown

        # in Danish: the legend from the catalogue, the politeness line in Danish words
        page.locator("footer.bottom form.language").get_by_role("button", name="Dansk").click()
        page.wait_for_load_state()
        assert page.evaluate(POINTS) >= shown
        legend = page.locator("figure.live-chart .chart-legend").inner_text()
        assert "hentede URI'er" in legend and "URI'er i kø" in legend
        page.wait_for_function(WAITING_NOT_HELD_BACK, timeout=30_000)
        assert waiting.inner_text().startswith("Venter mellem hentninger, som høflighedsreglerne kræver")
        screenshot(page, tmp_path, "live-chart-da")
    finally:
        context.close()
