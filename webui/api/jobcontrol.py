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
what they read. Its words are phrases (webui/api/phrases.py): English for the API, with a code and values
from which the job page says them in its language.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harvestdef.livechanges import APPLIED, CHECKPOINT, CONTROL_ACTIONS, FAIL, PAUSE, PENDING, RESUME, STOP
from harvestdef.repositories.jobchanges import JobChange
from harvestdef.times import utc_text
from webui.api.phrases import N_, Phrase, phrasebook

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
# The crawler's own word for the one who paused it when no change of ours did.
THE_CRAWLER = "the crawler"
# The words of a refusal and of the crawler's state, by code (webui/api/phrases.py).
PHRASES: Mapping[str, str] = {
    # what each action needs
    "needs_pause": N_("only a running crawler can be paused"),
    "needs_resume": N_("only a paused or pausing crawler can be resumed"),
    "needs_checkpoint": N_("only a running or paused crawler can be checkpointed"),
    "refused_in_state": N_("%(needs)s, and %(state)s"),
    # the crawler's state, one sentence each: a language may say each state its own way
    "state_running": N_("the crawler is running (%(status)s, reported %(time)s)"),
    "state_pausing": N_("the crawler is pausing (%(status)s, reported %(time)s)"),
    "state_paused": N_("the crawler is paused (%(status)s, reported %(time)s)"),
    "state_starting": N_("the crawler is starting (not crawling yet) (%(status)s, reported %(time)s)"),
    "state_finishing": N_("the crawler is finishing its crawl (%(status)s, reported %(time)s)"),
    "state_unknown": N_("the crawler is in an unknown state (%(status)s, reported %(time)s)"),
    "crawler_unreported": N_("no progress report has come from the crawler yet"),
    "at_an_unknown_time": N_("at an unknown time"),
    "crawler_to_be_paused": N_("the crawler is to be paused by change %(version)s (pending)"),
    "crawler_to_be_resumed": N_("the crawler is to be resumed by change %(version)s (pending)"),
    "crawler_was_paused": N_("the crawler was paused by change %(version)s at %(time)s"),
    "crawler_was_resumed": N_("the crawler was resumed by change %(version)s at %(time)s"),
    # why an action cannot be taken
    "job_not_started": N_("the job is %(status)s, not STARTED: control actions go to a running job only"),
    "pending_pause": N_("a pause is pending already (change %(version)s, made by %(author)s at %(time)s); the "
                        "controller applies it shortly"),
    "pending_resume": N_("a resume is pending already (change %(version)s, made by %(author)s at %(time)s); the "
                         "controller applies it shortly"),
    "pending_checkpoint": N_("a checkpoint is pending already (change %(version)s, made by %(author)s at "
                             "%(time)s); the controller applies it shortly"),
    "pending_stop": N_("a stop is pending already (change %(version)s, made by %(author)s at %(time)s); the "
                       "controller applies it shortly"),
    "pending_fail": N_("a fail is pending already (change %(version)s, made by %(author)s at %(time)s); the "
                       "controller applies it shortly"),
    "ending_stop": N_("the crawl is ending: a stop is pending (change %(version)s)"),
    "ending_fail": N_("the crawl is ending: a fail is pending (change %(version)s)"),
}
_say = phrasebook(PHRASES)


@dataclass(frozen=True)
class CrawlerState:
    """The crawler's state (one of ALLOWED's keys) and, in words, what it was judged from."""

    state: str
    phrase: Phrase

    @property
    def text(self) -> str:
        return self.phrase.english()


def crawler_state(status: str | None, reported_at: datetime | None, changes: Sequence[JobChange]) -> CrawlerState:
    """The state the crawler is in, or will be once the changes pending before a new one are applied."""
    if status is None:
        judged = CrawlerState(UNKNOWN, _say("crawler_unreported"))
    else:
        state = STATE_OF_STATUS.get(status, UNKNOWN)
        judged = CrawlerState(state, _say(f"state_{state.lower()}", status=status,
                                          time=utc_text(reported_at) if reported_at else _say("at_an_unknown_time")))
    for change in changes:
        if change.kind not in STATE_AFTER:
            continue
        done = "paused" if change.kind == PAUSE else "resumed"
        if change.state == PENDING:
            judged = CrawlerState(STATE_AFTER[change.kind], _say(f"crawler_to_be_{done}", version=change.version))
        elif change.state == APPLIED and _is_after(change.applied, reported_at):
            judged = CrawlerState(STATE_AFTER[change.kind], _say(f"crawler_was_{done}", version=change.version,
                                                                 time=utc_text(change.applied)))
    return judged


def refusal(action: str, job_status: str, state: CrawlerState, changes: Sequence[JobChange]) -> str | None:
    """Why ``action`` cannot be taken on the job now, in words naming the state; None if it can."""
    why = refusal_phrase(action, job_status, state, changes)
    return None if why is None else why.english()


def refusal_phrase(action: str, job_status: str, state: CrawlerState,
                   changes: Sequence[JobChange]) -> Phrase | None:
    """``refusal`` as a phrase."""
    if job_status != "STARTED":
        return _say("job_not_started", status=job_status)
    pending = [change for change in changes if change.state == PENDING and change.is_control]
    same = next((change for change in pending if change.kind == action), None)
    if same is not None:
        return _say(f"pending_{action}", version=same.version, author=same.author, time=utc_text(same.created))
    ending = next((change for change in pending if change.kind in (STOP, FAIL)), None)
    if ending is not None and not (action == FAIL and ending.kind == STOP):
        return _say(f"ending_{ending.kind}", version=ending.version)
    if action not in ALLOWED[state.state]:
        return _say("refused_in_state", needs=_say(f"needs_{action}"), state=state.phrase)
    return None


def availability(job_status: str, state: CrawlerState, changes: Sequence[JobChange]) -> dict[str, dict[str, Any]]:
    """Each control action with whether it can be taken now and, if not, why: in English (``why_not``) and as a
    phrase (``why_not_phrase``, for a page in another language). The live view's ``actions``."""
    answer = {}
    for action in CONTROL_ACTIONS:
        why = refusal_phrase(action, job_status, state, changes)
        answer[action] = {"available": why is None, "why_not": None if why is None else why.english(),
                          "why_not_phrase": None if why is None else why.json()}
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
