"""The running system end to end without a crawler: the scheduler (as `scheduler run` runs it) and
simulated controllers over the real transports (the embedded SQLite queue and RabbitMQ) and the real
databases (SQLite and PostgreSQL): tick, generation, registration, ready, dispatch, claim, STARTED, DONE
with a domain report, historyinfo and summaries."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.messages import HarvesterStatus, decode, encode
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.queues import QueueNames
from harvester.protocol import RegistrationRefusedError, SchedulerLink
from tests.scheduler.factories import make_domain, make_selective, make_snapshot
from tests.scheduler.simcontroller import SimController


def wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def selective_harvest(engine, domains: int = 3, harvest_id: int = 1, name: str = "daily") -> list[int]:
    with engine.begin() as conn:
        configs = [make_domain(conn, f"site{n}.example.dk")[1] for n in range(domains)]
        make_selective(conn, harvest_id, name, configs, nextdate=utcnow() - timedelta(minutes=1))
    return configs


def job_rows(engine, harvest_id: int | None = None):
    with engine.connect() as conn:
        query = select(s.jobs).order_by(s.jobs.c.job_id)
        if harvest_id is not None:
            query = query.where(s.jobs.c.harvest_id == harvest_id)
        return conn.execute(query).mappings().all()


def test_whole_cycle_with_two_controllers(engine, run_scheduler, open_queue, make_settings):
    configs = selective_harvest(engine, domains=3)
    scheduler = run_scheduler()
    wait_for(scheduler.leading.is_set, what="leadership")
    names = QueueNames(make_settings().queue.environmentName)
    stop = threading.Event()
    controllers = [SimController(open_queue(), names, f"ctl-{n}", ["FOCUSED"], ready_delay=0.2) for n in range(2)]
    threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in controllers]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: job_rows(engine, 1) and all(j["status"] == JobStatus.DONE for j in job_rows(engine, 1)),
                 what="every job DONE")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    jobs = job_rows(engine, 1)
    crawled = sorted(job for c in controllers for job in c.crawled)
    assert crawled == sorted((j["job_id"], j["attempt_id"]) for j in jobs), "each job crawled exactly once"
    for job in jobs:
        assert job["controller"] in {"ctl-0", "ctl-1"} and job["submitteddate"] and job["startdate"]
        assert job["enddate"] >= job["startdate"] >= job["submitteddate"]
    with engine.connect() as conn:
        history = conn.execute(select(s.historyinfo).order_by(s.historyinfo.c.config_id)).mappings().all()
        assert [h["config_id"] for h in history] == sorted(configs)
        assert {(h["objectcount"], h["bytecount"], h["stopreason"], h["novel_objects"], h["duplicate_objects"])
                for h in history} == {(10, 10_000, StopReason.DOWNLOAD_COMPLETE, 5, 5)}
        run = conn.execute(select(s.harvest_run_summary)).mappings().one()
        assert (run["harvest_id"], run["harvest_num"], run["jobs_done"], run["configurations"], run["objects"],
                run["bytes"], run["stop_download_complete"]) == (1, 1, len(jobs), 3, 30, 30_000, 3)
        assert conn.scalar(select(func.count()).select_from(s.config_history_summary)) == 3
        registry = conn.execute(select(s.harvesters).order_by(s.harvesters.c.controller_id)).mappings().all()
        assert [(r["controller_id"], r["accepted"], r["channels"]) for r in registry] == [
            ("ctl-0", True, "FOCUSED"), ("ctl-1", True, "FOCUSED")]
        assert all(r["last_heartbeat"] is not None and r["pid"] for r in registry)
        state = conn.execute(select(s.harvest_state)).mappings().one()
        assert state["state"] in ("generated", "waiting") and "next run at" in state["reason"]


def test_unknown_channel_is_refused_with_the_reason(engine, run_scheduler, open_queue, make_settings):
    scheduler = run_scheduler()
    wait_for(scheduler.leading.is_set, what="leadership")
    link = SchedulerLink(open_queue(), QueueNames(make_settings().queue.environmentName), "ctl-x", "host",
                         ["FOCUSED", "NOSUCH"], answer_timeout=20)
    with pytest.raises(RegistrationRefusedError, match="unknown harvest channel NOSUCH"):
        link.register()
    with engine.connect() as conn:
        row = conn.execute(select(s.harvesters)).mappings().one()
    assert not row["accepted"] and "NOSUCH" in row["refusal_reason"]


def test_invalid_message_is_dead_lettered_and_intake_goes_on(engine, run_scheduler, open_queue, make_settings):
    selective_harvest(engine, domains=1)
    scheduler = run_scheduler()
    wait_for(scheduler.leading.is_set, what="leadership")
    names = QueueNames(make_settings().queue.environmentName)
    transport = open_queue()
    transport.publish(names.scheduler, b'{"type": "CrawlStatus", "version": "1.0", "sent": "2026-01-01T00:00:00Z", '
                                       b'"body": {"job_id": "seven"}}')
    transport.publish(names.scheduler, b"\xff not json")
    transport.publish(names.scheduler, b'{"type": "HarvesterReady", "version": "2.0", "sent": '
                                       b'"2026-01-01T00:00:00Z", "body": {}}')
    stop = threading.Event()
    controller = SimController(transport, names, "ctl-0", ["FOCUSED"], ready_delay=0.2)
    thread = threading.Thread(target=controller.run, args=(stop, 1), daemon=True)
    thread.start()
    thread.join(timeout=60)
    stop.set()
    assert len(controller.crawled) == 1, "the intake went on after the bad messages"
    with engine.connect() as conn:
        letters = wait_for(lambda: conn.execute(select(s.dead_letters).order_by(s.dead_letters.c.dead_letter_id))
                           .mappings().all() if conn.scalar(select(func.count()).select_from(s.dead_letters)) >= 3
                           else None, what="three dead letters")
    reasons = " | ".join(letter["reason"] for letter in letters)
    assert "body.job_id" in reasons and "not UTF-8" in reasons and "2.0" in reasons
    assert all(letter["queue"] == names.scheduler for letter in letters)


@pytest.mark.parametrize("intake_processes", [1, 2])
def test_the_end_of_a_snapshot_step_generates_the_next_at_once_not_at_the_next_period(
        engine, run_scheduler, open_queue, make_settings, intake_processes):
    """With an hour between ticks, the first tick generates step 1; the intake's record of its last job's end
    wakes the tick, which generates step 2 then, not an hour later; whether the leader's own thread or an
    intake process takes the job's end."""
    with engine.begin() as conn:
        for n in range(2):
            make_domain(conn, f"site{n}.example.dk")
        make_snapshot(conn, 1, "step1", maxbytes=10_000_000)
        make_snapshot(conn, 2, "step2", maxbytes=-1, previous=1)
    scheduler = run_scheduler(harvester__scheduler__jobgenerationperiod=3600,
                              harvestsuite__scheduler__intakeProcesses=intake_processes)
    wait_for(lambda: job_rows(engine, 1), what="step 1's jobs, from the first tick")
    registry = scheduler.service.metrics.registry

    def ticks() -> float:
        return registry.get_sample_value("harvestsuite_scheduler_ticks_total", {"outcome": "completed"}) or 0

    wait_for(lambda: ticks() == 1, what="the first tick counted")
    assert not numevents_of(engine, 2), "step 2 waits for step 1's jobs"
    stop = threading.Event()
    controller = SimController(open_queue(), QueueNames(make_settings().queue.environmentName), "ctl-1",
                               ["SNAPSHOT"], ready_delay=0.2)
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: all(job["status"] == JobStatus.DONE for job in job_rows(engine, 1)), what="step 1 DONE")
        wait_for(lambda: numevents_of(engine, 2) == 1, what="step 2 generated after step 1's end")
    finally:
        stop.set()
        thread.join(timeout=30)
    wait_for(lambda: ticks() >= 2, what="the woken tick counted as it ends")
    assert ticks() <= 1 + len(job_rows(engine, 1)), "a tick for each end at most, none by the hour"


