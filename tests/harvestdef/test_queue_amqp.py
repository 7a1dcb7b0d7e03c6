"""The RabbitMQ transport against the real broker: the transport contract, and what only AMQP has
(heartbeats, channel generations, reconnection, refused logins, threads that must not leak).

Every test uses queues of its own (uuid names) and deletes them afterwards, since other test runs share
the broker. Tests that stop the broker or change its settings are in test_queue_broker_restart.py.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from harvestdef.queues import AmqpTransport, Delivery, QueueError, QueueNames, Transport
from harvestdef.queues import open_transport as open_configured_transport
from harvestdef.queues.amqp import url_without_password
from harvestdef.settings import QueueSettings
from tests.harvestdef.test_queue_sqlite import NewQueue, OpenTransport, TransportContract, wait_until
from tests.servers import AMQP_URL, in_ci, require_rabbitmq

pytestmark = pytest.mark.rabbitmq


def rabbitmqctl(*arguments: str, timeout: float = 60) -> str:
    """Run rabbitmqctl; skip the test (fail it under CI) when it is missing or fails."""
    executable = shutil.which("rabbitmqctl")
    if executable is None:
        message = "rabbitmqctl is not installed here"
        if in_ci():
            pytest.fail(message + "; CI=true, so this is a failure, not a skip")
        pytest.skip(message)
    result = subprocess.run([executable, *arguments], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        message = f"rabbitmqctl {' '.join(arguments)} failed ({result.returncode}): {result.stderr.strip()}"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return result.stdout


def delete_queues(names: list[str]) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    try:
        channel = connection.channel()
        for name in names:
            channel.queue_delete(name)
    finally:
        connection.close()


@pytest.fixture
def new_queue() -> Iterator[NewQueue]:
    """A factory of queue names unique to this test; the queues are deleted afterwards."""
    require_rabbitmq()
    names: list[str] = []

    def new() -> str:
        names.append(f"test.{uuid.uuid4().hex}")
        return names[-1]

    yield new
    delete_queues(names)


@pytest.fixture
def open_transport(new_queue: NewQueue) -> Iterator[OpenTransport]:
    """A factory of AmqpTransports on the test broker, closed after the test; short timeouts."""
    opened: list[AmqpTransport] = []

    def open_(**options: Any) -> AmqpTransport:
        options.setdefault("dead_letter_queue", new_queue())
        options.setdefault("publish_timeout", 10)
        options.setdefault("reconnect_max_delay", 2)
        transport = AmqpTransport(options.pop("url", AMQP_URL), **options)
        opened.append(transport)
        return transport

    yield open_
    for transport in opened:
        transport.close()


class TestAmqpContract(TransportContract):
    """The transport contract (test_queue_sqlite.py) on RabbitMQ, through the module's fixtures."""


class TestAmqpQuorumContract(TransportContract):
    """The same contract on quorum queues (harvestsuite.queue.type = quorum), a RabbitMQ cluster's kind,
    here on the one local node."""

    @pytest.fixture
    def open_transport(self, open_transport: OpenTransport) -> OpenTransport:
        def open_quorum(**options: Any) -> AmqpTransport:
            options.setdefault("queue_type", "quorum")
            return open_transport(**options)
        return open_quorum


def test_quorum_queues_are_declared_as_quorum_queues(open_transport: OpenTransport, new_queue: NewQueue) -> None:
    quorum, classic = new_queue(), new_queue()
    open_transport(queue_type="quorum").publish(quorum, b"x")
    open_transport().publish(classic, b"x")
    types = dict(line.split("\t") for line in rabbitmqctl("list_queues", "name", "type", "--no-table-headers",
                                                          "--silent").splitlines() if "\t" in line)
    assert (types[quorum], types[classic]) == ("quorum", "classic")


def test_a_classic_queue_met_as_quorum_fails_naming_the_queue_and_both_types(open_transport: OpenTransport,
                                                                               new_queue: NewQueue) -> None:
    queue = new_queue()
    open_transport().publish(queue, b"stored as classic")
    with pytest.raises(QueueError, match=f"(?s)x-queue-type.*{queue}.*quorum.*classic"):
        open_transport(queue_type="quorum").publish(queue, b"x")
    delivery = open_transport().get(queue)  # what was stored is still there
    assert delivery is not None and delivery.body == b"stored as classic"


