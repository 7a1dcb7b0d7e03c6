"""What the harvest page offers beside its configurations and its seeds, in Debian's chromium against
``harvestsuite webui run``: the choice beside a domain's row never shows another configuration as if it ran
(it shows "change to …" until one is picked), and seeds added to an event harvest that has run its course
say that nothing will harvest them, with the Run now button beside the message. Looked at in screenshots at
1280 px, in English and in Danish."""

from __future__ import annotations

from typing import Any

import pytest

from tests.webui.browser import log_in, screenshot
from tests.webui.test_browser_harvest_hub import tick

pytestmark = pytest.mark.timeout(300)


def rows(page: Any) -> list[tuple[str, str, str]]:
    """Each configuration row: domain, configuration, and what the choice beside it shows."""
    found = []
    for row in page.locator("table.configurations tr").all()[1:]:
        cells = row.locator("td")
        choice = row.locator("select[name=configuration]")
        shown = choice.evaluate("select => select.options[select.selectedIndex].text") if choice.count() else ""
        found.append((cells.nth(0).inner_text(), cells.nth(1).inner_text(), shown))
    return found


def switch_language(page: Any, language: str) -> None:
    page.locator("footer form.language").get_by_role("button", name=language).click()
    page.wait_for_load_state()


def test_the_choice_beside_a_configuration_shows_no_other_as_if_it_ran(page, webui, tmp_path):
    log_in(page, webui.url, "curator")
    page.goto("/definitions/domains/new")
    page.get_by_label("Or a list, one name a line").fill("kb.dk\ndr.dk")
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    page.goto("/definitions/domains/kb.dk/new-configuration")
    page.get_by_label("Name").fill("langsom")
    page.get_by_label("Seed lists").select_option(index=0)
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    assert page.locator(".flash").first.inner_text() == "Configuration langsom created."

    page.goto("/definitions/harvests/new/selective")
    page.get_by_label("Name").fill("culture")
    page.get_by_label("Domains, one a line").fill("kb.dk/langsom\ndr.dk")
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    assert rows(page) == [("dr.dk", "defaultconfig", ""), ("kb.dk", "langsom", "change to …")]
    assert page.get_by_text("its only configuration").is_visible()
    choice = page.get_by_label("Another configuration of kb.dk")
    assert choice.locator("option").all_inner_texts() == ["change to …", "defaultconfig"]
    screenshot(page, tmp_path, "harvest-choices")

    # Change without a choice sends nothing: the browser asks for one
    page.get_by_role("row", name="kb.dk").get_by_role("button", name="Change").click()
    assert choice.evaluate("select => select.validity.valueMissing") is True
    assert rows(page)[1] == ("kb.dk", "langsom", "change to …")

    choice.select_option("defaultconfig")
    page.get_by_role("row", name="kb.dk").get_by_role("button", name="Change").click()
    page.wait_for_load_state()
    assert page.locator(".flash").first.inner_text() == \
        "kb.dk is harvested with configuration defaultconfig instead of langsom."
    assert rows(page) == [("dr.dk", "defaultconfig", ""), ("kb.dk", "defaultconfig", "change to …")]
    assert page.get_by_label("Another configuration of kb.dk").locator("option").all_inner_texts() == \
        ["change to …", "langsom"]

    switch_language(page, "Dansk")
    assert rows(page)[1] == ("kb.dk", "defaultconfig", "skift til …")
    assert page.locator("table.configurations th").nth(2).inner_text() == "Skift konfiguration"
    screenshot(page, tmp_path, "harvest-choices-da")


def test_seeds_added_to_a_harvest_that_has_run_its_course_are_said_to_wait_beside_run_now(page, webui, tmp_path):
    log_in(page, webui.url, "curator")
    page.goto("/definitions/harvests/new/event")
    page.get_by_label("Name").fill("election")
    page.get_by_label("Schedule").select_option("Once")
    page.get_by_label("Seeds, one a line").fill("http://kb.dk/valg")
    page.get_by_label("Active").check()
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="Event harvest election").is_visible()

    tick(webui)  # its one run: the schedule "Once" has no event after it
    page.reload()
    assert page.locator(".flash.finished").is_visible()

    page.get_by_label("Seeds, one a line").fill("http://dr.dk/nyheder")
    page.get_by_role("button", name="Add seeds").click()
    page.wait_for_load_state()
    message = page.locator(".flash.idle-seeds")
    assert message.inner_text() == (
        "Seeds added: 1 configuration; nothing will harvest it until Run now or a new schedule, since schedule "
        "Once allows 1 run, and all of them have run. Run now")
    beside = message.get_by_role("button", name="Run now")
    assert beside.is_visible()
    screenshot(page, tmp_path, "harvest-seeds-idle")

    beside.click()
    page.wait_for_load_state()
    assert page.locator(".flash.run-request").inner_text().startswith("A run is asked for: curator at")
    assert page.locator(".flash.idle-seeds").count() == 0

    # with the run asked for, seeds added are harvested by it: no word that they wait
    page.get_by_label("Seeds, one a line").fill("http://bib.dk/")
    page.get_by_role("button", name="Add seeds").click()
    page.wait_for_load_state()
    assert page.locator(".flash").first.inner_text() == "Seeds added: 1 configuration."

    page.get_by_role("button", name="Withdraw the run asked for").click()
    page.wait_for_load_state()
    switch_language(page, "Dansk")
    page.get_by_label("Seeds, ét pr. linje", exact=False).fill("http://dr.dk/sport")
    page.get_by_role("button", name="Tilføj seeds").click()
    page.wait_for_load_state()
    message = page.locator(".flash.idle-seeds")
    assert message.inner_text().startswith("Seeds tilføjet: 1 konfiguration; intet høster den før Kør nu eller et "
                                           "nyt skema, da ")
    assert message.get_by_role("button", name="Kør nu").is_visible()
    screenshot(page, tmp_path, "harvest-seeds-idle-da")
