"""Webhooks on both databases, over real HTTP to a local receiver: an event is recorded in the transaction of
what it announces, where the e-mail notification is raised, and the scheduler's sender delivers it signed
(the signature verifies as README.md tells receivers to check it), tries a failing receiver again with
growing gaps, gives up on a dead one after maxAttempts with the error in the log, and loses nothing when it
dies between taking a delivery and recording how it went."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.messages import CrawlStatus
from harvestdef.model.controllers import LostControllerRule
from harvestdef.model.status import JobStatus
from harvestdef.queues import open_transport
from harvestdef.repositories.jobs import JobRepository, allocate_job_ids, new_job_row
from harvestdef.repositories.users import UserRepository
from harvestdef.repositories.webhookevents import WebhookEvents
from harvestdef.repositories.webhooks import WebhookRepository
from harvestdef.settings import load_settings
from scheduler.jobgen.generate import GenerationOptions
from scheduler.service import SchedulerService
from scheduler.tick import Ticker, TickOptions, TickReport
from scheduler.webhooks import WebhookSender
from tests.scheduler.factories import T0, make_domain, make_snapshot
from tests.scheduler.test_intake import handlers, notifier, one_job, started_job, transport  # noqa: F401
from tests.scheduler.test_lost_controllers import heartbeat
from tests.webhookreceiver import dead_url, webhook_receiver
from webui import create_app

SECRET = "correct horse battery staple"
# the receivers of these tests listen on loopback, which an operator allows as a site would its own network
LOOPBACK = load_settings(environ={}, overrides={
    "harvestsuite.network.allowDestinations": "127.0.0.0/8,::1"}).network.policy()


def make_webhook(engine, url, events, name="ops", active=True, secret=SECRET):
    with engine.begin() as conn:
        return WebhookRepository(conn, "admin", destinations=LOOPBACK).create(name, url, events, secret, active)


def make_sender(engine, **options) -> WebhookSender:
    """A sender as the scheduler makes one, allowed to send to the tests' loopback receivers."""
    return WebhookSender(engine, destinations=LOOPBACK, **options)


def deliveries(engine, **filters):
    with engine.connect() as conn:
        return WebhookRepository(conn).deliveries(100, **filters)


def verifies(received, secret=SECRET) -> bool:
    """The receiver's check, as README.md gives it: HMAC-SHA256 of the raw body, compared in constant time."""
    expected = "sha256=" + hmac.new(secret.encode("utf-8"), received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(received.headers["X-HarvestSuite-Signature"], expected)


def fail(handle, job_id, attempt, errors="the crawler died"):
    return handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.FAILED,
                              harvest_errors=errors))


def test_a_failed_job_reaches_the_webhooks_that_want_it_signed_and_is_mailed_too(
        engine, handlers, notifier):  # noqa: F811
    handle = handlers.carry_out_one
    with webhook_receiver() as receiver:
        make_webhook(engine, receiver.url, ["job_failed", "harvest_run_done"])
        make_webhook(engine, receiver.url, ["controller_lost"], name="lost only")
        make_webhook(engine, receiver.url, ["job_failed"], name="switched off", active=False)
        job_id, attempt, _ = started_job(engine, handlers)
        assert fail(handle, job_id, attempt)
        # written with the status, before anything is sent; the run's only job ended, so the run is done
        assert [(d.webhook_name, d.event.value, d.state, d.attempts) for d in deliveries(engine)] == [
            ("ops", "harvest_run_done", "pending", 0), ("ops", "job_failed", "pending", 0)]
        assert not fail(handle, job_id, attempt), "a repeat of the report changes nothing"
        assert len(deliveries(engine)) == 2, "and records no second event"

        assert make_sender(engine, timeout=5).send_due() == 2
        received = {json.loads(r.body)["event"]: r for r in receiver.wait_for(2)}
    failed = received["job_failed"]
    assert verifies(failed)
    assert not verifies(failed, secret=SECRET + "!"), "another secret's signature differs"
    document = json.loads(failed.body)
    assert document["job"] == {"id": job_id, "status": "FAILED", "controller": "ctl-1",
                               "harvest_errors": "the crawler died", "upload_errors": None,
                               "stopped_by": None, "budget_reached": None}
    assert document["harvest"] == {"id": 1, "name": "daily", "run": 1}
    assert document["link"] == f"/status/jobs/{job_id}" and "the crawler died" in document["summary"]
    assert failed.path == "/hooks/harvest?site=kb" and failed.headers["Content-Type"].startswith("application/json")
    assert failed.headers["X-HarvestSuite-Event"] == "job_failed"
    assert failed.headers["X-HarvestSuite-Delivery"] == str(document["delivery_id"])
    sent_at = datetime.fromisoformat(document["sent_at"].replace("Z", "+00:00"))
    assert failed.headers["X-HarvestSuite-Timestamp"] == str(int(sent_at.timestamp()))
    assert abs(sent_at - utcnow()) < timedelta(minutes=1)
    run_done = json.loads(received["harvest_run_done"].body)
    assert verifies(received["harvest_run_done"])
    assert run_done["harvest"] == {"id": 1, "name": "daily", "run": 1}
    assert run_done["jobs"] == {"total": 1, "by_status": {"FAILED": 1}}
    assert run_done["link"] == "/history/harvests/daily"
    assert [(d.event.value, d.state, d.attempts, d.last_status, d.last_error) for d in deliveries(engine)] == [
        ("harvest_run_done", "delivered", 1, 200, None), ("job_failed", "delivered", 1, 200, None)]
    assert any(subject == f"Job {job_id} failed" for subject, _ in notifier.sent), "the e-mail goes out as before"


