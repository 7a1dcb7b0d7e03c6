"""A job's QA in the web UI: the report read from its stored metadata WARC (API and the job page's Quality
section), 404 naming why when there is none, each domain's change against the previous run flagged beyond
the threshold, and a run's sums of its jobs' QA summaries."""

from __future__ import annotations

import json
import re

from sqlalchemy import insert, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus, StopReason
from harvester.postprocess.crawllogreader import FETCH_STATUS_WORDS as CRAWL_LOG_WORDS
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from harvester.postprocess.qa import build_qa_report, operator_rules
from tests.harvestdef.factories import make_domain
from tests.harvester.test_postprocess_qa import write_warc
from tests.webui.test_jobs import T0, seed
from webui.qa import FETCH_STATUS_WORDS, run_qa_sums

SITE = "http://www.alpha.dk"


def history(conn, job_id: int, domain: str, objects: int, bytes_: int) -> None:
    config = conn.scalar(select(s.configurations.c.config_id).join(
        s.domains, s.domains.c.domain_id == s.configurations.c.domain_id).where(s.domains.c.name == domain))
    conn.execute(insert(s.historyinfo).values(stopreason=int(StopReason.DOWNLOAD_COMPLETE), objectcount=objects,
                                              bytecount=bytes_, config_id=config, harvest_id=1, job_id=job_id,
                                              harvest_time=T0))


def store_report(tmp_path, job_id: int) -> None:
    log = tmp_path / "crawl.log"
    log.write_text(f"2026-01-01T10:00:00.000Z   404 10 {SITE}/ - - text/html #001 - - {SITE}/ -\n"
                   f"2026-01-01T10:00:00.000Z   200 10 https://beta.dk/ - - text/html #001 - - https://beta.dk/ -\n"
                   f"2026-01-01T10:00:00.000Z   503 10 https://beta.dk/s.css E https://beta.dk/ text/css #001 - - "
                   f"https://beta.dk/ -\n", encoding="utf-8")
    report = build_qa_report(job_id, 1, [SITE, "https://beta.dk"], [log], [], ["alpha.dk", "beta.dk"])
    qa_file = tmp_path / "qa-report.json"
    qa_file.write_text(report.to_json(), encoding="utf-8")
    info = MetadataInfo(job_id=job_id, harvest_id=1, harvest_num=2, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="test", hostname="h", ip="127.0.0.1",
                        qa_report=qa_file)
    write_metadata_warc(tmp_path / "archive" / "1" / str(job_id) / f"{job_id}-metadata-1.warc.gz", info, [], [], [],
                        [])


def test_a_jobs_qa_is_served_from_its_metadata_warc_with_the_change_against_the_previous_run(api, login, webui_engine,
                                                                                             tmp_path):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    with webui_engine.begin() as conn:
        history(conn, 1, "alpha.dk", 100, 10_000)
        history(conn, 1, "beta.dk", 50, 5_000)
        history(conn, 2, "alpha.dk", 80, 4_000)   # bytes down 60%: beyond the default 50
        history(conn, 2, "beta.dk", 0, 0)         # fell to nothing
    missing = api("archivist", "get", "/api/v1/jobs/2/qa")
    assert missing.status_code == 404
    assert "job 2 has no QA report: its metadata WARC is not in the archive store" in missing.json["error"]["message"]
    assert api("archivist", "get", "/api/v1/jobs/99/qa").status_code == 404

    store_report(tmp_path, 2)
    answer = api("archivist", "get", "/api/v1/jobs/2/qa")
    assert answer.status_code == 200
    qa = answer.json
    assert [(seed["seed"], seed["captured"], seed["reason"]) for seed in qa["report"]["seeds"]] == [
        (f"{SITE}/", False, "HTTP 404"), ("https://beta.dk/", True, None)]
    assert [(g["reason"], [r["url"] for r in g["resources"]]) for g in qa["report"]["missing"]] == [
        ("http_error", ["https://beta.dk/s.css"])]
    changes = {c["domain"]: c for c in qa["domain_changes"]}
    assert (changes["alpha.dk"]["objects_change"], changes["alpha.dk"]["bytes_change"]) == (-20.0, -60.0)
    assert changes["alpha.dk"]["flagged"] and not changes["alpha.dk"]["fell_to_nothing"]
    assert changes["beta.dk"]["flagged"] and changes["beta.dk"]["fell_to_nothing"]
    assert qa["change_threshold"] == 50
    assert api("archivist", "get", "/api/v1/jobs/1/qa").status_code == 404  # job 1's figures are only a "before"

    page = re.sub(r"\s+", " ", login("archivist").get("/status/jobs/2").get_data(as_text=True))
    assert "Quality" in page and "1 of 2 seeds captured" in page
    assert "not captured</span> HTTP 404" in page
    assert 'data-qa-reason="http_error"' in page and "https://beta.dk/s.css" in page
    assert re.search(r'class="flagged" data-domain="beta.dk".*?fell to nothing', page)
    assert re.search(r'class="flagged" data-domain="alpha.dk".*?bytes -60.0%', page)
    none_yet = login("archivist").get("/status/jobs/1").get_data(as_text=True)
    assert "job 1 has no QA report" in none_yet


