"""When a harvest controller counts as lost, and when its job is resubmitted (docs/scheduler.md, Job states).

A controller is lost once it has been silent for ``lost_after_heartbeats`` of its own heartbeat intervals.
The interval is the one its heartbeats state (harvesters.heartbeat_interval), because controllers run on
hosts of their own with settings files of their own: a scheduler that assumed its own value would count
a controller with a longer interval lost while it is well. A controller that states none (an older one)
is judged by the scheduler's ``harvestsuite.harvester.heartbeatInterval``.

Silence is counted from the controller's last sign of life: its newest heartbeat, or, for a job, the
job's start if that is later (the controller reported STARTED then, so it was alive). It is counted,
besides, by the leading scheduler's ``Hearing``: while the scheduler's broker connection is down no
heartbeat can reach it, so no controller counts as lost; once the connection is back, silence is counted
from then at the earliest, because the heartbeats of the outage were never delivered. The scheduler
(scheduler/supervision.py, ``Supervisor._hearing``) keeps its hearing in the table scheduler_hearing, where the web UI
reads it.

The job of a lost controller stays STARTED with the interrupted mark; the controller reports it when it
comes back. Only once it has been silent ``resubmit_lost_after`` seconds (and is lost) is the job
resubmitted, so a harvest is not stuck behind a controller that never returns; 0 never resubmits.

A controller can also come back without its job: its job directory was lost (a disk replaced, a fresh
host under the same controller id), so its heartbeats name other work or none, it is not lost, and the job
would stay STARTED with nothing crawling it until jobtimeouttime. Such a job is resubmitted as a lost
one's is (``has_left_job``) once the controller has registered again since the job started and a
heartbeat sent more than claimGraceTime after that registration still does not name the job's attempt.
Only a registration after the job's start counts: a controller stopped at a shutdown checkpoint sends a
last heartbeat naming no job, and its job must wait for it to come back. Counted from the registration
because a controller that starts again first post-processes and reports its leftovers
(sending no heartbeat), then registers, sends its first heartbeat naming no job, and only then claims its
checkpointed crawl again to resume it (an answer within answerTimeout, 30 s by default); from that claim on
its heartbeats name the job, while it waits for the answer too. claimGraceTime (120 s by default) covers
the step to the claim, as it covers the step from a grant to the first heartbeat naming a SUBMITTED job.

One rule for the scheduler's supervision, the System page and the restart check, so they never
disagree about who is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from harvestdef.settings import Settings


@dataclass(frozen=True)
class Hearing:
    """Whether the leading scheduler hears the controllers' heartbeats: ``deaf_since`` while its broker
    connection is down; ``hearing_since``, when it came back after the latest outage (None: no outage)."""

    deaf_since: datetime | None = None
    hearing_since: datetime | None = None

    @property
    def deaf(self) -> bool:
        return self.deaf_since is not None

    def counted(self, last_sign: datetime | None) -> datetime | None:
        """A controller's last sign of life as its silence is counted: not before the scheduler heard again."""
        if self.hearing_since is None:
            return last_sign
        return self.hearing_since if last_sign is None else max(last_sign, self.hearing_since)


HEARING_ALL_ALONG = Hearing()


@dataclass(frozen=True)
class LostControllerRule:
    lost_after_heartbeats: int = 10
    default_heartbeat_interval: float = 30.0
    resubmit_lost_after: int = 3600

    @classmethod
    def from_settings(cls, settings: Settings) -> LostControllerRule:
        return cls(settings.scheduler.lostAfterHeartbeats, float(settings.harvester.heartbeatInterval),
                   settings.scheduler.resubmitLostAfter)

    def silence_limit(self, heartbeat_interval: float | None) -> timedelta:
        """How long a controller with this stated interval (None or 0: not stated) may be silent."""
        interval = heartbeat_interval if heartbeat_interval and heartbeat_interval > 0 else \
            self.default_heartbeat_interval
        return timedelta(seconds=interval * self.lost_after_heartbeats)

    def is_lost(self, last_sign: datetime | None, heartbeat_interval: float | None, now: datetime,
                hearing: Hearing = HEARING_ALL_ALONG) -> bool:
        """Silent past its limit, as ``hearing`` counts it; a controller never heard from (``last_sign``
        None) is lost. No controller is lost while the scheduler is deaf."""
        if hearing.deaf:
            return False
        counted = hearing.counted(last_sign)
        return counted is None or now - counted > self.silence_limit(heartbeat_interval)

    def resubmits_at(self, last_sign: datetime, heartbeat_interval: float | None,
                     hearing: Hearing = HEARING_ALL_ALONG) -> datetime | None:
        """When the job of a controller silent since ``last_sign`` is resubmitted, as long as the scheduler
        hears (``hearing`` not deaf); None: never."""
        if self.resubmit_lost_after <= 0:
            return None
        counted = hearing.counted(last_sign) or last_sign
        return counted + max(self.silence_limit(heartbeat_interval), timedelta(seconds=self.resubmit_lost_after))

    def needs_resubmission(self, last_sign: datetime, heartbeat_interval: float | None, now: datetime,
                           hearing: Hearing = HEARING_ALL_ALONG) -> bool:
        if hearing.deaf:
            return False
        due = self.resubmits_at(last_sign, heartbeat_interval, hearing)
        return due is not None and now > due


def last_sign_of_life(last_heartbeat: datetime | None, startdate: datetime | None) -> datetime | None:
    """The later of a controller's newest heartbeat and its job's start (its STARTED report)."""
    known = [moment for moment in (last_heartbeat, startdate) if moment is not None]
    return max(known) if known else None


def has_left_job(attempt_id: str, held_attempt_id: str | None, heartbeat: datetime | None,
                 started: datetime | None, registered: datetime | None, grace: timedelta) -> bool:
    """True if the controller holding a STARTED job's claim came back without it: it registered (started
    again) after the job ``started``, and its newest heartbeat, sent at ``heartbeat`` more than ``grace``
    after that registration, names another attempt or none (``held_attempt_id``; attempt ids are unique
    across jobs). Only a controller that started again counts: one stopped at a shutdown checkpoint sends
    a last heartbeat naming no job, and its job waits for it to come back and resume it."""
    if heartbeat is None or started is None or registered is None or held_attempt_id == attempt_id:
        return False
    return registered > started and heartbeat > registered + grace


__all__ = ["HEARING_ALL_ALONG", "Hearing", "LostControllerRule", "has_left_job", "last_sign_of_life"]
