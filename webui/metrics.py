"""The web UI's figures for Prometheus (docs/metrics.md): each request's time and answer, by route.

A route is the name of the view that answered (``status.job``, ``api.list_jobs``), never the URL, so a
million job pages are one series; a request no route matched counts as ``unmatched``. ``init_app`` gives
the app its ``WebuiMetrics`` in a registry of its own (harvestdef/metrics.py says why), which the web UI's
role serves on ``harvestsuite.metrics.webuiPort`` (webui/commands.py: serve); ``metrics_of`` finds it.
"""

from __future__ import annotations

import time

from flask import Flask, Response, g, request
from prometheus_client import CollectorRegistry, Counter, Histogram

EXTENSION = "harvestsuite.metrics"
UNMATCHED = "unmatched"
# A page is a few queries; a crawl-log search or an export may read for the search timeout (20 s).
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class WebuiMetrics:
    """The web UI's metrics, each in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.request_duration = Histogram(
            "harvestsuite_webui_request_duration_seconds", "Seconds from a request's arrival in the app to its "
            "answer, by route (the view's name) and method", ["route", "method"], buckets=REQUEST_BUCKETS,
            registry=self.registry)
        self.requests = Counter("harvestsuite_webui_requests", "Requests answered, by route, method and status code",
                                ["route", "method", "status"], registry=self.registry)

    def _started(self) -> None:
        g.metrics_started = time.perf_counter()

    def _answered(self, response: Response) -> Response:
        started = g.pop("metrics_started", None)
        if started is None:  # a request the app's own hooks did not see start
            return response
        route = request.endpoint or UNMATCHED
        self.request_duration.labels(route=route, method=request.method).observe(time.perf_counter() - started)
        self.requests.labels(route=route, method=request.method, status=str(response.status_code)).inc()
        return response


def init_app(app: Flask) -> WebuiMetrics:
    """Count every request of ``app``; call before any other hook is registered, so that the time counts
    from the first."""
    metrics = WebuiMetrics()
    app.extensions[EXTENSION] = metrics
    app.before_request(metrics._started)
    app.after_request(metrics._answered)
    return metrics


def metrics_of(app: Flask) -> WebuiMetrics:
    return app.extensions[EXTENSION]


__all__ = ["WebuiMetrics", "init_app", "metrics_of"]
