"""History through the API and the pages: a domain's history, a harvest's statistics from the summary
tables kept at status intake, the charts drawn from them, and the CSV export (archivists may, operators not)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.history import DomainFigures, HistoryWriter
from harvestdef.repositories.jobs import JobRepository
from tests.webui.test_jobs import T0, seed
from webui.history.views import CHART_LABEL_WIDTH, CHART_ROW, CHART_VALUE_WIDTH, bar_chart


def record_runs(engine) -> None:
    """Jobs 1 and 2 (runs 1 and 2 of "daily") report history for alpha.dk and beta.dk; job 3 failed."""
    seed(engine, [JobStatus.DONE, JobStatus.DONE, JobStatus.FAILED])
    with engine.begin() as conn:
        jobs, writer = JobRepository(conn), HistoryWriter(conn)
        writer.record_job(jobs.get(1), JobStatus.DONE, StopReason.DOWNLOAD_COMPLETE, {
            "alpha.dk": DomainFigures(100, 10_000, StopReason.DOWNLOAD_COMPLETE, 100, 10_000, 0, 0),
            "beta.dk": DomainFigures(50, 2_000, StopReason.OBJECT_LIMIT, 50, 2_000, 0, 0)}, T0)
        writer.record_job(jobs.get(2), JobStatus.DONE, StopReason.DOWNLOAD_COMPLETE, {
            "alpha.dk": DomainFigures(120, 30_000, StopReason.DOWNLOAD_COMPLETE, 20, 4_000, 100, 26_000),
            "beta.dk": DomainFigures(60, 3_000, StopReason.DOWNLOAD_COMPLETE, 10, 500, 50, 2_500)},
            T0 + timedelta(days=1))
        writer.record_job(jobs.get(3), JobStatus.FAILED, None, None, T0 + timedelta(days=2))


def test_domain_history_lists_the_rows_newest_first_with_paging(api, webui_engine):
    record_runs(webui_engine)
    answer = api("curator", "get", "/api/v1/domains/alpha.dk/history?limit=1")
    assert answer.status_code == 200
    (newest,) = answer.json["items"]
    assert newest["harvest"] == "daily" and newest["harvest_num"] == 2 and newest["job_id"] == 2
    assert newest["objectcount"] == 120 and newest["bytecount"] == 30_000
    assert newest["novel_bytes"] == 4_000 and newest["duplicate_bytes"] == 26_000
    assert newest["stopreason"] == "DOWNLOAD_COMPLETE" and newest["harvest_time"] == "2026-03-02T00:00:00Z"
    older = api("curator", "get", f"/api/v1/domains/alpha.dk/history?limit=1&after={answer.json['next']}").json
    assert [row["job_id"] for row in older["items"]] == [1] and older["next"] is None
    beta = api("curator", "get", "/api/v1/domains/beta.dk/history").json["items"]
    assert [row["stopreason"] for row in beta] == ["DOWNLOAD_COMPLETE", "OBJECT_LIMIT"]
    assert api("curator", "get", "/api/v1/domains/nosuch.dk/history").status_code == 404


def test_harvest_statistics_come_from_the_run_summaries(api, webui_engine):
    record_runs(webui_engine)
    stats = api("archivist", "get", "/api/v1/harvests/daily/statistics").json
    assert stats["harvest"] == "daily" and stats["next"] is None
    runs = {run["harvest_num"]: run for run in stats["items"]}
    assert list(runs) == [3, 2, 1]
    assert runs[1]["bytes"] == 12_000 and runs[1]["objects"] == 150 and runs[1]["jobs_done"] == 1
    assert runs[1]["stop_reasons"]["DOWNLOAD_COMPLETE"] == 1 and runs[1]["stop_reasons"]["OBJECT_LIMIT"] == 1
    assert runs[2]["novel_bytes"] == 4_500 and runs[2]["duplicate_bytes"] == 28_500
    assert runs[3]["jobs_failed"] == 1 and runs[3]["bytes"] == 0
    assert [d["domain"] for d in stats["largest_domains"]] == ["alpha.dk", "beta.dk"]
    assert stats["largest_domains"][0]["bytes"] == 30_000 and stats["largest_domains"][0]["job_id"] == 2
    paged = api("archivist", "get", "/api/v1/harvests/daily/statistics?limit=2").json
    assert [run["harvest_num"] for run in paged["items"]] == [3, 2]
    rest = api("archivist", "get", f"/api/v1/harvests/daily/statistics?limit=2&after={paged['next']}").json
    assert [run["harvest_num"] for run in rest["items"]] == [1]
    assert api("archivist", "get", "/api/v1/harvests/nosuch/statistics").status_code == 404


def test_history_pages_show_the_figures_and_charts(login, webui_engine):
    record_runs(webui_engine)
    client = login("operator")
    index = client.get("/history/").get_data(as_text=True)
    assert 'href="/history/harvests/daily"' in index
    assert client.get("/history/?domain=Alpha.dk").headers["Location"].endswith("/history/domains/alpha.dk")
    domain = client.get("/history/domains/alpha.dk").get_data(as_text=True)
    assert "30.0 KB" in domain and "26.0 KB" in domain and "DOWNLOAD_COMPLETE" in domain
    page = client.get("/history/harvests/daily").get_data(as_text=True)
    assert page.count("<svg") == 5
    assert "2: bytes 30000" not in page  # run 2's bytes are 33000 in all
    assert "<title>2: bytes 33000</title>" in page and "<title>1: novel bytes 12000</title>" in page
    assert "<title>OBJECT_LIMIT: configurations 1</title>" in page
    assert "<title>TIME_LIMIT: configurations" not in page  # a reason no run had is no bar of the chart
    assert "<title>alpha.dk: bytes 30000</title>" in page
    # values are written as people read them, and categories lie one under the other with their totals
    assert "highest 33.0 KB" in page and 'class="chart horizontal"' in page
    # the series' names, in the legend and each bar's title, are the page's language
    danish = client.get("/history/harvests/daily", headers={"Accept-Language": "da"}).get_data(as_text=True)
    assert "<title>1: nye bytes 12000</title>" in danish and "■</tspan> dublerede bytes" in danish
    assert "<title>OBJECT_LIMIT: konfigurationer 1</title>" in danish and "novel bytes" not in danish
    # operators may not export, so the page offers no export
    assert "statistics.csv" not in page


def test_csv_export_for_archivists_only(login, webui_engine):
    record_runs(webui_engine)
    refused = login("operator").get("/history/harvests/daily/statistics.csv")
    assert refused.status_code == 403
    archivist = login("archivist")
    assert "statistics.csv" in archivist.get("/history/harvests/daily").get_data(as_text=True)
    answer = archivist.get("/history/harvests/daily/statistics.csv")
    assert answer.status_code == 200 and answer.mimetype == "text/csv"
    assert 'filename="daily-statistics.csv"' in answer.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(answer.get_data(as_text=True))))
    assert [row["harvest_num"] for row in rows] == ["1", "2", "3"]
    assert rows[0]["bytes"] == "12000" and rows[0]["stop_object_limit"] == "1"
    assert rows[1]["novel_bytes"] == "4500" and rows[1]["duplicate_objects"] == "150"
    assert rows[2]["jobs_failed"] == "1"
    assert archivist.get("/history/harvests/nosuch/statistics.csv").status_code == 404


def test_a_horizontal_chart_lays_categories_one_under_the_other_scaled_to_the_largest() -> None:
    chart = bar_chart(["SIZE_LIMIT", "DOWNLOAD_COMPLETE"], [[5, 20]], ["configurations"], horizontal=True)
    small, large = chart["bars"]
    assert chart["height"] == 2 * CHART_ROW and small["y"] < large["y"]
    room = chart["width"] - CHART_LABEL_WIDTH - CHART_VALUE_WIDTH
    assert small["segments"][0]["x"] == large["segments"][0]["x"] == CHART_LABEL_WIDTH
    assert large["segments"][0]["width"] == room and small["segments"][0]["width"] == room / 4
    assert large["end"] == CHART_LABEL_WIDTH + room and (large["total"], chart["max"]) == (20, 20)