def test_an_end_recorded_by_an_intake_process_moves_the_leaders_tick_to_now(engine, make_settings, open_queue):
    """An intake process puts WAKE_TICK on the queue that carries its counters; the leader process, taking it
    with the counts, moves its tick of an hour's period to now, and still adds the counts."""
    import multiprocessing

    from apscheduler.schedulers.background import BackgroundScheduler

    from scheduler.service import WAKE_TICK, SchedulerService

    service = SchedulerService.from_settings(make_settings(), engine, open_queue())
    ticker = BackgroundScheduler(timezone="UTC")
    ticker.add_job(lambda: None, "interval", seconds=3600, id="tick")
    ticker.start(paused=True)  # nothing runs: only its next run time is looked at
    try:
        service._tick_scheduler = ticker
        counts = multiprocessing.get_context("spawn").Queue()
        counts.put([("harvestsuite_scheduler_messages_handled", (("queue", "q"),), 3.0)])
        counts.put(WAKE_TICK)
        before = datetime.now().astimezone()
        wait_for(lambda: (service._add_intake_counts(counts, None), ticker.get_job("tick").next_run_time)[1]
                 <= before + timedelta(seconds=5), what="the tick moved to now")
        assert service.metrics.registry.get_sample_value("harvestsuite_scheduler_messages_handled_total",
                                                         {"queue": "q"}) == 3.0
    finally:
        ticker.shutdown(wait=False)


