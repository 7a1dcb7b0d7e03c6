"""Claims, status intake, history and summaries, supervision and readiness on both databases, driven
through the handlers directly (the embedded queue carries the answers)."""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import IllegalTransitionError, StaleJobError
from harvestdef.messages import (
    ClaimRequest,
    CrawlStatus,
    DomainReport,
    DomainStats,
    HarvesterReady,
    HarvesterStatus,
    RegistrationRequest,
)
from harvestdef.model.controllers import LostControllerRule
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.queues import QueueNames, open_transport
from harvestdef.repositories.history import legacy_stop_reason, rebuild_summaries
from harvestdef.repositories.jobs import JobRepository, allocate_job_ids, new_job_row
from harvestdef.settings import QueueSettings
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions, TickReport
from tests.scheduler.factories import make_domain, make_selective, make_snapshot

NAMES = QueueNames("UNIT")


@pytest.fixture
def transport(tmp_path: Path):
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
    yield transport
    transport.close()


@pytest.fixture
def notifier():
    return Notifier()


@pytest.fixture
def handlers(engine, transport, notifier):
    return MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()), StatusIntake(notifier))


def register(handle, controller: str, channels=("FOCUSED",)):
    return handle(RegistrationRequest(controller_id=controller, host="h", channels=list(channels),
                                      reply_queue=NAMES.controller(controller)))


def ready(handle, controller: str, channels=("FOCUSED",)):
    return handle(HarvesterReady(controller_id=controller, host="h", channels=list(channels)), utcnow())


def claim(handle, job_id: int, attempt: str, controller: str):
    return handle(ClaimRequest(job_id=job_id, attempt_id=attempt, controller_id=controller,
                               reply_queue=NAMES.controller(controller)))


def job(engine, job_id):
    with engine.connect() as conn:
        return JobRepository(conn).get(job_id)


def one_job(engine, domains=(("a.dk", 1000, -1), ("b.dk", 1000, -1)), forcemaxbytes=None):
    """A selective harvest with one NEW job of the given domains (name, maxbytes, maxobjects)."""
    with engine.begin() as conn:
        configs = [make_domain(conn, name, maxbytes=maxbytes, maxobjects=maxobjects)[1]
                   for name, maxbytes, maxobjects in domains]
        make_selective(conn, 1, "daily", configs, nextdate=utcnow() - timedelta(minutes=1))
    result = generate_jobs(engine, 1, GenerationOptions())
    (job_id,) = result.job_ids
    if forcemaxbytes is not None:
        with engine.begin() as conn:
            conn.execute(update(s.jobs).values(forcemaxbytes=forcemaxbytes))
    return job_id, configs


def started_job(engine, handlers, controller="ctl-1"):
    handle = handlers.carry_out_one
    job_id, configs = one_job(engine)
    register(handle, controller)
    assert ready(handle, controller) == job_id
    attempt = job(engine, job_id).attempt_id
    assert claim(handle, job_id, attempt, controller).granted
    assert handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=controller,
                                              status=JobStatus.STARTED))
    return job_id, attempt, configs


def report(*stats, default=StopReason.DOWNLOAD_COMPLETE):
    return DomainReport(default_stop_reason=default, domains=[
        DomainStats(domain=d, configuration="defaultconfig", objects=o, bytes=b, novel_objects=o, novel_bytes=b,
                    duplicate_objects=0, duplicate_bytes=0, stop_reason=r) for d, o, b, r in stats])


def test_ready_releases_the_oldest_new_job_once_per_idle_controller(engine, handlers, transport):
    handle = handlers.carry_out_one
    job_id, _ = one_job(engine)
    assert ready(handle, "ctl-1") is None, "an unregistered controller releases nothing"
    register(handle, "ctl-1")
    assert ready(handle, "ctl-1", ["SNAPSHOT", "FOCUSED"]) == job_id
    row = job(engine, job_id)
    assert row.status == JobStatus.SUBMITTED and row.attempt_id and row.submitteddate
    assert transport.message_count(NAMES.jobs("FOCUSED")) == 1
    with write_transaction(engine) as conn:  # a second NEW job, while the first still waits unclaimed
        (second,) = allocate_job_ids(conn, 1)
        JobRepository(conn).insert([new_job_row(job_id=second, harvest_id=1, channel="FOCUSED", snapshot=False,
                                                orderxml="default_orderxml", harvest_num=1, creationdate=utcnow())])
    assert ready(handle, "ctl-1") is None, "the released job still waits for this controller"
    assert claim(handle, job_id, row.attempt_id, "ctl-1").granted
    assert ready(handle, "ctl-1") == second, "once claimed, the next ready message releases the next job"


