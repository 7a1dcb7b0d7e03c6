"""The offline planner: a harvest and its configurations as JSON in, the jobs the generator makes as JSON out.

No database: curators and operators use it to try settings (``harvestsuite jobgen plan FILE.json``). The
input is checked completely before anything is planned; every mistake is reported with its JSON path
(``configs[3].history[0].stop_reason``) in one PlanInputError. Packing is the database path's own code
(``scheduler.jobgen.packing``); ties keep input order, as NetarchiveSuite's stable sort does.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from harvestdef.errors import PlanInputError
from harvestdef.model.status import StopReason
from harvestdef.settings import JobGenSettings
from scheduler.jobgen.expectation import HistoryRow, best_history
from scheduler.jobgen.packing import GENERATORS, Candidates, HarvestLimits, PackedJob, PackingRules, job_generator

# NetarchiveSuite's jobGen.config names (and jobGen.class as "class"), with their JobGenSettings field; the
# list is in docs/jobgen.md, Commands.
PLAN_SETTINGS: dict[str, str] = {
    "class": "generatorClass",
    "splitByObjectLimit": "splitByObjectLimit",
    "maxRelativeSizeDifference": "maxRelativeSizeDifference",
    "minAbsoluteSizeDifference": "minAbsoluteSizeDifference",
    "maxTotalSize": "maxTotalSize",
    "errorFactorPrevResult": "errorFactorPrevResult",
    "errorFactorBestGuess": "errorFactorBestGuess",
    "expectedAverageBytesPerObject": "expectedAverageBytesPerObject",
    "maxDomainSize": "maxDomainSize",
    "fixedDomainCountSnapshot": "fixedDomainCountSnapshot",
    "fixedDomainCountFocused": "fixedDomainCountFocused",
    "excludeDomainsWithZeroBudget": "excludeDomainsWithZeroBudget",
    "postponeUnregisteredChannel": "postponeUnregisteredChannel",
}
# The crawl attributes have no place in the planner's input: every configuration gets the defaults.
_NO_ATTRIBUTES: tuple[int, ...] = ()


class _Reader:
    """Collects (path, message) for every problem instead of stopping at the first."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    def fail(self, path: str, message: str) -> None:
        self.errors.append((path, message))

    def field(self, obj: dict[str, Any], key: str, path: str, kind: type | tuple[type, ...],
              default: Any = dataclasses.MISSING) -> Any:
        where = f"{path}.{key}" if path else key
        if key not in obj:
            if default is dataclasses.MISSING:
                self.fail(where, "missing")
            return None if default is dataclasses.MISSING else default
        return self.value(obj[key], where, kind)

    def value(self, value: Any, path: str, kind: type | tuple[type, ...]) -> Any:
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # JSON true/false must not pass for a number
        if isinstance(value, bool) and bool not in kinds:
            self.fail(path, f"expected {_kind_name(kinds)}, got a boolean")
            return None
        if not isinstance(value, kinds):
            self.fail(path, f"expected {_kind_name(kinds)}, got {_json_type(value)}")
            return None
        return value

    def limit(self, obj: dict[str, Any], key: str, path: str, default: Any = dataclasses.MISSING) -> int | None:
        value = self.field(obj, key, path, int, default)
        if value is not None and value < -1:
            self.fail(f"{path}.{key}" if path else key, f"must be -1 (unlimited) or at least 0, got {value}")
            return None
        return value


