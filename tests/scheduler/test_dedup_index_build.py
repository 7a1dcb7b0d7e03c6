"""The scheduler builds each run's deduplication index before the run's jobs go out (design.md
§Deduplication, reference §6.4), on SQLite and PostgreSQL, with a real archive store in a temporary
directory and the embedded queue carrying the DoOneCrawl messages."""

from __future__ import annotations

import base64
import hashlib
import logging
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.dedup import DedupEntry, DedupIndex, entries_name, index_relative_path, write_entries
from harvestdef.messages import DoOneCrawl, HarvesterReady, RegistrationRequest, decode
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.queues import QueueNames, open_transport
from harvestdef.repositories.jobs import JobRepository, allocate_job_ids, new_job_row
from harvestdef.settings import QueueSettings, load_settings
from scheduler.dedupindex import DedupIndexBuilder, HarvestRun, deduplication_jobs, find_run_index
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions
from tests.scheduler.factories import T0, add_history, make_domain, make_selective, make_snapshot

NAMES = QueueNames("UNIT")


@pytest.fixture
def transport(tmp_path: Path):
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
    yield transport
    transport.close()


@pytest.fixture
def store(tmp_path: Path) -> ArchiveStore:
    return ArchiveStore(tmp_path / "archive")


@pytest.fixture
def notifier() -> Notifier:
    return Notifier()


@pytest.fixture
def indexer(engine, store, notifier):
    # Every index is good enough here: these tests leave jobs out to see them listed. The 70 % rule
    # (satisfactorythresholdpercentage) has its own tests in test_dedup_coverage.py.
    builder = DedupIndexBuilder(engine, store, notifier, satisfactory_percentage=0)
    yield builder
    builder.close()


@pytest.fixture
def ticker(engine, notifier, indexer) -> Ticker:
    return Ticker(engine, GenerationOptions(), TickOptions(postpone_unregistered_channel=False), notifier,
                  indexer=indexer)


@pytest.fixture
def dispatcher(engine, transport) -> Dispatcher:
    return Dispatcher(NAMES, DispatchOptions())


def digest(text: str) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(text.encode()).digest()).decode()