def test_a_runs_qa_sums_its_jobs_summaries(webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    with webui_engine.begin() as conn:
        for job_id, lost, pages in ((1, 1, 2), (2, 3, 4)):
            conn.execute(insert(s.job_qa_summaries).values(
                job_id=job_id, harvest_id=1, harvest_num=7, seeds_total=5, seeds_not_captured=lost,
                pages_with_missing_resources=pages, missing_resources=9, tstamp=T0))
    with webui_engine.connect() as conn:
        assert run_qa_sums(conn, 1) == {7: {"jobs": 2, "seeds_total": 10, "seeds_not_captured": 4,
                                            "pages_with_missing_resources": 6, "missing_resources": 18}}


def store_report_with_rules(tmp_path, job_id: int, version_1: bool = False) -> None:
    """A report whose page's 29 gallery images a live reject rule of admin's kept out, with one image never
    reached; ``version_1``: written as before exclusions (no excluded, no count of captured pages)."""
    log = tmp_path / "crawl.log"
    log.write_text(f"2026-01-01T10:00:00.000Z   200 10 {SITE}/ - - text/html #001 - - {SITE}/ -\n", encoding="utf-8")
    images = "".join(f'<img src="/gallery/{n}.jpg">' for n in range(29))
    warc = write_warc(tmp_path / "crawl.warc.gz", [(f"{SITE}/", "text/html",
                                                    f'<html>{images}<img src="/never.png"></html>'.encode())])
    rules = operator_rules([{"version": 1, "kind": "reject", "payload": {"regex": ".*/gallery/.*"}, "author": "admin",
                             "state": "applied", "happened_at": "2026-01-01T10:42:00+00:00"}])
    report = build_qa_report(job_id, 1, [SITE], [log], [warc], ["alpha.dk"], rules=rules)
    document = json.loads(report.to_json())
    if version_1:
        for name in ("excluded", "excluded_resources", "pages_captured"):
            del document[name]
        document["version"] = 1
        document["missing"][0]["resources"] = [{k: v for k, v in r.items() if k != "annotation"}
                                               for r in document["missing"][0]["resources"]]
    qa_file = tmp_path / "qa-report.json"
    qa_file.write_text(json.dumps(document), encoding="utf-8")
    info = MetadataInfo(job_id=job_id, harvest_id=1, harvest_num=2, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="test", hostname="h", ip="127.0.0.1",
                        qa_report=qa_file)
    write_metadata_warc(tmp_path / "archive" / "1" / str(job_id) / f"{job_id}-metadata-1.warc.gz", info, [], [], [],
                        [])


def test_what_a_reject_rule_kept_out_is_excluded_with_the_rule_and_folded(api, login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE])
    store_report_with_rules(tmp_path, 1)
    report = api("archivist", "get", "/api/v1/jobs/1/qa").json["report"]
    assert (report["missing_resources"], report["excluded_resources"], report["pages_captured"]) == (1, 29, 1)
    [group] = report["excluded"]
    assert (group["reason"], group["rule"]["author"], group["rule"]["version"]) == ("reject_rule", "admin", 1)

    page = re.sub(r"\s+", " ", login("archivist").get("/status/jobs/1").get_data(as_text=True))
    assert "1 embedded resource missing on 1 of 1 captured page." in page
    assert "28 more kept out by the operators’ rules or budgets" not in page and "29 more kept out" in page
    excluded = re.search(r'<h4 data-qa-excluded="reject_rule" data-change="1">(.*?)</h4>(.*?)<h3', page)
    assert excluded, "the reject rule's group"
    assert "Reject rule .*/gallery/.* (change 1 by admin at " in excluded.group(1)
    assert "29 resources on 1 page" in excluded.group(1)
    shown, folded = excluded.group(2).split("<details", 1)
    assert shown.count("<li>") == 5 and "24 more resources</summary>" in folded and folded.count("<li>") == 24
    never = re.search(r'<h4 data-qa-reason="never_reached">(.*?)</h4>', page)
    assert never and never.group(1).startswith("Never reached: the crawl ended before it got to them: 1 resource")
    assert "gallery" not in page.split('data-qa-reason="never_reached"')[1].split("<h3")[0], "not missing"

    danish = login("archivist")
    danish.set_cookie("harvestsuite_language", "da")
    da_page = re.sub(r"\s+", " ", danish.get("/status/jobs/1").get_data(as_text=True))
    assert "Aldrig nået: høstningen sluttede, før den kom til dem: 1 ressource" in da_page
    assert "(ikke i crawl.log)" in da_page and "Afvisningsregel .*/gallery/.* (ændring 1 af admin " in da_page
    assert "Never reached" not in da_page and "not in crawl.log" not in da_page


