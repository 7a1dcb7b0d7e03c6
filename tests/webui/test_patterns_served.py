"""User-given patterns against ``harvestsuite webui run`` (waitress, threads): a ReDoS crawl-log search reads
the whole crawl log (RE2: no time limit reached, every match found) and a ReDoS crawler trap is taken (a
lookahead refused), while the same server answers other pages; a search that runs out of time answers with
what it found and where it stopped."""

from __future__ import annotations

import html
import http.cookiejar
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harvestdef.db.engine import open_engine
from harvestdef.model.status import JobStatus
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from tests.webui.browser import ServedWebui
from tests.webui.conftest import PASSWORD
from tests.webui.test_jobs import CRAWL_LOG, seed

TIMEOUT_MS = 200
BIG_LOG_LINES = 40_000          # about 0.4 s of reading on the 2-core test machine: more than the timeout
# A line Python's backtracking re needs 2**80 steps for with (.|.)*X, and (a+)+$ nearly as many.
REDOS_LINE = ("2026-03-01T10:00:04.000Z   200         42 http://www.alpha.dk/" + "a" * 60
              + "! L http://www.alpha.dk/ text/html #005 - - -\n")


class Browser:
    """A logged-in session of the served web UI (cookies)."""

    def __init__(self, url: str, role: str) -> None:
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        login = self.get("/login")
        token = re.search(r'name="csrf_token" value="([^"]+)"', login).group(1)
        form = urllib.parse.urlencode({"name": role, "password": PASSWORD, "csrf_token": token}).encode()
        with self.opener.open(f"{url}/login", data=form, timeout=30) as response:
            assert "/login" not in response.url, "the login was refused"

    def get(self, path: str) -> str:
        """The page (an error status raises); a server that does not answer within 30 s fails the test."""
        with self.opener.open(self.url + path, timeout=30) as response:
            return html.unescape(response.read().decode("utf-8"))


def metadata_warc(directory: Path, job_id: int, crawl_log: str) -> None:
    log = directory / f"logs-{job_id}" / "crawl.log"   # the metadata record is named after the file
    log.parent.mkdir()
    log.write_text(crawl_log, encoding="utf-8")
    info = MetadataInfo(job_id=job_id, harvest_id=1, harvest_num=1, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="test", hostname="h", ip="127.0.0.1")
    write_metadata_warc(directory / "archive" / "1" / str(job_id) / f"{job_id}-metadata-1.warc.gz", info, [], [],
                        [log], [])


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> ServedWebui:
    directory = tmp_path_factory.mktemp("served")
    with ServedWebui(directory, users=("archivist", "curator"),
                     settings={"harvestsuite.webui.crawlLogSearchTimeoutMs": str(TIMEOUT_MS)}) as webui:
        engine = open_engine(f"sqlite:///{directory / 'harvest.db'}")
        try:
            seed(engine, [JobStatus.DONE, JobStatus.DONE])
        finally:
            engine.dispose()
        metadata_warc(directory, 1, CRAWL_LOG + REDOS_LINE)
        big = "".join(f"2026-03-01T10:00:00.000Z   200       1234 http://www.alpha.dk/page/{number} - - "
                      f"text/html #{number:06d} - - -\n" for number in range(BIG_LOG_LINES))
        metadata_warc(directory, 2, big)
        yield webui


# what each of the other pages is, by its title
TITLES = {"/login": "<title>Log in · HarvestSuite</title>", "/status/": "<title>Harvest status · HarvestSuite</title>",
          "/status/jobs/1": "<title>Job 1 · HarvestSuite</title>"}


