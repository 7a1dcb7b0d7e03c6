"""Bulk imports of domains on SQLite beside other writers: a 10 MB file imported with ``harvestsuite domains
import`` (interrupted, then run again) and a file uploaded through the web UI, while the demo (scheduler,
harvest controller and web UI on the same database) runs and harvests; and the sentence an import stops
with when the write lock cannot be had in time."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from sqlalchemy import func, select, text

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import load_settings
from tests.harvestdef.test_bulkimport import as_from_a_terminal, interrupt_mid_import
from tests.harvestdef.test_demo import DemoProcess, free_port, log_in
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app

# 160,000 domains: many batches, each one waiting for the demo's writers; the import's speed at 2 million
# lines is bench/import_domains.py's to measure, not this test's
FILE_BYTES = 10 * 1024 * 1024


def write_domain_file(path: Path, size: int, prefix: str) -> int:
    """About ``size`` bytes of URLs, one new registered domain per line; returns the number of lines."""
    lines = 0
    with open(path, "w", encoding="utf-8") as out:
        written = 0
        while written < size:
            block = "".join(f"https://www.{prefix}-{number:07d}.dk/samlinger/side/{number % 97}.html?sprog=da\n"
                            for number in range(lines, lines + 10_000))
            out.write(block)
            written += len(block)
            lines += 10_000
    return lines


def harvestsuite(*args: str) -> list[str]:
    return [sys.executable, "-m", "harvestdef", *args]


def count_domains(engine, prefix: str) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(s.domains).where(s.domains.c.name.like(f"{prefix}-%")))


def complete_domains(engine, prefix: str) -> int:
    """Domains of ``prefix`` with their default configuration, its seed list and the link between them."""
    with engine.connect() as conn:
        return conn.scalar(text(
            "SELECT count(*) FROM domains d JOIN configurations c ON c.config_id = d.defaultconfig "
            "JOIN config_seedlists x ON x.config_id = c.config_id JOIN seedlists l ON l.seedlist_id = x.seedlist_id "
            "WHERE d.name LIKE :pattern"), {"pattern": f"{prefix}-%"})


def upload(opener: urllib.request.OpenerDirector, port: int, path: Path) -> tuple[int, str]:
    """POST the file to Create domains as a browser's form would (multipart/form-data)."""
    page = opener.open(f"http://127.0.0.1:{port}/definitions/domains/new", timeout=30).read().decode()
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    boundary = uuid.uuid4().hex
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n{token}\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path.name}\"\r\n"
            f"Content-Type: text/plain\r\n\r\n").encode()
    body = head + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/definitions/domains/new", data=body,
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with opener.open(request, timeout=300) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_an_import_and_an_upload_complete_beside_the_running_demo(tmp_path):
    directory, port = tmp_path / "demo", free_port()
    big, small = tmp_path / "domains.txt", tmp_path / "upload.txt"
    # without replay and its QA worker: their Chromium is no writer of the harvest database, only load
    demo = DemoProcess(directory, port, tmp_path / "demo.log", "--pywb-venv", str(tmp_path / "no-pywb"))
    try:
        password = demo.wait_for(r"log in as admin, password (\S+)", 60).group(1)
        lines = write_domain_file(big, FILE_BYTES, "bibliotek")
        uploaded_lines = write_domain_file(small, 1024 * 1024, "upload")
        config = str(directory / "settings.toml")
        engine = open_engine(load_settings(config, environ={}).database.url)
        # the demo is writing: its first job is being crawled and reported
        demo.wait_for(r"job \d+ \(.*\) crawling", 90)
        started, told_before = time.monotonic(), len(demo.text())

        # 1. an import interrupted once a few batches are in
        first = subprocess.Popen(as_from_a_terminal(harvestsuite("--config", config, "domains", "import", str(big))),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stderr = interrupt_mid_import(first, engine, lambda: count_domains(engine, "bibliotek") >= 20_000)
        assert first.returncode == 130 and "run the same import again" in stderr, stderr
        interrupted = count_domains(engine, "bibliotek")
        assert 0 < interrupted < lines
        assert complete_domains(engine, "bibliotek") == interrupted

        # 2. the rerun completes what is left, while a curator uploads a file through the demo's web UI
        answers: list[tuple[int, str]] = []
        uploader = threading.Thread(target=lambda: answers.append(upload(log_in(port, password), port, small)))
        uploader.start()
        rerun = subprocess.run(harvestsuite("--config", config, "domains", "import", str(big)),
                               capture_output=True, text=True, timeout=600)
        uploader.join(timeout=300)
        seconds = time.monotonic() - started
        assert rerun.returncode == 0, rerun.stderr
        assert f"domains created: {lines - interrupted}, already present: {interrupted}" in rerun.stdout
        status, page = answers[0]
        assert status == 200, page
        assert f"domains created: {uploaded_lines}, already present: 0" in page

        assert count_domains(engine, "bibliotek") == complete_domains(engine, "bibliotek") == lines
        assert count_domains(engine, "upload") == complete_domains(engine, "upload") == uploaded_lines
        # the demo kept harvesting: a job finished after the imports began, nothing failed on a locked database
        deadline = time.monotonic() + 150
        while not re.search(r"job \d+ \(.*\) DONE", demo.text()[told_before:]) and time.monotonic() < deadline:
            assert demo.process.poll() is None, demo.text()
            time.sleep(0.5)
        assert re.search(r"job \d+ \(.*\) DONE", demo.text()[told_before:]), demo.text()
        assert demo.process.poll() is None and "locked" not in demo.text(), demo.text()
        engine.dispose()
        print(f"imported {lines} lines ({FILE_BYTES >> 20} MB) and uploaded {uploaded_lines} beside the demo "
              f"in {seconds:.1f} s")
        assert demo.interrupt() == 0
    finally:
        demo.kill()


# ---------------------------------------------------------------------------------------------- lock timeout
def hold_write_lock(database: Path) -> sqlite3.Connection:
    """Another writer in the middle of a transaction: it holds SQLite's write lock until rolled back."""
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE schedules SET comments = comments")
    return holder


def test_a_lock_not_had_in_time_stops_the_import_with_a_sentence(tmp_path):
    database = tmp_path / "harvest.db"
    engine = open_engine(f"sqlite:///{database}")
    init_database(engine)
    with engine.begin() as conn:
        UserRepository(conn).create("curator", "curator", password=PASSWORD)
    names = tmp_path / "names.txt"
    names.write_text("kb.dk\nexample.dk\n", encoding="utf-8")
    settings = load_settings(environ={}, overrides={
        "harvestsuite.database.url": f"sqlite:///{database}", "harvestsuite.database.importLockTimeout": 1,
        "harvestsuite.webui.secretKey": "test-secret", "harvestsuite.archive.root": str(tmp_path / "archive")})
    client = create_app(settings, engine, {"TESTING": True}).test_client()
    token = csrf_of(client)
    client.post("/login", data={"name": "curator", "password": PASSWORD, "csrf_token": token})
    # Each import below gives up after importLockTimeout (1 s); without it, it would wait SQLite's busy timeout
    # of the engine (30 s, the setting's default too): under 30 s each proves the setting was what it waited.
    holder = hold_write_lock(database)
    try:
        # the command line
        started = time.monotonic()
        result = subprocess.run(harvestsuite("--set", f"harvestsuite.database.url=sqlite:///{database}",
                                             "--set", "harvestsuite.database.importLockTimeout=1",
                                             "domains", "import", str(names)), capture_output=True, text=True,
                                timeout=60)
        assert time.monotonic() - started < 30, "waited as long as without the setting"
        assert result.returncode == 2
        assert (f"the import of {names} stopped: the harvest database stayed locked by other writers for 1 s. "
                "The 0 batches committed before (0 domains created) stay stored; import the same file again "
                "to complete it") in result.stderr, result.stderr
        assert "SQL" not in result.stderr and "INSERT" not in result.stderr
        # the web UI's upload: the upload's own name, no temporary path, no SQL
        form = {"csrf_token": csrf_of(client, "/definitions/domains/new"), "file": (names.open("rb"), "mine.txt")}
        started = time.monotonic()
        page = client.post("/definitions/domains/new", data=form, content_type="multipart/form-data")
        assert time.monotonic() - started < 30, "waited as long as without the setting"
        message = page.get_data(as_text=True)
        assert page.status_code >= 400
        assert "the import of mine.txt stopped: the harvest database stayed locked by other writers for 1 s" in message
        assert "/tmp" not in message and "SQL" not in message and "BEGIN" not in message
    finally:
        holder.rollback()
        holder.close()
    # the lock is free again: the same import completes
    result = subprocess.run(harvestsuite("--set", f"harvestsuite.database.url=sqlite:///{database}", "domains",
                                         "import", str(names)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "domains created: 2" in result.stdout, result.stderr
    engine.dispose()