def test_a_report_written_before_exclusions_still_renders(login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE])
    store_report_with_rules(tmp_path, 1, version_1=True)
    page = re.sub(r"\s+", " ", login("archivist").get("/status/jobs/1").get_data(as_text=True))
    summary = re.search(r'<p data-qa="summary">(.*?)</p>', page)
    assert summary and "1 embedded resource missing on 1 captured page." in summary.group(1), summary
    assert 'data-qa-excluded' not in page and 'data-qa-reason="never_reached"' in page


def test_a_job_that_captured_no_page_says_so_rather_than_zero_missing(login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE])
    log = tmp_path / "crawl.log"
    log.write_text(f"2026-01-01T10:00:00.000Z   404 10 {SITE}/ - - text/html #001 - - {SITE}/ -\n", encoding="utf-8")
    report = build_qa_report(1, 1, [SITE], [log], [], ["alpha.dk"])
    qa_file = tmp_path / "qa-report.json"
    qa_file.write_text(report.to_json(), encoding="utf-8")
    info = MetadataInfo(job_id=1, harvest_id=1, harvest_num=1, organization="netarkivet.dk", heritrix_version="3.4.0",
                        software_version="test", hostname="h", ip="127.0.0.1", qa_report=qa_file)
    write_metadata_warc(tmp_path / "archive" / "1" / "1" / "1-metadata-1.warc.gz", info, [], [], [], [])
    page = re.sub(r"\s+", " ", login("archivist").get("/status/jobs/1").get_data(as_text=True))
    assert "0 of 1 seed captured; no HTML pages captured, so no embedded resources to check." in page
    assert "0 embedded resources missing" not in page and "None: no HTML pages captured." in page


def test_the_pages_fetch_status_words_are_crawl_logs():
    assert FETCH_STATUS_WORDS == CRAWL_LOG_WORDS


def test_only_changes_beyond_the_threshold_are_listed(api, login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    with webui_engine.begin() as conn:
        for name in ("gamma.dk", "delta.dk", "epsilon.dk", "zeta.dk"):
            make_domain(conn, name)
        history(conn, 1, "alpha.dk", 100, 10_000)
        history(conn, 2, "alpha.dk", 100, 10_000)       # unchanged: +0.0 %
        history(conn, 1, "beta.dk", 0, 0)
        history(conn, 2, "beta.dk", 0, 0)               # nothing against nothing
        history(conn, 1, "gamma.dk", 10_000, 1_000)
        history(conn, 2, "gamma.dk", 15_000, 1_000)     # exactly 50 %: not beyond
        history(conn, 1, "delta.dk", 10_000, 1_000)
        history(conn, 2, "delta.dk", 15_004, 1_000)     # 50.04 %, shown as 50.0: beyond all the same
        history(conn, 1, "epsilon.dk", 1_000, 100)
        history(conn, 2, "epsilon.dk", 1_000, 49)       # bytes -51 %
        history(conn, 2, "zeta.dk", 10, 10)             # not in the previous run
    store_report(tmp_path, 2)
    changes = {c["domain"]: c for c in api("archivist", "get", "/api/v1/jobs/2/qa").json["domain_changes"]}
    assert {domain for domain, change in changes.items() if change["flagged"]} == {"delta.dk", "epsilon.dk"}
    assert changes["alpha.dk"]["objects_change"] == 0.0 and changes["beta.dk"]["objects_change"] is None
    assert changes["gamma.dk"]["objects_change"] == 50.0 and changes["delta.dk"]["objects_change"] == 50.0

    page = login("archivist").get("/status/jobs/2").get_data(as_text=True)
    listed = re.findall(r'<tr class="flagged" data-domain="([^"]+)"', page)
    assert listed == ["delta.dk", "epsilon.dk"] and "+0.0%" not in page
    assert re.search(r'data-qa="unchanged">\s*4 other configurations changed by at most 50% or were not in the '
                     r'previous run.', page)


def test_no_change_beyond_the_threshold_is_said_so(api, login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    with webui_engine.begin() as conn:
        history(conn, 1, "alpha.dk", 100, 10_000)
        history(conn, 2, "alpha.dk", 101, 10_000)
        history(conn, 1, "beta.dk", 0, 0)
        history(conn, 2, "beta.dk", 0, 0)
    store_report(tmp_path, 2)
    page = login("archivist").get("/status/jobs/2").get_data(as_text=True)
    assert "No configuration changed beyond 50%." in page and 'class="flagged"' not in page
    assert 'data-qa="unchanged"' not in page
