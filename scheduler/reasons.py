"""The words the scheduler stores in harvest_state.reason (scheduler.tick) and a failed run's deactivation
reason (scheduler.jobgen.generate): why a harvest waits, was generated, was deactivated or is finished.

They are stored in English, the API's language, and the web UI says them again in the page's language
(webui/harvest_reasons.py) by recognising each part. So every reason is written here, by one function each,
and tests/webui/test_harvest_reasons.py writes every one through these functions and checks the web UI
knows it: a change of wording here fails that test until the web UI's table follows.

A reason of several parts joins them with ``SEPARATOR``; a part says one thing and never holds the separator
itself, except for the text it quotes from elsewhere (an outlook reason, an index refusal, an error).
"""

from __future__ import annotations

from datetime import datetime

from harvestdef.times import utc_text
from harvestdef.words import plural

SEPARATOR = "; "


def joined(*parts: str | None) -> str:
    """The parts that are given, in order, as one reason."""
    return SEPARATOR.join(part for part in parts if part)


def next_run(at: datetime) -> str:
    return f"next run at {utc_text(at)}"


def run_asked_for() -> str:
    """Said before why a run asked for outside the schedule still waits."""
    return "a run asked for"


def postponed(channel: str | None) -> str:
    return f"postponed: no registered harvest controller serves channel {channel}"


def previous_step_without_jobs(previous: int) -> str:
    return f"waiting for the previous step (harvest {previous}) to make its jobs"


def previous_step_unfinished(previous: int, unfinished: int, total: int) -> str:
    return f"waiting for the previous step (harvest {previous}): {unfinished} of its {total} jobs are not finished"


def never_runs(why: str) -> str:
    """A harvest that never ran and cannot: ``why`` is its outlook reason (harvestdef's words)."""
    return joined(f"will never run: {why}", "give it a schedule with events to come")


def finished(why: str, last_run: int | None, last_run_at: datetime | None) -> str:
    """A harvest whose schedule has run its course: ``why`` is its outlook reason, then its last run."""
    last = f"last run {last_run}" + (f" at {utc_text(last_run_at)}" if last_run_at is not None else "")
    return joined(why, last)


def generating(since: datetime) -> str:
    return f"generating jobs since {utc_text(since)}"


def generated(run: int, jobs: int, at: datetime, next_date: datetime | None) -> str:
    return joined(f"run {run}: {plural(jobs, 'job')} at {utc_text(at)}",
                  next_run(next_date) if next_date is not None else None)


def run_jobs_wait(run: int, note: str) -> str:
    """Why the jobs of a run made already wait: ``note`` is one of the deduplication notes below."""
    return f"the jobs of run {run} wait: {note}"


def sources_wait_for_jobs(waiting: int, jobs: int, unfinished: int) -> str:
    """Jobs of a run held until the earlier jobs that harvested their domains end (scheduler.dedupsources)."""
    return (f"{waiting} of its {jobs} jobs wait for the earlier jobs that harvested their domains to finish: "
            f"{unfinished} not finished yet")


def sources_refused(refused: int, jobs: int, refusal: str) -> str:
    """Jobs of a run held because too few of their domains' earlier captures are stored; ``refusal`` is the
    first one's (scheduler.dedupsources.refusal_of)."""
    return joined(f"deduplication refused for {refused} of its {jobs} jobs: {refusal}",
                  "not dispatched until enough of these jobs' entries are stored (counted again at every tick)")


def generation_failed(name: str, harvest_id: int, deactivation_failure: str | None, cause: str) -> str:
    """Why a harvest was deactivated: its run failed with ``cause``; ``deactivation_failure`` is why the
    deactivation failed too, None when it worked."""
    outcome = ("the harvest was deactivated" if deactivation_failure is None
               else f"deactivating the harvest failed too ({deactivation_failure}), so it is still active")
    return f"job generation for harvest definition {name!r} (id {harvest_id}) failed and {outcome}: {cause}"


__all__ = ["SEPARATOR", "finished", "generated", "generating", "generation_failed", "joined", "never_runs",
           "next_run", "postponed", "previous_step_unfinished", "previous_step_without_jobs", "run_asked_for",
           "run_jobs_wait", "sources_refused", "sources_wait_for_jobs"]