def meanwhile(call: Callable[[], Any], browser: Browser, other_paths: list[str]) -> Any:
    """Run ``call`` on a thread of its own and, meanwhile, get the other pages one after another; the call's
    answer. Each other page must be answered, and be the page asked for: a server that a pattern froze
    answers none of them (each request gives up after 30 s, failing the test)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["answer"] = call()
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            outcome["error"] = exc

    running = threading.Thread(target=run)
    running.start()
    others = [browser.get(path) for path in other_paths]
    running.join(timeout=60)
    assert outcome, "no answer within 60 s"
    if "error" in outcome:
        raise outcome["error"]
    for path, page in zip(other_paths, others, strict=True):
        assert TITLES[path] in page, (path, page[:500])
    return outcome["answer"]


def while_searching(browser: Browser, search_path: str, other_paths: list[str]) -> str:
    return meanwhile(lambda: browser.get(search_path), browser, other_paths)


def search_summary(page: str) -> str:
    """The line under the search form that says what the search found and why it stopped, if it did."""
    summary = re.search(r'<p class="muted">(\d+ matching lines?[^<]*)</p>', page)
    assert summary, page[page.find("Search the crawl log"):][:2000]
    return summary.group(1)


@pytest.mark.parametrize("pattern, matches", [
    ("(.|.)*X", []),
    ("(a+)+$", []),
    (r"(a+)+!", ["#005"]),
    (r"(\w+\s?)*404", ["#002"]),
])
def test_a_redos_search_reads_the_whole_crawl_log_while_other_pages_are_served(served, pattern, matches):
    browser = Browser(served.url, "archivist")
    query = urllib.parse.urlencode({"regex": pattern})
    page = while_searching(browser, f"/status/jobs/1?{query}", ["/login", "/status/jobs/1"] * 3)
    # RE2 read every line to the end: no time limit reached, no error, every match found (a backtracking
    # matcher would take 2**80 steps on the ReDoS line: no answer at all, or a search cut at its time limit)
    assert search_summary(page) == f"{len(matches)} matching line{'' if len(matches) == 1 else 's'}.", page
    assert 'class="error-message"' not in page
    assert all(mark in page for mark in matches)


def test_a_search_out_of_time_says_where_it_stopped_and_the_server_goes_on(served):
    browser = Browser(served.url, "archivist")
    query = urllib.parse.urlencode({"regex": "#0399", "domain": "alpha.dk"})
    page = while_searching(browser, f"/status/jobs/2?{query}", ["/login", "/status/"] * 3)
    stopped = re.fullmatch(r"(\d+) matching lines?, search stopped after ([\d.]+) s at line (\d+) \(time limit\)\.",
                           search_summary(page))
    assert stopped, search_summary(page)
    found, after, line = int(stopped.group(1)), float(stopped.group(2)), int(stopped.group(3))
    # stopped at its deadline (not before it), before the end of the crawl log, with what it had found by then
    assert 0 < line < BIG_LOG_LINES and after >= TIMEOUT_MS / 1000
    assert found == len([n for n in range(line) if f"#{n:06d}".startswith("#0399")])


def test_a_pattern_re2_cannot_run_is_refused_with_its_reason(served):
    browser = Browser(served.url, "archivist")
    page = browser.get("/status/jobs/1?" + urllib.parse.urlencode({"regex": r"(a)\1"}))
    assert "not a regular expression the search can run: backreference \\1 at column 4" in page
    page = browser.get("/status/jobs/1?" + urllib.parse.urlencode({"regex": "a" * 201}))
    assert "201 characters long (at most 200)" in page


def api_call(served: ServedWebui, token: str, method: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(served.url + path, data=json.dumps(body).encode(), method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_redos_trap_is_taken_and_a_lookahead_refused_while_other_pages_are_served(served):
    token = served.harvestsuite("users", "token", "curator").strip().split()[-1]
    status, created = api_call(served, token, "POST", "/api/v1/harvests", {
        "type": "selective", "name": "redos", "schedule": "Once_a_day",
        "configurations": [{"domain": "alpha.dk", "configuration": "defaultconfig"}]})
    assert status == 201, created
    browser = Browser(served.url, "archivist")
    others_paths = ["/login", "/status/jobs/1"] * 3
    status, answer = meanwhile(lambda: api_call(
        served, token, "PATCH", "/api/v1/harvests/redos", {"edition": created["edition"], "crawlertraps": "(.|.)*X"}),
        browser, others_paths)
    assert status == 200 and answer["crawlertraps"] == ["(.|.)*X"], answer
    status, refused = meanwhile(lambda: api_call(
        served, token, "PATCH", "/api/v1/harvests/redos",
        {"edition": answer["edition"], "crawlertraps": "(.|.)*X\n.*(?=X)"}), browser, others_paths)
    assert status == 400 and refused["error"]["field"] == "crawlertraps", refused
    assert "line 2" in refused["error"]["message"] and "lookahead" in refused["error"]["message"]
