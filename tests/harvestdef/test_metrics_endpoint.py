"""The /metrics endpoint a role serves its registry on (harvestdef/metrics.py), and its settings: a port of 0
serves nothing, a served registry is scraped as Prometheus scrapes it, closing frees the port, a taken port
stops the start naming the address."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter

from harvestdef.errors import HarvestSuiteError, SettingsError
from harvestdef.metrics import open_endpoint, serving
from harvestdef.settings import load_settings
from tests.metricscrape import free_port, refuses_connections, scrape, value


def test_port_zero_serves_nothing():
    with serving("127.0.0.1", 0, CollectorRegistry(), "a role") as endpoint:
        assert endpoint is None


def test_a_served_registry_is_scraped_and_closing_frees_the_port():
    registry = CollectorRegistry()
    done = Counter("harvestsuite_test_things", "things done", ["kind"], registry=registry)
    other = CollectorRegistry()  # a second role's registry in the same process shows on its own port only
    Counter("harvestsuite_test_other", "the other role's", registry=other).inc(7)
    port = free_port()
    with serving("127.0.0.1", port, registry, "a role") as endpoint, \
            serving("127.0.0.1", free_port(), other, "another role") as second:
        assert endpoint is not None and second is not None
        assert endpoint.url == f"http://127.0.0.1:{port}/metrics"
        assert value(scrape(endpoint.url), "harvestsuite_test_things_total", kind="a") is None
        done.labels(kind="a").inc(3)
        samples = scrape(endpoint.url)
        assert value(samples, "harvestsuite_test_things_total", kind="a") == 3
        assert not any(name.startswith("harvestsuite_test_other") for name, _ in samples)
        assert value(scrape(second.url), "harvestsuite_test_other_total") == 7
    assert refuses_connections(port)


def test_a_taken_port_is_refused_naming_the_address():
    endpoint = open_endpoint("127.0.0.1", 0, CollectorRegistry())
    try:
        with pytest.raises(HarvestSuiteError, match=rf"scheduler cannot listen on 127\.0\.0\.1:{endpoint.port}"):
            open_endpoint("127.0.0.1", endpoint.port, CollectorRegistry(), "the scheduler")
    finally:
        endpoint.close()


def test_metrics_settings_are_checked():
    settings = load_settings(environ={})
    assert (settings.metrics.bind, settings.metrics.schedulerPort, settings.metrics.harvesterPort,
            settings.metrics.webuiPort, settings.metrics.schedulerTargets) == ("127.0.0.1", 0, 0, 0, ())
    chosen = load_settings(environ={"HARVESTSUITE__HARVESTSUITE__METRICS__HARVESTERPORT": "9102",
                                    "HARVESTSUITE__HARVESTSUITE__METRICS__SCHEDULERTARGETS":
                                        "http://a.example.org:9101/metrics, http://b.example.org:9101/metrics"})
    assert chosen.metrics.harvesterPort == 9102
    assert chosen.metrics.schedulerTargets == ("http://a.example.org:9101/metrics", "http://b.example.org:9101/metrics")
    with pytest.raises(SettingsError, match="harvestsuite.metrics.webuiPort: a port from 1 to 65535"):
        load_settings(environ={}, overrides={"harvestsuite.metrics.webuiPort": 70000})
    with pytest.raises(SettingsError, match="schedulerTargets: http:// or https:// addresses"):
        load_settings(environ={}, overrides={"harvestsuite.metrics.schedulerTargets": "sched1:9101"})
