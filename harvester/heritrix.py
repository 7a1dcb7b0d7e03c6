"""Client of the Heritrix 3 REST API (https://heritrix.readthedocs.io/en/latest/api.html), for a real Heritrix 3
and for our bundled engine.

It speaks HTTPS with HTTP Digest authentication (RFC 7616, MD5, qop=auth) and accepts a self-signed
certificate either pinned (``ca_file``) or unchecked (``verify=False``). Actions are form POSTs; the 303 the
engine answers is followed to the GET, whose status is parsed and returned. Status is asked for as XML
(``Accept: application/xml``) and read into the representations of harvester/heritrix3/model.py, which the
bundled engine writes its answers through.

Every failure leaves this module as ``harvestdef.errors.HeritrixError`` with a message that names the
action and the URL: connection refused or TLS failure, wrong credentials (401), unknown job (404), an action
the engine refused, and an answer that is not the expected representation. A script that fails on the
engine is not such a failure: ``run_script`` returns it in its ScriptResult, as Heritrix's script console
shows it.

Live changes of a running crawl go through the script console (``run_script`` with a script of
harvester/heritrix3/scripting.py's builders) and the bean browser (``bean_property``, ``set_bean_property``),
the same calls for a real Heritrix 3 and for the bundled engine.
"""

from __future__ import annotations

import http.client
import os
import ssl
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import quote, urlencode, urlsplit

from lxml import etree

from harvestdef.errors import HeritrixError
from harvester.digestauth import authorization_header, parse_auth_params
from harvester.frontierqueues import FrontierQueues, parse_frontier_summary
from harvester.heritrix3.model import (
    XML,
    EngineStatus,
    JobResource,
    ScriptResult,
    parse_bean_value,
    parse_engine_status,
    parse_job_resource,
    parse_script_result,
)
from harvester.heritrix3.states import ACTIVE, ENDING, PAUSED_OR_PAUSING, ControllerEvent, ControllerState

MAX_REDIRECTS = 5
FRONTIER_SUMMARY_REPORT = "FrontierSummaryReport"
# Status documents are small; a bigger answer is not a status document.
MAX_BODY_BYTES = 64 * 1024 * 1024
_T = typing.TypeVar("_T")
@dataclass
class _Challenge:
    realm: str
    nonce: str
    qop: str | None
    opaque: str | None
    algorithm: str
    count: int = 0


def _parse_challenge(header: str) -> _Challenge | None:
    scheme, params = parse_auth_params(header)
    if scheme.lower() != "digest":
        return None
    qops = [item.strip() for item in params.get("qop", "").split(",") if item.strip()]
    return _Challenge(realm=params.get("realm", ""), nonce=params.get("nonce", ""),
                      qop="auth" if "auth" in qops else None, opaque=params.get("opaque"),
                      algorithm=params.get("algorithm", "MD5"))


@dataclass(frozen=True)
class _Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    url: str
    refusal: str = ""  # the text of a POST's 303, where our engine says why an action did nothing


# The controller states in which each job action has taken effect (or the crawl ended meanwhile). Heritrix
# answers every action 303 whether or not it did anything, so the resulting state is the only verdict.
ACTION_DONE: dict[str, Callable[[JobResource], bool]] = {
    "build": lambda status: not status.is_unbuilt,
    ControllerEvent.PAUSE: lambda status: status.crawl_controller_state in PAUSED_OR_PAUSING | ENDING
    or status.is_finished,
    # An unpause that reaches a crawl still PREPARING is carried out as the table says (PREPARING stays
    # PREPARING, and the crawl runs instead of pausing when preparation ends): done, not refused.
    ControllerEvent.UNPAUSE: lambda status: status.crawl_controller_state in ACTIVE | ENDING
    or status.crawl_controller_state == ControllerState.PREPARING or status.is_finished,
    ControllerEvent.TERMINATE: lambda status: status.crawl_controller_state in ENDING or status.is_finished
    or not status.is_running,
    "teardown": lambda status: status.is_unbuilt,
}


