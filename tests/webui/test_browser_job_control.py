"""Steering a running job from its page in Debian's chromium: Pause is clicked, the change appears pending,
and once the controller's answer is recorded (JobChangeRepository.settle, standing in for the scheduler's
intake) the page says since when and by whom the crawl is paused and enables Resume, all without a reload;
Stop asks first, and a refused change form is shown again with the error naming its field."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.types import utcnow
from harvestdef.messages import LiveChangeResult
from harvestdef.model.status import JobStatus
from harvestdef.queues import open_transport
from harvestdef.repositories.jobchanges import JobChangeRepository
from harvestdef.settings import QueueSettings
from scheduler.livechanges import refuse_changes_of_ended_jobs
from tests.webui.browser import ServedWebui, log_in, screenshot
from tests.webui.test_live_job import CONTROLLER, Crawl, start_crawl

pytestmark = pytest.mark.timeout(300)



@contextlib.contextmanager
def steered_job(tmp_path: Path, poll_ms: int) -> Iterator[tuple[ServedWebui, Crawl, Any]]:
    """A web UI polling every ``poll_ms``, an operator, and a STARTED job whose crawler runs."""
    with ServedWebui(tmp_path, users=("operator",),
                     settings={"harvestsuite.webui.livePollIntervalMs": str(poll_ms)}) as webui:
        engine = open_engine(f"sqlite:///{tmp_path / 'harvest.db'}")
        transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
        try:
            crawl = start_crawl(engine, transport)
            crawl.heartbeat(utcnow())
            crawl.progress(utcnow())
            yield webui, crawl, engine
        finally:
            transport.close()
            engine.dispose()


@contextlib.contextmanager
def operator_page_of(browser: Any, webui: ServedWebui) -> Iterator[Any]:
    """A 1280 px page logged in as an operator, its browser context closed after the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=webui.url)
    # a wait here spans a poll or two of the page and the web UI's answer to each; with the suite's four
    # workers on two cores one of them took longer than 15 s
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        log_in(page, webui.url, "operator")
        yield page
    finally:
        context.close()


@pytest.fixture
def steered(tmp_path: Path) -> Iterator[tuple[ServedWebui, Crawl, Any]]:
    with steered_job(tmp_path, 500) as steered:
        yield steered


@pytest.fixture
def operator_page(browser: Any, steered: tuple[ServedWebui, Crawl, Any]) -> Iterator[Any]:
    with operator_page_of(browser, steered[0]) as page:
        yield page


def test_pause_from_the_page_then_the_applied_pause_shows_without_a_reload(operator_page, steered, tmp_path):
    webui, crawl, engine = steered
    page = operator_page
    page.goto(f"/status/jobs/{crawl.job_id}")
    pause, resume = page.get_by_role("button", name="Pause"), page.get_by_role("button", name="Resume")
    assert pause.is_enabled() and resume.is_disabled()
    page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded

    pause.click()
    pending = page.locator('[data-live="changes"] tr[data-version="1"]')
    pending.wait_for()
    assert pending.get_attribute("data-state") == "pending"
    assert "operator" in pending.inner_text() and "pause" in pending.inner_text()
    page.wait_for_function("document.querySelector('.control-actions [data-action=\"pause\"] button').disabled")
    assert page.locator('[data-live="paused"]').is_hidden()

    with engine.begin() as conn:
        assert JobChangeRepository(conn).settle(crawl.job_id, 1, "applied", "", utcnow(), crawl.attempt)
    paused = page.locator('[data-live="paused"]')
    paused.wait_for(state="visible")
    assert paused.inner_text().startswith("Paused since ") and paused.inner_text().endswith(" UTC by operator")
    page.locator('[data-live="changes"] tr[data-version="1"][data-state="applied"]').wait_for()
    assert resume.is_enabled() and pause.is_disabled()
    assert page.evaluate("window.loadedOnce") is True
    screenshot(page, tmp_path, "job-control-paused")

    # Stop asks first; dismissed, it sends nothing, so the next action is change 2
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.get_by_role("button", name="Stop").click()
    page.get_by_role("button", name="Checkpoint now").click()
    page.locator('[data-live="changes"] tr[data-version="2"]').wait_for()
    assert asked and asked[0].startswith(f"Stop the crawl of job {crawl.job_id}?")
    assert page.locator('[data-live="changes"] tr').count() == 2
    assert "checkpoint" in page.locator('[data-live="changes"] tr[data-version="2"]').inner_text()
    assert page.evaluate("window.loadedOnce") is True

    # a change form refused: shown again with the error beside it and what was typed
    rule = page.locator('form[data-form="rule"]')
    rule.get_by_label("Regular expression").fill("(unclosed")
    rule.get_by_role("button", name="Send").click()
    page.wait_for_load_state()
    error = page.locator('form[data-form="rule"] label', has=page.locator('[name="regex"]')).locator(".refusal")
    assert error.inner_text().startswith("regex: is not a regular expression the crawler can run")
    assert page.locator('form[data-form="rule"]').get_by_label("Regular expression").input_value() == "(unclosed"
    assert page.locator('[data-live="changes"] tr').count() == 2
    screenshot(page, tmp_path, "job-control-refused-form")


