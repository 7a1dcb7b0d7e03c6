"""A running job's page steers it: control buttons and change forms for operators and admins only, each a
form posted with the session's CSRF token through the API's own code; a refused form shown again with the
error naming its field and what was typed; the change list and the paused line for every reader."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus
from harvestdef.queues import open_transport
from harvestdef.repositories.jobchanges import JobChange, JobChangeRepository
from harvestdef.settings import QueueSettings
from tests.webui.test_live_job import Crawl, start_crawl

BUTTONS = ("Pause", "Resume", "Checkpoint now", "Stop", "Fail")


@pytest.fixture
def crawl(webui_engine: Engine, tmp_path: Path) -> Iterator[Crawl]:
    """A STARTED job of a.dk and københavn.dk on the web UI's database, reported through the intake."""
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
    try:
        running = start_crawl(webui_engine, transport)
        running.progress(utcnow())
        yield running
    finally:
        transport.close()


@pytest.fixture
def page_of(login: Callable[[str], FlaskClient]) -> Callable[[str, int], tuple[FlaskClient, str]]:
    def load(role: str, job_id: int) -> tuple[FlaskClient, str]:
        client = login(role)
        response = client.get(f"/status/jobs/{job_id}")
        assert response.status_code == 200
        return client, response.get_data(as_text=True)
    return load


def stored(engine: Engine, job_id: int) -> list[JobChange]:
    with engine.connect() as conn:
        return JobChangeRepository(conn).for_job(job_id)


def button(page: str, label: str) -> str:
    match = re.search(rf"<button[^>]*>{re.escape(label)}</button>", page)
    assert match, f"no {label} button"
    return match.group(0)


def form_of(page: str, marker: str) -> str:
    """The HTML of the form holding ``marker``."""
    at = page.index(marker)
    return page[page.rindex("<form", 0, at):page.index("</form>", at)]


@pytest.mark.parametrize("role", ["operator", "admin"])
def test_operators_and_admins_see_the_buttons_and_forms(crawl, page_of, role):
    _, page = page_of(role, crawl.job_id)
    for label in BUTTONS:
        assert button(page, label)
    assert "disabled" not in button(page, "Pause") and "disabled" not in button(page, "Stop")
    resume = button(page, "Resume")
    assert "disabled" in resume and "only a paused or pausing crawler can be resumed" in resume
    assert 'data-confirm="Stop the crawl of job' in form_of(page, ">Stop</button>")
    assert 'data-confirm="Fail job' in form_of(page, ">Fail</button>")
    assert "data-confirm" not in form_of(page, ">Pause</button>")
    for kind in ("budget", "delete_queued", "add_uris", "politeness"):
        assert f'name="kind" value="{kind}"' in page
    assert '<option value="unreject"' in page
    # the job's domains to choose from
    rule = form_of(page, '<option value="unreject"')
    assert "<option>a.dk</option>" in rule and "<option>københavn.dk</option>" in rule
    assert "No changes yet." in page and 'data-live="paused"' in page


@pytest.mark.parametrize("role", ["curator", "archivist"])
def test_others_see_the_changes_but_no_buttons_or_forms(crawl, page_of, login, webui_engine, role):
    _, page = page_of(role, crawl.job_id)
    assert not any(f">{label}</button>" in page for label in BUTTONS)
    assert "Make a change" not in page and "/control" not in page
    assert "<h3>Changes</h3>" in page
    client = login(role)
    refused = client.post(f"/status/jobs/{crawl.job_id}/control", data={"action": "pause", "csrf_token": client.csrf})
    assert refused.status_code == 403
    refused = client.post(f"/status/jobs/{crawl.job_id}/changes",
                          data={"kind": "delete_queued", "regex": "x", "csrf_token": client.csrf})
    assert refused.status_code == 403
    assert stored(webui_engine, crawl.job_id) == []


