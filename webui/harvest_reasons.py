"""Why a harvest waits, runs no more, was generated or was deactivated, said in the page's language.

harvestdef (HarvestRepository.outlook, Schedule.end_reason) and the scheduler (scheduler/reasons.py, stored in
harvest_state) write these reasons in English, the API's language; a page says them again from their parts,
matched here against one table of the English wordings. A reason of several parts ("next run at ...; the
jobs of run 3 wait: ...") is split on "; " and each part said on its own; a part no pattern knows stays as it
was, and so do the figures, names, times and quoted errors inside a known one. tests/webui/
test_harvest_reasons.py writes every reason through the scheduler's own functions and fails when one is
not known here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from flask_babel import gettext as _
from flask_babel import ngettext

# scheduler/reasons.py's SEPARATOR: webui does not import the scheduler (design.md, Packages)
SEPARATOR = "; "

_Say = Callable[[str], str]  # says a nested part in the page's language
_Pattern = tuple[re.Pattern[str], Callable[[re.Match[str], _Say], str]]


def _number(text: str) -> int:
    return int(text.replace(",", ""))


# Why a harvest runs no more (harvestdef's outlook reasons).
_OUTLOOK_REASONS: list[_Pattern] = [
    (re.compile(r"schedule (?P<name>.+) allows (?P<runs>\d+) runs?, and all of them have run"),
     lambda m, say: ngettext("schedule %(name)s allows %(runs)s run, and all of them have run",
                             "schedule %(name)s allows %(runs)s runs, and all of them have run", int(m["runs"]),
                             name=m["name"], runs=m["runs"])),
    (re.compile(r"schedule (?P<name>.+) ended on (?P<time>.+)"),
     lambda m, say: _("schedule %(name)s ended on %(time)s", name=m["name"], time=m["time"])),
    (re.compile(r"schedule (?P<name>.+) has no event left before its end on (?P<time>.+)"),
     lambda m, say: _("schedule %(name)s has no event left before its end on %(time)s", name=m["name"],
                      time=m["time"])),
    (re.compile(r"a snapshot harvest runs once, and it has run"),
     lambda m, say: _("a snapshot harvest runs once, and it has run")),
    (re.compile(r"its next run date was cleared, although its schedule has events to come"),
     lambda m, say: _("its next run date was cleared, although its schedule has events to come")),
]

# Why a job's deduplication was refused: scheduler.dedupsources.refusal_of, which the scheduler quotes in its
# reason.
_REFUSAL = re.compile(r"the earlier captures of only (?P<covered>\d+) of the (?P<domains>\d+) domains of job "
                      r"(?P<job>\d+) harvested before are stored \((?P<share>\d+) %\), fewer than "
                      r"satisfactorythresholdpercentage \((?P<threshold>\d+) %\): no stored entries for jobs "
                      r"(?P<ids>[\d, ]+?)(?: and (?P<more>\d+) more)?", re.S)


def _sources_refusal(text: str) -> str:
    """A job's refusal in the page's language; a text of other words as it was."""
    found = _REFUSAL.fullmatch(text)
    if found is None:
        return text
    ids = found["ids"]
    if found["more"]:
        ids = _("%(ids)s and %(count)s more", ids=ids, count=found["more"])
    return _("the earlier captures of only %(covered)s of the %(domains)s domains of job %(job)s harvested before "
             "are stored (%(share)s %%), fewer than satisfactorythresholdpercentage (%(threshold)s %%): no stored "
             "entries for jobs %(ids)s", covered=found["covered"], domains=found["domains"], job=found["job"],
             share=found["share"], threshold=found["threshold"], ids=ids)


# The parts of the scheduler's harvest_state reasons (scheduler/reasons.py), in its order.
_STATE_REASONS: list[_Pattern] = [
    (re.compile(r"next run at (?P<time>.+)"),
     lambda m, say: _("next run at %(time)s", time=m["time"])),
    (re.compile(r"a run asked for"),
     lambda m, say: _("a run asked for")),
    (re.compile(r"postponed: no registered harvest controller serves channel (?P<channel>.*)"),
     lambda m, say: _("postponed: no registered harvest controller serves channel %(channel)s",
                      channel=m["channel"])),
    (re.compile(r"waiting for the previous step \(harvest (?P<harvest>\d+)\) to make its jobs"),
     lambda m, say: _("waiting for the previous step (harvest %(harvest)s) to make its jobs", harvest=m["harvest"])),
    (re.compile(r"waiting for the previous step \(harvest (?P<harvest>\d+)\): (?P<unfinished>\d+) of its "
                r"(?P<total>\d+) jobs are not finished"),
     lambda m, say: _("waiting for the previous step (harvest %(harvest)s): %(unfinished)s of its %(total)s jobs "
                      "are not finished", harvest=m["harvest"], unfinished=m["unfinished"], total=m["total"])),
    (re.compile(r"will never run: (?P<why>.+)", re.S),
     lambda m, say: _("will never run: %(why)s", why=say(m["why"]))),
    (re.compile(r"give it a schedule with events to come"),
     lambda m, say: _("give it a schedule with events to come")),
    (re.compile(r"last run (?P<run>\d+)"),
     lambda m, say: _("last run %(run)s", run=m["run"])),
    (re.compile(r"last run (?P<run>\d+) at (?P<time>.+)"),
     lambda m, say: _("last run %(run)s at %(time)s", run=m["run"], time=m["time"])),
    (re.compile(r"generating jobs since (?P<time>.+)"),
     lambda m, say: _("generating jobs since %(time)s", time=m["time"])),
    (re.compile(r"run (?P<run>\d+): (?P<jobs>[\d,]+) jobs? at (?P<time>.+)"),
     lambda m, say: ngettext("run %(run)s: %(jobs)s job at %(time)s", "run %(run)s: %(jobs)s jobs at %(time)s",
                             _number(m["jobs"]), run=m["run"], jobs=m["jobs"], time=m["time"])),
    (re.compile(r"the jobs of run (?P<run>\d+) wait: (?P<note>.+)", re.S),
     lambda m, say: _("the jobs of run %(run)s wait: %(note)s", run=m["run"], note=say(m["note"]))),
    (re.compile(r"(?P<waiting>\d+) of its (?P<jobs>\d+) jobs wait for the earlier jobs that harvested their "
                r"domains to finish: (?P<unfinished>\d+) not finished yet"),
     lambda m, say: _("%(waiting)s of its %(jobs)s jobs wait for the earlier jobs that harvested their domains to "
                      "finish: %(unfinished)s not finished yet", waiting=m["waiting"], jobs=m["jobs"],
                      unfinished=m["unfinished"])),
    (re.compile(r"deduplication refused for (?P<refused>\d+) of its (?P<jobs>\d+) jobs: (?P<refusal>.+)", re.S),
     lambda m, say: _("deduplication refused for %(refused)s of its %(jobs)s jobs: %(refusal)s",
                      refused=m["refused"], jobs=m["jobs"], refusal=_sources_refusal(m["refusal"]))),
    (_REFUSAL, lambda m, say: _sources_refusal(m.group(0))),  # a job's own refusal, on its page
    (re.compile(r"not dispatched until enough of these jobs' entries are stored \(counted again at every tick\)"),
     lambda m, say: _("not dispatched until enough of these jobs' entries are stored (counted again at every "
                      "tick)")),
    (re.compile(r"job generation for harvest definition (?P<name>.+) \(id (?P<id>\d+)\) failed and the harvest "
                r"was deactivated: (?P<cause>.+)", re.S),
     lambda m, say: _("job generation for harvest definition %(name)s (id %(id)s) failed and the harvest was "
                      "deactivated: %(cause)s", name=m["name"], id=m["id"], cause=m["cause"])),
    (re.compile(r"job generation for harvest definition (?P<name>.+) \(id (?P<id>\d+)\) failed and deactivating "
                r"the harvest failed too \((?P<failure>.+)\), so it is still active: (?P<cause>.+)", re.S),
     lambda m, say: _("job generation for harvest definition %(name)s (id %(id)s) failed and deactivating the "
                      "harvest failed too (%(failure)s), so it is still active: %(cause)s", name=m["name"],
                      id=m["id"], failure=m["failure"], cause=m["cause"])),
]


def _say_part(text: str, patterns: list[_Pattern], unknown: list[str]) -> str | None:
    """One part in the page's language, or None when no pattern knows it."""
    for pattern, said in patterns:
        match = pattern.fullmatch(text)
        if match:
            return said(match, lambda nested: _say_reason(nested, unknown))
    return None


