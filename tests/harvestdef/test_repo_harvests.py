"""Harvest definitions: selective, event ("add seeds") and snapshot harvests, ids, editions, configurations.
Both databases."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import insert, select

from harvestdef.db import schema as s
from harvestdef.errors import ConflictError, NotFoundError, RefusedLinesError, StaleEditionError, ValidationError
from harvestdef.model.definitions import HarvestKind, SelectiveHarvest, SnapshotHarvest
from harvestdef.model.status import JobStatus
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository, event_config_name
from harvestdef.repositories.seedlists import SeedListRepository
from harvestdef.traps import CrawlerTrapError
from tests.harvestdef.factories import (
    ensure_default_template,
    make_domain,
    make_selective_harvest,
    make_snapshot_harvest,
    make_template,
)

NEXT = datetime(2026, 3, 1, 4, 30, tzinfo=UTC)


def test_harvest_ids_are_max_plus_one(engine):
    with engine.begin() as conn:
        conn.execute(insert(s.harvestdefinitions).values(
            harvest_id=41, name="imported", numevents=3, submitted=NEXT, isactive=False, edition=1))
        conn.execute(insert(s.fullharvests).values(harvest_id=41))
        first = make_selective_harvest(conn, "first")
        second = make_snapshot_harvest(conn, "second")
    assert (first.harvest_id, second.harvest_id) == (42, 43)


def test_selective_harvest_with_schedule_nextdate_traps(engine):
    with engine.begin() as conn:
        schedule_id = conn.scalar(select(s.schedules.c.schedule_id).where(s.schedules.c.name == "Once_a_week"))
        harvest = HarvestRepository(conn, "alice").create_selective(
            "news", schedule_id, comments="daily news", audience="researchers", nextdate=NEXT,
            crawlertraps=".*/print/.*\n\n.*/print/.*")
        by_name = HarvestRepository(conn).get("news")
        listed = list(HarvestRepository(conn).all_harvests(HarvestKind.SELECTIVE))
    assert isinstance(harvest, SelectiveHarvest) and harvest.kind is HarvestKind.SELECTIVE
    assert (harvest.schedule_id, harvest.schedule_name, harvest.nextdate) == (schedule_id, "Once_a_week", NEXT)
    assert harvest.crawlertraps == (".*/print/.*",)
    assert (harvest.comments, harvest.audience, harvest.isactive, harvest.numevents) == (
        "daily news", "researchers", False, 0)
    assert by_name == harvest and listed == [harvest]


def test_selective_refuses_unknown_schedule_bad_traps_and_duplicate_names(engine):
    with engine.begin() as conn:
        repository = HarvestRepository(conn)
        with pytest.raises(NotFoundError, match="Every_blue_moon"):
            repository.create_selective("x", "Every_blue_moon")
        with pytest.raises(CrawlerTrapError, match="line 2"):
            repository.create_selective("x", "Once", crawlertraps="ok\n[unclosed")
        repository.create_selective("x", "Once")
        with pytest.raises(ConflictError, match="a harvest definition named x already exists"):
            repository.create_selective("x", "Once")
        with pytest.raises(ConflictError, match="a harvest definition named x already exists"):
            repository.create_snapshot("x")


def test_snapshot_harvest_fields_and_previous(engine):
    with engine.begin() as conn:
        step1 = make_snapshot_harvest(conn, "broad step 1", maxbytes=10_000_000)
        step2 = HarvestRepository(conn).create_snapshot(
            "broad step 2", maxobjects=2100, maxbytes=1_000_000_000, maxjobrunningtime=259200, previous="broad step 1")
        snapshots = [h.name for h in HarvestRepository(conn).all_harvests(HarvestKind.SNAPSHOT)]
        with pytest.raises(ValidationError, match="-1"):
            HarvestRepository(conn).create_snapshot("bad", maxbytes=-7)
        with pytest.raises(ValidationError, match="selective harvest, not a snapshot"):
            make_selective_harvest(conn, "sel")
            HarvestRepository(conn).create_snapshot("bad", previous="sel")
    assert isinstance(step2, SnapshotHarvest) and step2.is_snapshot()
    assert (step2.maxobjects, step2.maxbytes, step2.maxjobrunningtime, step2.previoushd, step2.isindexready) == (
        2100, 1_000_000_000, 259200, step1.harvest_id, False)
    assert snapshots == ["broad step 1", "broad step 2"]


def test_a_snapshot_created_without_a_time_per_job_gets_the_settings_one(engine):
    from harvestdef.settings import load_settings

    settings = load_settings(environ={}, overrides={"harvester.scheduler.jobGen.maxTimeToCompleteJob": 7200})
    with engine.begin() as conn:
        harvests = HarvestRepository.from_settings(conn, settings)
        given = harvests.create_snapshot("given", maxjobrunningtime=0)
        defaulted = harvests.create_snapshot("defaulted")
        plain = HarvestRepository(conn).create_snapshot("plain")
    assert (given.maxjobrunningtime, defaulted.maxjobrunningtime, plain.maxjobrunningtime) == (0, 7200, 0)


def test_snapshot_continuing_an_unfinished_one_cannot_be_activated(engine):
    with engine.begin() as conn:
        step1 = make_snapshot_harvest(conn, "step1")
        step2 = make_snapshot_harvest(conn, "step2", previous="step1")
        repository = HarvestRepository(conn)
        with pytest.raises(ValidationError, match="has no jobs yet"):
            repository.activate("step2", step2.edition)
        job = dict(harvest_id=step1.harvest_id, channel="SNAPSHOT", snapshot=True, orderxml="default_orderxml",
                   orderxmldoc="<beans/>", seedlist="http://kb.dk", harvest_num=1)
        conn.execute(insert(s.jobs).values(job_id=1, status=int(JobStatus.DONE), **job))
        conn.execute(insert(s.jobs).values(job_id=2, status=int(JobStatus.STARTED), **job))
        with pytest.raises(ValidationError, match="still has jobs STARTED"):
            repository.activate("step2", step2.edition)
        conn.execute(s.jobs.update().where(s.jobs.c.job_id == 2).values(status=int(JobStatus.FAILED)))
        assert repository.activate("step2", step2.edition).isactive


def test_rename_comments_audience_activate_with_editions(engine):
    with engine.begin() as conn:
        harvest = make_selective_harvest(conn, "old")
        repository = HarvestRepository(conn, "alice")
        harvest = repository.rename("old", "new", harvest.edition)
        harvest = repository.set_comments("new", "why", harvest.edition)
        harvest = repository.set_audience("new", "public", harvest.edition)
        harvest = repository.activate("new", harvest.edition)
        make_selective_harvest(conn, "taken")
    assert (harvest.name, harvest.comments, harvest.audience, harvest.isactive, harvest.edition) == (
        "new", "why", "public", True, 5)
    with engine.begin() as conn, pytest.raises(ConflictError, match="taken"):
        HarvestRepository(conn).rename("new", "taken", harvest.edition)
    with engine.begin() as conn, pytest.raises(StaleEditionError, match="harvest definition"):
        HarvestRepository(conn).deactivate("new", harvest.edition - 1)
    with engine.connect() as conn:
        assert HarvestRepository(conn).get("new") == harvest
        changes = AuditRepository(conn).changes_of("harvestdefinitions", harvest.harvest_id)
    assert [c.action for c in changes] == ["update"] * 4 + ["insert"]
    assert changes[0].before["isactive"] is False and changes[0].after["isactive"] is True


def test_update_selective_and_snapshot_details(engine):
    with engine.begin() as conn:
        selective = make_selective_harvest(conn, "sel")
        snapshot = make_snapshot_harvest(conn, "snap")
        repository = HarvestRepository(conn)
        selective = repository.update_selective("sel", selective.edition, schedule="Once_an_hour", nextdate=NEXT,
                                                crawlertraps=".*/login.*")
        assert (selective.schedule_name, selective.nextdate, selective.crawlertraps) == (
            "Once_an_hour", NEXT, (".*/login.*",))
        selective = repository.update_selective("sel", selective.edition, nextdate=None)
        assert selective.nextdate is None and selective.schedule_name == "Once_an_hour"
        snapshot = repository.update_snapshot("snap", snapshot.edition, maxbytes=-1, maxjobrunningtime=3600)
        assert (snapshot.maxbytes, snapshot.maxjobrunningtime) == (-1, 3600)
        with pytest.raises(ValidationError, match="cannot continue itself"):
            repository.update_snapshot("snap", snapshot.edition, previous="snap")
        with pytest.raises(ValidationError, match="snapshot harvest, not a selective"):
            repository.update_selective("snap", snapshot.edition, nextdate=NEXT)


def test_add_and_remove_configurations(engine):
    with engine.begin() as conn:
        harvest = make_selective_harvest(conn, "sel", domains=["kb.dk", "dr.dk"])
        repository = HarvestRepository(conn)
        entries = [(e.domain_name, e.config_name) for e in repository.configurations("sel")]
        assert entries == [("dr.dk", "defaultconfig"), ("kb.dk", "defaultconfig")]
        harvest = repository.add_configurations("sel", [("kb.dk", "defaultconfig")], harvest.edition)
        assert len(list(repository.configurations("sel"))) == 2
        harvest = repository.remove_configuration("sel", "dr.dk", "defaultconfig", harvest.edition)
        assert [e.domain_name for e in repository.configurations("sel")] == ["kb.dk"]
        with pytest.raises(NotFoundError):
            repository.remove_configuration("sel", "dr.dk", "defaultconfig", harvest.edition)
        with pytest.raises(RefusedLinesError, match="domain kb.dk has no configuration nosuch"):
            repository.add_configurations("sel", [("kb.dk", "nosuch")], harvest.edition)
        # every pair that names no configuration is named, with its place, and nothing is added
        with pytest.raises(RefusedLinesError) as refused:
            repository.add_configurations("sel", [("nosuch.dk", None), ("kb.dk", "defaultconfig"), ("kb.dk", "x"),
                                                  ("not a name", "y")], harvest.edition)
        assert [(r.line, r.text, r.reason) for r in refused.value.refusals][:3] == [
            (1, "nosuch.dk", "no domain nosuch.dk"), (3, "kb.dk/x", "domain kb.dk has no configuration x"),
            (4, "not a name/y", refused.value.refusals[2].reason)]
        assert refused.value.field == "configurations" and len(refused.value.refusals) == 3
        assert repository.get("sel").edition == harvest.edition


def test_add_seeds_creates_domains_configurations_and_seedlists(engine):
    with engine.begin() as conn:
        ensure_default_template(conn)
        make_template(conn, "event")
        make_domain(conn, "kb.dk")
        harvest = make_selective_harvest(conn, "Election")
        repository = HarvestRepository(conn, "alice")
        made = repository.add_seeds(
            "Election", "https://www.kb.dk/valg\nhttp://valg.dr.dk/\nhttps://www.dr.dk/nyheder\nhttp://københavn.dk/",
            "event", harvest.edition, maxbytes=-1, maxobjects=5000, maxrate=60)
        name = event_config_name("Election", "event", -1, 5000)
        seeds = {c.domain_name: SeedListRepository(conn).get_by_id(c.seedlist_ids[0]).seeds for c in made}
        entries = {(e.domain_name, e.config_name) for e in repository.configurations("Election")}
        created = DomainRepository(conn).get("dr.dk")
    assert name == "Election_event_UnlimitedBytes_5000Objects"
    assert {c.name for c in made} == {name} and {c.template_name for c in made} == {"event"}
    assert {(c.maxbytes, c.maxobjects, c.maxrate) for c in made} == {(-1, 5000, 60)}
    assert seeds == {"kb.dk": ("https://www.kb.dk/valg",),
                     "dr.dk": ("http://valg.dr.dk/", "https://www.dr.dk/nyheder"),
                     "københavn.dk": ("http://xn--kbenhavn-54a.dk/",)}
    assert entries == {("kb.dk", name), ("dr.dk", name), ("københavn.dk", name)}
    assert created.defaultconfig_id is not None


def test_add_seeds_name_collision_gets_a_timestamp_suffix(engine):
    clock = iter([datetime(2026, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)] * 10)
    with engine.begin() as conn:
        ensure_default_template(conn)
        harvest = make_selective_harvest(conn, "Event")
        repository = HarvestRepository(conn, clock=lambda: next(clock))
        first = repository.add_seeds("Event", ["http://kb.dk/a"], "default_orderxml", harvest.edition, maxbytes=100)
        second = repository.add_seeds("Event", ["http://kb.dk/b"], "default_orderxml", harvest.edition + 1,
                                      maxbytes=100)
        third = repository.add_seeds("Event", ["http://kb.dk/c"], "default_orderxml", harvest.edition + 2,
                                     maxbytes=100)
        names = [c.name for c in ConfigurationRepository(conn).list_for_domain("kb.dk")]
    base = "Event_default_orderxml_100Bytes_UnlimitedObjects"
    stamp = str(int(datetime(2026, 5, 1, 12, 0, 0, 123000, tzinfo=UTC).timestamp() * 1000))
    assert first[0].name == base
    assert second[0].name == f"{base}_{stamp}"
    assert third[0].name == f"{base}_{stamp}_2"
    assert sorted(names) == sorted(["defaultconfig", base, f"{base}_{stamp}", f"{base}_{stamp}_2"])


def test_add_seeds_checks_every_seed_before_writing(engine):
    with engine.begin() as conn:
        ensure_default_template(conn)
        harvest = make_selective_harvest(conn, "Event")
        repository = HarvestRepository(conn)
        with pytest.raises(ValidationError, match="1 line refused, nothing was stored: line 2: 'http://co.uk/': "
                                                  "the host 'co.uk' is a public suffix"):
            repository.add_seeds("Event", ["http://kb.dk/", "http://co.uk/"], "default_orderxml", harvest.edition)
        assert not DomainRepository(conn).exists("kb.dk")
        with pytest.raises(NotFoundError, match="nosuch"):
            repository.add_seeds("Event", ["http://kb.dk/"], "nosuch", harvest.edition)
        with pytest.raises(StaleEditionError):
            repository.add_seeds("Event", ["http://kb.dk/"], "default_orderxml", harvest.edition + 3)


def test_a_selective_harvest_without_a_next_date_runs_at_its_schedules_first_event(engine):
    """NetarchiveSuite's PartialHarvest takes its first run from the schedule; an empty nextdate would never
    be ready, so a harvest made in the web UI or the API without a date would never run."""
    now = datetime(2026, 3, 1, 4, 30, 15, tzinfo=UTC)
    with engine.begin() as conn:
        repository = HarvestRepository(conn, clock=lambda: now, zone=ZoneInfo("Europe/Copenhagen"))
        anytime = repository.create_selective("anytime", "Once_a_day")
        daily_at_six = conn.execute(insert(s.schedules).values(
            name="six_am", comments="", timeunit=2, numtimeunits=1, anytime=False, onhour=6, onminute=0,
            edition=1)).inserted_primary_key[0]
        at_six = repository.create_selective("at six", daily_at_six)
        given = repository.create_selective("given", "Once_a_day", nextdate=NEXT.replace(day=9))
    assert anytime.nextdate == now
    # six in the morning in Copenhagen (UTC+1 in March) is 05:00 UTC, later the same day
    assert at_six.nextdate == datetime(2026, 3, 1, 5, 0, tzinfo=UTC)
    assert given.nextdate == NEXT.replace(day=9)
