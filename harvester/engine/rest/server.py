"""The engine's REST API over HTTPS: the subset of Heritrix 3's resources a harvest controller uses.

Resources (as in Heritrix 3's REST API documentation, https://heritrix.readthedocs.io/en/latest/api.html):
``GET /`` (303 to /engine), ``GET|POST /engine`` (status; create, add, rescan),
``GET|POST /engine/job/NAME`` (status; build/validate, launch [checkpoint], pause, unpause, checkpoint,
terminate, teardown; ``copyTo=NEW`` [``asProfile=on``]), ``GET|PUT /engine/job/NAME/jobdir/PATH`` (files of
the job directory; PUT uploads one), ``GET /engine/job/NAME/report/REPORT`` (a report, live while the crawl
runs), ``GET|POST /engine/job/NAME/script`` (the script console: a script of HarvestSuite's library changes
the running crawl, harvester/heritrix3/scripting.py), ``GET|POST /engine/job/NAME/beans/BEANPATH`` (the bean
browser: the properties an operator may change while the crawl runs, live/livechanges.py), and
``GET /engine/jobsdir/PATH`` and ``GET /engine/anypath/ABSOLUTE-PATH`` (read-only, inside the jobs directory).

Every POST is answered with 303 See Other to the GET of the resource, as Heritrix answers it, also when
the action had nothing to do or was refused (pause while paused, create of an existing job): the reason
goes to the job's job.log (jobLogTail) and into the 303's text body, and a client judges the action by the
job's resulting state, as it must with a real Heritrix. Two answers are Heritrix's own otherwise: a script
POST is answered 200 with the script's outcome (ScriptResource), and a bean property POST 303 to the
property's GET unless the value is refused (400), the path unknown (404) or the crawl not running (409),
where Heritrix would fail with a server error. The representation follows ``Accept``:
application/json, application/xml (or text/xml), else HTML. Every resource needs HTTP Digest credentials
(harvester.engine.rest.digest), checked before a request body is read.

This module maps HTTP to the job registry and back; it holds no job state itself.
"""

from __future__ import annotations

import logging
import re
import ssl
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from harvester.engine.crawl import CrawlStateError
from harvester.engine.live.livechanges import PROPERTIES, LiveChanges, PropertyError, ScriptOutcome
from harvester.engine.rest import status
from harvester.engine.rest.digest import DigestAuthenticator
from harvester.engine.rest.jobregistry import (
    Action,
    CrawlJob,
    JobActionError,
    JobRegistry,
    NoCrawlError,
    UnknownJobError,
)

log = logging.getLogger(__name__)

# Form bodies are a few short fields; anything bigger is not a client of ours.
MAX_FORM_BYTES = 64 * 1024
# A PUT carries a configuration file or a seed list; a national seed list stays well below this.
MAX_PUT_BYTES = 256 * 1024 * 1024
# A script is the library (a few KB) and its calls; adding a hundred thousand URIs in one stays below this.
MAX_SCRIPT_FORM_BYTES = 16 * 1024 * 1024
# Heritrix's script console offers its JSR-223 engines; this engine reads HarvestSuite's library's calls.
AVAILABLE_SCRIPT_ENGINES = [{"engine": "groovy", "language": "Groovy (HarvestSuite's library calls only)"},
                  {"engine": "beanshell", "language": "BeanShell (HarvestSuite's library calls only)"}]
