"""Each NEW job goes with the deduplication sources of its own domains, as soon as the earlier jobs that harvested
them have ended and enough of their entries are stored (docs/scheduler.md, Deduplication), on SQLite and
PostgreSQL, with a real archive store in a temporary directory and the embedded queue carrying the DoOneCrawl
messages. NetarchiveSuite's satisfactorythresholdpercentage is counted over each job's domains."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select, update

import scheduler.dedupsources as dedupsources
from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.dedup import DedupIndex, entries_name
from harvestdef.dedup.jobindex import build_job_index
from harvestdef.dedup.partitions import directory_name, write_partitioned
from harvestdef.errors import SettingsError
from harvestdef.messages import DeduplicationSource, DoOneCrawl, HarvesterReady, RegistrationRequest, decode
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.queues import QueueNames, open_transport
from harvestdef.repositories.jobs import JobRepository, allocate_job_ids, new_job_row
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import QueueSettings, load_settings
from scheduler.dedupsources import (
    HarvestRun,
    JobReadiness,
    StoredEntries,
    chain_jobs,
    find_job_sources,
    find_run_sources,
    find_sources_row,
)
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions
from tests.scheduler.factories import T0, add_history, make_domain, make_selective, make_snapshot
from tests.webui.conftest import csrf_of
from webui import create_app

NAMES = QueueNames("UNIT")


@pytest.fixture
def transport(tmp_path: Path):
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
    yield transport
    transport.close()


@pytest.fixture
def store(tmp_path: Path) -> ArchiveStore:
    store = ArchiveStore(tmp_path / "archive")
    store.root.mkdir()
    return store


@pytest.fixture
def notifier() -> Notifier:
    return Notifier()


@pytest.fixture
def ticker(engine, store, notifier) -> Ticker:
    settings = load_settings(environ={}, overrides={"harvestsuite.archive.root": str(store.root)})
    assert settings.scheduler.satisfactorythresholdpercentage == 70, "NetarchiveSuite's default"
    return Ticker(engine, GenerationOptions(), TickOptions(postpone_unregistered_channel=False), notifier,
                  readiness=JobReadiness.from_settings(settings, notifier))


@pytest.fixture
def dispatcher(engine, transport) -> Dispatcher:
    return Dispatcher(NAMES, DispatchOptions())


def digest(text: str) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(text.encode()).digest()).decode()


def store_entries(store: ArchiveStore, tmp_path: Path, harvest_id: int, job_id: int, urls: list[str],
                  own: list[str], date: str = "20260101120000") -> None:
    """A job's entries stored as post-processing stores them: in domain order, with their directory."""
    work = tmp_path / f"entries-{job_id}"
    work.mkdir()
    fields = [(digest(url), url, date, f"<urn:uuid:{job_id}-{n}>", f"{job_id}-1.warc.gz", 1000 * n)
              for n, url in enumerate(urls)]
    write_partitioned(fields, work / f"{job_id}.gz", work / f"{job_id}.domains", own)
    store.store(work / f"{job_id}.gz", harvest_id, job_id, entries_name(job_id))
    store.store(work / f"{job_id}.domains", harvest_id, job_id, directory_name(job_id))
    store.write_checksums(harvest_id, job_id)


def add_job(engine, harvest_id: int, harvest_num: int, config_ids: list[int], status: JobStatus = JobStatus.DONE,
            snapshot: bool = False) -> int:
    """A job of ``config_ids``, as job generation records it (its job_configs rows)."""
    with write_transaction(engine) as conn:
        (job_id,) = allocate_job_ids(conn, 1)
        JobRepository(conn).insert([new_job_row(
            job_id=job_id, harvest_id=harvest_id, channel="SNAPSHOT" if snapshot else "FOCUSED", snapshot=snapshot,
            orderxml="default_orderxml", harvest_num=harvest_num, creationdate=T0)])
        if config_ids:
            conn.execute(insert(s.job_configs), [{"job_id": job_id, "config_id": c} for c in config_ids])
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(status=int(status)))
    return job_id


def set_status(engine, job_id: int, status: JobStatus) -> None:
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(status=int(status)))


