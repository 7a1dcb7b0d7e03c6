"""The QA report of a job from a crawl.log and a WARC written here: seeds' outcomes after redirects, missing
embedded resources by reason with the pages that need them, hosts' failures, and the caps on its lists."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvestdef.messages import QaSummary
from harvester.postprocess import qa
from harvester.postprocess.qa import QaReport, build_qa_report

SITE = "http://www.alpha.dk"
PAGE = """<html><head><link rel="stylesheet" href="/s.css"><script src="/q.js"></script>
<style>p { background: url(/bg.png) }</style></head><body>
<img src="/a.png"><img src="/b.png"><img src="http://cdn.other.com/x.png"><img srcset="/never.png 2x">
<iframe src="/f.html"></iframe><script src="http://127.0.0.1:5432/x.js"></script>
<a href="/linked.html">a link is not embedded</a></body></html>"""


def line(status: int, url: str, discovery: str = "-", via: str = "-", annotations: str = "-",
         seed: str = f"{SITE}/") -> str:
    return (f"2026-01-01T10:00:00.000Z {status:>5} 10 {url} {discovery} {via} text/html #001 "
            f"20260101100000000+1 - {seed} {annotations}\n")


def write_warc(path: Path, responses: list[tuple[str, str, bytes]]) -> Path:
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, content_type, body in responses:
            headers = StatusAndHeaders("200 OK", [("Content-Type", content_type),
                                                  ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                          http_headers=headers))
    return path


@pytest.fixture
def job(tmp_path: Path) -> tuple[list[Path], list[Path]]:
    log = tmp_path / "20260101100000" / "logs" / "crawl.log"
    log.parent.mkdir(parents=True)
    log.write_text("".join([
        line(1, "dns:www.alpha.dk", "P", f"{SITE}/"),
        line(200, f"{SITE}/robots.txt", "P", f"{SITE}/"),
        line(200, f"{SITE}/"),
        line(301, f"{SITE}/old"),
        line(404, f"{SITE}/new", "R", f"{SITE}/old"),
        line(-9998, f"{SITE}/private/"),
        line(200, f"{SITE}/a.png", "E", f"{SITE}/"),
        line(404, f"{SITE}/b.png", "E", f"{SITE}/"),
        line(-9998, f"{SITE}/s.css", "E", f"{SITE}/"),
        line(-5003, f"{SITE}/q.js", "E", f"{SITE}/", "Q:groupMaxAllKb"),
        line(-2, f"{SITE}/f.html", "E", f"{SITE}/"),
        line(-5005, "http://127.0.0.1:5432/x.js", "E", f"{SITE}/", "destinationRefused:loopback"),
        line(-2, f"{SITE}/bg.png", "E", f"{SITE}/"),
        line(200, f"{SITE}/bg.png", "E", f"{SITE}/"),  # a retry that fetched it: not missing
        line(503, f"{SITE}/linked.html", "L", f"{SITE}/"),  # a link, not an embed: the host's failure only
    ]), encoding="utf-8")
    warc = write_warc(tmp_path / "crawl.warc.gz", [(f"{SITE}/", "text/html; charset=utf-8", PAGE.encode())])
    return [log], [warc]


def test_each_seed_has_its_outcome_after_its_redirects(job):
    logs, warcs = job
    report = build_qa_report(7, 3, [f"{SITE}/", f"{SITE}/old", f"{SITE}/private/", "http://www.alpha.dk"
                                    "/unlogged"], logs, warcs, ["alpha.dk"])
    outcomes = {seed.seed: (seed.status, seed.final_url, seed.final_status, seed.captured, seed.reason)
                for seed in report.seeds}
    assert outcomes == {
        f"{SITE}/": (200, f"{SITE}/", 200, True, None),
        f"{SITE}/old": (301, f"{SITE}/new", 404, False, f"HTTP 404 after redirects, at {SITE}/new"),
        f"{SITE}/private/": (-9998, f"{SITE}/private/", -9998, False, "robots.txt precluded (-9998)"),
        f"{SITE}/unlogged": (None, f"{SITE}/unlogged", None, False, "not in crawl.log: the crawl ended before it"),
    }
    assert (report.seeds_total, report.seeds_not_captured) == (4, 3)
    assert [seed.captured for seed in report.seeds] == [False, False, False, True]  # the lost ones first


def test_missing_embedded_resources_are_grouped_by_reason_with_the_pages_that_need_them(job):
    logs, warcs = job
    report = build_qa_report(7, 3, [f"{SITE}/"], logs, warcs, ["alpha.dk"])
    found = {group.reason: [(r.url, r.detail, r.pages, r.pages_total) for r in group.resources]
             for group in report.missing}
    page = [f"{SITE}/"]
    assert found == {
        "out_of_scope": [("http://cdn.other.com/x.png", "not in crawl.log: not a domain of the job", page, 1)],
        "robots": [(f"{SITE}/s.css", "robots.txt precluded (-9998)", page, 1)],
        "budget": [(f"{SITE}/q.js", "over quota (-5003) (Q:groupMaxAllKb)", page, 1)],
        "destination_refused": [("http://127.0.0.1:5432/x.js",
                                 "destination refused (-5005) (destinationRefused:loopback)", page, 1)],
        "http_error": [(f"{SITE}/b.png", "HTTP 404", page, 1)],
        "network_error": [(f"{SITE}/f.html", "connection refused (-2)", page, 1)],
        "never_reached": [(f"{SITE}/never.png", "not in crawl.log", page, 1)],
    }
    assert list(found) == list(qa.REASONS)  # the report's order
    assert (report.missing_resources, report.pages_with_missing_resources) == (7, 1)
    assert report.summary == QaSummary(1, 0, 1, 7)


def test_hosts_are_counted_per_status_and_the_ones_that_failed_most_come_first(job):
    logs, warcs = job
    report = build_qa_report(7, 3, [f"{SITE}/"], logs, warcs, ["alpha.dk"])
    www = next(host for host in report.hosts if host.host == "www.alpha.dk")
    # 404 twice, 503, -2 twice; robots.txt and quota are the crawl's own rules, not the host's failures
    assert (www.lines, www.failures) == (14, 5)  # its DNS lookup included
    assert www.statuses["404"] == 2 and www.statuses["-2"] == 2
    assert [host.host for host in report.failing_hosts] == ["www.alpha.dk"]
    assert report.statuses["200"] == 4 and report.lines_read == 15


def test_the_report_round_trips_through_its_json(job):
    logs, warcs = job
    report = build_qa_report(7, 3, [f"{SITE}/", f"{SITE}/old"], logs, warcs, ["alpha.dk"])
    assert QaReport.from_json(report.to_json()) == report


def test_lists_are_capped_and_counts_stay_exact(tmp_path, monkeypatch):
    monkeypatch.setattr(qa, "MAX_RESOURCES", 3)
    monkeypatch.setattr(qa, "MAX_PAGES", 2)
    monkeypatch.setattr(qa, "_BATCH", 7)  # many flushes of the temporary database
    log = tmp_path / "crawl.log"
    lines = [line(200, f"{SITE}/p{n}") for n in range(20)]
    lines += [line(404, f"{SITE}/img{n}.png", "LE", f"{SITE}/p{page}") for n in range(30) for page in range(4)]
    log.write_text("".join(lines), encoding="utf-8")
    report = build_qa_report(7, 3, [], [log], [], ["alpha.dk"])
    [group] = report.missing
    assert (group.reason, group.resources_total, group.pages_total, len(group.resources)) == ("http_error", 30, 4, 3)
    assert [len(r.pages) for r in group.resources] == [2, 2, 2]
    assert [r.pages_total for r in group.resources] == [4, 4, 4]
    assert (report.missing_resources, report.pages_with_missing_resources) == (30, 4)


def test_a_missing_crawl_log_is_a_note_not_a_failure(tmp_path):
    report = build_qa_report(7, 3, [f"{SITE}/"], [tmp_path / "20260101100000" / "logs" / "crawl.log"], [],
                             ["alpha.dk"])
    assert report.notes == ["20260101100000: no crawl.log"]
    assert report.seeds[0].reason == "not in crawl.log: the crawl ended before it"
