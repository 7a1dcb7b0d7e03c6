"""Live changes of running jobs, the scheduler's part, on both databases (and, where messages travel, both
transports): pending changes sent in version order to the control queue of the controller holding the job's
claim, and only for STARTED jobs; sent again after liveChangeResendAfter, not before; the controller's
answer settles a change once, and a repeated or stale answer changes nothing; a job that stops running has
its pending changes refused with the reason, and a resubmitted job's changes stay with it; the running
scheduler sends at every liveChangeInterval."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import SettingsError
from harvestdef.livechanges import APPLIED, PENDING, REFUSED
from harvestdef.messages import CrawlStatus, HandledChange, LiveChange, LiveChangeResult, decode, encode
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.queues import QueueNames
from harvestdef.repositories.jobchanges import JobChange, JobChangeRepository
from harvestdef.repositories.jobs import JobRepository, allocate_job_ids, new_job_row
from harvestdef.settings import load_settings
from scheduler.intake import DeadLetter
from scheduler.jobgen.generate import GenerationOptions
from scheduler.service import SchedulerService
from scheduler.tick import Ticker, TickOptions, TickReport
from tests.harvester.test_controller_failures import wait_for
from tests.scheduler.factories import make_selective
from tests.scheduler.test_intake import (  # noqa: F401
    handlers,
    job,
    notifier,
    register,
    report,
    started_job,
    transport,
)
from tests.scheduler.test_lost_controllers import heartbeat, registered_at, supervise, ticker


# ---------------------------------------------------------------------- helpers
def running_job(engine, controller: str | None = "ctl-1", status: JobStatus = JobStatus.STARTED) -> tuple[int, str]:
    """A job of harvest 1 as the protocol leaves it: its attempt granted to ``controller``, in ``status``."""
    now = utcnow()
    with write_transaction(engine) as conn:
        if conn.scalar(select(s.harvestdefinitions.c.harvest_id).where(s.harvestdefinitions.c.harvest_id == 1)) is None:
            make_selective(conn, 1, "daily", [], nextdate=None)
        (job_id,) = allocate_job_ids(conn, 1)
        JobRepository(conn).insert([new_job_row(job_id=job_id, harvest_id=1, channel="FOCUSED", snapshot=False,
                                                orderxml="default_orderxml", harvest_num=1, creationdate=now)],
                                   audit=False)
        attempt = uuid.uuid4().hex
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(
            status=int(status), attempt_id=attempt, controller=controller, submitteddate=now,
            claimed_at=now if controller else None, startdate=now if status != JobStatus.SUBMITTED else None))
    return job_id, attempt


def add_change(engine, job_id: int, kind: str, payload: dict | None = None, now: datetime | None = None) -> JobChange:
    with write_transaction(engine) as conn:
        return JobChangeRepository(conn).add(job_id, kind, payload or {}, "ops1", now or utcnow())


def changes(engine, job_id: int) -> list[JobChange]:
    with engine.connect() as conn:
        return JobChangeRepository(conn).for_job(job_id)


def states(engine, job_id: int) -> list[str]:
    return [change.state for change in changes(engine, job_id)]


def sent_at(engine, job_id: int) -> list[datetime | None]:
    with engine.connect() as conn:
        return list(conn.scalars(select(s.job_changes.c.sent_at).where(s.job_changes.c.job_id == job_id)
                                 .order_by(s.job_changes.c.version)))


def received(transport_, queue: str) -> list[LiveChange]:  # noqa: F811
    """Every message waiting on ``queue``, taken off it, in order."""
    messages = []
    while (delivery := transport_.get(queue)) is not None:
        messages.append(decode(delivery.body, LiveChange))
        transport_.ack(delivery)
    return messages


def result(job_id: int, attempt: str, version: int, state: str = APPLIED, reason: str = "",
           controller: str = "ctl-1", happened_at: datetime | None = None) -> LiveChangeResult:
    return LiveChangeResult(job_id=job_id, attempt_id=attempt, controller_id=controller, version=version,
                            state=state, reason=reason, happened_at=(happened_at or utcnow()).isoformat())


def audited(engine, job_id: int) -> list[dict]:
    with engine.connect() as conn:
        rows = conn.execute(select(s.audit_log.c.actor, s.audit_log.c.after).where(
            s.audit_log.c.tablename == "jobs", s.audit_log.c.row_key == str(job_id))
            .order_by(s.audit_log.c.audit_id)).all()
    return [{"actor": actor, **json.loads(after)} for actor, after in rows if after]


@pytest.fixture
def service(make_settings, engine, open_queue) -> SchedulerService:
    return SchedulerService.from_settings(make_settings(), engine, open_queue())


@pytest.fixture
def names(make_settings) -> QueueNames:
    return QueueNames(make_settings().queue.environmentName)


# ---------------------------------------------------------------------- settings
def test_the_intervals_are_settings_of_a_second_or_more():
    settings = load_settings(environ={})
    assert (settings.scheduler.liveChangeInterval, settings.scheduler.liveChangeResendAfter) == (2, 60)
    for key in ("liveChangeInterval", "liveChangeResendAfter"):
        with pytest.raises(SettingsError, match=key):
            load_settings(environ={}, overrides={f"harvestsuite.scheduler.{key}": 0})


# ---------------------------------------------------------------------- sending
def test_pending_changes_go_in_version_order_to_the_control_queue_of_the_claims_controller(
        engine, service, open_queue, names):
    job_a, attempt_a = running_job(engine, "ctl-1")
    job_b, attempt_b = running_job(engine, "ctl-2")
    submitted, _ = running_job(engine, "ctl-3", JobStatus.SUBMITTED)  # claimed, not STARTED yet
    ended, _ = running_job(engine, "ctl-4", JobStatus.DONE)
    made = [add_change(engine, job_a, "pause"),
            add_change(engine, job_b, "budget", {"domain": "kb.dk", "max_objects": 50}),
            add_change(engine, job_a, "reject", {"regex": ".*calendar.*"}),
            add_change(engine, submitted, "pause"),
            add_change(engine, ended, "stop")]
    now = utcnow()
    assert service.send_live_changes(now) == 3
    controller = open_queue()
    first = received(controller, names.control("ctl-1"))
    assert [(m.job_id, m.attempt_id, m.version, m.kind) for m in first] == [
        (job_a, attempt_a, 1, "pause"), (job_a, attempt_a, 2, "reject")]
    assert json.loads(first[1].payload) == {"regex": ".*calendar.*"}
    assert first[1].author == "ops1" and datetime.fromisoformat(first[1].created) == made[2].created
    assert datetime.fromisoformat(first[1].created).utcoffset() == timedelta(0)
    (second,) = received(controller, names.control("ctl-2"))
    assert (second.job_id, second.attempt_id, second.version, second.kind) == (job_b, attempt_b, 1, "budget")
    assert json.loads(second.payload) == {"domain": "kb.dk", "max_objects": 50}
    assert received(controller, names.control("ctl-3")) == [], "a job not STARTED yet is sent nothing"
    assert received(controller, names.control("ctl-4")) == [], "an ended job is sent nothing"
    assert sent_at(engine, job_a) == [now, now] and sent_at(engine, submitted) == [None]
    assert states(engine, job_a) == [PENDING, PENDING], "sent is not settled: the controller answers"
    assert service.send_live_changes(now + timedelta(seconds=1)) == 0, "nothing due until the resend interval"


def test_an_unanswered_change_is_sent_again_after_the_resend_interval_and_not_before(
        engine, service, open_queue, names):
    job_id, attempt = running_job(engine)
    add_change(engine, job_id, "pause")
    add_change(engine, job_id, "politeness", {"delay_factor": 2.0})
    queue, controller = names.control("ctl-1"), open_queue()
    start = utcnow()
    assert service.send_live_changes(start) == 2
    assert [m.version for m in received(controller, queue)] == [1, 2]
    assert service.send_live_changes(start + timedelta(seconds=59)) == 0
    assert received(controller, queue) == []
    # The controller answers the first; the second is sent again once the interval has passed, alone.
    service.handlers.carry_out_one(result(job_id, attempt, 1))
    assert service.send_live_changes(start + timedelta(seconds=60)) == 1
    assert [m.version for m in received(controller, queue)] == [2]
    # A new change goes alone: the one sent before waits in the durable queue ahead of it, and a copy of
    # every pending change at each new one would fill the queue by the square of their number.
    add_change(engine, job_id, "resume", now=start + timedelta(seconds=61))
    assert service.send_live_changes(start + timedelta(seconds=62)) == 1
    assert [m.version for m in received(controller, queue)] == [3]
    assert service.send_live_changes(start + timedelta(seconds=63)) == 0


def test_a_jobs_control_actions_go_before_its_live_changes_and_a_flood_is_sent_once(
        engine, service, open_queue, names):
    job_id, _ = running_job(engine)
    start = utcnow()
    with write_transaction(engine) as conn:
        for number in range(300):
            JobChangeRepository(conn).add(job_id, "reject", {"regex": f".*/flood-{number}/.*"}, "ops1", start)
        JobChangeRepository(conn).add(job_id, "pause", {}, "ops1", start)
        JobChangeRepository(conn).add(job_id, "reject", {"regex": ".*/after/.*"}, "ops1", start)
        JobChangeRepository(conn).add(job_id, "stop", {}, "ops1", start)
    queue, controller = names.control("ctl-1"), open_queue()
    assert service.send_live_changes(start) == 303
    sent = [(m.version, m.kind) for m in received(controller, queue)]
    assert sent[:2] == [(301, "pause"), (303, "stop")], "control actions first, in version order"
    assert sent[2:] == [(number, "reject") for number in range(1, 301)] + [(302, "reject")]
    # more changes while those wait unanswered: only the new ones go, never the flood again
    for second in range(1, 4):
        add_change(engine, job_id, "reject", {"regex": f".*/more-{second}/.*"}, now=start + timedelta(seconds=second))
        assert service.send_live_changes(start + timedelta(seconds=second)) == 1
        assert [m.version for m in received(controller, queue)] == [303 + second]


def test_changes_wait_in_the_durable_control_queue_of_a_controller_that_is_away(engine, service, open_queue, names):
    job_id, _ = running_job(engine)
    add_change(engine, job_id, "checkpoint")
    assert service.send_live_changes() == 1
    service.transport.close()  # the scheduler's connection goes; the message stays with the broker
    assert [m.kind for m in received(open_queue(), names.control("ctl-1"))] == ["checkpoint"]


def test_tick_once_sends_what_is_due(engine, service, open_queue, names):
    job_id, _ = running_job(engine)
    add_change(engine, job_id, "pause")
    assert service.tick_once().live_changes_sent == 1
    assert [m.kind for m in received(open_queue(), names.control("ctl-1"))] == ["pause"]


# ---------------------------------------------------------------------- settling
def test_an_answer_settles_its_change_once_and_a_repeated_or_stale_answer_changes_nothing(
        engine, service, open_queue, names):
    job_id, attempt = running_job(engine)
    pause, reject = add_change(engine, job_id, "pause"), add_change(engine, job_id, "reject", {"regex": "x"})
    controller = open_queue()

    def answer(message: LiveChangeResult) -> None:
        controller.publish(names.scheduler, encode(message))
        assert service.drain() == 1

    applied_at = reject.created + timedelta(seconds=1)
    answer(result(job_id, attempt, 1, happened_at=applied_at))
    (first, second) = changes(engine, job_id)
    assert (first.state, first.reason, first.applied, first.attempt_id) == (APPLIED, "", applied_at, attempt)
    answer(result(job_id, attempt, 1, REFUSED, "a repeat says otherwise", happened_at=applied_at + timedelta(1)))
    assert changes(engine, job_id)[0] == first, "a repeated answer changes nothing"
    answer(result(job_id, "an-older-attempt", 2, REFUSED, "stale"))
    answer(result(job_id, attempt, 2, REFUSED, "not the claim's controller", controller="ctl-2"))
    answer(result(job_id, attempt, 9))
    answer(result(job_id + 1000, attempt, 1))
    assert changes(engine, job_id)[1] == second and second.state == PENDING
    answer(result(job_id, attempt, 2, REFUSED, "no such rule in the scope",
                  happened_at=reject.created - timedelta(hours=1)))
    settled = changes(engine, job_id)[1]
    assert (settled.state, settled.reason, settled.attempt_id) == (REFUSED, "no such rule in the scope", attempt)
    assert settled.applied == reject.created, "a controller's clock behind the scheduler's: never before it was made"
    trail = [entry for entry in audited(engine, job_id) if "change_version" in entry]
    assert [(entry["actor"], entry["change_version"], entry["change_kind"], entry["change_state"])
            for entry in trail] == [("ctl-1", 1, pause.kind, APPLIED), ("ctl-1", 2, "reject", REFUSED)]
    with engine.connect() as conn:
        assert conn.scalar(select(s.dead_letters.c.queue)) is None, "every answer was taken, none dead-lettered"
    assert service.send_live_changes() == 0, "nothing left pending"


# ---------------------------------------------------------------------- ending
# Each ending takes a STARTED job of ctl-1 out of STARTED as its place in the code does, and returns the id
# of the job it was resubmitted as, if it was.
def _done(engine, handlers, notifier, job_id, attempt) -> None:  # noqa: F811
    handlers.carry_out_one(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.DONE,
                                       domain_report=report(("a.dk", 1, 10, StopReason.DOWNLOAD_COMPLETE))))


def _failed(engine, handlers, notifier, job_id, attempt) -> None:  # noqa: F811
    handlers.carry_out_one(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1",
                                       status=JobStatus.FAILED, harvest_errors="the crawler died"))


def _timed_out(engine, handlers, notifier, job_id, attempt) -> None:  # noqa: F811
    Ticker(engine, GenerationOptions(), TickOptions(job_timeout=60), notifier).supervise(
        utcnow() + timedelta(seconds=61), TickReport())


def _lost(engine, handlers, notifier, job_id, attempt) -> int:  # noqa: F811
    last = utcnow()
    heartbeat(handlers.carry_out_one, job_id, attempt, sent_at=last)
    tick = ticker(engine, notifier, resubmit_lost_after=600)
    supervise(tick, last + timedelta(seconds=60))
    return supervise(tick, last + timedelta(seconds=601)).resubmitted[job_id]


def _left(engine, handlers, notifier, job_id, attempt) -> int:  # noqa: F811
    register(handlers.carry_out_one, "ctl-1")  # it starts again without its job directory
    back = registered_at(engine)
    heartbeat(handlers.carry_out_one, sent_at=back + timedelta(seconds=121))
    return supervise(ticker(engine, notifier, resubmit_lost_after=0), back + timedelta(seconds=121)).resubmitted[job_id]


@pytest.mark.parametrize(("ending", "status", "words"), [
    (_done, JobStatus.DONE, "ended DONE (reported by its controller ctl-1)"),
    (_failed, JobStatus.FAILED, "ended FAILED (reported by its controller ctl-1)"),
    (_timed_out, JobStatus.FAILED, "ended FAILED (STARTED longer than jobtimeouttime (60 s)"),
    (_lost, JobStatus.RESUBMITTED, "its controller ctl-1 stayed lost"),
    (_left, JobStatus.RESUBMITTED, "its controller ctl-1 came back without it, reporting no job"),
], ids=["done", "failed", "timed-out", "controller-lost", "controller-back-without-it"])
def test_a_job_that_stops_running_has_its_pending_changes_refused_with_the_reason(
        engine, handlers, notifier, ending, status, words):  # noqa: F811
    job_id, attempt, _ = started_job(engine, handlers)
    add_change(engine, job_id, "pause")
    add_change(engine, job_id, "add_uris", {"uris": ["https://a.dk/new"]})
    add_change(engine, job_id, "resume")
    handlers.carry_out_one(result(job_id, attempt, 1))
    new_job = ending(engine, handlers, notifier, job_id, attempt)
    assert job(engine, job_id).status == status
    first, *left = changes(engine, job_id)
    assert first.state == APPLIED, "what the controller applied stays applied"
    assert [change.state for change in left] == [REFUSED, REFUSED]
    for change in left:
        assert words in change.reason and f"job {job_id}" in change.reason
        assert change.applied is not None and change.attempt_id == ""
    if new_job is not None:
        assert f"resubmitted as job {new_job}" in left[0].reason and "crawl template" in left[0].reason
        assert changes(engine, new_job) == [], "the new job starts from its template, without this job's changes"
    (entry,) = [entry for entry in audited(engine, job_id) if "changes_refused" in entry]
    assert entry["changes_refused"] == 2 and entry["reason"] == left[0].reason
    # The controller's late answer of a refused change is a repeat: it changes nothing.
    handlers.carry_out_one(result(job_id, attempt, 2))
    assert changes(engine, job_id)[1:] == left


def test_a_dead_lettered_job_message_refuses_the_jobs_pending_changes(engine, handlers):  # noqa: F811
    job_id, attempt = running_job(engine, None, JobStatus.SUBMITTED)
    add_change(engine, job_id, "pause")
    body = json.dumps({"type": "DoOneCrawl", "body": {"job_id": job_id, "attempt_id": attempt}}).encode()
    assert handlers.carry_out_one(DeadLetter("UNIT.jobs.FOCUSED", "bad template", body)) == job_id
    (change,) = changes(engine, job_id)
    assert change.state == REFUSED and "ended FAILED (its DoOneCrawl message was dead-lettered" in change.reason


def test_the_tick_refuses_what_a_job_that_ended_elsewhere_left_pending(engine, notifier):  # noqa: F811
    running, _ = running_job(engine)
    ended, _ = running_job(engine, status=JobStatus.FAILED)
    add_change(engine, running, "pause")
    add_change(engine, ended, "pause")
    add_change(engine, ended, "stop")
    report_ = TickReport()
    Ticker(engine, GenerationOptions(), TickOptions(), notifier).supervise(utcnow(), report_)
    assert report_.changes_refused == {ended: 2}
    assert states(engine, running) == [PENDING]
    assert all("ended FAILED" in change.reason for change in changes(engine, ended))
    report_ = TickReport()
    Ticker(engine, GenerationOptions(), TickOptions(), notifier).supervise(utcnow(), report_)
    assert report_.changes_refused == {}, "refused once"


# ---------------------------------------------------------------------- the running scheduler
def test_the_running_scheduler_sends_changes_at_every_interval_and_settles_the_answers(
        engine, run_scheduler, open_queue, names):
    job_id, attempt = running_job(engine)
    scheduler = run_scheduler(**{"harvestsuite.scheduler.liveChangeInterval": 1})
    wait_for(scheduler.leading.is_set, 30, "leadership")
    controller, queue = open_queue(), names.control("ctl-1")
    # Only the sender's own rounds send, every liveChangeInterval (the running scheduler's tick does not),
    # so a change arriving proves a round ran; one made after the first was sent and settled proves the
    # rounds go on. How soon is the interval's business, not a test's: no time is asserted.
    add_change(engine, job_id, "pause")
    (message,) = wait_for(lambda: received(controller, queue), 30, "the change on the control queue")
    assert (message.job_id, message.attempt_id, message.version, message.kind) == (job_id, attempt, 1, "pause")
    controller.publish(names.scheduler, encode(result(job_id, attempt, 1)))
    wait_for(lambda: states(engine, job_id) == [APPLIED], 30, "the answer settled")
    assert changes(engine, job_id)[0].applied <= datetime.now(UTC)

    add_change(engine, job_id, "resume")
    (message,) = wait_for(lambda: received(controller, queue), 30, "the second change on the control queue")
    assert (message.job_id, message.version, message.kind) == (job_id, 2, "resume"), "the applied one not again"
    controller.publish(names.scheduler, encode(result(job_id, attempt, 2)))
    wait_for(lambda: states(engine, job_id) == [APPLIED, APPLIED], 30, "the second answer settled")


def test_the_final_report_settles_what_the_controller_handled_before_the_rest_is_refused(
        engine, handlers):  # noqa: F811
    # A stop's answer still on its way when the job's DONE arrives: the DONE names it, so it is applied
    job_id, attempt, _ = started_job(engine, handlers)
    add_change(engine, job_id, "pause")
    add_change(engine, job_id, "stop")
    add_change(engine, job_id, "resume")
    handlers.carry_out_one(CrawlStatus(
        job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.DONE,
        domain_report=report(("a.dk", 1, 10, StopReason.DOWNLOAD_UNFINISHED)),
        live_changes=[HandledChange(1, "applied", "", "2026-11-26T10:00:00+00:00"),
                      HandledChange(2, "applied", "", "2026-11-26T10:00:01+00:00")]))
    pause, stop, resume = changes(engine, job_id)
    assert (pause.state, stop.state, resume.state) == (APPLIED, APPLIED, REFUSED)
    assert stop.attempt_id == attempt and "ended DONE" in resume.reason
    handlers.carry_out_one(result(job_id, attempt, 2))  # the late answer itself: a repeat, nothing changes
    assert changes(engine, job_id)[1] == stop