def release(engine, transport, dispatcher, controller: str, channel: str) -> tuple[int | None, DoOneCrawl | None]:
    """Register ``controller`` for ``channel`` and send its ready message; the job released and its message."""
    handle = MessageHandlers(engine, transport, dispatcher, StatusIntake(Notifier())).carry_out_one
    handle(RegistrationRequest(controller_id=controller, host="h", channels=[channel],
                               reply_queue=NAMES.controller(controller)))
    job_id = handle(HarvesterReady(controller_id=controller, host="h", channels=[channel]), utcnow())
    delivery = transport.get(NAMES.jobs(channel))
    if delivery is None:
        return job_id, None
    transport.ack(delivery)
    message = decode(delivery.body, DoOneCrawl)
    assert isinstance(message, DoOneCrawl)
    return job_id, message


def harvest_state(engine, harvest_id: int) -> tuple[str, str]:
    with engine.connect() as conn:
        return tuple(conn.execute(select(s.harvest_state.c.state, s.harvest_state.c.reason)
                                  .where(s.harvest_state.c.harvest_id == harvest_id)).one())


def test_a_small_domains_job_goes_with_its_own_history_while_the_big_ones_job_still_crawls(
        engine, store, tmp_path, ticker, dispatcher, transport):
    """One big and one small domain, in jobs of their own (two templates): run 2's small job goes as soon
    as run 1's small job has ended, with that job alone as its source; the big one waits for its own."""
    with engine.begin() as conn:
        _, big = make_domain(conn, "big.dk", template="big_orderxml")
        _, small = make_domain(conn, "small.dk")
        make_selective(conn, 1, "daily", [big, small], nextdate=utcnow() - timedelta(minutes=1))
    first = ticker.tick()
    run1 = sorted(first.generated["daily"])
    assert len(run1) == 2 and not first.indexing
    for controller in ("ctl-1", "ctl-1b"):
        released, message = release(engine, transport, dispatcher, controller, "FOCUSED")
        assert message is not None and message.metadata.deduplication_job_ids == []
        assert message.metadata.deduplication_sources is None and message.metadata.deduplication_index is None, \
            "run 1 has nothing before it"
    with engine.connect() as conn:
        domains_of = {job_id: set(conn.scalars(
            select(s.domains.c.name).join(s.configurations, s.configurations.c.domain_id == s.domains.c.domain_id)
            .join(s.job_configs, s.job_configs.c.config_id == s.configurations.c.config_id)
            .where(s.job_configs.c.job_id == job_id))) for job_id in run1}
    (big_job,) = [job for job in run1 if domains_of[job] == {"big.dk"}]
    (small_job,) = [job for job in run1 if domains_of[job] == {"small.dk"}]
    set_status(engine, small_job, JobStatus.DONE)  # the big one is still SUBMITTED to its controller
    store_entries(store, tmp_path, 1, small_job, ["http://www.small.dk/a.png", "http://www.small.dk/b.png"],
                  ["small.dk"])

    run2 = generate_jobs(engine, 1, GenerationOptions()).job_ids
    report = ticker.tick()
    assert report.indexing["daily"] == ("the jobs of run 2 wait: 1 of its 2 jobs wait for the earlier jobs that "
                                        "harvested their domains to finish: 1 not finished yet")
    assert report.dedup_decisions == {"ready": 1, "waiting": 1}  # what the scheduler's metrics count
    state, reason = harvest_state(engine, 1)
    assert state == "waiting" and "the jobs of run 2 wait: 1 of its 2 jobs wait" in reason
    released, message = release(engine, transport, dispatcher, "ctl-2", "FOCUSED")
    assert message is not None and released == message.job_id and released in run2
    assert message.domain_configurations == {"small.dk": "defaultconfig"}
    assert message.metadata.deduplication_sources == [DeduplicationSource(1, small_job)]
    assert message.metadata.deduplication_job_ids == [small_job] and message.metadata.deduplication_index is None
    assert release(engine, transport, dispatcher, "ctl-3", "FOCUSED") == (None, None), "the big one waits"

    # the controller's side: the index of the small job's own domains from that source
    built = build_job_index(store, [(s.harvest_id, s.job_id) for s in message.metadata.deduplication_sources],
                            message.domain_configurations, tmp_path / "index.sqlite")
    with DedupIndex(built.path) as index:
        assert len(index) == 2 and index.lookup(digest("http://www.small.dk/b.png"), "http://www.small.dk/b.png")

    set_status(engine, big_job, JobStatus.DONE)
    store_entries(store, tmp_path, 1, big_job, ["http://www.big.dk/x.png"], ["big.dk"])
    assert not ticker.tick().indexing
    released, message = release(engine, transport, dispatcher, "ctl-3", "FOCUSED")
    assert message is not None and message.metadata.deduplication_sources == [DeduplicationSource(1, big_job)]
    assert "the jobs of run 2 wait" not in harvest_state(engine, 1)[1]


