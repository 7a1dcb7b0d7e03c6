"""The action directory of a running crawl, through the engine process: files dropped into the job's
``action/`` are acted on as Heritrix 3's ActionDirectory acts on them (seeds added and fetched, a URI forced
again, lines that hold no URI counted, a script refused, another file ignored) and moved to the launch's
``actions-done/`` with a 17-digit timestamp before the name.

The crawls are slow (the trap in scope, 150 ms between fetches of a host), so they run while the files
are acted on; the ActionDirectory bean scans every second from the start.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.heritrix import HeritrixClient
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import TestSite, wait_for

HOST = "www.kulturarv.dk"
OTHER_HOST = "www.bibliotek.no"
ACTION_DIRECTORY = """
  <bean id="actionDirectory" class="org.archive.crawler.framework.ActionDirectory">
    <property name="initialDelaySeconds" value="0"/>
    <property name="delaySeconds" value="1"/>
  </bean>"""
SLOW_CRAWL = crawler_beans(max_hops=25, min_delay_ms=150, reject_regex="^nothing-matches-this$",
                           extra_beans=ACTION_DIRECTORY)
DONE_NAME = re.compile(r"^\d{17}\.(?P<name>.+)$")


@pytest.fixture
def engine_process(tmp_path: Path, test_site: TestSite) -> Iterator[EngineProcess]:
    hosts_file = test_site.write_hosts_file(tmp_path / "hosts.txt")
    with EngineProcess(tmp_path / "jobs", hosts_file=hosts_file) as process:
        yield process


def start_crawl(process: EngineProcess, site: TestSite, name: str) -> tuple[HeritrixClient, Path]:
    """A slow crawl of HOST, running; returns the client and the job directory."""
    client = process.client()
    job_dir = write_job(process.jobs_dir / name, [site.url(HOST, "/")], cxml=SLOW_CRAWL)
    client.rescan()
    assert client.build(name).status_description == "Ready"
    client.launch(name)
    client.unpause(name)
    client.wait_for(name, lambda status: status.crawl_controller_state == "RUNNING", timeout=30, poll_interval=0.1)
    return client, job_dir


def drop(job_dir: Path, name: str, text: str) -> None:
    """Put a whole file into action/ at once, as an operator should (written beside it, then renamed)."""
    staged = job_dir / f".{name}.staged"
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, job_dir / "action" / name)


def crawled(job_dir: Path) -> list[tuple[int, str]]:
    """(status, URI) of every crawl.log line of the latest launch."""
    path = job_dir / "latest" / "logs" / "crawl.log"
    if not path.is_file():
        return []
    return [(int(fields[1]), fields[3]) for fields in
            (line.split() for line in path.read_text(encoding="utf-8").splitlines()) if len(fields) >= 4]


def done_files(job_dir: Path) -> dict[str, str]:
    """Name as dropped -> name in the latest launch's actions-done/."""
    done = job_dir / "latest" / "actions-done"
    return {DONE_NAME.match(entry.name).group("name"): entry.name for entry in done.iterdir()} if done.is_dir() else {}


def job_log(job_dir: Path) -> str:
    return (job_dir / "job.log").read_text(encoding="utf-8")


def stop(client: HeritrixClient, name: str) -> None:
    client.terminate(name)
    client.wait_for(name, lambda status: status.is_finished, timeout=60, poll_interval=0.1)


def test_seeds_file_adds_seeds_that_are_fetched_and_widen_the_scope(engine_process: EngineProcess,
                                                                    test_site: TestSite) -> None:
    client, job_dir = start_crawl(engine_process, test_site, "seeded")
    added = test_site.url(OTHER_HOST, "/")
    # The other host is linked from every page but out of scope until it is a seed.
    drop(job_dir, "more.seeds", f"# added while running\n{added}\n")
    page = test_site.url(OTHER_HOST, "/page/1")
    assert wait_for(lambda: (200, page) in crawled(job_dir), timeout=20), crawled(job_dir)
    assert (200, added) in crawled(job_dir)
    assert "more.seeds" in done_files(job_dir) and not (job_dir / "action" / "more.seeds").exists()
    done_name = done_files(job_dir)["more.seeds"]
    assert (job_dir / "action" / "done" / done_name).resolve() == (job_dir / "latest" / "actions-done" /
                                                                   done_name).resolve()
    assert "action file more.seeds: 1 URIs scheduled, 0 included, 0 not added" in job_log(job_dir)
    stop(client, "seeded")
    targets = set()
    for path in (job_dir / "latest" / "warcs").glob("*.warc.gz"):
        with path.open("rb") as handle:
            targets.update(record.rec_headers.get_header("WARC-Target-URI") for record in ArchiveIterator(handle)
                           if record.rec_type == "response")
    assert {added, page} <= targets
    seeds_report = (job_dir / "latest" / "reports" / "seeds-report.txt").read_text(encoding="utf-8")
    assert added in seeds_report


