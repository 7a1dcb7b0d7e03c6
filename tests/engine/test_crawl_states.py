"""The crawl controller's states change only by its transition table: an action the table refuses raises and
changes nothing, and a crawl whose thread fails ends FINISHED through the table's crash event. The states are
named in harvester/heritrix3/states.py alone: the engine, the Heritrix client and the crawl driver import them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harvester.engine.crawl import CrawlStateError
from harvester.heritrix3.states import CONTROLLER_TRANSITIONS, ControllerState, available_actions

HARVESTER = Path(__file__).resolve().parents[2] / "harvester"
# Modules whose own machines share a name with a crawl controller state: the harvest controller's states
# (IDLE, PAUSED, CRAWLING, ..., STOPPING) are not Heritrix's.
OWN_MACHINES = {"controller.py"}


def test_every_state_but_finished_can_end_and_finished_allows_nothing() -> None:
    for state, actions in CONTROLLER_TRANSITIONS.items():
        if state in ("NASCENT", "FINISHED"):
            continue
        assert actions.get("crash") == "FINISHED", state
        assert actions.get("terminate") == "STOPPING", state
    assert CONTROLLER_TRANSITIONS["FINISHED"] == {}
    targets = {target for actions in CONTROLLER_TRANSITIONS.values() for target in actions.values()}
    assert targets == set(CONTROLLER_TRANSITIONS) - {"NASCENT"}


def test_a_crawl_that_fails_in_its_thread_ends_finished_abnormal_and_refuses_actions(crawl, test_site, tmp_path):
    # A file where the WARC directory must go: opening the WARC writer fails inside the crawl's thread.
    launch_dir = tmp_path / "job" / "20260101000000"
    launch_dir.mkdir(parents=True)
    (launch_dir / "warcs").write_text("in the way", encoding="utf-8")
    run = crawl([test_site.url("www.kulturarv.dk", "/")], wait=False)
    assert run.controller.join(20)
    status = run.controller.status()
    assert (status.controller_state, status.exit_status) == ("FINISHED", "FINISHED_ABNORMAL")
    with pytest.raises(CrawlStateError, match="cannot pause while FINISHED"):
        run.controller.pause()
    assert run.controller.status().controller_state == "FINISHED"


def test_the_actions_a_client_may_post_are_the_operator_events_the_table_allows() -> None:
    assert available_actions("RUNNING") == ("pause", "checkpoint", "terminate")
    assert available_actions(ControllerState.PAUSED) == ("unpause", "checkpoint", "terminate")
    # A checkpoint asked for while the crawl still pauses waits for its fetches, as one while running does.
    assert available_actions(ControllerState.PAUSING) == ("unpause", "checkpoint", "terminate")
    # Heritrix pauses only an active crawl; an unpause while preparing cancels pauseAtStart.
    assert available_actions(ControllerState.PREPARING) == ("unpause", "terminate")
    assert available_actions(ControllerState.STOPPING) == ("terminate",)
    assert available_actions(ControllerState.FINISHED) == available_actions(None) == ()
    # A real Heritrix reports EMPTY; the bundled engine never takes it, so its table has no row for it.
    assert ControllerState.EMPTY not in CONTROLLER_TRANSITIONS and available_actions("EMPTY") == ()


def test_no_module_but_the_states_module_writes_a_controller_state_as_a_string() -> None:
    names = {state.value for state in ControllerState}
    offences = []
    for path in sorted(HARVESTER.rglob("*.py")):
        if path.relative_to(HARVESTER).as_posix() in OWN_MACHINES | {"heritrix3/states.py"}:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                offences.append(f"{path.relative_to(HARVESTER.parent)}:{node.lineno} {node.value!r}")
    assert not offences, "\n".join(offences)
