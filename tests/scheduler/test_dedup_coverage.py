"""NetarchiveSuite's satisfactorythresholdpercentage (reference §6.4): a run's deduplication index is used
when the entries of at least 70 % of the jobs it is built from could be read, and refused below, with the
reason on the harvest's page, in the API and on the "Why harvests wait" page until enough entries are
stored. The real scheduler tick, index builder and dispatcher, on SQLite and PostgreSQL, with the archive
store in a temporary directory and the embedded queue."""

from __future__ import annotations

from datetime import timedelta

import pytest

from harvestdef.archive import ArchiveStore
from harvestdef.db.types import utcnow
from harvestdef.dedup import DedupIndex, build_index, entries_name, index_relative_path
from harvestdef.errors import DedupCoverageError, SettingsError
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import load_settings
from scheduler.dedupindex import DedupIndexBuilder, HarvestRun, find_run_index
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.jobgen.generate import GenerationOptions
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions
from tests.scheduler.factories import make_domain, make_selective
from tests.scheduler.test_dedup_index_build import (
    NAMES,
    add_jobs,
    continuation_step,
    harvest_state,
    index_ready,
    release,
    store_entries,
    transport,
)
from tests.webui.conftest import csrf_of
from webui import create_app

__all__ = ["transport"]  # the fixture, used by name


@pytest.fixture
def store(tmp_path) -> ArchiveStore:
    return ArchiveStore(tmp_path / "archive")


@pytest.fixture
def notifier() -> Notifier:
    return Notifier()


@pytest.fixture
def ticker(engine, store, notifier):
    settings = load_settings(environ={}, overrides={"harvestsuite.archive.root": str(store.root)})
    assert settings.scheduler.satisfactorythresholdpercentage == 70, "NetarchiveSuite's default"
    indexer = DedupIndexBuilder.from_settings(settings, engine, notifier)
    yield Ticker(engine, GenerationOptions(), TickOptions(postpone_unregistered_channel=False), notifier,
                 indexer=indexer)
    indexer.close()


@pytest.fixture
def dispatcher(engine, transport) -> Dispatcher:
    return Dispatcher(NAMES, DispatchOptions())


def daily_harvest_after_a_run_of_ten_jobs(engine) -> list[int]:
    """A selective harvest whose run 1 made ten DONE jobs and whose run 2 is due; run 1's job ids."""
    with engine.begin() as conn:
        _, config = make_domain(conn, "kb.dk")
        make_selective(conn, 1, "daily", [config], numevents=1, nextdate=utcnow() - timedelta(minutes=1))
    return add_jobs(engine, 1, 1, 10, snapshot=False)


def store_run_1_entries(store: ArchiveStore, job_ids: list[int], unreadable: int) -> None:
    """Entries for ``job_ids``, the first ``unreadable`` of them cut short (not gzip)."""
    for number, job_id in enumerate(job_ids):
        if number < unreadable:
            path = store.job_path(1, job_id) / entries_name(job_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"\x1f\x8b not really gzip")
        else:
            store_entries(store, 1, job_id, [f"http://kb.dk/{job_id}.png"])


def test_seven_of_ten_readable_is_enough_and_the_three_are_left_out(engine, store, ticker, dispatcher, transport):
    run1 = daily_harvest_after_a_run_of_ten_jobs(engine)
    store_run_1_entries(store, run1[:8], unreadable=1)  # 7 read, 1 unreadable, 2 never stored

    (run2_job,) = ticker.tick().generated["daily"]
    assert ticker.wait_for_indexes(timeout=60)
    released, message = release(engine, transport, dispatcher, "ctl-1", "FOCUSED")
    assert released == run2_job and message is not None
    assert message.metadata.deduplication_index == index_relative_path(run1)
    with engine.connect() as conn:
        row = find_run_index(conn, HarvestRun(1, 2))
    assert row is not None and row.ready and row.refusal is None
    assert row.missing_job_ids == (run1[0], run1[8], run1[9]) and row.entries == 7
    with DedupIndex(store.path_of(row.index_path)) as index:
        assert index.job_ids == tuple(run1[1:8]) and index.missing_job_ids == (run1[0], run1[8], run1[9])


