"""The scheduler's figures for Prometheus (docs/metrics.md): its ticks, job generation, dispatch and claims,
the deduplication readiness of NEW jobs, the queues' depths, its leadership and the messages it handled.

``SchedulerMetrics`` holds them in a registry of its own (harvestdef/metrics.py says why); the scheduler's
role serves it on ``harvestsuite.metrics.schedulerPort``. The intake processes beside the leader
(``intakeProcesses`` > 1) count in registries of their own and send the growth of their counters to the
leader process every second (``CounterGrowth``), which adds it to its own (``add_counts``): the counters it
serves count every process's messages, dispatches and claims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# A tick is a few queries when nothing is due, and minutes when a snapshot step is generated.
TICK_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
# One run's job generation: a selective run in well under a second, a national snapshot step in about a minute.
GENERATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0)


# counter family name, its labels (name, value) in order of name, and how much it grew
CounterCounts = Sequence[tuple[str, tuple[tuple[str, str], ...], float]]


def counter_totals(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The total of every counter child in ``registry``, by family name and labels."""
    totals = {}
    for family in registry.collect():
        if family.type != "counter":
            continue
        for sample in family.samples:
            if sample.name == f"{family.name}_total":
                totals[(family.name, tuple(sorted(sample.labels.items())))] = sample.value
    return totals


class CounterGrowth:
    """How much the counters of ``registry`` grew since the last ``take``: what an intake process sends the
    leader process. Only counters travel; a histogram or gauge of an intake process stays its own."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._taken: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def take(self) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
        totals = counter_totals(self.registry)
        grown = [(name, labels, total - self._taken.get((name, labels), 0.0))
                 for (name, labels), total in totals.items() if total > self._taken.get((name, labels), 0.0)]
        self._taken = totals
        return grown


class SchedulerMetrics:
    """The scheduler's metrics, each in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.ticks = Counter("harvestsuite_scheduler_ticks", "Ticks of the running scheduler, by outcome: "
                             "completed, or failed (logged; the next tick tries again)", ["outcome"], registry=r)
        self.tick_duration = Histogram("harvestsuite_scheduler_tick_duration_seconds",
                                       "Seconds one tick took, supervision to job generation", buckets=TICK_BUCKETS,
                                       registry=r)
        self.last_tick = Gauge("harvestsuite_scheduler_last_tick_timestamp_seconds",
                               "When the last completed tick ended, in seconds since the epoch", registry=r)
        self.generation_duration = Histogram("harvestsuite_scheduler_job_generation_duration_seconds",
                                             "Seconds the job generation of one harvest's run took",
                                             buckets=GENERATION_BUCKETS, registry=r)
        self.jobs_generated = Counter("harvestsuite_scheduler_jobs_generated", "Jobs written NEW by job generation",
                                      registry=r)
        self.generation_failures = Counter("harvestsuite_scheduler_generation_failures",
                                           "Runs whose job generation failed and deactivated their harvest",
                                           registry=r)
        self.supervised = Counter("harvestsuite_scheduler_supervised_jobs",
                                  "Jobs the tick's supervision acted on, by action: timed_out (FAILED after "
                                  "jobtimeouttime), interrupted (controller lost), resubmitted", ["action"],
                                  registry=r)
        self.dedup_decisions = Counter("harvestsuite_scheduler_dedup_decisions",
                                       "Deduplication decisions on NEW jobs, by outcome: ready (may go), refused "
                                       "(too few earlier captures stored), waiting (earlier jobs not ended); a job "
                                       "not ready is decided again at every tick", ["outcome"], registry=r)
        self.dedup_waiting_harvests = Gauge("harvestsuite_scheduler_dedup_waiting_harvests",
                                            "Harvests with NEW jobs that wait for their deduplication sources, at "
                                            "the last tick", registry=r)
        self.dispatched = Counter("harvestsuite_scheduler_jobs_dispatched",
                                  "Jobs released NEW -> SUBMITTED and their DoOneCrawl confirmed, by harvest channel",
                                  ["channel"], registry=r)
        self.claims = Counter("harvestsuite_scheduler_claims", "Claims of controllers answered, by outcome: "
                              "granted or refused", ["outcome"], registry=r)
        self.queue_messages = Gauge("harvestsuite_scheduler_queue_messages",
                                    "Messages waiting in a queue, measured after each tick: each harvest channel's "
                                    "job queue and the scheduler's own", ["queue"], registry=r)
        self.leader = Gauge("harvestsuite_scheduler_leader", "1 while this scheduler leads, else 0", registry=r)
        self.leadership_terms = Counter("harvestsuite_scheduler_leadership_terms",
                                        "Times this scheduler became the leader", registry=r)
        self.messages = Counter("harvestsuite_scheduler_messages_handled",
                                "Messages taken from the scheduler's queues and handled, by queue", ["queue"],
                                registry=r)
        self._counters = {family.name: metric for metric in vars(self).values() if isinstance(metric, Counter)
                          for family in metric.describe()}

    def add_counts(self, counts: CounterCounts) -> None:
        """Add what an intake process counted (CounterGrowth.take) to this process's counters."""
        for name, labels, amount in counts:
            counter = self._counters.get(name)
            if counter is None or amount <= 0:
                continue
            (counter.labels(**dict(labels)) if labels else counter).inc(amount)

    # ------------------------------------------------------------------ what the service tells
    def tick_completed(self, seconds: float, ended_at: float, generation_seconds: Mapping[str, float],
                       jobs_generated: int, generation_failures: int, supervised: Mapping[str, int],
                       dedup_decisions: Mapping[str, int], dedup_waiting_harvests: int) -> None:
        """One completed tick: its duration, when it ended, and what it did."""
        self.ticks.labels(outcome="completed").inc()
        self.tick_duration.observe(seconds)
        self.last_tick.set(ended_at)
        for run_seconds in generation_seconds.values():
            self.generation_duration.observe(run_seconds)
        self.jobs_generated.inc(jobs_generated)
        self.generation_failures.inc(generation_failures)
        for action, count in supervised.items():
            self.supervised.labels(action=action).inc(count)
        for outcome, count in dedup_decisions.items():
            self.dedup_decisions.labels(outcome=outcome).inc(count)
        self.dedup_waiting_harvests.set(dedup_waiting_harvests)

    def tick_failed(self) -> None:
        self.ticks.labels(outcome="failed").inc()

    def queues_measured(self, depths: Iterable[tuple[str, int]]) -> None:
        for queue, count in depths:
            self.queue_messages.labels(queue=queue).set(count)

    def leading(self, is_leader: bool) -> None:
        if is_leader:
            self.leadership_terms.inc()
        self.leader.set(1 if is_leader else 0)


__all__ = ["CounterCounts", "CounterGrowth", "SchedulerMetrics", "counter_totals"]
