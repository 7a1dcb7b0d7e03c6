"""The scheduler's own figures for the System page, read from its /metrics endpoints (docs/metrics.md).

The web UI never imports the scheduler: it reads what the scheduler serves, each endpoint that
``harvestsuite.metrics.schedulerTargets`` names, with ``scrapeTimeoutMs`` for each, and picks the figures an
operator looks at there (leadership, ticks, generation, dispatch, claims, deduplication decisions, queue
depths, messages). A target that does not answer, or answers something else, is shown with the reason,
never as an error page. The figures count from the scheduler process's start: they are its metrics as
Prometheus would scrape them, not the database's history.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from prometheus_client.parser import text_string_to_metric_families

# the most of a target's answer read: a scheduler's metrics are a few kilobytes
MAX_ANSWER_BYTES = 4 * 1024 * 1024
TICKS = "harvestsuite_scheduler_ticks_total"


@dataclass
class SchedulerFigures:
    """One scheduler's figures, or ``error`` when they could not be read."""

    target: str
    error: str | None = None
    leader: bool | None = None
    ticks_completed: int = 0
    ticks_failed: int = 0
    last_tick_at: datetime | None = None
    average_tick_seconds: float | None = None
    jobs_generated: int = 0
    generation_failures: int = 0
    dispatched: dict[str, int] = field(default_factory=dict)  # harvest channel -> jobs
    claims_granted: int = 0
    claims_refused: int = 0
    dedup_decisions: dict[str, int] = field(default_factory=dict)  # ready, refused, waiting -> jobs
    dedup_waiting_harvests: int = 0
    queues: dict[str, int] = field(default_factory=dict)  # queue name -> messages waiting
    messages_handled: int = 0


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text) for sample in family.samples]


def figures_of(target: str, text: str) -> SchedulerFigures:
    """The figures in ``text``, a /metrics answer in Prometheus' text format."""
    samples = _samples(text)
    if not any(name.startswith("harvestsuite_scheduler_") for name, _, _ in samples):
        return SchedulerFigures(target, error="the answer holds no scheduler metrics")

    def total(name: str, **labels: str) -> float:
        return sum(value for sample, have, value in samples
                   if sample == name and all(have.get(key) == wanted for key, wanted in labels.items()))

    def by(name: str, label: str) -> dict[str, int]:
        return dict(sorted((have[label], int(value)) for sample, have, value in samples
                           if sample == name and label in have))

    figures = SchedulerFigures(target)
    leaders = [value for name, _, value in samples if name == "harvestsuite_scheduler_leader"]
    figures.leader = bool(leaders[0]) if leaders else None
    figures.ticks_completed = int(total(TICKS, outcome="completed"))
    figures.ticks_failed = int(total(TICKS, outcome="failed"))
    last = total("harvestsuite_scheduler_last_tick_timestamp_seconds")
    figures.last_tick_at = datetime.fromtimestamp(last, UTC) if last > 0 else None
    count = total("harvestsuite_scheduler_tick_duration_seconds_count")
    if count:
        figures.average_tick_seconds = total("harvestsuite_scheduler_tick_duration_seconds_sum") / count
    figures.jobs_generated = int(total("harvestsuite_scheduler_jobs_generated_total"))
    figures.generation_failures = int(total("harvestsuite_scheduler_generation_failures_total"))
    figures.dispatched = by("harvestsuite_scheduler_jobs_dispatched_total", "channel")
    figures.claims_granted = int(total("harvestsuite_scheduler_claims_total", outcome="granted"))
    figures.claims_refused = int(total("harvestsuite_scheduler_claims_total", outcome="refused"))
    figures.dedup_decisions = {outcome: int(total("harvestsuite_scheduler_dedup_decisions_total", outcome=outcome))
                               for outcome in ("ready", "refused", "waiting")}
    figures.dedup_waiting_harvests = int(total("harvestsuite_scheduler_dedup_waiting_harvests"))
    figures.queues = by("harvestsuite_scheduler_queue_messages", "queue")
    figures.messages_handled = int(total("harvestsuite_scheduler_messages_handled_total"))
    return figures


def read_figures(target: str, timeout: float) -> SchedulerFigures:
    """GET ``target`` and pick its figures; a failure is the answer's ``error``."""
    try:
        with urllib.request.urlopen(target, timeout=timeout) as answer:  # an address of the operator's settings
            body = answer.read(MAX_ANSWER_BYTES + 1)
    except (OSError, ValueError) as exc:  # urllib's errors are OSErrors; a malformed address a ValueError
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        return SchedulerFigures(target, error=f"{type(exc).__name__}: {reason}")
    if len(body) > MAX_ANSWER_BYTES:
        return SchedulerFigures(target, error=f"the answer is longer than {MAX_ANSWER_BYTES} bytes")
    try:
        return figures_of(target, body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:  # not Prometheus' text format
        return SchedulerFigures(target, error=f"the answer is not in Prometheus' text format: {exc}")


def read_all(targets: Iterable[str], timeout: float) -> list[SchedulerFigures]:
    return [read_figures(target, timeout) for target in targets]


__all__ = ["SchedulerFigures", "figures_of", "read_all", "read_figures"]