def numevents_of(engine, harvest_id: int) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(s.harvestdefinitions.c.numevents)
                           .where(s.harvestdefinitions.c.harvest_id == harvest_id))


def test_dead_lettered_do_one_crawl_fails_its_job(engine, run_scheduler, open_queue, make_settings):
    selective_harvest(engine, domains=1)
    scheduler = run_scheduler()
    wait_for(scheduler.leading.is_set, what="leadership")
    names = QueueNames(make_settings().queue.environmentName)
    transport = open_queue()
    link = SchedulerLink(transport, names, "ctl-0", "host", ["FOCUSED"], answer_timeout=20)
    link.register()
    # Heartbeats while it waits, as a controller sends them: one silent for lostAfterHeartbeats (2 s here)
    # after registering is lost, and no job is made for a channel no live controller serves, so a first tick
    # late under load left the harvest waiting for good.
    last_beat = [0.0]

    def heartbeat_then_jobs() -> list:
        if time.monotonic() - last_beat[0] >= 0.5:
            last_beat[0] = time.monotonic()
            link.send_heartbeat(HarvesterStatus(
                controller_id="ctl-0", host="host", pid=1, version="test", channels=["FOCUSED"],
                free_disk_bytes=10**12, load_average=0.0, memory_rss_bytes=0, paused=False, current_job_id=None,
                current_attempt_id=None, current_job_state="idle"))
        return job_rows(engine, 1)
    wait_for(heartbeat_then_jobs, what="the harvest's job")
    link.send_ready()
    taken = wait_for(link.take_job, what="a DoOneCrawl message")
    # The controller finds the message unusable (as a controller of another version would).
    transport.dead_letter(taken.delivery, "template cannot be read: not well-formed (line 1, column 1)")
    job = wait_for(lambda: [j for j in job_rows(engine, 1) if j["status"] == JobStatus.FAILED], what="FAILED")[0]
    assert job["harvest_errors"] == "DoOneCrawl message dead-lettered"
    assert "not well-formed" in job["harvest_error_details"]


def test_crash_between_publish_and_commit_neither_loses_nor_doubles(engine, make_settings, open_queue):
    """The dispatcher dies after the broker confirmed the job message and before its commit: the database
    never recorded that attempt, so its claim is refused; the job is still NEW and is dispatched again."""
    from scheduler.service import SchedulerService

    selective_harvest(engine, domains=1)
    settings = make_settings()
    names = QueueNames(settings.queue.environmentName)

    class Dies(BaseException):
        pass

    transport = open_queue()
    service = SchedulerService.from_settings(settings, engine, transport)
    link = SchedulerLink(open_queue(), names, "ctl-0", "host", ["FOCUSED"], answer_timeout=5)
    registering = threading.Thread(target=link.register)
    registering.start()
    wait_for(lambda: service.drain() or not registering.is_alive(), what="registration")
    registering.join()
    service.tick_once()
    (job,) = job_rows(engine, 1)

    real_publish = transport.publish

    def publish_then_die(queue, body, headers=None):
        real_publish(queue, body, headers)
        if queue == names.jobs("FOCUSED"):
            raise Dies()

    transport.publish = publish_then_die  # the process dies right after the confirm
    link.send_ready()
    with pytest.raises(Dies):
        service.drain()
    transport.publish = real_publish
    assert job_rows(engine, 1)[0]["status"] == JobStatus.NEW and job_rows(engine, 1)[0]["attempt_id"] is None

    orphan = wait_for(link.take_job, what="the orphaned message")
    claiming = {}
    thread = threading.Thread(target=lambda: claiming.setdefault("answer", link.claim(orphan.job)))
    thread.start()
    wait_for(lambda: service.drain() or not thread.is_alive(), what="claim answer")
    thread.join()
    assert not claiming["answer"].granted and "dispatched again" in claiming["answer"].reason
    link.transport.ack(orphan.delivery)

    with engine.begin() as conn:  # the next ready message of the idle controller
        conn.execute(update(s.harvesters).values(released_job_id=None))
    link.send_ready()
    service.drain()
    fresh = wait_for(link.take_job, what="the job dispatched again")
    assert fresh.job.job_id == job["job_id"] and fresh.job.attempt_id != orphan.job.attempt_id
    assert job_rows(engine, 1)[0]["attempt_id"] == fresh.job.attempt_id
    assert decode(encode(fresh.job)) == fresh.job