def test_a_button_stores_the_action_and_the_page_lists_it_pending(crawl, login, webui_engine):
    client = login("operator")
    response = client.post(f"/status/jobs/{crawl.job_id}/control", data={"action": "pause", "csrf_token": client.csrf})
    assert response.status_code == 302 and response.location.endswith(f"/status/jobs/{crawl.job_id}#steer")
    [change] = stored(webui_engine, crawl.job_id)
    assert (change.kind, change.author, change.state, change.payload) == ("pause", "operator", "pending", {})
    page = client.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    assert "Change 1 (pause) is pending" in page
    row = re.search(r'<tr data-version="1" data-state="pending">.*?</tr>', page, re.S).group(0)
    assert ">pause<" in row and ">operator<" in row and "change-state pending" in row
    # the pending pause will have paused the crawler: Pause is off, Resume on
    assert "disabled" in button(page, "Pause") and "a pause is pending already (change 1" in button(page, "Pause")
    assert "disabled" not in button(page, "Resume")
    with webui_engine.begin() as conn:
        JobChangeRepository(conn).settle(crawl.job_id, 1, "applied", "", utcnow(), crawl.attempt)
    page = client.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    assert re.search(r'data-live="paused" role="status">Paused since <time datetime="[\dT:Z-]+"><span>\d{4}-\d\d-\d\d'
                     r'</span> <span>[\d:]+ UTC</span></time> by operator</p>', page)


def test_a_button_without_the_csrf_token_is_refused(crawl, login, webui_engine):
    client = login("operator")
    assert client.post(f"/status/jobs/{crawl.job_id}/control", data={"action": "stop"}).status_code == 403
    assert stored(webui_engine, crawl.job_id) == []


def test_a_button_the_state_forbids_shows_the_conflict_on_the_page(crawl, login, webui_engine):
    client = login("admin")
    response = client.post(f"/status/jobs/{crawl.job_id}/control",
                           data={"action": "resume", "csrf_token": client.csrf})
    assert response.status_code == 409
    page = response.get_data(as_text=True)
    shown = re.search(r'<p class="error-message form-error" data-live="control_error" role="alert">(.*?)</p>', page)
    assert shown and shown.group(1).startswith(f"job {crawl.job_id} cannot be resumed now: only a paused or pausing "
                                               f"crawler can be resumed, and the crawler is running (CRAWLER_ACTIVE")
    assert stored(webui_engine, crawl.job_id) == []
    unknown = client.post(f"/status/jobs/{crawl.job_id}/control", data={"action": "explode", "csrf_token": client.csrf})
    assert unknown.status_code == 400
    assert "one of pause, resume, checkpoint, stop, fail" in unknown.get_data(as_text=True)
    assert client.post("/status/jobs/999999/control", data={"action": "stop", "csrf_token": client.csrf}
                       ).status_code == 404


@pytest.mark.parametrize("form, payload", [
    ({"kind": "reject", "regex": r".*\.mp4", "domain": "københavn.dk"},
     {"regex": r".*\.mp4", "domain": "københavn.dk"}),
    ({"kind": "unreject", "regex": "x", "domain": ""}, {"regex": "x"}),
    ({"kind": "budget", "domain": "a.dk", "max_objects": " 500 ", "max_bytes": ""},
     {"domain": "a.dk", "max_objects": 500}),
    ({"kind": "delete_queued", "regex": "x"}, {"regex": "x"}),
    ({"kind": "add_uris", "uris": "http://a.dk/one\n\n  www.a.dk/two  \n"},
     {"uris": ["http://a.dk/one", "http://www.a.dk/two"]}),
    ({"kind": "politeness", "delay_factor": "1.5", "max_per_host": "3", "min_delay_ms": "", "max_delay_ms": "9000"},
     {"delay_factor": 1.5, "max_per_host": 3, "max_delay_ms": 9000}),
])
def test_each_change_form_stores_its_change(crawl, login, webui_engine, form, payload):
    client = login("operator")
    response = client.post(f"/status/jobs/{crawl.job_id}/changes", data={**form, "csrf_token": client.csrf})
    assert response.status_code == 302, response.get_data(as_text=True)
    [change] = stored(webui_engine, crawl.job_id)
    assert (change.kind, change.payload, change.author) == (form["kind"], payload, "operator")
    page = client.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    assert "Change 1 (" in page and 'data-version="1" data-state="pending"' in page


