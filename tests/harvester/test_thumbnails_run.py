"""Seed thumbnails of a real pipeline run (scheduler, ``harvestsuite harvester run``, the bundled engine, the
demo site), made by ``harvestsuite qa thumbnails run --once`` through ``harvestsuite replay run`` (pywb) with
Debian's chromium, and shown on the job page in a real browser (docs/qa.md).

One harvest, two runs, and each pass of the worker checked as it goes: with the chromium setting pointing
at a missing path the job stays DONE with the note on its page; with chromium the next pass makes the
thumbnails; a third pass redoes nothing; a pass after a crash between storing a picture and recording it
records the stored picture without taking it again; the second run's job page shows each seed's picture
beside the first run's, both loaded by the browser, and a preview frame on the replay service's origin.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

from sqlalchemy import delete, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.repositories.thumbnails import seed_key, thumbnail_name
from tests.harvester.test_dedup_chain import demo_harvesting as thumbnail_harvesting  # noqa: F401 - a fixture
from tests.harvester.test_dedup_chain import run_jobs
from tests.harvester.test_replay_service import _answers, wait_for
from tests.pywb import _free_port, _tail, pywb_venv
from tests.webui.browser import CHROMIUM, ServedWebui, log_in, require_browser, screenshot

HOST = "www.havbrug.org"


def qa_pass(settings: Path, log: Path) -> str:
    """``harvestsuite qa thumbnails run --once``: its output, or an assertion with it."""
    done = subprocess.run([sys.executable, "-m", "harvestdef", "--config", str(settings), "qa", "thumbnails", "run",
                           "--once"], capture_output=True, text=True, timeout=120, check=False)
    with open(log, "a", encoding="utf-8") as out:
        out.write(done.stdout + done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


def pass_row(h, job_id: int):  # noqa: ANN001, ANN201
    with h.engine.connect() as conn:
        return conn.execute(select(s.job_thumbnails).where(s.job_thumbnails.c.job_id == job_id)).first()


def seed_rows(h, job_id: int) -> dict:  # noqa: ANN001
    with h.engine.connect() as conn:
        return {row.seed: row for row in conn.execute(select(s.seed_thumbnails)
                                                      .where(s.seed_thumbnails.c.job_id == job_id))}


def test_thumbnails_of_two_runs_made_through_replay_and_shown_beside_each_other(thumbnail_harvesting,  # noqa: F811
                                                                                 browser, tmp_path):
    require_browser()
    h = thumbnail_harvesting
    venv = pywb_venv()
    seeds = [h.seed(HOST), h.seed(HOST, "/fotos/")]
    harvest_id = h.selective_harvest("pictured", {"havbrug.org": seeds})
    h.start_scheduler()
    h.start_controller()
    (first,) = run_jobs(h, harvest_id, harvest_num=1)

    port = _free_port()
    replay_url = f"http://127.0.0.1:{port}"
    values = {"harvestsuite.replay.port": port, "harvestsuite.replay.url": replay_url,
              "harvestsuite.replay.workDir": str(tmp_path / "replay"), "harvestsuite.replay.pywbVenv": str(venv),
              "harvestsuite.replay.syncIntervalMs": 100, "harvestsuite.qa.thumbnailDelayMs": 0,
              "harvestsuite.qa.pageTimeoutMs": 20_000, "harvestsuite.qa.chromium": CHROMIUM}
    settings = h.settings_file(**values)
    no_chromium = h.settings_file(**{**values, "harvestsuite.qa.chromium": str(tmp_path / "no" / "chromium")})
    log = tmp_path / "qa.log"
    replay_log = tmp_path / "replay-run.log"
    with open(replay_log, "ab") as out:
        replay = subprocess.Popen([sys.executable, "-m", "harvestdef", "--config", str(settings), "replay", "run"],
                                  cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_for("pywb answering", lambda: _answers(replay_url), replay_log)
        with ServedWebui(tmp_path, users=("archivist",), settings={"harvestsuite.replay.url": replay_url}) as webui:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=webui.url)
            context.set_default_timeout(30_000)
            page = context.new_page()
            try:
                log_in(page, webui.url, "archivist")

                # no chromium: the job stays DONE with the note, on its page too
                output = qa_pass(no_chromium, log)
                assert "1 skipped" in output and "no chromium at" in output, output
                row = pass_row(h, first.job_id)
                assert row.state == "SKIPPED" and row.note == f"no chromium at {tmp_path / 'no' / 'chromium'} " \
                                                              "(harvestsuite.qa.chromium)"
                assert JobStatus(h.jobs(harvest_id)[0].status) == JobStatus.DONE
                page.goto(f"/status/jobs/{first.job_id}")
                assert "no chromium at" in page.locator("[data-thumbnails=none]").inner_text()

                # chromium: the skipped job is taken again and each seed pictured from its own capture
                output = qa_pass(settings, log)
                assert "1 job done, 2 thumbnails made" in output, output
                assert pass_row(h, first.job_id).state == "MADE"
                rows = seed_rows(h, first.job_id)
                assert set(rows) == set(seeds)
                job_dir = h.archive / str(harvest_id) / str(first.job_id)
                for seed in seeds:
                    assert rows[seed].name == thumbnail_name(seed) and rows[seed].note is None
                    assert rows[seed].capture_time and len(rows[seed].capture_time) == 14
                    assert png_size(job_dir / rows[seed].name) == (320, 200)
                sums = (job_dir / "SHA256SUMS").read_text(encoding="utf-8")
                assert all(thumbnail_name(seed) in sums for seed in seeds)
                stored = {seed: (job_dir / thumbnail_name(seed)).read_bytes() for seed in seeds}
                assert stored[seeds[0]] != stored[seeds[1]], "two pages, one picture"

                # a pass more redoes nothing
                assert "0 jobs done, 0 thumbnails made" in qa_pass(settings, log)
                # a worker that died after storing the front page's picture, before recording it and the job
                with h.engine.begin() as conn:
                    conn.execute(delete(s.seed_thumbnails).where(s.seed_thumbnails.c.job_id == first.job_id,
                                                                 s.seed_thumbnails.c.seed_key == seed_key(seeds[0])))
                    conn.execute(delete(s.job_thumbnails).where(s.job_thumbnails.c.job_id == first.job_id))
                assert "1 job done, 0 thumbnails made" in qa_pass(settings, log)
                assert seed_rows(h, first.job_id)[seeds[0]].name == thumbnail_name(seeds[0])
                assert {seed: (job_dir / thumbnail_name(seed)).read_bytes() for seed in seeds} == stored

                # the second run: its job page shows each seed beside the first run's picture
                h.run_again(harvest_id)
                (second,) = run_jobs(h, harvest_id, harvest_num=2)
                assert "1 job done, 2 thumbnails made" in qa_pass(settings, log)
                page.goto(f"/status/jobs/{second.job_id}")
                for seed in seeds:
                    row = page.locator(f"tr[data-seed='{seed}']")
                    for run, job_id in (("this", second.job_id), ("previous", first.job_id)):
                        image = row.locator(f"td[data-run={run}] img")
                        image.scroll_into_view_if_needed()
                        assert f"/status/jobs/{job_id}/thumbnails/{seed_key(seed)}.png" in image.get_attribute("src")
                        page.wait_for_function("image => image.complete", arg=image.element_handle())
                        assert image.evaluate("image => image.naturalWidth") == 320, (seed, run)
                frame = page.locator("iframe[data-preview]")
                assert frame.get_attribute("src").startswith(f"{replay_url}/harvest-{harvest_id}/")
                assert frame.get_attribute("src").endswith(f"/{seeds[0]}")
                assert frame.get_attribute("sandbox") == "allow-scripts allow-same-origin"
                # pywb's banner frame, in the sandbox, replays the page in its own frame
                frame.scroll_into_view_if_needed()
                replayed = page.frame_locator("iframe[data-preview]").frame_locator("#replay_iframe")
                assert "Havbrug" in replayed.locator("h1").first.inner_text()
                frame.screenshot(path=str(tmp_path / "job-preview.png"))
                answer = page.request.get(f"/status/jobs/{second.job_id}/thumbnails/{seed_key(seeds[0])}.png")
                assert answer.status == 200 and answer.headers["content-type"] == "image/png"
                assert answer.headers["x-content-type-options"] == "nosniff"
                assert page.request.get(f"/status/jobs/{second.job_id}/thumbnails/{'0' * 40}.png").status == 404
                page.locator("#thumbnails").scroll_into_view_if_needed()
                screenshot(page, tmp_path, "job-thumbnails")

                # the harvest's page: the newest run's pictures, the previous run's beside them
                page.goto("/history/harvests/pictured")
                pictures = page.locator("[data-thumbnails=run] figure")
                assert pictures.count() == 2
                images = page.locator("[data-thumbnails=run] img")
                for index in range(images.count()):
                    images.nth(index).scroll_into_view_if_needed()
                    page.wait_for_function("image => image.complete", arg=images.nth(index).element_handle())
                    assert images.nth(index).evaluate("image => image.naturalWidth") == 320
                assert page.locator("[data-thumbnails=run] img[data-run=previous]").count() == 2
                screenshot(page, tmp_path, "harvest-thumbnails")
            finally:
                context.close()
    finally:
        replay.send_signal(signal.SIGTERM)
        replay.wait(timeout=30)
    assert replay.returncode == 0, _tail(replay_log, 40)