def test_force_fetches_again_what_schedule_leaves_alone(engine_process: EngineProcess, test_site: TestSite) -> None:
    client, job_dir = start_crawl(engine_process, test_site, "forced")
    seed = test_site.url(HOST, "/")
    assert wait_for(lambda: (200, seed) in crawled(job_dir), timeout=20)
    # Files are acted on in name order: the schedule finds the seed included, the force queues it again.
    drop(job_dir, "1-again.schedule", f"F+ {seed}\n")
    drop(job_dir, "2-again.force", f"F+ {seed}\n")
    assert wait_for(lambda: crawled(job_dir).count((200, seed)) == 2, timeout=20), crawled(job_dir)
    assert wait_for(lambda: {"1-again.schedule", "2-again.force"} <= done_files(job_dir).keys(), timeout=10)
    log = job_log(job_dir)
    assert "action file 1-again.schedule: 0 URIs scheduled, 0 included, 1 not added" in log
    assert "action file 2-again.force: 1 URIs scheduled, 0 included, 0 not added" in log
    stop(client, "forced")
    assert test_site.request_count(HOST, "/") == 2


def test_lines_without_a_uri_are_skipped_and_counted(engine_process: EngineProcess, test_site: TestSite) -> None:
    client, job_dir = start_crawl(engine_process, test_site, "mixed")
    good = test_site.url(OTHER_HOST, "/page/2")
    drop(job_dir, "mixed.seeds", f"{good}\n%%%\nftp://example.dk/file\nhttp://\n\n# a comment\n")
    # A schedule file holds journal lines: a bare URI loses its first three characters to the tag, as in Heritrix.
    drop(job_dir, "bare.schedule", f"{test_site.url(HOST, '/page/7')}\nF+\nF+ not-a-uri\n")
    assert wait_for(lambda: {"mixed.seeds", "bare.schedule"} <= done_files(job_dir).keys(), timeout=10)
    log = job_log(job_dir)
    assert "action file mixed.seeds: 1 URIs scheduled, 0 included, 0 not added" in log
    assert "3 lines skipped (no URI)" in log.split("action file mixed.seeds:")[1].splitlines()[0]
    assert "action file bare.schedule: 0 URIs scheduled, 0 included, 0 not added (already included or out of " \
           "scope), 3 lines skipped (no URI)" in log
    assert wait_for(lambda: (200, good) in crawled(job_dir), timeout=20)
    stop(client, "mixed")


def test_a_script_is_refused_and_another_file_ignored(engine_process: EngineProcess, test_site: TestSite) -> None:
    client, job_dir = start_crawl(engine_process, test_site, "refusing")
    other = test_site.url(OTHER_HOST, "/")
    drop(job_dir, "change.groovy", "appCtx.getBean('frontier').pause()\n")
    drop(job_dir, "notes.txt", f"{other}\n")
    assert wait_for(lambda: {"change.groovy", "notes.txt"} <= done_files(job_dir).keys(), timeout=10)
    alerts_log = job_dir / "latest" / "logs" / "alerts.log"
    # the engine's logs are written through buffers flushed every turn of its loop, as Heritrix's are
    refusal = "change.groovy refused: a script; this engine runs no scripts"
    assert wait_for(lambda: alerts_log.is_file() and refusal in alerts_log.read_text(encoding="utf-8"), timeout=10)
    assert "notes.txt" not in alerts_log.read_text(encoding="utf-8")
    log = job_log(job_dir)
    assert "action file ignored: notes.txt" in log
    status = client.job_status("refusing")
    assert status.crawl_controller_state == "RUNNING" and status.alert_count >= 1
    stop(client, "refusing")
    assert all(not uri.startswith(other) for _, uri in crawled(job_dir))


def test_include_and_a_gzipped_recover_file(engine_process: EngineProcess, test_site: TestSite) -> None:
    client, job_dir = start_crawl(engine_process, test_site, "recovering")
    # /trap/N/ links only to /trap/N+1/: a URI taken as included is never fetched, so neither is what it links to.
    included = test_site.url(HOST, "/trap/4/")
    drop(job_dir, "skip.include", f"F+ {included}\n")
    # A recover journal, gzipped; without ".s." the scope is not asked, so the out-of-scope host's F+ line is
    # fetched, and its Fs line taken as done.
    recovered, done_before = test_site.url(OTHER_HOST, "/page/3"), test_site.url(OTHER_HOST, "/page/5")
    staged = job_dir / ".journal.staged"
    staged.write_bytes(gzip.compress(f"Fs {done_before}\nF+ {recovered}\n".encode()))
    os.replace(staged, job_dir / "action" / "journal.recover.gz")
    assert wait_for(lambda: {"skip.include", "journal.recover.gz"} <= done_files(job_dir).keys(), timeout=10)
    log = job_log(job_dir)
    assert "action file skip.include: 0 URIs scheduled, 1 included, 0 not added" in log
    assert "action file journal.recover.gz: 1 URIs scheduled, 1 included, 0 not added" in log
    assert wait_for(lambda: (200, recovered) in crawled(job_dir), timeout=20), crawled(job_dir)
    assert wait_for(lambda: (200, test_site.url(HOST, "/trap/3/")) in crawled(job_dir), timeout=30)
    stop(client, "recovering")
    fetched = {uri for _, uri in crawled(job_dir)}
    assert included not in fetched and test_site.url(HOST, "/trap/5/") not in fetched
    assert test_site.request_count(HOST, "/trap/4/") == 0
    assert done_before not in fetched