def test_six_of_ten_is_refused_and_waits_saying_why_until_a_seventh_is_stored(engine, store, ticker, dispatcher,
                                                                              transport, notifier, tmp_path):
    run1 = daily_harvest_after_a_run_of_ten_jobs(engine)
    store_run_1_entries(store, run1[:7], unreadable=1)  # 6 read, 1 unreadable, 3 never stored

    (run2_job,) = ticker.tick().generated["daily"]
    reasons = []
    for _ in range(3):
        assert ticker.wait_for_indexes(timeout=60)
        report = ticker.tick()
        reasons.append(report.indexing["daily"])
        assert release(engine, transport, dispatcher, f"ctl-{len(reasons)}", "FOCUSED") == (None, None)
    expected = (f"the jobs of run 2 wait: deduplication index refused: the entries of only 6 of the 10 jobs "
                f"could be read (60 %), fewer than satisfactorythresholdpercentage (70 %): no stored entries for "
                f"jobs {run1[7]}, {run1[8]}, {run1[9]}; unreadable entries of job {run1[0]}")
    assert all(reason.startswith(expected) for reason in reasons), reasons
    assert not (store.root / index_relative_path(run1)).exists(), "a refused index is never stored"
    with engine.connect() as conn:
        row = find_run_index(conn, HarvestRun(1, 2))
    assert row is not None and not row.ready and row.failures == 0 and row.refusal in reasons[0]
    assert [subject for subject, _ in notifier.sent] == ["Deduplication index of harvest 1 run 2 refused"], \
        "told once, not at every count"
    state, reason = harvest_state(engine, 1)
    assert state == "waiting" and expected in reason

    # the harvest's page, the API and the "Why harvests wait" page show the reason
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive")})
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
        assert page.status_code == 200 and "deduplication index refused: the entries of only 6 of the 10" in \
            page.get_data(as_text=True), path

    # The last tick asked for a count of its own: let it end refused first, or the tick below would find it
    # still counting (without the seventh) and ask for none.
    assert ticker.wait_for_indexes(timeout=60)
    store_entries(store, 1, run1[0], ["http://kb.dk/repaired.png"])  # the seventh: 70 %
    ticker.tick()
    assert ticker.wait_for_indexes(timeout=60)
    released, message = release(engine, transport, dispatcher, "ctl-9", "FOCUSED")
    assert released == run2_job and message is not None
    with engine.connect() as conn:
        row = find_run_index(conn, HarvestRun(1, 2))
        assert row is not None and row.ready and row.refusal is None and row.entries == 7
    assert "refused" not in ticker.tick().indexing.get("daily", "")
    assert "refused" not in harvest_state(engine, 1)[1]


def test_build_index_counts_before_reading_and_takes_the_threshold_as_at_least(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    jobs = [(1, job_id) for job_id in range(1, 11)]
    for _, job_id in jobs[:7]:
        store_entries(store, 1, job_id, [f"http://kb.dk/{job_id}.png"])
    with pytest.raises(DedupCoverageError, match=r"only 7 of the 10 jobs could be read \(70 %\), fewer than "
                                                 r"satisfactorythresholdpercentage \(71 %\): no stored entries "
                                                 r"for jobs 8, 9, 10$"):
        build_index(store, jobs, threshold_percentage=71)
    assert not (store.root / "dedup-index").exists() or not any((store.root / "dedup-index").iterdir())
    built = build_index(store, jobs, threshold_percentage=70)
    assert built.entries == 7 and built.missing_job_ids == (8, 9, 10) and not built.reused
    with pytest.raises(ValueError, match="from 0 to 100, got 101"):
        build_index(store, jobs, threshold_percentage=101)


def test_a_threshold_outside_0_to_100_stops_start_up_naming_the_setting():
    with pytest.raises(SettingsError, match="harvester.indexserver.satisfactorythresholdpercentage.*got 120"):
        load_settings(environ={}, overrides={"harvester.indexserver.satisfactorythresholdpercentage": 120})
    assert load_settings(environ={"HARVESTSUITE__HARVESTER__INDEXSERVER__SATISFACTORYTHRESHOLDPERCENTAGE": "0"}
                         ).scheduler.satisfactorythresholdpercentage == 0



def test_a_snapshot_step_is_not_generated_while_its_index_is_refused(engine, store, ticker):
    step1 = continuation_step(engine)  # three jobs of step 1; step 2 continues it
    store_entries(store, 1, step1[0], ["http://kb.dk/"])
    store_entries(store, 1, step1[1], ["http://dr.dk/"])  # 2 of 3: 66 %

    ticker.tick()
    assert ticker.wait_for_indexes(timeout=60)
    report = ticker.tick()
    assert "step2" not in report.generated and not index_ready(engine, 2)
    assert report.waiting["step2"].startswith(
        f"deduplication index refused: the entries of only 2 of the 3 jobs could be read (66 %), fewer than "
        f"satisfactorythresholdpercentage (70 %): no stored entries for job {step1[2]}")
    assert harvest_state(engine, 2) == ("waiting", report.waiting["step2"])

    # The last tick asked for a count of its own: let it end refused first, or the tick below would find it
    # still counting (without the third job's entries) and ask for none.
    assert ticker.wait_for_indexes(timeout=60)
    store_entries(store, 1, step1[2], ["http://kb.dk/more.png"])
    ticker.tick()
    assert ticker.wait_for_indexes(timeout=60)
    assert list(ticker.tick().generated) == ["step2"] and index_ready(engine, 2)