def _say_reason(reason: str, unknown: list[str]) -> str:
    """``reason`` in the page's language, part by part; the parts no pattern knows are added to ``unknown``.
    A part is matched on its own first; a run of parts is tried only where one alone is not known (a quoted
    text that holds the separator), since a pattern's open-ended group would otherwise take in the parts
    after it."""
    pieces = reason.split(SEPARATOR)
    said: list[str] = []
    start = 0
    while start < len(pieces):
        for end in range(start + 1, len(pieces) + 1):
            text = SEPARATOR.join(pieces[start:end])
            known = _say_part(text, _STATE_REASONS + _OUTLOOK_REASONS, unknown)
            if known is not None:
                said.append(known)
                start = end
                break
        else:
            unknown.append(pieces[start])
            said.append(pieces[start])
            start += 1
    return SEPARATOR.join(said)


def outlook_reason(reason: str) -> str:
    """Why a harvest runs no more (harvestdef's words), in the page's language; unknown text as it was."""
    return _say_part(reason, _OUTLOOK_REASONS, []) or reason


def state_reason(reason: str | None) -> str:
    """The scheduler's reason for a harvest's state, in the page's language; unknown parts as they were."""
    return "" if reason is None else _say_reason(reason, [])


def unknown_parts(reason: str) -> list[str]:
    """The parts of a state reason that no pattern knows, which a page shows in English."""
    unknown: list[str] = []
    _say_reason(reason, unknown)
    return unknown


def state_name(state: str | None) -> str:
    """A harvest's state (scheduler.tick: waiting, generating, ...) in the page's language."""
    names = {"waiting": _("waiting"), "generating": _("generating"), "generated": _("generated"),
             "deactivated": _("deactivated"), "finished": _("finished")}
    return "" if state is None else names.get(state, state)