def test_old_ready_message_releases_nothing(engine, handlers):
    handle = handlers.carry_out_one
    one_job(engine)
    register(handle, "ctl-1")
    stale = HarvesterReady(controller_id="ctl-1", host="h", channels=["FOCUSED"])
    assert handle(stale, utcnow() - timedelta(hours=1)) is None


def test_an_attempt_is_granted_to_one_controller_only(engine, handlers):
    handle = handlers.carry_out_one
    job_id, _ = one_job(engine)
    register(handle, "ctl-1")
    register(handle, "ctl-2")
    ready(handle, "ctl-1")
    attempt = job(engine, job_id).attempt_id
    answers = {}
    threads = [threading.Thread(target=lambda c=c: answers.setdefault(c, claim(handle, job_id, attempt, c)))
               for c in ("ctl-1", "ctl-2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    granted = [c for c, a in answers.items() if a.granted]
    assert len(granted) == 1
    loser = next(c for c in answers if c not in granted)
    assert f"granted to {granted[0]}" in answers[loser].reason
    assert claim(handle, job_id, attempt, granted[0]).granted, "the same controller is granted again"
    assert not claim(handle, job_id, "not-the-attempt", granted[0]).granted
    assert job(engine, job_id).controller == granted[0]


def test_final_status_writes_history_for_every_configuration_with_legacy_stop_reasons(engine, handlers):
    handle = handlers.carry_out_one
    job_id, configs = one_job(engine, domains=(("a.dk", 1000, -1), ("b.dk", 1000, 7), ("c.dk", 1000, -1),
                                               ("d.dk", 1000, -1)))
    register(handle, "ctl-1")
    ready(handle, "ctl-1")
    attempt = job(engine, job_id).attempt_id
    claim(handle, job_id, attempt, "ctl-1")
    handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1",
                                       status=JobStatus.STARTED))
    done = CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.DONE,
                       domain_report=report(("a.dk", 3, 1200, StopReason.SIZE_LIMIT),
                                            ("b.dk", 7, 9000, StopReason.OBJECT_LIMIT),
                                            ("c.dk", 4, 400, StopReason.DOWNLOAD_COMPLETE),
                                            ("elsewhere.org", 99, 99, StopReason.DOWNLOAD_COMPLETE),
                                            default=StopReason.DOWNLOAD_UNFINISHED),
                       harvest_errors="1 alert")
    assert handle(done)
    assert not handle(done), "a repeated final status changes nothing"
    with engine.connect() as conn:
        rows = {r["config_id"]: r for r in conn.execute(select(s.historyinfo)).mappings()}
        assert sorted(rows) == sorted(configs), "one row per configuration, none for other domains"
        a, b, c, d = (rows[config] for config in configs)
        assert (a["stopreason"], a["objectcount"], a["bytecount"]) == (StopReason.CONFIG_SIZE_LIMIT, 3, 1200)
        assert b["stopreason"] == StopReason.CONFIG_OBJECT_LIMIT
        assert (c["stopreason"], c["novel_objects"], c["duplicate_objects"]) == (StopReason.DOWNLOAD_COMPLETE, 4, 0)
        assert (d["stopreason"], d["objectcount"], d["bytecount"]) == (StopReason.DOWNLOAD_UNFINISHED, 0, 0)
        run = conn.execute(select(s.harvest_run_summary)).mappings().one()
        assert (run["jobs_done"], run["configurations"], run["objects"], run["bytes"]) == (1, 4, 14, 10_600)
        assert (run["stop_config_size_limit"], run["stop_config_object_limit"], run["stop_download_unfinished"],
                run["stop_download_complete"]) == (1, 1, 1, 1)
    finished = job(engine, job_id)
    assert finished.status == JobStatus.DONE and finished.enddate and finished.harvest_errors == "1 alert"


def test_legacy_conversion_keeps_the_harvest_limit_when_the_job_limit_bound():
    # the configuration allows more than the job's per-domain limit: the job's (harvest's) limit bound
    assert legacy_stop_reason(StopReason.SIZE_LIMIT, 500, 10_000, -1, 1000, -1) == StopReason.SIZE_LIMIT
    assert legacy_stop_reason(StopReason.SIZE_LIMIT, 500, 1000, -1, 5000, -1) == StopReason.CONFIG_SIZE_LIMIT
    assert legacy_stop_reason(StopReason.SIZE_LIMIT, 20_000, 10_000, -1, 50_000, -1) == StopReason.CONFIG_SIZE_LIMIT
    assert legacy_stop_reason(StopReason.SIZE_LIMIT, 5, -1, -1, -1, -1) == StopReason.SIZE_LIMIT
    assert legacy_stop_reason(StopReason.OBJECT_LIMIT, 5, -1, 10, -1, -1) == StopReason.CONFIG_OBJECT_LIMIT
    assert legacy_stop_reason(StopReason.OBJECT_LIMIT, 5, -1, 10, -1, 5) == StopReason.OBJECT_LIMIT


