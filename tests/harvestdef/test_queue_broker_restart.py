"""The RabbitMQ transport while the broker restarts or enforces consumer_timeout.

These tests stop the broker's application or change its settings, so they are marked ``broker_restart``:
tests/conftest.py moves them to the end of the run, and each one leaves the broker as it found it
(running, settings restored) whatever happens.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator

import pytest

from harvestdef.queues import Delivery
from tests.harvestdef import test_queue_amqp
from tests.harvestdef.test_queue_amqp import rabbitmqctl
from tests.harvestdef.test_queue_sqlite import NewQueue, OpenTransport, wait_until
from tests.servers import is_listening

pytestmark = [pytest.mark.rabbitmq, pytest.mark.broker_restart]

# The RabbitMQ fixtures of test_queue_amqp.py: unique queues deleted afterwards, transports closed.
new_queue = test_queue_amqp.new_queue
open_transport = test_queue_amqp.open_transport

log = logging.getLogger(__name__)


def wait_for_broker(timeout: float = 60) -> None:
    rabbitmqctl("await_startup", timeout=timeout)
    wait_until(lambda: is_listening("127.0.0.1", 5672, timeout=1), timeout=timeout, what="RabbitMQ listening")


@pytest.fixture
def broker_restarter() -> Iterator[None]:
    """Whatever the test does to the broker's application, it is running again afterwards."""
    yield
    rabbitmqctl("start_app")
    wait_for_broker()


def test_publishing_and_receiving_carry_on_over_a_broker_restart(open_transport: OpenTransport,
                                                                 new_queue: NewQueue,
                                                                 broker_restarter: None) -> None:
    queue = new_queue()
    publisher = open_transport(publish_timeout=60)
    receiver = open_transport()
    assert receiver.receive(queue, timeout=0.5) is None  # subscribed before the restart
    received: set[bytes] = set()
    publish_errors: list[BaseException] = []
    stop = threading.Event()

    def publish() -> None:
        try:
            for number in range(300):
                publisher.publish(queue, b"%d" % number)
                time.sleep(0.01)
        except BaseException as exc:
            publish_errors.append(exc)

    def receive() -> None:
        while not stop.is_set():
            delivery = receiver.receive(queue, timeout=0.2)
            if delivery is not None:
                received.add(delivery.body)
                receiver.ack(delivery)  # may come from a lost channel: ignored, it comes again

    threads = [threading.Thread(target=publish), threading.Thread(target=receive)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(received) >= 50, timeout=30, what="50 messages received before the restart")
        outage_started = time.monotonic()
        rabbitmqctl("stop_app")
        time.sleep(1)
        rabbitmqctl("start_app")
        wait_for_broker()
        log.info("broker outage: %.1f s", time.monotonic() - outage_started)
        assert time.monotonic() - outage_started < 60, "outage longer than the publish timeout"
        threads[0].join(timeout=120)
        wait_until(lambda: len(received) == 300, timeout=60, what="all 300 messages received")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    assert publish_errors == []
    assert received == {b"%d" % number for number in range(300)}


def _get_env(key: str) -> str:
    return rabbitmqctl("eval", f"application:get_env(rabbit, {key}).").strip()


def _restore_env(key: str, old: str) -> None:
    match = re.fullmatch(r"\{ok,(\d+)\}", old)
    if match:
        rabbitmqctl("eval", f"application:set_env(rabbit, {key}, {match.group(1)}).")
    else:
        rabbitmqctl("eval", f"application:unset_env(rabbit, {key}).")


@pytest.fixture
def short_consumer_timeout() -> Iterator[None]:
    """consumer_timeout 3 s, checked every second, for channels opened from now on.

    RabbitMQ reads consumer_timeout when a channel opens and checks it on the channel's tick, every
    channel_tick_interval (60 s by default: with only consumer_timeout lowered, the channel closes
    about a minute later). Both are restored afterwards; unset again if they were unset.
    """
    old = {key: _get_env(key) for key in ("consumer_timeout", "channel_tick_interval")}
    try:
        rabbitmqctl("eval", "application:set_env(rabbit, consumer_timeout, 3000).")
        rabbitmqctl("eval", "application:set_env(rabbit, channel_tick_interval, 1000).")
        yield
    finally:
        for key, value in old.items():
            _restore_env(key, value)


def test_a_delivery_held_past_consumer_timeout_is_redelivered(open_transport: OpenTransport,
                                                              new_queue: NewQueue,
                                                              short_consumer_timeout: None,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    queue = new_queue()
    transport = open_transport()
    transport.publish(queue, b"slow job")
    held = transport.receive(queue, timeout=5)
    assert held is not None and not held.redelivered
    started = time.monotonic()

    with caplog.at_level(logging.INFO, logger="harvestdef.queues.amqp"):
        # The broker closes the consuming channel; the transport reopens it and subscribes again.
        again: Delivery | None = transport.receive(queue, timeout=30)
        assert again is not None, "not redelivered within 30 s of the consumer timeout"
        log.info("redelivered %.1f s after the delivery (consumer_timeout 3 s)", time.monotonic() - started)
        assert (again.body, again.redelivered) == (b"slow job", True)
        transport.ack(held)  # late: must not raise
    assert "delivery acknowledgement" in caplog.text and "reopening" in caplog.text
    assert "channel that delivered it was closed" in caplog.text

    transport.ack(again)
    transport.publish(queue, b"still publishing")
    after = transport.receive(queue, timeout=5)
    assert after is not None and after.body == b"still publishing"
    transport.ack(after)
    assert transport.message_count(queue) == 0