def test_a_receiver_that_fails_twice_gets_three_attempts_from_the_running_scheduler_with_growing_gaps(
        engine, database_url, tmp_path):
    settings = load_settings(environ={}, overrides={
        "harvestsuite.database.url": database_url, "harvestsuite.queue.url": f"sqlite:///{tmp_path / 'queue.db'}",
        "harvestsuite.webui.secretKey": "test", "harvester.scheduler.jobgenerationperiod": 1,
        "harvestsuite.scheduler.leaderLeaseTime": 2, "harvestsuite.webhooks.sendIntervalMs": 50,
        "harvestsuite.webhooks.retryDelayMs": 400, "harvestsuite.webhooks.timeout": 2,
        "harvestsuite.network.allowDestinations": "127.0.0.0/8",
        "harvestsuite.notifications.webuiUrl": "https://harvest.example.org/"})
    with engine.begin() as conn:
        make_snapshot(conn, 1, "broad")
        UserRepository(conn).create("admin", "admin", "a long password")
        token = UserRepository(conn).create_token("admin")
    queue = open_transport(settings.queue)
    service = SchedulerService.from_settings(settings, engine, queue)
    stop = threading.Event()
    with webhook_receiver(answers=[500, 500, 200]) as receiver:
        make_webhook(engine, receiver.url, ["harvest_deactivated"])
        runner = threading.Thread(target=service.run, args=(stop,), daemon=True)
        runner.start()
        try:
            with write_transaction(engine) as conn:
                assert WebhookEvents(conn, settings.notifications.webuiUrl).harvest_deactivated(
                    1, "its crawl template lacks a placeholder") == 1
            first, second, third = receiver.wait_for(3, timeout=60)
            deadline = time.monotonic() + 30
            while deliveries(engine)[0].state != "delivered" and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop.set()
            runner.join(timeout=30)
            queue.close()
    assert all(verifies(request) for request in (first, second, third))
    bodies = [json.loads(request.body) for request in (first, second, third)]
    assert len({body["delivery_id"] for body in bodies}) == 1, "one delivery, attempted three times"
    assert bodies[0]["link"] == "https://harvest.example.org/definitions/harvests/broad"
    early, late = second.at - first.at, third.at - second.at
    # each gap at least its retry delay: 0.4 s, then doubled to 0.8 s (a busy machine only lengthens them)
    assert early >= 0.35 and late >= 0.75, (early, late)
    (logged,) = deliveries(engine)
    assert (logged.state, logged.attempts, logged.last_status, logged.last_error) == ("delivered", 3, 200, None)

    # the delivery log of the web UI says the same
    app = create_app(settings, engine, {"TESTING": True})
    answer = app.test_client().get("/api/v1/webhooks/deliveries", headers={"Authorization": f"Bearer {token}"})
    (item,) = answer.get_json()["items"]
    assert (item["state"], item["attempts"], item["last_status"], item["event"]) == (
        "delivered", 3, 200, "harvest_deactivated")
    assert item["url"] == receiver.url and "broad was deactivated" in item["summary"]


