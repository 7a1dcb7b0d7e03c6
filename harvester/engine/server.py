"""The engine's REST API over HTTPS: the subset of Heritrix 3's resources a harvest controller uses.

Resources (peers.md §1.1): ``GET /`` (303 to /engine), ``GET|POST /engine`` (status; create, add, rescan),
``GET|POST /engine/job/NAME`` (status; build/validate, launch [checkpoint], pause, unpause, checkpoint,
terminate, teardown) and ``GET /engine/job/NAME/jobdir/PATH`` (files of the job directory). A successful
POST is answered with 303 See Other to the GET of the same resource, as Heritrix does; an action the job
cannot take now is answered 409 with the reason as text (Heritrix answers 303 and ignores it, which leaves
a client guessing). The representation follows ``Accept``: application/json, application/xml (or
text/xml), else HTML. Every resource needs HTTP Digest credentials (harvester.engine.digest).

This module maps HTTP to the job registry and back; it holds no job state itself.
"""

from __future__ import annotations

import logging
import ssl
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from harvester.engine import status
from harvester.engine.digest import DigestAuthenticator
from harvester.engine.jobs import Action, JobActionError, JobRegistry, UnknownJobError

log = logging.getLogger(__name__)

# Form bodies are a few short fields; anything bigger is not a client of ours.
MAX_FORM_BYTES = 64 * 1024
JOB_ACTIONS = {"build": Action.BUILD, "validate": Action.BUILD, "launch": Action.LAUNCH, "pause": Action.PAUSE,
               "unpause": Action.UNPAUSE, "checkpoint": Action.CHECKPOINT, "terminate": Action.TERMINATE,
               "teardown": Action.TEARDOWN}