def test_statuses_of_a_stale_attempt_or_another_controller_change_nothing(engine, handlers):
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    assert not handle(CrawlStatus(job_id=job_id, attempt_id="old", controller_id="ctl-1",
                                                  status=JobStatus.FAILED))
    assert not handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-9",
                                                  status=JobStatus.FAILED))
    assert job(engine, job_id).status == JobStatus.STARTED


def test_status_changes_follow_the_table_and_compare_and_set(engine, handlers):
    job_id, attempt, _ = started_job(engine, handlers)
    with write_transaction(engine) as conn:
        jobs = JobRepository(conn)
        with pytest.raises(IllegalTransitionError, match=f"job {job_id}: illegal status change STARTED -> NEW"):
            jobs.change_status(job_id, JobStatus.STARTED, JobStatus.NEW, attempt_id=attempt)
        with pytest.raises(StaleJobError, match="SUBMITTED"):
            jobs.change_status(job_id, JobStatus.SUBMITTED, JobStatus.FAILED, attempt_id=attempt)
        with pytest.raises(StaleJobError):
            jobs.change_status(job_id, JobStatus.STARTED, JobStatus.FAILED, attempt_id="another")
    assert job(engine, job_id).status == JobStatus.STARTED


def test_supervision_times_out_marks_silent_controllers_and_resubmits_abandoned_grants(engine, handlers, notifier):
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    lost = LostControllerRule(lost_after_heartbeats=2, default_heartbeat_interval=30, resubmit_lost_after=0)
    ticker = Ticker(engine, GenerationOptions(), TickOptions(job_timeout=3600, lost=lost, claim_grace_time=30),
                    notifier)
    later = utcnow() + timedelta(minutes=5)
    report_ = TickReport()
    ticker.supervise(later, report_)
    assert report_.interrupted == [job_id] and job(engine, job_id).interrupted
    handle(HarvesterStatus(controller_id="ctl-1", host="h", pid=1, version="t", channels=["FOCUSED"],
                                        free_disk_bytes=1, load_average=0.0, memory_rss_bytes=1, paused=False,
                                        current_job_id=job_id, current_attempt_id=attempt), utcnow())
    assert not job(engine, job_id).interrupted, "a heartbeat naming the job clears the mark"
    report_ = TickReport()
    ticker.supervise(utcnow() + timedelta(hours=2), report_)
    failed = job(engine, job_id)
    assert report_.timed_out == [job_id] and failed.status == JobStatus.FAILED
    assert "timed out" in failed.harvest_errors
    assert any(f"Job {job_id} failed" in subject for subject, _ in notifier.sent)


def test_abandoned_grant_is_resubmitted_and_never_granted_again(engine, handlers, notifier):
    handle = handlers.carry_out_one
    job_id, _ = one_job(engine)
    register(handle, "ctl-1")
    ready(handle, "ctl-1")
    attempt = job(engine, job_id).attempt_id
    assert claim(handle, job_id, attempt, "ctl-1").granted
    with engine.begin() as conn:
        conn.execute(update(s.jobs).values(claimed_at=utcnow() - timedelta(minutes=10)))
    handle(HarvesterStatus(controller_id="ctl-1", host="h", pid=1, version="t", channels=["FOCUSED"],
                                        free_disk_bytes=1, load_average=0.0, memory_rss_bytes=1, paused=False),
                        utcnow())
    report_ = TickReport()
    Ticker(engine, GenerationOptions(), TickOptions(claim_grace_time=60), notifier).supervise(utcnow(), report_)
    new_id = report_.resubmitted[job_id]
    old, new = job(engine, job_id), job(engine, new_id)
    assert old.status == JobStatus.RESUBMITTED and old.resubmitted_as_job == new_id
    assert new.status == JobStatus.NEW and new.num_configs == old.num_configs
    # the copy runs the same template, but its WARCs are named and described as its own
    changed = [(a, b) for a, b in zip(old.orderxmldoc.splitlines(), new.orderxmldoc.splitlines(), strict=True)
               if a != b]
    assert [b.strip() for _, b in changed] == [
        f'<property name="prefix" value="{new_id}-1"/>',
        f'<entry key="harvestInfo.jobId" value="{new_id}"/>',
        f'<entry key="harvestInfo.harvestFilenamePrefix" value="{new_id}-1"/>',
        f'<entry key="harvestInfo.jobSubmitDate" value="{new.creationdate.isoformat()}"/>']
    assert not claim(handle, job_id, attempt, "ctl-1").granted


