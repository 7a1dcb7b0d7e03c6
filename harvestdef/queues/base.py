"""The queue transport interface: durable named queues of byte messages, shared by every process of a site.

Two transports implement it: RabbitMQ through pika (``amqp.py``) and an embedded queue in one SQLite file
(``sqlite.py``). Callers see the same guarantees from both:

* **At least once.** A message is removed from its queue only when the consumer that holds it calls
  ``ack`` (or ``dead_letter``, or ``nack(requeue=False)``). A consumer that dies, loses its connection
  or lets its lease expire before that gives the message back, and somebody receives it again.
  Receivers must therefore be idempotent: the same message can arrive twice.
* **Confirmed publishes.** ``publish`` returns only once the message is safe: RabbitMQ has confirmed it
  (publisher confirms, persistent message, durable queue), or the SQLite row is committed. A publish
  whose confirm was lost with a connection is sent again after reconnecting, so a publish may leave two
  copies of a message, never none. A publish that cannot be confirmed within the transport's publish
  timeout raises ``QueueError``; the message may or may not have arrived. ``publish_many`` is the same for
  several messages, confirmed side by side, and names the ones that failed (``PublishFailures``).
* **FIFO per queue**, apart from redeliveries, which can come out of order.
* ``Delivery.redelivered`` is true when this message was handed to a consumer before (it was nacked, or
  its consumer's connection was lost, or its lease expired). It says "maybe processed already", nothing
  more: the first delivery of a message whose publish was repeated after a lost confirm is not marked.
* Settling a delivery that the transport has given back meanwhile (its connection was lost, its lease
  expired and somebody else leased it) is not an error: it is logged and ignored, because the message
  will be, or has been, handled through its redelivery.

Transports are safe to use from several threads of one process at once. They must not be carried over a
``fork``; every process opens its own. Errors of the underlying library are raised as
``harvestdef.errors.QueueError`` naming the queue and what failed, with the original chained.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from harvestdef.errors import QueueError

log = logging.getLogger("harvestdef.queues")

__all__ = ["Delivery", "Outgoing", "PublishFailures", "QueueError", "Transport"]

Outgoing = tuple[str, bytes] | tuple[str, bytes, Mapping[str, str] | None]
"""One message for ``publish_many``: ``(queue, body)`` or ``(queue, body, headers)``."""


class PublishFailures(QueueError):
    """Some messages of a ``publish_many`` were not confirmed. ``failures`` maps the index of each of them in
    the list given to its error; every other message of the list was confirmed."""

    def __init__(self, failures: Mapping[int, QueueError], total: int) -> None:
        self.failures = dict(sorted(failures.items()))
        first_index, first = next(iter(self.failures.items()))
        super().__init__(f"{len(self.failures)} of {total} messages not confirmed; message {first_index}: {first}")


@dataclass(frozen=True)
class Delivery:
    """One message handed to a consumer, to be settled with ``ack``, ``nack`` or ``dead_letter`` on the
    transport that handed it out.

    ``_handle`` is the transport's own reference to it (delivery tag and channel generation on RabbitMQ,
    row id and lease token on SQLite); callers never look inside.
    """

    queue: str
    body: bytes
    headers: dict[str, str]
    redelivered: bool
    _handle: object = field(default=None, repr=False, compare=False)


class Transport(ABC):
    """Durable queues with confirmed publishes and manually acknowledged deliveries.

    Queues are durable and messages persistent. Every method that names a queue declares it first if
    this transport has not declared it yet, so there is no ordering between producers and consumers.
    """

    @abstractmethod
    def declare(self, queue: str) -> None:
        """Make sure the durable queue exists (idempotent)."""

    @abstractmethod
    def publish(self, queue: str, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        """Put one persistent message on ``queue`` and return once it is confirmed (see module docstring).

        :raise QueueError: not confirmed within the publish timeout, or refused by the broker.
        """

    def publish_many(self, messages: Sequence[Outgoing]) -> None:
        """Publish every message and return once each one is confirmed, as ``publish`` does one; a transport
        hands them over together and awaits their confirms side by side rather than one after another.

        Every message is tried, whatever happens to the others.

        :raise PublishFailures: some were not confirmed (which ones: ``failures``); the others were.
        """
        failures: dict[int, QueueError] = {}
        for index, (queue, body, *headers) in enumerate(messages):
            try:
                self.publish(queue, body, headers[0] if headers else None)
            except QueueError as exc:
                failures[index] = exc
        if failures:
            raise PublishFailures(failures, len(messages))

    @abstractmethod
    def get(self, queue: str) -> Delivery | None:
        """Take the oldest waiting message of ``queue`` without subscribing; ``None`` if there is none."""

    @abstractmethod
    def receive(self, queue: str, timeout: float) -> Delivery | None:
        """The next message of this transport's subscription to ``queue``, waiting up to ``timeout``
        seconds; ``None`` when none came. The first call subscribes."""

    @abstractmethod
    def unsubscribe(self, queue: str) -> None:
        """End the subscription to ``queue``; messages received but not yet handed out go back to the
        queue. Deliveries already handed out stay valid and must still be settled."""

    @abstractmethod
    def ack(self, delivery: Delivery) -> None:
        """The message is handled: remove it from its queue."""

    def ack_many(self, deliveries: Sequence[Delivery]) -> None:
        """``ack`` each of ``deliveries``, in one exchange with the broker or the queue file where the
        transport can. Every delivery is tried, whatever happens to the others.

        :raise QueueError: some could not be acknowledged (the first error; the others are logged).
        """
        errors: list[QueueError] = []
        for delivery in deliveries:
            try:
                self.ack(delivery)
            except QueueError as exc:
                errors.append(exc)
        _raise_first(errors, "ack")

    @abstractmethod
    def nack(self, delivery: Delivery, requeue: bool = True) -> None:
        """Give the message back to its queue (``requeue=True``, it comes again with ``redelivered``)
        or drop it (``requeue=False``)."""

    @abstractmethod
    def dead_letter(self, delivery: Delivery, reason: str) -> None:
        """Move the message to the dead-letter queue, with headers ``x-reason`` and ``x-original-queue``
        added to its own: published (confirmed) first, then the original acknowledged."""

    @abstractmethod
    def message_count(self, queue: str) -> int:
        """How many messages of ``queue`` are ready to be handed out (not counting those held by
        consumers)."""

    @abstractmethod
    def purge(self, queue: str) -> int:
        """Remove every ready message of ``queue``; returns how many."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection; unsettled deliveries go back to their queues. Idempotent."""

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _raise_first(errors: Sequence[QueueError], action: str) -> None:
    for error in errors[1:]:
        log.warning("%s failed as well: %s", action, error)
    if errors:
        raise errors[0]


