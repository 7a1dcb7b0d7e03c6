"""Steering a running crawl: the live changes operators make, applied in version order (design.md §Running
crawls).

The scheduler sends each pending change of the job as a LiveChange to this controller's control queue, and
sends it again until answered. ``CrawlSteering.wait`` is the crawl loop's pause between two status polls:
it listens on the control queue meanwhile and applies what comes, so a pause clicked in the UI reaches the
crawl within the scheduler's sending interval, not at the next poll.

Each change is applied through the crawler's REST API, the same calls for a real Heritrix 3 and the
bundled engine: job actions for pause, resume and checkpoint; a restricted Groovy script (the form
NetarchiveSuite's H3 remote access sends, harvester/engine/scripting.py) for reject rules, domain budgets,
deleting queued URIs and adding URIs; bean properties for politeness. Stop and fail are carried out by the
crawl loop (``end_request``), which terminates the crawl and then calls ``settle_end``.

Every handled change is one line of the job directory's changes.jsonl before it is answered: a version
already there is never applied twice (a repeated sending is answered with what was answered before), and
the applied ones go into the metadata WARC. A version older than the newest handled one that arrives late
is refused with the reason, never silently dropped. Whatever the crawler refuses is answered refused with
its words.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from harvestdef.errors import HarvestSuiteError, HeritrixError
from harvestdef.messages import LiveChange, LiveChangeResult
from harvestdef.queues.base import Transport
from harvester.engine import scripting
from harvester.heritrix import HeritrixClient
from harvester.jobdir import JobDirectory
from harvester.protocol import receive_message

log = logging.getLogger(__name__)

APPLIED, REFUSED = "applied", "refused"
STOP, FAIL = "stop", "fail"

# politeness fields of the API -> the crawler's bean properties (Heritrix's names)
POLITENESS_BEANS: Mapping[str, str] = {
    "delay_factor": "disposition.delayFactor",
    "min_delay_ms": "disposition.minDelayMs",
    "max_delay_ms": "disposition.maxDelayMs",
    "max_per_host": "queueAssignmentPolicy.parallelQueues",
}


@dataclass(frozen=True)
class EndRequest:
    """An operator's stop or fail, for the crawl loop to carry out."""

    change: LiveChange

    @property
    def failed(self) -> bool:
        return self.change.kind == FAIL

    @property
    def description(self) -> str:
        if self.failed:
            return f"the crawl was ended as failed by {self.change.author} (change {self.change.version})"
        return f"the crawl was stopped by {self.change.author} (change {self.change.version})"


def _now() -> str:
    return datetime.now(UTC).isoformat()


