"""The real engine process against what the attack test did to it: a br compression bomb keeps its memory
bounded, and a kill -9 mid-crawl leaves WARCs and a crawl.log that post-processing brings into agreement,
so the objects counted are the captures archived."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.postprocess import build_domain_report, close_open_warc
from harvester.postprocess.reconcile import RECOVERED_ANNOTATION, UNARCHIVED_LOG, reconcile_crawl_log
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import TestSite, br_bomb, wait_for
from tests.engine.test_process_large import _memory_kib
from tests.engine.test_process_warc import HOST, run_crawl, sha1, warc_files, warcio_check

# The bomb decodes to 1 GiB; link extraction reads 16 MiB of it, in 256 KiB pieces. Before the bound, the
# engine's peak grew by 2 GiB.
MAX_PEAK_GROWTH = 48 * 1024 * 1024
CAPTURE_TYPES = ("response", "revisit")


@pytest.fixture
def engine_process(tmp_path: Path, test_site: TestSite) -> Iterator[EngineProcess]:
    with EngineProcess(tmp_path / "jobs", hosts_file=test_site.write_hosts_file(tmp_path / "hosts.txt")) as process:
        yield process


def test_a_br_bomb_is_crawled_in_bounded_memory(engine_process: EngineProcess, test_site: TestSite) -> None:
    assert len(br_bomb()) < 1000
    pid = engine_process.pid
    run_crawl(engine_process, "warmup", [test_site.url(HOST, "/robots.txt")], crawler_beans(max_hops=0))
    peak_before = _memory_kib(pid, "VmHWM")
    url = test_site.url(HOST, "/br-bomb.html")
    launch = run_crawl(engine_process, "bomb", [url], crawler_beans(max_hops=0))
    growth = (_memory_kib(pid, "VmHWM") - peak_before) * 1024
    assert growth < MAX_PEAK_GROWTH, f"peak RSS grew {growth} bytes for an {len(br_bomb())}-byte br bomb"
    line = next(line.split() for line in (launch / "logs" / "crawl.log").read_text().splitlines()
                if line.split()[3] == url)
    assert line[1:3] == ["200", str(len(br_bomb()))]
    # Recorded as received, all 800-odd bytes. (``warcio check`` is no judge here: it decodes br payloads with
    # warcio's own br decoder, which fails on brotli 1.2, see harvester/postprocess/cdxj.py.)
    [warc] = warc_files(launch)
    assert (url, sha1(br_bomb())) in _captures([warc])


def _captures(warcs: list[Path]) -> list[tuple[str, str]]:
    found = []
    for path in warcs:
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle, no_record_parse=True):
                if record.rec_type in CAPTURE_TYPES:
                    found.append((record.rec_headers.get_header("WARC-Target-URI"),
                                  record.rec_headers.get_header("WARC-Payload-Digest")))
    return found


def _objects(launch: Path) -> int:
    report = build_domain_report([launch / "logs" / "crawl.log"], None,
                                 {"kulturarv.dk": "defaultconfig", "bibliotek.no": "defaultconfig",
                                  "økologi.dk": "defaultconfig"}).report
    return sum(row.objects for row in report.domains)


def _close_and_reconcile(launch: Path) -> tuple[list[Path], object]:
    for path in sorted((launch / "warcs").glob("*.open")):
        assert close_open_warc(path) is not None
    warcs = warc_files(launch)
    return warcs, reconcile_crawl_log(launch / "logs" / "crawl.log", warcs)


def _crawl_and_kill(engine_process: EngineProcess, test_site: TestSite, lines_before_kill: int) -> Path:
    """Crawl the test site's endless calendar trap (so the crawl is mid-way whenever it is killed), kill -9
    the engine once crawl.log has ``lines_before_kill`` lines; the launch directory it left."""
    cxml = crawler_beans(max_hops=500, min_delay_ms=20, reject_regex="^nothing-is-rejected$")
    name = f"killed-at-{lines_before_kill}"
    client = engine_process.client()
    write_job(engine_process.jobs_dir / name, [test_site.url(HOST, "/trap/1/"), test_site.url(HOST, "/")], cxml=cxml)
    client.rescan()
    client.build(name)
    launched = client.launch(name)
    if launched.crawl_controller_state == "PAUSED" or "unpause" in launched.available_actions:
        client.unpause(name)
    crawl_log = engine_process.jobs_dir / name / "latest" / "logs" / "crawl.log"
    assert wait_for(lambda: crawl_log.is_file() and crawl_log.read_text().count("\n") >= lines_before_kill,
                    timeout=60)
    # Killed the moment crawl.log grows: a crawler that wrote its log ahead of its WARC is caught out there.
    size = crawl_log.stat().st_size
    assert wait_for(lambda: crawl_log.stat().st_size > size, timeout=10, interval=0.001)
    os.kill(engine_process.pid, signal.SIGKILL)
    assert wait_for(lambda: engine_process._process.poll() is not None, timeout=10)
    launch = (engine_process.jobs_dir / name / "latest").resolve()
    assert list((launch / "warcs").glob("*.open")), "a killed engine leaves its WARC open"
    return launch


@pytest.mark.parametrize("lines_before_kill", [30, 60, 90])
def test_an_engine_killed_mid_crawl_leaves_counts_that_agree_with_its_warcs(
        engine_process: EngineProcess, test_site: TestSite, lines_before_kill: int) -> None:
    launch = _crawl_and_kill(engine_process, test_site, lines_before_kill)
    warcs, reconciled = _close_and_reconcile(launch)
    captures = _captures(warcs)
    assert len(captures) >= lines_before_kill // 2
    # The engine writes a capture's line after its records reach the file: no line is without its records,
    # and at most the capture being logged at the kill lacks its line.
    assert reconciled.unarchived_lines == 0 and reconciled.recovered_lines <= 1
    assert _objects(launch) == len(captures)
    for warc in warcs:
        checked = warcio_check(warc)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_lines_without_records_are_moved_out_and_records_without_lines_get_one(
        engine_process: EngineProcess, test_site: TestSite) -> None:
    """What a crawler that buffers both files can leave (Heritrix 3, this engine before it flushed in order):
    its last lines lost with their buffer, and a line whose records were lost with theirs."""
    launch = _crawl_and_kill(engine_process, test_site, 40)
    warcs, _ = _close_and_reconcile(launch)  # closed, and in agreement as above
    crawl_log = launch / "logs" / "crawl.log"
    lines = crawl_log.read_text().splitlines(keepends=True)
    captured = [n for n, line in enumerate(lines) if int(line.split()[1]) > 0]
    lost = [lines[n] for n in captured[-3:]]
    fields = lines[captured[0]].split()
    fields[3] = test_site.url(HOST, "/page/lost-with-its-buffer")
    phantom = " ".join(fields) + "\n"
    crawl_log.write_text("".join(line for line in lines if line not in lost) + phantom)
    reconciled = reconcile_crawl_log(crawl_log, warcs)
    assert (reconciled.unarchived_lines, reconciled.recovered_lines) == (1, 3)
    assert (launch / "logs" / UNARCHIVED_LOG).read_text() == phantom
    recovered = [line.split() for line in crawl_log.read_text().splitlines() if RECOVERED_ANNOTATION in line]
    assert sorted(line[3] for line in recovered) == sorted(line.split()[3] for line in lost)
    assert sorted(line[1] for line in recovered) == sorted(line.split()[1] for line in lost)
    assert sorted(line[9] for line in recovered) == sorted(line.split()[9] for line in lost)
    assert _objects(launch) == len(_captures(warcs))
    # A second pass finds nothing more to change.
    assert not reconcile_crawl_log(crawl_log, warcs).changed