def test_snapshot_step_waits_for_the_previous_step(engine, notifier):
    with engine.begin() as conn:
        make_domain(conn, "a.dk")
        make_snapshot(conn, 1, "step1")
        make_snapshot(conn, 2, "step2", previous=1)
        conn.execute(update(s.fullharvests).values(isindexready=False))
    ticker = Ticker(engine, GenerationOptions(), TickOptions(postpone_unregistered_channel=False), notifier)
    first = ticker.tick()
    assert list(first.generated) == ["step1"]
    assert "to make its jobs" in first.waiting["step2"]
    assert "1 of its 1 jobs are not finished" in ticker.tick().waiting["step2"]
    with engine.begin() as conn:
        conn.execute(update(s.jobs).values(status=int(JobStatus.DONE)))
        state = conn.execute(select(s.harvest_state.c.state, s.harvest_state.c.reason)
                             .where(s.harvest_state.c.harvest_id == 2)).one()
        assert state.state == "waiting"
    second = ticker.tick()
    assert list(second.generated) == ["step2"]
    with engine.connect() as conn:
        assert conn.scalar(select(s.fullharvests.c.isindexready).where(s.fullharvests.c.harvest_id == 2))


def test_selective_harvest_waits_for_a_controller_of_its_channel_and_failures_deactivate(engine, handlers, notifier):
    handle = handlers.carry_out_one
    with engine.begin() as conn:
        _, config = make_domain(conn, "a.dk", template="broken")
        conn.execute(update(s.ordertemplates).where(s.ordertemplates.c.name == "broken")
                     .values(orderxml="<beans>%{NO_SUCH_PLACEHOLDER}</beans>"))
        make_selective(conn, 1, "daily", [config], nextdate=utcnow() - timedelta(minutes=1))
    ticker = Ticker(engine, GenerationOptions(), TickOptions(), notifier)
    assert "no registered harvest controller serves channel FOCUSED" in ticker.tick().waiting["daily"]
    register(handle, "ctl-1")
    report_ = ticker.tick()
    assert "daily" in report_.deactivated
    with engine.connect() as conn:
        state = conn.execute(select(s.harvest_state)).mappings().one()
        assert state["state"] == "deactivated" and "NO_SUCH_PLACEHOLDER" in state["reason"]
        assert not conn.scalar(select(s.harvestdefinitions.c.isactive))
    assert any("deactivated" in subject for subject, _ in notifier.sent)


def test_two_generations_at_once_on_one_database_never_collide(engine):
    with engine.begin() as conn:
        configs = [make_domain(conn, f"d{n}.dk")[1] for n in range(4)]
        make_selective(conn, 1, "one", configs[:2], nextdate=utcnow())
        make_selective(conn, 2, "two", configs[2:], nextdate=utcnow())
    results, errors = {}, []

    def run(harvest):
        try:
            results[harvest] = generate_jobs(engine, harvest, GenerationOptions())
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(h,)) for h in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    ids = results[1].job_ids + results[2].job_ids
    assert len(set(ids)) == len(ids) == 2


def test_rebuilt_summaries_equal_the_ones_kept_at_intake(engine, handlers):
    handle = handlers.carry_out_one
    job_id, attempt, configs = started_job(engine, handlers)
    handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1",
                                       status=JobStatus.DONE, domain_report=report(
                                           ("a.dk", 5, 500, StopReason.DOWNLOAD_COMPLETE),
                                           ("b.dk", 2, 900, StopReason.SIZE_LIMIT))))
    with engine.begin() as conn:  # a second, older-looking history row written by other means
        conn.execute(s.historyinfo.insert().values(stopreason=0, objectcount=50, bytecount=5000, config_id=configs[1],
                                                   harvest_id=1, job_id=job_id, harvest_time=utcnow()
                                                   - timedelta(days=30)))

    def snapshot(conn):
        return (sorted(tuple(r) for r in conn.execute(select(s.config_history_summary))),
                sorted(tuple(r)[:-1] for r in conn.execute(select(s.harvest_run_summary))))

    with engine.connect() as conn:
        kept_configs, _ = snapshot(conn)
    with write_transaction(engine) as conn:
        rebuild_summaries(conn)
    with engine.connect() as conn:
        rebuilt_configs, runs = snapshot(conn)
        best_b = conn.execute(select(s.config_history_summary.c.best_objectcount)
                              .where(s.config_history_summary.c.config_id == configs[1])).scalar()
        assert conn.scalar(select(func.count()).select_from(s.harvest_run_summary)) == 1
    assert rebuilt_configs[0] == kept_configs[0], "a.dk: the same from intake and from a rebuild"
    assert best_b == 50, "b.dk: the older complete harvest with more objects is the best one"
    assert runs[0][2:5] == (1, 0, 3)


