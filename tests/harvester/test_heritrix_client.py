"""The Heritrix 3 client (harvester.heritrix): status parsing, TLS choices and every error it must translate.

Most tests run against our engine process; the last runs against a real Heritrix 3 only when HERITRIX_URL
(with HERITRIX_USER and HERITRIX_PASSWORD) is set, and is skipped saying so otherwise.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from harvestdef.errors import HeritrixError
from harvester.heritrix import HeritrixClient
from harvester.heritrix3.model import parse_engine_status, parse_job_resource
from tests.engine.engine_process import USER, EngineProcess

HERITRIX_STATUS = b"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<job>
  <shortName>5_1700000000000</shortName>
  <crawlControllerState>RUNNING</crawlControllerState>
  <statusDescription>Active: RUNNING</statusDescription>
  <availableActions><value>pause</value><value>checkpoint</value><value>terminate</value></availableActions>
  <launchCount>1</launchCount>
  <isRunning>true</isRunning>
  <jobLogTail><value>2026-11-21T10:00:00.000Z INFO Job launched</value></jobLogTail>
  <uriTotalsReport><downloadedUriCount>120</downloadedUriCount><queuedUriCount>30</queuedUriCount>
    <totalUriCount>150</totalUriCount><futureUriCount>0</futureUriCount></uriTotalsReport>
  <rateReport><currentDocsPerSecond>2.5</currentDocsPerSecond><averageDocsPerSecond>1.75</averageDocsPerSecond>
    <currentKiBPerSec>40</currentKiBPerSec><averageKiBPerSec>33</averageKiBPerSec></rateReport>
  <sizeTotalsReport><dupByHash>1000</dupByHash><dupByHashCount>2</dupByHashCount><novel>50000</novel>
    <novelCount>118</novelCount><total>51000</total><totalCount>120</totalCount></sizeTotalsReport>
  <frontierReport><totalQueues>3</totalQueues><activeQueues>2</activeQueues>
    <lastReachedState>RUN</lastReachedState></frontierReport>
  <crawlLogTail/>
</job>
"""


@pytest.fixture
def engine_process(tmp_path: Path) -> Iterator[EngineProcess]:
    with EngineProcess(tmp_path / "jobs") as process:
        yield process


class _NotAnEngine(BaseHTTPRequestHandler):
    """A web server that is not Heritrix: a page for every GET, Basic auth demanded for job "basic"."""

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/engine/job/basic":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="x"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"<html><body>an ordinary web server</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


@pytest.fixture
def not_an_engine() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _NotAnEngine)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_status_with_an_encoding_declaration_parses_into_typed_reports() -> None:
    status = parse_job_resource(HERITRIX_STATUS)
    assert status.short_name == "5_1700000000000"
    assert status.status_description == "Active: RUNNING" and status.is_running and not status.is_finished
    assert status.available_actions == ("pause", "checkpoint", "terminate")
    assert status.crawl_exit_status is None and status.crawl_log_tail == ()
    assert status.uri_totals_report.downloaded_uri_count == 120
    assert status.rate_report.average_docs_per_second == 1.75 and status.rate_report.current_kib_per_sec == 40.0
    assert status.size_totals_report.dup_by_hash_count == 2 and status.size_totals_report.novel == 50000
    assert status.frontier_report.last_reached_state == "RUN" and status.frontier_report.active_queues == 2
    assert status.load_report is None


def test_a_document_with_the_wrong_root_is_refused() -> None:
    with pytest.raises(ValueError, match="expected <engine>"):
        parse_engine_status(HERITRIX_STATUS)


def test_connection_refused_names_the_url_and_the_action() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = HeritrixClient(f"https://127.0.0.1:{port}", USER, "pw", verify=False, timeout=5)
    with pytest.raises(HeritrixError, match=rf"build of job j1: connection to https://127.0.0.1:{port}/engine/job/j1 "
                                            "refused"):
        client.build("j1")


def test_self_signed_certificate_is_refused_unless_pinned_or_unchecked(engine_process: EngineProcess) -> None:
    strict = HeritrixClient(engine_process.base_url, USER, engine_process.password, timeout=10)
    with pytest.raises(HeritrixError, match="TLS with .* failed"):
        strict.engine_status()
    unchecked = HeritrixClient(engine_process.base_url, USER, engine_process.password, verify=False, timeout=10)
    assert unchecked.engine_status().available_actions
    assert engine_process.client().engine_status().available_actions


def test_a_server_that_is_not_an_engine_gives_a_clear_error(not_an_engine: str) -> None:
    client = HeritrixClient(not_an_engine, USER, "pw", timeout=5)
    with pytest.raises(HeritrixError, match="engine status: .*/engine answered something that is not a status "
                                            "document \\(text/html\\)"):
        client.engine_status()
    with pytest.raises(HeritrixError, match="status of job basic: .* asks for authentication other than Digest"):
        client.job_status("basic")


def test_wait_for_times_out_naming_the_last_status(engine_process: EngineProcess) -> None:
    client = engine_process.client()
    client.create_job("waiting")
    with pytest.raises(HeritrixError, match="last status 'Unbuilt'"):
        client.wait_for("waiting", lambda status: status.is_finished, timeout=0.5, poll_interval=0.1)
    ready = client.wait_for("waiting", lambda status: status.is_unbuilt, timeout=5)
    assert ready.short_name == "waiting"


def test_against_a_real_heritrix_engine() -> None:
    url = os.environ.get("HERITRIX_URL")
    if not url:
        pytest.skip("HERITRIX_URL is not set (with HERITRIX_USER, HERITRIX_PASSWORD): no real Heritrix 3 to test")
    client = HeritrixClient(url, os.environ.get("HERITRIX_USER", "admin"), os.environ.get("HERITRIX_PASSWORD", ""),
                            verify=False, timeout=30)
    engine = client.engine_status()
    assert "create" in engine.available_actions
    name = f"harvestsuite-client-test-{os.getpid()}"
    client.create_job(name)
    status = client.build(name)
    assert status.status_description in ("Ready", "Unbuilt") and status.short_name == name
    client.teardown(name)
