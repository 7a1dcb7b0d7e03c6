"""Pause, checkpoint and resume in a new CrawlController without refetching what was done."""

from __future__ import annotations

import gzip
import json
import time
from collections import Counter

import pytest

from harvestdef.errors import CrawlEngineError
from harvester.engine.checkpoint import STATE_FILE, CheckpointError
from tests.engine.site import wait_for


def test_resume_from_checkpoint_fetches_the_rest_and_nothing_twice(crawl, test_site):
    seeds = [test_site.url("www.kulturarv.dk", "/"), test_site.url("www.bibliotek.no", "/")]
    first = crawl(seeds, wait=False, overrides={"crawlController.maxToeThreads": 1,
                                                "disposition.minDelayMs": 30, "disposition.maxDelayMs": 30})
    controller = first.controller
    assert wait_for(lambda: controller.status().figures.uri_totals.downloaded_uri_count >= 12, timeout=20)
    controller.pause()
    assert wait_for(lambda: controller.status().controller_state == "PAUSED", timeout=10)
    name = controller.checkpoint()
    assert (first.job_dir / "checkpoints" / name).is_dir() and name.startswith("cp00001-")
    done_at_checkpoint = controller.status().figures.uri_totals.downloaded_uri_count
    assert (first.launch_dir / "reports" / "crawl-report.txt").is_file()
    controller.terminate()
    assert controller.join(10)
    assert controller.status().exit_status == "ABORTED"
    requests_before = len(test_site.requests)

    second = crawl(seeds, checkpoint=first.job_dir / "checkpoints" / name, launch="20260101000100")
    status = second.controller.status()
    assert status.exit_status == "FINISHED"
    assert status.figures.uri_totals.downloaded_uri_count > done_at_checkpoint
    refetched = Counter(test_site.requests[:requests_before]) & Counter(test_site.requests[requests_before:])
    assert not refetched, f"fetched again after resume: {sorted(refetched)}"
    all_lines = first.crawl_log() + second.crawl_log()
    fetched = Counter(f[3] for f in all_lines if f[3].startswith("http") and f[1] not in ("-9998", "-5003"))
    assert all(count == 1 for count in fetched.values())
    # The same site crawled in one go gives the same set of URLs.
    assert test_site.url("www.bibliotek.no", "/page/8") in fetched
    warcs = sorted(p.name for p in (second.launch_dir / "warcs").iterdir())
    assert warcs and all("-00002-" in n or "-00003-" in n for n in warcs), warcs


def test_paused_crawl_fetches_nothing_until_unpaused(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/")], wait=False,
                overrides={"crawlController.pauseAtStart": "true"})
    controller = run.controller
    assert wait_for(lambda: controller.status().controller_state == "PAUSED", timeout=10)
    time.sleep(0.3)
    assert controller.status().figures.uri_totals.downloaded_uri_count == 0
    controller.unpause()
    assert controller.join(30)
    assert controller.status().exit_status == "FINISHED"


def test_terminate_right_after_start_ends_aborted(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/")], wait=False)
    run.controller.terminate()
    assert run.controller.join(10)
    assert run.controller.status().exit_status == "ABORTED"


def test_status_is_safe_to_read_while_crawling(crawl, test_site):
    run = crawl([test_site.url(host, "/") for host in test_site.hosts], wait=False)
    snapshots = 0
    while not run.controller.join(0):
        status = run.controller.status()
        assert status.figures.frontier.total_queues >= 0
        snapshots += 1
    assert snapshots > 0 and run.controller.status().exit_status == "FINISHED"


def test_a_checkpoint_from_before_the_on_disk_frontier_is_refused_by_name(crawl, test_site, tmp_path):
    # What such a checkpoint held: the frontier in the JSON state file, and no frontier.sqlite beside it.
    old = tmp_path / "job" / "checkpoints" / "cp00001-20250101000000"
    old.mkdir(parents=True)
    with gzip.open(old / STATE_FILE, "wt", encoding="utf-8") as handle:
        json.dump({"job": "job", "frontier": {"queues": {}}, "stats": {}}, handle)
    with pytest.raises(CheckpointError, match="checkpoint cp00001-20250101000000 cannot be resumed: it was "
                                              "written before the frontier's on-disk store") as refused:
        crawl([test_site.url("www.kulturarv.dk", "/")], checkpoint=old)
    assert isinstance(refused.value, CrawlEngineError)
    assert "frontier.sqlite" in str(refused.value)
    assert not (tmp_path / "job" / "state").exists()  # refused before anything was copied or opened
