"""Steering a running crawl: the live changes operators make, applied in version order (docs/harvester.md,
Steering the crawl).

The scheduler sends each pending change of the job as a LiveChange to this controller's control queue, and
sends it again until answered. ``CrawlSteering.wait`` is the crawl loop's pause between two status polls:
it listens on the control queue meanwhile and applies what comes, so a pause clicked in the UI reaches the
crawl within the scheduler's sending interval, not at the next poll.

Changes are taken in rounds: the first message that comes, then whatever else waits on the control queue,
up to ``batch_size`` (harvestsuite.liveChanges.applyBatch). A round carries out its control actions
(pause, resume, checkpoint, stop, fail) first, in version order, then its live changes in version order,
so a pause posted behind hundreds of reject rules takes effect before them; a stop or fail ends the round
(the crawl loop carries it out, and the scheduler refuses what the job leaves pending). Consecutive live
changes that are scripts go to the crawler as one script (``scripting.batch_script``, hundreds of calls),
each change still answered on its own from the script's output; the round's entries are synced to
changes.jsonl once, and its answers published together.

Each change is applied through the crawler's REST API, the same calls for a real Heritrix 3 and the
bundled engine: job actions for pause, resume and checkpoint; a restricted Groovy script (the form
NetarchiveSuite's H3 remote access sends, harvester/heritrix3/scripting.py) for reject rules, domain budgets,
deleting queued URIs and adding URIs; bean properties for politeness. Stop and fail are carried out by the
crawl loop (``end_request``), which terminates the crawl and then calls ``settle_end``.

Every handled change is one line of the job directory's changes.jsonl before it is answered: a version
already there is never applied twice (a repeated sending is answered with what was answered before), and
the applied ones go into the metadata WARC. Control actions keep their version order among themselves, and
live changes among themselves: one that arrives after a later one of its class was handled is refused with
the reason, never silently dropped. Whatever the crawler refuses is answered refused with its words. The
messages of a round are acknowledged as they are taken (``_take_round`` says why): a controller that dies
before it answers them finds them in the scheduler's next sending.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from harvestdef.errors import HarvestSuiteError, HeritrixError
from harvestdef.livechanges import end_description
from harvestdef.messages import LiveChange, LiveChangeResult
from harvestdef.queues.base import Transport
from harvester.heritrix import HeritrixClient
from harvester.heritrix3 import scripting
from harvester.jobdir import JobDirectory
from harvester.protocol import receive_message

log = logging.getLogger(__name__)

APPLIED, REFUSED = "applied", "refused"
STOP, FAIL = "stop", "fail"
CONTROL_KINDS = frozenset({"pause", "resume", "checkpoint", STOP, FAIL})
SCRIPT_KINDS = frozenset({"reject", "unreject", "budget", "delete_queued", "add_uris"})
# One script of a round stays well below what a crawler's script console takes in one form (the bundled
# engine: 16 MiB, URL-encoded, harvester/engine/rest/server.py); a round's further changes go in further scripts.
MAX_SCRIPT_CHARACTERS = 4_000_000

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
        return end_description(self.change.kind, self.change.author, self.change.version)


def _now() -> str:
    return datetime.now(UTC).isoformat()


class CrawlSteering:
    """Receives and applies the live changes of one job's crawl."""

    def __init__(self, client: HeritrixClient, name: str, jobdir: JobDirectory, transport: Transport,
                 control_queue: str, controller_id: str, send: Callable[[Sequence[LiveChangeResult]], None],
                 shutdown: threading.Event, checkpoint_timeout: float = 120.0, batch_size: int = 500,
                 drain_wait: float = 0.02) -> None:
        """``send`` publishes a round's answers together; ``batch_size``: the most changes of one round;
        ``drain_wait``: seconds collecting a round waits for the next message."""
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
        self.batch_size = batch_size
        self.drain_wait = drain_wait
        self.end_request: EndRequest | None = None
        self._handled: dict[int, dict[str, Any]] = {entry["version"]: entry for entry in jobdir.live_changes()}
        # the newest handled version of each class, control actions (True) and live changes (False)
        self._newest: dict[bool, int] = {True: 0, False: 0}
        for version, entry in self._handled.items():
            is_control = entry.get("kind") in CONTROL_KINDS
            self._newest[is_control] = max(self._newest[is_control], version)
        # a round's handled changes and answers, recorded and sent together (``_flush``)
        self._entries: list[dict[str, Any]] = []
        self._answers: list[LiveChangeResult] = []

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
            changes = self._take_round(received)
            self.handle_round(changes)

    def _take_round(self, first: tuple[Any, object]) -> list[LiveChange]:
        """The changes of a round: ``first`` and up to batch_size - 1 more of the control queue, as long as
        the next comes within drain_wait.

        Each message is acknowledged as it is taken: a broker hands a subscription only so many
        unacknowledged messages (its prefetch), and a round must see past them to carry out a pause behind
        a flood of rules first. Nothing is lost by it: the scheduler keeps a change pending until it is
        answered and sends it again after liveChangeResendAfter, so one taken by a controller that dies
        before answering comes again, and changes.jsonl keeps it from being applied twice."""
        changes: list[LiveChange] = []
        received: tuple[Any, object] | None = first
        while received is not None:
            delivery, message = received
            self.transport.ack(delivery)
            if isinstance(message, LiveChange):
                changes.append(message)
            else:
                log.info("job %d: %s on %s ignored during the crawl", self.job.job_id, type(message).__name__,
                         self.control_queue)
            if len(changes) >= self.batch_size:
                break
            try:
                received = receive_message(self.transport, self.control_queue, self.drain_wait)
            except HarvestSuiteError as exc:
                log.warning("job %d: the control queue %s could not be read: %s", self.job.job_id,
                            self.control_queue, exc)
                break
        return changes

    def close(self) -> None:
        """End the subscription to the control queue: a change that comes after the crawl waits there, not
        in this controller's hands (the scheduler refuses it when the job ends)."""
        try:
            self.transport.unsubscribe(self.control_queue)
        except HarvestSuiteError as exc:
            log.info("job %d: unsubscribing from %s: %s", self.job.job_id, self.control_queue, exc)

    # ------------------------------------------------------------------ a round of changes
    def handle(self, change: LiveChange) -> None:
        """Apply one change unless handled before; answer it either way (a round of one)."""
        self.handle_round([change])

    def handle_round(self, changes: Sequence[LiveChange]) -> None:
        """Handle the changes of one round: each answered, and the new ones applied, control actions first
        (see the module docstring); recorded and answered together at the end."""
        try:
            fresh: dict[int, LiveChange] = {}
            for change in changes:
                if self._answered_at_once(change):
                    continue
                fresh.setdefault(change.version, change)  # a repeat within the round is answered with the first
            ordered = sorted(fresh.values(), key=lambda change: change.version)
            for change in (change for change in ordered if change.kind in CONTROL_KINDS):
                if change.kind in (STOP, FAIL):
                    self.end_request = EndRequest(change)  # the crawl loop terminates the crawl, then settle_end
                    return  # the round's live changes are not applied: the job's end refuses them
                self._apply_one(change)
            self._live_changes([change for change in ordered if change.kind not in CONTROL_KINDS])
        finally:
            self._flush()

    def _answered_at_once(self, change: LiveChange) -> bool:
        """Answer a change of another job or attempt, one handled before, or one that comes too late."""
        if (change.job_id, change.attempt_id) != (self.job.job_id, self.job.attempt_id):
            self._answer(change, REFUSED, f"this controller crawls job {self.job.job_id} attempt "
                                          f"{self.job.attempt_id}, not job {change.job_id} attempt "
                                          f"{change.attempt_id}", record=False)
            return True
        earlier = self._handled.get(change.version)
        if earlier is not None:
            self._answer(change, earlier["state"], earlier["reason"], happened_at=earlier["happened_at"],
                         record=False)
            return True
        is_control = change.kind in CONTROL_KINDS
        newest = self._newest[is_control]
        if change.version < newest:
            what = "control action" if is_control else "live change"
            self._answer(change, REFUSED, f"arrived after {what} {newest} was handled; {what}s apply in version "
                                          f"order")
            return True
        return False

    def _apply_one(self, change: LiveChange) -> None:
        try:
            state, reason = APPLIED, self._apply(change)
        except (HeritrixError, ValueError) as exc:
            state, reason = REFUSED, str(exc)
        log.log(logging.INFO if state == APPLIED else logging.WARNING, "job %d: change %d (%s by %s) %s%s",
                self.job.job_id, change.version, change.kind, change.author, state, f": {reason}" if reason else "")
        self._answer(change, state, reason)

    def _live_changes(self, changes: Sequence[LiveChange]) -> None:
        """Live changes in version order: consecutive scripts as one script, politeness on its own."""
        scripted: list[tuple[LiveChange, scripting.ScriptCall]] = []
        size = 0
        for change in changes:
            if change.kind not in SCRIPT_KINDS:
                self._run_scripts(scripted)
                scripted, size = [], 0
                self._apply_one(change)
                continue
            try:
                call = self._call(change)
            except ValueError as exc:
                self._run_scripts(scripted)
                scripted, size = [], 0
                self._answer(change, REFUSED, str(exc))
                continue
            length = len(call.render()) + len(change.author) + 40
            if scripted and size + length > MAX_SCRIPT_CHARACTERS:
                self._run_scripts(scripted)
                scripted, size = [], 0
            scripted.append((change, call))
            size += length
        self._run_scripts(scripted)

    def _run_scripts(self, scripted: Sequence[tuple[LiveChange, scripting.ScriptCall]]) -> None:
        """Run these changes as one script; each is answered from its part of the output. When the script
        fails on a change, those before it are applied, it is refused with the crawler's words, and the ones
        after it go in a script of their own (as each would have, sent alone)."""
        left = list(scripted)
        while left:
            script = scripting.batch_script([(change.version, change.author, call) for change, call in left])
            try:
                result = self.client.run_script(self.name, script)
            except HeritrixError as exc:
                for change, _ in left:
                    self._answer(change, REFUSED, str(exc))
                log.warning("job %d: a script of %d live changes (%d to %d) was refused: %s", self.job.job_id,
                            len(left), left[0][0].version, left[-1][0].version, exc)
                return
            outputs = scripting.batch_output(result.raw_output)
            begun = [index for index, (change, _) in enumerate(left) if change.version in outputs]
            failed_at = begun[-1] if result.failure and begun else None
            if result.failure and failed_at is None:
                why = result.exception.strip() or "the crawler's script failed without saying why"
                for change, _ in left:
                    self._answer(change, REFUSED, why)
                return
            for index in begun:
                change = left[index][0]
                if index == failed_at:
                    why = result.exception.strip() or "the crawler's script failed without saying why"
                    log.warning("job %d: change %d (%s by %s) refused: %s", self.job.job_id, change.version,
                                change.kind, change.author, why)
                    self._answer(change, REFUSED, why)
                else:
                    self._answer(change, APPLIED, outputs[change.version])
            log.info("job %d: changes %d to %d applied in one script (%d of them)", self.job.job_id,
                     left[0][0].version, left[-1][0].version, len(begun) - (failed_at is not None))
            if failed_at is None:
                for change, _ in left:
                    if change.version not in outputs:  # a crawler that ran the script but not this call
                        self._answer(change, REFUSED, "the crawler's script ended before this change")
                return
            left = left[failed_at + 1:]

    def settle_end(self, reason: str = "", refused: bool = False) -> None:
        """The crawl loop carried out the stop or fail (or could not: ``refused``)."""
        if self.end_request is not None:
            self._answer(self.end_request.change, REFUSED if refused else APPLIED, reason)
            self._flush()

    def _answer(self, change: LiveChange, state: str, reason: str, happened_at: str | None = None,
                record: bool = True) -> None:
        """Note the answer of a change; ``_flush`` records and sends the round's answers."""
        happened_at = happened_at or _now()
        if record:
            entry = {"version": change.version, "kind": change.kind, "payload": json.loads(change.payload),
                     "author": change.author, "created": change.created, "state": state, "reason": reason,
                     "happened_at": happened_at, "attempt_id": change.attempt_id}
            self._entries.append(entry)
            self._handled[change.version] = entry
            is_control = change.kind in CONTROL_KINDS
            self._newest[is_control] = max(self._newest[is_control], change.version)
        self._answers.append(LiveChangeResult(job_id=change.job_id, attempt_id=change.attempt_id,
                                              controller_id=self.controller_id, version=change.version,
                                              state=state, reason=reason, happened_at=happened_at))

    def _flush(self) -> None:
        """On record first (one sync of changes.jsonl), then the answers, published together."""
        entries, answers = self._entries, self._answers
        self._entries, self._answers = [], []
        self.jobdir.record_live_changes(entries)
        try:
            self.send(answers)
        except HarvestSuiteError as exc:  # the scheduler sends the changes again, and hears the answers then
            log.warning("job %d: answers to changes %s were not all sent: %s", self.job.job_id,
                        ", ".join(str(answer.version) for answer in answers[:10]), exc)

    # ------------------------------------------------------------------ through the crawler's REST API
    def _apply(self, change: LiveChange) -> str:
        """Carry out one change; what it did, in words. HeritrixError or ValueError: refused, with why."""
        payload: dict[str, Any] = json.loads(change.payload)
        kind = change.kind
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
        if kind == "politeness":
            return self._politeness(payload)
        raise ValueError(f"this controller cannot apply a change of kind {kind!r}")

    @staticmethod
    def _call(change: LiveChange) -> scripting.ScriptCall:
        """The script call of a live change; ValueError for one that makes no call."""
        payload: dict[str, Any] = json.loads(change.payload)
        kind = change.kind
        if kind in ("reject", "unreject"):
            regex = payload["regex"]
            if payload.get("domain"):
                regex = scripting.domain_reject_regex(payload["domain"], regex)
            return scripting.reject_call(regex) if kind == "reject" else scripting.unreject_call(regex)
        if kind == "budget":
            max_bytes = payload.get("max_bytes")
            max_kb = None if max_bytes is None else (-1 if max_bytes < 0 else math.ceil(max_bytes / 1024))
            return scripting.budget_call(payload["domain"], payload.get("max_objects"), max_kb)
        if kind == "delete_queued":
            return scripting.delete_queued_call(payload["regex"])
        if kind == "add_uris":
            return scripting.add_uris_call(list(payload["uris"]))
        raise ValueError(f"a change of kind {kind!r} is no script")

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