def test_a_dead_receiver_ends_failed_after_max_attempts_with_the_error_shown(engine, tmp_path):
    url = dead_url()
    hook = make_webhook(engine, url, ["job_failed", "harvest_deactivated"])
    with engine.begin() as conn:
        make_snapshot(conn, 1, "broad")
        UserRepository(conn).create("admin", "admin", "a long password")
        token = UserRepository(conn).create_token("admin")
    with write_transaction(engine) as conn:
        WebhookEvents(conn).harvest_deactivated(1, "no configurations")
    sender = make_sender(engine, timeout=2, first_retry=0.1, longest_retry=0.2, max_attempts=3)
    attempts_at = []
    deadline = time.monotonic() + 10
    while deliveries(engine)[0].state == "pending" and time.monotonic() < deadline:
        if sender.send_due():
            attempts_at.append(time.monotonic())
        time.sleep(0.02)
    (logged,) = deliveries(engine)
    assert (logged.state, logged.attempts, logged.last_status, logged.next_attempt_at) == ("failed", 3, None, None)
    assert logged.last_error.startswith("connection refused by 127.0.0.1:"), logged.last_error
    assert len(attempts_at) == 3 and attempts_at[2] - attempts_at[1] >= 0.18
    assert sender.send_due() == 0, "a failed delivery is not tried again by itself"

    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive")})
    client = create_app(settings, engine, {"TESTING": True}).test_client()
    headers = {"Authorization": f"Bearer {token}"}
    (item,) = client.get("/api/v1/webhooks/deliveries?state=failed", headers=headers).get_json()["items"]
    assert item["state"] == "failed" and item["attempts"] == 3 and "connection refused" in item["last_error"]
    assert client.get(f"/api/v1/webhooks/deliveries?state=delivered&webhook={hook.webhook_id}",
                      headers=headers).get_json()["items"] == []
    # an admin sends it again: pending, its attempts counted afresh; a second time is refused
    again = client.post(f"/api/v1/webhooks/deliveries/{item['id']}/send-again", headers=headers)
    assert again.status_code == 200 and (again.get_json()["state"], again.get_json()["attempts"]) == ("pending", 0)
    refused = client.post(f"/api/v1/webhooks/deliveries/{item['id']}/send-again", headers=headers)
    assert refused.status_code == 409 and "only a failed one" in refused.get_json()["error"]["message"]


def test_a_receiver_that_does_not_answer_in_time_is_a_failed_attempt(engine):
    # the receiver takes the request and answers 200 only after 2.5 s: a sender that waited for it would
    # record a delivery, so a failure saying "no answer within 1 s" is the sender's timeout ending the attempt
    with webhook_receiver(delay=2.5) as receiver:
        make_webhook(engine, receiver.url, ["harvest_deactivated"])
        with write_transaction(engine) as conn:
            WebhookEvents(conn).harvest_deactivated(7, "no configurations")
        assert make_sender(engine, timeout=1, max_attempts=1).send_due() == 1
        (request,) = receiver.wait_for(1)
    assert json.loads(request.body)["reason"] == "no configurations"
    (logged,) = deliveries(engine)
    assert logged.state == "failed" and logged.last_error == "no answer within 1 s (harvestsuite.webhooks.timeout)"


def test_an_event_rolled_back_is_never_sent_and_one_whose_sender_died_is_sent_once_its_lease_ran_out(engine):
    with webhook_receiver() as receiver:
        make_webhook(engine, receiver.url, ["harvest_deactivated"])
        with pytest.raises(RuntimeError), write_transaction(engine) as conn:
            WebhookEvents(conn).harvest_deactivated(1, "rolled back with what it announced")
            raise RuntimeError("the transaction fails")
        assert deliveries(engine) == []
        with write_transaction(engine) as conn:
            WebhookEvents(conn).harvest_deactivated(1, "kept")
        now = utcnow()
        sender = make_sender(engine, timeout=1)
        # a sender takes it and dies before its POST: the delivery is held, not lost
        with engine.begin() as conn:
            repository = WebhookRepository(conn)
            ((delivery, webhook),) = repository.due(now, 10)
            assert repository.take(delivery, webhook.url, now, timedelta(seconds=32))
        assert sender.send_due(now + timedelta(seconds=5)) == 0, "held by the dead sender's lease"
        assert sender.send_due(now + timedelta(seconds=33)) == 1
        (request,) = receiver.wait_for(1)
    (logged,) = deliveries(engine)
    assert json.loads(request.body)["reason"] == "kept" and verifies(request)
    assert (logged.state, logged.attempts) == ("delivered", 2), "the dead sender's attempt is counted"


