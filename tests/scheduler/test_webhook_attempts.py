"""Webhook receivers that try to hold the sender, on both databases, over real HTTP: a receiver that sends
its status line and then a byte every fraction of a second ends its attempt at the attempt's deadline; it
delays neither a healthy receiver's delivery nor the scheduler's shutdown (in a thread and as a real
process with one SIGINT); the delivery log keeps a short plain line of whatever a receiver answers; an
address the destination policy refuses is refused when the webhook is saved and again when a delivery
would connect to it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.destinations import PUBLIC_ONLY
from harvestdef.errors import FieldError
from harvestdef.queues import open_transport
from harvestdef.repositories.webhookevents import WebhookEvents
from harvestdef.repositories.webhooks import WebhookRepository
from harvestdef.settings import load_settings
from scheduler.service import SchedulerService
from scheduler.webhooks import WebhookSender
from tests.netns import network_namespace
from tests.scheduler.factories import make_snapshot
from tests.scheduler.test_webhooks import LOOPBACK, SECRET, deliveries, make_sender, make_webhook
from tests.webhookreceiver import slow_receiver, webhook_receiver

ROOT = Path(__file__).resolve().parent.parent.parent
# far longer than any of these tests may take: an attempt that ends sooner was ended by something else
LONG_DEADLINE = 600


def deactivated(engine, harvest_id: int, reason: str = "no configurations") -> int:
    with write_transaction(engine) as conn:
        return WebhookEvents(conn).harvest_deactivated(harvest_id, reason)


def of_webhook(engine, name: str):
    return [d for d in deliveries(engine) if d.webhook_name == name]


def test_a_receiver_that_dribbles_its_answer_ends_its_attempt_at_the_deadline(engine):
    with slow_receiver(interval=0.2) as slow:
        make_webhook(engine, slow.url, ["harvest_deactivated"], name="slow")
        deactivated(engine, 1)
        sending = threading.Thread(target=make_sender(engine, timeout=2, max_attempts=1).send_due, daemon=True)
        sending.start()
        # a byte every 0.2 s never lets a timeout per read run out: only a deadline for the attempt ends it
        sending.join(timeout=LONG_DEADLINE / 10)
        assert not sending.is_alive(), "the attempt went on as long as the receiver dribbled"
        slow.wait(lambda r: r.closed == 1, "the sender hung up")
    (logged,) = deliveries(engine)
    assert logged.state == "failed" and logged.last_status is None
    assert logged.last_error.startswith("the answer's status and headers did not end ("), logged.last_error
    assert logged.last_error.endswith("bytes came) within 2 s (harvestsuite.webhooks.timeout)")


def test_a_slow_receiver_holds_back_neither_a_healthy_one_nor_the_schedulers_shutdown(engine, database_url,
                                                                                      tmp_path):
    settings = load_settings(environ={}, overrides={
        "harvestsuite.database.url": database_url, "harvestsuite.queue.url": f"sqlite:///{tmp_path / 'queue.db'}",
        "harvester.scheduler.jobgenerationperiod": 1, "harvestsuite.scheduler.leaderLeaseTime": 2,
        "harvestsuite.webhooks.sendIntervalMs": 50, "harvestsuite.webhooks.timeout": LONG_DEADLINE,
        "harvestsuite.network.allowDestinations": "127.0.0.0/8"})
    with engine.begin() as conn:
        for harvest_id in range(1, 6):
            make_snapshot(conn, harvest_id, f"broad {harvest_id}")
    with slow_receiver(interval=0.2) as slow, webhook_receiver() as healthy:
        make_webhook(engine, slow.url, ["harvest_deactivated"], name="slow")
        for harvest_id in range(1, 5):  # four deliveries wait for the slow receiver before the healthy one's
            deactivated(engine, harvest_id)
        make_webhook(engine, healthy.url, ["harvest_deactivated"], name="healthy")
        deactivated(engine, 5, "the healthy receiver's too")
        queue = open_transport(settings.queue)
        service = SchedulerService.from_settings(settings, engine, queue)
        stop = threading.Event()
        runner = threading.Thread(target=service.run, args=(stop,), daemon=True)
        runner.start()
        try:
            (request,) = healthy.wait_for(1, timeout=60)
            deadline = time.monotonic() + 30
            while of_webhook(engine, "healthy")[0].state != "delivered" and time.monotonic() < deadline:
                time.sleep(0.05)
            assert json.loads(request.body)["harvest"]["id"] == 5
            # the slow receiver holds its first attempt still; its other deliveries wait behind it, not the
            # healthy receiver's
            slow.wait(lambda r: r.open_connections == 1, "the slow receiver's first attempt is in flight")
            assert len(slow.received) == 1 and slow.closed == 0
        finally:
            stop.set()
            runner.join(timeout=LONG_DEADLINE / 10)
            stopped = not runner.is_alive()
            queue.close()
        assert stopped, "the scheduler's shutdown waited for the slow receiver"
        slow.wait(lambda r: r.closed == 1, "the shutdown hung up on the slow receiver")
    (delivered,) = of_webhook(engine, "healthy")
    assert (delivered.state, delivered.attempts, delivered.last_status) == ("delivered", 1, 200)
    slow_ones = of_webhook(engine, "slow")
    assert all(d.state == "pending" for d in slow_ones)
    # the interrupted attempt is given back, not counted: the next leader sends it at once
    (interrupted,) = [d for d in slow_ones if d.last_error]
    assert interrupted.attempts == 0 and interrupted.last_error.startswith("interrupted: the scheduler stopped")
    assert sum(d.attempts for d in slow_ones) == 0


def test_a_slow_receivers_backlog_larger_than_a_sending_hides_no_other_webhook(engine):
    # a sending looks at per_sending deliveries per lane; the slow webhook's backlog is larger, and older
    with slow_receiver(interval=0.2) as slow, webhook_receiver() as healthy:
        make_webhook(engine, slow.url, ["harvest_deactivated"], name="slow")
        for harvest_id in range(1, 5):
            deactivated(engine, harvest_id)
        make_webhook(engine, healthy.url, ["harvest_deactivated"], name="healthy")
        deactivated(engine, 5)
        sender = make_sender(engine, timeout=LONG_DEADLINE, per_sending=2)
        try:
            assert sender.start_due() == 2, "a lane for each webhook"
            assert sender.start_due() == 0, "and no second one while they run"
            (request,) = healthy.wait_for(1, timeout=60)
            slow.wait(lambda r: r.open_connections == 1, "the slow receiver's first attempt is in flight")
        finally:
            sender.close()
        slow.wait(lambda r: r.closed == 1, "closing the sender hung up on the slow receiver")
    assert json.loads(request.body)["harvest"]["id"] == 5
    assert sender.start_due() == 0, "a closed sender starts nothing"


def test_a_scheduler_process_stops_at_one_sigint_while_a_receiver_hangs(engine, database_url, tmp_path):
    with engine.begin() as conn:
        make_snapshot(conn, 1, "broad")
    settings = {"harvestsuite.database.url": database_url, "harvestsuite.queue.url": f"sqlite:///{tmp_path / 'q.db'}",
                "harvester.scheduler.jobgenerationperiod": "1", "harvestsuite.scheduler.leaderLeaseTime": "2",
                "harvestsuite.webhooks.sendIntervalMs": "50", "harvestsuite.webhooks.timeout": str(LONG_DEADLINE),
                "harvestsuite.network.allowDestinations": "127.0.0.0/8"}
    arguments = [item for key, value in settings.items() for item in ("--set", f"{key}={value}")]
    with slow_receiver(interval=0.2) as slow:
        make_webhook(engine, slow.url, ["harvest_deactivated"], name="slow")
        deactivated(engine, 1)
        log = tmp_path / "scheduler.log"  # a file, not a pipe: a chatty process never blocks on a full one
        with log.open("w") as stderr:
            process = subprocess.Popen([sys.executable, "-m", "harvestdef", *arguments, "scheduler", "run"],
                                       cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, env={**os.environ})
        try:
            slow.wait(lambda r: r.open_connections == 1, "the scheduler's attempt is in flight", timeout=60)
            process.send_signal(signal.SIGINT)
            try:
                returncode = process.wait(timeout=LONG_DEADLINE / 10)
            except subprocess.TimeoutExpired:
                returncode = None
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        errors = log.read_text(encoding="utf-8", errors="replace")
        assert returncode == 0, f"one SIGINT did not stop the scheduler ({returncode}): {errors[-2000:]}"
        assert "maximum number of running instances" not in errors, "a sending waited for the receiver"
        slow.wait(lambda r: r.closed == 1, "the scheduler hung up on the slow receiver")
    (logged,) = deliveries(engine)
    assert (logged.state, logged.attempts) == ("pending", 0), "given back for the next leader"
    assert logged.last_error.startswith("interrupted"), logged.last_error


@pytest.mark.parametrize(("headers", "body", "words"), [
    ({"Content-Type": "text/html; charset=utf-8"},
     b"<!doctype html><html><head><title>Grafana</title></head><body>" + b"<div>secret dashboard</div>" * 200 +
     b"</body></html>", "(a text/html answer, not kept)"),
    ({"Content-Type": "application/octet-stream"}, bytes(range(256)) * 8,
     "(an application/octet-stream answer, not kept)"),
    ({}, b"\x00\x01PG\x02binary\x03" * 40, "(an untyped answer that is not plain text, not kept)"),
    ({}, b"<html><body>an untyped page</body></html>", "(an untyped answer that is not plain text, not kept)"),
    ({"Content-Type": "text/plain"}, b"quota\n\texceeded \x1b[31mred\x1b[0m " + b"x" * 2000, "quota exceeded"),
    ({"Content-Type": "application/json"}, json.dumps({"error": "bad signature"}).encode(), '"bad signature"'),
])
def test_the_delivery_log_keeps_a_short_plain_line_of_whatever_a_receiver_answers(engine, headers, body, words):
    with webhook_receiver(answers=[500], body=body, headers=headers) as receiver:
        make_webhook(engine, receiver.url, ["harvest_deactivated"])
        deactivated(engine, 1)
        assert make_sender(engine, timeout=5, max_attempts=1, excerpt_limit=80).send_due() == 1
        receiver.wait_for(1)
    (logged,) = deliveries(engine)
    error = logged.last_error
    assert error.startswith("HTTP 500 Internal Server Error: ") and words in error, error
    assert len(error) <= len("HTTP 500 Internal Server Error: ") + 80, error
    assert error.isprintable() and "<" not in error and "secret dashboard" not in error, error


def test_a_redirect_is_not_followed_and_its_target_is_logged_as_one_short_line(engine):
    with webhook_receiver() as elsewhere, webhook_receiver(
            answers=[307], headers={"Location": elsewhere.url + "&x=" + "y" * 3000}) as moved:
        make_webhook(engine, moved.url, ["harvest_deactivated"])
        deactivated(engine, 1)
        assert make_sender(engine, timeout=5, max_attempts=1).send_due() == 1
        moved.wait_for(1)
    assert elsewhere.received == [], "the signed body went nowhere else"
    (logged,) = deliveries(engine)
    assert (logged.state, logged.last_status) == ("failed", 307)
    assert f"redirected to {elsewhere.url}" in logged.last_error and "deliveries are not redirected" in \
        logged.last_error
    assert len(logged.last_error) < 400, logged.last_error


def test_a_refused_address_is_refused_when_saved_naming_it_and_why_and_nothing_is_stored(engine):
    for url, kind in (("http://127.0.0.1:8080/hook", "loopback"), ("http://localhost:15672/api", "loopback"),
                      ("http://[::1]:5432/", "loopback"), ("https://10.0.0.7/hooks", "private"),
                      ("http://169.254.169.254/latest/meta-data/", "link-local")):
        with engine.begin() as conn, pytest.raises(FieldError) as refused:
            WebhookRepository(conn, "admin").create("internal", url, ["job_failed"], SECRET)
        assert refused.value.field == "url"
        assert url in refused.value.problem and f"is a {kind} address" in refused.value.problem, refused.value
        assert "harvestsuite.network.allowDestinations" in refused.value.problem
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.webhooks)) == 0
    # what the operator allows is saved, and changing it to a refused address is refused the same way
    with engine.begin() as conn:
        hook = WebhookRepository(conn, "admin", destinations=LOOPBACK).create(
            "local", "http://127.0.0.1:8080/hook", ["job_failed"], SECRET)
    with engine.begin() as conn, pytest.raises(FieldError, match="10.1.2.3"):
        WebhookRepository(conn, "admin", destinations=LOOPBACK).update(hook.webhook_id, hook.edition,
                                                                       url="http://10.1.2.3/hook")


def test_a_delivery_checks_the_address_it_would_connect_to_now(engine):
    # saved while its name was allowed (as a name that resolved to a public address then); the sender's
    # policy refuses the address it resolves to now, so nothing reaches the receiver
    with webhook_receiver() as receiver:
        make_webhook(engine, receiver.url.replace("127.0.0.1", "localhost"), ["harvest_deactivated"])
        deactivated(engine, 1)
        assert WebhookSender(engine, timeout=5, max_attempts=1, destinations=PUBLIC_ONLY).send_due() == 1
        assert receiver.received == []
    (logged,) = deliveries(engine)
    assert (logged.state, logged.last_status) == ("failed", None)
    assert logged.last_error.startswith("not sent: localhost ("), logged.last_error
    assert "is a loopback address, which harvesting does not connect to unless harvestsuite.network." \
           "allowDestinations allows it" in logged.last_error


@pytest.fixture
def silent_dns_namespace(tmp_path: Path):
    """A network namespace of this test's own whose resolv.conf (/etc/netns/NAME/resolv.conf, which ``ip
    netns exec`` mounts over /etc/resolv.conf) asks 127.0.0.1 and waits 30 s for an answer."""
    name = f"hs-dns-{os.getpid()}-{tmp_path.name[-12:]}"[:40]
    with network_namespace(name, {"resolv.conf": "nameserver 127.0.0.1\noptions timeout:30 attempts:1\n"}):
        yield name


def test_a_resolver_that_never_answers_ends_the_attempt_at_its_deadline(silent_dns_namespace):
    result = subprocess.run(["ip", "netns", "exec", silent_dns_namespace, sys.executable, "-m",
                             "tests.scheduler.silent_resolver_attempt", "1"],
                            capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["error"] == "no address for receiver.silent-dns.test within 1 s (harvestsuite.webhooks.timeout)"
    # the resolver waits 30 s for its answer; the attempt ends at its deadline of 1 s, not at the resolver's
    assert found["seconds"] < 15, found
