"""What a scheduler tick is told (TickOptions, from the settings) and what it tells (TickReport, for the log,
the command line and tests): shared by the tick's parts (scheduler/tick.py, scheduler/supervision.py,
scheduler/readiness.py)."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from harvestdef.model.controllers import LostControllerRule


@dataclass(frozen=True)
class TickOptions:
    job_timeout: int = 604_800
    lost: LostControllerRule = field(default_factory=LostControllerRule)
    claim_grace_time: int = 120
    postpone_unregistered_channel: bool = True
    history_sample_rate: int = 300  # harvester.monitor.historySampleRate: an ended job's samples are thinned to it


@dataclass
class TickReport:
    """What one tick did, for the log, the command line and tests."""

    generated: dict[str, list[int]] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)
    deactivated: dict[str, str] = field(default_factory=dict)
    timed_out: list[int] = field(default_factory=list)
    interrupted: list[int] = field(default_factory=list)
    resubmitted: dict[int, int] = field(default_factory=dict)
    indexing: dict[str, str] = field(default_factory=dict)  # harvest name -> why its runs' jobs wait for an index
    # a job that ended by other means -> how many of its pending live changes the tick refused
    changes_refused: dict[int, int] = field(default_factory=dict)
    live_changes_sent: int = 0  # by SchedulerService.tick_once after the tick
    webhook_attempts: int = 0  # webhook deliveries attempted, by SchedulerService.tick_once after the tick
    finished: dict[str, str] = field(default_factory=dict)  # harvest name -> why its schedule has run its course
    previewed: list[str] = field(default_factory=list)  # harvests whose job-generation preview was made
    generation_seconds: dict[str, float] = field(default_factory=dict)  # harvest name -> its run's generation time
    # the deduplication decisions on NEW jobs (scheduler.dedupsources.JobReadiness.run_note): outcome -> jobs
    dedup_decisions: collections.Counter[str] = field(default_factory=collections.Counter)


__all__ = ["TickOptions", "TickReport"]