def store_entries(store: ArchiveStore, harvest_id: int, job_id: int, urls: list[str],
                  date: str = "20260101120000") -> list[DedupEntry]:
    entries = [DedupEntry(digest(url), url, date, f"<urn:uuid:{job_id}-{n}>", f"{job_id}-1.warc.gz", 1000 * n)
               for n, url in enumerate(urls)]
    path = store.job_path(harvest_id, job_id) / entries_name(job_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_entries(path, entries)
    return entries


def add_jobs(engine, harvest_id: int, harvest_num: int, count: int, status: JobStatus = JobStatus.DONE,
             snapshot: bool = True) -> list[int]:
    with write_transaction(engine) as conn:
        job_ids = allocate_job_ids(conn, count)
        JobRepository(conn).insert([new_job_row(
            job_id=job_id, harvest_id=harvest_id, channel="SNAPSHOT" if snapshot else "FOCUSED", snapshot=snapshot,
            orderxml="default_orderxml", harvest_num=harvest_num, creationdate=T0) for job_id in job_ids])
        conn.execute(update(s.jobs).where(s.jobs.c.job_id.in_(job_ids)).values(status=int(status)))
    return job_ids


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


def index_ready(engine, harvest_id: int) -> bool:
    with engine.connect() as conn:
        return conn.scalar(select(s.fullharvests.c.isindexready).where(s.fullharvests.c.harvest_id == harvest_id))


def continuation_step(engine) -> list[int]:
    """Step 1 (ran: three DONE jobs, kb.dk stopped on its size limit) and step 2 continuing it, whose
    index is not ready; returns step 1's job ids."""
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk")
        _, dr = make_domain(conn, "dr.dk")
        make_snapshot(conn, 1, "step1", maxbytes=10_000_000, numevents=1)
        make_snapshot(conn, 2, "step2", maxbytes=-1, previous=1)
        conn.execute(update(s.fullharvests).where(s.fullharvests.c.harvest_id == 2).values(isindexready=False))
    step1 = add_jobs(engine, 1, 1, 3)
    with engine.begin() as conn:
        add_history(conn, kb, 1, 263, 10_000_000, StopReason.SIZE_LIMIT, job_id=step1[0])
        add_history(conn, dr, 1, 20, 100_000, StopReason.DOWNLOAD_COMPLETE, job_id=step1[1])
    return step1


def test_snapshot_step_waits_for_its_index_and_its_jobs_carry_it(engine, store, ticker, dispatcher, transport):
    step1 = continuation_step(engine)
    first_entries = store_entries(store, 1, step1[0], ["http://kb.dk/", "http://kb.dk/logo.png"])
    # the same URL and payload again, and the same payload under a second URL: every pair is kept
    second_entries = store_entries(store, 1, step1[1], ["http://dr.dk/", "http://kb.dk/logo.png"],
                                   date="20260201120000")
    moved = DedupEntry(digest("http://dr.dk/"), "http://dr.dk/old", "20250101000000", None, None, None)
    write_entries(store.job_path(1, step1[1]) / entries_name(step1[1]), [*second_entries, moved])
    # step1[2] has no stored entries: it is left out

    first = ticker.tick()
    assert "building deduplication index (" in first.waiting["step2"] and "of 3 jobs)" in first.waiting["step2"]
    assert "step2" not in first.generated and not index_ready(engine, 2)
    state, reason = harvest_state(engine, 2)
    assert state == "waiting" and reason.startswith("building deduplication index")

    assert ticker.wait_for_indexes(timeout=60)
    second = ticker.tick()
    assert list(second.generated) == ["step2"] and len(second.generated["step2"]) == 1
    assert index_ready(engine, 2)
    with engine.connect() as conn:
        row = find_run_index(conn, HarvestRun(2, 1))
        audited = conn.scalar(select(func.count()).select_from(s.audit_log).where(
            s.audit_log.c.tablename == "fullharvests", s.audit_log.c.row_key == "2",
            s.audit_log.c.after.contains("isindexready")))
    assert row is not None and row.ready and row.job_ids == tuple(step1) and row.missing_job_ids == (step1[2],)
    assert audited == 1

    (job_id,) = second.generated["step2"]
    released, message = release(engine, transport, dispatcher, "ctl-1", "SNAPSHOT")
    assert released == job_id and message is not None and message.job_id == job_id
    assert message.metadata.deduplication_job_ids == step1
    assert message.metadata.deduplication_index == index_relative_path(step1) == row.index_path
    path = store.path_of(message.metadata.deduplication_index)
    assert path.is_file()
    with DedupIndex(path) as index:
        assert index.job_ids == tuple(step1[:2]) and index.missing_job_ids == (step1[2],)
        assert len(index) == 4 == row.entries  # kb.dk/, kb.dk/logo.png, dr.dk/, dr.dk/old
        logo = index.lookup(digest("http://kb.dk/logo.png"), "http://kb.dk/logo.png")
        assert logo == first_entries[1], "the earliest capture of a (digest, URL) pair is the one kept"
        assert index.lookup(digest("http://dr.dk/"), "http://dr.dk/old") == moved
        assert index.lookup(digest("http://dr.dk/")) == moved, "by digest: the earliest capture of the payload"
        assert index.lookup(digest("http://unknown.dk/")) is None


def test_failed_build_waits_naming_the_error_and_is_retried_until_it_succeeds(engine, store, ticker, notifier):
    step1 = continuation_step(engine)
    store_entries(store, 1, step1[0], ["http://kb.dk/"])
    store_entries(store, 1, step1[1], ["http://dr.dk/"])
    # the store's index directory cannot be made: a file is in its place
    broken = store.root / "dedup-index"
    broken.write_bytes(b"not a directory")

    ticker.tick()
    reasons = []
    for _ in range(3):
        assert ticker.wait_for_indexes(timeout=60)
        report = ticker.tick()
        assert "step2" not in report.generated and not index_ready(engine, 2)
        reasons.append(report.waiting["step2"])
        assert harvest_state(engine, 2) == ("waiting", report.waiting["step2"])
    assert "building deduplication index" in reasons[0] and "1 earlier attempt failed, the last: " in reasons[0]
    assert str(broken) in reasons[0], "the error names the broken file"
    assert "2 earlier attempts failed" in reasons[1] and "3 earlier attempts failed" in reasons[2]
    assert [subject for subject, _ in notifier.sent] == ["Deduplication index of harvest 2 run 1 keeps failing"]

    assert ticker.wait_for_indexes(timeout=60)  # the fourth attempt, asked for by the last tick, fails too
    assert len(notifier.sent) == 1, "told once"
    broken.unlink()  # repaired: the next attempt succeeds
    assert "4 earlier attempts failed" in ticker.tick().waiting["step2"]
    assert ticker.wait_for_indexes(timeout=60)
    report = ticker.tick()
    assert list(report.generated) == ["step2"] and index_ready(engine, 2)
    with engine.connect() as conn:
        row = find_run_index(conn, HarvestRun(2, 1))
    assert row is not None and row.ready and row.failures == 0 and row.error is None and row.entries == 2


def test_selective_run_is_dispatched_only_with_the_index_of_the_previous_run(engine, store, ticker, dispatcher,
                                                                              transport):
    with engine.begin() as conn:
        configs = [make_domain(conn, name)[1] for name in ("a.dk", "b.dk")]
        make_selective(conn, 1, "daily", configs, nextdate=utcnow() - timedelta(minutes=1))
    first = ticker.tick()
    (run1_job,) = first.generated["daily"]
    assert not first.indexing
    released, message = release(engine, transport, dispatcher, "ctl-1", "FOCUSED")
    assert released == run1_job and message is not None
    assert message.metadata.deduplication_job_ids == [] and message.metadata.deduplication_index is None, \
        "run 1 has no previous run to deduplicate against"
    store_entries(store, 1, run1_job, ["http://a.dk/", "http://b.dk/"])

    run2 = generate_jobs(engine, 1, GenerationOptions())
    (run2_job,) = run2.job_ids
    with engine.begin() as conn:
        _, other = make_domain(conn, "c.dk")
        make_selective(conn, 2, "other", [other], nextdate=utcnow() - timedelta(minutes=1))
    (other_job,) = generate_jobs(engine, 2, GenerationOptions()).job_ids
    assert run2_job < other_job
    released, message = release(engine, transport, dispatcher, "ctl-2", "FOCUSED")
    assert released == other_job, "run 2 waits for its index without holding back the other harvest's job"
    released, message = release(engine, transport, dispatcher, "ctl-3", "FOCUSED")
    assert released is None and message is None

    report = ticker.tick()
    # run 1's job is still SUBMITTED: an index built now would lack its entries for good
    assert report.indexing["daily"] == ("the jobs of run 2 wait: waiting for 1 of the 1 jobs it deduplicates "
                                        "against to finish before building its deduplication index")
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == run1_job).values(status=int(JobStatus.DONE)))
    report = ticker.tick()
    assert "the jobs of run 2 wait: building deduplication index (" in report.indexing["daily"]
    state, reason = harvest_state(engine, 1)
    assert state == "waiting" and reason.startswith("next run at ") and "the jobs of run 2 wait" in reason

    assert ticker.wait_for_indexes(timeout=60)
    released, message = release(engine, transport, dispatcher, "ctl-3", "FOCUSED")
    assert released == run2_job and message is not None
    assert message.metadata.deduplication_job_ids == [run1_job]
    assert message.metadata.deduplication_index == index_relative_path([run1_job])
    with DedupIndex(store.path_of(message.metadata.deduplication_index)) as index:
        assert len(index) == 2 and index.lookup(digest("http://b.dk/"), "http://b.dk/") is not None
    report = ticker.tick()
    assert not report.indexing and "the jobs of run 2 wait" not in harvest_state(engine, 1)[1]