def dead_letter_headers(delivery: Delivery, reason: str) -> dict[str, str]:
    """The headers a dead-lettered copy of ``delivery`` carries: its own, plus the reason and its queue."""
    return {**delivery.headers, "x-reason": reason, "x-original-queue": delivery.queue}


def check_queue_name(queue: str) -> None:
    """Refuse names that no transport can keep: empty, or longer than AMQP's 255-byte short string."""
    if not isinstance(queue, str) or not queue or len(queue.encode("utf-8")) > 255:
        raise QueueError(f"invalid queue name {queue!r}: must be 1 to 255 bytes of UTF-8")


def checked_messages(messages: Sequence[Outgoing]) -> tuple[
        list[tuple[int, str, bytes, Mapping[str, str] | None]], dict[int, QueueError]]:
    """Split a ``publish_many`` list into the messages to send, each with its index in the list and its
    headers (None for none), and the failures of those whose queue name no transport can keep."""
    valid: list[tuple[int, str, bytes, Mapping[str, str] | None]] = []
    failures: dict[int, QueueError] = {}
    for index, (queue, body, *headers) in enumerate(messages):
        try:
            check_queue_name(queue)
        except QueueError as exc:
            failures[index] = exc
        else:
            valid.append((index, queue, body, headers[0] if headers else None))
    return valid, failures
