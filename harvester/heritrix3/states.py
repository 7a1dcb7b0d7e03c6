"""The states a Heritrix 3 crawl reports, and the one table of how the crawl controller moves between them.

The bundled engine (harvester/engine/) and the Heritrix client (harvester/heritrix.py, crawldriver.py,
progress.py) speak the same protocol, so both name states from here and nowhere else: a state written as a
string elsewhere in harvester/ fails tests/engine/test_crawl_states.py. Heritrix's names are the values, so
a member compares equal to the text a status document carries.

- ``ControllerState``: ``crawlControllerState`` (Heritrix's CrawlController.State).
- ``CONTROLLER_TRANSITIONS``: the bundled engine's controller, state -> event -> next state. The actions a
  client may POST in a state (``available_actions``) are the operator's events the table allows there.
- ``CrawlExitStatus``: ``crawlExitStatus`` (Heritrix's CrawlStatus), the names the reports describe.
- ``FrontierState``: ``frontierReport.lastReachedState`` (Heritrix's Frontier.State).

This module holds names and rules only; it knows no crawl and does no I/O.
"""

from __future__ import annotations

import enum


class ControllerState(enum.StrEnum):
    NASCENT = "NASCENT"
    PREPARING = "PREPARING"
    RUNNING = "RUNNING"
    # A real Heritrix reports EMPTY once its frontier has run dry (CrawlController.noteFrontierState: without
    # runWhileEmpty it begins the stop, then announces EMPTY until FINISHED). The bundled engine goes from
    # RUNNING to STOPPING at once, so EMPTY is not in its table; the client still has to read it.
    EMPTY = "EMPTY"
    PAUSING = "PAUSING"
    PAUSED = "PAUSED"
    STOPPING = "STOPPING"
    FINISHED = "FINISHED"

    def __repr__(self) -> str:
        return self.name


class ControllerEvent(enum.StrEnum):
    """What moves the controller: an operator's action (the REST API's ``action=`` value) or the crawl's own
    event."""

    START = "start"            # the launch
    PAUSE = "pause"
    UNPAUSE = "unpause"
    TERMINATE = "terminate"
    CHECKPOINT = "checkpoint"
    RUN = "run"                # preparation done
    PAUSED = "paused"          # the last fetch in flight ended while pausing
    FINISH = "finish"          # a limit, an empty frontier, or the workers' end
    STOPPED = "stopped"        # logs and reports written
    CRASH = "crash"            # an unexpected error in the crawl's thread: it ends at once, FINISHED_ABNORMAL

    def __repr__(self) -> str:
        return self.name


# The events a client may ask for while a crawl is launched, in the order a status lists them.
OPERATOR_ACTIONS: tuple[ControllerEvent, ...] = (
    ControllerEvent.PAUSE, ControllerEvent.UNPAUSE, ControllerEvent.CHECKPOINT, ControllerEvent.TERMINATE)

_S, _E = ControllerState, ControllerEvent
# The rules are Heritrix 3's (CrawlJob.isPausable/isUnpausable, CrawlJobModel's availableActions):
# - pause only while the crawl crawls (RUNNING; Heritrix's isActive), not while it prepares: a launched crawl
#   that must wait is paused by pauseAtStart, through the crawl's own "paused" event;
# - unpause while PAUSING or PAUSED, and while PREPARING, where it cancels pauseAtStart (a client acting on
#   launch's answer at once) rather than being lost;
# - terminate from the moment the crawl prepares until it has stopped, and checkpoint once it has prepared:
#   Heritrix offers both while the job runs (this engine's checkpoint needs the crawl's loop, which preparing
#   builds). A checkpoint while PAUSING waits for the fetches in flight, as one while RUNNING does, which is
#   what harvester/crawldriver.py counts on when a pause outlasts its wait; a terminate while STOPPING
#   changes nothing, as Heritrix's second stop request changes no state;
# - NASCENT allows only the start: the engine starts a controller in the same locked step that makes it
#   (harvester/engine/rest/jobregistry.py, launch), so no client ever finds a launched crawl NASCENT to terminate.
CONTROLLER_TRANSITIONS: dict[ControllerState, dict[ControllerEvent, ControllerState]] = {
    _S.NASCENT: {_E.START: _S.PREPARING},
    _S.PREPARING: {_E.RUN: _S.RUNNING, _E.PAUSED: _S.PAUSED, _E.UNPAUSE: _S.PREPARING, _E.TERMINATE: _S.STOPPING,
                   _E.FINISH: _S.STOPPING, _E.CRASH: _S.FINISHED},
    _S.RUNNING: {_E.PAUSE: _S.PAUSING, _E.TERMINATE: _S.STOPPING, _E.FINISH: _S.STOPPING,
                 _E.CHECKPOINT: _S.RUNNING, _E.CRASH: _S.FINISHED},
    _S.PAUSING: {_E.PAUSED: _S.PAUSED, _E.UNPAUSE: _S.RUNNING, _E.TERMINATE: _S.STOPPING,
                 _E.CHECKPOINT: _S.PAUSING, _E.FINISH: _S.STOPPING, _E.CRASH: _S.FINISHED},
    _S.PAUSED: {_E.UNPAUSE: _S.RUNNING, _E.TERMINATE: _S.STOPPING, _E.CHECKPOINT: _S.PAUSED,
                _E.FINISH: _S.STOPPING, _E.CRASH: _S.FINISHED},
    _S.STOPPING: {_E.STOPPED: _S.FINISHED, _E.TERMINATE: _S.STOPPING, _E.FINISH: _S.STOPPING,
                  _E.CRASH: _S.FINISHED},
    _S.FINISHED: {},
}