def test_snapshot_made_ready_by_other_means_gets_its_index_before_its_jobs_go(engine, store, ticker, dispatcher,
                                                                              transport):
    with engine.begin() as conn:
        make_domain(conn, "a.dk")
        make_snapshot(conn, 1, "old", numevents=1)
        conn.execute(update(s.harvestdefinitions).where(s.harvestdefinitions.c.harvest_id == 1)
                     .values(submitted=T0 - timedelta(days=30)))
        make_snapshot(conn, 2, "broad")  # isindexready set, as an imported database may have it
    old_jobs = add_jobs(engine, 1, 1, 2)
    store_entries(store, 1, old_jobs[1], ["http://a.dk/"])
    (job_id,) = generate_jobs(engine, "broad", GenerationOptions()).job_ids
    assert release(engine, transport, dispatcher, "ctl-1", "SNAPSHOT") == (None, None)

    assert "the jobs of run 1 wait: building deduplication index" in ticker.tick().indexing["broad"]
    assert ticker.wait_for_indexes(timeout=60)
    released, message = release(engine, transport, dispatcher, "ctl-2", "SNAPSHOT")
    assert released == job_id and message is not None
    assert message.metadata.deduplication_job_ids == old_jobs, "the most recent older snapshot's jobs"
    assert message.metadata.deduplication_index == index_relative_path(old_jobs)


