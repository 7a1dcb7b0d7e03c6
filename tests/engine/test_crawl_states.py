"""The crawl controller's states change only by its transition table: an action the table refuses raises and
changes nothing, and a crawl whose thread fails ends FINISHED through the table's crash event."""

from __future__ import annotations

import pytest

from harvester.engine.crawl import CONTROLLER_TRANSITIONS, CrawlStateError


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
