"""WARCs of the engine process that tools nobody here wrote accept: `warcio check` and cdxj-indexer on a crawl
of the local test site with Heritrix's HTTP/1.0 default; with HTTP/1.1 on, the only records warcio's
checker refuses are chunked responses whose payload digest is right over the de-chunked body (the WARC 1.1
reading, warcio #74). Also Heritrix's warcinfo fields, ``~PORT`` file names, no ``dns:`` lookup for an IP
host, and one queue per host:port under the host-based queue policies."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import socket
import subprocess
import sys
from base64 import b32encode
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.heritrix import HeritrixClient
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import TestSite

HOST = "www.kulturarv.dk"
CRAWL_TIMEOUT = 120.0
BIN = Path(sys.executable).parent


@pytest.fixture
def engine_process(tmp_path: Path, test_site: TestSite) -> Iterator[EngineProcess]:
    hosts_file = test_site.write_hosts_file(tmp_path / "hosts.txt")
    with EngineProcess(tmp_path / "jobs", hosts_file=hosts_file) as process:
        yield process


def run_crawl(process: EngineProcess, name: str, seeds: list[str], cxml: str) -> Path:
    """Create, build, launch (and unpause) a job through the REST API; the finished launch directory."""
    client: HeritrixClient = process.client()
    write_job(process.jobs_dir / name, seeds, cxml=cxml)
    client.rescan()
    assert client.build(name).status_description == "Ready"
    launched = client.launch(name)
    if launched.crawl_controller_state == "PAUSED" or "unpause" in launched.available_actions:
        client.unpause(name)
    finished = client.wait_for(name, lambda status: status.is_finished, timeout=CRAWL_TIMEOUT)
    assert finished.crawl_exit_status == "FINISHED", finished.job_log_tail
    return process.jobs_dir / name / "latest"


def warc_files(launch_dir: Path) -> list[Path]:
    return sorted((launch_dir / "warcs").glob("*.warc.gz"))


def warcio_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "warcio"), "check", "-v", str(path)], capture_output=True, text=True,
                          timeout=60)


def sha1(data: bytes) -> str:
    return "sha1:" + b32encode(hashlib.sha1(data).digest()).decode("ascii")


def dechunk(body: bytes) -> bytes:
    out, rest = b"", body
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return out
        out, rest = out + rest[:size], rest[size + 2:]


def test_warcs_of_a_default_crawl_pass_warcio_check_and_index(engine_process: EngineProcess,
                                                             test_site: TestSite) -> None:
    launch = run_crawl(engine_process, "warccheck", [test_site.url(HOST, "/")], crawler_beans(max_hops=3))
    files = warc_files(launch)
    assert files
    port = urlsplit(engine_process.base_url).port
    for path in files:
        assert path.name.endswith(f"~{port}.warc.gz"), path.name  # Heritrix: ...~hostname~APIPORT
        checked = warcio_check(path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    requests = 0
    with open(files[0], "rb") as handle:
        for record in ArchiveIterator(handle):
            if record.rec_type == "request":
                requests += 1
                assert record.rec_headers.get_header("WARC-Payload-Digest") == sha1(b"")
    assert requests > 5
    indexed = subprocess.run([str(BIN / "cdxj-indexer"), *map(str, files)], capture_output=True, text=True,
                             timeout=60)
    assert indexed.returncode == 0, indexed.stderr
    lines = [line for line in indexed.stdout.splitlines() if line.strip()]
    responses = [json.loads(line.split(" ", 2)[2]) for line in lines]
    urls = {entry["url"] for entry in responses}
    assert test_site.url(HOST, "/") in urls and test_site.url(HOST, "/page/1") in urls


def test_warcinfo_has_heritrix_fields(engine_process: EngineProcess, test_site: TestSite) -> None:
    cxml = crawler_beans(max_hops=0).replace(
        '<property name="jobName" value="enginetest"/>',
        '<property name="jobName" value="enginetest"/><property name="description" value="a test crawl"/>'
        '<property name="operatorFrom" value="crawl@netarkivet.example"/>')
    launch = run_crawl(engine_process, "warcinfo", [test_site.url(HOST, "/")], cxml)
    with open(warc_files(launch)[0], "rb") as handle:
        record = next(iter(ArchiveIterator(handle)))
        assert record.rec_type == "warcinfo"
        text = record.content_stream().read().decode("utf-8")
    fields = dict(line.split(": ", 1) for line in text.strip().splitlines())
    for label in ("software", "ip", "hostname", "format", "conformsTo", "isPartOf", "description", "robots",
                  "http-header-user-agent", "http-header-from"):
        assert fields.get(label), (label, text)
    assert fields["isPartOf"] == "enginetest" and fields["robots"] == "obey"
    assert fields["description"] == "a test crawl" and fields["http-header-from"] == "crawl@netarkivet.example"
    assert fields["http-header-user-agent"].endswith("+http://netarkivet.example/)")
    # The machine's own address: only an address of this machine can be bound to.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((str(ipaddress.ip_address(fields["ip"])), 0))


def test_with_http11_only_chunked_records_fail_warcio_and_their_digest_is_dechunked(
        engine_process: EngineProcess, test_site: TestSite) -> None:
    cxml = crawler_beans(max_hops=3).replace(
        '<property name="soTimeoutMs" value="2000"/>',
        '<property name="soTimeoutMs" value="2000"/><property name="useHTTP11" value="true"/>'
        '<property name="sendConnectionClose" value="false"/><property name="acceptCompression" value="true"/>')
    launch = run_crawl(engine_process, "http11", [test_site.url(HOST, "/")], cxml)
    failing: set[str] = set()
    for path in warc_files(launch):
        checked = warcio_check(path)
        # warcio -v prints each record's offset, id and type, then its problems indented beneath.
        current = None
        for line in checked.stdout.splitlines():
            match = re.match(r"\s*offset \d+ WARC-Record-ID (<[^>]+>) (\S+)", line)
            if match:
                current = match.group(1)
            elif "payload digest failed" in line and current:
                failing.add(current)
        with open(path, "rb") as handle:
            targets = {record.rec_headers.get_header("WARC-Record-ID"): record.rec_headers.get_header(
                "WARC-Target-URI") for record in ArchiveIterator(handle, no_record_parse=True)}
        failing = {targets.get(record_id, record_id) for record_id in failing}
    chunked = test_site.url(HOST, "/chunked.html")
    assert failing == {chunked}
    for path in warc_files(launch):
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle, no_record_parse=True):
                if record.rec_type == "response" and record.rec_headers.get_header("WARC-Target-URI") == chunked:
                    block = record.raw_stream.read()
                    assert b"Transfer-Encoding: chunked" in block
                    body = dechunk(block.split(b"\r\n\r\n", 1)[1])
                    assert record.rec_headers.get_header("WARC-Payload-Digest") == sha1(body)


def test_an_ip_host_has_no_dns_lookup(tmp_path: Path, test_site: TestSite) -> None:
    seed = f"http://127.0.0.1:{test_site.port}/"
    # loopback is refused unless the operator allows it (harvestdef/destinations.py): this engine's operator does
    with EngineProcess(tmp_path / "iphost-jobs", allow_destinations="127.0.0.0/8") as process:
        launch = run_crawl(process, "iphost", [seed], crawler_beans(max_hops=0))
    lines = (launch / "logs" / "crawl.log").read_text(encoding="utf-8").splitlines()
    assert not [line for line in lines if " dns:" in line]
    assert [line for line in lines if line.split()[3] == seed and line.split()[1] == "200"]


def test_the_engine_refuses_a_loopback_seed_unless_the_setting_allows_it(engine_process: EngineProcess,
                                                                         test_site: TestSite) -> None:
    seed = f"http://127.0.0.1:{test_site.port}/"
    launch = run_crawl(engine_process, "loopback", [seed], crawler_beans(max_hops=0))
    lines = [line.split() for line in (launch / "logs" / "crawl.log").read_text(encoding="utf-8").splitlines()]
    assert [fields[1] for fields in lines if fields[3] == seed] == ["-5005"]
    assert not test_site.requests  # not even its robots.txt: never a connection
    job_log = (launch.parent / "job.log").read_text(encoding="utf-8")
    assert "127.0.0.1 is a loopback address" in job_log and "allowDestinations" in job_log


@pytest.mark.parametrize(("policy", "key"), [
    ("HostnameQueueAssignmentPolicy", "www.kulturarv.dk#{port}"),
    ("SurtAuthorityQueueAssignmentPolicy", "dk,kulturarv,www,#{port}"),
])
def test_host_port_pairs_get_separate_queues(engine_process: EngineProcess, test_site: TestSite, policy: str,
                                             key: str) -> None:
    with TestSite() as second_site:
        seeds = [test_site.url(HOST, "/"), second_site.url(HOST, "/")]
        bean = (f'<bean id="queueAssignmentPolicy" '
                f'class="org.archive.crawler.frontier.{policy}"/>')
        name = f"queues{policy[:4]}"
        client = engine_process.client()
        write_job(engine_process.jobs_dir / name, seeds, cxml=crawler_beans(max_hops=0, extra_beans=bean))
        client.rescan()
        client.build(name)
        client.launch(name)
        client.wait_for(name, lambda status: status.crawl_controller_state == "PAUSED", timeout=30, poll_interval=0.1)
        # Paused at start, both seeds wait in their queues: the live frontier report names them.
        live = client.job_report(name, "FrontierSummaryReport")
        for port in (test_site.port, second_site.port):
            assert f"Queue {key.format(port=port)} (p3)" in live, live
        client.unpause(name)
        client.wait_for(name, lambda status: status.is_finished, timeout=60)
        report = (engine_process.jobs_dir / name / "latest" / "reports" / "frontier-summary-report.txt").read_text()
        assert " All class queues map size: 2\n" in report
