"""Seed thumbnails on the job page without a crawl: the note of a job the QA worker skipped, a picture served
from the archive store as a PNG (and nothing else under its URL), and the preview frame: on the replay
service's origin when one is configured, a line saying why when not. tests/harvester/test_thumbnails_run.py
shows real pictures in a browser."""

from __future__ import annotations

import re
import struct
import zlib
from datetime import UTC, datetime

from flask import Flask

from harvestdef.model.status import JobStatus
from harvestdef.repositories.thumbnails import ThumbnailRepository, ThumbnailState, seed_key, thumbnail_name
from harvestdef.settings import load_settings
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_jobs import seed
from webui import create_app

REPLAY = "http://replay.example.org:8090"
FAR = datetime(2100, 1, 1, tzinfo=UTC)


def png(width: int, height: int) -> bytes:
    """A white PNG of that size."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\xff" * (3 * width) for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def text_of(client, path: str) -> str:  # noqa: ANN001
    return re.sub(r"\s+", " ", client.get(path).get_data(as_text=True))


def test_a_skipped_job_shows_its_note_and_no_preview_without_a_replay_service(login, webui_engine):
    seed(webui_engine, [JobStatus.DONE])
    with webui_engine.begin() as conn:
        repository = ThumbnailRepository(conn)
        (job,) = repository.jobs_waiting(10, FAR, retry_skipped=True)
        repository.finish(job, ThumbnailState.SKIPPED, "no chromium at /usr/bin/chromium (harvestsuite.qa.chromium)")
    page = text_of(login("archivist"), "/status/jobs/1")
    assert ('data-thumbnails="none">No thumbnails: no chromium at /usr/bin/chromium (harvestsuite.qa.chromium).'
            in page)
    assert "No preview: no replay service is configured" in page and "<iframe" not in page
    api = login("archivist").get("/api/v1/jobs/1/thumbnails").get_json()
    assert api == {"job_id": 1, "state": "SKIPPED", "seeds": [],
                   "note": "no chromium at /usr/bin/chromium (harvestsuite.qa.chromium)"}


def test_the_thumbnails_of_a_job_the_qa_worker_has_not_reached_and_of_no_job(login, webui_engine):
    seed(webui_engine, [JobStatus.DONE])
    client = login("archivist")
    assert client.get("/api/v1/jobs/1/thumbnails").get_json() == {"job_id": 1, "state": None, "note": None,
                                                                   "seeds": []}
    missing = client.get("/api/v1/jobs/99/thumbnails")
    assert missing.status_code == 404 and "99" in missing.get_json()["error"]["message"]


def test_a_picture_is_served_as_png_and_the_preview_frames_the_replay_services_origin(webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    seeds = ("http://www.alpha.dk", "https://beta.dk")
    picture = png(320, 200)
    with webui_engine.begin() as conn:
        repository = ThumbnailRepository(conn)
        for job in repository.jobs_waiting(10, FAR, retry_skipped=True):
            repository.record_seed(job, seeds[0], name=thumbnail_name(seeds[0]),
                                   capture_time=f"2026030{job.job_id}100000")
            repository.record_seed(job, seeds[1], note="not captured by this job")
            repository.finish(job, ThumbnailState.MADE)
            stored = tmp_path / "archive" / "1" / str(job.job_id) / thumbnail_name(seeds[0])
            stored.parent.mkdir(parents=True)
            stored.write_bytes(picture)
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive"),
                                                    "harvestsuite.replay.url": REPLAY})
    app: Flask = create_app(settings, webui_engine, {"TESTING": True})
    client = app.test_client()
    client.post("/login", data={"name": "archivist", "password": PASSWORD, "csrf_token": csrf_of(client)})

    answer = client.get(f"/status/jobs/2/thumbnails/{seed_key(seeds[0])}.png")
    assert answer.status_code == 200 and answer.mimetype == "image/png" and answer.data == picture
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    for wrong in (f"/status/jobs/2/thumbnails/{seed_key(seeds[1])}.png",
                  f"/status/jobs/9/thumbnails/{seed_key(seeds[0])}.png",
                  "/status/jobs/2/thumbnails/..%2FSHA256SUMS.png", "/status/jobs/2/thumbnails/ABC.png"):
        assert client.get(wrong).status_code == 404, wrong

    page = text_of(client, "/status/jobs/2")
    assert f'src="/status/jobs/2/thumbnails/{seed_key(seeds[0])}.png"' in page
    assert f'src="/status/jobs/1/thumbnails/{seed_key(seeds[0])}.png"' in page  # the previous run's, beside
    assert "not captured by this job" in page
    frame = re.search(r'<iframe class="preview" src="([^"]+)"[^>]*sandbox="([^"]+)"', page)
    assert frame is not None, page
    assert frame.group(1) == f"{REPLAY}/harvest-1/20260302100000/{seeds[0]}"
    assert frame.group(2) == "allow-scripts allow-same-origin"

    api = client.get("/api/v1/jobs/2/thumbnails").get_json()
    assert api["state"] == "MADE" and [entry["seed"] for entry in api["seeds"]] == list(seeds)
    pictured, uncaptured = api["seeds"]
    assert pictured["thumbnail"] == {"job_id": 2, "harvest_num": 2, "has_image": True, "note": None,
                                     "capture_time": "20260302100000",
                                     "image_url": f"/status/jobs/2/thumbnails/{seed_key(seeds[0])}.png"}
    assert pictured["previous"]["job_id"] == 1 and pictured["previous"]["image_url"].startswith("/status/jobs/1/")
    assert uncaptured["thumbnail"]["image_url"] is None
    assert uncaptured["thumbnail"]["note"] == "not captured by this job"
    assert client.get(api["seeds"][0]["thumbnail"]["image_url"]).data == picture

    harvest = text_of(client, "/history/harvests/daily")
    assert "Seeds as replayed in run 2" in harvest
    assert f'data-run="previous" src="/status/jobs/1/thumbnails/{seed_key(seeds[0])}.png"' in harvest