def test_an_unknown_queue_type_is_refused() -> None:
    with pytest.raises(QueueError, match="'mirrored'.*classic, quorum"):
        AmqpTransport(AMQP_URL, dead_letter_queue="TEST.deadletter", queue_type="mirrored")
    from harvestdef.settings import SettingsError
    with pytest.raises(SettingsError, match="harvestsuite.queue.type.*'mirrored'"):
        QueueSettings(type="mirrored")


def test_of_a_clusters_nodes_one_that_answers_is_used(open_transport: OpenTransport, new_queue: NewQueue,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    queue = new_queue()
    dead = "amqp://guest:guest@127.0.0.1:1/%2F"
    live = url_without_password(AMQP_URL)
    with caplog.at_level(logging.INFO, logger="harvestdef.queues.amqp"):
        transports = [open_transport(url=f"{dead} ; {AMQP_URL}") for _ in range(4)]
        for transport in transports:
            transport.publish(queue, b"through the live node")
    assert [transport.node_url for transport in transports] == [live] * 4
    # a transport that began with the dead node said so and went on with the next
    tried_dead = caplog.text.count("cannot connect to RabbitMQ at amqp://guest:***@127.0.0.1:1/%2F")
    assert tried_dead == caplog.text.count(f"trying {live} in 0.1 s")
    assert caplog.text.count(f"connected to {live}") == 4
    assert transports[0].message_count(queue) == 4


def test_clients_given_several_nodes_spread_over_them(open_transport: OpenTransport) -> None:
    first, second = AMQP_URL, AMQP_URL.replace("127.0.0.1", "localhost")  # two names of the one broker
    nodes = Counter(open_transport(url=f"{first};{second}").node_url for _ in range(20))
    assert set(nodes) == {url_without_password(first), url_without_password(second)}, nodes


def test_a_lost_connection_goes_on_with_the_next_node(open_transport: OpenTransport, new_queue: NewQueue,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    queue = new_queue()
    name = f"test-{uuid.uuid4().hex}"
    # two names of the one local broker: which one each connection went to is in the log
    urls = [AMQP_URL, AMQP_URL.replace("127.0.0.1", "localhost")]
    transport = open_transport(url=";".join(urls), connection_name=name)
    transport.publish(queue, b"before")
    first = transport.node_url
    (other,) = {url_without_password(url) for url in urls} - {first}
    with caplog.at_level(logging.INFO, logger="harvestdef.queues.amqp"):
        rabbitmqctl("close_connection", connection_pid(name), "node gone")
        wait_until(lambda: "reconnected" in caplog.text, what="the reconnection")
    assert f"lost the connection to RabbitMQ at {first} (" in caplog.text
    assert f"reconnecting to {other}" in caplog.text and f"reconnected to {other}" in caplog.text
    assert transport.node_url == other
    delivery = transport.get(queue)
    assert delivery is not None and delivery.body == b"before"
    transport.ack(delivery)


def test_a_cluster_url_of_something_else_names_the_node_at_fault() -> None:
    with pytest.raises(QueueError, match="'http://x:5672/' of .* is not an amqp:// or amqps:// URL"):
        AmqpTransport(f"{AMQP_URL};http://x:5672/", dead_letter_queue="TEST.deadletter")
    with pytest.raises(QueueError, match="no AMQP URL"):
        AmqpTransport(" ; ", dead_letter_queue="TEST.deadletter")


def test_unacked_messages_go_back_when_the_transport_closes(open_transport: OpenTransport,
                                                            new_queue: NewQueue) -> None:
    queue = new_queue()
    holder = open_transport()
    holder.publish(queue, b"held")
    received = holder.receive(queue, timeout=5)
    taken = holder.get(queue)
    assert received is not None and taken is None
    holder.close()
    holder.ack(received)  # after close: logged and ignored, not raised

    delivery = open_transport().get(queue)
    assert delivery is not None and (delivery.body, delivery.redelivered) == (b"held", True)


class HeartbeatCounter:
    """A TCP relay between AMQP clients and the broker that counts the heartbeat frames going each way.

    It parses the frame stream of AMQP 0-9-1 (the specification's §4.2.3: type, channel, size, payload,
    frame-end), after the 8-byte protocol header the client sends first; a heartbeat is a frame of type 8."""

    HEARTBEAT = 8

    def __init__(self, broker_url: str) -> None:
        parts = urllib.parse.urlsplit(broker_url)
        self.broker = (parts.hostname or "127.0.0.1", parts.port or 5672)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = parts._replace(netloc=f"{parts.username}:{parts.password}@127.0.0.1:"
                                         f"{self.listener.getsockname()[1]}").geturl()
        self.sent = {"client": 0, "broker": 0}  # heartbeat frames sent by each side
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.sent)

    def close(self) -> None:
        self.listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            broker = socket.create_connection(self.broker)
            self._sockets += [client, broker]
            threading.Thread(target=self._relay, args=(client, broker, "client", 8), daemon=True).start()
            threading.Thread(target=self._relay, args=(broker, client, "broker", 0), daemon=True).start()

    def _relay(self, source: socket.socket, target: socket.socket, side: str, header_length: int) -> None:
        pending = b""
        while True:
            try:
                data = source.recv(65536)
                if not data:
                    break
                target.sendall(data)
            except OSError:
                break
            pending += data
            if header_length:
                skipped = min(header_length, len(pending))
                pending, header_length = pending[skipped:], header_length - skipped
            while len(pending) >= 7:
                frame_type, _channel, size = struct.unpack(">BHI", pending[:7])
                if len(pending) < 7 + size + 1:
                    break
                if frame_type == self.HEARTBEAT:
                    with self._lock:
                        self.sent[side] += 1
                pending = pending[7 + size + 1:]
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


def test_heartbeats_flow_while_a_caller_holds_a_delivery(open_transport: OpenTransport, new_queue: NewQueue) -> None:
    queue = new_queue()
    counter = HeartbeatCounter(AMQP_URL)
    try:
        transport = open_transport(url=counter.url, heartbeat=2)
        transport.publish(queue, b"long job")
        delivery = transport.receive(queue, timeout=5)
        assert delivery is not None
        held = counter.counts()
        # This thread holds the delivery and does nothing with the transport until the broker has had its
        # chance to drop a silent client. With a 2 s heartbeat the broker sends a heartbeat every second
        # while it has nothing else to send, and looks for bytes from the client every 2 s, closing the
        # connection after two looks that found none. A client that stops sending gets at most six
        # heartbeats before it is dropped (a pika connection left without I/O through this relay gets six,
        # then EOF), so the seventh is one a client whose I/O stopped while its caller worked never sees;
        # the client's own heartbeats in that span show that its I/O thread kept answering.
        wait_until(lambda: counter.counts()["broker"] - held["broker"] >= 7, timeout=30,
                   what="seven heartbeats from the broker while the delivery is held")
        assert counter.counts()["client"] - held["client"] >= 4

        transport.ack(delivery)
        assert transport.connections_opened == 1  # never lost the connection
        transport.close()
        assert open_transport().get(queue) is None  # the ack counted: not redelivered
    finally:
        counter.close()


def test_close_stops_the_io_thread(new_queue: NewQueue) -> None:
    before = threading.active_count()
    queue = new_queue()
    for _ in range(3):
        with AmqpTransport(AMQP_URL, dead_letter_queue=queue) as transport:
            transport.publish(queue, b"x")
            assert transport.receive(queue, timeout=5) is not None
            assert threading.active_count() > before
    wait_until(lambda: threading.active_count() == before, what="all I/O threads gone")


def test_a_refused_login_raises_naming_the_url_but_not_the_password() -> None:
    require_rabbitmq()
    url = AMQP_URL.replace("guest:guest@", "guest:not-the-password@")
    started = time.monotonic()
    with pytest.raises(QueueError, match="refused the login") as raised:
        AmqpTransport(url, dead_letter_queue="TEST.deadletter", connect_wait=120)
    # the refusal ended the constructor's wait for the first connection attempt, not the 120 s of connect_wait
    assert time.monotonic() - started < 60
    assert "127.0.0.1:5672" in str(raised.value)
    assert "not-the-password" not in str(raised.value)


def test_an_unreachable_broker_fails_calls_after_the_publish_timeout() -> None:
    before = threading.active_count()
    # opening does not wait for the broker: the constructor returns though nothing answers on port 1
    transport = AmqpTransport("amqp://guest:guest@127.0.0.1:1/%2F", dead_letter_queue="TEST.deadletter",
                              publish_timeout=1, reconnect_max_delay=1)
    try:
        assert not transport.is_connected
        with pytest.raises(QueueError, match="publish to queue 'TEST.nowhere'.*not connected"):
            transport.publish("TEST.nowhere", b"x")
        with pytest.raises(QueueError, match="get from queue 'TEST.nowhere'"):
            transport.get("TEST.nowhere")
        assert transport.receive("TEST.nowhere", timeout=0.2) is None
    finally:
        transport.close()
    wait_until(lambda: threading.active_count() == before, what="the I/O thread gone")


def test_a_foreign_delivery_is_refused(open_transport: OpenTransport, new_queue: NewQueue) -> None:
    queue = new_queue()
    one, other = open_transport(), open_transport()
    one.publish(queue, b"x")
    delivery = one.get(queue)
    assert delivery is not None
    with pytest.raises(QueueError, match="did not hand it out"):
        other.ack(delivery)
    with pytest.raises(QueueError):
        other.ack(Delivery(queue=queue, body=b"", headers={}, redelivered=False))
    one.ack(delivery)


def test_a_refused_declaration_fails_that_call_only(open_transport: OpenTransport, new_queue: NewQueue) -> None:
    transient, other = new_queue(), new_queue()
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    connection.channel().queue_declare(transient, durable=False)
    connection.close()
    transport = open_transport()
    with pytest.raises(QueueError, match="PRECONDITION_FAILED"):
        transport.declare(transient)
    with pytest.raises(QueueError, match="PRECONDITION_FAILED"):
        transport.publish(transient, b"x")
    transport.publish(other, b"still works")
    delivery = transport.get(other)
    assert delivery is not None and delivery.body == b"still works"
    transport.ack(delivery)


def test_a_queue_deleted_behind_our_back_is_declared_again(open_transport: OpenTransport,
                                                           new_queue: NewQueue) -> None:
    queue = new_queue()
    transport = open_transport()
    transport.publish(queue, b"first")
    delete_queues([queue])
    transport.publish(queue, b"second")  # returned as unroutable, declared again, published again
    delivery = transport.get(queue)
    assert delivery is not None and delivery.body == b"second"
    transport.ack(delivery)


def connection_pid(name: str) -> str:
    for line in rabbitmqctl("list_connections", "pid", "client_properties", "--no-table-headers",
                            "--silent").splitlines():
        if f'{{"connection_name","{name}"}}' in line:
            return line.split("\t", 1)[0]
    raise AssertionError(f"no connection named {name} on the broker")


def test_reconnects_after_the_broker_closes_the_connection(open_transport: OpenTransport, new_queue: NewQueue,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    queue = new_queue()
    name = f"test-{uuid.uuid4().hex}"
    transport = open_transport(connection_name=name)
    transport.publish(queue, b"before")
    held = transport.receive(queue, timeout=5)
    assert held is not None

    with caplog.at_level(logging.INFO, logger="harvestdef.queues.amqp"):
        rabbitmqctl("close_connection", connection_pid(name), "closed by test_queue_amqp")
        again = transport.receive(queue, timeout=15)  # the subscription is set up again by itself
        assert again is not None and (again.body, again.redelivered) == (b"before", True)
        transport.ack(held)  # from the lost connection: ignored
    assert "lost the connection" in caplog.text and "closed by test_queue_amqp" in caplog.text
    assert "reconnected" in caplog.text
    assert "channel that delivered it was closed" in caplog.text
    transport.ack(again)
    transport.publish(queue, b"after")
    after = transport.receive(queue, timeout=5)
    assert after is not None and after.body == b"after"
    transport.ack(after)
    assert transport.message_count(queue) == 0


def test_open_transport_opens_rabbitmq(new_queue: NewQueue) -> None:
    settings = QueueSettings(url=AMQP_URL, environmentName="TEST", publishTimeout=5, prefetch=7)
    with open_configured_transport(settings) as transport:
        assert isinstance(transport, AmqpTransport)
        assert transport.dead_letter_queue == QueueNames("TEST").dead_letter
        assert transport.prefetch == 7
        queue = new_queue()
        transport.publish(queue, b"x")
        assert transport.message_count(queue) == 1


def test_receivers_of_several_transports_share_a_queue(open_transport: OpenTransport, new_queue: NewQueue) -> None:
    queue = new_queue()
    publisher = open_transport()
    consumers = [open_transport(prefetch=1) for _ in range(3)]
    for number in range(30):
        publisher.publish(queue, b"%d" % number)
    seen: list[bytes] = []
    lock = threading.Lock()

    def consume(transport: Transport) -> None:
        while (delivery := transport.receive(queue, timeout=1)) is not None:
            with lock:
                seen.append(delivery.body)
            transport.ack(delivery)

    threads = [threading.Thread(target=consume, args=(transport,)) for transport in consumers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen, key=int) == [b"%d" % number for number in range(30)]


def test_url_without_password() -> None:
    from harvestdef.queues.amqp import url_without_password

    assert url_without_password("amqp://guest:secret@host:5672/%2F") == "amqp://guest:***@host:5672/%2F"
    assert url_without_password("amqp://host/%2F") == "amqp://host/%2F"
    assert re.search("secret", url_without_password("amqps://u:secret@h/v")) is None



def test_describe_digs_the_reason_out_of_pikas_wrappers() -> None:
    from pika.adapters.utils.connection_workflow import AMQPConnectionWorkflowFailed, AMQPConnectorSocketConnectError

    from harvestdef.queues._amqp_state import describe

    refused = pika.exceptions.AMQPConnectionError(AMQPConnectionWorkflowFailed(
        [AMQPConnectorSocketConnectError(ConnectionRefusedError(111, "Connection refused"))]))
    assert describe(refused) == "ConnectionRefusedError: [Errno 111] Connection refused"
    closed = pika.exceptions.ChannelClosedByBroker(406, "PRECONDITION_FAILED - x")
    assert describe(closed) == "406 PRECONDITION_FAILED - x"



@contextlib.contextmanager
def refusing_when_full(queue: str) -> Iterator[None]:
    """A policy on ``queue``: one message at most, a publish beyond it refused (Basic.Nack), as a quorum
    queue refuses them while it has no leader. Removed after."""
    name = f"full-{queue}"
    rabbitmqctl("set_policy", name, f"^{re.escape(queue)}$",
                '{"max-length": 1, "overflow": "reject-publish"}', "--apply-to", "queues")
    try:
        yield
    finally:
        rabbitmqctl("clear_policy", name)



def policy_applied(queue: str) -> bool:
    listing = rabbitmqctl("list_queues", "name", "policy", "--no-table-headers", "--silent")
    return f"{queue}\tfull-{queue}" in listing.splitlines()


def test_a_refused_publish_is_published_again_until_the_broker_takes_it(open_transport: OpenTransport,
                                                                        new_queue: NewQueue, caplog) -> None:
    queue = new_queue()
    transport, reader = open_transport(publish_timeout=30), open_transport()
    transport.publish(queue, b"first")
    with refusing_when_full(queue):
        wait_until(lambda: policy_applied(queue), what="the policy applied")
        with caplog.at_level(logging.INFO, logger="harvestdef.queues"):
            publishing = threading.Thread(target=transport.publish, args=(queue, b"second"))
            publishing.start()
            wait_until(lambda: caplog.text.count("refused the message (Basic.Nack)") >= 2,
                       what="the second message refused twice")
            # each time on a new channel: RabbitMQ may go on refusing a channel's publishes to a quorum
            # queue after the queue has a leader again
            wait_until(lambda: caplog.text.count("opening a new publishing channel") >= 2,
                       what="the publishing channel renewed twice")
            assert publishing.is_alive()  # the caller still waits: nothing has taken its message
            first = reader.get(queue)
            assert first is not None and first.body == b"first"
            reader.ack(first)  # room again: the next publish of "second" is taken
            publishing.join(timeout=30)
            assert not publishing.is_alive()
        second = reader.get(queue)
        assert second is not None and second.body == b"second"
        reader.ack(second)
        assert reader.get(queue) is None  # taken once
    transport.publish(queue, b"third")  # the renewed channel publishes on
    third = reader.get(queue)
    assert third is not None and third.body == b"third"


def test_a_publish_refused_until_the_timeout_fails_saying_so(open_transport: OpenTransport,
                                                             new_queue: NewQueue) -> None:
    queue = new_queue()
    transport = open_transport(publish_timeout=3)
    transport.publish(queue, b"first")
    with refusing_when_full(queue):
        wait_until(lambda: policy_applied(queue), what="the policy applied")
        with pytest.raises(QueueError, match=r"refused the message \(Basic.Nack\) until the publish timeout"):
            transport.publish(queue, b"second")
