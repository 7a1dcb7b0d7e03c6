"""One attempt of one webhook delivery: a single POST over HTTP/1.1 that no receiver can hold.

Theory of operation. The attempt has one wall-clock deadline, ``limits.deadline`` seconds from its start
(harvestsuite.webhooks.timeout), for all it does: connecting, TLS, sending the request, and reading the
answer's status line, headers and the capped excerpt of its body. Every blocking socket call is given what
is left of it, never a fresh timeout, so a receiver that answers one byte every few seconds ends the attempt
at the deadline as surely as one that answers nothing. ``abort()``, from another thread, shuts the socket
down; the blocked call returns at once and the attempt ends ``interrupted`` (the scheduler's shutdown).

Where it connects is decided by the destination policy (harvestdef/destinations.py) on the addresses the
name resolves to *now*, and the socket connects to exactly such a checked address: a name that resolved to
a public address when the webhook was saved and to an internal one later is refused here, with the reason.
TLS still verifies the certificate of the name. The name's lookup is within the deadline too: a resolver
that does not answer ends the attempt at it ("no address for NAME").

No redirect is followed: a 3xx is a failed attempt that names where it pointed, so an answer can never lead
a delivery (and its signed body) to another destination. Of the answer only the status matters; for a
failure the delivery log keeps a short excerpt of a plain-text or JSON body, whitespace collapsed and
control characters dropped, and of any other body (HTML, binary) only its type: whatever a receiver answers,
the log shows a line of text.

HTTP is parsed by h11 (the header block cut at ``limits.header_bytes``); sockets stay in this module.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import h11

from harvestdef.destinations import DestinationPolicy, DestinationRefused

TIMEOUT_SETTING = "harvestsuite.webhooks.timeout"
HEADER_SETTING = "harvestsuite.webhooks.answerHeaderLimit"
_READ_SIZE = 4096
# media types whose body the log may show as text; anything else is named by its type only
_PLAIN_TYPES = ("text/plain", "application/json", "application/problem+json")


@dataclass(frozen=True)
class AttemptLimits:
    """What one attempt may take: ``deadline`` seconds in all, ``header_bytes`` of the answer's status line
    and headers, and ``excerpt_characters`` of its body kept for the delivery log."""

    deadline: float
    header_bytes: int = 16_384
    excerpt_characters: int = 200


@dataclass(frozen=True)
class AttemptOutcome:
    """How one attempt went: ``error`` is None for a 2xx answer; ``interrupted`` when ``abort()`` ended it
    (the attempt says nothing about the receiver then)."""

    status: int | None
    error: str | None
    interrupted: bool = False


class _Expired(Exception):
    """The attempt's deadline passed; ``phase`` says in what it was."""

    def __init__(self, phase: str) -> None:
        super().__init__(phase)
        self.phase = phase


def plain_text(value: str, limit: int) -> str:
    """``value`` as one short line: whitespace collapsed, control and other unprintable characters dropped,
    at most ``limit`` characters (an ellipsis marks a cut)."""
    line = " ".join("".join(c if c.isprintable() else " " for c in value).split())
    return line if len(line) <= limit else line[:max(limit - 1, 0)] + "…"


def answer_excerpt(content_type: str | None, body: bytes, limit: int) -> str | None:
    """What the delivery log keeps of a failed answer's ``body``: plain text or JSON as one short line;
    for any other type, or bytes that are not text, only what it was; None for an empty body."""
    if not body:
        return None
    media = plain_text((content_type or "").split(";", 1)[0].strip().lower(), 60)
    kind = f"{'an' if media[:1] in tuple('aeiou') else 'a'} {media} answer" if media else "an untyped answer"
    if media and media not in _PLAIN_TYPES:
        return f"({kind}, not kept)"
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(body) - 3:  # not just a character cut at the excerpt's end
            return f"({kind} that is not UTF-8 text, not kept)"
        text = body[:exc.start].decode("utf-8")
    # a NUL is no text's; an untyped body is kept only if it reads as plain text (no control characters,
    # no markup): a typed one has its control characters dropped by plain_text
    untyped_but_not_plain = not media and (any(ord(c) < 32 and c not in "\t\r\n" for c in text)
                                           or ("<" in text and ">" in text))
    if "\x00" in text or untyped_but_not_plain:
        return f"({kind} that is not plain text, not kept)"
    return plain_text(text, limit) or None