class EngineHTTPServer(ThreadingHTTPServer):
    """A threading HTTPS server carrying the registry and the authenticator its handlers use."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], registry: JobRegistry, authenticator: DigestAuthenticator,
                 tls_context: ssl.SSLContext) -> None:
        super().__init__(address, EngineRequestHandler)
        self.registry = registry
        self.authenticator = authenticator
        self.tls_context = tls_context

    def get_request(self) -> tuple[Any, Any]:
        connection, address = super().get_request()
        # The TLS handshake happens in the handler's thread (do_handshake_on_connect is deferred to first
        # read), so one slow client cannot block the accept loop.
        return self.tls_context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s failed", client_address, exc_info=True)


class EngineRequestHandler(BaseHTTPRequestHandler):
    server: EngineHTTPServer
    server_version = "HarvestSuiteEngine/0.1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        log.info("%s %s", self.address_string(), format % args)

    # -- plumbing ------------------------------------------------------------------------------------------

    def _base_url(self) -> str:
        host = self.headers.get("Host") or f"{self.server.server_address[0]}:{self.server.server_address[1]}"
        return f"https://{host}"

    def _send(self, code: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_text(self, code: int, text: str, extra: dict[str, str] | None = None) -> None:
        self._send(code, (text + "\n").encode("utf-8"), "text/plain; charset=UTF-8", extra)

    def _see_other(self, path: str) -> None:
        self._send(HTTPStatus.SEE_OTHER, b"", "text/plain", {"Location": self._base_url() + path})

    def _represent(self, root_name: str, title: str, model: dict[str, Any]) -> None:
        accept = (self.headers.get("Accept") or "").lower()
        if "application/json" in accept:
            self._send(HTTPStatus.OK, status.to_json(model), "application/json; charset=UTF-8")
        elif "application/xml" in accept or "text/xml" in accept:
            self._send(HTTPStatus.OK, status.to_xml(root_name, model), "application/xml; charset=UTF-8")
        else:
            self._send(HTTPStatus.OK, status.to_html(title, model), "text/html; charset=UTF-8")

    def _read_form(self) -> dict[str, str] | None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_FORM_BYTES:
            self._send_text(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"form over {MAX_FORM_BYTES} bytes")
            return None
        body = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        return {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}

    def _is_authorised(self) -> bool:
        outcome = self.server.authenticator.check(self.command, self.headers.get("Authorization"))
        if outcome.is_accepted:
            return True
        if self.headers.get("Authorization"):
            log.warning("refused credentials from %s: %s", self.address_string(), outcome.reason)
        # Drain a form body so the connection stays usable for the client's authenticated retry.
        length = int(self.headers.get("Content-Length") or 0)
        if 0 < length <= MAX_FORM_BYTES:
            self.rfile.read(length)
        self._send_text(HTTPStatus.UNAUTHORIZED, "authentication required",
                        {"WWW-Authenticate": self.server.authenticator.challenge(stale=outcome.is_stale)})
        return False

    def _route(self) -> list[str]:
        return [unquote(part) for part in urlsplit(self.path).path.split("/") if part]

    # -- methods -------------------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if not self._is_authorised():
            return
        parts = self._route()
        registry = self.server.registry
        if not parts:
            self._see_other("/engine")
        elif parts == ["engine"]:
            self._represent("engine", "Crawl engine", status.engine_model(registry.snapshot(), self._base_url()))
        elif len(parts) >= 3 and parts[:2] == ["engine", "job"]:
            self._get_job(parts[2], parts[3:])
        else:
            self._send_text(HTTPStatus.NOT_FOUND, f"no resource {self.path}")

    do_HEAD = do_GET  # noqa: N815

    def _get_job(self, name: str, rest: list[str]) -> None:
        try:
            job = self.server.registry.get(name)
        except UnknownJobError:
            self._send_text(HTTPStatus.NOT_FOUND, f"no job {name}")
            return
        if not rest:
            self._represent("job", f"Job {name}", status.job_model(job.snapshot(), self._base_url()))
        elif rest[0] == "jobdir":
            self._send_job_file(job.directory, rest[1:])
        else:
            self._send_text(HTTPStatus.NOT_FOUND, f"no resource {self.path}")

    def _send_job_file(self, directory: Path, parts: list[str]) -> None:
        root = directory.resolve()
        target = root.joinpath(*parts).resolve() if parts else root
        if not target.is_relative_to(root) or not target.exists():
            self._send_text(HTTPStatus.NOT_FOUND, f"no file {self.path}")
        elif target.is_dir():
            listing = "\n".join(sorted(entry.name + ("/" if entry.is_dir() else "") for entry in target.iterdir()))
            self._send_text(HTTPStatus.OK, listing)
        else:
            # Logs and reports are text; WARCs are fetched from the file system, not through the API.
            self._send(HTTPStatus.OK, target.read_bytes(), "application/octet-stream")

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        if not self._is_authorised():
            return
        form = self._read_form()
        if form is None:
            return
        parts = self._route()
        if parts == ["engine"]:
            self._post_engine(form)
        elif len(parts) == 3 and parts[:2] == ["engine", "job"]:
            self._post_job(parts[2], form)
        else:
            self._send_text(HTTPStatus.NOT_FOUND, f"no resource {self.path}")

    def _post_engine(self, form: dict[str, str]) -> None:
        registry = self.server.registry
        action = form.get("action", "")
        try:
            if action == "create":
                registry.create(form.get("createpath", "").strip())
            elif action == "add":
                registry.add(Path(form.get("addpath", "").strip()))
            elif action == "rescan":
                registry.rescan()
            else:
                self._send_text(HTTPStatus.BAD_REQUEST, f"unknown engine action {action!r} (create, add, rescan)")
                return
        except JobActionError as exc:
            self._send_text(HTTPStatus.CONFLICT, str(exc))
            return
        self._see_other("/engine")

    def _post_job(self, name: str, form: dict[str, str]) -> None:
        try:
            job = self.server.registry.get(name)
        except UnknownJobError:
            self._send_text(HTTPStatus.NOT_FOUND, f"no job {name}")
            return
        action = JOB_ACTIONS.get(form.get("action", ""))
        if action is None:
            self._send_text(HTTPStatus.BAD_REQUEST,
                            f"unknown job action {form.get('action')!r} ({', '.join(JOB_ACTIONS)})")
            return
        checkpoint = form.get("checkpoint") or None if action is Action.LAUNCH else None
        try:
            job.perform(action, checkpoint=checkpoint)
        except JobActionError as exc:
            self._send_text(HTTPStatus.CONFLICT, str(exc))
            return
        self._see_other(f"/engine/job/{quote(name)}")


class EngineServer:
    """The HTTPS server running in a background thread; ``url`` is where it listens."""

    def __init__(self, bind: str, port: int, registry: JobRegistry, authenticator: DigestAuthenticator,
                 tls_context: ssl.SSLContext) -> None:
        self.registry = registry
        self.httpd = EngineHTTPServer((bind, port), registry, authenticator, tls_context)
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="engine-http", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"https://{shown}:{port}/engine"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop answering, then checkpoint and stop the crawls."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)
        self.registry.shutdown()
