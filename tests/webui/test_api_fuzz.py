"""The API fuzzed from its own description (schemathesis): every operation of /api/v1/openapi.json, called
with generated parameters and bodies by an admin on the embedded default (SQLite), must never answer 5xx,
must answer only the statuses it documents, and each answer must match its documented schema.

Half of the cases are made to break the description (a wrong type, a missing field, a value out of range):
those must be answered 4xx too, never 5xx. The run is deterministic (derandomized: the same cases every
run) and bounded: HARVESTSUITE_FUZZ_CASES cases per operation (default FUZZ_CASES, which keeps this test
within 15 s on a quiet 2-core machine; for a longer run before a release, set it to 1000 or more and
lift pytest-timeout's limit: ``HARVESTSUITE_FUZZ_CASES=1000 pytest --timeout=0 tests/webui/test_api_fuzz.py``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core import NOT_SET
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import Engine, update

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine, write_transaction
from harvestdef.db.init import init_database
from harvestdef.model.status import JobStatus
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository
from harvestdef.repositories.users import UserRepository
from harvestdef.repositories.webhookevents import WebhookEvents
from harvestdef.settings import load_settings
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from tests.scheduler.test_intake import one_job
from webui import create_app

FUZZ_CASES = 25
# The STARTED job the fixture makes (the first job of a fresh database), so that its changes and control
# actions are fuzzed past the job's lookup, into the rules of what a change may say.
FUZZ_JOB = 1
# Path parameters naming what the fixture creates: half of an operation's cases address one of these, so
# the fuzzing reaches the code behind the lookup instead of stopping at 404.
KNOWN = {
    "/domains/{name}": [{"name": "kb.dk"}, {"name": "kultur.dk"}],
    "/domains/{name}/configurations/{config}": [{"name": "kb.dk", "config": "defaultconfig"}],
    "/domains/{name}/seedlists/{listname}": [{"name": "kb.dk", "listname": "defaultseeds"}],
    "/harvests/{name}": [{"name": "fuzz_selective"}, {"name": "fuzz_snapshot"}],
    "/harvests/{name}/run": [{"name": "fuzz_selective"}, {"name": "fuzz_snapshot"}],
    "/harvests/{name}/preview": [{"name": "fuzz_selective"}, {"name": "fuzz_snapshot"}],
    "/harvests/{name}/configurations/{domain}/{configuration}": [
        {"name": "fuzz_selective", "domain": "kb.dk", "configuration": "defaultconfig"}],
    "/schedules/{name}": [{"name": "fuzz_daily"}],
    "/templates/{name}": [{"name": "default_orderxml"}],
    "/export/harvests/{name}": [{"name": "fuzz_selective"}],
    "/jobs/{job_id}": [{"job_id": str(FUZZ_JOB)}],
    "/webhooks/{webhook_id}": [{"webhook_id": "1"}],
    "/webhooks/deliveries/{delivery_id}": [{"delivery_id": "1"}],
    "/traps/{name}": [{"name": "fuzz_traps"}],
}
# The crawl.log of FUZZ_JOB's metadata WARC, so that its search is fuzzed through to the lines it reads.
FUZZ_CRAWL_LOG = (
    "2026-03-01T10:00:00.000Z   200       1234 http://a.dk/ - - text/html #001 - - -\n"
    "2026-03-01T10:00:01.000Z   404        100 http://a.dk/missing L http://a.dk/ text/html #002 - - -\n"
    "2026-03-01T10:00:02.000Z   200       5678 https://www.b.dk/page.html L http://a.dk/ text/html #003 - - -\n"
)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def fuzzed_app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[Flask, str]]:
    """The web UI on a fresh SQLite database with its default rows, and an admin's API token; with
    HARVESTSUITE_FUZZ_POSTGRESQL=1, on a fresh PostgreSQL database of the test run instead."""
    root: Path = tmp_path_factory.mktemp("fuzz")
    url = f"sqlite:///{root / 'harvest.db'}"
    if os.environ.get("HARVESTSUITE_FUZZ_POSTGRESQL") == "1":
        url = request.getfixturevalue("postgresql_database")
    engine: Engine = open_engine(url)
    init_database(engine)
    with engine.begin() as conn:
        UserRepository(conn).create("admin", "admin", password="correct horse battery")
        token = UserRepository(conn).create_token("admin")
    job_id, _ = one_job(engine)
    assert job_id == FUZZ_JOB
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(status=int(JobStatus.STARTED)))
        GlobalCrawlerTrapRepository(conn).create("fuzz_traps", [r".*/calendar/.*", r".*\?sort=.*"], "fuzzed", True)
    crawl_log = root / "crawl.log"
    crawl_log.write_text(FUZZ_CRAWL_LOG)
    info = MetadataInfo(job_id=job_id, harvest_id=1, harvest_num=1, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="fuzz", hostname="h", ip="127.0.0.1")
    write_metadata_warc(root / "archive" / "1" / str(job_id) / f"{job_id}-metadata-1.warc.gz", info, [], [],
                        [crawl_log], [])
    # the webhook below points at a loopback port, which a site allows as it would its own network
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "fuzz",
                                                    "harvestsuite.archive.root": str(root / "archive"),
                                                    "harvestsuite.network.allowDestinations": "127.0.0.0/8"})
    app = create_app(settings, engine, {"TESTING": True})
    client, auth = app.test_client(), {"Authorization": f"Bearer {token}"}
    for path, body in [("/api/v1/domains", {"names": ["kb.dk", "kultur.dk"]}),
                       ("/api/v1/schedules", {"name": "fuzz_daily", "timeunit": "DAILY"}),
                       ("/api/v1/harvests", {"type": "selective", "name": "fuzz_selective", "schedule": "fuzz_daily",
                                             "configurations": [{"domain": "kb.dk"}]}),
                       ("/api/v1/harvests", {"type": "snapshot", "name": "fuzz_snapshot"}),
                       ("/api/v1/webhooks", {"name": "fuzz_hook", "url": "http://127.0.0.1:9/hook",
                                             "events": ["harvest_deactivated"], "secret": "fuzz secret, 16+"})]:
        response = client.post(path, json=body, headers=auth)
        assert response.status_code == 201, response.get_data(as_text=True)
    with write_transaction(engine) as conn:  # a delivery, failed by the hook's deactivation, for send-again
        WebhookEvents(conn).harvest_deactivated(1, "fuzz")
    yield app, token
    engine.dispose()


def addressing_known(operation: Any) -> st.SearchStrategy[schemathesis.Case]:
    """The operation's cases, half of them within its description and half breaking it (which must be a
    4xx), and half of each with path parameters naming what the fixture made (KNOWN)."""
    strategy = operation.as_strategy(GenerationMode.POSITIVE) | operation.as_strategy(GenerationMode.NEGATIVE)
    known = next((values for prefix, values in KNOWN.items()
                  if operation.path == prefix or operation.path.startswith(prefix + "/")), None)
    if known is None:
        return strategy

    def address(case: schemathesis.Case, parameters: dict[str, str] | None) -> schemathesis.Case:
        if parameters is not None:
            case.path_parameters = {**(case.path_parameters or {}), **parameters}
        return case
    return st.builds(address, strategy, st.none() | st.sampled_from(known))


def fuzz(operation: Any, cases: int, headers: dict[str, str]) -> tuple[int, list[str]]:
    """Call ``operation`` with ``cases`` generated cases; the number of calls and every failed check."""
    calls, failures = 0, []

    @hypothesis.given(case=addressing_known(operation))
    @hypothesis.settings(max_examples=cases, derandomize=True, database=None, deadline=None,
                         phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    def call(case: schemathesis.Case) -> None:
        nonlocal calls
        calls += 1
        body = "" if case.body is NOT_SET else repr(case.body)[:200]
        try:
            response = case.call(headers=headers)
        except Exception as exc:  # noqa: BLE001 - an exception through the app is a 500 in production
            failures.append(f"{operation.label}: {case.formatted_path} {case.query or ''} "
                            f"{body} -> {type(exc).__name__}: "
                            f"{exc!s:.300}")
            return
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except Exception as exc:  # noqa: BLE001 - every failure is collected, then all are reported
            failures.append(f"{operation.label}: {case.formatted_path} {case.query or ''} "
                            f"{body} -> {response.status_code} "
                            f"{response.text[:300]!r}: {str(exc)[:500]}")

    call()
    return calls, failures


def test_every_operation_answers_within_its_description(fuzzed_app: tuple[Flask, str]) -> None:
    app, token = fuzzed_app
    headers = {"Authorization": f"Bearer {token}"}
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app, headers=headers)
    cases = int(os.environ.get("HARVESTSUITE_FUZZ_CASES", FUZZ_CASES))
    operations, calls, failures = 0, 0, []
    for result in schema.get_all_operations():
        operations += 1
        made, failed = fuzz(result.ok(), cases, headers)
        calls += made
        failures += failed
    print(f"fuzzing: {operations} operations, {calls} cases, {len(failures)} failures")
    described = sum(len(methods) for path, methods in schema.raw_schema["paths"].items() if path != "/openapi.json")
    assert operations == described and operations >= 60
    assert calls >= operations * min(cases, 2)
    by_operation = Counter(failure.split(":", 1)[0] for failure in failures)
    assert failures == [], "\n".join([f"failures by operation: {dict(by_operation)}", *failures[:40]])
