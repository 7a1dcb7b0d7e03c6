"""The QA worker's camera (scheduler/camera.py) with Debian's chromium: it loads from the replay service only,
and a replayed seed that navigates away by itself is pictured from its own capture, with a note saying so,
which the worker records beside the picture (SQLite and PostgreSQL) and the job page shows.

The replay service here is a local server that answers what the worker and the camera ask pywb for, in
pywb's shape: its CDX API (``/<collection>/cdx?url=…&output=json``), the framed replay page
(``/<collection>/<timestamp>/<url>``, a banner above ``#replay_iframe``, whose script points the frame at the
capture) and the capture without its frame (``<timestamp>mp_/<url>``). A second local server stands for an
address inside the network, and counts every request that reaches it. tests/harvester/test_thumbnails_run.py
pictures real pywb replays.
"""

from __future__ import annotations

import json
import logging
import struct
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask

from harvestdef.archive import ArchiveStore
from harvestdef.model.status import JobStatus
from harvestdef.repositories.thumbnails import ThumbnailRepository
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import load_settings
from scheduler.camera import Camera
from scheduler.thumbnails import ThumbnailWorker
from tests.scheduler.test_thumbnail_worker import SEEDS, ended
from tests.webui.browser import CHROMIUM, require_browser
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_jobs import seed
from webui import create_app

TIMESTAMP = "20260301100000"
WARC = "1-1-20260301100000-00000.warc.gz"
GREEN, RED = (0, 170, 0), (204, 0, 0)


def capture_page(inner: str, colour: tuple[int, int, int]) -> str:
    return f"<!DOCTYPE html><html><body style='background: rgb{colour}'><h1>archived</h1>{inner}</body></html>"


def captures(inside: str) -> dict[str, str]:
    """The stand-in replay service's captures by URL; ``inside`` is the internal server's base URL."""
    return {
        # an archived page whose scripts, images, style sheet and frame name an internal address and the live web
        "http://www.leaky.dk/": capture_page(
            f"<img src='{inside}/image.png'><link rel='stylesheet' href='{inside}/style.css'>"
            f"<iframe src='{inside}/frame.html'></iframe>"
            f"<script>fetch('{inside}/fetch').catch(() => null); new Image().src = 'http://www.example.com/live.png';"
            f"navigator.sendBeacon('{inside}/beacon', 'x');</script>", GREEN),
        # an archived page whose script takes the browser to another page as it loads
        "http://www.moving.dk/": capture_page(
            f"<script>location.href = '/harvest-1/{TIMESTAMP}mp_/http://www.elsewhere.dk/';</script>", GREEN),
        "http://www.elsewhere.dk/": capture_page("", RED),
        "http://www.quiet.dk/": capture_page("", GREEN),
        # the seeds of tests/webui/test_jobs.py's jobs, for the worker
        SEEDS[0]: capture_page(f"<script>location.href = '/harvest-1/{TIMESTAMP}mp_/http://www.elsewhere.dk/';"
                               "</script>", GREEN),
        SEEDS[1]: capture_page("", GREEN),
    }


class _Server:
    """A ThreadingHTTPServer on a free loopback port answering with ``answer(path)``, counting the paths."""

    def __init__(self, answer) -> None:  # noqa: ANN001
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                server.paths.append(self.path)
                status, body = answer(self.path)
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET  # noqa: N815 - a beacon is a POST

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()


@pytest.fixture
def servers() -> Iterator[tuple[_Server, _Server]]:
    """(the replay service, the internal address)."""
    with _Server(lambda path: (200, "internal")) as inside:
        pages = captures(inside.url)

        def replay(path: str) -> tuple[int, str]:
            if path.startswith("/harvest-1/cdx?"):
                url = parse_qs(urlsplit(path).query)["url"][0]
                return (200, json.dumps({"timestamp": TIMESTAMP, "url": url, "status": "200",
                                         "filename": WARC}) + "\n") if url in pages else (404, "")
            framed = f"/harvest-1/{TIMESTAMP}/"
            frameless = f"/harvest-1/{TIMESTAMP}mp_/"
            if path.startswith(framed) and path[len(framed):] in pages:
                url = path[len(framed):]
                return 200, ("<!DOCTYPE html><html><body style='margin: 0'><div style='height: 40px'>banner</div>"
                             "<iframe id='replay_iframe' style='width: 1280px; height: 800px; border: 0'></iframe>"
                             f"<script>document.getElementById('replay_iframe').src = '{frameless}{url}';"
                             "</script></body></html>")
            if path.startswith(frameless) and path[len(frameless):] in pages:
                return 200, pages[path[len(frameless):]]
            return 404, "not archived"

        with _Server(replay) as service:
            yield service, inside


