"""A response far larger than the engine's memory should hold (50 MiB from the local test site) goes to the
WARC through the response's spool: the engine process's peak resident set grows by a small fraction of the
response's size, and the record is whole and digest-correct for `warcio check`."""

from __future__ import annotations

import functools
import hashlib
import subprocess
import sys
from base64 import b32encode
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.engine.engine_process import EngineProcess, crawler_beans
from tests.engine.site import HUGE_SIZE, TestSite, huge_pieces
from tests.engine.test_process_warc import HOST, run_crawl, warc_files

# The spool keeps 512 KiB in memory and the WARC writer gathers 1 MiB before compressing; the rest of the
# allowance is the interpreter's own arenas. A response held whole would add at least HUGE_SIZE.
MAX_PEAK_GROWTH = 24 * 1024 * 1024


@pytest.fixture
def engine_process(tmp_path: Path, test_site: TestSite) -> Iterator[EngineProcess]:
    with EngineProcess(tmp_path / "jobs", hosts_file=test_site.write_hosts_file(tmp_path / "hosts.txt")) as process:
        yield process


def _memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _sha1(pieces) -> str:
    hasher = hashlib.sha1()
    for piece in pieces:
        hasher.update(piece)
    return "sha1:" + b32encode(hasher.digest()).decode("ascii")


def test_a_large_response_is_recorded_in_bounded_memory(engine_process: EngineProcess, test_site: TestSite) -> None:
    pid = engine_process.pid
    url = test_site.url(HOST, "/huge.bin")
    # Warm the engine up (imports, TLS, a first crawl) so that the peak measured after is the large response's.
    run_crawl(engine_process, "warmup", [test_site.url(HOST, "/robots.txt")], crawler_beans(max_hops=0))
    peak_before = _memory_kib(pid, "VmHWM")
    launch = run_crawl(engine_process, "huge", [url], crawler_beans(max_hops=0))
    growth = (_memory_kib(pid, "VmHWM") - peak_before) * 1024
    assert growth < MAX_PEAK_GROWTH, f"peak RSS grew {growth} bytes for a {HUGE_SIZE}-byte response"

    crawl_line = next(line.split() for line in (launch / "logs" / "crawl.log").read_text().splitlines()
                      if line.split()[3] == url)
    assert crawl_line[1:3] == ["200", str(HUGE_SIZE)]
    expected_digest = _sha1(huge_pieces())
    assert crawl_line[9] == expected_digest
    [path] = warc_files(launch)
    checked = subprocess.run([str(Path(sys.executable).parent / "warcio"), "check", "-v", str(path)],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type == "response" and record.rec_headers.get_header("WARC-Target-URI") == url:
                assert record.rec_headers.get_header("WARC-Payload-Digest") == expected_digest
                assert record.rec_headers.get_header("WARC-Truncated") is None
                read_piece = functools.partial(record.content_stream().read, 1 << 20)
                assert _sha1(iter(read_piece, b"")) == expected_digest
                break
        else:
            raise AssertionError(f"no response record for {url} in {path}")
