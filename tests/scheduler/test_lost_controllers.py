"""Lost controllers on both databases, driven through the handlers and the tick with an injected clock: the
interrupted mark after lostAfterHeartbeats of the interval the controller states, its return, the
resubmission after resubmitLostAfter, and a controller that comes back after it: its old attempt is never
granted again and its report is never the job's outcome."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.errors import SettingsError
from harvestdef.messages import CrawlStatus, HarvesterStatus
from harvestdef.model.controllers import HEARING_ALL_ALONG, Hearing, LostControllerRule
from harvestdef.model.status import JobStatus
from harvestdef.queues import AmqpTransport, SqliteTransport
from harvestdef.repositories.hearing import read_hearing, write_hearing
from harvestdef.repositories.jobevents import JobEventRepository
from harvestdef.settings import load_settings
from scheduler.jobgen.generate import GenerationOptions
from scheduler.tick import Ticker, TickOptions, TickReport
from tests.harvestdef.test_queue_amqp import connection_pid, rabbitmqctl
from tests.harvestdef.test_queue_sqlite import wait_until
from tests.scheduler.test_intake import (  # noqa: F401
    claim,
    handlers,
    job,
    notifier,
    register,
    report,
    started_job,
    transport,
)
from tests.servers import AMQP_URL, require_rabbitmq


def heartbeat(handle, job_id=None, attempt=None, interval=10.0, sent_at=None):
    handle(HarvesterStatus(controller_id="ctl-1", host="h", pid=1, version="t", channels=["FOCUSED"],
                           free_disk_bytes=1, load_average=0.0, memory_rss_bytes=1, paused=False,
                           current_job_id=job_id, current_attempt_id=attempt, heartbeat_interval=interval),
           sent_at or utcnow())


def ticker(engine, notifier, resubmit_lost_after=600):  # noqa: F811
    # lost after 3 intervals; the controller states 10 s, so 30 s: the default of 1000 s must not be used
    rule = LostControllerRule(lost_after_heartbeats=3, default_heartbeat_interval=1000,
                              resubmit_lost_after=resubmit_lost_after)
    return Ticker(engine, GenerationOptions(), TickOptions(lost=rule), notifier)


def supervise(ticker_, at):
    report_ = TickReport()
    ticker_.supervise(at, report_)
    return report_


def hearing(engine):
    with engine.connect() as conn:
        return read_hearing(conn)


def kinds(engine, job_id):
    with engine.connect() as conn:
        return [event.kind for event in JobEventRepository(conn).for_job(job_id)]


def test_a_controller_is_lost_after_its_own_heartbeat_intervals_and_its_return_clears_the_mark(
        engine, handlers, notifier):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handle, job_id, attempt, sent_at=last)
    tick = ticker(engine, notifier)
    assert supervise(tick, last + timedelta(seconds=29)).interrupted == [], "two missed heartbeats are a delay"
    assert not job(engine, job_id).interrupted
    assert supervise(tick, last + timedelta(seconds=31)).interrupted == [job_id]
    assert job(engine, job_id).interrupted and job(engine, job_id).status == JobStatus.STARTED
    assert supervise(tick, last + timedelta(seconds=40)).interrupted == [], "marked once"
    with engine.connect() as conn:
        (lost,) = JobEventRepository(conn).for_job(job_id)
    assert lost.kind == "lost" and lost.controller_id == "ctl-1" and lost.happened_at == last
    heartbeat(handle, job_id, attempt, sent_at=last + timedelta(seconds=45))
    assert not job(engine, job_id).interrupted, "it came back reporting the job"
    assert kinds(engine, job_id) == ["lost", "back"]
    assert supervise(tick, last + timedelta(seconds=50)).resubmitted == {}


def test_a_lost_controllers_final_report_before_any_heartbeat_says_it_came_back(
        engine, handlers, notifier):  # noqa: F811
    # its connection was on a broker node cut off: the first word the scheduler hears again is the job's end
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handle, job_id, attempt, sent_at=last)
    tick = ticker(engine, notifier)
    assert supervise(tick, last + timedelta(seconds=31)).interrupted == [job_id]
    end = CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.FAILED,
                      harvest_errors="crawl failed")
    assert handle(end)
    assert job(engine, job_id).status == JobStatus.FAILED and not job(engine, job_id).interrupted
    assert kinds(engine, job_id) == ["lost", "back"]
    # a repeat of the report changes nothing, and says nothing again
    handle(end)
    assert kinds(engine, job_id) == ["lost", "back"]


def test_a_job_whose_controller_stays_lost_is_resubmitted_and_its_old_attempt_never_counts_again(
        engine, handlers, notifier):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, configs = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handle, job_id, attempt, sent_at=last)
    tick = ticker(engine, notifier, resubmit_lost_after=600)
    assert supervise(tick, last + timedelta(seconds=60)).interrupted == [job_id]
    assert supervise(tick, last + timedelta(seconds=599)).resubmitted == {}, "not before resubmitLostAfter"
    resubmitted = supervise(tick, last + timedelta(seconds=601)).resubmitted
    new_id = resubmitted[job_id]
    old, new = job(engine, job_id), job(engine, new_id)
    assert old.status == JobStatus.RESUBMITTED and old.resubmitted_as_job == new_id
    assert new.status == JobStatus.NEW and new.num_configs == old.num_configs
    assert kinds(engine, job_id) == ["lost", "resubmitted"]
    assert any(f"Job {job_id} resubmitted as job {new_id}" in subject for subject, _ in notifier.sent)
    with engine.connect() as conn:
        audited = conn.execute(select(s.audit_log.c.after).where(
            s.audit_log.c.tablename == "jobs", s.audit_log.c.row_key == str(job_id))).scalars().all()
    assert any('"CONTROLLER_LOST"' in after and str(new_id) in after for after in audited if after)

    # The controller comes back: its heartbeat naming the old attempt changes nothing, its claim of the old
    # attempt (a resume) is refused, and its report of that attempt is not the job's outcome.
    heartbeat(handle, job_id, attempt)
    assert job(engine, job_id).status == JobStatus.RESUBMITTED
    answer = claim(handle, job_id, attempt, "ctl-1")
    assert not answer.granted and "RESUBMITTED" in answer.reason
    done = CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.DONE,
                       domain_report=report(("a.dk", 5, 500, None), ("b.dk", 5, 500, None)))
    assert not handle(done)
    failed = CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.FAILED,
                         harvest_errors="crawl interrupted")
    assert not handle(failed)
    old = job(engine, job_id)
    assert old.status == JobStatus.RESUBMITTED and old.harvest_errors is None and old.enddate is None
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.historyinfo)
                           .where(s.historyinfo.c.job_id == job_id)) == 0
    assert supervise(tick, last + timedelta(seconds=700)).resubmitted == {}, "resubmitted once"


def test_with_resubmit_lost_after_zero_the_job_waits_for_its_controller(engine, handlers, notifier):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handle, job_id, attempt, sent_at=last)
    tick = ticker(engine, notifier, resubmit_lost_after=0)
    for hours in (1, 24, 48):
        supervise(tick, last + timedelta(hours=hours))
    assert job(engine, job_id).status == JobStatus.STARTED and job(engine, job_id).interrupted


def test_a_controller_that_states_no_interval_is_judged_by_the_schedulers_setting(engine, handlers, notifier):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handle, job_id, attempt, interval=0.0, sent_at=last)
    tick = ticker(engine, notifier)  # 3 x 1000 s for a controller that states none
    assert supervise(tick, last + timedelta(seconds=2999)).interrupted == []
    assert supervise(tick, last + timedelta(seconds=3001)).interrupted == [job_id]


def test_the_old_silence_setting_is_refused_with_what_replaces_it():
    with pytest.raises(SettingsError, match="lostAfterHeartbeats.*resubmitLostAfter"):
        load_settings(environ={}, overrides={"harvestsuite.scheduler.controllerSilenceTimeout": 300})
    with pytest.raises(SettingsError, match="no longer read"):
        load_settings(environ={"HARVESTSUITE__HARVESTSUITE__SCHEDULER__CONTROLLERSILENCETIMEOUT": "300"})
    with pytest.raises(SettingsError, match="at least 2"):
        load_settings(environ={}, overrides={"harvestsuite.scheduler.lostAfterHeartbeats": 1})
    settings = load_settings(environ={})
    assert (settings.scheduler.lostAfterHeartbeats, settings.scheduler.resubmitLostAfter) == (10, 3600)


def registered_at(engine, controller="ctl-1"):
    with engine.connect() as conn:
        return conn.scalar(select(s.harvesters.c.registered_at).where(s.harvesters.c.controller_id == controller))


def test_a_controller_back_without_its_job_has_it_resubmitted_after_claim_grace_time(
        engine, handlers, notifier):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    heartbeat(handle, job_id, attempt, sent_at=utcnow())
    # It starts again with its job directory gone: it registers, and its heartbeats name no job.
    register(handle, "ctl-1")
    back = registered_at(engine)
    tick = ticker(engine, notifier, resubmit_lost_after=0)  # the lost rule alone would never resubmit it
    heartbeat(handle, sent_at=back + timedelta(seconds=100))
    assert supervise(tick, back + timedelta(seconds=101)).resubmitted == {}, "it may still claim it to resume it"
    heartbeat(handle, sent_at=back + timedelta(seconds=121))
    report_ = supervise(tick, back + timedelta(seconds=121))
    assert report_.interrupted == [], "it is not lost"
    new_id = report_.resubmitted[job_id]
    old = job(engine, job_id)
    assert old.status == JobStatus.RESUBMITTED and old.resubmitted_as_job == new_id
    assert job(engine, new_id).status == JobStatus.NEW
    assert kinds(engine, job_id) == ["resubmitted"]
    assert any(f"Job {job_id} resubmitted as job {new_id}" in subject and "back without the job" in body
               for subject, body in notifier.sent)
    with engine.connect() as conn:
        audited = conn.execute(select(s.audit_log.c.after).where(
            s.audit_log.c.tablename == "jobs", s.audit_log.c.row_key == str(job_id))).scalars().all()
    assert any('"CONTROLLER_LOST"' in after and str(new_id) in after for after in audited if after)
    # Its old attempt is never granted again.
    answer = claim(handle, job_id, attempt, "ctl-1")
    assert not answer.granted and "RESUBMITTED" in answer.reason
    assert supervise(tick, back + timedelta(seconds=300)).resubmitted == {}, "resubmitted once"


def test_a_controller_back_with_other_work_has_its_old_job_resubmitted(engine, handlers, notifier):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    register(handle, "ctl-1")
    back = registered_at(engine)
    heartbeat(handle, job_id + 1000, "another-attempt", sent_at=back + timedelta(seconds=130))
    assert supervise(ticker(engine, notifier), back + timedelta(seconds=131)).resubmitted.keys() == {job_id}


def test_a_controller_that_resumes_its_job_after_starting_again_keeps_it(engine, handlers, notifier):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    tick = ticker(engine, notifier, resubmit_lost_after=0)
    heartbeat(handle, job_id, attempt, sent_at=utcnow())
    assert supervise(tick, utcnow() + timedelta(seconds=300)).resubmitted == {}, "a job it names is its own"
    register(handle, "ctl-1")
    back = registered_at(engine)
    heartbeat(handle, sent_at=back + timedelta(seconds=1))  # its first heartbeat, before it claims the job again
    assert claim(handle, job_id, attempt, "ctl-1").granted, "the resume claim"
    heartbeat(handle, job_id, attempt, sent_at=back + timedelta(seconds=5))
    assert supervise(tick, back + timedelta(seconds=600)).resubmitted == {}
    assert job(engine, job_id).status == JobStatus.STARTED


def test_a_silent_controller_is_judged_by_the_lost_rule_alone(engine, handlers, notifier):  # noqa: F811
    # Its last heartbeat named no job, but it came before the grace ran out: only silence counts after that.
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    register(handle, "ctl-1")
    back = registered_at(engine)
    heartbeat(handle, sent_at=back + timedelta(seconds=1))
    tick = ticker(engine, notifier, resubmit_lost_after=0)
    report_ = supervise(tick, back + timedelta(seconds=3600))
    assert report_.resubmitted == {} and report_.interrupted == [job_id]


def test_a_controller_stopped_at_a_checkpoint_keeps_its_job_until_it_starts_again(engine, handlers, notifier):  # noqa: F811
    # Its last heartbeat at shutdown names no job; it has not registered since the job started.
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    stopped = utcnow() + timedelta(seconds=600)
    heartbeat(handle, sent_at=stopped)
    tick = ticker(engine, notifier, resubmit_lost_after=0)
    assert supervise(tick, stopped + timedelta(seconds=1)).resubmitted == {}
    assert job(engine, job_id).status == JobStatus.STARTED


def test_silence_while_the_scheduler_does_not_reach_the_broker_is_not_counted(engine, handlers, notifier,  # noqa: F811
                                                                               tmp_path):
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handle, job_id, attempt, sent_at=last)
    rule = LostControllerRule(lost_after_heartbeats=3, default_heartbeat_interval=1000, resubmit_lost_after=60)
    # a broker nobody answers for: the scheduler's connection is down, as in a broker outage
    unreachable = AmqpTransport("amqp://guest:guest@127.0.0.1:1/%2F", dead_letter_queue="TEST.deadletter",
                                publish_timeout=1, reconnect_max_delay=1, connect_wait=1)
    tick = Ticker(engine, GenerationOptions(), TickOptions(lost=rule), notifier, transport=unreachable)
    try:
        assert not unreachable.is_connected
        # past its 30 s and past resubmitLostAfter: neither counts while no heartbeat could come in
        assert supervise(tick, last + timedelta(seconds=31)).interrupted == []
        assert supervise(tick, last + timedelta(seconds=100)).resubmitted == {}
        assert not job(engine, job_id).interrupted and job(engine, job_id).status == JobStatus.STARTED
        # written for the web UI, which judges silence by it (since the first tick that found it deaf)
        assert hearing(engine) == Hearing(deaf_since=last + timedelta(seconds=31))
    finally:
        unreachable.close()
    with SqliteTransport(tmp_path / "queue.db", dead_letter_queue="TEST.deadletter") as reachable:
        tick.supervision.transport = reachable  # the connection is back
        back = last + timedelta(seconds=120)
        assert supervise(tick, back).interrupted == [], "heard again: the silence is counted from now"
        assert hearing(engine) == Hearing(hearing_since=back)
        assert supervise(tick, back + timedelta(seconds=29)).interrupted == []
        assert supervise(tick, back + timedelta(seconds=31)).interrupted == [job_id]
        with engine.connect() as conn:
            (lost,) = JobEventRepository(conn).for_job(job_id)
        assert lost.happened_at == last, "the event says since when it was silent: its last heartbeat"
        assert supervise(tick, back + timedelta(seconds=59)).resubmitted == {}
        assert job_id in supervise(tick, back + timedelta(seconds=61)).resubmitted


def test_a_broker_connection_lost_and_back_between_two_ticks_restarts_the_count(  # noqa: F811
        engine, handlers, notifier):  # noqa: F811
    require_rabbitmq()
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handle, job_id, attempt, sent_at=last)
    rule = LostControllerRule(lost_after_heartbeats=3, default_heartbeat_interval=1000, resubmit_lost_after=600)
    name = f"test-lost-{uuid.uuid4().hex}"
    with AmqpTransport(AMQP_URL, dead_letter_queue="TEST.deadletter", publish_timeout=10, reconnect_max_delay=1,
                       connection_name=name) as broker:
        tick = Ticker(engine, GenerationOptions(), TickOptions(lost=rule), notifier, transport=broker)
        wait_until(lambda: broker.is_connected, what="the connection")
        assert supervise(tick, last + timedelta(seconds=5)).interrupted == []
        # the connection drops and comes back before the next tick: the tick never sees it down
        rabbitmqctl("close_connection", connection_pid(name), "gone between two ticks")
        wait_until(lambda: broker.connections_opened == 2 and broker.is_connected, what="the reconnection")
        back = last + timedelta(seconds=20)
        assert supervise(tick, back).interrupted == [], "counted from the reconnection, not the last heartbeat"
        assert supervise(tick, back + timedelta(seconds=29)).interrupted == []
        assert supervise(tick, back + timedelta(seconds=31)).interrupted == [job_id]


def resubmitted_after_disk_lost(engine, handle, notifier, store, job_id):  # noqa: F811
    """The job's controller registers again with its disk lost (its heartbeats name no job); a tick with
    ``store`` claimGraceTime later resubmits the job. Returns the new job's id and the notification's body."""
    register(handle, "ctl-1")
    back = registered_at(engine)
    rule = LostControllerRule(lost_after_heartbeats=3, default_heartbeat_interval=1000, resubmit_lost_after=0)
    tick = Ticker(engine, GenerationOptions(), TickOptions(lost=rule), notifier, store=store)
    heartbeat(handle, sent_at=back + timedelta(seconds=121))
    new_id = supervise(tick, back + timedelta(seconds=121)).resubmitted[job_id]
    (body,) = [body for subject, body in notifier.sent if f"Job {job_id} resubmitted as job {new_id}" in subject]
    return new_id, body


def test_a_resubmitted_jobs_files_left_mid_upload_are_listed_in_its_sha256sums(engine, handlers, notifier,  # noqa: F811
                                                                              tmp_path):
    """The controller died mid-upload and came back with its disk lost: the WARC it had stored stays, and
    the resubmission lists it in the job's SHA256SUMS, where no controller ever will."""
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    heartbeat(handle, job_id, attempt, sent_at=utcnow())
    store = ArchiveStore(tmp_path)
    harvest_id = job(engine, job_id).harvest_id
    source = tmp_path / "made.warc.gz"
    source.write_bytes(b"a WARC stored before the controller died")
    store.store(source, harvest_id, job_id, "1-1-20261203-00001.warc.gz")
    directory = store.job_path(harvest_id, job_id)
    assert not (directory / "SHA256SUMS").exists()
    _, body = resubmitted_after_disk_lost(engine, handle, notifier, store, job_id)
    sums = (directory / "SHA256SUMS").read_text()
    assert sums == f"{hashlib.sha256(source.read_bytes()).hexdigest()}  1-1-20261203-00001.warc.gz\n"
    assert f"left 1 files in the archive store ({directory})" in body


