"""Live changes to a running launch: what the calls of a script (harvester/heritrix3/scripting.py) and the bean
properties an operator may set do to the crawl's parts, and the record of them that a checkpoint keeps.

Each part keeps its own state and is changed through its own methods: the scope its reject rules, the quota
enforcer the job's and each domain's budgets, the frontier its queued URIs and ``parallel_queues``, the
launch's parts (parts.py) the politeness in force. This module says what each operation means for them, checks
values before anything changes, writes one line per applied call to ``logs/scripting_events.log`` (the name
NetarchiveSuite's library gives it, with the initials of who asked), and gives a checkpoint the changes to
put back (``to_json``/``restore``): a resumed crawl keeps them.

Everything here runs on the crawl's event loop (crawl.py hands the work there), as the action directory's
scans do: the parts need no lock. A script's calls run in order; the first that fails ends the script and
the ones before it stay applied, as in Heritrix, where a script's exception leaves its earlier effects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harvestdef.errors import PatternError, ValidationError
from harvestdef.patterns import CrawlPatterns
from harvester.engine.config import BACKTRACKING_MATCH_SECONDS
from harvester.engine.frontier.quota import DomainBudget
from harvester.engine.frontier.scope import canonical_url
from harvester.engine.reporting.launchlogs import iso_now
from harvester.heritrix3.scripting import (
    ADD_REJECT_RULE,
    ADD_URIS,
    BEGIN_CHANGE,
    DELETE_QUEUED,
    REMOVE_REJECT_RULE,
    SCRIPTING_EVENTS_LOG,
    SET_DOMAIN_BUDGET,
    SHOW_REJECT_RULES,
    UNCHANGED,
    ScriptCall,
    host_name,
)

if TYPE_CHECKING:
    from harvester.engine.parts import CrawlParts

EVENTS_LOG_FILE = f"{SCRIPTING_EVENTS_LOG}.log"
_INTEGER = re.compile(r"^[+-]?\d+$")
_DECIMAL = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1


class CallFailed(Exception):
    """A call of a script that could not be carried out; the message says why (nothing of it changed)."""


class PropertyError(ValidationError, ValueError):
    """A bean property this engine does not let change (``status_hint`` 404) or a value refused for it
    (400); nothing changed."""

    def __init__(self, message: str, status_hint: int) -> None:
        super().__init__(message)
        self.status_hint = status_hint


@dataclass(frozen=True)
class LiveProperty:
    """A bean property an operator may change while the crawl runs: its Heritrix bean path, the Java class
    Heritrix's bean browser names for its value, whether it is whole, its least value and what it does."""

    path: str
    java_class: str
    is_whole: bool
    least: float
    largest: int
    effect: str


PROPERTIES: dict[str, LiveProperty] = {prop.path: prop for prop in (
    LiveProperty("disposition.delayFactor", "java.lang.Float", False, 0, JAVA_INT_MAX,
                 "politeness: a queue rests this many times its last fetch's duration, from the next fetch on"),
    LiveProperty("disposition.minDelayMs", "java.lang.Integer", True, 0, JAVA_INT_MAX,
                 "politeness: the least rest of a queue after a fetch (at most maxDelayMs)"),
    LiveProperty("disposition.maxDelayMs", "java.lang.Integer", True, 0, JAVA_INT_MAX,
                 "politeness: the longest rest of a queue after a fetch (at least minDelayMs)"),
    LiveProperty("disposition.respectCrawlDelayUpToSeconds", "java.lang.Integer", True, 0, JAVA_INT_MAX,
                 "politeness: the longest robots.txt Crawl-delay obeyed"),
    LiveProperty("queueAssignmentPolicy.parallelQueues", "java.lang.Integer", True, 1, JAVA_INT_MAX,
                 "URIs of one queue fetched at once; queues made from now on get it, existing ones keep theirs"),
    LiveProperty("quotaenforcer.groupMaxFetchSuccesses", "java.lang.Long", True, -1, JAVA_LONG_MAX,
                 "each group's budget of fetch successes (-1: unlimited), where no domain budget says otherwise"),
    LiveProperty("quotaenforcer.groupMaxAllKb", "java.lang.Long", True, -1, JAVA_LONG_MAX,
                 "each group's budget of KB fetched (-1: unlimited), where no domain budget says otherwise"),
)}


@dataclass(frozen=True)
class ScriptOutcome:
    """What running a script's calls gave: the text they printed, the reason the script failed (None: every
    call was carried out) and each applied change as scripting_events.log has it."""

    raw_output: str
    failure: str | None
    applied: tuple[str, ...]