def test_a_snapshot_step_is_generated_at_once_and_each_job_goes_with_the_step_before_it(
        engine, store, tmp_path, ticker, dispatcher, transport):
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk")
        _, dr = make_domain(conn, "dr.dk")
        make_snapshot(conn, 1, "step1", maxbytes=10_000_000, numevents=1)
        make_snapshot(conn, 2, "step2", maxbytes=-1, previous=1)
        conn.execute(update(s.fullharvests).where(s.fullharvests.c.harvest_id == 2).values(isindexready=False))
    step1 = [add_job(engine, 1, 1, [kb], snapshot=True), add_job(engine, 1, 1, [dr], snapshot=True)]
    with engine.begin() as conn:
        add_history(conn, kb, 1, 263, 10_000_000, StopReason.SIZE_LIMIT, job_id=step1[0])
        add_history(conn, dr, 1, 20, 100_000, StopReason.DOWNLOAD_COMPLETE, job_id=step1[1])
    store_entries(store, tmp_path, 1, step1[0], ["http://kb.dk/", "http://kb.dk/logo.png"], ["kb.dk"])

    report = ticker.tick()
    assert list(report.generated) == ["step2"], "nothing is built before a step"
    (job_id,) = report.generated["step2"]
    assert not report.indexing
    with engine.connect() as conn:
        row = find_sources_row(conn, job_id)
        assert conn.scalar(select(s.fullharvests.c.isindexready).where(s.fullharvests.c.harvest_id == 2))
    assert row is not None and row.ready and row.sources == ((1, step1[0]),)
    assert (row.domains, row.with_history, row.covered) == (1, 1, 1), "only kb.dk continues, from step 1's job"
    released, message = release(engine, transport, dispatcher, "ctl-1", "SNAPSHOT")
    assert released == job_id and message is not None
    assert message.metadata.deduplication_sources == [DeduplicationSource(1, step1[0])]


def test_a_domain_takes_the_newest_earlier_job_that_stored_it(engine, store, tmp_path):
    """Run 2's job of kb.dk failed before it stored anything; run 3 goes with run 1's captures of kb.dk.
    dr.dk left the harvest in run 2 and came back: run 3 takes run 1's too. A domain new in run 3 needs
    nothing."""
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk")
        _, dr = make_domain(conn, "dr.dk")
        _, new = make_domain(conn, "new.dk")
        make_selective(conn, 1, "daily", [kb, dr, new], numevents=3)
        make_selective(conn, 2, "other", [kb])
    run1 = add_job(engine, 1, 1, [kb, dr])
    run2 = add_job(engine, 1, 2, [kb], status=JobStatus.FAILED)
    resubmitted_elsewhere = add_job(engine, 2, 1, [kb])  # another harvest's job: not of this chain
    store_entries(store, tmp_path, 1, run1, ["http://kb.dk/a.png", "http://dr.dk/b.png"], ["kb.dk", "dr.dk"])
    store_entries(store, tmp_path, 2, resubmitted_elsewhere, ["http://kb.dk/c.png"], ["kb.dk"])
    run3 = add_job(engine, 1, 3, [kb, dr, new], status=JobStatus.NEW)
    with engine.connect() as conn:
        found = find_job_sources(conn, run3, chain_jobs(conn, HarvestRun(1, 3), snapshot=False),
                                 StoredEntries(store))
    assert found.sources == ((1, run1),) and found.waiting_for == () and found.missing_job_ids == ()
    assert (found.domains, found.with_history, found.covered) == (3, 2, 2)
    assert run2 not in [job for _, job in found.sources]


