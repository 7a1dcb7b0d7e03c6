"""Crawls driven through the engine process: the local test site crawled to FINISHED; pause, unpause,
checkpoint and terminate ("Ended by operator"); and an engine restart that resumes from a checkpoint without
fetching again what was done.

The engine runs as ``harvestsuite engine`` with ``--hosts`` naming the test site's hosts on loopback, and is
driven only through harvester.heritrix over HTTPS, as the harvest controller drives it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestdef.errors import HeritrixError
from harvester.heritrix import HeritrixClient
from harvester.heritrix3.model import JobResource
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import TestSite

HOST = "www.kulturarv.dk"
CRAWL_TIMEOUT = 120.0
# A crawl slow enough to act on while it runs: the trap is in scope (up to the hop limit), 150 ms per URL.
SLOW_CRAWL = crawler_beans(max_hops=25, min_delay_ms=150, reject_regex="^nothing-matches-this$")


@pytest.fixture
def hosts_file(test_site: TestSite, tmp_path: Path) -> Path:
    return test_site.write_hosts_file(tmp_path / "hosts.txt")


@pytest.fixture
def engine_process(tmp_path: Path, hosts_file: Path) -> Iterator[EngineProcess]:
    with EngineProcess(tmp_path / "jobs", hosts_file=hosts_file) as process:
        yield process


def crawl_log_uris(launch_dir: Path) -> list[tuple[int, str]]:
    """(status, URI) of every crawl.log line of one launch."""
    entries = []
    for line in (launch_dir / "logs" / "crawl.log").read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) >= 4:
            entries.append((int(fields[1]), fields[3]))
    return entries


def prepare(client: HeritrixClient, process: EngineProcess, name: str, seeds: list[str], cxml: str) -> JobResource:
    write_job(process.jobs_dir / name, seeds, cxml=cxml)
    client.rescan()
    status = client.build(name)
    assert status.status_description == "Ready", status.job_log_tail
    return status


def controller_in(*states: str):
    return lambda status: status.crawl_controller_state in states


def test_crawl_of_the_test_site_runs_to_finished(engine_process: EngineProcess, test_site: TestSite) -> None:
    client = engine_process.client()
    seed = test_site.url(HOST, "/")
    prepare(client, engine_process, "basic", [seed], crawler_beans(max_hops=3))
    launched = client.launch("basic")
    # pauseAtStart defaults to true, as in Heritrix's CrawlController: the crawl waits for unpause.
    assert launched.launch_count == 1 and launched.is_running
    paused = client.wait_for("basic", controller_in("PAUSED"), timeout=30, poll_interval=0.1)
    assert "unpause" in paused.available_actions and paused.uri_totals_report.downloaded_uri_count == 0
    client.unpause("basic")
    finished = client.wait_for("basic", lambda status: status.is_finished, timeout=CRAWL_TIMEOUT)
    assert finished.crawl_exit_status == "FINISHED"
    assert finished.status_description == "Finished: FINISHED"
    assert finished.available_actions == ("teardown",)
    assert finished.uri_totals_report.downloaded_uri_count > 5
    job_dir = engine_process.jobs_dir / "basic"
    latest = job_dir / "latest"
    assert latest.is_symlink() and re.fullmatch(r"\d{14}", os.readlink(latest))
    assert (latest / "crawler-beans.cxml").read_bytes() == (job_dir / "crawler-beans.cxml").read_bytes()
    entries = crawl_log_uris(latest)
    assert (200, seed) in entries
    assert test_site.request_count(HOST, "/") == 1
    progress = (latest / "logs" / "progress-statistics.log").read_text(encoding="utf-8")
    assert "CRAWL ENDED - Finished" in progress.splitlines()[-1]
    assert any(f" {seed} " in line for line in finished.crawl_log_tail)
    assert Path(finished.crawl_log_file_path).resolve() == (latest / "logs" / "crawl.log").resolve()
    # Every nested report of Heritrix 3's job status (GET /engine/job/NAME) is there and typed.
    assert finished.size_totals_report.total > 0 and finished.size_totals_report.total_count > 0
    assert finished.rate_report.average_docs_per_second > 0
    assert finished.elapsed_report.elapsed_pretty.endswith("ms")
    assert finished.load_report.total_threads == 4 and finished.thread_report.toe_count == 4
    assert finished.frontier_report.last_reached_state == "FINISH"

    # A finished job is torn down, built and launched again: a second launch directory, the symlink follows.
    assert client.teardown("basic").status_description == "Unbuilt"
    client.build("basic")
    client.launch("basic")
    client.unpause("basic")
    again = client.wait_for("basic", lambda status: status.is_finished, timeout=CRAWL_TIMEOUT)
    assert again.launch_count == 2
    launches = sorted(entry.name for entry in job_dir.iterdir() if re.fullmatch(r"\d{14}", entry.name))
    assert len(launches) == 2 and os.readlink(latest) == launches[-1]


def test_pause_unpause_checkpoint_and_terminate(engine_process: EngineProcess, test_site: TestSite) -> None:
    client = engine_process.client()
    prepare(client, engine_process, "steered", [test_site.url(HOST, "/")], SLOW_CRAWL)
    client.launch("steered")
    client.unpause("steered")
    running = client.wait_for("steered", controller_in("RUNNING"), timeout=30, poll_interval=0.1)
    assert set(running.available_actions) == {"pause", "checkpoint", "terminate"}
    assert running.status_description == "Active: RUNNING" and running.is_running

    client.pause("steered")
    paused = client.wait_for("steered", controller_in("PAUSED"), timeout=30, poll_interval=0.1)
    assert set(paused.available_actions) == {"unpause", "checkpoint", "terminate"}
    assert paused.status_description == "Active: PAUSED"

    checkpointed = client.checkpoint("steered")
    assert len(checkpointed.checkpoint_files) == 1
    assert re.fullmatch(r"cp\d{5}-\d{14}", checkpointed.checkpoint_files[0])
    assert (engine_process.jobs_dir / "steered" / "checkpoints" / checkpointed.checkpoint_files[0]).is_dir()

    client.unpause("steered")
    client.wait_for("steered", controller_in("RUNNING", "EMPTY"), timeout=30, poll_interval=0.1)
    client.terminate("steered")
    ended = client.wait_for("steered", lambda status: status.is_finished, timeout=CRAWL_TIMEOUT)
    assert ended.crawl_exit_status == "ABORTED"
    assert ended.status_description == "Finished: ABORTED"
    progress = (engine_process.jobs_dir / "steered" / "latest" / "logs" / "progress-statistics.log")
    assert "CRAWL ENDED - Finished - Ended by operator" in progress.read_text(encoding="utf-8").splitlines()[-1]
    job_log = (engine_process.jobs_dir / "steered" / "job.log").read_text(encoding="utf-8")
    assert "Job paused" in job_log and "Job terminated by operator" in job_log


def test_engine_restart_resumes_from_the_checkpoint_without_refetching(
        tmp_path: Path, hosts_file: Path, test_site: TestSite) -> None:
    jobs_dir = tmp_path / "jobs"
    with EngineProcess(jobs_dir, hosts_file=hosts_file) as first:
        client = first.client()
        prepare(client, first, "resumed", [test_site.url(HOST, "/")], SLOW_CRAWL)
        client.launch("resumed")
        client.unpause("resumed")
        client.wait_for("resumed", lambda status: status.uri_totals_report is not None
                        and status.uri_totals_report.downloaded_uri_count >= 8, timeout=60, poll_interval=0.1)
        client.pause("resumed")
        client.wait_for("resumed", controller_in("PAUSED"), timeout=30, poll_interval=0.1)
        checkpoint = client.checkpoint("resumed").checkpoint_files[-1]
        first_launch = Path(os.path.realpath(jobs_dir / "resumed" / "latest"))
        done_before = {uri for status, uri in crawl_log_uris(first_launch)
                       if status > 0 and not uri.startswith("dns:") and not uri.endswith("/robots.txt")}
        assert done_before
        # SIGTERM with the crawl still live: the engine checkpoints it again and stops cleanly.
        assert first.stop() == 0

    with EngineProcess(jobs_dir, hosts_file=hosts_file) as second:
        client = second.client()
        found = client.job_status("resumed")
        assert found.status_description == "Unbuilt" and found.launch_count == 1
        assert checkpoint in found.checkpoint_files and len(found.checkpoint_files) == 2
        client.build("resumed")
        with pytest.raises(HeritrixError, match="no checkpoint 'cp99999-20000101000000'"):
            client.launch("resumed", checkpoint="cp99999-20000101000000")
        assert client.job_status("resumed").status_description == "Ready"
        # "latest" is the checkpoint the engine wrote at shutdown, taken while paused: the same crawl state.
        client.launch("resumed", checkpoint="latest")
        client.unpause("resumed")
        finished = client.wait_for("resumed", lambda status: status.is_finished, timeout=CRAWL_TIMEOUT)
        assert finished.crawl_exit_status == "FINISHED" and finished.launch_count == 2
        second_launch = Path(os.path.realpath(jobs_dir / "resumed" / "latest"))
        assert second_launch != first_launch
        fetched_again = {uri for status, uri in crawl_log_uris(second_launch) if status > 0} & done_before
        assert fetched_again == set()
        assert test_site.request_count(HOST, "/") == 1
        assert crawl_log_uris(second_launch), "the resumed crawl fetched nothing new"
    job_log = (jobs_dir / "resumed" / "job.log").read_text(encoding="utf-8")
    assert "at engine shutdown" in job_log and f"from checkpoint {found.checkpoint_files[-1]}" in job_log