def available_actions(state: ControllerState | str | None) -> tuple[ControllerEvent, ...]:
    """The operator's actions the table allows in ``state`` (none for a state the engine never takes)."""
    allowed = CONTROLLER_TRANSITIONS.get(state, {})  # a plain name finds its member: a StrEnum hashes as its value
    return tuple(action for action in OPERATOR_ACTIONS if action in allowed)


# What a client reading a status concludes from a state, for a real Heritrix 3 as for the bundled engine.
# A launched crawl is under way from NASCENT (launched, not yet preparing) until it is FINISHED.
UNDER_WAY = frozenset(set(ControllerState) - {ControllerState.FINISHED})
# A crawl fetching new URIs, or about to: Heritrix's CrawlController.isActive (RUNNING and EMPTY).
ACTIVE = frozenset({ControllerState.RUNNING, ControllerState.EMPTY})
# A crawl that has stopped fetching at an operator's pause, or will once its fetches in flight end.
PAUSED_OR_PAUSING = frozenset({ControllerState.PAUSING, ControllerState.PAUSED})
# A crawl on its way out: no action brings it back.
ENDING = frozenset({ControllerState.STOPPING, ControllerState.FINISHED})
# States a crawl leaves by itself soon after its launch: launched, preparing, or (pauseAtStart) on its way
# to PAUSED.
SETTLING = frozenset({ControllerState.NASCENT, ControllerState.PREPARING, ControllerState.PAUSING})


class CrawlExitStatus(enum.StrEnum):
    """``crawlExitStatus``: how a crawl ended, or where it stands (Heritrix's CrawlStatus names)."""

    PREPARING = "PREPARING"
    RUNNING = "RUNNING"
    WAITING_FOR_PAUSE = "WAITING_FOR_PAUSE"
    PAUSED = "PAUSED"
    CHECKPOINTING = "CHECKPOINTING"
    FINISHED = "FINISHED"
    ABORTED = "ABORTED"
    FINISHED_ABNORMAL = "FINISHED_ABNORMAL"
    FINISHED_TIME_LIMIT = "FINISHED_TIME_LIMIT"
    FINISHED_DATA_LIMIT = "FINISHED_DATA_LIMIT"
    FINISHED_DOCUMENT_LIMIT = "FINISHED_DOCUMENT_LIMIT"
    FINISHED_WRITE_LIMIT = "FINISHED_WRITE_LIMIT"

    def __repr__(self) -> str:
        return self.name


class FrontierState(enum.StrEnum):
    """``frontierReport.lastReachedState`` (Heritrix's Frontier.State)."""

    RUN = "RUN"
    EMPTY = "EMPTY"
    HOLD = "HOLD"
    PAUSE = "PAUSE"
    FINISH = "FINISH"

    def __repr__(self) -> str:
        return self.name


# The frontier's state while the controller is in each state; HOLD for the rest (NASCENT, PREPARING).
FRONTIER_STATE_OF: dict[ControllerState, FrontierState] = {
    ControllerState.RUNNING: FrontierState.RUN, ControllerState.EMPTY: FrontierState.EMPTY,
    ControllerState.PAUSING: FrontierState.PAUSE, ControllerState.PAUSED: FrontierState.PAUSE,
    ControllerState.STOPPING: FrontierState.FINISH, ControllerState.FINISHED: FrontierState.FINISH,
}
