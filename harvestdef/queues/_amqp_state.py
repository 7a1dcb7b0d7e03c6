"""The bookkeeping of the RabbitMQ transport: requests, channels, subscriptions, and small helpers.

Only the transport's I/O thread changes these objects, except where a docstring says otherwise.
"""

from __future__ import annotations

import contextlib
import itertools
import queue as queue_module
import re
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any

import pika.exceptions
from pika.channel import Channel

from harvestdef.errors import QueueError

_op_keys = itertools.count(1)

CLOSED = object()
"""Put in subscription buffers when the transport closes, to end the receivers waiting on them."""


@dataclass(frozen=True)
class Tag:
    """What an AMQP Delivery carries: its transport, the generation of the channel that delivered it and
    the delivery tag on that channel."""

    transport: int
    generation: int
    delivery_tag: int


class Op:
    """One request of a caller thread, carried out by the I/O thread. ``run(channel)`` starts it from the
    beginning on an open channel, again after every channel loss, until ``future`` is done.

    ``future`` is the only attribute caller threads touch: they wait on it, or cancel it when they give
    up (the I/O thread then drops the op).
    """

    __slots__ = ("key", "queue", "what", "deadline", "future", "run", "returned")

    def __init__(self, queue: str, what: str, deadline: float) -> None:
        self.key = next(_op_keys)
        self.queue = queue
        self.what = what
        self.deadline = deadline
        self.future: Future[Any] = Future()
        self.run: Callable[[Channel], None] = nothing
        self.returned = False  # a publish the broker returned as unroutable (its queue was deleted)


class Slot:
    """One AMQP channel the I/O thread keeps open, and the work that needs it.

    ``generation`` grows by one every time the channel is lost; deliveries and callbacks of an older
    generation belong to a channel that is gone. Caller threads may read ``generation`` and ``ready``.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.channel: Channel | None = None
        self.opening = False
        self.ready = False
        # Closed by us (Link.renew_channel) to be opened again at once.
        self.renewing = False
        self.generation = 0
        self.last_reopen = 0.0
        self.reopen_delay = 0.1
        # Unfinished requests in the order they came; run again after the channel is reopened.
        self.ops: dict[int, Op] = {}
        # One failure handler per RPC sent and not yet answered, oldest first: pika sends a channel's RPCs
        # one at a time, so the head belongs to the request that a channel error answers.
        self.rpc_failure_handlers: deque[Callable[[QueueError], None]] = deque()
        # queue -> (continue, fail) pairs waiting for a Queue.DeclareOk on this channel.
        self.declaring: dict[str, list[tuple[Callable[[], None], Callable[[QueueError], None]]]] = {}
        # The publishing channel: confirm delivery tags of the publishes not confirmed yet.
        self.next_publish_tag = 0
        self.unconfirmed: dict[int, Op] = {}
        # The consuming channel: Basic.Get requests in the order sent (pika allows one at a time) and the
        # delivery tags handed out and not settled yet.
        self.gets: deque[Op] = deque()
        self.unsettled: set[int] = set()
        # The per-consumer prefetch last set on the channel (Basic.Qos), for the consumers started after it.
        self.consumer_prefetch: int | None = None

    def lost(self) -> None:
        """The channel is gone and everything tied to it void; the ops stay, to run again."""
        self.channel = None
        self.opening = False
        self.ready = False
        self.renewing = False
        self.generation += 1
        self.rpc_failure_handlers.clear()
        self.declaring.clear()
        self.next_publish_tag = 0
        self.unconfirmed.clear()
        self.gets.clear()
        self.unsettled.clear()
        self.consumer_prefetch = None

    def finish(self, op: Op, result: Any) -> bool:
        """Complete ``op``; False if its caller had given up on it already."""
        self.ops.pop(op.key, None)
        return resolve(op.future, result)

    def fail(self, op: Op, error: QueueError) -> None:
        self.ops.pop(op.key, None)
        with contextlib.suppress(InvalidStateError):  # its caller gave up on it already
            op.future.set_exception(error)


class Subscription:
    """A consumer on one queue; deliveries wait in ``buffer`` (thread-safe) until a caller's ``receive``
    takes them. Caller threads set ``cancelled`` and read ``error``."""

    def __init__(self, queue: str, prefetch: int) -> None:
        self.queue = queue
        self.prefetch = prefetch
        self.buffer: queue_module.SimpleQueue[Any] = queue_module.SimpleQueue()
        self.consumer_tag: str | None = None
        self.cancelled = False
        self.error: QueueError | None = None
        self.cancel_future: Future[None] | None = None


def nothing(*_args: Any) -> None:
    return None


def resolve(future: Future[Any] | None, result: Any) -> bool:
    """Set ``future``'s result; False if it was done (cancelled by a caller that gave up) already."""
    if future is None:
        return False
    try:
        future.set_result(result)
    except InvalidStateError:
        return False
    return True


def drain(buffer: queue_module.SimpleQueue[Any]) -> list[Any]:
    items = []
    while True:
        try:
            items.append(buffer.get_nowait())
        except queue_module.Empty:
            return items


def url_without_password(url: str) -> str:
    """``amqp://user:secret@host/`` as ``amqp://user:***@host/``, for messages and logs."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)


def header_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def describe(error: BaseException | None) -> str:
    """A one-line reason from pika's exceptions, which wrap the interesting one a few levels deep."""
    if error is None:
        return "no reason given"
    seen = set()
    while id(error) not in seen:
        seen.add(id(error))
        attempts = getattr(error, "exceptions", None)  # AMQPConnectionWorkflowFailed: one per attempt
        phase_error = getattr(error, "exception", None)  # AMQPConnectorPhaseErrorBase: the phase's error
        if attempts:
            error = attempts[-1]
        elif isinstance(phase_error, BaseException):
            error = phase_error
        elif error.args and isinstance(error.args[0], BaseException):
            error = error.args[0]
    if isinstance(error, pika.exceptions.ChannelClosedByBroker | pika.exceptions.ConnectionClosedByBroker):
        return f"{error.reply_code} {error.reply_text}"
    return f"{type(error).__name__}: {error}" if str(error) else repr(error)


_LOGIN_ERRORS = (pika.exceptions.ProbableAuthenticationError, pika.exceptions.AuthenticationError,
                 pika.exceptions.ProbableAccessDeniedError)


def is_login_failure(error: BaseException) -> bool:
    if isinstance(error, _LOGIN_ERRORS):
        return True
    # 403 ACCESS_REFUSED (credentials) or 530 NOT_ALLOWED (no access to the vhost) during the handshake.
    return isinstance(error, pika.exceptions.ConnectionClosedByBroker) and error.reply_code in (403, 530)
