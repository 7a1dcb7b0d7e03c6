"""A running job's progress samples: every report kept while recent, thinned to one each historySampleRate
once older than recentHistoryWindow and when the job ends (scheduler/progresshistory.py), through the
scheduler's real intake on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.messages import CrawlStatus
from harvestdef.model.status import JobStatus, StopReason
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.jobgen.generate import GenerationOptions
from scheduler.notify import Notifier
from scheduler.progresshistory import samples_to_thin
from scheduler.tick import Ticker, TickOptions, TickReport
from tests.scheduler.test_intake import NAMES, report, started_job, transport  # noqa: F401
from tests.webui.test_live_job import Crawl

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(*seconds: float) -> list[datetime]:
    return [START + timedelta(seconds=second) for second in seconds]


def test_the_first_sample_is_kept_then_each_one_a_rate_after_the_last_kept():
    rate = timedelta(seconds=10)
    assert samples_to_thin([], rate) == []
    assert samples_to_thin(at(0), rate) == []
    # 0 kept; 3, 6, 9 within 10 s of it; 10 kept; 12, 19 within 10 s of 10; 20 kept; 31 kept
    assert samples_to_thin(at(0, 3, 6, 9, 10, 12, 19, 20, 31), rate) == [1, 2, 3, 5, 6]
    # a pause without reports leaves a gap: the first sample after it is kept
    assert samples_to_thin(at(0, 2, 100, 101, 111), rate) == [1, 3]


def test_thinning_samples_already_thinned_deletes_none():
    rate = timedelta(seconds=10)
    times = at(0, 3, 6, 9, 10, 12, 19, 20, 31, 33, 45)
    doomed = set(samples_to_thin(times, rate))
    kept = [moment for position, moment in enumerate(times) if position not in doomed]
    assert kept == at(0, 10, 20, 31, 45)
    assert samples_to_thin(kept, rate) == []


def samples(engine, job_id: int) -> list[tuple[int, int]]:
    """The job's samples as (seconds after START, downloaded), oldest first."""
    r = s.runningjobshistory
    with engine.connect() as conn:
        rows = conn.execute(select(r.c.tstamp, r.c.downloadedfilescount).where(r.c.jobid == job_id)
                            .order_by(r.c.tstamp)).all()
    return [(round((row.tstamp - START).total_seconds()), row.downloadedfilescount) for row in rows]


def test_every_report_is_a_sample_while_recent_and_one_each_rate_once_older_and_at_the_end(engine, transport):  # noqa: F811
    intake = StatusIntake(Notifier(), history_sample_rate=60, recent_history_window=30)
    handlers = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()), intake)
    job_id, attempt, _ = started_job(engine, handlers)
    crawl = Crawl(job_id, attempt, handlers.carry_out_one)
    # a report every 5 s from the crawl's first seconds
    for second in range(0, 30, 5):
        crawl.progress(START + timedelta(seconds=second), downloaded_files=second, elapsed_seconds=second)
    assert samples(engine, job_id) == [(second, second) for second in range(0, 30, 5)]

    for second in range(30, 125, 5):
        crawl.progress(START + timedelta(seconds=second), downloaded_files=second, elapsed_seconds=second)
    # older than 30 s (before 90 s): the first, then one each 60 s; since then each report (the times are
    # the reports' own, not the clock's)
    assert samples(engine, job_id) == [(0, 0), (60, 60)] + [(second, second) for second in range(90, 125, 5)]

    # a late report from before the window changes nothing of the thinned samples
    crawl.progress(START + timedelta(seconds=33), downloaded_files=33, elapsed_seconds=33)
    assert (33, 33) in samples(engine, job_id)
    crawl.progress(START + timedelta(seconds=125), downloaded_files=125, elapsed_seconds=125)
    assert samples(engine, job_id)[:3] == [(0, 0), (33, 33), (60, 60)]

    assert crawl.handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.DONE,
                                    domain_report=report(("a.dk", 3, 1200, StopReason.DOWNLOAD_COMPLETE),
                                                         ("b.dk", 1, 10, StopReason.DOWNLOAD_COMPLETE))))
    # the ended job keeps its history as NetarchiveSuite's rate alone would have sampled it
    assert samples(engine, job_id) == [(0, 0), (60, 60), (120, 120)]


def test_a_scheduler_that_restarts_thins_what_its_predecessor_left_dense(engine, transport):  # noqa: F811
    before = StatusIntake(Notifier(), history_sample_rate=20, recent_history_window=3600)
    handlers = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()), before)
    job_id, attempt, _ = started_job(engine, handlers)
    for second in range(0, 100, 10):
        Crawl(job_id, attempt, handlers.carry_out_one).progress(START + timedelta(seconds=second),
                                                               downloaded_files=second, elapsed_seconds=second)
    assert len(samples(engine, job_id)) == 10
    after = StatusIntake(Notifier(), history_sample_rate=20, recent_history_window=30)
    handle = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()), after).carry_out_one
    Crawl(job_id, attempt, handle).progress(START + timedelta(seconds=100), downloaded_files=100, elapsed_seconds=100)
    assert samples(engine, job_id) == [(0, 0), (20, 20), (40, 40), (60, 60), (70, 70), (80, 80), (90, 90),
                                       (100, 100)]


def test_a_job_the_scheduler_times_out_keeps_its_history_thinned(engine, transport):  # noqa: F811
    intake = StatusIntake(Notifier(), history_sample_rate=30, recent_history_window=3600)
    handlers = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()), intake)
    job_id, attempt, _ = started_job(engine, handlers)
    for second in range(0, 70, 10):
        Crawl(job_id, attempt, handlers.carry_out_one).progress(START + timedelta(seconds=second),
                                                               downloaded_files=second, elapsed_seconds=second)
    assert len(samples(engine, job_id)) == 7
    Ticker(engine, GenerationOptions(), TickOptions(job_timeout=0, history_sample_rate=30), Notifier()).supervise(
        utcnow(), TickReport())
    assert samples(engine, job_id) == [(0, 0), (30, 30), (60, 60)]
