"""Whether a control action can be taken on a running job now, and whether its crawl is paused: judged from
the crawler's state as the live view shows it (runningjobsmonitor's status, from the newest CrawlProgress)
and from the job's changes that the crawler has not reported on yet.

Theory of operation. The newest progress report says what the crawler was doing when it was sent
(STATE_OF_STATUS). A pause or resume the controller applied after that report, and one still pending,
will have changed it by the time a new action arrives, so each moves the state on (STATE_AFTER), in
version order: the order the controller applies them in. What the state then allows is one table,
ALLOWED, after Heritrix 3's job actions: pause a running crawl, unpause a pausing or paused one,
checkpoint a running or paused one, terminate any. Before that table, two rules of the change list:
an action of the same kind still pending is redundant (refused, naming its version), and a pending stop
or fail ends the crawl, so only a fail may follow a stop.

This module reads no database and knows no Flask: webui/api/changes.py and webui/api/live.py give it
what they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harvestdef.repositories.jobchanges import (
    APPLIED,
    CHECKPOINT,
    CONTROL_ACTIONS,
    FAIL,
    PAUSE,
    PENDING,
    RESUME,
    STOP,
    JobChange,
)
from harvestdef.times import utc_text

# The crawler's state as this module judges it.
RUNNING, PAUSING, PAUSED, STARTING, FINISHING, UNKNOWN = (
    "RUNNING", "PAUSING", "PAUSED", "STARTING", "FINISHING", "UNKNOWN")
# CrawlProgress.status (harvestdef.messages.CRAWL_PROGRESS_STATUSES) -> state; an empty frontier is still a
# running crawl (Heritrix's EMPTY: it waits for URIs, and can be paused).
STATE_OF_STATUS: Mapping[str, str] = {
    "PRE_CRAWL": STARTING, "CRAWLER_ACTIVE": RUNNING, "CRAWLER_EMPTY": RUNNING, "CRAWLER_PAUSING": PAUSING,
    "CRAWLER_PAUSED": PAUSED, "CRAWLING_FINISHED": FINISHING}
# The state an applied or pending action leads to.
STATE_AFTER: Mapping[str, str] = {PAUSE: PAUSED, RESUME: RUNNING}
# What each state allows.
ALLOWED: Mapping[str, frozenset[str]] = {
    RUNNING: frozenset({PAUSE, CHECKPOINT, STOP, FAIL}),
    PAUSING: frozenset({RESUME, STOP, FAIL}),
    PAUSED: frozenset({RESUME, CHECKPOINT, STOP, FAIL}),
    STARTING: frozenset({STOP, FAIL}),
    FINISHING: frozenset({STOP, FAIL}),
    UNKNOWN: frozenset({STOP, FAIL}),
}
# What each action needs, in words, for a refusal.
NEEDS: Mapping[str, str] = {PAUSE: "only a running crawler can be paused",
                            RESUME: "only a paused or pausing crawler can be resumed",
                            CHECKPOINT: "only a running or paused crawler can be checkpointed"}
# The crawler's own word for the one who paused it when no change of ours did.
THE_CRAWLER = "the crawler"
_WORDS = {RUNNING: "running", PAUSING: "pausing", PAUSED: "paused", STARTING: "starting (not crawling yet)",
          FINISHING: "finishing its crawl"}


@dataclass(frozen=True)
class CrawlerState:
    """The crawler's state (one of ALLOWED's keys) and, in words, what it was judged from."""

    state: str
    text: str


def crawler_state(status: str | None, reported_at: datetime | None, changes: Sequence[JobChange]) -> CrawlerState:
    """The state the crawler is in, or will be once the changes pending before a new one are applied."""
    if status is None:
        judged = CrawlerState(UNKNOWN, "no progress report has come from the crawler yet")
    else:
        state = STATE_OF_STATUS.get(status, UNKNOWN)
        judged = CrawlerState(state, f"the crawler is {_WORDS.get(state, 'in an unknown state')} ({status}, "
                                     f"reported {utc_text(reported_at) if reported_at else 'at an unknown time'})")
    for change in changes:
        if change.kind not in STATE_AFTER:
            continue
        done = "paused" if change.kind == PAUSE else "resumed"
        if change.state == PENDING:
            judged = CrawlerState(STATE_AFTER[change.kind], f"the crawler is to be {done} by change "
                                                            f"{change.version} (pending)")
        elif change.state == APPLIED and _is_after(change.applied, reported_at):
            judged = CrawlerState(STATE_AFTER[change.kind], f"the crawler was {done} by change {change.version} "
                                                            f"at {utc_text(change.applied)}")
    return judged


def refusal(action: str, job_status: str, state: CrawlerState, changes: Sequence[JobChange]) -> str | None:
    """Why ``action`` cannot be taken on the job now, in words naming the state; None if it can."""
    if job_status != "STARTED":
        return f"the job is {job_status}, not STARTED: control actions go to a running job only"
    pending = [change for change in changes if change.state == PENDING and change.is_control]
    same = next((change for change in pending if change.kind == action), None)
    if same is not None:
        return (f"a {action} is pending already (change {same.version}, made by {same.author} at "
                f"{utc_text(same.created)}); the controller applies it shortly")
    ending = next((change for change in pending if change.kind in (STOP, FAIL)), None)
    if ending is not None and not (action == FAIL and ending.kind == STOP):
        return f"the crawl is ending: a {ending.kind} is pending (change {ending.version})"
    if action not in ALLOWED[state.state]:
        return f"{NEEDS[action]}, and {state.text}"
    return None


def availability(job_status: str, state: CrawlerState, changes: Sequence[JobChange]) -> dict[str, dict[str, Any]]:
    """Each control action with whether it can be taken now and, if not, why (the live view's ``actions``)."""
    answer = {}
    for action in CONTROL_ACTIONS:
        why = refusal(action, job_status, state, changes)
        answer[action] = {"available": why is None, "why_not": why}
    return answer


def paused(status: str | None, reported_at: datetime | None, paused_from: datetime | None,
           changes: Iterable[JobChange]) -> tuple[datetime, str] | None:
    """Since when and by whom the crawl is paused, or None: the newest applied pause not followed by an
    applied resume, unless the crawler reported running after it (resumed by other means, such as a real
    Heritrix's console); otherwise, when the crawler says it is paused, by the crawler itself, since
    ``paused_from`` (the first of the progress samples that have said so since it last ran)."""
    pause = None
    for change in changes:
        if change.state == APPLIED and change.kind == PAUSE:
            pause = change
        elif change.state == APPLIED and change.kind == RESUME:
            pause = None
    running_since = status is not None and STATE_OF_STATUS.get(status) == RUNNING
    if pause is not None and pause.applied is not None and not (
            running_since and _is_after(reported_at, pause.applied)):
        return pause.applied, pause.author
    if status is not None and STATE_OF_STATUS.get(status) == PAUSED:
        since = paused_from or reported_at
        if since is not None:
            return since, THE_CRAWLER
    return None


def _is_after(moment: datetime | None, other: datetime | None) -> bool:
    """Whether ``moment`` is known and later than ``other`` (or ``other`` is unknown)."""
    return moment is not None and (other is None or moment > other)