@pytest.mark.parametrize("form, field, words, kept", [
    ({"kind": "reject", "regex": "(unclosed", "domain": "a.dk"}, "regex", "the group is never closed",
     'value="(unclosed"'),
    ({"kind": "budget", "domain": "a.dk", "max_objects": "many"}, "max_objects",
     "Max objects: must be a whole number, not the text &#39;many&#39;", 'value="many"'),
    ({"kind": "budget", "domain": "a.dk"}, "max_objects", "give max_objects or max_bytes", "<option selected>a.dk"),
    ({"kind": "add_uris", "uris": "http://a.dk/\n\nftp://a.dk/x\n"}, "uris[1]",
     "URIs, line 3: &#39;ftp://a.dk/x&#39; is not an http or https URL", "http://a.dk/\n\nftp://a.dk/x\n</textarea>"),
    ({"kind": "politeness", "min_delay_ms": "900", "max_delay_ms": "100"}, "min_delay_ms",
     "must not be more than max_delay_ms (900 &gt; 100)", 'value="900"'),
])
def test_a_refused_form_is_shown_again_with_the_error_naming_its_field(crawl, login, webui_engine, form, field,
                                                                        words, kept):
    client = login("operator")
    response = client.post(f"/status/jobs/{crawl.job_id}/changes", data={**form, "csrf_token": client.csrf})
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    error = re.search(r'<span class="refusal" role="alert">(.*?)</span>', page)
    assert error and words in error.group(1), page[page.find("refusal"):][:400]
    own = field.partition("[")[0]  # uris[1] is a line of the field uris
    assert re.search(rf'name="{own}"[^>]*aria-invalid="true"[^>]*>(?:[^<]*</textarea>)?<span class="refusal"', page), \
        "the refusal stands right beside the field it names"
    assert kept in form_of(page, error.group(0))
    summary = re.search(r'<p class="flash error">(.*?)</p>', page, re.S)
    assert summary and words in summary.group(1), "and at the top of the page"
    assert stored(webui_engine, crawl.job_id) == []


def test_a_job_that_ended_lists_its_changes_without_buttons(crawl, login, webui_engine):
    client = login("operator")
    client.post(f"/status/jobs/{crawl.job_id}/control", data={"action": "stop", "csrf_token": client.csrf})
    with webui_engine.begin() as conn:
        JobChangeRepository(conn).settle(crawl.job_id, 1, "applied", "", utcnow(), crawl.attempt)
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == crawl.job_id).values(status=int(JobStatus.DONE)))
    page = client.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    assert "Changes made while it ran" in page and 'data-state="applied"' in page
    assert not any(f">{label}</button>" in page for label in BUTTONS) and "Make a change" not in page
    refused = client.post(f"/status/jobs/{crawl.job_id}/changes",
                          data={"kind": "delete_queued", "regex": "x", "csrf_token": client.csrf})
    assert refused.status_code == 409
    assert "is DONE, not STARTED" in refused.get_data(as_text=True)


def test_a_job_of_many_domains_has_its_domain_typed(crawl, page_of, monkeypatch):
    monkeypatch.setattr("webui.status.jobs.MAX_DOMAIN_OPTIONS", 1)
    _, page = page_of("operator", crawl.job_id)
    assert 'placeholder="one of the job\'s 2 domains"' in page or "one of the job&#39;s 2 domains" in page


def test_the_page_polls_the_live_view_and_sends_its_buttons_to_the_api(crawl, page_of):
    _, page = page_of("operator", crawl.job_id)
    assert f'data-live-url="/api/v1/jobs/{crawl.job_id}/live"' in page
    assert f'data-control-url="/api/v1/jobs/{crawl.job_id}/control"' in page