def _kind_name(kinds: tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", bool: "a boolean", list: "a list", dict: "an object"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _parse_date(reader: _Reader, text: Any, path: str) -> datetime | None:
    if text is None:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        reader.fail(path, f"not an ISO 8601 date: {text!r}")
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _read_rules(reader: _Reader, settings: dict[str, Any], base: JobGenSettings) -> PackingRules | None:
    defaults = {f.name: f for f in dataclasses.fields(JobGenSettings)}
    changes: dict[str, Any] = {}
    for name, value in settings.items():
        attr = PLAN_SETTINGS.get(name)
        path = f"settings.{name}"
        if attr is None:
            reader.fail(path, f"unknown setting; known: {', '.join(sorted(PLAN_SETTINGS))}")
            continue
        kind = type(defaults[attr].default)
        checked = reader.value(value, path, kind)
        if checked is None:
            continue
        if attr == "generatorClass" and checked not in GENERATORS:
            reader.fail(path, f"unknown generator {checked!r}; use one of {', '.join(GENERATORS)}")
            continue
        if kind is int and attr in ("errorFactorPrevResult", "expectedAverageBytesPerObject") and checked <= 0:
            reader.fail(path, "must be at least 1")
            continue
        changes[attr] = checked
    if reader.errors:
        return None
    return PackingRules.from_settings(dataclasses.replace(base, **changes))


def _read_history(reader: _Reader, items: Any, path: str) -> HistoryRow | None:
    rows: list[tuple[datetime, int, HistoryRow]] = []
    for number, item in enumerate(items):
        where = f"{path}[{number}]"
        if reader.value(item, where, dict) is None:
            continue
        objects = reader.field(item, "objects", where, int)
        size = reader.field(item, "bytes", where, int)
        stop = reader.field(item, "stop_reason", where, str)
        date = _parse_date(reader, reader.field(item, "date", where, str), f"{where}.date")
        if stop is not None and stop not in StopReason.__members__:
            reader.fail(f"{where}.stop_reason",
                        f"unknown stop reason {stop!r}; one of {', '.join(StopReason.__members__)}")
            stop = None
        if None not in (objects, size, stop, date):
            rows.append((date, number, HistoryRow(objects, size, StopReason[stop])))
    # newest first; rows of the same date keep input order
    rows.sort(key=lambda entry: (-entry[0].timestamp(), entry[1]))
    return best_history(row for _, _, row in rows)


def read_plan(document: Any, base: JobGenSettings | None = None) -> tuple[Candidates, PackingRules, list[str]]:
    """Check the whole input and turn it into candidates; raise PlanInputError listing every problem.

    Returns the candidates, the packing rules and the domain name of each domain number.
    """
    reader = _Reader()
    base = base or JobGenSettings()
    if reader.value(document, "$", dict) is None:
        raise PlanInputError(reader.errors)
    harvest = reader.field(document, "harvest", "", dict)
    limits = None
    if harvest is not None:
        kind = reader.field(harvest, "type", "harvest", str)
        if kind is not None and kind not in ("snapshot", "selective"):
            reader.fail("harvest.type", f"must be 'snapshot' or 'selective', got {kind!r}")
        # a selective harvest forces no limits of its own (HarvestLimits): there they are optional
        optional = -1 if kind == "selective" else dataclasses.MISSING
        max_objects = reader.limit(harvest, "max_objects", "harvest", optional)
        max_bytes = reader.limit(harvest, "max_bytes", "harvest", optional)
        running_time = reader.field(harvest, "max_job_running_time", "harvest", int, 0)
        if running_time is not None and running_time < 0:
            reader.fail("harvest.max_job_running_time", f"must be 0 (none) or more seconds, got {running_time}")
        if kind in ("snapshot", "selective") and None not in (max_objects, max_bytes, running_time):
            limits = HarvestLimits(kind == "snapshot", max_objects, max_bytes, running_time)
    settings = reader.field(document, "settings", "", dict, {})
    rules = _read_rules(reader, settings, base) if settings is not None else None
    configs = reader.field(document, "configs", "", list)
    parsed: list[tuple[str, str, str, int, int, HistoryRow | None]] = []
    for number, item in enumerate(configs or []):
        where = f"configs[{number}]"
        if reader.value(item, where, dict) is None:
            continue
        domain = reader.field(item, "domain", where, str)
        name = reader.field(item, "name", where, str)
        template = reader.field(item, "template", where, str)
        max_objects = reader.limit(item, "max_objects", where)
        max_bytes = reader.limit(item, "max_bytes", where)
        history = reader.field(item, "history", where, list, [])
        best = _read_history(reader, history, f"{where}.history") if history is not None else None
        parsed.append((domain, name, template, max_objects, max_bytes, best))
    if reader.errors or limits is None or rules is None:
        raise PlanInputError(reader.errors)
    candidates = Candidates(limits, rules.expectation)
    domain_numbers: dict[str, int] = {}
    for position, (domain, name, template, max_objects, max_bytes, best) in enumerate(parsed):
        if rules.exclude_domains_with_zero_budget and (max_objects == 0 or max_bytes == 0):
            continue
        number = domain_numbers.setdefault(domain, len(domain_numbers))
        candidates.add(position, number, template, _NO_ATTRIBUTES, name, max_objects, max_bytes, best)
    return candidates, rules, list(domain_numbers)


def job_document(job: PackedJob, candidates: Candidates, domain_names: list[str]) -> dict[str, Any]:
    return {
        "template": job.template_name,
        "max_objects_per_domain": job.max_objects_per_domain,
        "max_bytes_per_domain": job.max_bytes_per_domain,
        "expected_total": job.expected_total,
        "configs": [{"domain": domain_names[candidates.domain[i]], "name": candidates.names[candidates.name[i]],
                     "expected_objects": candidates.expected[i]} for i in job.members],
    }


def plan(document: Any, base: JobGenSettings | None = None) -> dict[str, Any]:
    """The planner's whole answer for an input document (already parsed from JSON)."""
    candidates, rules, domain_names = read_plan(document, base)
    jobs = [job_document(job, candidates, domain_names) for job in job_generator(rules).pack(candidates)]
    return {"jobs": jobs}
