"""Bounded responses on every path: a head that never ends is cut at the engine's header caps, a malformed
response keeps to maxLengthBytes, a cut record says so (crawl.log and WARC-Truncated), an empty payload is
never a revisit, and link extraction is bounded per document in size and time, the cut logged."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from harvestdef.errors import SettingsError
from harvestdef.settings import load_settings
from harvester.engine.extraction.links import LinkExtractors
from harvester.engine.fetching.bounds import ResponseBounds
from harvester.engine.fetching.fetch import _ResponseCaps
from tests.engine.site import LONG_HEAD_LINES

HOST = "www.kulturarv.dk"
POLL_SECONDS = 0.02


def _response_record(run, url: str):
    records = [r for r in run.warc_records() if r[1] == url and r[0] in ("response", "revisit")]
    assert len(records) == 1, f"{url}: {[r[0] for r in records]}"
    return records[0]


def _sent_more_than(test_site, path: str, size: int, timeout: float = 10.0) -> bool:
    """Whether the site counted more than ``size`` bytes sent of ``path`` (it counts each piece once its send
    returned, so the count may trail what the crawler read: polled until ``timeout``)."""
    deadline = time.monotonic() + timeout
    while test_site.hostile_sent[(HOST, path)] <= size:
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def _warcio_check(run) -> None:
    """warcio's own reader and digest checker accept every WARC the crawl wrote."""
    warcs = sorted(str(path) for path in (run.launch_dir / "warcs").glob("*.warc.gz"))
    assert warcs
    checked = subprocess.run([str(Path(sys.executable).parent / "warcio"), "check", "-v", *warcs],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_endless_header_lines_are_cut_at_the_line_cap(crawl, test_site):
    url = test_site.url(HOST, "/hostile/endless-header-lines")
    run = crawl([url], overrides={"fetchHttp.maxLengthBytes": 1_000_000})
    line = run.lines_for(url)[0]
    assert line[1] == "200" and line[2] == "0"
    assert "headerTrunc" in line[11].split(",") and "duplicate:digest" not in line[11]
    kind, _, headers, block = _response_record(run, url)
    assert kind == "response" and headers.get_header("WARC-Truncated") == "length"
    # the status line and the first 100 header lines, whole; nothing after them
    assert block.count(b"\r\n") == 101 and block.endswith(b"\r\n") and b"\r\n\r\n" not in block
    assert len(block) <= 65_536
    assert _sent_more_than(test_site, "/hostile/endless-header-lines", len(block))
    _warcio_check(run)


def test_a_header_line_that_never_ends_is_cut_at_the_byte_cap(crawl, test_site):
    url = test_site.url(HOST, "/hostile/endless-header-line")
    run = crawl([url], bounds=ResponseBounds(header_max_bytes=8192))
    line = run.lines_for(url)[0]
    assert line[1] == "200" and "headerTrunc" in line[11].split(",")
    kind, _, headers, block = _response_record(run, url)
    assert headers.get_header("WARC-Truncated") == "length"
    assert len(block) == 8192 and block.startswith(b"HTTP/1.1 200 OK\r\n")
    assert _sent_more_than(test_site, "/hostile/endless-header-line", 8192)
    _warcio_check(run)


def test_a_malformed_response_keeps_to_max_length(crawl, test_site):
    url = test_site.url(HOST, "/hostile/malformed-endless")
    run = crawl([url], overrides={"fetchHttp.maxLengthBytes": 100_000, "fetchHttp.timeoutSeconds": 20})
    line = run.lines_for(url)[0]
    assert line[1] == "200" and line[2] == "100000" and "lenTrunc" in line[11].split(",")
    _, _, headers, block = _response_record(run, url)
    head = test_site.responses_for(HOST, "/hostile/malformed-endless")[0]
    assert headers.get_header("WARC-Truncated") == "length"
    assert len(block) == len(head) + 100_000 and block.startswith(head)
    _warcio_check(run)


def test_no_record_exceeds_max_length_and_the_header_cap(crawl, test_site):
    paths = ["/hostile/endless-header-lines", "/hostile/endless-header-line", "/hostile/malformed-endless",
             "/big.bin", "/chunked.html", "/hostile/long-head.html"]
    run = crawl([test_site.url(HOST, path) for path in paths], overrides={"fetchHttp.maxLengthBytes": 50_000},
                bounds=ResponseBounds(header_max_bytes=30_000, header_max_lines=60))
    responses = [r for r in run.warc_records() if r[0] == "response" and r[1].startswith("http")]
    assert {urlpath.split(str(test_site.port), 1)[1] for _, urlpath, _, _ in responses} >= set(paths)
    for _, target, _, block in responses:
        assert len(block) <= 50_000 + 30_000, target


def test_empty_malformed_payloads_are_not_revisits_of_each_other(crawl, test_site):
    urls = [test_site.url(HOST, f"/hostile/malformed-empty?{n}") for n in (1, 2, 3)]
    run = crawl(urls)
    for url in urls:
        line = run.lines_for(url)[0]
        assert line[1] == "200" and line[2] == "0" and "duplicate:digest" not in line[11]
        assert _response_record(run, url)[0] == "response"


def test_a_head_over_h11s_default_within_the_caps_is_read_whole(crawl, test_site):
    url = test_site.url(HOST, "/hostile/long-head.html")
    run = crawl([url])
    line = run.lines_for(url)[0]
    assert line[1] == "200" and line[6] == "text/html" and "Trunc" not in line[11]
    _, _, _, block = _response_record(run, url)
    assert block.count(b"X-Filler-") == LONG_HEAD_LINES
    # the head was parsed: the page's link was followed
    assert run.lines_for(test_site.url(HOST, "/page/3"))


def test_an_interim_response_before_the_page_is_read_through(crawl, test_site):
    url = test_site.url(HOST, "/hostile/interim.html")
    # four header lines in all: the interim response's status line and its header count as two
    run = crawl([url], bounds=ResponseBounds(header_max_lines=4))
    line = run.lines_for(url)[0]
    assert line[1] == "200" and line[6] == "text/html" and "Trunc" not in line[11]
    assert run.lines_for(test_site.url(HOST, "/page/4"))


@pytest.mark.parametrize("piece_size", [1, 2, 3, 7, 4096])
def test_caps_find_the_end_of_the_head_in_any_pieces(piece_size: int) -> None:
    head = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/plain\n"
            b"Content-Length: 5\r\n\r\n")
    raw = head + b"hello" + b"more than the body"
    caps = _ResponseCaps(header_max_bytes=len(head), header_max_lines=3, max_length=5)
    kept = b"".join(caps.admit(raw[start:start + piece_size]) for start in range(0, len(raw), piece_size))
    assert caps.header_end == len(head) and kept == head + b"hello" and caps.cut == "lenTrunc"