def test_the_danish_page_says_why_a_button_is_disabled_and_what_holds_the_crawl_back(operator_page, steered, tmp_path):
    """The titles and the holding-back list in Danish when drawn and again after live.js's updates, which
    say the live view's phrases from the page's data-phrases; nothing wider than the window."""
    webui, crawl, engine = steered
    page = operator_page
    page.context.add_cookies([{"name": "harvestsuite_language", "value": "da", "url": webui.url}])
    page.goto(f"/status/jobs/{crawl.job_id}")
    resume = page.locator('.control-actions [data-action="resume"] button')
    assert resume.is_disabled()
    assert resume.get_attribute("title").startswith(
        "kun en crawler, der er på pause eller ved at gå på pause, kan genoptages, og crawleren kører "
        "(CRAWLER_ACTIVE, rapporteret ")
    page.evaluate("window.loadedOnce = true")

    # the crawler pauses itself and its controller is paused: live.js says both in Danish
    crawl.heartbeat(utcnow(), paused=True, reason="vedligehold")
    crawl.progress(utcnow(), status="CRAWLER_PAUSED")
    page.wait_for_function("document.querySelector('.control-actions [data-action=\"pause\"] button').disabled")
    pause = page.locator('.control-actions [data-action="pause"] button')
    assert pause.get_attribute("title").startswith(
        "kun en crawler, der kører, kan sættes på pause, og crawleren er på pause (CRAWLER_PAUSED, rapporteret ")
    held = page.locator('[data-live="holding_back"] li')
    held.first.wait_for()
    texts = held.all_inner_texts()
    assert "Controlleren ctl-1 er på pause: vedligehold." in texts, texts
    assert any(text.startswith("Crawleren er på pause (rapporteret ") for text in texts), texts
    paused = page.locator('[data-live="paused"]')
    paused.wait_for(state="visible")
    assert paused.inner_text().startswith("Sat på pause siden ") and paused.inner_text().endswith(" af crawleren")
    assert page.evaluate("window.loadedOnce") is True
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    screenshot(page, tmp_path, "job-control-danish")


# the page's note while an ended job's changes are pending, then once none is, in each language
ENDED_NOTES = {"en": ("the job is DONE now; waiting for the answer to change 1, 2",
                      "the job is DONE now: reload the page for its results"),
               "da": ("jobbet er DONE nu; venter på svaret på ændring 1, 2",
                      "jobbet er DONE nu: genindlæs siden for at se dets resultater")}


@pytest.mark.parametrize("language", ["en", "da"])
def test_changes_answered_after_the_jobs_end_show_their_final_state_without_a_reload(browser, tmp_path, language):
    """The job ends while a stop and a reject rule are pending (here by another writer than the scheduler's
    intake, which would settle both in the same transaction); the page goes on asking well past any number of
    polls, says what it waits for, then shows the stop applied by its controller's late answer and the rule
    refused, with the reason, by the scheduler's tick."""
    with steered_job(tmp_path, 100) as (webui, crawl, engine), operator_page_of(browser, webui) as page:
        page.context.add_cookies([{"name": "harvestsuite_language", "value": language, "url": webui.url}])
        page.goto(f"/status/jobs/{crawl.job_id}")
        page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator('.control-actions [data-action="stop"] button').click()
        changes = page.locator('[data-live="changes"]')
        changes.locator('tr[data-version="1"][data-state="pending"]').wait_for()
        with engine.begin() as conn:
            JobChangeRepository(conn).add(crawl.job_id, "reject", {"regex": ".*/calendar/.*"}, "operator", utcnow())
            conn.execute(update(s.jobs).where(s.jobs.c.job_id == crawl.job_id).values(status=int(JobStatus.DONE)))
        page.locator('[data-live-url][data-state="DONE"]').wait_for(state="attached")
        changes.locator('tr[data-version="2"][data-state="pending"]').wait_for()
        assert page.locator("h1 [data-job-status]").inner_text() == "DONE"

        # more polls than the page ever made before giving up on a pending change (twenty)
        for _ in range(30):
            with page.expect_response(lambda response: response.url.endswith(f"/jobs/{crawl.job_id}/live")):
                pass
        waiting, settled = ENDED_NOTES[language]
        assert page.locator('[data-live="note"]').inner_text() == waiting
        assert changes.locator('tr[data-state="pending"]').count() == 2
        assert page.locator('[data-live="change_forms"]').is_hidden()
        screenshot(page, tmp_path, f"job-control-ended-waiting-{language}")

        # the controller's answer comes late, through the scheduler's intake; the tick refuses the rule
        crawl.handle(LiveChangeResult(job_id=crawl.job_id, attempt_id=crawl.attempt, controller_id=CONTROLLER,
                                      version=1, state="applied", reason="", happened_at=utcnow().isoformat()))
        assert refuse_changes_of_ended_jobs(engine, utcnow()) == {crawl.job_id: 1}
        changes.locator('tr[data-version="1"][data-state="applied"]').wait_for()
        refused = changes.locator('tr[data-version="2"][data-state="refused"]')
        refused.wait_for()
        assert (f"job {crawl.job_id} ended DONE (the change was stored as the job ended) before its controller "
                f"applied this change") in refused.inner_text()
        page.wait_for_function("document.querySelector('[data-live=\"note\"]').textContent === "
                               f"{settled!r}")
        assert page.locator(".control-actions button:enabled").count() == 0
        assert page.evaluate("window.loadedOnce") is True
        screenshot(page, tmp_path, f"job-control-ended-settled-{language}")