def top_left_pixel(png: bytes) -> tuple[int, int, int]:
    """The first pixel of a PNG: whatever a row's filter, the first pixel of the first row is stored as it is
    (every filter's neighbours there are zero), so no image library is needed."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, colour_type = 8, b"", None
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        data = png[at + 8:at + 8 + length]
        if kind == b"IHDR":
            assert data[8] == 8, "8 bits per channel"
            colour_type = data[9]
        elif kind == b"IDAT":
            idat += data
        at += 12 + length
    assert colour_type in (2, 6), f"an RGB or RGBA PNG, not colour type {colour_type}"
    raw = zlib.decompressobj().decompress(idat, 16)
    return raw[1], raw[2], raw[3]


def camera() -> Camera:
    require_browser()
    return Camera(Path(CHROMIUM), 320, 15.0)


def test_the_camera_loads_nothing_but_the_replay_service(servers, caplog):
    service, inside = servers
    caplog.set_level(logging.INFO, logger="harvestsuite.qa")
    with camera() as shooting:
        picture = shooting.picture(f"{service.url}/harvest-1/{TIMESTAMP}/http://www.leaky.dk/")
    assert picture.png is not None and picture.note is None
    assert top_left_pixel(picture.png) == GREEN
    assert inside.paths == [], "the replayed page's requests reached an internal address"
    assert f"/harvest-1/{TIMESTAMP}mp_/http://www.leaky.dk/" in service.paths
    aborted = [record.getMessage() for record in caplog.records if "were aborted" in record.getMessage()]
    assert len(aborted) == 1 and f"than the replay service {service.url}" in aborted[0], aborted
    assert int(aborted[0].split()[1]) >= 5, aborted  # image, style sheet, frame, fetch, beacon, the live image


def test_a_seed_that_navigates_away_is_pictured_from_its_own_capture_with_a_note(servers):
    service, _ = servers
    with camera() as shooting:
        moving = shooting.picture(f"{service.url}/harvest-1/{TIMESTAMP}/http://www.moving.dk/")
        elsewhere = shooting.picture(f"{service.url}/harvest-1/{TIMESTAMP}/http://www.elsewhere.dk/")
        quiet = shooting.picture(f"{service.url}/harvest-1/{TIMESTAMP}/http://www.quiet.dk/")
    assert top_left_pixel(elsewhere.png) == RED and elsewhere.note is None  # the page it went to looks otherwise
    assert quiet.note is None and top_left_pixel(quiet.png) == GREEN  # a page that stays gets no note
    assert moving.png is not None and top_left_pixel(moving.png) == GREEN, "the picture is of another page"
    assert moving.note == ("the page navigated away by itself, to http://www.elsewhere.dk/: the picture is of the "
                           "seed's own capture, without its scripts")
    assert len(moving.png) > 0 and struct.unpack(">II", moving.png[16:24]) == (320, 200)


def test_the_worker_records_the_note_beside_the_picture_and_the_job_page_shows_it(servers, engine, tmp_path):
    service, inside = servers
    seed(engine, [JobStatus.DONE])
    ended(engine, 1, 120)
    store = ArchiveStore(tmp_path / "archive")
    (store.job_path(1, 1)).mkdir(parents=True)
    (store.job_path(1, 1) / WARC).write_bytes(b"")  # the capture's file, as the CDX API names it
    worker = ThumbnailWorker(engine, store, camera(), service.url, interval=0.1, delay=60, max_seeds=-1,
                             jobs_per_pass=10, lookup_timeout=5)
    result = worker.run_once()
    assert (result.jobs_made, result.thumbnails) == (1, 2), result
    with engine.connect() as conn:
        rows = ThumbnailRepository(conn).seeds_done(1)
    moved, stayed = rows[SEEDS[0]], rows[SEEDS[1]]
    assert moved.name is not None and stayed.name is not None
    assert moved.note == ("the page navigated away by itself, to http://www.elsewhere.dk/: the picture is of the "
                          "seed's own capture, without its scripts")
    assert stayed.note is None
    assert top_left_pixel((store.job_path(1, 1) / moved.name).read_bytes()) == GREEN
    assert inside.paths == []

    with engine.begin() as conn:
        UserRepository(conn).create("archivist", "archivist", password=PASSWORD)
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive"),
                                                    "harvestsuite.replay.url": service.url})
    app: Flask = create_app(settings, engine, {"TESTING": True})
    client = app.test_client()
    client.post("/login", data={"name": "archivist", "password": PASSWORD, "csrf_token": csrf_of(client)})
    page = client.get("/status/jobs/1").get_data(as_text=True)
    notes = [part.split("</span>")[0] for part in page.split("data-thumbnail-note>")[1:]]
    assert notes == ["the page navigated away by itself, to http://www.elsewhere.dk/: the picture is of the "
                     "seed&#39;s own capture, without its scripts"]