class LiveChanges:
    """The live changes of one launch's ``parts``."""

    def __init__(self, parts: CrawlParts) -> None:
        self.parts = parts
        self._properties: dict[str, int | float] = {}   # path -> value set while the crawl ran
        self._operations: dict[str, Callable[..., tuple[list[str], str | None]]] = {
            ADD_REJECT_RULE: self._add_reject_rule, REMOVE_REJECT_RULE: self._remove_reject_rule,
            SET_DOMAIN_BUDGET: self._set_domain_budget, DELETE_QUEUED: self._delete_queued,
            ADD_URIS: self._add_uris, SHOW_REJECT_RULES: self._show_reject_rules,
            BEGIN_CHANGE: self._begin_change}

    # -- scripts --------------------------------------------------------------------------------------
    def run(self, calls: Sequence[ScriptCall], logs_dir: Path) -> ScriptOutcome:
        """Carry out ``calls`` in order, each applied change a line of ``logs_dir``/scripting_events.log.

        The reject rules a script adds are compiled together once (Scope.add_reject_rule's ``defer``), before
        a call that asks the scope (addUris) and at the end: a script of hundreds of rules costs one
        compilation, not one per rule. No URI is fetched meanwhile (this runs on the crawl's loop)."""
        output: list[str] = []
        applied: list[str] = []
        events = _EventsLog(logs_dir / EVENTS_LOG_FILE)
        try:
            for call in calls:
                if call.operation == ADD_URIS:
                    self.parts.scope.compile_reject_rules()
                try:
                    lines, event = self._operations[call.operation](*call.arguments)
                except CallFailed as exc:
                    return ScriptOutcome(_text(output), f"line {call.line}: {call.operation}: {exc}",
                                         tuple(applied))
                output += lines
                if event is not None:
                    events.record(call.initials, event)
                    applied.append(event)
            return ScriptOutcome(_text(output), None, tuple(applied))
        finally:
            self.parts.scope.compile_reject_rules()
            events.close()

    def _begin_change(self, version: int) -> tuple[list[str], str | None]:
        return [f"change {version}:"], None

    def _add_reject_rule(self, regex: str) -> tuple[list[str], str | None]:
        try:
            added = self.parts.scope.add_reject_rule(regex, defer=True)
        except PatternError as exc:
            raise CallFailed(f"the regex {regex!r} cannot be used: {exc}") from exc
        if not added:
            return [f"reject rule already in force: {regex}"], None
        return [f"reject rule added: {regex}"], f"Added a reject rule matching regex '{regex}'"

    def _remove_reject_rule(self, regex: str) -> tuple[list[str], str | None]:
        if not self.parts.scope.remove_reject_rule(regex):
            raise CallFailed(f"no reject rule {regex} in the scope")
        return [f"reject rule removed: {regex}"], f"Removed the reject rule matching regex '{regex}'"

    def _set_domain_budget(self, domain: str, max_objects: int, max_kb: int) -> tuple[list[str], str | None]:
        try:
            name = host_name(domain)
        except ValueError as exc:
            raise CallFailed(str(exc)) from exc
        quota = self.parts.quota
        current = quota.domain_budgets.get(name, DomainBudget())
        budget = DomainBudget(current.max_fetch_successes if max_objects == UNCHANGED else max_objects,
                              current.max_all_kb if max_kb == UNCHANGED else max_kb)
        returned = quota.set_domain_budget(name, budget)
        lines = [f"{prop} of {name} set to {value}" for prop, value in
                 (("groupMaxFetchSuccesses", max_objects), ("groupMaxAllKb", max_kb)) if value != UNCHANGED]
        if returned:
            lines.append(f"{returned} retired queues brought back")
        return lines, f"Changed the budgets of {name}: " + "; ".join(lines)

    def _delete_queued(self, regex: str) -> tuple[list[str], str | None]:
        patterns = _patterns(regex)
        # A backtracking regex that runs out of its time on a URL (None) deletes nothing: when unsure, keep.
        count = self.parts.frontier.delete_matching(lambda url: patterns.fullmatch_any(url) is True)
        return [f"{count} queued URIs deleted"], f"Deleted {count} queued URIs matching regex '{regex}'"

    def _add_uris(self, uris: tuple[str, ...]) -> tuple[list[str], str | None]:
        scheduled = not_added = 0
        discovery = self.parts.discovery
        for uri in uris:
            url = canonical_url(uri)
            # As the action directory's .s.schedule: asked of the scope, skipped when included already.
            if url is not None and discovery.schedule(url, "", "", "", apply_scope=True, force=False):
                scheduled += 1
            else:
                not_added += 1
        return ([f"{scheduled} URIs scheduled, {not_added} not added"],
                f"Added {scheduled} URIs ({not_added} not added: already included, out of scope or no http(s) URI)")

    def _show_reject_rules(self) -> tuple[list[str], str | None]:
        return list(self.parts.scope.reject_rules), None

    # -- bean properties ------------------------------------------------------------------------------
    @staticmethod
    def property_of(path: str) -> LiveProperty:
        """The property at ``path``; PropertyError (404) naming the supported ones for any other path."""
        found = PROPERTIES.get(path)
        if found is None:
            raise PropertyError(f"no bean property {path!r} that this engine lets change while a crawl runs; "
                                f"these: {', '.join(PROPERTIES)}", 404)
        return found

    def value(self, path: str) -> int | float:
        """The value in force of the property at ``path``."""
        self.property_of(path)
        parts = self.parts
        politeness = parts.politeness
        return {
            "disposition.delayFactor": politeness.delay_factor,
            "disposition.minDelayMs": politeness.min_delay_ms,
            "disposition.maxDelayMs": politeness.max_delay_ms,
            "disposition.respectCrawlDelayUpToSeconds": politeness.respect_crawl_delay_up_to_seconds,
            "queueAssignmentPolicy.parallelQueues": parts.frontier.parallel_queues,
            "quotaenforcer.groupMaxFetchSuccesses": parts.quota.rules.max_fetch_successes,
            "quotaenforcer.groupMaxAllKb": parts.quota.rules.max_all_kb,
        }[path]

    def set_value(self, path: str, text: str) -> int | float:
        """Set the property at ``path`` from ``text`` (as Heritrix's bean browser's newVal); the value in
        force afterwards. PropertyError (and no change) for another path or a value refused."""
        prop = self.property_of(path)
        value = _parse(prop, text)
        self._check(prop, value)
        self._apply(path, value)
        self._properties[path] = value
        return self.value(path)

    def _check(self, prop: LiveProperty, value: int | float) -> None:
        if value < prop.least:
            raise PropertyError(f"{prop.path} must be at least {prop.least:g}, not {value}", 400)
        politeness = self.parts.politeness
        if prop.path == "disposition.minDelayMs" and value > politeness.max_delay_ms:
            raise PropertyError(f"disposition.minDelayMs {value} would be more than disposition.maxDelayMs "
                                f"{politeness.max_delay_ms}; raise maxDelayMs first", 400)
        if prop.path == "disposition.maxDelayMs" and value < politeness.min_delay_ms:
            raise PropertyError(f"disposition.maxDelayMs {value} would be less than disposition.minDelayMs "
                                f"{politeness.min_delay_ms}; lower minDelayMs first", 400)

    def _apply(self, path: str, value: int | float) -> None:
        parts = self.parts
        if path == "disposition.delayFactor":
            parts.politeness = replace(parts.politeness, delay_factor=float(value))
        elif path == "disposition.minDelayMs":
            parts.politeness = replace(parts.politeness, min_delay_ms=int(value))
        elif path == "disposition.maxDelayMs":
            parts.politeness = replace(parts.politeness, max_delay_ms=int(value))
        elif path == "disposition.respectCrawlDelayUpToSeconds":
            parts.politeness = replace(parts.politeness, respect_crawl_delay_up_to_seconds=int(value))
        elif path == "queueAssignmentPolicy.parallelQueues":
            parts.frontier.parallel_queues = int(value)
        elif path == "quotaenforcer.groupMaxFetchSuccesses":
            parts.quota.set_budget_property(max_fetch_successes=int(value))
        elif path == "quotaenforcer.groupMaxAllKb":
            parts.quota.set_budget_property(max_all_kb=int(value))

    # -- checkpoints ----------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The changes in force: reject rules, domain budgets and the properties set while the crawl ran."""
        parts = self.parts
        return {"rejectRules": list(parts.scope.reject_rules),
                "domainBudgets": {domain: [budget.max_fetch_successes, budget.max_all_kb]
                                  for domain, budget in parts.quota.domain_budgets.items()},
                "properties": dict(self._properties)}

    def restore(self, data: dict) -> None:
        """Put back the changes ``to_json`` gave (a checkpoint's), as they were in force."""
        for path, value in data.get("properties", {}).items():
            if path in PROPERTIES:
                self._apply(path, value)
                self._properties[path] = value
        for regex in data.get("rejectRules", []):
            self.parts.scope.add_reject_rule(regex, defer=True)
        self.parts.scope.compile_reject_rules()
        for domain, (max_objects, max_kb) in data.get("domainBudgets", {}).items():
            self.parts.quota.set_domain_budget(domain, DomainBudget(max_objects, max_kb))

    def describe(self) -> str:
        """The changes in force, in a few words for job.log."""
        data = self.to_json()
        return (f"{len(data['rejectRules'])} reject rules, {len(data['domainBudgets'])} domain budgets, "
                f"{len(data['properties'])} properties")


def _parse(prop: LiveProperty, text: str) -> int | float:
    """``text`` as the property's value, as Spring converts Heritrix's newVal: a whole number, or a decimal."""
    text = text.strip()
    pattern, kind = (_INTEGER, "a whole number") if prop.is_whole else (_DECIMAL, "a number")
    if not pattern.match(text):
        raise PropertyError(f"{prop.path} takes {kind} ({prop.java_class}), not {text!r}", 400)
    value: int | float = int(text) if prop.is_whole else float(text)
    if abs(value) > prop.largest:
        raise PropertyError(f"{prop.path} takes {kind} of at most {prop.largest} ({prop.java_class}), "
                            f"not {text}", 400)
    return value


def _patterns(regex: str) -> CrawlPatterns:
    try:
        return CrawlPatterns((regex,), BACKTRACKING_MATCH_SECONDS)
    except PatternError as exc:
        raise CallFailed(f"the regex {regex!r} cannot be used: {exc}") from exc


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


class _EventsLog:
    """scripting_events.log, opened once per script: one line per applied change, flushed at once (a change
    must be on record even if the engine is killed next), without opening the file again for each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None

    def record(self, initials: str, event: str) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(f"{iso_now()} Action from user {initials or 'unknown'}: {event}\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