def test_an_answer_read_between_the_rows_and_the_pending_list_does_not_end_the_polling(browser, tmp_path):
    """The live view reads the page of changes and ``changes_pending`` one after the other, so an answer that
    lands between the two reads gives pending rows beside an empty ``changes_pending``. One such answer is made
    here from the server's own (the browser's router empties its ``changes_pending`` once the job has ended):
    the page keeps asking while a row it shows is pending, and shows the change settled when it is."""
    with steered_job(tmp_path, 100) as (webui, crawl, engine), operator_page_of(browser, webui) as page:
        torn: list[dict[str, Any]] = []

        def tear_once(route: Any) -> None:
            response = route.fetch()
            live = response.json()
            if not torn and live["state"] == "DONE" and live["changes_pending"]:
                live["changes_pending"] = []
                torn.append(live)
                route.fulfill(response=response, json=live)
            else:
                route.fulfill(response=response)
        page.route(f"**/jobs/{crawl.job_id}/live", tear_once)
        page.goto(f"/status/jobs/{crawl.job_id}")
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator('.control-actions [data-action="stop"] button').click()
        changes = page.locator('[data-live="changes"]')
        changes.locator('tr[data-version="1"][data-state="pending"]').wait_for()
        with engine.begin() as conn:
            conn.execute(update(s.jobs).where(s.jobs.c.job_id == crawl.job_id).values(status=int(JobStatus.DONE)))
        page.locator('[data-live-url][data-state="DONE"]').wait_for(state="attached")
        for _ in range(5):  # polls after the torn one
            with page.expect_response(lambda response: response.url.endswith(f"/jobs/{crawl.job_id}/live")):
                pass
        assert len(torn) == 1 and [change["state"] for change in torn[0]["changes"]] == ["pending"]
        note = page.locator('[data-live="note"]')
        assert note.inner_text() == "the job is DONE now; waiting for the answer to change 1"
        crawl.handle(LiveChangeResult(job_id=crawl.job_id, attempt_id=crawl.attempt, controller_id=CONTROLLER,
                                      version=1, state="applied", reason="", happened_at=utcnow().isoformat()))
        changes.locator('tr[data-version="1"][data-state="applied"]').wait_for()
        page.wait_for_function("document.querySelector('[data-live=\"note\"]').textContent === "
                               f"{ENDED_NOTES['en'][1]!r}")


def test_a_poll_never_answered_is_given_up_and_the_page_goes_on_polling(browser, tmp_path):
    """One request of the live view hangs (held here by the browser's router, as a stalled connection would
    be): the page gives it up after its patience (10 s at the least), says the update failed, and its next
    polls show what changed meanwhile."""
    with steered_job(tmp_path, 100) as (webui, crawl, engine), operator_page_of(browser, webui) as page:
        held: list[Any] = []

        def hold_the_first(route: Any) -> None:
            if not held:
                held.append(route)  # never answered
            else:
                route.continue_()
        page.route(f"**/jobs/{crawl.job_id}/live", hold_the_first)
        page.goto(f"/status/jobs/{crawl.job_id}")
        page.wait_for_function("document.querySelector('[data-live=\"note\"]').textContent"
                               ".startsWith('update failed (no answer within 10 s)')")
        assert held  # the first poll was the one held
        with engine.begin() as conn:
            JobChangeRepository(conn).add(crawl.job_id, "pause", {}, "operator", utcnow())
        page.locator('[data-live="changes"] tr[data-version="1"][data-state="pending"]').wait_for()
