"""The QA report of a job from a crawl.log and a WARC written here: seeds' outcomes after redirects, missing
embedded resources by reason with the pages that need them, hosts' failures, and the caps on its lists."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvestdef.messages import QaSummary
from harvester.postprocess import qa
from harvester.postprocess.qa import OperatorRule, QaReport, build_qa_report, operator_rules

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
        "destination_refused": [("http://127.0.0.1:5432/x.js",
                                 "destination refused (-5005) (destinationRefused:loopback)", page, 1)],
        "http_error": [(f"{SITE}/b.png", "HTTP 404", page, 1)],
        "network_error": [(f"{SITE}/f.html", "connection refused (-2)", page, 1)],
        "never_reached": [(f"{SITE}/never.png", "not in crawl.log", page, 1)],
    }
    assert list(found) == [reason for reason in qa.REASONS if reason != "budget"]  # the report's order
    assert (report.missing_resources, report.pages_with_missing_resources) == (6, 1)
    assert report.summary == QaSummary(1, 0, 1, 6)
    # a budget is the harvest's decision, not the crawl's fault: excluded, by the configuration's own limit
    [budget] = report.excluded
    assert (budget.reason, budget.rule, budget.resources_total, budget.pages_total) == ("budget", None, 1, 1)
    assert [(r.url, r.detail) for r in budget.resources] == [(f"{SITE}/q.js", "over quota (-5003) (Q:groupMaxAllKb)")]
    assert report.excluded_resources == 1


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


def change(version: int, kind: str, author: str = "admin", state: str = "applied", **payload: object) -> dict:
    """A line of changes.jsonl, as the controller writes it (harvester/steering.py)."""
    return {"version": version, "kind": kind, "payload": payload, "author": author, "created": "2026-01-01T09:00:00Z",
            "state": state, "reason": "", "happened_at": f"2026-01-01T10:0{version}:00+00:00", "attempt_id": "a"}


def test_what_an_operators_rules_kept_out_is_excluded_with_the_rule_never_missing(tmp_path):
    """29 pages' images rejected by a live reject rule, a calendar whose queued URIs were deleted, a trap of the
    template and a domain budget set while the crawl ran: each group names its rule; only what no rule explains
    is missing."""
    log = tmp_path / "crawl.log"
    lines = [line(200, f"{SITE}/"), line(-5000, f"{SITE}/gallery/old.jpg", "E", f"{SITE}/"),
             line(-5003, f"{SITE}/big.js", "E", f"{SITE}/", "Q:groupMaxFetchSuccesses")]
    log.write_text("".join(lines), encoding="utf-8")
    images = "".join(f'<img src="/gallery/{n}.jpg">' for n in range(29))
    body = (f'<html><body>{images}<img src="/gallery/old.jpg"><img src="/calendar/2026.png">'
            f'<img src="/loop/loop/loop/x.png"><img src="/never.png"><script src="/big.js"></script>'
            f'<img src="https://beta.dk/gallery/b.jpg"></body></html>')
    warc = write_warc(tmp_path / "crawl.warc.gz", [(f"{SITE}/", "text/html", body.encode())])
    rules = operator_rules(
        [change(1, "pause"), change(2, "reject", regex=".*/gallery/.*", domain="alpha.dk"),
         change(3, "delete_queued", regex=".*/calendar/.*"), change(4, "budget", author="ops2", domain="alpha.dk",
                                                                     max_objects=10),
         change(5, "reject", state="refused", regex=".*never.*")],
        traps=[".*(/[^/]+)\\1\\1\\1.*", ".*/loop/loop/.*"])
    assert [(rule.kind, rule.version) for rule in rules] == [
        ("reject", 2), ("delete_queued", 3), ("budget", 4), ("crawler_trap", None), ("crawler_trap", None)]
    report = build_qa_report(7, 3, [f"{SITE}/"], [log], [warc], ["alpha.dk", "beta.dk"], rules=rules)

    excluded = {(group.reason, group.rule.version if group.rule else None, group.rule.regex if group.rule else None):
                (group.resources_total, [r.url for r in group.resources]) for group in report.excluded}
    gallery = sorted([f"{SITE}/gallery/{n}.jpg" for n in range(29)] + [f"{SITE}/gallery/old.jpg"])
    assert excluded == {
        ("reject_rule", 2, ".*/gallery/.*"): (30, gallery),
        ("deleted_from_queue", 3, ".*/calendar/.*"): (1, [f"{SITE}/calendar/2026.png"]),
        # the first trap (a backreference: the backtracking matcher) wants four repeats; the second one matches
        ("crawler_trap", None, ".*/loop/loop/.*"): (1, [f"{SITE}/loop/loop/loop/x.png"]),
        ("budget", 4, None): (1, [f"{SITE}/big.js"]),
    }, excluded
    assert [group.reason for group in report.excluded] == ["reject_rule", "deleted_from_queue", "crawler_trap",
                                                            "budget"]
    reject = report.excluded[0]
    assert (reject.rule.author, reject.rule.at, reject.rule.domain) == ("admin", "2026-01-01T10:02:00+00:00",
                                                                        "alpha.dk")
    # the reject rule was confined to alpha.dk: beta.dk's gallery is not its doing
    missing = {group.reason: [r.url for r in group.resources] for group in report.missing}
    assert missing == {"never_reached": [f"{SITE}/never.png", "https://beta.dk/gallery/b.jpg"]}
    assert (report.missing_resources, report.excluded_resources) == (2, 33)
    assert QaReport.from_json(report.to_json()) == report


def test_what_a_domain_ended_at_its_limit_never_reached_is_excluded_by_its_budget_not_missing(tmp_path):
    """alpha.dk's crawl ended at its object limit, so the crawler queued none of its page's images and logged
    none; beta.dk's ended by itself, so its image never reached is missing."""
    log = tmp_path / "crawl.log"
    log.write_text(line(200, f"{SITE}/") + line(200, "https://beta.dk/", seed="https://beta.dk/"), encoding="utf-8")
    body = '<html><body><img src="/one.png"><img src="/two.png"><img src="https://beta.dk/b.png"></body></html>'
    warc = write_warc(tmp_path / "crawl.warc.gz", [(f"{SITE}/", "text/html", body.encode())])
    budget = operator_rules([change(1, "budget", author="ops2", domain="alpha.dk", max_objects=1)])

    plain = build_qa_report(7, 3, [f"{SITE}/"], [log], [warc], ["alpha.dk", "beta.dk"])
    assert plain.missing_resources == 3 and not plain.excluded, "no limit named: all three never reached"

    report = build_qa_report(7, 3, [f"{SITE}/"], [log], [warc], ["alpha.dk", "beta.dk"],
                             limited_domains=["alpha.dk"])
    [excluded] = report.excluded
    assert (excluded.reason, excluded.rule, excluded.resources_total) == ("budget", None, 2)
    assert [r.url for r in excluded.resources] == [f"{SITE}/one.png", f"{SITE}/two.png"]
    assert {g.reason: [r.url for r in g.resources] for g in report.missing} == {
        "never_reached": ["https://beta.dk/b.png"]}
    assert (report.missing_resources, report.excluded_resources) == (1, 2)

    # a budget an operator set while the crawl ran is named as the one that kept them out
    named = build_qa_report(7, 3, [f"{SITE}/"], [log], [warc], ["alpha.dk", "beta.dk"], rules=budget,
                            limited_domains=["alpha.dk"])
    [by_change] = named.excluded
    assert (by_change.reason, by_change.rule.version, by_change.rule.author) == ("budget", 1, "ops2")


def test_a_report_written_before_exclusions_reads_as_none_excluded(job):
    logs, warcs = job
    document = json.loads(build_qa_report(7, 3, [f"{SITE}/"], logs, warcs, ["alpha.dk"]).to_json())
    del document["excluded"], document["excluded_resources"], document["pages_captured"]
    document["version"] = 1
    old = QaReport.from_json(json.dumps(document))
    assert (old.excluded, old.excluded_resources, old.pages_captured, old.version) == ([], 0, None, 1)


def test_a_rule_that_cannot_be_matched_is_a_note_and_its_resources_stay_missing(tmp_path):
    log = tmp_path / "crawl.log"
    log.write_text(line(200, f"{SITE}/"), encoding="utf-8")
    warc = write_warc(tmp_path / "crawl.warc.gz", [(f"{SITE}/", "text/html", b'<img src="/x.png">')])
    report = build_qa_report(7, 3, [f"{SITE}/"], [log], [warc], ["alpha.dk"],
                             rules=[OperatorRule("reject", regex="(unclosed", author="admin", version=1)])
    assert report.notes and report.notes[0].startswith("change 1 (reject '(unclosed' by admin) cannot be matched")
    assert [group.reason for group in report.missing] == ["never_reached"] and not report.excluded
