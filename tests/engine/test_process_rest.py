"""The engine's REST API as Heritrix answers it, driven by the curl calls of Heritrix 3's REST API
documentation, in the documentation's order: create, PUT the cxml, build, launch, unpause, pause twice,
checkpoint, terminate twice, teardown, copyTo. Then the resources the status advertises (reports live,
jobsdir, anypath), the script resource's refusal, the log tails and the clocks that stop at crawl end."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from tests.engine.engine_process import PASSWORD, USER, EngineProcess, crawler_beans
from tests.engine.site import TestSite

HOST = "www.kulturarv.dk"
SLOW_CRAWL = crawler_beans(max_hops=25, min_delay_ms=150, reject_regex="^nothing-matches-this$")


@pytest.fixture
def engine_process(tmp_path: Path, test_site: TestSite) -> Iterator[EngineProcess]:
    hosts_file = test_site.write_hosts_file(tmp_path / "hosts.txt")
    with EngineProcess(tmp_path / "jobs", hosts_file=hosts_file) as process:
        yield process


def curl(process: EngineProcess, path: str, *args: str) -> tuple[int, str]:
    """curl as Heritrix's documentation calls it (-k -u admin:pw --anyauth --location); (last status, body)."""
    command = ["curl", "-s", "-k", "-u", f"{USER}:{PASSWORD}", "--anyauth", "--location",
               "-w", "\n%{http_code}", *args, f"{process.base_url}{path}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    body, _, code = done.stdout.rpartition("\n")
    return int(code), body


def action(process: EngineProcess, job: str, form: str) -> etree._Element:
    code, body = curl(process, f"/engine/job/{job}", "-d", form, "-H", "Accept: application/xml")
    assert code == 200, body
    return etree.fromstring(body.encode("utf-8"))


def state_of(process: EngineProcess, job: str) -> etree._Element:
    code, body = curl(process, f"/engine/job/{job}", "-H", "Accept: application/xml")
    assert code == 200, body
    return etree.fromstring(body.encode("utf-8"))


def wait_state(process: EngineProcess, job: str, *states: str, timeout: float = 60) -> etree._Element:
    deadline = time.monotonic() + timeout
    while True:
        job_xml = state_of(process, job)
        if job_xml.findtext("crawlControllerState") in states:
            return job_xml
        assert time.monotonic() < deadline, etree.tostring(job_xml)[:2000]
        time.sleep(0.1)


def test_heritrix_documented_curl_calls_in_order(engine_process: EngineProcess, test_site: TestSite,
                                                 tmp_path: Path) -> None:
    code, body = curl(engine_process, "/engine", "-d", "createpath=myjob&action=create",
                      "-H", "Accept: application/xml")
    assert code == 200 and "myjob" in [job.findtext("shortName")
                                       for job in etree.fromstring(body.encode()).find("jobs")]
    cxml = tmp_path / "my-crawler-beans.cxml"
    cxml.write_text(SLOW_CRAWL, encoding="utf-8")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(test_site.url(HOST, "/") + "\n", encoding="utf-8")
    # PUT of jobdir files, digest auth first (curl --anyauth learns the scheme from the 401).
    for local, remote in ((cxml, "crawler-beans.cxml"), (seeds, "seeds.txt")):
        code, _ = curl(engine_process, f"/engine/job/myjob/jobdir/{remote}", "-T", str(local))
        assert code == 200
    assert (engine_process.jobs_dir / "myjob" / "crawler-beans.cxml").read_text() == SLOW_CRAWL
    assert action(engine_process, "myjob", "action=build").findtext("statusDescription") == "Ready"
    launched = action(engine_process, "myjob", "action=launch")
    assert launched.findtext("launchCount") == "1"
    paused = wait_state(engine_process, "myjob", "PAUSED")  # pauseAtStart: Heritrix's default
    assert paused.findtext("statusDescription") == "Active: PAUSED"
    action(engine_process, "myjob", "action=unpause")
    wait_state(engine_process, "myjob", "RUNNING")
    action(engine_process, "myjob", "action=pause")
    wait_state(engine_process, "myjob", "PAUSED")
    # A second pause has nothing to do: 303 to the job page as Heritrix answers, the reason in job.log.
    again = action(engine_process, "myjob", "action=pause")
    assert again.findtext("crawlControllerState") == "PAUSED"
    assert "'pause' is not available while Active (PAUSED)" in again.find("jobLogTail")[0].text
    checkpointed = action(engine_process, "myjob", "action=checkpoint")
    assert len(checkpointed.find("checkpointFiles")) == 1
    action(engine_process, "myjob", "action=terminate")
    finished = wait_state(engine_process, "myjob", "FINISHED")
    assert finished.findtext("crawlExitStatus") == "ABORTED"
    assert action(engine_process, "myjob", "action=terminate").findtext("crawlControllerState") == "FINISHED"
    assert action(engine_process, "myjob", "action=teardown").findtext("statusDescription") == "Unbuilt"
    copied = action(engine_process, "myjob", "copyTo=mycopy&asProfile=on")
    assert copied.findtext("shortName") == "mycopy" and copied.findtext("isProfile") == "true"
    copy_dir = engine_process.jobs_dir / "mycopy"
    assert (copy_dir / "profile-crawler-beans.cxml").read_text() == SLOW_CRAWL
    assert (copy_dir / "seeds.txt").is_file() and not (copy_dir / "checkpoints").exists()
    plain = action(engine_process, "myjob", "copyTo=plaincopy")
    assert plain.findtext("isProfile") == "false" and "launch" not in [
        value.text for value in action(engine_process, "mycopy", "action=build").find("availableActions")]


def test_put_needs_digest_credentials_before_the_body(engine_process: EngineProcess, tmp_path: Path) -> None:
    engine_process.client().create_job("guarded")
    upload = tmp_path / "crawler-beans.cxml"
    upload.write_text("<beans/>", encoding="utf-8")
    done = subprocess.run(["curl", "-s", "-k", "-o", "/dev/null", "-D", "-", "-T", str(upload),
                           f"{engine_process.base_url}/engine/job/guarded/jobdir/crawler-beans.cxml"],
                          capture_output=True, text=True, timeout=60)
    assert " 401 " in done.stdout and "Digest" in done.stdout
    assert "<beans/>" not in (engine_process.jobs_dir / "guarded" / "crawler-beans.cxml").read_text()
    code, body = curl(engine_process, "/engine/job/guarded/jobdir/../../escape.txt", "--path-as-is",
                      "-T", str(upload))
    assert code == 403 and not (engine_process.jobs_dir.parent / "escape.txt").exists()


def test_script_resource_refuses_what_is_not_a_call_of_the_library(engine_process: EngineProcess) -> None:
    # Heritrix answers a script's failure 200 with the script model; this engine runs only the calls of
    # HarvestSuite's library (tests/engine/test_live_changes.py has them change a running crawl)
    engine_process.client().create_job("scripted")
    code, body = curl(engine_process, "/engine/job/scripted/script", "-d", "engine=groovy&script=rawOut.println(1)",
                      "-H", "Accept: application/json")
    assert code == 200
    model = json.loads(body)
    assert model["failure"] is True and model["script"] == "rawOut.println(1)"
    assert "line 1:" in model["exception"] and "addRejectRule(String regex)" in model["exception"]
    code, body = curl(engine_process, "/engine/job/scripted/script", "-H", "Accept: application/xml")
    assert code == 200 and etree.fromstring(body.encode()).findtext("failure") == "false"


def test_advertised_links_resolve_and_reports_are_live(engine_process: EngineProcess, test_site: TestSite) -> None:
    client = engine_process.client()
    client.create_job("linked")
    client.put_job_file("linked", "crawler-beans.cxml", SLOW_CRAWL.encode())
    client.put_job_file("linked", "seeds.txt", (test_site.url(HOST, "/") + "\n").encode())
    client.build("linked")
    client.launch("linked")
    client.unpause("linked")
    client.wait_for("linked", lambda status: status.uri_totals_report is not None
                    and status.uri_totals_report.downloaded_uri_count >= 5, timeout=60, poll_interval=0.1)
    job_xml = state_of(engine_process, "linked")
    reports = [report.findtext("className") for report in job_xml.find("reports")]
    assert "FrontierSummaryReport" in reports and "CrawlSummaryReport" in reports
    for report in job_xml.find("reports"):
        code, body = curl(engine_process, report.findtext("url").split(engine_process.base_url, 1)[1])
        assert code == 200 and body.strip(), report.findtext("className")
    code, live = curl(engine_process, "/engine/job/linked/report/FrontierSummaryReport")
    assert code == 200 and "dk,kulturarv,www," in live  # served while the crawl runs, no file needed
    tail = [value.text for value in job_xml.find("crawlLogTail")]
    assert 0 < len(tail) <= 10
    stamps = [line.split()[0] for line in tail]
    assert stamps == sorted(stamps, reverse=True)  # newest first
    assert len(job_xml.find("jobLogTail")) <= 5
    engine_xml = etree.fromstring(curl(engine_process, "/engine", "-H", "Accept: application/xml")[1].encode())
    jobs_dir_url = engine_xml.findtext("jobsDirUrl")
    code, listing = curl(engine_process, jobs_dir_url.split(engine_process.base_url, 1)[1])
    assert code == 200 and "linked/" in listing.splitlines()
    inside = engine_process.jobs_dir / "linked" / "seeds.txt"
    code, body = curl(engine_process, f"/engine/anypath{inside.resolve()}")
    assert code == 200 and test_site.url(HOST, "/") in body
    code, _ = curl(engine_process, "/engine/anypath/etc/passwd")
    assert code == 403
    code, _ = curl(engine_process, "/engine/job/linked/report/NoSuchReport")
    assert code == 404
    client.terminate("linked")
    client.wait_for("linked", lambda status: status.is_finished, timeout=60)


def test_clocks_stop_at_crawl_end_and_agree_with_crawl_report(engine_process: EngineProcess,
                                                              test_site: TestSite) -> None:
    client = engine_process.client()
    client.create_job("timed")
    client.put_job_file("timed", "crawler-beans.cxml", crawler_beans(max_hops=2).encode())
    client.put_job_file("timed", "seeds.txt", (test_site.url(HOST, "/") + "\n").encode())
    client.build("timed")
    client.launch("timed")
    time.sleep(1.0)  # paused at start: this time is not crawl time
    client.unpause("timed")
    first = client.wait_for("timed", lambda status: status.is_finished, timeout=60)
    time.sleep(1.5)
    later = client.job_status("timed")
    assert later.elapsed_report.elapsed_milliseconds == first.elapsed_report.elapsed_milliseconds
    assert later.rate_report.average_docs_per_second == first.rate_report.average_docs_per_second
    assert later.rate_report.average_kib_per_sec == first.rate_report.average_kib_per_sec
    assert first.elapsed_report.elapsed_milliseconds < 1000 + 5000
    report = client.job_file("timed", "latest/reports/crawl-report.txt").decode()
    docs_per_second = float(re.search(r"URIs/sec: ([\d.]+)", report).group(1))
    assert abs(docs_per_second - first.rate_report.average_docs_per_second) < 0.02
