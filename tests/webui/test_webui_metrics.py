"""The web UI's /metrics (webui/metrics.py, docs/metrics.md), scraped from ``harvestsuite webui run`` on its own
port: each request counts under the name of its route, never its URL, with its method and status; a path no
route matches counts as ``unmatched``; the endpoint closes with the web UI."""

from __future__ import annotations

import http.client
from pathlib import Path

from tests.metricscrape import free_port, refuses_connections, scrape, value
from tests.webui.browser import ServedWebui

DURATION = "harvestsuite_webui_request_duration_seconds"
REQUESTS = "harvestsuite_webui_requests_total"


def get(port: int, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def test_requests_count_by_route(tmp_path: Path):
    metrics_port = free_port()
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with ServedWebui(tmp_path, users=("curator",), settings={"harvestsuite.metrics.webuiPort": str(metrics_port)}) \
            as served:
        before = scrape(url)  # the start-up's own looks at /login are counted already
        logins = value(before, f"{DURATION}_count", route="auth.login", method="GET") or 0
        assert logins >= 1
        assert get(served.port, "/login") == 200
        assert get(served.port, "/login") == 200
        job_page = get(served.port, "/status/jobs/12345")  # not logged in: sent to the login page
        other_job = get(served.port, "/status/jobs/67890")
        assert job_page == other_job
        unknown = get(served.port, "/no/such/page")  # not logged in either: sent to the login page too

        after = scrape(url)
        assert value(after, f"{DURATION}_count", route="auth.login", method="GET") == logins + 2
        assert value(after, f"{DURATION}_sum", route="auth.login", method="GET") > 0
        # two job pages are one route: the job id is in no label
        assert value(after, REQUESTS, route="status.job", method="GET", status=str(job_page)) == 2
        assert value(after, f"{DURATION}_count", route="status.job", method="GET") == 2
        assert value(after, REQUESTS, route="unmatched", method="GET", status=str(unknown)) == 1
        labels = {dict(labels).get("route") for name, labels in after if name.startswith("harvestsuite_webui_")}
        assert not any(route and "/" in route for route in labels), labels
        assert f"metrics at {url}" in served.log()
    assert refuses_connections(metrics_port), "the endpoint outlived the web UI"
