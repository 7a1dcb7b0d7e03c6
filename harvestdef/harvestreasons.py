"""Why a harvest waits, runs no more, was generated or was deactivated, and why a job's deduplication is held
back: every such reason is a phrase of this book (harvestdef/phrases.py), made by one function each.

The scheduler stores a reason twice: its English (``harvest_state.reason``, ``job_dedup_sources.refusal``),
which the API answers and the logs say, and its phrase's JSON (``reason_phrase``, ``refusal_phrase``),
from which a page says it in its own language by code (webui/harvest_reasons.py). Nothing reads the
English back. The outlook reasons (why a harvest gets no further run: Schedule.end_reason,
HarvestRepository.outlook) are phrases of the same book, so the scheduler quotes them inside its own.

A reason of several parts is one phrase too: ``joined`` nests them two by two under ``parts``, whose
template puts "; " between them in every language.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from harvestdef.phrases import N_, Phrase, phrasebook
from harvestdef.times import utc_text

TEMPLATES: dict[str, str] = {
    "parts": N_("%(first)s; %(rest)s"),
    # why a harvest gets no further run (its outlook)
    "runs_used_one": N_("schedule %(name)s allows %(runs)s run, and all of them have run"),
    "runs_used": N_("schedule %(name)s allows %(runs)s runs, and all of them have run"),
    "schedule_ended": N_("schedule %(name)s ended on %(time)s"),
    "no_event_left": N_("schedule %(name)s has no event left before its end on %(time)s"),
    "snapshot_has_run": N_("a snapshot harvest runs once, and it has run"),
    "next_date_cleared": N_("its next run date was cleared, although its schedule has events to come"),
    # the scheduler's reasons for a harvest's state
    "next_run": N_("next run at %(time)s"),
    "run_asked_for": N_("a run asked for"),
    "postponed": N_("postponed: no registered harvest controller serves channel %(channel)s"),
    "previous_step_without_jobs": N_("waiting for the previous step (harvest %(harvest)s) to make its jobs"),
    "previous_step_unfinished": N_("waiting for the previous step (harvest %(harvest)s): %(unfinished)s of its "
                                   "%(total)s jobs are not finished"),
    "never_runs": N_("will never run: %(why)s"),
    "give_it_events": N_("give it a schedule with events to come"),
    "last_run": N_("last run %(run)s"),
    "last_run_at": N_("last run %(run)s at %(time)s"),
    "generating": N_("generating jobs since %(time)s"),
    "generated_one": N_("run %(run)s: %(jobs)s job at %(time)s"),
    "generated": N_("run %(run)s: %(jobs)s jobs at %(time)s"),
    "run_jobs_wait": N_("the jobs of run %(run)s wait: %(note)s"),
    "sources_wait_for_jobs": N_("%(waiting)s of its %(jobs)s jobs wait for the earlier jobs that harvested their "
                                "domains to finish: %(unfinished)s not finished yet"),
    "sources_refused": N_("deduplication refused for %(refused)s of its %(jobs)s jobs: %(refusal)s"),
    "not_dispatched": N_("not dispatched until enough of these jobs' entries are stored (counted again at every "
                         "tick)"),
    # why one job's deduplication is held back
    "refusal": N_("the earlier captures of only %(covered)s of the %(domains)s domains of job %(job)s harvested "
                  "before are stored (%(share)s %%), fewer than satisfactorythresholdpercentage (%(threshold)s "
                  "%%): no stored entries for jobs %(ids)s"),
    "ids_and_more": N_("%(ids)s and %(count)s more"),
    # why a harvest was deactivated
    "generation_failed": N_("job generation for harvest definition %(name)s (id %(id)s) failed and the harvest "
                            "was deactivated: %(cause)s"),
    "generation_and_deactivation_failed": N_("job generation for harvest definition %(name)s (id %(id)s) failed "
                                             "and deactivating the harvest failed too (%(failure)s), so it is "
                                             "still active: %(cause)s"),
}

_say = phrasebook(TEMPLATES)


def joined(*parts: Phrase | None) -> Phrase | None:
    """The parts that are given, in order, as one reason; None when none is."""
    given = [part for part in parts if part is not None]
    if not given:
        return None
    reason = given[-1]
    for part in reversed(given[:-1]):
        reason = _say("parts", first=part, rest=reason)
    return reason


# ---------------------------------------------------------------------- outlook
def runs_used(schedule: str, runs: int) -> Phrase:
    return _say("runs_used_one" if runs == 1 else "runs_used", name=schedule, runs=runs)


def schedule_ended(schedule: str, at: datetime) -> Phrase:
    return _say("schedule_ended", name=schedule, time=utc_text(at))


def no_event_left(schedule: str, end: datetime) -> Phrase:
    return _say("no_event_left", name=schedule, time=utc_text(end))


def snapshot_has_run() -> Phrase:
    return _say("snapshot_has_run")


def next_date_cleared() -> Phrase:
    return _say("next_date_cleared")


# ---------------------------------------------------------------------- a harvest's state
def next_run(at: datetime) -> Phrase:
    return _say("next_run", time=utc_text(at))


def run_asked_for() -> Phrase:
    """Said before why a run asked for outside the schedule still waits."""
    return _say("run_asked_for")


def postponed(channel: str | None) -> Phrase:
    return _say("postponed", channel=str(channel))


def previous_step_without_jobs(previous: int) -> Phrase:
    return _say("previous_step_without_jobs", harvest=previous)


def previous_step_unfinished(previous: int, unfinished: int, total: int) -> Phrase:
    return _say("previous_step_unfinished", harvest=previous, unfinished=unfinished, total=total)


def never_runs(why: Phrase) -> Phrase:
    """A harvest that never ran and cannot: ``why`` is its outlook reason."""
    return _say("parts", first=_say("never_runs", why=why), rest=_say("give_it_events"))


def finished(why: Phrase, last_run: int | None, last_run_at: datetime | None) -> Phrase:
    """A harvest whose schedule has run its course: ``why`` is its outlook reason, then its last run."""
    last = (_say("last_run", run=str(last_run)) if last_run_at is None
            else _say("last_run_at", run=str(last_run), time=utc_text(last_run_at)))
    return _say("parts", first=why, rest=last)


def generating(since: datetime) -> Phrase:
    return _say("generating", time=utc_text(since))


def generated(run: int, jobs: int, at: datetime, next_date: datetime | None) -> Phrase:
    made = _say("generated_one" if jobs == 1 else "generated", run=run, jobs=f"{jobs:,}", time=utc_text(at))
    return _say("parts", first=made, rest=next_run(next_date)) if next_date is not None else made


def run_jobs_wait(run: int, note: Phrase) -> Phrase:
    """Why the jobs of a run made already wait: ``note`` is one of the deduplication notes below, or several
    joined."""
    return _say("run_jobs_wait", run=run, note=note)


def sources_wait_for_jobs(waiting: int, jobs: int, unfinished: int) -> Phrase:
    """Jobs of a run held until the earlier jobs that harvested their domains end (scheduler.dedupsources)."""
    return _say("sources_wait_for_jobs", waiting=waiting, jobs=jobs, unfinished=unfinished)


def sources_refused(refused: int, jobs: int, refusal: Phrase) -> Phrase:
    """Jobs of a run held because too few of their domains' earlier captures are stored; ``refusal`` is the
    first one's (``job_refusal``)."""
    return _say("parts", first=_say("sources_refused", refused=refused, jobs=jobs, refusal=refusal),
                rest=_say("not_dispatched"))


