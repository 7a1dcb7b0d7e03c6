"""Steering a running crawl, with real processes: the scheduler (a thread), a harvest controller process, its
bundled engine, RabbitMQ and a local site slow enough to act on (see conftest.py).

Changes are written into job_changes as the web UI writes them (JobChangeRepository.add); the scheduler
sends them to the controller's control queue, the controller applies them through the engine's REST API and
answers. What each did is read back from what the crawl wrote: the site's own request log, crawl.log, the
domain report in historyinfo and the metadata WARC in the archive store.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator

from harvestdef.db import schema as s
from harvestdef.livechanges import APPLIED, PENDING, REFUSED
from harvestdef.messages import CRAWL_PROGRESS_STATUSES
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.jobchanges import JobChangeRepository
from tests.harvester.test_controller_checkpoint_events import paced_template
from tests.harvester.test_controller_failures import crawled_lines, job_directory, wait_for

LIVE = {"harvestsuite__scheduler__liveChangeInterval": 1}


def running_job(h, harvest_id: int) -> int:
    def started():
        jobs = [job for job in h.jobs(harvest_id) if JobStatus(job.status) == JobStatus.STARTED]
        return jobs[0].job_id if jobs else None
    return wait_for(started, 60, "a STARTED job")


def change(h, job_id: int, kind: str, payload: dict | None = None, author: str = "ops1") -> int:
    with h.engine.begin() as conn:
        return JobChangeRepository(conn).add(job_id, kind, payload or {}, author, datetime.now(UTC)).version


def settled(h, job_id: int, version: int, timeout: float = 30):
    def look():
        with h.engine.connect() as conn:
            found = JobChangeRepository(conn).get(job_id, version)
        return found if found is not None and found.state != PENDING else None
    return wait_for(look, timeout, f"change {version} of job {job_id} settled")


def crawler_status(h, job_id: int) -> str | None:
    with h.engine.connect() as conn:
        status = conn.scalar(select(s.runningjobsmonitor.c.status).where(s.runningjobsmonitor.c.jobid == job_id))
    return CRAWL_PROGRESS_STATUSES[status] if status is not None else None


def requests_since(h, start: int) -> list[tuple[str, str]]:
    return list(h.site.requests[start:])


def job_end(h, job_id: int):
    """The job's end as its controller reported it (CrawlStatus.crawl_end), as the scheduler keeps it."""
    with h.engine.connect() as conn:
        return conn.execute(select(s.job_ends).where(s.job_ends.c.job_id == job_id)).first()