@pytest.mark.parametrize("many_jobs", [20, 1], ids=["lookups", "hash-join"])
def test_a_runs_jobs_decided_together_come_out_as_each_decided_alone(engine, store, tmp_path, monkeypatch,
                                                                      many_jobs):
    """find_run_sources decides all the run's jobs in one statement: each job's outcome is the one it has
    alone, whether its domains are covered, wait for an unfinished job, pass over a job without entries
    (which another job's domain needs too) or have no history; with the run's domains found by a lookup per
    configuration, and by the join used from MANY_JOBS jobs on."""
    monkeypatch.setattr(dedupsources, "MANY_JOBS", many_jobs)
    with engine.begin() as conn:
        configs = {name: make_domain(conn, f"{name}.dk")[1] for name in ("kb", "dr", "tv2", "jp", "new")}
        make_selective(conn, 1, "daily", list(configs.values()), numevents=3)
    kb, dr, tv2, jp, new = (configs[name] for name in ("kb", "dr", "tv2", "jp", "new"))
    old = add_job(engine, 1, 1, [kb, dr, tv2])
    unstored = add_job(engine, 1, 2, [kb, dr])       # ended without stored entries: passed over for run 1's
    crawling = add_job(engine, 1, 2, [jp], status=JobStatus.STARTED)
    store_entries(store, tmp_path, 1, old, ["http://kb.dk/a.png", "http://dr.dk/b.png", "http://tv2.dk/c.png"],
                  ["kb.dk", "dr.dk", "tv2.dk"])
    run3 = [add_job(engine, 1, 3, domains, status=JobStatus.NEW)
            for domains in ([kb], [dr, tv2], [jp, kb], [new])]
    with engine.connect() as conn:
        candidates = chain_jobs(conn, HarvestRun(1, 3), snapshot=False)
        together = find_run_sources(conn, run3, candidates, StoredEntries(store))
        alone = {job_id: find_job_sources(conn, job_id, candidates, StoredEntries(store)) for job_id in run3}
    assert together == alone
    first, second, third, fourth = (together[job_id] for job_id in run3)
    assert first.sources == second.sources == ((1, old),) and first.waiting_for == second.waiting_for == ()
    assert (second.domains, second.with_history, second.covered) == (2, 2, 2)
    assert third.waiting_for == (crawling,) and (third.domains, third.with_history, third.covered) == (2, 2, 1)
    assert (fourth.domains, fourth.with_history, fourth.sources) == (1, 0, ())
    assert unstored not in [job for found in together.values() for _, job in found.sources]


def ten_domain_history(engine, store, tmp_path, stored: int, unreadable: int = 0) -> tuple[list[int], int]:
    """Run 1 harvested ten domains in ten jobs; run 2's one NEW job holds all ten. The first ``stored`` of
    run 1's jobs have their entries stored, of which the first ``unreadable`` only as a broken file."""
    with engine.begin() as conn:
        configs = [make_domain(conn, f"site{n}.dk")[1] for n in range(10)]
        make_selective(conn, 1, "daily", configs, numevents=2, nextdate=utcnow() + timedelta(days=1))
    run1 = [add_job(engine, 1, 1, [config]) for config in configs]
    for n, job_id in enumerate(run1[:stored]):
        if n < unreadable:
            path = store.job_path(1, job_id) / entries_name(job_id)
            path.parent.mkdir(parents=True)
            path.write_bytes(b"not gzip")
        else:
            store_entries(store, tmp_path, 1, job_id, [f"http://www.site{n}.dk/logo.png"], [f"site{n}.dk"])
    return run1, add_job(engine, 1, 2, configs, status=JobStatus.NEW)


def test_seven_of_ten_domains_covered_is_enough(engine, store, tmp_path, ticker, dispatcher, transport):
    run1, run2_job = ten_domain_history(engine, store, tmp_path, stored=7)
    assert not ticker.tick().indexing
    released, message = release(engine, transport, dispatcher, "ctl-1", "FOCUSED")
    assert released == run2_job and message is not None
    assert [source.job_id for source in message.metadata.deduplication_sources] == sorted(run1[:7], reverse=True)
    with engine.connect() as conn:
        row = find_sources_row(conn, run2_job)
    assert row is not None and (row.domains, row.with_history, row.covered) == (10, 10, 7)
    assert row.missing_job_ids == tuple(run1[7:]) and row.refusal is None


