"""The web UI in Debian's chromium, served by ``harvestsuite webui run``: what a person sees and does.

Each test that changes data gets its own web UI on a fresh database (tests/webui/browser.py); the login
tests, which change none, share one with a user of every role. Every test has a fresh browser context and
asserts what the page shows; screenshots go to the test's tmp_path and /tmp/harvestsuite-screens.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.webui.browser import ServedWebui, log_in, screenshot

pytestmark = pytest.mark.timeout(300)



@pytest.fixture(scope="module")
def every_role(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedWebui]:
    """One web UI with a user of every role, for the login tests: they change no data."""
    with ServedWebui(tmp_path_factory.mktemp("webui")) as served:
        yield served


@pytest.fixture
def webui(tmp_path: Path) -> Iterator[ServedWebui]:
    """A web UI of its own on a fresh database, with a curator, for a test that changes data."""
    with ServedWebui(tmp_path, users=("curator",)) as served:
        yield served


def _page(browser: Any, webui: ServedWebui) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=webui.url)
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def page(browser: Any, webui: ServedWebui) -> Iterator[Any]:
    yield from _page(browser, webui)


@pytest.fixture
def login_page(browser: Any, every_role: ServedWebui) -> Iterator[Any]:
    yield from _page(browser, every_role)


@pytest.mark.parametrize("role", ["curator", "admin"])
def test_logging_in_shows_the_user_and_role(login_page, every_role, tmp_path, role):
    login_page.goto("/")
    assert login_page.url.startswith(f"{every_role.url}/login"), "a page without a login goes to the login form"
    screenshot(login_page, tmp_path, "login")
    log_in(login_page, every_role.url, role)
    assert login_page.url == f"{every_role.url}/"
    who = login_page.locator("header.top .who")
    assert who.locator("span").inner_text().split() == [role, f"({role})"]
    assert login_page.get_by_role("heading", name="Overview").is_visible()
    assert f"Signed in as {role}." in login_page.locator("main").inner_text()
    screenshot(login_page, tmp_path, f"home-{role}")


def test_a_wrong_password_shows_the_error_and_stays_logged_out(login_page, every_role, tmp_path):
    log_in(login_page, every_role.url, "curator", "not the password")
    error = login_page.locator(".flash.error")
    assert error.inner_text() == "Unknown user or wrong password."
    assert login_page.get_by_role("heading", name="Log in").is_visible()
    assert login_page.locator("header.top .who").count() == 0
    screenshot(login_page, tmp_path, "login-wrong-password")
    login_page.goto("/")
    assert login_page.url.startswith(f"{every_role.url}/login")


def test_logging_out_ends_the_session(login_page, every_role, tmp_path):
    log_in(login_page, every_role.url, "operator")
    assert login_page.locator("header.top .who span").inner_text().startswith("operator")
    login_page.get_by_role("button", name="Log out").click()
    login_page.wait_for_load_state()
    assert login_page.url.startswith(f"{every_role.url}/login")
    assert login_page.locator("header.top .who").count() == 0
    screenshot(login_page, tmp_path, "logged-out")
    login_page.goto("/")
    assert login_page.url.startswith(f"{every_role.url}/login"), "the session cookie no longer logs in"


# ------------------------------------------------------------------ the main flows
def define_selective_harvest(page: Any, harvest: str, schedule: str, domains: list[str]) -> None:
    """As a curator: a weekly schedule, the domains, and a selective harvest of them on that schedule."""
    page.goto("/definitions/schedules")
    form = page.locator("form[action$='/definitions/schedules']")
    form.get_by_label("Name", exact=True).fill(schedule)
    form.get_by_label("Comments").fill("Mondays at 02:30")
    form.get_by_label("Every").fill("1")
    form.get_by_label("Unit").select_option("WEEKLY")
    form.get_by_label("At a fixed time").check()
    form.get_by_label("Time (in the scheduler").fill("02:30")
    form.get_by_label("Day of week").select_option("2")
    form.get_by_role("button", name="Create schedule").click()
    page.wait_for_load_state()
    assert page.locator(".flash").first.inner_text() == f"Schedule {schedule} created."
    page.goto("/definitions/domains/new")
    page.get_by_label("Or a list, one name a line").fill("\n".join(domains))
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    assert f"Created: {len(domains)}," in page.locator(".card").first.inner_text()
    page.goto("/definitions/harvests/new/selective")
    page.get_by_label("Name").fill(harvest)
    page.get_by_label("Comments").fill("culture sites, weekly")
    page.get_by_label("Schedule").select_option(schedule)
    page.get_by_label("Domains, one a line").fill("\n".join(domains))
    page.get_by_label("Active").check()
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()


def finish_job(webui: ServedWebui, job_id: int, objects: int, size: int) -> None:
    """What a harvest controller's DONE report leaves behind: the job DONE and one historyinfo row per domain."""
    from harvestdef.db.engine import open_engine
    from harvestdef.model.status import JobStatus, StopReason
    from harvestdef.repositories.history import DomainFigures, HistoryWriter
    from harvestdef.repositories.jobs import JobRepository

    engine = open_engine(f"sqlite:///{webui.directory / 'harvest.db'}")
    try:
        with engine.begin() as conn:
            jobs = JobRepository(conn)
            for before, after in ((JobStatus.NEW, JobStatus.SUBMITTED), (JobStatus.SUBMITTED, JobStatus.STARTED),
                                  (JobStatus.STARTED, JobStatus.DONE)):
                jobs.change_status(job_id, before, after, attempt_id=None)
            job = jobs.get(job_id)
            domains = {config["domain"]: DomainFigures(objects, size, StopReason.DOWNLOAD_COMPLETE, objects // 2,
                                                        size // 4, objects - objects // 2, size - size // 4)
                       for config in jobs.configurations(job_id)}
            HistoryWriter(conn).record_job(job, JobStatus.DONE, StopReason.DOWNLOAD_COMPLETE, domains)
    finally:
        engine.dispose()


def generated_job(webui: ServedWebui, harvest: str) -> int:
    """``harvestsuite jobgen generate``: the id of the one job it made (from ``harvestsuite jobs list``)."""
    webui.harvestsuite("jobgen", "generate", harvest)
    listed = webui.harvestsuite("jobs", "list", "--status", "NEW")
    ids = [int(line.split()[0]) for line in listed.splitlines() if line.split() and line.split()[0].isdigit()]
    assert ids, f"no NEW job after jobgen generate {harvest}:\n{listed}"
    return max(ids)


_UNITS = {"bytes": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}


def as_number(text: str) -> int:
    """A figure as the page shows it, "9000000", "9,000,000" or "9.0 MB", as a number (sizes to 3 digits)."""
    amount, _, unit = text.strip().replace(",", "").partition(" ")
    return round(float(amount) * _UNITS[unit or "bytes"])


def chart_points(chart: Any) -> list[tuple[str, str, int]]:
    """A bar chart's data points from its SVG bars' titles ("LABEL: SERIES VALUE"): (label, series, value)."""
    points = []
    for title in chart.locator("svg rect title").all_text_contents():
        label, _, rest = title.partition(": ")
        series, _, value = rest.partition(" ")
        points.append((label, series, as_number(value)))
    return points


def test_uploading_a_domain_file_adds_its_domains(page, webui, tmp_path):
    log_in(page, webui.url, "curator")
    page.get_by_role("link", name="Definitions").click()
    page.wait_for_load_state()
    assert page.url == f"{webui.url}/definitions/"
    page.goto("/definitions/domains/new")
    upload = tmp_path / "domains.txt"
    upload.write_text("# new culture sites\nkulturarv.dk\nhttps://www.kulturnaut.dk/kalender\nbad..name\n",
                      encoding="utf-8")
    page.get_by_label("Or a file").set_input_files(str(upload))
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    refused = page.locator("#refused-lines")
    assert refused.is_visible()
    assert refused.locator("table tbody tr").first.inner_text().split("\t")[:2] == ["4", "bad..name"]
    screenshot(page, tmp_path, "domains-refused")
    upload.write_text("# new culture sites\nkulturarv.dk\nhttps://www.kulturnaut.dk/kalender\n", encoding="utf-8")
    page.get_by_label("Or a file").set_input_files(str(upload))
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    imported = page.locator(".card", has=page.get_by_role("heading", name="File imported"))
    assert imported.is_visible()
    assert "https://www.kulturnaut.dk/kalender was taken as kulturnaut.dk" in imported.inner_text()
    screenshot(page, tmp_path, "domains-uploaded")
    page.goto("/definitions/domains")
    page.get_by_label("Search for").fill("kultur*")
    page.get_by_role("button", name="Search").click()
    page.wait_for_load_state()
    names = page.locator("table tbody tr td:first-child").all_inner_texts()
    assert names == ["kulturarv.dk", "kulturnaut.dk"]
    screenshot(page, tmp_path, "domains-search")


def test_defining_a_selective_harvest_with_a_schedule(page, webui, tmp_path):
    log_in(page, webui.url, "curator")
    define_selective_harvest(page, "culture-weekly", "mondays-0230", ["kb.dk", "kunst.dk"])
    assert page.url == f"{webui.url}/definitions/harvests/culture-weekly"
    assert page.get_by_role("heading", level=1).inner_text() == "Selective harvest culture-weekly"
    assert page.locator(".flash").inner_text() == "Harvest culture-weekly created."
    assert page.locator("main .card p").first.inner_text().startswith("Active · 0 runs")
    rows = page.locator("table").first.locator("tr:has(td)").all_inner_texts()
    assert [row.split("\t")[:2] for row in rows] == [["kb.dk", "defaultconfig"], ["kunst.dk", "defaultconfig"]]
    assert all([cell.strip() for cell in row.split("\t")[2:]] == ["its only configuration", "Remove"] for row in rows)
    changes = page.locator("table").last.locator("tr:has(td)").all_inner_texts()
    assert changes and all(row.split("\t")[1] == "curator" for row in changes)
    assert "Name: culture-weekly" in changes[-1] and "Schedule: mondays-0230" in changes[-1]
    assert page.get_by_label("Schedule").input_value() == "mondays-0230"
    screenshot(page, tmp_path, "harvest-defined")
    page.locator("table").first.locator("tr", has_text="kunst.dk").get_by_role("button", name="Remove").click()
    page.wait_for_load_state()
    flashed = page.locator(".flash").inner_text()
    assert flashed == "Configuration kunst.dk/defaultconfig removed from harvest culture-weekly."
    rows = page.locator("table").first.locator("tr:has(td)").all_inner_texts()
    assert [row.split("\t")[:2] for row in rows] == [["kb.dk", "defaultconfig"]]
    screenshot(page, tmp_path, "harvest-configuration-removed")
    page.goto("/definitions/schedules")
    schedule = page.locator("table tr", has=page.get_by_role("link", name="mondays-0230"))
    assert schedule.inner_text().split("\t")[1:3] == ["every week on Monday at 02:30", "as soon as possible"]
    screenshot(page, tmp_path, "schedules")


def test_opening_a_job_shows_its_harvest_and_domains(page, webui, tmp_path):
    log_in(page, webui.url, "curator")
    define_selective_harvest(page, "culture-weekly", "mondays-0230", ["kb.dk", "kunst.dk"])
    job_id = generated_job(webui, "culture-weekly")
    page.goto("/")
    page.get_by_role("link", name="Harvest status").click()
    row = page.locator("table tbody tr", has=page.get_by_role("link", name=str(job_id), exact=True))
    assert row.locator(".status").inner_text() == "NEW"
    screenshot(page, tmp_path, "jobs")
    row.locator(f'a[href="/status/jobs/{job_id}"]').click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", level=1).inner_text() == f"Job {job_id} NEW"
    assert "Harvest culture-weekly, run 1" in page.locator("main .card").first.inner_text()
    configurations = page.locator("table").first.locator("tbody tr").all_inner_texts()
    assert [row.split("\t")[:2] for row in configurations] == [["kb.dk", "defaultconfig"],
                                                              ["kunst.dk", "defaultconfig"]]
    screenshot(page, tmp_path, "job")


def test_a_domains_history_and_its_harvests_chart(page, webui, tmp_path):
    log_in(page, webui.url, "curator")
    define_selective_harvest(page, "culture-weekly", "mondays-0230", ["kb.dk", "kunst.dk"])
    for objects, size in ((120, 4_000_000), (300, 9_000_000)):
        finish_job(webui, generated_job(webui, "culture-weekly"), objects, size)
    page.goto("/history/")
    page.get_by_label("Domain").fill("kb.dk")
    page.get_by_label("Domain").press("Enter")
    page.wait_for_load_state()
    assert page.get_by_role("heading", level=1).inner_text() == "Harvest history of kb.dk"
    rows = [row.split("\t") for row in page.locator("table tbody tr").all_inner_texts()]
    assert [(row[1], row[2], row[5], as_number(row[6]), as_number(row[7])) for row in rows] == [
        ("culture-weekly", "2", "DOWNLOAD_COMPLETE", 300, 9_000_000),
        ("culture-weekly", "1", "DOWNLOAD_COMPLETE", 120, 4_000_000)]
    screenshot(page, tmp_path, "history-domain")
    page.get_by_role("link", name="culture-weekly").first.click()
    page.wait_for_load_state()
    chart = page.locator("figure.chart", has=page.get_by_text("Bytes per run", exact=True))
    # two domains of 4,000,000 and then of 9,000,000 bytes
    assert chart_points(chart) == [("1", "bytes", 8_000_000), ("2", "bytes", 18_000_000)]
    heights = [float(h) for h in chart.locator("svg rect").evaluate_all(
        "rects => rects.map(rect => rect.getAttribute('height'))")]
    assert heights[1] == 200.0 and heights[0] == pytest.approx(200 * 8 / 18, abs=0.1)
    objects = page.locator("figure.chart", has=page.get_by_text("Objects per run", exact=True))
    assert chart_points(objects) == [("1", "objects", 240), ("2", "objects", 600)]
    screenshot(page, tmp_path, "history-harvest")


@pytest.fixture
def admin_webui(tmp_path: Path) -> Iterator[ServedWebui]:
    """A web UI of its own with an admin, for a test that defines extended fields too."""
    with ServedWebui(tmp_path, users=("admin",)) as served:
        yield served


@pytest.fixture
def admin_page(browser: Any, admin_webui: ServedWebui) -> Iterator[Any]:
    yield from _page(browser, admin_webui)


def test_extended_fields_on_a_domain_and_the_alias_summary(admin_page, admin_webui, tmp_path):
    """An admin defines domain fields; the domain page edits their values and lists the change; an alias
    shows on the alias summary, and the TLD statistics count the domains."""
    page = admin_page
    log_in(page, admin_webui.url, "admin")
    for name, datatype, options in (("Owner", "STRING", ""), ("Kind", "SELECT", "library\nmuseum")):
        page.goto("/definitions/extendedfields")
        form = page.locator("form[action$='/definitions/extendedfields']")
        form.get_by_label("For").select_option("DOMAINS")
        form.get_by_label("Name").fill(name)
        form.get_by_label("Type").select_option(datatype)
        form.get_by_label("Options (select fields), one a line").fill(options)
        form.get_by_role("button", name="Define field").click()
        page.wait_for_load_state()
    page.goto("/definitions/domains/new")
    page.get_by_label("Or a list, one name a line").fill("kb.dk\nkglbib.dk")
    page.get_by_role("button", name="Create").click()
    page.wait_for_load_state()
    page.goto("/definitions/domains/kb.dk")
    fields = page.locator("form[action$='/extendedfields']")
    fields.get_by_label("Owner").fill("Royal Danish Library")
    fields.get_by_label("Kind").select_option("library")
    fields.get_by_role("button", name="Save extended fields").click()
    page.wait_for_load_state()
    assert page.locator(".flash").first.inner_text() == "Extended fields saved."
    assert page.locator("form[action$='/extendedfields']").get_by_label("Owner").input_value() == \
        "Royal Danish Library"
    history = page.locator("table").last.inner_text()
    assert "insert extended field Owner" in history and "Royal Danish Library" in history
    screenshot(page, tmp_path, "domain-extended-fields")
    page.goto("/definitions/domains/kglbib.dk")
    page.get_by_label("Alias of (empty: none)").fill("kb.dk")
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_load_state()
    page.goto("/definitions/aliases")
    row = page.locator("table tbody tr").first.inner_text()
    assert "kb.dk" in row and "kglbib.dk" in row and "valid" in row
    screenshot(page, tmp_path, "alias-summary")
    page.goto("/definitions/tlds")
    assert page.locator("table tbody tr").first.inner_text().split() == ["dk", "2"]
    page.goto("/definitions/unused/seedlists")
    assert "Seed lists (0)" in page.locator("main").inner_text()