def test_a_crawl_paused_changed_resumed_and_stopped_by_an_operator(harvesting):
    h = harvesting(paced_template())
    kulturarv, bibliotek = "www.kulturarv.dk", "www.bibliotek.no"
    harvest_id = h.selective_harvest("steered", {"kulturarv.dk": [h.seed(kulturarv)],
                                                 "bibliotek.no": [h.seed(bibliotek)]})
    h.start_scheduler(**LIVE)
    h.start_controller("steered")
    job_id = running_job(h, harvest_id)
    wait_for(lambda: crawled_lines(h.server_dir) >= 6, 60, "six crawl.log lines")

    # pause: no fetch starts until resume
    pause = change(h, job_id, "pause")
    assert settled(h, job_id, pause).state == APPLIED
    wait_for(lambda: crawler_status(h, job_id) == "CRAWLER_PAUSED", 30, "the crawler paused")
    paused_at = len(h.site.requests)
    time.sleep(1.5)  # a window in which a running crawl at 250 ms a host fetches several URIs
    assert requests_since(h, paused_at) == [], "fetched while paused"

    # changes made while paused, applied in version order
    reject = change(h, job_id, "reject", {"regex": ".*/trap/.*", "domain": "kulturarv.dk"})
    delete = change(h, job_id, "delete_queued", {"regex": r".*kulturarv\.dk.*/page/[5-8]"})
    added = h.seed(kulturarv, "/hop/")
    add = change(h, job_id, "add_uris", {"uris": [added]})
    budget = change(h, job_id, "budget", {"domain": "bibliotek.no", "max_objects": 2})
    polite = change(h, job_id, "politeness", {"delay_factor": 1.0, "min_delay_ms": 100, "max_delay_ms": 300})
    unknown = change(h, job_id, "unreject", {"regex": ".*never-added.*"})
    results = {version: settled(h, job_id, version) for version in (reject, delete, add, budget, polite, unknown)}
    for version in (reject, delete, add, budget, polite):
        assert results[version].state == APPLIED, results[version]
    assert results[unknown].state == REFUSED and "never-added" in results[unknown].reason, results[unknown]
    assert "deleted" in results[delete].reason, results[delete]
    applied_times = [results[v].applied for v in (reject, delete, add, budget, polite, unknown)]
    assert applied_times == sorted(applied_times), "applied out of version order"
    assert requests_since(h, paused_at) == [], "fetched while paused"

    # the crawl.log counted as it grows, for the page: the controller's CrawlTally
    with h.engine.connect() as conn:
        counted = dict(conn.execute(select(s.running_domain_counts.c.domain, s.running_domain_counts.c.objects)
                                    .where(s.running_domain_counts.c.jobid == job_id)).all())
    assert counted.get("kulturarv.dk", 0) > 0, counted

    resume = change(h, job_id, "resume")
    assert settled(h, job_id, resume).state == APPLIED
    wait_for(lambda: (kulturarv, "/hop/") in h.site.requests, 60, "the added URI fetched")

    stop = change(h, job_id, "stop", author="ops2")
    assert settled(h, job_id, stop, timeout=60).state == APPLIED
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.DONE, job
    # the stop is reported as the crawl's end, who and which change, and is no error
    assert "stopped by" not in (job.harvest_errors or ""), job.harvest_errors
    end = job_end(h, job_id)
    assert (end.cause, end.author, end.change_version, end.budget_limit) == ("stop", "ops2", stop, None), end
    assert end.ended_at >= settled(h, job_id, stop).applied - timedelta(seconds=5)

    after_resume = requests_since(h, paused_at)
    trapped = [path for host, path in after_resume if host.endswith("kulturarv.dk") and path.startswith("/trap/")]
    assert trapped == [], f"kulturarv.dk's trap fetched after the reject rule: {trapped}"
    deleted = [path for host, path in after_resume if host == kulturarv and re.fullmatch(r"/page/[5-8]", path)]
    assert deleted == [], f"deleted queued URIs fetched: {deleted}"
    crawl_log = "".join(p.read_text(encoding="utf-8") for p in h.server_dir.glob("**/logs/crawl.log")) or "".join(
        p.read_text(encoding="utf-8") for p in h.tmp.glob("**/logs/crawl.log"))
    assert "Q:groupMaxFetchSuccesses" in crawl_log

    reasons = {row.name: StopReason(row.stopreason) for row in h.history(job.job_id)}
    assert reasons["bibliotek.no"] == StopReason.OBJECT_LIMIT, reasons
    assert reasons["kulturarv.dk"] == StopReason.DOWNLOAD_UNFINISHED, reasons

    # every applied change is a metadata:// record of the job's metadata WARC; the refused one is not
    (metadata,) = list(h.archive.glob(f"**/{job.job_id}-metadata-1.warc.gz"))
    records = {}
    with open(metadata, "rb") as stream:
        for record in ArchiveIterator(stream):
            uri = record.rec_headers.get_header("WARC-Target-URI") or ""
            if "/crawl/setup/jobchange?" in uri:
                records[int(uri.rsplit("version=", 1)[1])] = json.loads(record.content_stream().read())
    assert sorted(records) == [pause, reject, delete, add, budget, polite, resume, stop]
    assert records[reject]["payload"] == {"regex": ".*/trap/.*", "domain": "kulturarv.dk"}
    assert (records[stop]["author"], records[stop]["kind"], records[stop]["state"]) == ("ops2", "stop", "applied")