def test_six_of_ten_is_refused_and_waits_saying_why_until_a_seventh_is_stored(engine, store, tmp_path, ticker,
                                                                              dispatcher, transport, notifier):
    run1, run2_job = ten_domain_history(engine, store, tmp_path, stored=6)
    waits = []
    for n in range(3):
        report = ticker.tick()
        waits.append(report.indexing["daily"])
        assert report.dedup_decisions == {"refused": 1}, "decided again at every tick"
        assert release(engine, transport, dispatcher, f"ctl-{n}", "FOCUSED") == (None, None)
    expected = (f"the jobs of run 2 wait: deduplication refused for 1 of its 1 jobs: the earlier captures of only 6 "
                f"of the 10 domains of job {run2_job} harvested before are stored (60 %), fewer than "
                f"satisfactorythresholdpercentage (70 %): no stored entries for jobs {run1[6]}, {run1[7]}, "
                f"{run1[8]}, {run1[9]}; not dispatched until enough of these jobs' entries are stored (counted "
                f"again at every tick)")
    assert waits == [expected] * 3
    assert [subject for subject, _ in notifier.sent] == ["Deduplication of harvest 1 run 2 refused for 1 jobs"], \
        "told once, not at every count"
    state, reason = harvest_state(engine, 1)
    assert state == "waiting" and expected in reason

    # the harvest's page, the API and the "Why harvests wait" page show the reason
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(store.root)})
    with engine.begin() as conn:
        UserRepository(conn).create("watcher", "operator", password="correct horse battery")
        token = UserRepository(conn).create_token("watcher")
    client = create_app(settings, engine, {"TESTING": True}).test_client()
    answer = client.get("/api/v1/harvests/daily", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200 and expected in answer.get_json()["state"]["reason"]
    assert client.post("/login", data={"name": "watcher", "password": "correct horse battery",
                                       "csrf_token": csrf_of(client)}).status_code == 302
    for path in ("/definitions/harvests/daily", "/status/waiting"):
        page = client.get(path)
        assert page.status_code == 200 and "deduplication refused for 1 of its 1 jobs" in \
            page.get_data(as_text=True), path
    # the job's own page and its API answer say it too, the page in its language
    detail = client.get(f"/api/v1/jobs/{run2_job}", headers={"Authorization": f"Bearer {token}"}).get_json()
    assert detail["deduplication"]["ready"] is False and detail["deduplication"]["covered"] == 6
    assert detail["deduplication"]["missing_job_ids"] == run1[6:]
    page = client.get(f"/status/jobs/{run2_job}").get_data(as_text=True)
    assert "Held back: the earlier captures of only 6 of the 10 domains of job" in page
    danish = client.get(f"/status/jobs/{run2_job}", headers={"Accept-Language": "da"}).get_data(as_text=True)
    assert "de tidligere høstninger af kun 6 af de 10 domæner i job" in danish and "Held back" not in danish

    store_entries(store, tmp_path, 1, run1[6], ["http://www.site6.dk/late.png"], ["site6.dk"])  # the seventh
    report = ticker.tick()
    assert not report.indexing and report.dedup_decisions == {"ready": 1}
    released, message = release(engine, transport, dispatcher, "ctl-9", "FOCUSED")
    assert released == run2_job and message is not None and len(message.metadata.deduplication_sources) == 7
    assert "refused" not in harvest_state(engine, 1)[1]
    page = client.get(f"/status/jobs/{run2_job}").get_data(as_text=True)
    assert "Deduplicates against the earlier captures of 7 of its 10 domains, from jobs" in page
    assert "Held back" not in page


def test_an_unreadable_entries_file_is_the_controllers_to_pass_over(engine, store, tmp_path, ticker, dispatcher,
                                                                    transport):
    """The scheduler only asks whether a job's entries are stored; a broken file is left out by the controller,
    which names it in the job's metadata (harvestdef.dedup.jobindex)."""
    run1, run2_job = ten_domain_history(engine, store, tmp_path, stored=8, unreadable=1)
    assert not ticker.tick().indexing
    released, message = release(engine, transport, dispatcher, "ctl-1", "FOCUSED")
    assert released == run2_job and message is not None
    built = build_job_index(store, [(s.harvest_id, s.job_id) for s in message.metadata.deduplication_sources],
                            message.domain_configurations, tmp_path / "index.sqlite")
    assert built.unreadable_job_ids == (run1[0],) and built.domains_found == 7


def test_a_run_made_ready_by_an_earlier_version_goes_with_its_one_index(engine, store, tmp_path, ticker, dispatcher,
                                                                        transport):
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk")
        make_selective(conn, 1, "daily", [kb], numevents=2, nextdate=utcnow() + timedelta(days=1))
        conn.execute(insert(s.harvest_run_dedup_index).values(
            harvest_id=1, harvest_num=2, job_ids="5,6", ready=True, index_path="dedup-index/ab12.sqlite",
            missing_job_ids="", entries=12, failures=0, changed_at=datetime(2026, 11, 1, tzinfo=UTC)))
    run2_job = add_job(engine, 1, 2, [kb], status=JobStatus.NEW)
    assert not ticker.tick().indexing
    released, message = release(engine, transport, dispatcher, "ctl-1", "FOCUSED")
    assert released == run2_job and message is not None
    assert message.metadata.deduplication_index == "dedup-index/ab12.sqlite"
    assert message.metadata.deduplication_job_ids == [5, 6] and message.metadata.deduplication_sources is None
    with engine.connect() as conn:
        assert find_sources_row(conn, run2_job) is None


def test_deduplication_off_decides_nothing_and_sets_isindexready_directly(engine, store, notifier, transport):
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk")
        make_snapshot(conn, 1, "step1", maxbytes=10_000_000, numevents=1)
        make_snapshot(conn, 2, "step2", previous=1)
        conn.execute(update(s.fullharvests).where(s.fullharvests.c.harvest_id == 2).values(isindexready=False))
    step1_job = add_job(engine, 1, 1, [kb], snapshot=True)
    with engine.begin() as conn:
        add_history(conn, kb, 1, 263, 10_000_000, StopReason.SIZE_LIMIT, job_id=step1_job)
    ticker = Ticker(engine, GenerationOptions(deduplication_enabled=False),
                    TickOptions(postpone_unregistered_channel=False), notifier, readiness=None)
    dispatcher = Dispatcher(NAMES, DispatchOptions(deduplication_enabled=False))
    report = ticker.tick()
    assert list(report.generated) == ["step2"] and not report.indexing
    released, message = release(engine, transport, dispatcher, "ctl-1", "SNAPSHOT")
    assert released == report.generated["step2"][0] and message is not None
    assert message.metadata.deduplication_job_ids is None and message.metadata.deduplication_sources is None
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.job_dedup_sources)) == 0


