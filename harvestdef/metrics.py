"""The /metrics endpoint a role serves its own figures on, in Prometheus' text format (docs/metrics.md).

Each role defines its metrics in its own package (scheduler/metrics.py, harvester/metrics.py,
webui/metrics.py) in a ``CollectorRegistry`` it constructs, never prometheus_client's global one: the demo
runs the scheduler, a harvest controller and the web UI as threads of one process, and each must show its
own figures on its own port. This module only serves such a registry, on a thread of prometheus_client's
HTTP server, and closes it again: a role opens its endpoint where it starts (``serving``) and the endpoint
is closed when the role returns.

A port of 0 in the settings means no endpoint (``harvestsuite.metrics.*Port``): metrics cost nothing to a
site that does not scrape them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from harvestdef.errors import HarvestSuiteError

log = logging.getLogger(__name__)

# How long closing waits for the server's thread, which ends as soon as its loop sees the shutdown.
CLOSE_TIMEOUT = 5.0


@dataclass
class MetricsEndpoint:
    """One role's HTTP server of its registry; ``close`` stops it and frees its port."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def host(self) -> str:
        return str(self.server.server_address[0])

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=CLOSE_TIMEOUT)


def open_endpoint(bind: str, port: int, registry: CollectorRegistry, role: str = "this role") -> MetricsEndpoint:
    """Serve ``registry`` on ``bind``:``port`` (0: any free port) until ``close``.

    :raise HarvestSuiteError: the address cannot be listened on (the port is taken, say), naming it.
    """
    try:
        server, thread = start_http_server(port, addr=bind, registry=registry)
    except OSError as exc:
        raise HarvestSuiteError(f"the metrics endpoint of {role} cannot listen on {bind}:{port}: {exc} "
                                f"(harvestsuite.metrics.bind and the role's port setting)") from exc
    return MetricsEndpoint(server, thread)


@contextmanager
def serving(bind: str, port: int, registry: CollectorRegistry, role: str) -> Iterator[MetricsEndpoint | None]:
    """The role's endpoint for the ``with`` block, or None when ``port`` is 0 (no endpoint)."""
    if port == 0:
        yield None
        return
    endpoint = open_endpoint(bind, port, registry, role)
    log.info("%s: metrics at %s", role, endpoint.url)
    try:
        yield endpoint
    finally:
        endpoint.close()


__all__ = ["MetricsEndpoint", "open_endpoint", "serving"]