def job_with_its_controller_away(harvesting, name: str):
    """A crawl of kulturarv.dk started by controller "first", which is then stopped (checkpointed at shutdown:
    the job stays STARTED with its claim): changes made now wait for a controller. Returns the harvesting,
    the harvest's and the job's ids and its job directory."""
    h = harvesting(paced_template())
    harvest_id = h.selective_harvest(name, {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler(**LIVE)
    first = h.start_controller("first")
    job_id = running_job(h, harvest_id)
    wait_for(lambda: crawled_lines(h.server_dir) >= 5, 60, "five crawl.log lines")
    assert first.stop() == 0
    return h, harvest_id, job_id, job_directory(h.server_dir)


def test_changes_made_while_the_controller_is_away_arrive_in_order_when_it_is_back(harvesting):
    h, harvest_id, job_id, directory = job_with_its_controller_away(harvesting, "away")
    # not the trap: its endless calendar keeps the crawl running until the stop below, however slow the machine
    reject = change(h, job_id, "reject", {"regex": ".*/missing/.*"})
    polite = change(h, job_id, "politeness", {"delay_factor": 0.5})
    time.sleep(1.0)  # several sending intervals: the changes wait in the durable control queue
    with h.engine.connect() as conn:
        assert [c.state for c in JobChangeRepository(conn).for_job(job_id)] == [PENDING, PENDING]

    second = h.start_controller("second")
    first_change, second_change = settled(h, job_id, reject, 60), settled(h, job_id, polite, 60)
    assert (first_change.state, second_change.state) == (APPLIED, APPLIED), (first_change, second_change)
    assert first_change.applied <= second_change.applied

    # a second time away: what was applied before is neither applied again nor forgotten
    lines = crawled_lines(h.server_dir)
    wait_for(lambda: crawled_lines(h.server_dir) > lines, 60, "the crawl going on after the first resume")
    assert second.stop() == 0, second.text()[-3000:]
    budget = change(h, job_id, "budget", {"domain": "kulturarv.dk", "max_objects": 1000})
    h.start_controller("third")
    budget_change = settled(h, job_id, budget, 60)
    assert budget_change.state == APPLIED, budget_change
    handled = [json.loads(line)["version"] for line in (directory / "changes.jsonl").read_text().splitlines()]
    assert handled == [reject, polite, budget]
    events = "".join(path.read_text(encoding="utf-8") for path in directory.glob("*/logs/scripting_events.log"))
    assert events.count(".*/missing/.*") == 1, events  # the reject rule, applied once, kept over both resumes
    stop = change(h, job_id, "stop")
    assert settled(h, job_id, stop, 60).state == APPLIED
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.DONE, job


def test_a_checkpoint_now_then_an_operator_fails_the_crawl(harvesting):
    h = harvesting(paced_template())
    harvest_id = h.selective_harvest("failed", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler(**LIVE)
    h.start_controller("failing")
    job_id = running_job(h, harvest_id)
    wait_for(lambda: crawled_lines(h.server_dir) >= 5, 60, "five crawl.log lines")
    checkpoint = settled(h, job_id, change(h, job_id, "checkpoint"), 60)
    assert checkpoint.state == APPLIED and re.fullmatch(r"checkpoint cp\d{5}-\d{14}", checkpoint.reason), checkpoint
    lines = crawled_lines(h.server_dir)
    wait_for(lambda: crawled_lines(h.server_dir) > lines + 3, 60, "the crawl going on after the checkpoint")
    fail = change(h, job_id, "fail", author="ops3")
    assert settled(h, job_id, fail, 60).state == APPLIED
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.FAILED, job
    assert "ended as failed" not in (job.harvest_errors or ""), job.harvest_errors
    end = job_end(h, job_id)
    assert (end.cause, end.author, end.change_version) == ("fail", "ops3", fail), end
    with h.engine.connect() as conn:
        events = conn.execute(select(s.job_events.c.kind, s.job_events.c.checkpoint)
                              .where(s.job_events.c.job_id == job_id)).all()
    assert ("checkpoint", checkpoint.reason.split()[1]) in events
