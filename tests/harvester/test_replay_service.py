"""``harvestsuite replay run`` over the archive store of a real pipeline run (README.md, Commands).

The scheduler and ``harvestsuite harvester run`` harvest two demo hosts twice; the second run stores the
unchanged photos as revisits. pywb, started by the command from the environment the shared builder makes,
replays a page and a photo of the first run and, without a restart, the second run's revisit of the photo,
stored after pywb started: each byte for byte as the site serves it, through the links the web UI makes.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from harvestdef.replay.layout import REPLAY_CSP
from tests.harvester.test_dedup_chain import DEMO_HOSTS, photo_captures, run_jobs
from tests.harvester.test_dedup_chain import demo_harvesting as replay_harvesting  # noqa: F401 - a fixture
from tests.pywb import _free_port, _tail, pywb_venv
from webui.replaylinks import calendar_link, capture_link

START_TIMEOUT = 60.0


def get(url: str) -> tuple[int, bytes]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def original_bytes(link: str) -> str:
    """pywb's ``id_`` form of a capture link: the capture as archived, not rewritten."""
    head, _, url = link.partition("/http")
    return f"{head}id_/http{url}"


def from_site(port: int, url: str) -> bytes:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", parts.path, headers={"Host": parts.netloc})
        return connection.getresponse().read()
    finally:
        connection.close()


def wait_for(what: str, check, log: Path, timeout: float = START_TIMEOUT):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout} s; the replay service's output:\n{_tail(log, 40)}")


def test_replay_run_serves_the_store_and_picks_up_a_job_stored_while_it_runs(replay_harvesting, tmp_path):  # noqa: F811
    h = replay_harvesting
    venv = pywb_venv()
    harvest_id = h.selective_harvest("replayed", {host.domain: [h.seed(host.name)] for host in DEMO_HOSTS})
    h.start_scheduler()
    h.start_controller()
    first = run_jobs(h, harvest_id, harvest_num=1)

    port = _free_port()
    replay_url = f"http://127.0.0.1:{port}"
    settings = h.settings_file(**{"harvestsuite.replay.port": port, "harvestsuite.replay.url": replay_url,
                                  "harvestsuite.replay.workDir": str(tmp_path / "replay"),
                                  "harvestsuite.replay.pywbVenv": str(venv),
                                  "harvestsuite.replay.syncIntervalMs": 100})
    log = tmp_path / "replay-run.log"
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "harvestdef", "--config", str(settings), "-v",
                                    "replay", "run"], cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_for("pywb answering", lambda: _answers(replay_url), log)
        captures = [capture for job in first for capture in job.captures() if capture.kind == "response"]
        page = next(c for c in captures if c.mime.startswith("text/html") and c.url.endswith(".html"))
        photo = next(c for c in captures if c.mime.startswith("image/"))
        for capture in (page, photo):
            link = capture_link(replay_url, capture.url, capture.date14)
            status, body = get(original_bytes(link))
            assert status == 200 and body == from_site(h.site.port, capture.url), capture.url
            # the harvest's own collection serves it too
            status, _ = get(original_bytes(capture_link(replay_url, capture.url, capture.date14,
                                                        f"harvest-{harvest_id}")))
            assert status == 200
        # the page as replayed (pywb's mp_ mode) may load from the replay service alone
        head, _, rest = capture_link(replay_url, page.url, page.date14).partition("/http")
        with urllib.request.urlopen(f"{head}mp_/http{rest}", timeout=30) as replayed:
            assert replayed.headers["Content-Security-Policy"] == REPLAY_CSP
        assert "ws:" not in REPLAY_CSP and "'self'" in REPLAY_CSP
        status, calendar = get(calendar_link(replay_url, photo.url))
        assert status == 200

        # the second run is stored while pywb runs; its revisit replays without a restart
        h.run_again(harvest_id)
        second = run_jobs(h, harvest_id, harvest_num=2)
        revisit = photo_captures(second)[photo.url]
        assert revisit.kind == "revisit" and revisit.date14 != photo.date14
        link = original_bytes(capture_link(replay_url, revisit.url, revisit.date14))
        body = wait_for("the revisit replayed", lambda: (lambda answer: answer[0] == 200 and answer[1])(get(link)),
                        log)
        assert body == from_site(h.site.port, photo.url)
        assert process.poll() is None, "pywb was restarted or died"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0, _tail(log, 40)
    assert not _answers(replay_url), "pywb still answers after the command stopped"


def _answers(base_url: str) -> bool:
    try:
        return get(base_url + "/")[0] == 200
    except OSError:
        return False
