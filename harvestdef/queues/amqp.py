"""The RabbitMQ transport: publishing, getting, consuming and settling over pika's asynchronous
``SelectConnection``, whose connection and I/O thread ``_amqp_link.Link`` keeps.

Theory of operation
-------------------
* One I/O thread per transport owns everything pika (``_amqp_link``). It runs the ioloop, so heartbeats
  keep flowing however long a caller holds a delivery (with pika, an I/O loop blocked for longer
  than the heartbeat timeout misses heartbeats: the broker drops the connection and redelivers the message).
* Caller threads never touch pika. They hand a request (``Op``) to the I/O thread and wait on its
  ``Future``; the I/O thread carries requests out in the order they came.
* Two channels: one in confirm mode for publishes and declarations, one for consuming, getting and
  settling. A channel the broker closes (consumer_timeout, a refused declaration) does not take the
  other's work with it.
* Publisher confirms are asynchronous: every publish takes the channel's next delivery tag and its
  Future is resolved by the broker's ``Basic.Ack`` for that tag (or a ``multiple`` ack above it). The
  publishes of many threads are thus pipelined on one connection instead of costing a round trip each.
* A request stays with its channel until it completes. When the channel or the connection is lost, every
  unfinished request runs again from the start once the channel is back: unconfirmed publishes are
  published again (at-least-once), declarations and gets repeated. The caller notices nothing unless the
  publish timeout passes first.
* Channel generations: each (re)opened consuming channel has a new generation. A Delivery carries the
  generation that delivered it; settling a delivery of an older generation is logged and ignored (the
  broker has requeued the message and delivers it again).
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import queue as queue_module
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import pika
from pika import spec
from pika.channel import Channel

from harvestdef.errors import QueueError
from harvestdef.queues._amqp_link import Link
from harvestdef.queues._amqp_state import (
    CLOSED,
    Op,
    Slot,
    Subscription,
    Tag,
    drain,
    header_text,
    nothing,
    resolve,
    url_without_password,
)
from harvestdef.queues.base import (
    Delivery,
    Outgoing,
    PublishFailures,
    Transport,
    _raise_first,
    check_queue_name,
    checked_messages,
    dead_letter_headers,
)
from harvestdef.settings import QueueSettings

__all__ = ["AmqpTransport", "url_without_password"]

log = logging.getLogger(__name__)

_serials = itertools.count(1)
QUEUE_TYPES = ("classic", "quorum")
NACK_RETRY_DELAY = 0.5  # seconds between publishes of a message the broker refused, within publish_timeout
_BROKER_HEADERS = frozenset({"x-delivery-count"})


class AmqpTransport(Transport):
    """Queues on a RabbitMQ broker (see the module docstring for how it works).

    :param url: ``amqp://user:password@host:port/vhost``, or the nodes of a cluster with ``;`` between
        them (each connection goes to one; a lost one goes on with the next).
    :param queue_type: ``classic`` or ``quorum``: the type of every queue it declares. A quorum queue is
        replicated on the nodes of a cluster and outlives any one of them.
    :param dead_letter_queue: where ``dead_letter`` puts messages.
    :param heartbeat: AMQP heartbeat in seconds.
    :param publish_timeout: seconds a publish (and a get, declare, purge, count, ack) may take, waiting
        for a reconnection if need be, before it raises ``QueueError``.
    :param reconnect_max_delay: longest pause between two connection attempts.
    :param prefetch: unacknowledged messages a subscription (``receive``) may hold.
    :param connect_wait: seconds the constructor waits for the first connection attempt to end, so that
        a refused login raises here; a broker that is down does not make it fail. Default:
        ``min(publish_timeout, 10)``.
    :param connection_name: shown by ``rabbitmqctl list_connections client_properties``.
    :raise QueueError: the URL is malformed, or the broker refused the login.
    """

    def __init__(self, url: str, *, dead_letter_queue: str, heartbeat: int = 60, publish_timeout: float = 60.0,
                 reconnect_max_delay: float = 30.0, prefetch: int = 50, connect_wait: float | None = None,
                 connection_name: str | None = None, queue_type: str = "classic") -> None:
        check_queue_name(dead_letter_queue)
        if queue_type not in QUEUE_TYPES:
            raise QueueError(f"queue type {queue_type!r}: one of {', '.join(QUEUE_TYPES)}")
        self.queue_type = queue_type
        self.dead_letter_queue = dead_letter_queue
        self.publish_timeout = publish_timeout
        self.prefetch = prefetch
        self._serial = next(_serials)
        self._subscriptions: dict[str, Subscription] = {}
        self._subscriptions_lock = threading.Lock()
        self._link = Link(url, heartbeat=heartbeat, reconnect_max_delay=reconnect_max_delay, user=self,
                          queue_arguments={"x-queue-type": queue_type},
                          connection_name=connection_name or f"harvestsuite {socket.gethostname()}:{os.getpid()}"
                                                             f" #{self._serial}")
        self.url = self._link.url
        self._publisher = self._link.publisher
        self._consumer = self._link.consumer
        self._link.start(min(publish_timeout, 10.0) if connect_wait is None else connect_wait)

    @classmethod
    def from_settings(cls, settings: QueueSettings, dead_letter_queue: str) -> AmqpTransport:
        return cls(settings.url, dead_letter_queue=dead_letter_queue, heartbeat=settings.heartbeat,
                   publish_timeout=settings.publishTimeout, reconnect_max_delay=settings.reconnectMaxDelay,
                   prefetch=settings.prefetch, queue_type=settings.type)

    def __repr__(self) -> str:
        return f"AmqpTransport({self.url!r})"

    @property
    def is_connected(self) -> bool:
        """Both channels are open (a snapshot: it may change at any moment)."""
        return self._link.is_connected

    @property
    def node_url(self) -> str:
        """The node connected to, or tried next (one of a cluster's), its password hidden."""
        return self._link.node_url

    @property
    def connections_opened(self) -> int:
        """How many times the connection was opened: 1 + the number of reconnections."""
        return self._link.connections_opened

    # -- the interface (caller threads) -------------------------------------------------------------------

    def declare(self, queue: str) -> None:
        check_queue_name(queue)
        op = self._op(queue, f"declaring queue {queue!r}")
        op.run = functools.partial(self._run_declare, op, False)
        self._link.request(self._publisher, op, self.publish_timeout)

    def publish(self, queue: str, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        check_queue_name(queue)
        self._link.request(self._publisher, self._publish_op(queue, body, headers), self.publish_timeout)

    def publish_many(self, messages: Sequence[Outgoing]) -> None:
        """One handoff to the I/O thread for all of them; their confirms are awaited together."""
        valid, failures = checked_messages(messages)
        ops = [(index, self._publish_op(queue, body, headers)) for index, queue, body, headers in valid]
        if ops:
            outcomes = self._link.request_many(self._publisher, [op for _, op in ops], self.publish_timeout)
            failures.update((index, error) for (index, _), error in zip(ops, outcomes, strict=True)
                            if error is not None)
        if failures:
            raise PublishFailures(failures, len(messages))

    def get(self, queue: str) -> Delivery | None:
        check_queue_name(queue)
        op = self._op(queue, f"get from queue {queue!r}")
        op.run = functools.partial(self._run_get, op)
        return self._link.request(self._consumer, op, self.publish_timeout)

    def receive(self, queue: str, timeout: float) -> Delivery | None:
        """While the connection is down this waits like an empty queue: ``None`` after ``timeout``."""
        check_queue_name(queue)
        self._link.check_usable()
        subscription = self._subscription(queue)
        deadline = time.monotonic() + timeout
        while True:
            if subscription.error is not None:
                with self._subscriptions_lock:
                    if self._subscriptions.get(queue) is subscription:
                        del self._subscriptions[queue]  # the next receive subscribes again
                raise QueueError(str(subscription.error)) from subscription.error.__cause__
            try:
                item = subscription.buffer.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue_module.Empty:
                return None
            if item is CLOSED:
                subscription.buffer.put(CLOSED)  # for the other receivers of this subscription
                raise QueueError(f"{self!r} was closed while receiving from queue {queue!r}")
            if isinstance(item, Delivery) and item._handle.generation == self._consumer.generation:
                return item
            # A delivery of a channel that is gone: the broker has requeued it and delivers it again.

    def unsubscribe(self, queue: str) -> None:
        with self._subscriptions_lock:
            subscription = self._subscriptions.pop(queue, None)
        if subscription is None:
            return
        subscription.cancelled = True
        subscription.cancel_future = Future()
        self._link.submit(functools.partial(self._cancel_subscription, subscription))
        try:
            subscription.cancel_future.result(timeout=self.publish_timeout)
        except TimeoutError:
            raise QueueError(f"unsubscribing from queue {queue!r} on {self.url} took longer than "
                             f"{self.publish_timeout} s ({self._link.state()})") from None

    def ack(self, delivery: Delivery) -> None:
        self._settle(delivery, "ack")

    def ack_many(self, deliveries: Sequence[Delivery]) -> None:
        """One handoff to the I/O thread for all of them, and one ``Basic.Ack`` with ``multiple`` when they
        are every message the channel holds up to the highest of them (see ``_run_ack_many``)."""
        errors: list[QueueError] = []
        current: list[tuple[Tag, Delivery]] = []
        for delivery in deliveries:
            try:
                tag = self._tag(delivery)
            except QueueError as exc:
                errors.append(exc)
                continue
            if tag.generation != self._consumer.generation:
                _log_stale("ack", delivery)
            else:
                current.append((tag, delivery))
        if current:
            self._link.check_usable()
            done: Future[None] = Future()
            self._link.submit(functools.partial(self._run_ack_many, current, done))
            try:
                done.result(timeout=self.publish_timeout)
            except TimeoutError:
                errors.append(QueueError(f"ack of {len(current)} messages on {self.url} was not sent within "
                                         f"{self.publish_timeout} s ({self._link.state()})"))
            except QueueError as exc:
                errors.append(exc)
        _raise_first(errors, "ack")

    def nack(self, delivery: Delivery, requeue: bool = True) -> None:
        self._settle(delivery, "nack" if requeue else "nack (drop)")

    def dead_letter(self, delivery: Delivery, reason: str) -> None:
        self._tag(delivery)  # refuse a foreign delivery before publishing anything
        self.publish(self.dead_letter_queue, delivery.body, dead_letter_headers(delivery, reason))
        self.ack(delivery)

    def message_count(self, queue: str) -> int:
        """From ``Queue.DeclareOk`` (declaring the queue if it did not exist)."""
        check_queue_name(queue)
        op = self._op(queue, f"counting the messages of queue {queue!r}")
        op.run = functools.partial(self._run_declare, op, True)
        return self._link.request(self._publisher, op, self.publish_timeout)

    def purge(self, queue: str) -> int:
        check_queue_name(queue)
        op = self._op(queue, f"purging queue {queue!r}")
        op.run = functools.partial(self._run_purge, op)
        return self._link.request(self._publisher, op, self.publish_timeout)

    def close(self) -> None:
        """Closes the connection (the broker requeues unsettled deliveries) and joins the I/O thread;
        requests still waiting fail with ``QueueError``."""
        self._link.close()

    # -- caller-side helpers ------------------------------------------------------------------------------

    def _op(self, queue: str, what: str) -> Op:
        return Op(queue, what, time.monotonic() + self.publish_timeout)

    def _publish_op(self, queue: str, body: bytes, headers: Mapping[str, str] | None) -> Op:
        op = self._op(queue, f"publish to queue {queue!r}")
        # message_id finds the op again if the broker returns the message as unroutable.
        properties = pika.BasicProperties(delivery_mode=pika.DeliveryMode.Persistent,
                                          headers=dict(headers) if headers else None, message_id=str(op.key))
        op.run = functools.partial(self._run_publish, op, bytes(body), properties)
        return op

    def _subscription(self, queue: str) -> Subscription:
        with self._subscriptions_lock:
            subscription = self._subscriptions.get(queue)
            if subscription is not None:
                return subscription
            subscription = self._subscriptions[queue] = Subscription(queue, self.prefetch)
        self._link.submit(functools.partial(self._start_subscription, subscription))
        return subscription

    def _tag(self, delivery: Delivery) -> Tag:
        tag = delivery._handle
        if not isinstance(tag, Tag) or tag.transport != self._serial:
            raise QueueError(f"a delivery from queue {delivery.queue!r} was settled on {self!r}, which did not "
                             "hand it out (AMQP delivery tags belong to the channel that delivered them)")
        return tag

    def _settle(self, delivery: Delivery, action: str) -> None:
        tag = self._tag(delivery)
        if tag.generation != self._consumer.generation:
            _log_stale(action, delivery)
            return
        self._link.check_usable()
        done: Future[None] = Future()
        self._link.submit(functools.partial(self._run_settle, tag, delivery, action, done))
        try:
            done.result(timeout=self.publish_timeout)
        except TimeoutError:
            raise QueueError(f"{action} of a message of queue {delivery.queue!r} on {self.url} was not sent "
                             f"within {self.publish_timeout} s ({self._link.state()})") from None

    # -- I/O thread: what the link asks of us (ChannelUser) -----------------------------------------------

    def setup_channel(self, slot: Slot, channel: Channel, ready: Callable[[], None]) -> None:
        guarded = self._link.guarded
        if slot is self._publisher:
            channel.add_on_return_callback(functools.partial(guarded, self._on_return))
            channel.confirm_delivery(functools.partial(guarded, self._on_confirm, slot.generation),
                                     callback=lambda _frame: ready())
        else:
            channel.add_callback(functools.partial(guarded, self._on_get_empty, slot.generation),
                                 [spec.Basic.GetEmpty], one_shot=False)
            channel.add_on_cancel_callback(functools.partial(guarded, self._on_broker_cancel, slot.generation))
            ready()

    def channel_ready(self, slot: Slot) -> None:
        if slot is self._consumer:
            for subscription in self._subscription_list():
                self._start_subscription(subscription)

    def channel_lost(self, slot: Slot) -> None:
        if slot is self._consumer:
            for subscription in self._subscription_list():
                subscription.consumer_tag = None
                if not self._link.closing:  # when closing, keep the CLOSED marker that abandon() put there
                    drain(subscription.buffer)  # their channel is gone; the broker delivers them again

    def abandon(self, error: Callable[[], QueueError]) -> None:
        for subscription in self._subscription_list():
            subscription.error = error()
            subscription.buffer.put(CLOSED if self._link.closing else None)
            resolve(subscription.cancel_future, None)

    def _subscription_list(self) -> list[Subscription]:
        with self._subscriptions_lock:
            return list(self._subscriptions.values())

    # -- I/O thread: requests -----------------------------------------------------------------------------

    def _run_declare(self, op: Op, count: bool, channel: Channel) -> None:
        def declared(frame: Any) -> None:
            self._link.declared.add(op.queue)
            self._link.known.add(op.queue)
            self._publisher.finish(op, frame.method.message_count if count else None)

        self._link.rpc(self._publisher, self._link.op_failure(self._publisher, op), channel.queue_declare,
                       op.queue, durable=True, arguments=self._link.queue_arguments, callback=declared)

    def _run_purge(self, op: Op, channel: Channel) -> None:
        slot = self._publisher

        def purge() -> None:
            if not op.future.done() and slot.channel is channel:
                self._link.rpc(slot, self._link.op_failure(slot, op), channel.queue_purge, op.queue,
                               callback=lambda frame: slot.finish(op, frame.method.message_count))

        self._link.when_declared(slot, op.queue, purge, self._link.op_failure(slot, op))

    def _run_publish(self, op: Op, body: bytes, properties: pika.BasicProperties, channel: Channel) -> None:
        slot = self._publisher

        def send() -> None:
            if op.future.done() or slot.channel is not channel:
                return
            slot.next_publish_tag += 1
            slot.unconfirmed[slot.next_publish_tag] = op
            op.returned = False
            # mandatory: a queue deleted behind our back returns the message instead of dropping it.
            channel.basic_publish("", op.queue, body, properties, mandatory=True)

        self._link.when_declared(slot, op.queue, send, self._link.op_failure(slot, op))

    def _on_return(self, _channel: Channel, method: spec.Basic.Return, properties: pika.BasicProperties,
                   _body: bytes) -> None:
        op = self._publisher.ops.get(int(properties.message_id or 0))
        if op is not None:
            log.warning("RabbitMQ returned a message for queue %r (%s); declaring it again",
                        op.queue, method.reply_text)
            op.returned = True  # its confirm follows the return, and publishes it again

    def _on_confirm(self, generation: int, frame: Any) -> None:
        slot = self._publisher
        if slot.generation != generation:
            return
        method = frame.method
        if method.multiple:
            tags = list(itertools.takewhile(lambda tag: tag <= method.delivery_tag, slot.unconfirmed))
        else:
            tags = [method.delivery_tag]
        acked = isinstance(method, spec.Basic.Ack)
        for tag in tags:
            op = slot.unconfirmed.pop(tag, None)
            if op is None:
                continue
            if not acked:
                self._refused(slot, op)
            elif op.returned:
                self._link.declared.discard(op.queue)
                self._link.run_op(slot, op)
            else:
                slot.finish(op, None)

    def _refused(self, slot: Slot, op: Op) -> None:
        """A publish the broker nacked: publish it again after NACK_RETRY_DELAY on a new channel, until the
        op's deadline (publish_timeout). A quorum queue nacks while it has no leader, for seconds after its
        leader's node is lost, and a queue that rejects publishes when full nacks until it has room: neither
        loses the message once it is taken, so the caller is answered only when it is, or when time is up.

        The channel is renewed because the broker keeps per channel what it knows of a quorum queue's
        leader: RabbitMQ 3.10 went on refusing, for minutes after the new leader was elected, every publish
        of a channel whose first publish had come while the queue had no leader, while a new channel on the
        same node was served at once."""
        if time.monotonic() + NACK_RETRY_DELAY >= op.deadline:
            slot.fail(op, QueueError(f"{op.what}: RabbitMQ refused the message (Basic.Nack) until the publish "
                                     "timeout (harvestsuite.queue.publishTimeout) ran out"))
            return
        log.warning("%s: RabbitMQ refused the message (Basic.Nack); publishing it again on a new channel in "
                    "%.1f s", op.what, NACK_RETRY_DELAY)
        generation = slot.generation

        def again() -> None:
            # A channel lost meanwhile has run the op again on the new one already; the new channel runs it
            # (with every other unfinished op of the old one) once it is open.
            if slot.generation == generation:
                self._link.renew_channel(slot, f"{op.what} was refused")
        self._link.ioloop.call_later(NACK_RETRY_DELAY, functools.partial(self._link.guarded, again))

    def _run_get(self, op: Op, channel: Channel) -> None:
        slot = self._consumer

        def enqueue() -> None:
            if op.future.done() or slot.channel is not channel:
                return
            slot.gets.append(op)
            if len(slot.gets) == 1:
                self._send_next_get()

        self._link.when_declared(slot, op.queue, enqueue, self._link.op_failure(slot, op))

    def _send_next_get(self) -> None:
        slot = self._consumer
        while slot.gets and slot.gets[0].future.done():
            slot.ops.pop(slot.gets.popleft().key, None)
        if slot.gets and slot.channel is not None:
            slot.channel.basic_get(slot.gets[0].queue, functools.partial(self._link.guarded, self._on_get_ok),
                                   auto_ack=False)

    def _on_get_ok(self, channel: Channel, method: spec.Basic.GetOk, properties: pika.BasicProperties,
                   body: bytes) -> None:
        slot = self._consumer
        if slot.channel is not channel or not slot.gets:
            return
        op = slot.gets.popleft()
        slot.unsettled.add(method.delivery_tag)
        if not slot.finish(op, self._delivery(op.queue, method, properties, body)):
            # Its caller gave up waiting: nobody will settle it, so give it back now.
            slot.unsettled.discard(method.delivery_tag)
            channel.basic_reject(method.delivery_tag, requeue=True)
        self._send_next_get()

    def _on_get_empty(self, generation: int, _frame: Any) -> None:
        slot = self._consumer
        if slot.generation != generation or not slot.gets:
            return
        slot.finish(slot.gets.popleft(), None)
        self._send_next_get()

    def _delivery(self, queue: str, method: Any, properties: pika.BasicProperties, body: bytes) -> Delivery:
        # A quorum queue counts deliveries in a header of its own; the sender's headers are the message's.
        headers = {str(key): header_text(value) for key, value in (properties.headers or {}).items()
                   if key not in _BROKER_HEADERS}
        return Delivery(queue=queue, body=body, headers=headers, redelivered=bool(method.redelivered),
                        _handle=Tag(self._serial, self._consumer.generation, method.delivery_tag))

    def _run_settle(self, tag: Tag, delivery: Delivery, action: str, done: Future[None]) -> None:
        slot = self._consumer
        try:
            if tag.generation != slot.generation or slot.channel is None:
                _log_stale(action, delivery)
            elif tag.delivery_tag not in slot.unsettled:
                # Settling twice would close the channel (unknown delivery tag), and with it every other
                # delivery it holds, so refuse here.
                log.warning("%s of a message of queue %r ignored: it was settled already", action, delivery.queue)
            else:
                slot.unsettled.discard(tag.delivery_tag)
                if action == "ack":
                    slot.channel.basic_ack(tag.delivery_tag)
                else:
                    slot.channel.basic_nack(tag.delivery_tag, requeue=action == "nack")
        except Exception as exc:
            error = QueueError(f"{action} of a message of queue {delivery.queue!r} failed: {exc}")
            error.__cause__ = exc
            done.set_exception(error)
            return
        done.set_result(None)

    def _run_ack_many(self, tags: list[tuple[Tag, Delivery]], done: Future[None]) -> None:
        """Acknowledge the deliveries that this channel still holds unsettled. When they are all the
        channel holds up to the highest tag among them (an intake thread that took everything waiting),
        one ``Basic.Ack`` with ``multiple`` settles them; otherwise a ``multiple`` ack would also settle
        deliveries other threads hold, so each gets its own."""
        slot = self._consumer
        try:
            settling: set[int] = set()
            for tag, delivery in tags:
                if tag.generation != slot.generation or slot.channel is None:
                    _log_stale("ack", delivery)
                elif tag.delivery_tag not in slot.unsettled or tag.delivery_tag in settling:
                    log.warning("ack of a message of queue %r ignored: it was settled already", delivery.queue)
                else:
                    settling.add(tag.delivery_tag)
            if settling:
                assert slot.channel is not None
                highest = max(settling)
                if len(settling) > 1 and all(tag in settling for tag in slot.unsettled if tag <= highest):
                    slot.channel.basic_ack(highest, multiple=True)
                else:
                    for tag in sorted(settling):
                        slot.channel.basic_ack(tag)
                slot.unsettled -= settling
        except Exception as exc:
            error = QueueError(f"ack of {len(tags)} messages failed: {exc}")
            error.__cause__ = exc
            done.set_exception(error)
            return
        done.set_result(None)

    # -- I/O thread: subscriptions ------------------------------------------------------------------------

    def _start_subscription(self, subscription: Subscription) -> None:
        slot = self._consumer
        channel = slot.channel
        if not slot.ready or channel is None or subscription.cancelled or subscription.consumer_tag:
            return  # started when the channel is ready

        def fail(error: QueueError) -> None:
            subscription.error = QueueError(f"subscribing to queue {subscription.queue!r}: {error}")
            subscription.buffer.put(None)  # wake a waiting receiver to raise it

        def consume() -> None:
            if slot.channel is not channel or subscription.cancelled or subscription.consumer_tag:
                return
            # Per-consumer prefetch: global_qos=False applies to the consumers started after it, so it is
            # sent once per channel and prefetch (a controller subscribes again for every job it takes).
            if slot.consumer_prefetch != subscription.prefetch:
                slot.consumer_prefetch = subscription.prefetch
                self._link.rpc(slot, fail, channel.basic_qos, prefetch_count=subscription.prefetch,
                               callback=nothing)
            subscription.consumer_tag = self._link.rpc(
                slot, fail, channel.basic_consume, subscription.queue,
                functools.partial(self._link.guarded, self._on_message, slot.generation, subscription),
                auto_ack=False, callback=nothing)

        self._link.when_declared(slot, subscription.queue, consume, fail)

    def _on_message(self, generation: int, subscription: Subscription, channel: Channel,
                    method: spec.Basic.Deliver, properties: pika.BasicProperties, body: bytes) -> None:
        slot = self._consumer
        if slot.generation != generation:
            return
        if subscription.cancelled:
            channel.basic_reject(method.delivery_tag, requeue=True)
            return
        slot.unsettled.add(method.delivery_tag)
        subscription.buffer.put(self._delivery(subscription.queue, method, properties, body))

    def _cancel_subscription(self, subscription: Subscription) -> None:
        slot = self._consumer
        channel = slot.channel

        def give_back(_frame: Any = None) -> None:
            if subscription.cancel_future is not None and subscription.cancel_future.done():
                return  # pika may call every waiting Cancel-Ok callback for the first Cancel-Ok
            # Received but never handed out: back to the queue.
            for item in drain(subscription.buffer):
                if (isinstance(item, Delivery) and item._handle.generation == slot.generation
                        and item._handle.delivery_tag in slot.unsettled and slot.channel is not None):
                    slot.unsettled.discard(item._handle.delivery_tag)
                    slot.channel.basic_reject(item._handle.delivery_tag, requeue=True)
            resolve(subscription.cancel_future, None)

        if (channel is None or not slot.ready or not subscription.consumer_tag
                or subscription.consumer_tag not in channel.consumer_tags):
            give_back()
            return
        # Not through Link.rpc: a cancel cannot be refused, so it needs no failure handler.
        channel.basic_cancel(subscription.consumer_tag, callback=give_back)

    def _on_broker_cancel(self, generation: int, frame: Any) -> None:
        """The broker ended a consumer (its queue was deleted): declare the queue and consume again."""
        if self._consumer.generation != generation:
            return
        for subscription in self._subscription_list():
            if subscription.consumer_tag == frame.method.consumer_tag:
                log.warning("RabbitMQ cancelled the subscription to queue %r; subscribing again",
                            subscription.queue)
                subscription.consumer_tag = None
                self._link.declared.discard(subscription.queue)
                self._link.ioloop.call_later(1.0, functools.partial(self._link.guarded, self._start_subscription,
                                                                    subscription))


def _log_stale(action: str, delivery: Delivery) -> None:
    # Not an error: the channel that delivered it is gone, so the broker has requeued the message and
    # delivers it again (redelivered=True); whoever gets it then settles it.
    log.info("%s of a message of queue %r ignored: the channel that delivered it was closed since, "
             "the broker will deliver it again", action, delivery.queue)