class Attempt:
    """One POST of ``body`` with ``headers`` to ``url``, to an address ``destinations`` allows, within
    ``limits``. ``run()`` once, from one thread; ``abort()`` from any other."""

    def __init__(self, url: str, body: bytes, headers: dict[str, str], limits: AttemptLimits,
                 destinations: DestinationPolicy) -> None:
        self.url = url
        self.body = body
        self.headers = headers
        self.limits = limits
        self.destinations = destinations
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._aborted = False

    def abort(self) -> None:
        """End the attempt now: its blocked socket call returns and ``run()`` gives an interrupted AttemptOutcome."""
        with self._lock:
            self._aborted = True
            sock = self._socket
        if sock is not None:
            # the plain socket's shutdown, also for a TLS one: it wakes a blocked read without touching the TLS
            # state, which belongs to the attempt's own thread. OSError: not connected (yet) or closed already;
            # the attempt sees the abort at its next step then.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def run(self) -> AttemptOutcome:
        """Make the attempt; every failure (refused, unresolved, timed out, TLS, not HTTP, an answer other
        than 2xx) is an AttemptOutcome naming it, never an exception."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        deadline = time.monotonic() + self.limits.deadline
        try:
            addresses = self._resolve(host, port, deadline)
        except DestinationRefused as exc:
            return AttemptOutcome(None, f"not sent: {exc.reason}")
        except OSError as exc:
            return AttemptOutcome(None, f"{host} does not resolve: {exc.strerror or exc}")
        except _Expired as exc:
            if self._aborted:
                return self._interrupted()
            return AttemptOutcome(None, f"{exc.phase} within {self.limits.deadline:g} s ({TIMEOUT_SETTING})")
        try:
            sock = self._connect(host, addresses, port, deadline)
            try:
                if parts.scheme.lower() == "https":
                    sock = self._tls(sock, host, deadline)
                return self._exchange(sock, parts.netloc.rpartition("@")[2],
                                      (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), deadline)
            finally:
                with self._lock:
                    self._socket = None
                sock.close()
        except _Expired as exc:
            if self._aborted:
                return self._interrupted()
            return AttemptOutcome(None, f"{exc.phase} within {self.limits.deadline:g} s ({TIMEOUT_SETTING})")
        except ssl.SSLError as exc:
            if self._aborted:
                return self._interrupted()
            return AttemptOutcome(None, f"TLS failed: {exc.reason or exc}")
        except ConnectionRefusedError:
            return AttemptOutcome(None, f"connection refused by {host}:{port}")
        except (OSError, h11.ProtocolError) as exc:
            if self._aborted:
                return self._interrupted()
            return AttemptOutcome(None, plain_text(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                                            300))

    def _interrupted(self) -> AttemptOutcome:
        return AttemptOutcome(None, "interrupted: the scheduler stopped during the attempt", interrupted=True)

    def _remaining(self, deadline: float, phase: str) -> float:
        left = deadline - time.monotonic()
        if left <= 0 or self._aborted:
            raise _Expired(phase)
        return left

    def _resolve(self, host: str, port: int, deadline: float) -> list[str]:
        """The checked addresses of ``host``, looked up within the deadline: the system resolver cannot be
        given a timeout, so it asks on a thread of its own, which a resolver that never answers keeps (until
        its own time limits end it) while the attempt ends at its deadline."""
        answers: list[list[str] | BaseException] = []
        done = threading.Event()

        def look_up() -> None:
            try:
                answers.append(self.destinations.resolve(host, port))
            except BaseException as exc:  # noqa: BLE001 - handed to the attempt, which names it
                answers.append(exc)
            finally:
                done.set()

        threading.Thread(target=look_up, name=f"webhook-resolve-{host}", daemon=True).start()
        phase = f"no address for {host}"
        while not done.is_set():
            done.wait(min(self._remaining(deadline, phase), 0.5))  # twice a second, so an abort() ends it too
        answer = answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def _connect(self, host: str, addresses: list[str], port: int, deadline: float) -> socket.socket:
        """A socket connected to the first of ``addresses`` (checked by the policy) that answers."""
        failure: OSError | None = None
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            with self._lock:
                self._socket = sock
            try:
                sock.settimeout(self._remaining(deadline, f"no connection to {host}:{port}"))
                sock.connect((address, port))
                return sock
            except TimeoutError:
                sock.close()
                raise _Expired(f"no connection to {host}:{port}") from None
            except _Expired:
                sock.close()
                raise
            except OSError as exc:
                sock.close()
                failure = exc
        raise failure or OSError(f"{host} has no address")

    def _tls(self, sock: socket.socket, host: str, deadline: float) -> socket.socket:
        sock.settimeout(self._remaining(deadline, "no TLS handshake"))
        try:
            wrapped = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        except TimeoutError:
            raise _Expired("no TLS handshake") from None
        with self._lock:
            self._socket = wrapped
        return wrapped

    def _exchange(self, sock: socket.socket, host_header: str, target: str, deadline: float) -> AttemptOutcome:
        """Send the request and read the answer's head (and, for a failure, a capped excerpt of its body)."""
        connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=self.limits.header_bytes)
        request = h11.Request(method="POST", target=target, headers=[
            ("Host", host_header), ("Content-Length", str(len(self.body))), ("Connection", "close"),
            *self.headers.items()])
        data = connection.send(request) + connection.send(h11.Data(data=self.body)) + \
            connection.send(h11.EndOfMessage())
        try:
            sock.settimeout(self._remaining(deadline, "the request could not be sent"))
            sock.sendall(data)
        except TimeoutError:
            raise _Expired("the request could not be sent") from None
        received = 0
        while True:
            try:
                event = connection.next_event()
            except h11.RemoteProtocolError as exc:
                if received > self.limits.header_bytes:
                    return AttemptOutcome(None, f"the answer's status line and headers exceed "
                                         f"{self.limits.header_bytes} bytes ({HEADER_SETTING})")
                return AttemptOutcome(None, plain_text(f"the answer is not HTTP/1.1: {exc}", 300))
            if event is h11.NEED_DATA:
                phase = "no answer" if not received else f"the answer's status and headers did not end " \
                                                          f"({received} bytes came)"
                chunk = self._read(sock, deadline, phase)
                received += len(chunk)
                connection.receive_data(chunk)
                continue
            if isinstance(event, h11.Response):
                break
            # an InformationalResponse (100 Continue) is followed by the answer itself
        status = event.status_code
        reason = plain_text(event.reason.decode("latin-1"), 60)
        if 200 <= status < 300:
            return AttemptOutcome(status, None)
        head = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in event.headers}
        error = f"HTTP {status} {reason}".rstrip()
        if 300 <= status < 400:
            location = plain_text(head.get("location", ""), 200) or "nowhere"
            return AttemptOutcome(status, f"{error}: redirected to {location}; deliveries are not redirected, "
                                          "change the webhook's address if it moved")
        said = answer_excerpt(head.get("content-type"), self._body(connection, sock, deadline),
                              self.limits.excerpt_characters)
        return AttemptOutcome(status, f"{error}: {said}" if said else error)

    def _read(self, sock: socket.socket, deadline: float, phase: str) -> bytes:
        try:
            sock.settimeout(self._remaining(deadline, phase))
            chunk = sock.recv(_READ_SIZE)
        except TimeoutError:
            raise _Expired(phase) from None
        if self._aborted:  # the shutdown's abort ended the read, not the receiver
            raise _Expired(phase)
        return chunk

    def _body(self, connection: h11.Connection, sock: socket.socket, deadline: float) -> bytes:
        """The first bytes of a failed answer's body, as many as the excerpt may need and the deadline allows;
        a body that is slow or cut short gives what came (the status is the outcome, not the body)."""
        cap = 4 * self.limits.excerpt_characters + 4
        body = bytearray()
        try:
            while len(body) < cap:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    connection.receive_data(self._read(sock, deadline, "the answer's body"))
                elif isinstance(event, h11.Data):
                    body += event.data
                else:
                    break
        except (_Expired, OSError, h11.ProtocolError):
            pass
        return bytes(body[:cap])


__all__ = ["AttemptLimits", "Attempt", "AttemptOutcome", "answer_excerpt", "plain_text"]
