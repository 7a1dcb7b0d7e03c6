"""The queue transport contract, and the embedded (SQLite) transport.

``TransportContract`` holds the behaviour every transport must have. It runs here against the SQLite
transport and in test_queue_amqp.py against RabbitMQ; each subclass supplies two fixtures:
``open_transport(**options)`` (a factory whose transports are closed after the test) and ``new_queue()``
(a factory of unique queue names, cleaned up after the test).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harvestdef.queues import PublishFailures, QueueError, QueueNames, SqliteTransport, Transport
from harvestdef.queues import open_transport as open_configured_transport
from harvestdef.queues.sqlite import path_from_url
from harvestdef.settings import QueueSettings

OpenTransport = Callable[..., Transport]
NewQueue = Callable[[], str]


def wait_until(condition: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not reached within {timeout} s")
        time.sleep(0.05)


class TransportContract:
    """What every Transport does (base.py's module docstring), whatever is behind it."""

    def test_publish_get_ack(self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        transport.publish(queue, b"one", {"kind": "test"})
        assert transport.message_count(queue) == 1

        delivery = transport.get(queue)
        assert delivery is not None
        assert (delivery.queue, delivery.body, delivery.headers, delivery.redelivered) == (
            queue, b"one", {"kind": "test"}, False)
        transport.ack(delivery)
        assert transport.get(queue) is None
        transport.close()
        # Gone for good, not just held by the first transport.
        assert open_transport().get(queue) is None

    def test_messages_come_out_in_the_order_they_went_in(self, open_transport: OpenTransport,
                                                          new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        for number in range(20):
            transport.publish(queue, b"%d" % number)
        bodies = []
        while (delivery := transport.get(queue)) is not None:
            bodies.append(delivery.body)
            transport.ack(delivery)
        assert bodies == [b"%d" % number for number in range(20)]

    def test_nack_requeues_as_redelivered_or_drops(self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        transport.publish(queue, b"again")
        first = transport.get(queue)
        assert first is not None and not first.redelivered
        transport.nack(first)

        second = transport.get(queue)
        assert second is not None
        assert (second.body, second.redelivered) == (b"again", True)
        transport.nack(second, requeue=False)
        assert transport.get(queue) is None
        assert transport.message_count(queue) == 0

    def test_dead_letter_moves_the_message_with_its_reason(self, open_transport: OpenTransport,
                                                           new_queue: NewQueue) -> None:
        queue, dead_letters = new_queue(), new_queue()
        transport = open_transport(dead_letter_queue=dead_letters)
        transport.publish(queue, b'{"broken": ', {"type": "DoOneCrawl"})
        delivery = transport.get(queue)
        assert delivery is not None
        transport.dead_letter(delivery, "not valid JSON")

        dead = transport.get(dead_letters)
        assert dead is not None
        assert dead.body == b'{"broken": '
        assert dead.headers == {"type": "DoOneCrawl", "x-reason": "not valid JSON", "x-original-queue": queue}
        transport.ack(dead)
        transport.close()
        assert open_transport().get(queue) is None

    def test_receive_returns_none_after_its_timeout(self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        started = time.monotonic()
        assert transport.receive(queue, timeout=0.5) is None
        # it waited its timeout out, and then returned: the upper bound only catches a wait of another order
        # (a timeout read in milliseconds as seconds, say), never a slow machine
        assert 0.45 <= time.monotonic() - started < 30

    def test_receive_wakes_up_for_a_publish(self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        assert transport.receive(queue, timeout=0.1) is None  # subscribed
        publisher = threading.Timer(0.3, transport.publish, args=(queue, b"late"))
        publisher.start()
        started = time.monotonic()
        delivery = transport.receive(queue, timeout=120)
        publisher.join()
        assert delivery is not None and delivery.body == b"late"
        # well before its timeout: the publish ended the wait, not the timeout's end
        assert time.monotonic() - started < 60
        transport.ack(delivery)

    def test_unsubscribe_gives_back_what_was_not_handed_out(self, open_transport: OpenTransport,
                                                            new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        for number in range(10):
            transport.publish(queue, b"%d" % number)
        first = transport.receive(queue, timeout=5)
        assert first is not None and first.body == b"0"
        transport.unsubscribe(queue)
        wait_until(lambda: transport.message_count(queue) == 9, what="9 messages ready again")

        transport.ack(first)  # still valid after unsubscribing
        rest = []
        while (delivery := transport.get(queue)) is not None:
            rest.append(delivery.body)
            transport.ack(delivery)
        assert rest == [b"%d" % number for number in range(1, 10)]

    def test_settling_twice_is_harmless(self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        transport.publish(queue, b"a")
        transport.publish(queue, b"b")
        first, second = transport.get(queue), transport.get(queue)
        assert first is not None and second is not None
        transport.ack(first)
        transport.ack(first)
        transport.nack(first)
        transport.ack(second)
        transport.close()
        # Had the repeated ack broken the channel, the second message would have come back.
        assert open_transport().get(queue) is None

    def test_message_count_and_purge(self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        transport.declare(queue)
        transport.declare(queue)
        assert transport.message_count(queue) == 0
        for number in range(5):
            transport.publish(queue, b"%d" % number)
        held = transport.get(queue)
        assert transport.message_count(queue) == 4
        assert transport.purge(queue) == 4
        assert transport.message_count(queue) == 0
        assert held is not None
        transport.ack(held)
        assert transport.get(queue) is None

    def test_threads_share_a_transport_and_see_every_message_once(self, open_transport: OpenTransport,
                                                                  new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        publishers, per_publisher, consumers = 8, 500, 4
        expected = publishers * per_publisher
        seen: Counter[bytes] = Counter()
        seen_lock = threading.Lock()
        errors: list[BaseException] = []
        deadline = time.monotonic() + 60

        def publish(number: int) -> None:
            try:
                for index in range(per_publisher):
                    transport.publish(queue, b"%d-%d" % (number, index))
            except BaseException as exc:
                errors.append(exc)

        def consume() -> None:
            try:
                while time.monotonic() < deadline:
                    with seen_lock:
                        if sum(seen.values()) >= expected:
                            return
                    delivery = transport.receive(queue, timeout=0.2)
                    if delivery is not None:
                        with seen_lock:
                            seen[delivery.body] += 1
                        transport.ack(delivery)
            except BaseException as exc:
                errors.append(exc)

        threads = ([threading.Thread(target=publish, args=(number,)) for number in range(publishers)]
                   + [threading.Thread(target=consume) for _ in range(consumers)])
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(seen) == expected
        assert set(seen.values()) == {1}
        assert transport.message_count(queue) == 0

    def test_close_ends_a_waiting_receive(self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        assert transport.receive(queue, timeout=0.1) is None
        outcome: list[object] = []

        def receive() -> None:
            try:
                outcome.append(transport.receive(queue, timeout=120))
            except QueueError as exc:
                outcome.append(exc)

        receiver = threading.Thread(target=receive, daemon=True)
        receiver.start()
        time.sleep(0.3)  # waiting by now, most likely; if not yet, its receive finds the transport closed and raises
        transport.close()
        # the receive would wait 120 s for a message that never comes: ended within 60 s, and with an error
        # rather than its timeout's None, it was the close that ended it
        receiver.join(timeout=60)
        assert not receiver.is_alive(), "close did not end the waiting receive"
        assert len(outcome) == 1 and isinstance(outcome[0], QueueError)

    def test_publish_many_confirms_every_message_in_order(self, open_transport: OpenTransport,
                                                         new_queue: NewQueue) -> None:
        first, second = new_queue(), new_queue()
        transport = open_transport()
        transport.publish_many([(first, b"1"), (second, b"2", {"kind": "answer"}), (first, b"3", None)])
        transport.close()
        reader = open_transport()  # confirmed: there for any other transport
        taken = [reader.get(first), reader.get(first), reader.get(second), reader.get(first)]
        assert [(d.queue, d.body, d.headers) if d else None for d in taken] == [
            (first, b"1", {}), (first, b"3", {}), (second, b"2", {"kind": "answer"}), None]

    def test_publish_many_names_the_messages_that_failed_and_sends_the_others(
            self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        with pytest.raises(PublishFailures) as failed:
            transport.publish_many([(queue, b"1"), ("x" * 300, b"2"), (queue, b"3")])
        assert list(failed.value.failures) == [1]
        assert "invalid queue name" in str(failed.value.failures[1])
        assert "1 of 3 messages not confirmed" in str(failed.value)
        bodies = []
        while (delivery := transport.get(queue)) is not None:
            bodies.append(delivery.body)
            transport.ack(delivery)
        assert bodies == [b"1", b"3"]

    def test_ack_many_removes_the_deliveries_given_and_no_other(self, open_transport: OpenTransport,
                                                               new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        transport.publish_many([(queue, b"%d" % number) for number in range(6)])
        held = [transport.get(queue) for _ in range(6)]
        assert all(held)
        # Every other one: a RabbitMQ multiple-ack up to the last of them would settle the ones between.
        transport.ack_many([held[0], held[2], held[4]])  # type: ignore[list-item]
        for delivery in (held[1], held[3], held[5]):
            transport.nack(delivery)  # type: ignore[arg-type]
        back = []
        while (delivery := transport.get(queue)) is not None:
            back.append((delivery.body, delivery.redelivered))
        assert back == [(b"1", True), (b"3", True), (b"5", True)]

    def test_ack_many_of_every_held_delivery_empties_the_queue(self, open_transport: OpenTransport,
                                                             new_queue: NewQueue) -> None:
        queue = new_queue()
        transport = open_transport()
        transport.publish_many([(queue, b"%d" % number) for number in range(5)])
        held = [transport.receive(queue, timeout=5) for _ in range(5)]
        assert all(held)
        transport.ack_many(held)  # type: ignore[arg-type]
        transport.ack_many([])
        transport.close()
        assert open_transport().get(queue) is None

    def test_ack_many_skips_a_delivery_settled_already_and_acks_the_others(
            self, open_transport: OpenTransport, new_queue: NewQueue, caplog: pytest.LogCaptureFixture) -> None:
        queue = new_queue()
        transport = open_transport()
        transport.publish_many([(queue, b"1"), (queue, b"2")])
        first, second = transport.get(queue), transport.get(queue)
        assert first is not None and second is not None
        transport.ack(first)
        with caplog.at_level(logging.INFO, logger="harvestdef.queues"):
            transport.ack_many([first, second])
        assert "ignored" in caplog.text
        transport.publish(queue, b"3")  # the channel (RabbitMQ) is still usable: no double ack was sent
        last = transport.get(queue)
        assert last is not None and last.body == b"3"
        transport.ack(last)
        transport.close()
        assert open_transport().get(queue) is None

    def test_a_closed_transport_refuses_work(self, open_transport: OpenTransport, new_queue: NewQueue) -> None:
        transport = open_transport()
        transport.close()
        transport.close()  # idempotent
        with pytest.raises(QueueError):
            transport.publish(new_queue(), b"x")
        with pytest.raises(QueueError):
            transport.publish_many([(new_queue(), b"x")])


class TestSqliteContract(TransportContract):
    @pytest.fixture
    def open_transport(self, tmp_path: Path) -> Iterator[OpenTransport]:
        opened: list[Transport] = []

        def open_(**options: Any) -> Transport:
            options.setdefault("dead_letter_queue", "TEST.deadletter")
            options.setdefault("poll_interval", 0.02)
            transport = SqliteTransport(tmp_path / "queue.db", **options)
            opened.append(transport)
            return transport

        yield open_
        for transport in opened:
            transport.close()

    @pytest.fixture
    def new_queue(self) -> NewQueue:
        numbers = iter(range(1, 1000))
        return lambda: f"TEST.queue{next(numbers)}"


# -- the embedded transport only ----------------------------------------------------------------------------


@pytest.fixture
def queue_file(tmp_path: Path) -> Path:
    return tmp_path / "queue.db"


def test_an_expired_lease_hands_the_message_out_again(queue_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    now = [1_000_000.0]  # the wall clock of the leases, moved by the test

    def clock() -> float:
        return now[0]

    with (SqliteTransport(queue_file, dead_letter_queue="DL", lease_timeout=0.3, clock=clock) as slow,
          SqliteTransport(queue_file, dead_letter_queue="DL", lease_timeout=60, clock=clock) as other):
        slow.publish("jobs", b"job")
        held = slow.get("jobs")
        assert held is not None
        assert other.get("jobs") is None  # leased
        now[0] += 0.25
        assert other.get("jobs") is None, "still leased"
        now[0] += 0.1

        again = other.get("jobs")
        assert again is not None and again.redelivered and again.body == b"job"
        with caplog.at_level(logging.INFO, logger="harvestdef.queues.sqlite"):
            slow.ack(held)  # too late: must neither raise nor remove the new holder's message
        assert "lease had expired" in caplog.text
        other.nack(again)
        assert other.message_count("jobs") == 1


def _take_and_hold(path: str, taken: Any) -> None:
    """Child process: lease the message, say so, then hang until killed."""
    transport = SqliteTransport(path, dead_letter_queue="DL", lease_timeout=3600)
    delivery = transport.get("jobs")
    taken.put(delivery.body if delivery else None)
    time.sleep(600)


def test_the_message_of_a_killed_process_is_handed_out_again(queue_file: Path) -> None:
    with SqliteTransport(queue_file, dead_letter_queue="DL", lease_timeout=3600) as transport:
        transport.publish("jobs", b"job")
        context = multiprocessing.get_context("spawn")
        taken = context.Queue()
        child = context.Process(target=_take_and_hold, args=(str(queue_file), taken))
        child.start()
        try:
            assert taken.get(timeout=30) == b"job"
            assert transport.get("jobs") is None  # its holder is alive
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.join()  # reaped: no zombie keeps the pid alive
        delivery = transport.get("jobs")
        assert delivery is not None and delivery.redelivered
        transport.ack(delivery)


def _publish_range(path: str, queue: str, start: int, count: int) -> None:
    with SqliteTransport(path, dead_letter_queue="DL") as transport:
        for number in range(start, start + count):
            transport.publish(queue, b"%d" % number)


def _consume_until_idle(path: str, queue: str, publishers_done: Any, results: Any) -> None:
    seen = []
    with SqliteTransport(path, dead_letter_queue="DL", poll_interval=0.01) as transport:
        while True:
            delivery = transport.receive(queue, timeout=0.3)
            if delivery is None:
                if publishers_done.is_set():
                    break
                continue
            seen.append(int(delivery.body))
            transport.ack(delivery)
    results.put(seen)


def test_processes_share_the_file_without_loss_or_double_delivery(queue_file: Path) -> None:
    SqliteTransport(queue_file, dead_letter_queue="DL").close()  # create the file once, before the race
    context = multiprocessing.get_context("spawn")
    publishers_done, results = context.Event(), context.Queue()
    publishers = [context.Process(target=_publish_range, args=(str(queue_file), "work", start, 500))
                  for start in range(0, 2000, 500)]
    consumers = [context.Process(target=_consume_until_idle,
                                 args=(str(queue_file), "work", publishers_done, results)) for _ in range(3)]
    for process in publishers + consumers:
        process.start()
    for process in publishers:
        process.join(timeout=60)
        assert process.exitcode == 0
    publishers_done.set()
    seen = [number for _ in consumers for number in results.get(timeout=60)]
    for process in consumers:
        process.join(timeout=30)
        assert process.exitcode == 0
    assert sorted(seen) == list(range(2000))


def test_the_file_is_in_wal_mode_with_full_sync(queue_file: Path) -> None:
    with SqliteTransport(queue_file, dead_letter_queue="DL") as transport:
        transport.publish("q", b"x")
        connection = transport._connection()
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert connection.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL


def test_settling_a_foreign_delivery_is_refused(queue_file: Path) -> None:
    from harvestdef.queues import Delivery

    with SqliteTransport(queue_file, dead_letter_queue="DL") as transport, pytest.raises(QueueError):
        transport.ack(Delivery(queue="q", body=b"", headers={}, redelivered=False))


@pytest.mark.parametrize(("url", "path"), [
    ("sqlite:///queue.db", Path("queue.db")),
    ("sqlite:///var/queue.db", Path("var/queue.db")),
    ("sqlite:////srv/hs/queue.db", Path("/srv/hs/queue.db")),
])
def test_path_from_url(url: str, path: Path) -> None:
    assert path_from_url(url) == path


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:", "postgresql://x/y"])
def test_path_from_url_refuses(url: str) -> None:
    with pytest.raises(QueueError):
        path_from_url(url)


def test_open_transport_opens_the_embedded_queue_with_the_environments_dead_letter_queue(tmp_path: Path) -> None:
    settings = QueueSettings(url=f"sqlite:///{tmp_path / 'q.db'}", environmentName="TEST", leaseTimeout=5,
                             pollInterval=20)
    with open_configured_transport(settings) as transport:
        assert isinstance(transport, SqliteTransport)
        assert transport.dead_letter_queue == QueueNames("TEST").dead_letter == "TEST.deadletter"
        assert (transport.lease_timeout, transport.poll_interval) == (5, 0.02)


def test_open_transport_refuses_an_unknown_scheme() -> None:
    with pytest.raises(QueueError, match="redis://"):
        open_configured_transport(QueueSettings(url="redis://localhost/0"))


def test_queue_names() -> None:
    names = QueueNames("PROD")
    assert names.jobs("snapshot") == "PROD.jobs.SNAPSHOT"
    assert names.jobs("FOCUSED") == "PROD.jobs.FOCUSED"
    assert (names.scheduler, names.monitor, names.dead_letter) == ("PROD.scheduler", "PROD.monitor",
                                                                    "PROD.deadletter")
    assert names.controller("h1-a") == "PROD.controller.h1-a"
