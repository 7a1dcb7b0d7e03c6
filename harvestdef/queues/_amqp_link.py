"""The RabbitMQ transport's connection: one I/O thread running pika's ``SelectConnection`` ioloop, two
channels kept open over channel errors and reconnections, and the requests (``Op``) waiting for them.

This module knows nothing of publishing or consuming: the transport (``amqp.py``) sets up each channel
it opens and is told when a channel is ready or lost (``ChannelUser``). What it does:

* Runs the ioloop in its own thread, so heartbeats are answered however long callers work.
* Takes callbacks from caller threads (``submit``) and carries them out in order in the I/O thread.
* Keeps ``Op`` requests until they complete and runs them again, from the start, on a reopened channel.
* Given the nodes of a RabbitMQ cluster (several URLs, ``;`` between them), connects to one of them
  (which one first is drawn at random, spreading clients over the nodes), to the next if it does not
  answer, and, when that connection is lost, to the next one at once: a node that died costs one
  reconnection, not a backoff.
* Reconnects with exponential backoff (0.5 s doubling up to ``reconnect_max_delay``) once every node has
  been tried in turn, and reopens a channel the broker closed. A login refused before the first
  successful connection is final: the URL cannot work, so every call fails at once instead of waiting.
* Declares queues once per connection (``when_declared``), with the queue arguments it was given (a
  quorum queue's ``x-queue-type``), and every queue it declared before again after reconnecting.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import pika
import pika.exceptions
from pika.adapters.select_connection import IOLoop
from pika.channel import Channel

from harvestdef.errors import QueueError
from harvestdef.queues._amqp_state import Op, Slot, describe, is_login_failure, nothing, url_without_password

# The transport's logger: connection events belong to the RabbitMQ transport as far as operators care.
log = logging.getLogger("harvestdef.queues.amqp")

_FIRST_RECONNECT_DELAY = 0.5
# Between the nodes of a round: a node that refuses or is gone says so at once, the next may not.
_NEXT_NODE_DELAY = 0.1
# Reply codes of channel errors that a request of ours can cause (access_refused, not_found,
# not_allowed, precondition_failed): that request fails instead of being repeated.
_REQUEST_ERRORS = frozenset({403, 404, 405, 406})
# Pika exceptions that mean "the channel is closing under us": the op runs again on the next channel.
_CHANNEL_GONE = (pika.exceptions.ChannelWrongStateError, pika.exceptions.ConnectionWrongStateError,
                 pika.exceptions.ChannelClosed, pika.exceptions.ConnectionClosed)


class ChannelUser(Protocol):
    """What the link tells its transport (all in the I/O thread)."""

    def setup_channel(self, slot: Slot, channel: Channel, ready: Callable[[], None]) -> None:
        """Register callbacks on a new channel, then call ``ready``."""

    def channel_ready(self, slot: Slot) -> None:
        """The channel of ``slot`` is open (again); its ops are run right after this."""

    def channel_lost(self, slot: Slot) -> None:
        """The channel of ``slot`` is gone (``slot.lost()`` has been called)."""

    def abandon(self, error: Callable[[], QueueError]) -> None:
        """The transport is closed or can never connect: end whatever waits outside ops."""


class Link:
    """The connection of one transport and the thread that owns it; see the module docstring."""

    def __init__(self, url: str, *, heartbeat: int, reconnect_max_delay: float, connection_name: str,
                 user: ChannelUser, queue_arguments: dict[str, Any] | None = None) -> None:
        self.url = url_without_password(url)
        self._nodes: list[tuple[str, pika.URLParameters]] = []
        for node in node_urls(url):
            try:
                parameters = pika.URLParameters(node)
            except Exception as exc:
                raise QueueError(f"invalid AMQP URL {url_without_password(node)}: {exc}") from exc
            parameters.heartbeat = heartbeat
            parameters.connection_attempts = 1
            parameters.client_properties = {"connection_name": connection_name}
            self._nodes.append((url_without_password(node), parameters))
        # Each client starts at a node of its own: connections, and the quorum queues they declare (led by
        # the node that declared them), spread over the cluster instead of all landing on its first node.
        self._node = random.randrange(len(self._nodes))  # the node connected to, or tried next
        self._tried_in_round = 0  # nodes that failed since the last open connection or the last backoff
        self.queue_arguments = dict(queue_arguments or {})
        self.reconnect_max_delay = reconnect_max_delay
        self._user = user
        self.ioloop = IOLoop()
        self.publisher = Slot("publishing")
        self.consumer = Slot("consuming")
        self.declared: set[str] = set()  # declared on the current connection
        self.known: set[str] = set()  # ever declared: declared again after a reconnection
        self.connections_opened = 0
        self._connection: pika.SelectConnection | None = None
        # Held while handing a callback to the ioloop, so none can slip in after the shutdown callback
        # (it would never run: the ioloop is closed after that).
        self._lock = threading.Lock()
        self.closing = False
        self._fatal: QueueError | None = None
        self._last_error = "not connected yet"
        self._reconnect_delay = _FIRST_RECONNECT_DELAY
        self._down_since = time.monotonic()
        self._first_attempt = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"amqp-io {connection_name}", daemon=True)

    def start(self, wait: float) -> None:
        """Start the I/O thread and wait up to ``wait`` seconds for the first connection attempt.

        :raise QueueError: the broker refused the login.
        """
        self._thread.start()
        self._first_attempt.wait(wait)
        if self._fatal is not None:
            self.close()
            raise self.fatal_error()

    # -- caller threads -----------------------------------------------------------------------------------

    @property
    def is_connected(self) -> bool:
        return self.publisher.ready and self.consumer.ready

    def check_usable(self) -> None:
        if self.closing:
            raise QueueError(f"the connection to {self.url} is closed")
        if self._fatal is not None:
            raise self.fatal_error()

    def fatal_error(self) -> QueueError:
        """A fresh copy of the final error, so threads never raise one exception object at once."""
        assert self._fatal is not None
        error = QueueError(str(self._fatal))
        error.__cause__ = self._fatal.__cause__
        return error

    def state(self) -> str:
        if self._fatal is not None:
            return str(self._fatal)
        return "connected" if self.is_connected else f"not connected: {self._last_error}"

    def submit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` in the I/O thread, after every callback submitted before."""
        with self._lock:
            if self.closing:
                raise QueueError(f"the connection to {self.url} is closed")
            self.ioloop.add_callback_threadsafe(functools.partial(self.guarded, callback))

    def request(self, slot: Slot, op: Op, timeout: float) -> Any:
        """Run ``op`` on ``slot``'s channel and wait for its outcome until its deadline."""
        self.check_usable()
        self.submit(functools.partial(self._start, slot, op))
        try:
            return op.future.result(timeout=max(0.0, op.deadline - time.monotonic()))
        except TimeoutError:
            if not op.future.cancel():  # it completed just now
                return op.future.result()
            raise QueueError(f"{op.what} on {self.url} did not complete within {timeout} s "
                             f"({self.state()})") from None

    def request_many(self, slot: Slot, ops: list[Op], timeout: float) -> list[QueueError | None]:
        """Run ``ops`` on ``slot``'s channel, handed over in one callback, and wait for every outcome until
        their deadlines; returns each op's error, or None for an op that completed."""
        self.check_usable()
        self.submit(functools.partial(self._start_many, slot, ops))
        errors: list[QueueError | None] = []
        for op in ops:
            try:
                op.future.result(timeout=max(0.0, op.deadline - time.monotonic()))
            except TimeoutError:
                if op.future.cancel():
                    errors.append(QueueError(f"{op.what} on {self.url} did not complete within {timeout} s "
                                             f"({self.state()})"))
                    continue
                errors.append(_error_of(op))  # it completed just now
                continue
            except QueueError as exc:
                errors.append(exc)
                continue
            errors.append(None)
        return errors

    def close(self) -> None:
        """Fail what waits, close the connection, stop and join the I/O thread. Idempotent."""
        with self._lock:
            if not self.closing:
                self.closing = True
                self.ioloop.add_callback_threadsafe(functools.partial(self.guarded, self._shutdown))
        if threading.current_thread() is not self._thread and self._thread.ident is not None:
            self._thread.join(timeout=15)
            if self._thread.is_alive():
                log.warning("the I/O thread of the connection to %s did not stop within 15 s", self.url)

    # -- I/O thread: the loop and the connection ----------------------------------------------------------

    def guarded(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run an I/O-thread callback; an exception here is a bug, logged so that the loop keeps running."""
        try:
            callback(*args)
        except Exception:
            log.exception("unexpected error in the I/O thread of the connection to %s", self.url)

    def _run(self) -> None:
        self.guarded(self._connect)
        while True:
            try:
                self.ioloop.start()
                break
            except Exception:
                # Something raised out of pika's own frame handling: start over on a fresh connection.
                log.exception("the I/O loop of the connection to %s failed; reconnecting", self.url)
                if self.closing:
                    break
                self.guarded(self._drop_connection)
        self.ioloop.close()

    def _connect(self) -> None:
        if self.closing:
            return
        try:
            self._connection = pika.SelectConnection(
                self._nodes[self._node][1], on_open_callback=self._on_connection_open,
                on_open_error_callback=self._on_connection_open_error,
                on_close_callback=self._on_connection_closed, custom_ioloop=self.ioloop)
        except Exception as exc:  # pika validates its parameters here
            self._connection = None
            self._connection_failed(exc)

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        self._channels_lost()
        if connection is not None and not (connection.is_closed or connection.is_closing):
            connection.close()
        self._schedule_reconnect()

    def _on_connection_open(self, connection: pika.SelectConnection) -> None:
        if connection is not self._connection:
            return
        self.connections_opened += 1
        if self.connections_opened > 1:
            log.info("reconnected to %s after %.1f s", self.node_url, time.monotonic() - self._down_since)
        else:
            log.info("connected to %s", self.node_url)
        self._reconnect_delay = _FIRST_RECONNECT_DELAY
        self._tried_in_round = 0
        self._open_channel(self.publisher)
        self._open_channel(self.consumer)
        self._first_attempt.set()

    def _on_connection_open_error(self, connection: pika.SelectConnection, error: BaseException) -> None:
        if connection is not self._connection:
            return
        self._connection = None
        if self.closing:
            self.ioloop.stop()
            return
        self._connection_failed(error)

    def _connection_failed(self, error: BaseException) -> None:
        self._last_error = describe(error)
        if self.connections_opened == 0 and is_login_failure(error):
            # Credentials or a vhost that never worked: retrying cannot help, and callers should hear it
            # at once rather than after every publish timeout.
            self._fatal = QueueError(f"RabbitMQ at {self.node_url} refused the login: {self._last_error}")
            self._fatal.__cause__ = error
            log.error("%s; giving up", self._fatal)
            self._abandon(self.fatal_error)
            self._first_attempt.set()
            return
        failed = self.node_url
        delay = self._schedule_reconnect()
        log.warning("cannot connect to RabbitMQ at %s (%s); trying %s in %.1f s", failed, self._last_error,
                    "again" if self.node_url == failed else self.node_url, delay)
        if self._tried_in_round == 0:  # every node tried once: callers hear how the first attempt went
            self._first_attempt.set()

    def _on_connection_closed(self, connection: pika.SelectConnection, reason: BaseException) -> None:
        if connection is not self._connection:
            return
        self._connection = None
        self._channels_lost()
        if self.closing:
            self.ioloop.stop()
            return
        self._down_since = time.monotonic()
        self._last_error = describe(reason)
        lost = self.node_url
        self._schedule_reconnect()
        log.warning("lost the connection to RabbitMQ at %s (%s); reconnecting%s", lost, self._last_error,
                    "" if self.node_url == lost else f" to {self.node_url}")

    @property
    def node_url(self) -> str:
        """The node connected to, or the one the next attempt tries (password hidden)."""
        return self._nodes[self._node][0]

    def _schedule_reconnect(self) -> float:
        """Try the next node soon, or, once every node has failed in this round, the first of the next
        round after the backoff; returns the delay."""
        if self.closing:
            return 0.0
        self._tried_in_round += 1
        self._node = (self._node + 1) % len(self._nodes)
        if self._tried_in_round < len(self._nodes):
            delay = _NEXT_NODE_DELAY
        else:
            self._tried_in_round = 0
            delay = self._reconnect_delay
            self._reconnect_delay = min(delay * 2, self.reconnect_max_delay)
        self.ioloop.call_later(delay, functools.partial(self.guarded, self._connect))
        return delay

    def _channels_lost(self) -> None:
        self.declared.clear()
        for slot in (self.publisher, self.consumer):
            if slot.channel is not None or slot.opening:
                slot.lost()
                self._user.channel_lost(slot)

    def _abandon(self, error: Callable[[], QueueError]) -> None:
        for slot in (self.publisher, self.consumer):
            for op in list(slot.ops.values()):
                slot.fail(op, QueueError(f"{op.what}: {error()}"))
        self._user.abandon(error)

    def _shutdown(self) -> None:
        self._abandon(lambda: QueueError(f"the connection to {self.url} was closed"))
        connection = self._connection
        if connection is not None and not (connection.is_closed or connection.is_closing):
            self.ioloop.call_later(5.0, self.ioloop.stop)  # in case the broker never answers Close-Ok
            connection.close()  # its close callback stops the loop
        else:
            self.ioloop.stop()

    # -- I/O thread: channels -----------------------------------------------------------------------------

    def _open_channel(self, slot: Slot) -> None:
        connection = self._connection
        if self.closing or connection is None or not connection.is_open or slot.channel or slot.opening:
            return
        slot.opening = True
        connection.channel(on_open_callback=functools.partial(self.guarded, self._on_channel_open, slot))

    def _on_channel_open(self, slot: Slot, channel: Channel) -> None:
        if not slot.opening or channel.connection is not self._connection:
            return
        slot.opening = False
        slot.channel = channel
        channel.add_on_close_callback(functools.partial(self.guarded, self._on_channel_closed, slot))
        self._user.setup_channel(slot, channel, functools.partial(self.guarded, self._channel_ready, slot, channel))

    def _channel_ready(self, slot: Slot, channel: Channel) -> None:
        if slot.channel is not channel:
            return
        slot.ready = True
        if slot is self.publisher:
            # Declared again before the waiting publishes go out (they wait for these declarations).
            for queue in sorted(self.known - self.declared):
                self.when_declared(slot, queue, nothing, functools.partial(_log_declare_failure, queue))
        self._user.channel_ready(slot)
        for op in list(slot.ops.values()):
            self.run_op(slot, op)

    def renew_channel(self, slot: Slot, why: str) -> None:
        """Close ``slot``'s channel and open a new one at once, where its unfinished ops run again. Several
        asking before the old one is closed get one new channel."""
        channel = slot.channel
        if channel is None or not channel.is_open or slot.renewing:
            return  # gone or going already: its ops run again on the next one
        log.info("opening a new %s channel: %s", slot.name, why)
        slot.renewing = True
        channel.close()

    def _on_channel_closed(self, slot: Slot, channel: Channel, reason: BaseException) -> None:
        if slot.channel is not channel:
            return
        renewed = slot.renewing
        failure_handler = _request_at_fault(slot, reason)
        slot.lost()
        self._user.channel_lost(slot)
        if failure_handler is not None:
            failure_handler(QueueError(f"RabbitMQ at {self.url} refused it: {describe(reason)}"))
        connection = self._connection
        if self.closing or connection is None or not connection.is_open:
            return  # the connection is going: its own callback reports it and reconnects
        if isinstance(reason, pika.exceptions.ChannelClosedByBroker) and reason.reply_code == 404:
            self.declared.clear()  # a queue we declared has been deleted meanwhile
        if renewed:
            self._open_channel(slot)
            return
        now = time.monotonic()
        # Reopen at once, unless the channel keeps being closed: then back off, up to 5 s.
        slot.reopen_delay = min(slot.reopen_delay * 2, 5.0) if now - slot.last_reopen < 2.0 else 0.1
        slot.last_reopen = now
        log.warning("RabbitMQ closed the %s channel (%s); reopening it in %.1f s",
                    slot.name, describe(reason), slot.reopen_delay)
        self.ioloop.call_later(slot.reopen_delay, functools.partial(self.guarded, self._open_channel, slot))

    # -- I/O thread: requests -----------------------------------------------------------------------------

    def _start(self, slot: Slot, op: Op) -> None:
        if op.future.done():
            return
        if self._fatal is not None:
            slot.fail(op, self.fatal_error())
            return
        slot.ops[op.key] = op
        if slot.ready:
            self.run_op(slot, op)

    def _start_many(self, slot: Slot, ops: list[Op]) -> None:
        for op in ops:
            self._start(slot, op)

    def run_op(self, slot: Slot, op: Op) -> None:
        """(Re)start ``op`` on ``slot``'s open channel, unless its caller has given up on it."""
        if op.future.done():
            slot.ops.pop(op.key, None)
            return
        try:
            assert slot.channel is not None
            op.run(slot.channel)
        except _CHANNEL_GONE:
            pass  # the op stays and runs again on the reopened channel
        except Exception as exc:
            error = QueueError(f"{op.what} failed: {exc}")
            error.__cause__ = exc
            slot.fail(op, error)

    def op_failure(self, slot: Slot, op: Op) -> Callable[[QueueError], None]:
        """A failure handler that fails ``op`` with the broker's reason."""
        return lambda error: slot.fail(op, QueueError(f"{op.what}: {error}"))

    def rpc(self, slot: Slot, on_failure: Callable[[QueueError], None], method: Callable[..., Any],
            *args: Any, callback: Callable[[Any], None], **kwargs: Any) -> Any:
        """Send a synchronous AMQP method on ``slot``'s channel; ``callback(frame)`` gets the reply, and
        ``on_failure`` is called instead if the broker closes the channel because of this request."""
        generation = slot.generation

        def on_reply(frame: Any) -> None:
            if slot.generation != generation:
                return
            slot.rpc_failure_handlers.popleft()
            self.guarded(callback, frame)

        slot.rpc_failure_handlers.append(on_failure)
        return method(*args, callback=on_reply, **kwargs)

    def when_declared(self, slot: Slot, queue: str, then: Callable[[], None],
                      on_failure: Callable[[QueueError], None]) -> None:
        """Call ``then`` once ``queue`` is declared (durable) on this connection: one declaration per
        queue, however many requests wait for it."""
        if queue in self.declared:
            then()
            return
        waiting = slot.declaring.get(queue)
        if waiting is not None:
            waiting.append((then, on_failure))
            return
        # The list itself, not slot.declaring, is used below: a channel error empties slot.declaring
        # before the failure handler runs.
        waiting = slot.declaring[queue] = [(then, on_failure)]

        def declared(_frame: Any) -> None:
            self.declared.add(queue)
            self.known.add(queue)
            if slot.declaring.get(queue) is waiting:
                del slot.declaring[queue]
            for then_, _failure in waiting:
                self.guarded(then_)

        def failed(error: QueueError) -> None:
            for _then, failure in waiting:
                self.guarded(failure, error)

        assert slot.channel is not None
        self.rpc(slot, failed, slot.channel.queue_declare, queue, durable=True, arguments=self.queue_arguments,
                 callback=declared)


def node_urls(url: str) -> list[str]:
    """The node URLs of ``harvestsuite.queue.url``: one, or a cluster's nodes with ``;`` between them.

    :raise QueueError: no URL at all, or a node that is not ``amqp://`` or ``amqps://``.
    """
    nodes = [node.strip() for node in url.split(";") if node.strip()]
    if not nodes:
        raise QueueError(f"no AMQP URL in {url_without_password(url)!r}")
    for node in nodes:
        if node.partition(":")[0].lower() not in ("amqp", "amqps"):
            raise QueueError(f"{url_without_password(node)!r} of {url_without_password(url)!r} is not an "
                             "amqp:// or amqps:// URL: the nodes of a RabbitMQ cluster go with ';' between them")
    return nodes


def _error_of(op: Op) -> QueueError | None:
    error = op.future.exception()
    if error is None or isinstance(error, QueueError):
        return error
    wrapped = QueueError(f"{op.what} failed: {error}")
    wrapped.__cause__ = error
    return wrapped


def _request_at_fault(slot: Slot, reason: BaseException) -> Callable[[QueueError], None] | None:
    """The failure handler of the request that a channel error answers, if a request of ours caused it."""
    if not isinstance(reason, pika.exceptions.ChannelClosedByBroker) or reason.reply_code not in _REQUEST_ERRORS:
        return None
    # consumer_timeout and a stale ack are nobody's request: the requests are repeated.
    if "delivery acknowledgement" in reason.reply_text or "unknown delivery tag" in reason.reply_text:
        return None
    return slot.rpc_failure_handlers[0] if slot.rpc_failure_handlers else None


def _log_declare_failure(queue: str, error: QueueError) -> None:
    log.error("declaring queue %r again after reconnecting failed: %s", queue, error)