SCRIPT_VARIABLES = [
    {"variable": "rawOut", "description": "a PrintWriter for arbitrary text output to this page"},
    {"variable": "htmlOut", "description": "a PrintWriter for HTML output to this page"},
    {"variable": "job", "description": "the current CrawlJob instance"},
    {"variable": "appCtx", "description": "current job ApplicationContext, if any"},
    {"variable": "scriptResource", "description": "the ScriptResource implementing this page, which offers "
                                                  "utility methods"},
]
# Characters XML 1.0 cannot carry: an echoed script holding one must still give a well-formed answer.
_NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
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

    def _see_other(self, path: str, reason: str = "") -> None:
        body = (reason + "\n").encode("utf-8") if reason else b""
        self._send(HTTPStatus.SEE_OTHER, body, "text/plain; charset=UTF-8", {"Location": self._base_url() + path})

    def _represent(self, root_name: str, title: str, model: dict[str, Any], code: int = HTTPStatus.OK) -> None:
        accept = (self.headers.get("Accept") or "").lower()
        if "application/json" in accept:
            self._send(code, status.to_json(model), "application/json; charset=UTF-8")
        elif "application/xml" in accept or "text/xml" in accept:
            self._send(code, status.to_xml(root_name, model), "application/xml; charset=UTF-8")
        else:
            self._send(code, status.to_html(title, model), "text/html; charset=UTF-8")

    def _read_form(self, limit: int = MAX_FORM_BYTES) -> dict[str, str] | None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > limit:
            self.close_connection = True  # the body is not read: the connection cannot carry another request
            self._send_text(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"form over {limit} bytes")
            return None
        body = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        return {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}

    def parse_request(self) -> bool:
        self._expect_refused = False  # per request: a handler serves every request of its connection
        return super().parse_request()

    def handle_expect_100(self) -> bool:
        # curl -T sends "Expect: 100-continue": the credentials are checked before the body is asked for,
        # so an unauthenticated upload is refused without being transferred.
        if not self.server.authenticator.check(self.command, self.headers.get("Authorization")).is_accepted:
            self._expect_refused = True
            return True  # the 401 follows from the method handler, which sees the flag
        return super().handle_expect_100()

    def _is_authorised(self) -> bool:
        outcome = self.server.authenticator.check(self.command, self.headers.get("Authorization"))
        if outcome.is_accepted:
            return True
        if self.headers.get("Authorization"):
            log.warning("refused credentials from %s: %s", self.address_string(), outcome.reason)
        length = int(self.headers.get("Content-Length") or 0)
        if getattr(self, "_expect_refused", False):
            # The client waits for 100 Continue and sends no body: answer and close, nothing to drain.
            self.close_connection = True
        elif 0 < length <= MAX_FORM_BYTES:
            # Drain a form body so the connection stays usable for the client's authenticated retry.
            self.rfile.read(length)
        elif length:
            self.close_connection = True
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
        elif parts[:2] == ["engine", "jobsdir"]:
            self._send_file(registry.jobs_dir, parts[2:])
        elif parts[:2] == ["engine", "anypath"]:
            # Heritrix serves any path here; this engine only what lies inside its jobs directory.
            target = Path("/" + "/".join(parts[2:]))
            root = registry.jobs_dir.resolve()
            if not target.resolve().is_relative_to(root):
                self._send_text(HTTPStatus.FORBIDDEN, f"{target} is outside the jobs directory {root}")
            else:
                self._send_file(root, list(target.resolve().relative_to(root).parts))
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
            self._send_file(job.directory, rest[1:])
        elif rest[0] == "report" and len(rest) == 2:
            text = job.report_text(rest[1])
            if text is None:
                self._send_text(HTTPStatus.NOT_FOUND, f"no report {rest[1]} of job {name} (yet)")
            else:
                self._send(HTTPStatus.OK, text.encode("utf-8"), "text/plain; charset=UTF-8")
        elif rest == ["script"]:
            self._represent_script(name, "", "groovy", None)
        elif rest[0] == "beans":
            self._get_beans(job, ".".join(rest[1:]) if len(rest) > 1 else "")
        else:
            self._send_text(HTTPStatus.NOT_FOUND, f"no resource {self.path}")

    # -- the script console and the bean browser -------------------------------------------------------

    def _represent_script(self, name: str, script: str, engine: str, outcome: ScriptOutcome | None,
                          lines: int = 0) -> None:
        """Heritrix's ScriptModel (ScriptResource, ScriptingConsole): the script, what it printed, and
        ``failure``/``exception`` when it failed; 200 either way, as Heritrix answers a script's exception."""
        failure = outcome.failure if outcome is not None else None
        model = {
            "crawlJobShortName": name,
            "crawlJobUrl": f"{self._base_url()}/engine/job/{quote(name)}",
            "availableScriptEngines": AVAILABLE_SCRIPT_ENGINES,
            "script": _NOT_XML.sub("\ufffd", script),
            "engine": _NOT_XML.sub("\ufffd", engine),
            "linesExecuted": 0 if failure is not None else lines,
            "rawOutput": _NOT_XML.sub("\ufffd", outcome.raw_output) if outcome is not None else "",
            "htmlOutput": "",
            "failure": failure is not None,
            "exception": _NOT_XML.sub("\ufffd", failure) if failure is not None else None,
            "stackTrace": _NOT_XML.sub("\ufffd", failure) if failure is not None else None,
            "availableGlobalVariables": SCRIPT_VARIABLES,
        }
        self._represent("script", f"Scripting console of job {name}", model)

    def _post_script(self, name: str) -> None:
        form = self._read_form(MAX_SCRIPT_FORM_BYTES)
        if form is None:
            return
        try:
            job = self.server.registry.get(name)
        except UnknownJobError:
            self._send_text(HTTPStatus.NOT_FOUND, f"no job {name}")
            return
        script, engine = form.get("script", ""), form.get("engine", "")
        outcome = job.run_script(script, engine)
        # Heritrix counts the script's lines when it ran through (ScriptingConsole.execute).
        self._represent_script(name, script, engine, outcome, lines=len(re.split(r"\r?\n", script)))

    def _get_beans(self, job: CrawlJob, path: str) -> None:
        """Heritrix's BeansModel of one property: its path, value (``bean``: class and propValue), whether it
        may be changed; without a path, the properties this engine lets change."""
        model: dict[str, Any] = {"crawlJobShortName": job.name,
                                 "crawlJobUrl": f"{self._base_url()}/engine/job/{quote(job.name)}",
                                 "beanPath": path}
        try:
            if path:
                prop = LiveChanges.property_of(path)
                value = job.bean_property(path)
                model.update({"bean": {"class": prop.java_class, "propValue": value}, "editable": True,
                              "target": value, "description": prop.effect})
            else:
                job.bean_property(next(iter(PROPERTIES)))  # a launched crawl is needed, as for one property
                model["allNamedCrawlBeans"] = [{"name": prop.path, "class": prop.java_class,
                                                "url": f"{model['crawlJobUrl']}/beans/{prop.path}"}
                                               for prop in PROPERTIES.values()]
        except (NoCrawlError, PropertyError) as exc:
            self._send_text(HTTPStatus.NOT_FOUND, str(exc))
            return
        self._represent("beans", f"Crawl beans of job {job.name}", model)

    def _post_beans(self, name: str, url_path: str, form: dict[str, str]) -> None:
        try:
            job = self.server.registry.get(name)
        except UnknownJobError:
            self._send_text(HTTPStatus.NOT_FOUND, f"no job {name}")
            return
        path = form.get("beanPath") or url_path   # Heritrix's form names the path in a field of its own
        if "newVal" not in form:
            self._see_other(f"/engine/job/{quote(name)}/beans/{quote(path)}")
            return
        try:
            job.set_bean_property(path, form["newVal"])
        except NoCrawlError as exc:
            self._send_text(HTTPStatus.NOT_FOUND, str(exc))
            return
        except PropertyError as exc:
            self._send_text(exc.status_hint, str(exc))
            return
        except CrawlStateError as exc:
            self._send_text(HTTPStatus.CONFLICT, str(exc))
            return
        self._see_other(f"/engine/job/{quote(name)}/beans/{quote(path)}")

    def _send_file(self, directory: Path, parts: list[str]) -> None:
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
        parts = self._route()
        if len(parts) == 4 and parts[:2] == ["engine", "job"] and parts[3] == "script":
            self._post_script(parts[2])
            return
        form = self._read_form()
        if form is None:
            return
        if parts == ["engine"]:
            self._post_engine(form)
        elif len(parts) == 3 and parts[:2] == ["engine", "job"]:
            self._post_job(parts[2], form)
        elif len(parts) >= 4 and parts[:2] == ["engine", "job"] and parts[3] == "beans":
            self._post_beans(parts[2], ".".join(parts[4:]), form)
        else:
            self._send_text(HTTPStatus.NOT_FOUND, f"no resource {self.path}")

    def do_PUT(self) -> None:  # noqa: N802 (http.server's naming)
        if not self._is_authorised():
            return
        parts = self._route()
        length = int(self.headers.get("Content-Length") or -1)
        if len(parts) < 5 or parts[:2] != ["engine", "job"] or parts[3] != "jobdir":
            self.close_connection = True
            self._send_text(HTTPStatus.METHOD_NOT_ALLOWED, "PUT only uploads files under /engine/job/NAME/jobdir/")
            return
        if length < 0 or length > MAX_PUT_BYTES:
            self.close_connection = True
            self._send_text(HTTPStatus.LENGTH_REQUIRED if length < 0 else HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                            f"a PUT needs a Content-Length of at most {MAX_PUT_BYTES} bytes")
            return
        try:
            job = self.server.registry.get(parts[2])
        except UnknownJobError:
            self.close_connection = True
            self._send_text(HTTPStatus.NOT_FOUND, f"no job {parts[2]}")
            return
        root = job.directory.resolve()
        target = root.joinpath(*parts[4:]).resolve()
        if not target.is_relative_to(root) or target == root:
            self.close_connection = True
            self._send_text(HTTPStatus.FORBIDDEN, f"{'/'.join(parts[4:])} is not a file inside the job directory")
            return
        data = self.rfile.read(length)
        # Written whole, then renamed: a build never reads a half-uploaded configuration.
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.upload")
        temporary.write_bytes(data)
        temporary.replace(target)
        job.job_log.info(f"{target.relative_to(root)} uploaded ({len(data)} bytes)")
        self._send(HTTPStatus.OK, b"", "text/plain")

    def _post_engine(self, form: dict[str, str]) -> None:
        registry = self.server.registry
        action = form.get("action", "")
        reason = ""
        try:
            if action == "create":
                registry.create(form.get("createpath", "").strip())
            elif action == "add":
                path = form.get("addpath", "").strip()
                if not path:
                    # Heritrix's words (EngineResource); without this, Path("") would add the working directory.
                    raise JobActionError("Cannot add null path")
                registry.add(Path(path))
            elif action == "rescan":
                registry.rescan()
            else:
                raise JobActionError(f"unknown engine action {action!r} (create, add, rescan)")
        except JobActionError as exc:
            reason = str(exc)
            log.warning("engine action %s refused: %s", action, reason)
        self._see_other("/engine", reason)

    def _post_job(self, name: str, form: dict[str, str]) -> None:
        try:
            job = self.server.registry.get(name)
        except UnknownJobError:
            self._send_text(HTTPStatus.NOT_FOUND, f"no job {name}")
            return
        copy_to = form.get("copyTo", "").strip()
        if copy_to:
            try:
                self.server.registry.copy(job, copy_to, as_profile=form.get("asProfile") == "on")
            except JobActionError as exc:
                job.job_log.warning(f"copyTo {copy_to} refused: {exc}")
                self._see_other(f"/engine/job/{quote(name)}", str(exc))
                return
            self._see_other(f"/engine/job/{quote(copy_to)}")
            return
        action = JOB_ACTIONS.get(form.get("action", ""))
        if action is None:
            reason = f"unknown job action {form.get('action')!r} ({', '.join(JOB_ACTIONS)})"
            job.job_log.warning(reason)
            self._see_other(f"/engine/job/{quote(name)}", reason)
            return
        checkpoint = form.get("checkpoint") or None if action is Action.LAUNCH else None
        reason = ""
        try:
            job.perform(action, checkpoint=checkpoint)
        except JobActionError as exc:
            reason = str(exc)  # perform wrote it to job.log already
        self._see_other(f"/engine/job/{quote(name)}", reason)


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
