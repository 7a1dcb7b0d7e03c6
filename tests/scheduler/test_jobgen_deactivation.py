"""A failed run's error says whether its harvest definition was deactivated: when the deactivation fails
too (a database without audit_log, say), the harvest is still active and the message must say so."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

import harvestdef.repositories.harvests as harvests
from harvestdef.db import schema as s
from harvestdef.errors import JobGenerationError
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from tests.scheduler.factories import T0, make_domain, make_snapshot

NOW = T0 + timedelta(days=3)


def test_failed_run_whose_deactivation_fails_too_says_the_harvest_is_still_active(engine, monkeypatch):
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
        make_snapshot(conn, 1, "broad")

    def no_audit_table(*_args, **_kwargs):
        raise OperationalError("INSERT INTO audit_log", {}, Exception('relation "audit_log" does not exist'))

    # both the run and its deactivation write an audit row, so both fail
    monkeypatch.setattr(harvests, "record_audit", no_audit_table)
    with pytest.raises(JobGenerationError) as raised:
        generate_jobs(engine, "broad", GenerationOptions(), NOW)
    message = str(raised.value)
    assert "deactivating the harvest failed too" in message and "still active" in message
    assert "was deactivated" not in message
    with engine.connect() as conn:
        assert conn.scalar(select(s.harvestdefinitions.c.isactive)) is True


def test_failed_run_whose_deactivation_works_says_so(engine):
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
        make_snapshot(conn, 1, "broad")
        conn.execute(s.ordertemplates.update().values(orderxml="<beans>%{NO_SUCH_PLACEHOLDER}</beans>"))
    with pytest.raises(JobGenerationError, match="failed and the harvest was deactivated"):
        generate_jobs(engine, "broad", GenerationOptions(), NOW)
    with engine.connect() as conn:
        assert conn.scalar(select(s.harvestdefinitions.c.isactive)) is False