def test_an_operator_restarts_a_failed_job_only_once_its_attempt_cannot_run(engine, handlers, database_url, capsys):
    from harvestdef.cli import main
    from harvestdef.errors import JobStillCrawlingError

    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    heartbeat = HarvesterStatus(controller_id="ctl-1", host="h", pid=1, version="t", channels=["FOCUSED"],
                                free_disk_bytes=1, load_average=0.0, memory_rss_bytes=1, paused=False,
                                current_job_id=job_id, current_attempt_id=attempt)
    handle(heartbeat, utcnow())
    Ticker(engine, GenerationOptions(), TickOptions(job_timeout=0), Notifier()).supervise(utcnow(), TickReport())
    assert job(engine, job_id).status == JobStatus.FAILED, "timed out while its controller still crawls"
    with write_transaction(engine) as conn, pytest.raises(JobStillCrawlingError, match="still reported crawling it"):
        JobRepository(conn).restart(job_id, LostControllerRule())
    overrides = ["--set", f"harvestsuite.database.url={database_url}"]
    assert main([*overrides, "jobs", "restart", str(job_id)]) == 2, "refused on the command line too"
    handle(dataclasses.replace(heartbeat, current_job_id=None, current_attempt_id=None), utcnow())
    capsys.readouterr()
    assert main([*overrides, "jobs", "restart", str(job_id)]) == 0
    new_id = int(capsys.readouterr().out.split()[-1])
    assert job(engine, job_id).status == JobStatus.RESUBMITTED and job(engine, new_id).continuationof == job_id
    assert main([*overrides, "jobs", "list", "--status", "NEW"]) == 0
    header, first = capsys.readouterr().out.splitlines()[:2]
    assert header.split()[:4] == ["JOB", "STATUS", "HARVEST", "RUN"] and first.split()[:2] == [str(new_id), "NEW"]
    assert main([*overrides, "jobs", "reject", str(new_id)]) == 2, "only FAILED jobs are rejected"


def test_an_unclaimed_job_whose_message_is_lost_is_resubmitted(engine, handlers, transport, notifier):
    handle = handlers.carry_out_one
    job_id, _ = one_job(engine)
    register(handle, "ctl-1")
    ready(handle, "ctl-1")
    ticker = Ticker(engine, GenerationOptions(), TickOptions(claim_grace_time=60), notifier, transport=transport,
                    names=NAMES)
    report_ = TickReport()
    ticker.supervise(utcnow() + timedelta(minutes=5), report_)
    assert report_.resubmitted == {}, "its message still waits in the queue"
    transport.purge(NAMES.jobs("FOCUSED"))
    ticker.supervise(utcnow(), report_)
    assert report_.resubmitted == {}, "not before claimGraceTime"
    ticker.supervise(utcnow() + timedelta(minutes=5), report_)
    new_id = report_.resubmitted[job_id]
    assert job(engine, job_id).status == JobStatus.RESUBMITTED and job(engine, new_id).status == JobStatus.NEW


def test_a_late_report_of_a_rejected_job_sets_it_back_to_failed_once(engine, handlers, notifier):
    handle = handlers.carry_out_one
    job_id, attempt, configs = started_job(engine, handlers)
    Ticker(engine, GenerationOptions(), TickOptions(job_timeout=0), notifier).supervise(utcnow(), TickReport())
    with write_transaction(engine) as conn:
        JobRepository(conn).reject(job_id)
    late = CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.DONE,
                       domain_report=report(("a.dk", 5, 500, StopReason.DOWNLOAD_COMPLETE)))
    assert handle(late)
    assert job(engine, job_id).status == JobStatus.FAILED
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.historyinfo)) == len(configs)
    with write_transaction(engine) as conn:
        JobRepository(conn).reject(job_id)
    assert not handle(late), "a repeat of a report already taken changes nothing"
    assert job(engine, job_id).status == JobStatus.FAILED_REJECTED