class HeritrixClient:
    """One Heritrix 3 engine (or ours) at ``base_url`` such as ``https://127.0.0.1:8443``.

    Thread-compatible, not thread-safe: give each thread its own client.
    """

    def __init__(self, base_url: str, user: str, password: str, *, ca_file: str | os.PathLike[str] | None = None,
                 verify: bool = True, timeout: float = 30.0, representation: str = XML) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise HeritrixError(f"engine URL {base_url!r} is not an http(s) URL")
        self.base_url = f"{parts.scheme}://{parts.netloc}"
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self.user = user
        self._password = password
        self.timeout = timeout
        self.representation = representation
        self._challenge: _Challenge | None = None
        if ca_file is not None:
            self._tls = ssl.create_default_context(cafile=os.fspath(ca_file))
        elif verify:
            self._tls = ssl.create_default_context()
        else:
            self._tls = ssl.create_default_context()
            self._tls.check_hostname = False
            self._tls.verify_mode = ssl.CERT_NONE

    # -- engine --------------------------------------------------------------------------------------------

    def engine_status(self) -> EngineStatus:
        response = self._request("GET", "/engine", action="engine status")
        return self._parse(response, parse_engine_status, "engine status")

    def create_job(self, name: str) -> EngineStatus:
        """Create a job from the engine's profile; an existing job of that name is left as it is."""
        return self._engine_action("create", {"action": "create", "createpath": name},
                                   lambda status: name in status.job_names())

    def add_job(self, directory: str | os.PathLike[str]) -> EngineStatus:
        name = os.path.basename(os.path.normpath(os.fspath(directory)))
        return self._engine_action("add", {"action": "add", "addpath": os.fspath(directory)},
                                   lambda status: name in status.job_names())

    def rescan(self) -> EngineStatus:
        return self._engine_action("rescan", {"action": "rescan"}, lambda status: True)

    # -- jobs ----------------------------------------------------------------------------------------------

    def job_status(self, name: str) -> JobResource:
        response = self._request("GET", self._job_path(name), action=f"status of job {name}", job=name)
        return self._parse(response, parse_job_resource, f"status of job {name}")

    def build(self, name: str) -> JobResource:
        return self._job_action(name, {"action": "build"})

    def launch(self, name: str, checkpoint: str | None = None) -> JobResource:
        """Launch the built job; ``checkpoint`` is a checkpoint name or ``latest`` to resume from one.
        With pauseAtStart (Heritrix's default) the crawl then waits PAUSED for ``unpause``."""
        form = {"action": "launch"}
        if checkpoint:
            form["checkpoint"] = checkpoint
        launches = self.job_status(name).launch_count
        return self._job_action(name, form, lambda status: status.launch_count > launches)

    def pause(self, name: str) -> JobResource:
        return self._job_action(name, {"action": "pause"})

    def unpause(self, name: str) -> JobResource:
        return self._job_action(name, {"action": "unpause"})

    def checkpoint(self, name: str) -> JobResource:
        before = set(self.job_status(name).checkpoint_files)
        return self._job_action(name, {"action": "checkpoint"},
                                lambda status: bool(set(status.checkpoint_files) - before))

    def copy_job(self, name: str, new_name: str, as_profile: bool = False) -> JobResource:
        """Heritrix's copyTo: a new job (or profile) with this job's configuration; the new job's status."""
        form = {"copyTo": new_name}
        if as_profile:
            form["asProfile"] = "on"
        action = f"copy of job {name} to {new_name}"
        response = self._request("POST", self._job_path(name), form=form, action=action, job=name)
        status = self._parse(response, parse_job_resource, action)
        if status.short_name != new_name:
            raise HeritrixError(f"{action}: not copied: {response.refusal or 'the engine gave no reason'}")
        return status

    def put_job_file(self, name: str, relative_path: str, data: bytes) -> None:
        """Upload a file into the job directory (``PUT jobdir/...``), e.g. a new crawler-beans.cxml."""
        path = f"{self._job_path(name)}/jobdir/{quote(relative_path)}"
        self._request("PUT", path, action=f"upload of {relative_path} to job {name}", job=name, body=data)

    def terminate(self, name: str) -> JobResource:
        return self._job_action(name, {"action": "terminate"})

    def teardown(self, name: str) -> JobResource:
        return self._job_action(name, {"action": "teardown"})

    def job_file(self, name: str, relative_path: str) -> bytes:
        """A file of the job directory (``jobdir/``), e.g. ``latest/logs/crawl.log``."""
        path = f"{self._job_path(name)}/jobdir/{quote(relative_path)}"
        return self._request("GET", path, action=f"file {relative_path} of job {name}", job=name).body

    def job_report(self, name: str, report: str) -> str:
        """One report by Heritrix's class name (``FrontierSummaryReport``, ``CrawlSummaryReport``), as it
        stands now while the crawl runs."""
        path = f"{self._job_path(name)}/report/{quote(report, safe='')}"
        return self._request("GET", path, action=f"report {report} of job {name}", job=name).body.decode(
            "utf-8", errors="replace")

    def frontier_queues(self, name: str) -> FrontierQueues:
        """The queues of the job's FrontierSummaryReport as it stands now (HeritrixError if it could not be
        fetched; blocks that do not parse are counted in the answer, never raised)."""
        return parse_frontier_summary(self.job_report(name, FRONTIER_SUMMARY_REPORT))

    def run_script(self, name: str, script: str, engine: str = "groovy") -> ScriptResult:
        """POST ``script`` to the job's script console (``engine=groovy&script=...``, as NetarchiveSuite's H3
        remote access does). A script that fails on the engine is a ScriptResult with ``failure``, not an
        error; HeritrixError only when the request itself fails or the answer is no script model."""
        action = f"script of job {name}"
        response = self._request("POST", f"{self._job_path(name)}/script", form={"engine": engine, "script": script},
                                 action=action, job=name)
        return self._parse(response, parse_script_result, action)

    def bean_property(self, name: str, path: str) -> str:
        """The value of bean property ``path`` (``disposition.delayFactor``) of the job's crawl, as text.
        HeritrixError with the engine's reason when there is no such property or crawl (404)."""
        action = f"bean property {path} of job {name}"
        response = self._request("GET", self._bean_path(name, path), action=action, explain_not_found=True)
        return self._parse(response, parse_bean_value, action)

    def set_bean_property(self, name: str, path: str, value: object) -> str:
        """Set bean property ``path`` of the running crawl (Heritrix's bean browser form, ``newVal``); the
        value read back afterwards. HeritrixError with the engine's reason when it refuses the value (400),
        knows no such property (404) or the crawl is not running (409)."""
        action = f"setting bean property {path} of job {name} to {value}"
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        response = self._request("POST", self._bean_path(name, path), form={"beanPath": path, "newVal": text},
                                 action=action, explain_not_found=True)
        return self._parse(response, parse_bean_value, action)

    def wait_for(self, name: str, predicate: Callable[[JobResource], bool], timeout: float,
                 poll_interval: float = 0.5) -> JobResource:
        """Poll the job's status until ``predicate`` holds; HeritrixError naming the last status on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.job_status(name)
            if predicate(status):
                return status
            if time.monotonic() >= deadline:
                raise HeritrixError(f"job {name} at {self.base_url}: condition not met within {timeout:g} s; "
                                    f"last status {status.status_description!r}, "
                                    f"controller {status.crawl_controller_state}")
            time.sleep(poll_interval)

    # -- plumbing ------------------------------------------------------------------------------------------

    def _job_path(self, name: str) -> str:
        return f"/engine/job/{quote(name, safe='')}"

    def _bean_path(self, name: str, path: str) -> str:
        return f"{self._job_path(name)}/beans/{quote(path, safe='')}"

    def _engine_action(self, action: str, form: dict[str, str],
                       done: Callable[[EngineStatus], bool]) -> EngineStatus:
        response = self._request("POST", "/engine", form=form, action=action)
        status = self._parse(response, parse_engine_status, action)
        if not done(status):
            raise HeritrixError(f"{action}: the engine did not carry it out: "
                                f"{response.refusal or 'it gave no reason'}")
        return status

    def _job_action(self, name: str, form: dict[str, str],
                    done: Callable[[JobResource], bool] | None = None) -> JobResource:
        """POST an action, then judge it by the job's state (an action with nothing to do is no error)."""
        action = f"{form['action']} of job {name}"
        response = self._request("POST", self._job_path(name), form=form, action=action, job=name)
        status = self._parse(response, parse_job_resource, action)
        done = done or ACTION_DONE.get(form["action"])
        if done is not None and not done(status):
            # Our engine says why in the 303; a real Heritrix only in job.log, newest line first.
            reason = response.refusal or (status.job_log_tail[0] if status.job_log_tail else "no reason given")
            raise HeritrixError(f"{action}: not done, the job is {status.status_description!r} "
                                f"({status.crawl_controller_state}): {reason}")
        return status

    def _parse(self, response: _Response, parser: Callable[[bytes, str], _T], action: str) -> _T:
        content_type = response.headers.get("Content-Type", "")
        try:
            return parser(response.body, content_type)
        except (etree.XMLSyntaxError, ValueError, TypeError) as exc:
            excerpt = response.body[:200].decode("utf-8", errors="replace")
            raise HeritrixError(f"{action}: {response.url} answered something that is not a status document "
                                f"({content_type or 'no content type'}): {exc}; starts {excerpt!r}") from exc

    def _authorization(self, method: str, path: str) -> str | None:
        challenge = self._challenge
        if challenge is None:
            return None
        challenge.count += 1
        nc = f"{challenge.count:08x}"
        cnonce = os.urandom(8).hex()
        return authorization_header(user=self.user, realm=challenge.realm, password=self._password,
                                    method=method, uri=path, nonce=challenge.nonce,
                                    algorithm=challenge.algorithm, qop=challenge.qop, nc=nc, cnonce=cnonce,
                                    opaque=challenge.opaque)

    def _send_once(self, method: str, path: str, body: bytes | None, action: str,
                   content_type: str = "application/x-www-form-urlencoded") -> _Response:
        url = self.base_url + path
        if self._scheme == "https":
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout, context=self._tls)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        headers = {"Accept": self.representation, "Connection": "close"}
        if body is not None:
            headers["Content-Type"] = content_type
        authorization = self._authorization(method, path)
        if authorization:
            headers["Authorization"] = authorization
        try:
            connection.request(method, path, body=body, headers=headers)
            answer = connection.getresponse()
            payload = answer.read(MAX_BODY_BYTES + 1)
            if len(payload) > MAX_BODY_BYTES:
                raise HeritrixError(f"{action}: {url} answered more than {MAX_BODY_BYTES} bytes")
            return _Response(answer.status, answer.headers, payload, url)
        except ssl.SSLError as exc:
            raise HeritrixError(f"{action}: TLS with {url} failed (certificate not trusted? "
                                f"give ca_file or verify=False): {exc}") from exc
        except ConnectionRefusedError as exc:
            raise HeritrixError(f"{action}: connection to {url} refused: is the engine running?") from exc
        except TimeoutError as exc:
            raise HeritrixError(f"{action}: {url} did not answer within {self.timeout:g} s") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise HeritrixError(f"{action}: request to {url} failed: {exc!r}") from exc
        finally:
            connection.close()

    def _request(self, method: str, path: str, *, action: str, form: dict[str, str] | None = None,
                 job: str | None = None, body: bytes | None = None, explain_not_found: bool = False) -> _Response:
        content_type = "application/x-www-form-urlencoded" if form is not None else "application/octet-stream"
        if form is not None:
            body = urlencode(form).encode("ascii")
        response = self._authenticated(method, path, body, action, content_type)
        redirects = 0
        refusal = ""
        # A POST is answered 303 to the resource's GET (Heritrix's rule); / is answered 303 to /engine.
        while response.status in (301, 302, 303, 307) and redirects < MAX_REDIRECTS:
            if response.status == 303:
                refusal = response.body.decode("utf-8", errors="replace").strip()
            location = response.headers.get("Location", "")
            target = urlsplit(location)
            path = (target.path or "/") + (f"?{target.query}" if target.query else "")
            if response.status in (301, 302, 303):
                method, body = "GET", None
            response = self._authenticated(method, path, body, action, content_type)
            redirects += 1
        if response.status == 404:
            what = f"no job {job!r}" if job else "no such resource"
            if explain_not_found:   # the engine's reason: no such job, crawl or property
                what = response.body[:500].decode("utf-8", errors="replace").strip() or what
            raise HeritrixError(f"{action}: {response.url}: {what} (404)")
        if response.status >= 400:
            detail = response.body[:500].decode("utf-8", errors="replace").strip()
            raise HeritrixError(f"{action}: {response.url} answered {response.status}: {detail}")
        if response.status not in (200, 201, 204):
            raise HeritrixError(f"{action}: {response.url} answered unexpected status {response.status}")
        return replace(response, refusal=refusal)

    def _authenticated(self, method: str, path: str, body: bytes | None, action: str,
                       content_type: str = "application/x-www-form-urlencoded") -> _Response:
        had_credentials = self._challenge is not None
        response = self._send_once(method, path, body, action, content_type)
        if response.status != 401:
            return response
        challenge = _parse_challenge(response.headers.get("WWW-Authenticate", ""))
        if challenge is None:
            raise HeritrixError(f"{action}: {response.url} asks for authentication other than Digest")
        stale = "stale=true" in response.headers.get("WWW-Authenticate", "").lower()
        if had_credentials and not stale:
            self._challenge = None
            raise HeritrixError(f"{action}: {response.url} refused user {self.user!r}: wrong user or password (401)")
        self._challenge = challenge
        response = self._send_once(method, path, body, action, content_type)
        if response.status == 401:
            self._challenge = None
            raise HeritrixError(f"{action}: {response.url} refused user {self.user!r}: wrong user or password (401)")
        return response