class CrawlSteering:
    """Receives and applies the live changes of one job's crawl."""

    def __init__(self, client: HeritrixClient, name: str, jobdir: JobDirectory, transport: Transport,
                 control_queue: str, controller_id: str, send: Callable[[LiveChangeResult], None],
                 shutdown: threading.Event, checkpoint_timeout: float = 120.0) -> None:
        self.client = client
        self.name = name
        self.jobdir = jobdir
        self.job = jobdir.job
        self.transport = transport
        self.control_queue = control_queue
        self.controller_id = controller_id
        self.send = send
        self.shutdown = shutdown
        self.checkpoint_timeout = checkpoint_timeout
        self.end_request: EndRequest | None = None
        self._handled: dict[int, dict[str, Any]] = {entry["version"]: entry for entry in jobdir.live_changes()}

    @property
    def newest_handled(self) -> int:
        return max(self._handled, default=0)

    # ------------------------------------------------------------------ the wait between polls
    def wait(self, seconds: float) -> None:
        """Listen for changes for up to ``seconds``; returns early on shutdown or an operator's stop or fail."""
        deadline = time.monotonic() + seconds
        while not self.shutdown.is_set() and self.end_request is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                received = receive_message(self.transport, self.control_queue, min(left, 1.0))
            except HarvestSuiteError as exc:
                log.warning("job %d: the control queue %s could not be read: %s", self.job.job_id,
                            self.control_queue, exc)
                self.shutdown.wait(min(left, 1.0))
                continue
            if received is None:
                continue
            delivery, message = received
            try:
                if isinstance(message, LiveChange):
                    self.handle(message)
                else:
                    log.info("job %d: %s on %s ignored during the crawl", self.job.job_id,
                             type(message).__name__, self.control_queue)
            finally:
                # Acknowledged once handled and on record (changes.jsonl): a controller that dies before
                # finds the change again in its queue, or in the scheduler's next sending.
                self.transport.ack(delivery)

    def close(self) -> None:
        """End the subscription to the control queue: a change that comes after the crawl waits there, not
        in this controller's hands (the scheduler refuses it when the job ends)."""
        try:
            self.transport.unsubscribe(self.control_queue)
        except HarvestSuiteError as exc:
            log.info("job %d: unsubscribing from %s: %s", self.job.job_id, self.control_queue, exc)

    # ------------------------------------------------------------------ one change
    def handle(self, change: LiveChange) -> None:
        """Apply one change unless handled before; answer it either way."""
        if (change.job_id, change.attempt_id) != (self.job.job_id, self.job.attempt_id):
            self._answer(change, REFUSED, f"this controller crawls job {self.job.job_id} attempt "
                                          f"{self.job.attempt_id}, not job {change.job_id} attempt "
                                          f"{change.attempt_id}", record=False)
            return
        earlier = self._handled.get(change.version)
        if earlier is not None:
            self._answer(change, earlier["state"], earlier["reason"], happened_at=earlier["happened_at"],
                         record=False)
            return
        if change.version < self.newest_handled:
            self._answer(change, REFUSED, f"arrived after change {self.newest_handled} was handled; changes "
                                          f"apply in version order")
            return
        if change.kind in (STOP, FAIL):
            self.end_request = EndRequest(change)  # the crawl loop terminates the crawl, then settle_end
            return
        try:
            state, reason = APPLIED, self._apply(change)
        except (HeritrixError, ValueError) as exc:
            state, reason = REFUSED, str(exc)
        log.log(logging.INFO if state == APPLIED else logging.WARNING, "job %d: change %d (%s by %s) %s%s",
                self.job.job_id, change.version, change.kind, change.author, state, f": {reason}" if reason else "")
        self._answer(change, state, reason)

    def settle_end(self, reason: str = "", refused: bool = False) -> None:
        """The crawl loop carried out the stop or fail (or could not: ``refused``)."""
        if self.end_request is not None:
            self._answer(self.end_request.change, REFUSED if refused else APPLIED, reason)

    def _answer(self, change: LiveChange, state: str, reason: str, happened_at: str | None = None,
                record: bool = True) -> None:
        happened_at = happened_at or _now()
        if record:
            entry = {"version": change.version, "kind": change.kind, "payload": json.loads(change.payload),
                     "author": change.author, "created": change.created, "state": state, "reason": reason,
                     "happened_at": happened_at, "attempt_id": change.attempt_id}
            self.jobdir.record_live_change(entry)
            self._handled[change.version] = entry
        try:
            self.send(LiveChangeResult(job_id=change.job_id, attempt_id=change.attempt_id,
                                       controller_id=self.controller_id, version=change.version, state=state,
                                       reason=reason, happened_at=happened_at))
        except HarvestSuiteError as exc:  # the scheduler sends the change again, and hears this answer then
            log.warning("job %d: the answer to change %d was not sent: %s", change.job_id, change.version, exc)

    # ------------------------------------------------------------------ through the crawler's REST API
    def _apply(self, change: LiveChange) -> str:
        """Carry out one change; what it did, in words. HeritrixError or ValueError: refused, with why."""
        payload: dict[str, Any] = json.loads(change.payload)
        kind, author = change.kind, change.author
        if kind == "pause":
            self.client.pause(self.name)
            return ""
        if kind == "resume":
            self.client.unpause(self.name)
            return ""
        if kind == "checkpoint":
            before = set(self.client.job_status(self.name).checkpoint_files)
            self.client.checkpoint(self.name)
            status = self.client.wait_for(self.name, lambda s: bool(set(s.checkpoint_files) - before),
                                          self.checkpoint_timeout)
            return "checkpoint " + ", ".join(sorted(set(status.checkpoint_files) - before))
        if kind in ("reject", "unreject"):
            regex = payload["regex"]
            if payload.get("domain"):
                regex = scripting.domain_reject_regex(payload["domain"], regex)
            script = (scripting.reject_script if kind == "reject" else scripting.unreject_script)(regex, author)
            return self._script(script)
        if kind == "budget":
            max_bytes = payload.get("max_bytes")
            max_kb = None if max_bytes is None else (-1 if max_bytes < 0 else math.ceil(max_bytes / 1024))
            return self._script(scripting.budget_script(payload["domain"], payload.get("max_objects"), max_kb,
                                                        author))
        if kind == "delete_queued":
            return self._script(scripting.delete_queued_script(payload["regex"], author))
        if kind == "add_uris":
            return self._script(scripting.add_uris_script(list(payload["uris"]), author))
        if kind == "politeness":
            return self._politeness(payload)
        raise ValueError(f"this controller cannot apply a change of kind {kind!r}")

    def _script(self, script: str) -> str:
        result = self.client.run_script(self.name, script)
        if result.failure:
            raise HeritrixError(result.exception.strip() or "the crawler's script failed without saying why")
        return result.raw_output.strip()

    def _politeness(self, payload: Mapping[str, Any]) -> str:
        wanted = [(field, POLITENESS_BEANS[field], payload[field]) for field in POLITENESS_BEANS
                  if payload.get(field) is not None]
        # A raised minimum above the present maximum (or the reverse) is refused by the crawler when set
        # first: set the maximum first when the minimum goes up past it.
        if "min_delay_ms" in payload and "max_delay_ms" in payload:
            current_max = self.client.bean_property(self.name, POLITENESS_BEANS["max_delay_ms"])
            if float(payload["min_delay_ms"]) > float(current_max):
                wanted.sort(key=lambda item: item[0] != "max_delay_ms")
        done = []
        for _field, path, value in wanted:
            try:
                read_back = self.client.set_bean_property(self.name, path, str(value))
            except HeritrixError as exc:
                already = f" ({', '.join(done)} set before)" if done else ""
                raise HeritrixError(f"{path} = {value}: {exc}{already}") from exc
            done.append(f"{path} = {read_back}")
        return "; ".join(done)
