"""The harvest page as the curator's hub in Debian's chromium, served by ``harvestsuite webui run``: a curator
removes a domain from a selective harvest, asks for a preview and a run now, and after one real
``harvestsuite scheduler tick --once`` sees the preview and the run with the links to its jobs; the page
and its wide preview table are looked at in a screenshot at 1280 px."""

from __future__ import annotations

import re

import pytest

from tests.webui.browser import ServedWebui, log_in, screenshot

pytestmark = pytest.mark.timeout(300)


def tick(webui: ServedWebui) -> None:
    """One scheduler tick on the web UI's database, its embedded queue in the test's own directory."""
    webui.harvestsuite("--set", f"harvestsuite.queue.url=sqlite:///{webui.directory / 'queue.db'}",
                       "--set", "harvester.deduplication.enabled=false",
                       "--set", "harvester.scheduler.jobGen.config.postponeUnregisteredChannel=false",
                       "scheduler", "tick", "--once")


def test_the_curator_removes_a_domain_runs_now_and_previews_on_the_harvest_page(page, webui, tmp_path):
    log_in(page, webui.url, "curator")
    page.goto("/definitions/domains/new")
    page.get_by_label("Or a list, one name a line").fill("kb.dk\ndr.dk\nbib.dk")
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    page.goto("/definitions/harvests/new/selective")
    page.get_by_label("Name").fill("culture")
    page.get_by_label("Schedule").select_option("Once_a_week")
    page.get_by_label("Domains, one a line").fill("kb.dk\ndr.dk\nbib.dk")
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="Selective harvest culture").is_visible()
    assert page.get_by_text("No runs yet.").is_visible()

    # remove a domain
    page.get_by_role("button", name="Remove dr.dk").click()
    page.wait_for_load_state()
    assert page.locator(".flash").first.inner_text() == \
        "Configuration dr.dk/defaultconfig removed from harvest culture."
    domains = page.locator("table.configurations td:first-child").all_inner_texts()
    assert domains == ["bib.dk", "kb.dk"]

    # preview and run now: asked for, carried out by the scheduler's next tick
    page.get_by_role("button", name="Preview the next run").click()
    page.wait_for_load_state()
    assert "the scheduler makes it at its next tick" in page.locator("#preview").inner_text()
    page.get_by_role("button", name="Run now").click()
    page.wait_for_load_state()
    assert page.locator(".flash.run-request").inner_text().startswith("A run is asked for: curator at")
    assert page.get_by_role("button", name="Withdraw the run asked for").is_visible()
    screenshot(page, tmp_path, "harvest-hub-asked")

    tick(webui)
    page.reload()
    preview = page.locator("#preview")
    assert "run 1, 2 configurations in 1 job" in preview.inner_text()
    assert preview.locator("table.preview .sample").inner_text() == "bib.dk/defaultconfig, kb.dk/defaultconfig"
    assert page.locator(".flash.run-request").count() == 0
    run_row = page.locator("table.runs tr").nth(1)
    assert run_row.locator("td").first.inner_text() == "1"
    assert "NEW 1" in run_row.inner_text()
    # the page fits 1280 px: no table runs past the main column
    overflow = page.evaluate("""() => [...document.querySelectorAll('main table')].filter(
        t => t.getBoundingClientRect().right > document.querySelector('main').getBoundingClientRect().right + 1
    ).map(t => t.className)""")
    assert overflow == []
    screenshot(page, tmp_path, "harvest-hub-after-tick")

    run_row.get_by_role("link", name="Jobs of run 1").click()
    page.wait_for_load_state()
    assert re.search(r"/status/\?harvest_id=\d+&run=1$", page.url), page.url
    assert page.get_by_label("Run").input_value() == "1"
    assert page.locator("table").first.get_by_text("culture").count() >= 1