@pytest.mark.parametrize(("max_bytes", "max_lines", "kept"), [
    (1000, 2, b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n"),      # the third header line is one too many
    (20, 100, b"HTTP/1.1 200 OK\r\nA: "),                   # the byte cap comes first
])
def test_caps_cut_a_head_at_its_lines_or_bytes(max_bytes: int, max_lines: int, kept: bytes) -> None:
    raw = b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\nbody"
    caps = _ResponseCaps(max_bytes, max_lines, 0)
    assert b"".join(caps.admit(raw[start:start + 5]) for start in range(0, len(raw), 5)) == kept
    assert caps.cut == "headerTrunc" and caps.header_end == -1


class _SteppingClock:
    """A clock that moves on ``step`` seconds each time it is read: extraction's time, without waiting."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _dense_script() -> bytes:
    """A script file of string literals only, with one URL at its start and one at its end."""
    return (b'var a = "http://www.kulturarv.dk/first.html";\n' + b'"a/b",' * 200_000
            + b'\nvar z = "http://www.kulturarv.dk/last.html";\n')


def test_script_extraction_stops_at_its_time_keeping_the_links_found() -> None:
    script = _dense_script()
    extractors = LinkExtractors(js_files=True, bounds=ResponseBounds(extraction_max_seconds=1),
                                clock=_SteppingClock(0.01))
    found = extractors.extract("http://www.kulturarv.dk/app.js", "http://www.kulturarv.dk/", "application/javascript",
                               "", lambda: iter([script]), False)
    links = [link for link, _ in found.links]
    assert "http://www.kulturarv.dk/first.html" in links and "http://www.kulturarv.dk/last.html" not in links
    assert "extractionMaxSeconds" in found.cut
    # the same document within its time is read to its end
    whole = LinkExtractors(js_files=True, clock=_SteppingClock(0.0)).extract(
        "http://www.kulturarv.dk/app.js", "http://www.kulturarv.dk/", "application/javascript", "",
        lambda: iter([script]), False)
    assert "http://www.kulturarv.dk/last.html" in [link for link, _ in whole.links] and whole.cut == ""


def test_inline_scripts_share_the_pages_time() -> None:
    page = b"<html><body><a href='/one.html'>1</a><script>" + _dense_script() + b"</script></body></html>"
    extractors = LinkExtractors(js_inline=True, bounds=ResponseBounds(extraction_max_seconds=1),
                                clock=_SteppingClock(0.01))
    found = extractors.extract("http://www.kulturarv.dk/", "", "text/html", "", lambda: iter([page]), False)
    links = [link for link, _ in found.links]
    assert "/one.html" in links and "http://www.kulturarv.dk/last.html" not in links
    assert "extractionMaxSeconds" in found.cut


def test_html_extraction_stops_at_its_size() -> None:
    page = b"<html><body><a href='/first.html'>1</a>" + b"<p>filler</p>" * 1000 + b"<a href='/last.html'>2</a>"
    extractors = LinkExtractors(bounds=ResponseBounds(extraction_max_bytes=1000))
    found = extractors.extract("http://www.kulturarv.dk/", "", "text/html", "", lambda: iter([page]), False)
    links = [link for link, _ in found.links]
    assert "/first.html" in links and "/last.html" not in links
    assert "after 1000 bytes" in found.cut and "extractionMaxBytes" in found.cut


def test_a_cut_extraction_is_logged(crawl, test_site):
    seed = test_site.url(HOST, "/")
    run = crawl([seed], bounds=ResponseBounds(extraction_max_bytes=200))
    lines = (run.logs / "nonfatal-errors.log").read_text().splitlines()
    cut = [line for line in lines if f" {seed} " in f"{line} "]
    assert len(cut) == 1 and "link extraction stopped after 200 bytes" in cut[0]


def test_bounds_come_from_the_engines_settings(tmp_path) -> None:
    assert ResponseBounds.from_settings(load_settings(environ={}).crawler) == ResponseBounds()
    config = tmp_path / "hs.toml"
    config.write_text("[harvestsuite.crawler]\nresponseHeaderMaxLines = 20\nextractionMaxSeconds = 2\n")
    bounds = ResponseBounds.from_settings(load_settings(config, environ={}).crawler)
    assert (bounds.header_max_lines, bounds.extraction_max_seconds, bounds.header_max_bytes) == (20, 2.0, 65_536)
    with pytest.raises(SettingsError, match=r"harvestsuite\.crawler\.responseHeaderMaxBytes: more than 0, got 0"):
        load_settings(environ={"HARVESTSUITE__HARVESTSUITE__CRAWLER__RESPONSEHEADERMAXBYTES": "0"})