def test_run_whose_previous_run_made_no_jobs_goes_at_once_without_index(engine, ticker, dispatcher, transport,
                                                                        store):
    with engine.begin() as conn:
        _, config = make_domain(conn, "a.dk")
        make_selective(conn, 1, "daily", [config], numevents=4)  # runs 1-4 made no jobs here
    (job_id,) = ticker.tick().generated["daily"]
    with engine.connect() as conn:
        row = find_run_index(conn, HarvestRun(1, 5))
    assert row is not None and row.ready and row.job_ids == () and row.index_path is None
    released, message = release(engine, transport, dispatcher, "ctl-1", "FOCUSED")
    assert released == job_id and message is not None
    assert message.metadata.deduplication_job_ids == [] and message.metadata.deduplication_index is None
    assert not (store.root / "dedup-index").exists()


def test_deduplication_off_builds_nothing_and_sets_isindexready_directly(engine, store, notifier, transport):
    step1 = continuation_step(engine)
    store_entries(store, 1, step1[0], ["http://kb.dk/"])
    ticker = Ticker(engine, GenerationOptions(deduplication_enabled=False),
                    TickOptions(postpone_unregistered_channel=False), notifier, indexer=None)
    dispatcher = Dispatcher(NAMES, DispatchOptions(deduplication_enabled=False))
    report = ticker.tick()
    assert list(report.generated) == ["step2"] and index_ready(engine, 2) and not report.indexing
    released, message = release(engine, transport, dispatcher, "ctl-1", "SNAPSHOT")
    assert released == report.generated["step2"][0] and message is not None
    assert message.metadata.deduplication_job_ids is None and message.metadata.deduplication_index is None
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.harvest_run_dedup_index)) == 0
    assert not (store.root / "dedup-index").exists()


def test_requests_for_one_job_set_share_one_build(engine, store, indexer, caplog):
    with engine.begin() as conn:
        _, config = make_domain(conn, "a.dk")
        make_selective(conn, 1, "daily", [config])
        make_selective(conn, 2, "weekly", [config])
    job_ids = add_jobs(engine, 1, 1, 2, snapshot=False)
    store_entries(store, 1, job_ids[0], [f"http://a.dk/{n}" for n in range(20_000)])
    pairs = [(1, job_id) for job_id in job_ids]
    caplog.set_level(logging.INFO, logger="scheduler.dedupindex")
    indexer.request(HarvestRun(1, 2), pairs)
    indexer.request(HarvestRun(2, 7), pairs)
    assert indexer.progress(job_ids) is not None
    assert indexer.wait(timeout=60) and indexer.progress(job_ids) is None
    with engine.connect() as conn:
        rows = [find_run_index(conn, run) for run in (HarvestRun(1, 2), HarvestRun(2, 7))]
    assert all(row is not None and row.ready and row.index_path == index_relative_path(job_ids) for row in rows)
    messages = [record.getMessage() for record in caplog.records]
    assert sum("building the deduplication index" in m for m in messages) == 1
    assert sum(" built: " in m for m in messages) == 1 and not any(" reused: " in m for m in messages)


