"""Runs asked for outside the schedule ("run now") as real ticks carry them out: one request makes one run,
whether or not the schedule makes the harvest due at the same tick, a failed run uses its request up, and
a snapshot's own crawl attributes replace its configurations' in the jobs it makes."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from harvestdef.crawlattributes import HONOR_ROBOTS_DOT_TXT, MAX_HOPS
from harvestdef.db import schema as s
from harvestdef.repositories.crawlattributes import CrawlAttributeRepository
from harvestdef.repositories.runrequests import RunRequestRepository
from scheduler.jobgen.generate import GenerationOptions
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions
from tests.scheduler.factories import T0, make_domain, make_selective, make_snapshot, set_attribute

NOW = T0 + timedelta(days=3, hours=1)  # between two of the daily schedule's events


def ticker(engine) -> Ticker:
    return Ticker(engine, GenerationOptions(deduplication_enabled=False),
                  TickOptions(postpone_unregistered_channel=False), Notifier())


def runs(engine, harvest_id: int) -> list[int]:
    with engine.connect() as conn:
        return list(conn.scalars(select(s.jobs.c.harvest_num).where(s.jobs.c.harvest_id == harvest_id)
                                 .distinct().order_by(s.jobs.c.harvest_num)))


def test_a_request_on_a_harvest_the_schedule_makes_due_is_one_run_that_moves_the_schedule_on(engine):
    with engine.begin() as conn:
        _, config = make_domain(conn, "kb.dk")
        make_selective(conn, 1, "sel", [config], nextdate=T0)
        RunRequestRepository(conn, "curator").request_run("sel", NOW)
    report = ticker(engine).tick(NOW)
    assert list(report.generated) == ["sel"]
    assert runs(engine, 1) == [1]
    with engine.connect() as conn:
        nextdate = conn.scalar(select(s.partialharvests.c.nextdate))
        assert RunRequestRepository(conn).find(1) is None
    assert nextdate is not None and nextdate.replace(tzinfo=NOW.tzinfo) > NOW, "the scheduled run moved on"
    for later in (NOW + timedelta(minutes=1), NOW + timedelta(minutes=2)):
        assert not ticker(engine).tick(later).generated
    assert runs(engine, 1) == [1]


def test_a_failed_run_uses_its_request_up(engine):
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
        make_snapshot(conn, 1, "broad")
        conn.execute(s.harvestdefinitions.update().values(isactive=False))
        conn.execute(s.ordertemplates.update().values(orderxml="<beans>%{NO_SUCH_PLACEHOLDER}</beans>"))
        RunRequestRepository(conn, "curator").request_run("broad", NOW)
    report = ticker(engine).tick(NOW)
    assert list(report.deactivated) == ["broad"]
    with engine.connect() as conn:
        assert RunRequestRepository(conn).find(1) is None
        assert conn.scalar(select(func.count()).select_from(s.jobs)) == 0
    assert not ticker(engine).tick(NOW + timedelta(minutes=1)).deactivated, "not failed again and again"


def test_a_snapshots_own_attributes_replace_its_configurations(engine):
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk")
        _, dr = make_domain(conn, "dr.dk")
        set_attribute(conn, kb, MAX_HOPS, 3)
        set_attribute(conn, dr, MAX_HOPS, 8)
        make_snapshot(conn, 1, "broad")
        CrawlAttributeRepository(conn, "curator").set_snapshot(1, {HONOR_ROBOTS_DOT_TXT: 1})
    ticker(engine).tick(NOW)
    with engine.connect() as conn:
        documents = list(conn.scalars(select(s.jobs.c.orderxmldoc).order_by(s.jobs.c.job_id)))
    # the configurations' max hops differ, so two jobs; both obey robots.txt, as the snapshot says
    assert len(documents) == 2
    assert all('name="robotsPolicyName" value="obey"' in document for document in documents)
    assert sorted('name="maxHops" value="3"' in document for document in documents) == [False, True]