def test_which_jobs_a_run_deduplicates_against(engine):
    """A selective run, the jobs of its earlier runs in any status; a snapshot step, the steps before it in its
    chain and the chain of the most recent older snapshot, not its own jobs."""
    with engine.begin() as conn:
        make_selective(conn, 1, "daily", [])
        for harvest_id, name, previous, age in [(10, "x", None, 5), (11, "old1", None, 3), (12, "old2", 11, 2),
                                                (13, "s1", None, 1), (14, "s2", 13, 0), (15, "s3", 14, -1),
                                                (16, "newer", None, -2)]:
            make_snapshot(conn, harvest_id, name, previous=previous)
            conn.execute(update(s.harvestdefinitions).where(s.harvestdefinitions.c.harvest_id == harvest_id)
                         .values(submitted=T0 - timedelta(days=age)))
    selective = {num: [add_job(engine, 1, num, []) for _ in range(2)] for num in (1, 2, 3)}
    set_status(engine, selective[2][0], JobStatus.FAILED)
    snapshot = {harvest_id: [add_job(engine, harvest_id, 1, [], snapshot=True)] for harvest_id in range(10, 17)}
    with engine.connect() as conn:
        def ids(run: HarvestRun, is_snapshot: bool) -> list[int]:
            return sorted(conn.scalars(select(s.jobs.c.job_id).where(chain_jobs(conn, run, is_snapshot))))

        assert ids(HarvestRun(1, 1), False) == []
        assert ids(HarvestRun(1, 3), False) == selective[1] + selective[2]
        assert ids(HarvestRun(1, 4), False) == selective[1] + selective[2] + selective[3]
        assert ids(HarvestRun(15, 1), True) == sorted(snapshot[11] + snapshot[12] + snapshot[13] + snapshot[14])
        assert ids(HarvestRun(13, 1), True) == sorted(snapshot[11] + snapshot[12])
        assert ids(HarvestRun(10, 1), True) == []


def test_a_threshold_outside_0_to_100_stops_start_up_naming_the_setting():
    with pytest.raises(SettingsError, match="harvester.indexserver.satisfactorythresholdpercentage.*got 120"):
        load_settings(environ={}, overrides={"harvester.indexserver.satisfactorythresholdpercentage": 120})
    assert load_settings(environ={"HARVESTSUITE__HARVESTER__INDEXSERVER__SATISFACTORYTHRESHOLDPERCENTAGE": "0"}
                         ).scheduler.satisfactorythresholdpercentage == 0
    with pytest.raises(ValueError, match="from 0 to 100, got 101"):
        JobReadiness(ArchiveStore("/nonexistent"), Notifier(), 101)