def test_which_jobs_a_run_deduplicates_against(engine):
    """Reference §6.4: a selective run, the previous run's jobs in any status; a snapshot step, the steps
    before it in its chain and the chain of the most recent older snapshot, not its own jobs."""
    with engine.begin() as conn:
        make_selective(conn, 1, "daily", [])
        for harvest_id, name, previous, age in [(10, "x", None, 5), (11, "old1", None, 3), (12, "old2", 11, 2),
                                                (13, "s1", None, 1), (14, "s2", 13, 0), (15, "s3", 14, -1),
                                                (16, "newer", None, -2)]:
            make_snapshot(conn, harvest_id, name, previous=previous)
            conn.execute(update(s.harvestdefinitions).where(s.harvestdefinitions.c.harvest_id == harvest_id)
                         .values(submitted=T0 - timedelta(days=age)))
    selective = {num: add_jobs(engine, 1, num, 2, snapshot=False) for num in (1, 2, 3)}
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == selective[2][0]).values(status=int(JobStatus.FAILED)))
    snapshot = {harvest_id: add_jobs(engine, harvest_id, 1, 1) for harvest_id in range(10, 17)}
    with engine.connect() as conn:
        def ids(run: HarvestRun, is_snapshot: bool) -> list[int]:
            return [job_id for _, job_id in deduplication_jobs(conn, run, is_snapshot)]

        assert ids(HarvestRun(1, 1), False) == []
        assert ids(HarvestRun(1, 3), False) == selective[2]
        assert ids(HarvestRun(1, 4), False) == selective[3]
        assert ids(HarvestRun(15, 1), True) == sorted(
            snapshot[11] + snapshot[12] + snapshot[13] + snapshot[14])
        assert ids(HarvestRun(13, 1), True) == sorted(snapshot[11] + snapshot[12])
        assert ids(HarvestRun(10, 1), True) == []
        assert deduplication_jobs(conn, HarvestRun(14, 1), True) == sorted(
            [(13, snapshot[13][0]), (11, snapshot[11][0]), (12, snapshot[12][0])], key=lambda pair: pair[1])


def test_tick_once_returns_with_the_builds_it_started_recorded(engine, database_url, tmp_path):
    from scheduler.service import SchedulerService

    settings = load_settings(environ={}, overrides={
        "harvestsuite.database.url": database_url, "harvestsuite.queue.url": f"sqlite:///{tmp_path / 'q.db'}",
        "harvestsuite.archive.root": str(tmp_path / "archive")})
    step1 = continuation_step(engine)
    for job_id in step1:
        store_entries(ArchiveStore(tmp_path / "archive"), 1, job_id, [f"http://kb.dk/{job_id}"])
    transport = open_transport(settings.queue)
    service = SchedulerService.from_settings(settings, engine, transport)
    try:
        first = service.tick_once()
        assert "building deduplication index" in first.waiting["step2"]
        with engine.connect() as conn:
            row = find_run_index(conn, HarvestRun(2, 1))
        assert row is not None and row.ready, "tick_once waited for the build it asked for"
        assert list(service.tick_once().generated) == ["step2"]
    finally:
        service.ticker.close()
        transport.close()


def test_a_builder_closed_at_a_step_down_builds_again_when_its_scheduler_leads_again(engine, store, indexer):
    """A scheduler that lost the leadership closes its builder (only the leader builds); leading again, it
    reopens it, and a build asked for then is built and recorded."""
    with engine.begin() as conn:
        _, config = make_domain(conn, "a.dk")
        make_selective(conn, 1, "daily", [config])
    job_ids = add_jobs(engine, 1, 1, 1, snapshot=False)
    store_entries(store, 1, job_ids[0], ["http://a.dk/"])
    pairs = [(1, job_id) for job_id in job_ids]
    indexer.close()
    indexer.request(HarvestRun(1, 2), pairs)
    assert indexer.progress(job_ids) is None, "a closed builder took a request"
    indexer.reopen()
    indexer.request(HarvestRun(1, 2), pairs)
    assert indexer.wait(timeout=60)
    with engine.connect() as conn:
        row = find_run_index(conn, HarvestRun(1, 2))
    assert row is not None and row.ready
