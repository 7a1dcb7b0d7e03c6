"""Scraping a role's /metrics endpoint in tests, as Prometheus does: an HTTP GET, the answer parsed with
prometheus_client's own parser."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def scrape(url: str, timeout: float = 5.0) -> Samples:
    """Every sample of the endpoint at ``url``, by (name, labels)."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode("utf-8")
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The sample ``name`` with exactly ``labels``; None if the endpoint has none."""
    return samples.get((name, frozenset(labels.items())))


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` whose labels include ``labels`` (a counter over every route, say);
    AssertionError naming the endpoint's names when there is none."""
    found = [number for (have_name, have), number in samples.items()
             if have_name == name and set(labels.items()) <= have]
    assert found, f"no {name} {labels} among {sorted({have_name for have_name, _ in samples})}"
    return sum(found)


def scrape_until(url: str, condition: Callable[[Samples], bool], timeout: float, what: str) -> Samples:
    """Scrape ``url`` until ``condition`` holds of its samples (the endpoint may not listen yet at first)."""
    deadline = time.monotonic() + timeout
    samples: Samples = {}
    error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            samples = scrape(url)
            error = None
        except OSError as exc:
            error = exc
        else:
            if condition(samples):
                return samples
        time.sleep(0.2)
    shown = "\n".join(f"{name}{dict(labels)} {number}" for (name, labels), number in sorted(
        samples.items(), key=lambda item: item[0][0]) if name.startswith("harvestsuite_"))
    raise AssertionError(f"{url}: not {what} within {timeout} s ({error or 'scraped'}):\n{shown}")


def refuses_connections(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) != 0


__all__ = ["free_port", "refuses_connections", "scrape", "scrape_until", "total", "value"]
