"""A crawl checkpointed while fetches are in flight, on a slow site, and resumed from that checkpoint by a
new engine process: the site's own request log shows no URI fetched twice, and the WARCs of both launches
hold no URI twice. Checkpointed at the controller's shutdown (the controller's own crawl driver,
harvester/crawldriver.py, as ``harvestsuite harvester run`` uses it), and at the engine's own shutdown
(SIGTERM of the real engine process)."""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from harvester.crawldriver import CrawlDriver, DriveResult, DriverOptions
from harvester.engine.checkpoint import STORE_FILE
from harvester.engine.frontier.frontier import DONE
from harvester.engine.frontier.urlstore import UrlStore
from harvester.heritrix3.layout import SHUTDOWN_CHECKPOINT
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import TestSite, wait_for

HOSTS = ("www.kulturarv.dk", "www.bibliotek.no")
OPTIONS = DriverOptions(poll_interval=0.2, inactivity_timeout=60, noresponse_timeout=60, start_timeout=30)


def crawl_log_urls(job_dir: Path) -> list[str]:
    urls = []
    for log in sorted(job_dir.glob("[0-9]*/logs/crawl.log")):
        urls += [line.split()[3] for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return urls


def warc_target_uris(job_dir: Path) -> list[str]:
    uris = []
    for path in sorted(job_dir.glob("[0-9]*/warcs/*.warc.gz")):
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type in ("response", "revisit"):
                    uris.append(record.rec_headers.get_header("WARC-Target-URI"))
    return uris


def fetches_in_flight(site: TestSite, job_dir: Path, at_least: int = 8):
    """A predicate: ``at_least`` URIs done, and a page the site was asked for that it has not answered yet."""

    def check() -> bool:
        with site._lock:
            asked = [f"http://{host}:{site.port}{target}" for host, target in site.requests
                     if target != "/robots.txt"]
        logged = set(crawl_log_urls(job_dir))
        return len(logged) >= at_least and any(url not in logged for url in asked)

    return check


def assert_nothing_twice(site: TestSite, job_dir: Path, requests_at_checkpoint: int) -> None:
    assert len(site.requests) > requests_at_checkpoint, "the resumed crawl fetched nothing"
    twice = {request: count for request, count in Counter(site.requests).items() if count > 1}
    assert twice == {}, f"fetched twice according to the site's request log: {twice}"
    pages = {target for _, target in site.requests}
    assert {"/page/6", "/page/1", "/"} <= pages  # the resumed crawl went on to the end
    written = Counter(warc_target_uris(job_dir))
    assert written and max(written.values()) == 1, [uri for uri, count in written.items() if count > 1]
    logged = Counter(crawl_log_urls(job_dir))
    assert max(logged.values()) == 1, [url for url, count in logged.items() if count > 1]


def slow_job(site: TestSite, directory: Path) -> Path:
    return write_job(directory, [site.url(host, "/") for host in HOSTS],
                     crawler_beans(max_hops=25, reject_regex=".*/(trap|stall|huge|big).*"))


def crawl_until_fetches_are_in_flight(engine: EngineProcess, site: TestSite, job_dir: Path) -> Any:
    """Build, launch and run the job of ``job_dir`` on ``engine`` until the slow site has fetches in flight;
    the engine's client."""
    client = engine.client()
    client.rescan()
    client.build(job_dir.name)
    client.launch(job_dir.name)
    client.unpause(job_dir.name)
    assert wait_for(fetches_in_flight(site, job_dir), timeout=60, interval=0.02)
    return client


def drive(engine: EngineProcess, job_dir: Path, shutdown: threading.Event, checkpoint: str | None,
          results: list[DriveResult]) -> threading.Thread:
    driver = CrawlDriver(engine.client(), job_dir.name, job_dir, OPTIONS, lambda status: None, shutdown)
    thread = threading.Thread(target=lambda: results.append(driver.run(checkpoint)), daemon=True)
    thread.start()
    return thread


def test_a_crawl_checkpointed_mid_fetch_at_controller_shutdown_resumes_without_anything_twice(tmp_path):
    with TestSite(hosts=HOSTS, pages=6, response_delay=0.2) as site:
        hosts_file = site.write_hosts_file(tmp_path / "hosts")
        job_dir = slow_job(site, tmp_path / "server" / "slowjob")
        first: list[DriveResult] = []
        with EngineProcess(tmp_path / "engine-jobs", hosts_file=hosts_file) as engine:
            shutdown = threading.Event()
            thread = drive(engine, job_dir, shutdown, None, first)
            assert wait_for(fetches_in_flight(site, job_dir), timeout=60, interval=0.02)
            shutdown.set()  # what SIGTERM does to the controller
            thread.join(120)
        (result,) = first
        assert result.checkpoint is not None, result.outcome
        # The crawl had ended when the engine stopped: the controller's resume.json governs, not the engine.
        assert not (job_dir / SHUTDOWN_CHECKPOINT).exists()
        requests_at_checkpoint = len(site.requests)

        second: list[DriveResult] = []
        with EngineProcess(tmp_path / "engine-jobs", hosts_file=hosts_file) as engine:
            drive(engine, job_dir, threading.Event(), result.checkpoint, second).join(180)
        (resumed,) = second
        assert resumed.checkpoint is None and not resumed.outcome.failed, resumed.outcome
        assert_nothing_twice(site, job_dir, requests_at_checkpoint)


def test_a_crawl_checkpointed_mid_fetch_at_engine_shutdown_resumes_without_anything_twice(tmp_path):
    with TestSite(hosts=HOSTS, pages=6, response_delay=0.2) as site:
        hosts_file = site.write_hosts_file(tmp_path / "hosts")
        jobs_dir = tmp_path / "engine-jobs"
        job_dir = slow_job(site, jobs_dir / "slowjob")
        with EngineProcess(jobs_dir, hosts_file=hosts_file) as engine:
            client = crawl_until_fetches_are_in_flight(engine, site, job_dir)
            assert engine.stop() == 0  # SIGTERM: the engine checkpoints the running crawl and stops
        requests_at_checkpoint = len(site.requests)
        # It names the checkpoint and its launch, written once the crawl had ended with nothing after it.
        marker = json.loads((job_dir / SHUTDOWN_CHECKPOINT).read_text(encoding="utf-8"))
        assert marker["checkpoint"] == sorted(p.name for p in (job_dir / "checkpoints").iterdir())[-1]
        assert [marker["launch"]] == [p.name for p in job_dir.glob("[0-9]*") if not p.is_symlink()]
        with EngineProcess(jobs_dir, hosts_file=hosts_file) as engine:
            client = engine.client()
            client.build("slowjob")
            client.launch("slowjob", checkpoint="latest")
            client.unpause("slowjob")
            finished = client.wait_for("slowjob", lambda status: status.is_finished, timeout=180)
            assert finished.crawl_exit_status == "FINISHED"
        assert_nothing_twice(site, job_dir, requests_at_checkpoint)


def test_a_checkpoint_asked_for_through_the_rest_api_while_running_waits_for_the_fetches_in_flight(tmp_path):
    """The crawl goes on after such a checkpoint, so a resume from it fetches again what came after it; but
    nothing that was requested before it: the fetches in flight were finished and written into it."""
    with TestSite(hosts=HOSTS, pages=6, response_delay=0.2) as site:
        hosts_file = site.write_hosts_file(tmp_path / "hosts")
        jobs_dir = tmp_path / "engine-jobs"
        job_dir = slow_job(site, jobs_dir / "slowjob")
        with EngineProcess(jobs_dir, hosts_file=hosts_file) as engine:
            client = crawl_until_fetches_are_in_flight(engine, site, job_dir)
            asked_before = len(site.requests)
            checkpoint = client.checkpoint("slowjob").checkpoint_files[-1]
            assert client.job_status("slowjob").crawl_controller_state == "RUNNING"
            # Every page requested before the checkpoint was asked for is done in it: the fetches in flight
            # were waited for, none is left neither queued nor done (it would never be fetched again).
            copy = tmp_path / "checkpoint-frontier.sqlite"
            shutil.copyfile(job_dir / "checkpoints" / checkpoint / STORE_FILE, copy)
            store = UrlStore(copy, fresh=False)
            try:
                states = {(host, target): (store.lookup(f"http://{host}:{site.port}{target}") or ("?",))[0]
                          for host, target in site.requests[:asked_before] if target != "/robots.txt"}
            finally:
                store.close()
            assert states and set(states.values()) == {DONE}, states
            client.pause("slowjob")
            client.wait_for("slowjob", lambda status: status.crawl_controller_state == "PAUSED", timeout=30)
            client.terminate("slowjob")
            client.wait_for("slowjob", lambda status: status.is_finished, timeout=30)
        first_launch = {url for url in crawl_log_urls(job_dir)}
        requests_before_resume = len(site.requests)
        with EngineProcess(jobs_dir, hosts_file=hosts_file) as engine:
            client = engine.client()
            client.build("slowjob")
            client.launch("slowjob", checkpoint=checkpoint)
            client.unpause("slowjob")
            assert client.wait_for("slowjob", lambda status: status.is_finished,
                                   timeout=180).crawl_exit_status == "FINISHED"
        again = {(host, target) for host, target in site.requests[requests_before_resume:]}
        first_asked = {}
        for index, request in enumerate(site.requests[:requests_before_resume]):
            first_asked.setdefault(request, index)
        refetched = {request: first_asked[request] for request in again if request in first_asked}
        assert all(index >= asked_before for index in refetched.values()), (
            f"requested before the checkpoint and fetched again after the resume: "
            f"{sorted(r for r, i in refetched.items() if i < asked_before)}")
        assert first_launch and {"/page/6", "/page/1", "/"} <= {target for _, target in site.requests}