def test_a_lost_controller_and_a_timed_out_job_are_recorded_and_mailed(engine, handlers, notifier):  # noqa: F811
    make_webhook(engine, "https://receiver.example.org/hook", ["controller_lost", "job_failed", "harvest_run_done"])
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    last = utcnow()
    heartbeat(handle, job_id, attempt, sent_at=last)
    rule = LostControllerRule(lost_after_heartbeats=3, default_heartbeat_interval=1000, resubmit_lost_after=0)
    tick = Ticker(engine, GenerationOptions(), TickOptions(lost=rule), notifier)
    report = TickReport()
    tick.supervise(last + timedelta(seconds=31), report)
    assert report.interrupted == [job_id]
    tick.supervise(last + timedelta(seconds=40), TickReport())
    (lost,) = deliveries(engine)
    assert lost.event.value == "controller_lost", "once, when it is found lost"
    assert lost.document["controller"] == {"id": "ctl-1", "host": "h",
                                           "silent_since": last.isoformat().replace("+00:00", "Z")}
    assert lost.document["job"] == {"id": job_id, "status": "STARTED", "interrupted": True}
    assert ("Harvest controller ctl-1 lost" in [subject for subject, _ in notifier.sent])

    timing_out = Ticker(engine, GenerationOptions(), TickOptions(job_timeout=0, lost=rule), notifier)
    assert timing_out.tick(utcnow() + timedelta(seconds=1)).timed_out == [job_id]
    recorded = {d.event.value: d for d in deliveries(engine)}
    assert set(recorded) == {"controller_lost", "job_failed", "harvest_run_done"}
    assert "jobtimeouttime" in recorded["job_failed"].document["reason"]
    assert recorded["harvest_run_done"].document["jobs"] == {"total": 1, "by_status": {"FAILED": 1}}
    assert f"Job {job_id} failed" in [subject for subject, _ in notifier.sent]


def test_a_harvest_deactivated_by_the_tick_is_recorded_and_mailed(engine, notifier):  # noqa: F811
    make_webhook(engine, "http://receiver.example.org/hook", ["harvest_deactivated"])
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
        make_snapshot(conn, 1, "broad")
        conn.execute(s.ordertemplates.update().values(orderxml="<beans>%{NO_SUCH_PLACEHOLDER}</beans>"))
    report = Ticker(engine, GenerationOptions(), TickOptions(postpone_unregistered_channel=False),
                    notifier).tick(T0 + timedelta(days=3))
    assert "broad" in report.deactivated
    (recorded,) = deliveries(engine)
    assert recorded.event.value == "harvest_deactivated" and recorded.document["harvest"] == {"id": 1, "name": "broad"}
    assert recorded.document["reason"] == report.deactivated["broad"]
    assert "Harvest definition broad deactivated" in [subject for subject, _ in notifier.sent]
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.webhook_deliveries)) == 1


def test_a_run_is_done_once_none_of_its_jobs_is_unfinished_and_again_after_a_restart_finishes(engine):
    make_webhook(engine, "https://receiver.example.org/hook", ["harvest_run_done"])
    job_id, _ = one_job(engine)
    with write_transaction(engine) as conn:
        (second,) = allocate_job_ids(conn, 1)
        JobRepository(conn).insert([new_job_row(job_id=second, harvest_id=1, channel="FOCUSED", snapshot=False,
                                                orderxml="default_orderxml", harvest_num=1, creationdate=utcnow())])

    def finish(job, status):
        with write_transaction(engine) as conn:
            conn.execute(update(s.jobs).where(s.jobs.c.job_id == job).values(status=int(status)))
            return WebhookEvents(conn).runs_done([(1, 1)])

    assert finish(job_id, JobStatus.FAILED) == 0, "its second job is NEW still"
    assert finish(second, JobStatus.DONE) == 1
    assert finish(second, JobStatus.DONE) == 0, "the same run done, seen again, is not a second event"
    with write_transaction(engine) as conn:  # an operator restarts the failed job: the run has a job to do
        restarted = JobRepository(conn).resubmit(job_id).job_id
        assert WebhookEvents(conn).runs_done([(1, 1)]) == 0
    assert finish(restarted, JobStatus.DONE) == 1
    (again, first) = deliveries(engine)
    assert first.document["jobs"] == {"total": 2, "by_status": {"DONE": 1, "FAILED": 1}}
    assert again.document["jobs"] == {"total": 3, "by_status": {"DONE": 2, "RESUBMITTED": 1}}
