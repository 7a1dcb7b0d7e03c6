"""Crawler traps in the engine process: a trap that backtracks catastrophically in Java or Python's ``re``
(``(.|.)*``) runs in RE2, so the engine answers its REST API all through the crawl and the crawl ends; a trap
needing lookaround or backreferences runs with a time budget per URL (said in job.log); any other trap RE2
cannot express fails the build naming it, rather than being skipped.

The engine runs as ``harvestsuite engine`` over HTTPS with the test site's hosts on loopback, driven
through harvester.heritrix as the harvest controller drives it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestdef.errors import HeritrixError
from harvester.engine.config import ScopeRule
from harvester.engine.frontier.scope import Scope
from scheduler.jobgen.building import domain_scoped_trap
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import TestSite

HOST = "www.kulturarv.dk"
# Python's re.fullmatch takes 2**len(url) steps on every URL that is not /page/3: hours for one URL.
REDOS_TRAP = "(.|.)*/page/3"


@pytest.fixture
def engine_process(tmp_path: Path, test_site: TestSite) -> Iterator[EngineProcess]:
    with EngineProcess(tmp_path / "jobs", hosts_file=test_site.write_hosts_file(tmp_path / "hosts.txt")) as process:
        yield process


@pytest.mark.parametrize("trap", [REDOS_TRAP, domain_scoped_trap("kulturarv.dk", REDOS_TRAP)],
                         ids=["as given", "as job generation writes a domain's trap"])
def test_a_catastrophic_trap_leaves_the_engine_answering_while_it_crawls(engine_process, test_site, trap):
    client = engine_process.client()
    write_job(engine_process.jobs_dir / "redos", [test_site.url(HOST, "/")],
              cxml=crawler_beans(max_hops=3, reject_regex=trap))
    client.rescan()
    assert client.build("redos").status_description == "Ready"
    client.launch("redos")
    client.wait_for("redos", lambda status: status.crawl_controller_state == "PAUSED", timeout=30, poll_interval=0.1)
    client.unpause("redos")
    # Every status request is answered (the client gives up after 30 s, failing the test): Python's re on
    # this trap would hold the engine's one interpreter for hours on the first URL, answering nothing, and
    # the crawl would never end. The real process gets a generous 120 s to finish its small crawl.
    deadline = time.monotonic() + 120
    while True:
        status = client.job_status("redos")
        assert "redos" in client.engine_status().job_names()
        if status.is_finished or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert status.crawl_exit_status == "FINISHED", status.status_description
    assert status.uri_totals_report.downloaded_uri_count > 5
    crawled = [line.split()[3] for line in (engine_process.jobs_dir / "redos" / "latest" / "logs" / "crawl.log")
               .read_text(encoding="utf-8").splitlines() if len(line.split()) > 3]
    # the trap still does its work: /page/3 rejected, its neighbours fetched
    assert test_site.url(HOST, "/page/1") in crawled and test_site.url(HOST, "/page/2") in crawled
    assert not any(url.endswith("/page/3") for url in crawled)


@pytest.mark.parametrize("trap, reason", [
    (r".*\p{InGreek}.*", r"'\p{InGreek}' at column 3: RE2 has no Unicode blocks"),
    (r".*[a[^b]].*", "a negated class inside a class at column 5"),
])
def test_a_trap_re2_cannot_run_fails_the_build_naming_it(engine_process, trap, reason):
    client = engine_process.client()
    write_job(engine_process.jobs_dir / "refused", ["http://www.kulturarv.dk/"], cxml=crawler_beans(reject_regex=trap))
    client.rescan()
    with pytest.raises(HeritrixError, match="build failed"):
        client.build("refused")
    status = client.job_status("refused")
    assert status.status_description == "Unbuilt"
    job_log = (engine_process.jobs_dir / "refused" / "job.log").read_text(encoding="utf-8")
    assert "Build failed" in job_log and "(MatchesListRegexDecideRule): regex 1" in job_log
    assert reason in job_log


def test_a_trap_needing_backreferences_runs_with_a_time_budget_said_in_the_job_log(engine_process, test_site):
    client = engine_process.client()
    # NetarchiveSuite's trap of a path segment repeated: Heritrix runs it, RE2 cannot
    trap = r"^[^?]*(/[^/]{3,}(?=/))[^?]*\1(?=/)[^?]*\1(?=/)[^?]*\1(?=/|$).*"
    write_job(engine_process.jobs_dir / "nas", [test_site.url(HOST, "/")],
              cxml=crawler_beans(max_hops=2, reject_regex=trap))
    client.rescan()
    assert client.build("nas").status_description == "Ready"
    job_log = (engine_process.jobs_dir / "nas" / "job.log").read_text(encoding="utf-8")
    assert "regex 1 " in job_log and "runs in a backtracking matcher with 50 ms per URL" in job_log


@pytest.mark.timeout(60)
def test_a_backtracking_trap_out_of_time_rejects_and_never_accepts():
    trap = r".*/(a|aa)+(?=b)b"
    long_url = "http://www.kulturarv.dk/" + "a" * 40
    rejecting = Scope([ScopeRule("AcceptDecideRule"), ScopeRule("MatchesListRegexDecideRule", "REJECT",
                                                                patterns=(trap,))], [])
    # out of its budget (a match would have to try every way of splitting the 40 a's): not accepted, since the
    # same trap matching nothing would let the URL through
    assert rejecting.decide(long_url, "") == (False, False)
    assert rejecting.decide("http://www.kulturarv.dk/aab", "") == (False, False)
    assert rejecting.decide("http://www.kulturarv.dk/page/1", "") == (True, False)
    accepting = Scope([ScopeRule("RejectDecideRule", "REJECT"), ScopeRule("MatchesRegexDecideRule", "ACCEPT",
                                                                          patterns=(trap,))], [])
    assert accepting.decide(long_url, "") == (False, False)
    assert accepting.decide("http://www.kulturarv.dk/aab", "") == (True, False)
