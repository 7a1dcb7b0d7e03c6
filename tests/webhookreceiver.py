"""Webhook receivers for tests, real servers on free loopback ports, in threads.

``webhook_receiver`` records every request (when, path, headers, body) and answers from a script of
statuses (200 once the script runs out), with a body of its own if given, or holds its answer back for
``delay`` seconds. ``slow_receiver`` reads the request and then answers as an attacker would: its status
line, then one more byte of a header that never ends every ``interval`` seconds, for as long as the sender
stays connected."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    at: float  # time.monotonic() when the request's body was read
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    answers: list[int] = field(default_factory=list)  # statuses to answer with, in order; then 200
    delay: float = 0.0
    body: bytes | None = None  # the answer's body instead of a few words
    headers: dict[str, str] = field(default_factory=dict)  # more headers of the answer (Content-Type...)
    received: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """The first ``count`` requests, once they have come (AssertionError after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.received) >= count:
                    return list(self.received[:count])
            time.sleep(0.02)
        raise AssertionError(f"{len(self.received)} requests came within {timeout} s, not {count}")


@contextmanager
def webhook_receiver(answers: list[int] | None = None, delay: float = 0.0, body: bytes | None = None,
                     headers: dict[str, str] | None = None) -> Iterator[Receiver]:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with receiver._lock:
                receiver.received.append(Received(time.monotonic(), self.path, dict(self.headers.items()), body))
                status = receiver.answers.pop(0) if receiver.answers else 200
            if receiver.delay:
                time.sleep(receiver.delay)
            answer = receiver.body if receiver.body is not None else (
                b"ok" if status < 300 else f"receiver says no ({status})".encode())
            try:
                self.send_response(status)
                for name, value in receiver.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            except OSError:
                pass  # the sender gave up waiting (its timeout)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver = Receiver(f"http://127.0.0.1:{server.server_address[1]}/hooks/harvest?site=kb",
                        list(answers or []), delay, body, dict(headers or {}))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def dead_url() -> str:
    """An http URL on a loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hooks"


@dataclass
class SlowReceiver:
    url: str
    interval: float
    received: list[Received] = field(default_factory=list)
    open_connections: int = 0  # requests read whose sender is still connected
    closed: int = 0  # requests whose sender hung up while the answer dribbled
    bytes_sent: list[int] = field(default_factory=list)  # per request, once its sender hung up
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self, predicate: Callable[[SlowReceiver], bool], what: str, timeout: float = 30.0) -> None:
        """Return once ``predicate(self)`` holds (AssertionError naming ``what`` after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(self):
                    return
            time.sleep(0.02)
        raise AssertionError(f"not within {timeout} s: {what} ({len(self.received)} requests, "
                             f"{self.open_connections} open, {self.closed} closed)")


def _read_request(conn: socket.socket) -> tuple[str, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("the sender closed before its request's headers ended")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    request_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines if ": " in line)
    length = int(headers.get("Content-Length", "0"))
    while len(body) < length:
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("the sender closed before its request's body ended")
        body += chunk
    return request_line.split(" ")[1], headers, body


@contextmanager
def slow_receiver(interval: float) -> Iterator[SlowReceiver]:
    """A receiver that answers ``HTTP/1.1 200 OK``, then a byte every ``interval`` seconds of a header that
    never ends, until the sender hangs up (or the receiver is closed)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    stop = threading.Event()
    receiver = SlowReceiver(f"http://127.0.0.1:{server.getsockname()[1]}/hooks/slow", interval)

    def answer(conn: socket.socket) -> None:
        with conn:
            try:
                path, headers, body = _read_request(conn)
            except (ConnectionError, OSError):
                return
            with receiver._lock:
                receiver.received.append(Received(time.monotonic(), path, headers, body))
                receiver.open_connections += 1
            sent = 0
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while not stop.wait(interval):
                    conn.sendall(b"z")
                    sent += 1
            except OSError:
                pass  # the sender hung up: what the test waits for
            with receiver._lock:
                receiver.open_connections -= 1
                receiver.closed += 0 if stop.is_set() else 1
                receiver.bytes_sent.append(sent)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