def job_refusal(job_id: int, domains_with_history: int, covered: int, threshold_percentage: int,
                missing_job_ids: tuple[int, ...], shown: int) -> Phrase:
    """Why one job's deduplication is held back: of its ``domains_with_history``, the earlier captures of only
    ``covered`` are stored, fewer than ``threshold_percentage``; the first ``shown`` of the ended jobs whose
    entries are missing are named."""
    share = covered * 100 // domains_with_history if domains_with_history else 100
    ids: str | Phrase = ", ".join(str(job) for job in missing_job_ids[:shown])
    if len(missing_job_ids) > shown:
        ids = _say("ids_and_more", ids=ids, count=len(missing_job_ids) - shown)
    return _say("refusal", covered=covered, domains=domains_with_history, job=job_id, share=share,
                threshold=threshold_percentage, ids=ids)


# ---------------------------------------------------------------------- a harvest deactivated
def generation_failed(name: str, harvest_id: int, deactivation_failure: str | None, cause: str) -> Phrase:
    """Why a harvest was deactivated: its run failed with ``cause``; ``deactivation_failure`` is why the
    deactivation failed too, None when it worked."""
    if deactivation_failure is None:
        return _say("generation_failed", name=repr(name), id=harvest_id, cause=cause)
    return _say("generation_and_deactivation_failed", name=repr(name), id=harvest_id, failure=deactivation_failure,
                cause=cause)


def stored(reason: Phrase) -> str:
    """A reason's phrase as the JSON text the scheduler stores beside its English."""
    return json.dumps(reason.json(), ensure_ascii=False)


def from_stored(text: str | None) -> dict[str, Any] | None:
    """The phrase's JSON ({"code", "values"}) of a stored text; None for none, or for text that is not one."""
    if not text:
        return None
    try:
        said = json.loads(text)
    except ValueError:
        return None
    return said if isinstance(said, dict) and isinstance(said.get("code"), str) else None


__all__ = ["TEMPLATES", "finished", "from_stored", "generated", "generating", "generation_failed",
           "job_refusal", "joined", "never_runs", "next_date_cleared", "next_run", "no_event_left", "postponed",
           "previous_step_unfinished", "previous_step_without_jobs", "run_asked_for", "run_jobs_wait", "runs_used",
           "schedule_ended", "snapshot_has_run", "sources_refused", "sources_wait_for_jobs", "stored"]