def test_a_resubmission_stands_when_the_store_cannot_list_what_the_attempt_left(engine, handlers, notifier,  # noqa: F811
                                                                               tmp_path):
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    heartbeat(handle, job_id, attempt, sent_at=utcnow())
    store = ArchiveStore(tmp_path)
    directory = store.job_path(job(engine, job_id).harvest_id, job_id)
    directory.mkdir(parents=True)
    (directory / "SHA256SUMS").write_text("not a line of sha256sum\n")  # so it cannot be read back
    new_id, body = resubmitted_after_disk_lost(engine, handle, notifier, store, job_id)
    assert job(engine, job_id).status == JobStatus.RESUBMITTED and job(engine, new_id).status == JobStatus.NEW
    assert "could not be listed in SHA256SUMS" in body and "not a sha256sum line" in body


def test_a_new_leader_writes_its_own_hearing_over_what_a_deaf_one_left(engine, handlers, notifier):  # noqa: F811
    """A scheduler that took over from one that was deaf to heartbeats hears them: the row the old leader
    left would otherwise keep every controller from counting as lost on the web UI's pages."""
    job_id, attempt, _ = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handlers.carry_out_one, job_id, attempt, sent_at=last)
    with engine.begin() as conn:
        write_hearing(conn, Hearing(deaf_since=last - timedelta(seconds=300)), "the old leader", last)
    new_leader = ticker(engine, notifier)
    assert supervise(new_leader, last + timedelta(seconds=31)).interrupted == [job_id]
    assert hearing(engine) == HEARING_ALL_ALONG


def test_the_lost_rule_counts_by_the_schedulers_hearing():
    rule = LostControllerRule(lost_after_heartbeats=3, default_heartbeat_interval=10, resubmit_lost_after=60)
    last = utcnow()
    later = last + timedelta(seconds=31)
    assert rule.is_lost(last, None, later) and rule.is_lost(None, None, later)
    deaf = Hearing(deaf_since=last)
    assert not rule.is_lost(last, None, later, deaf) and not rule.is_lost(None, None, later, deaf)
    assert not rule.needs_resubmission(last, None, last + timedelta(seconds=3600), deaf)
    back = Hearing(hearing_since=last + timedelta(seconds=20))
    assert not rule.is_lost(last, None, later, back)
    assert rule.is_lost(last, None, last + timedelta(seconds=51), back)
    assert rule.resubmits_at(last, None, back) == last + timedelta(seconds=80)
    assert back.counted(None) == back.hearing_since and back.counted(later) == later
