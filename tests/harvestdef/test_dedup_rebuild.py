"""``harvestsuite dedup rebuild``: jobs stored before partitions get theirs, beside their untouched entries file,
on SQLite and PostgreSQL; reruns, unreadable jobs and interruptions."""

from __future__ import annotations

import base64
import gzip
import hashlib
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import Engine

from harvestdef.archive import CHECKSUMS, ArchiveStore
from harvestdef.dedup import DedupIndex, entries_name, read_entry_fields, write_entries
from harvestdef.dedup.entries import DedupEntry
from harvestdef.dedup.jobindex import build_job_index
from harvestdef.dedup.partitions import directory_name, domain_of_entry_url, parse_directory, write_partitioned
from harvestdef.dedup.rebuild import RebuildOutcome, by_domain_name, count_jobs, rebuild_store
from harvestdef.model.status import JobStatus
from harvestdef.repositories.jobs import JobRepository, new_job_row
from tests.scheduler.factories import T0, make_domain, make_selective

DOMAINS = ["kb.dk", "dr.dk", "bbc.co.uk", "example.org", "cdn-host.net"]
# harvest id -> job id -> the domains of the job's configurations; job 14 is not in the database
OLD_JOBS = {5: {11: ["kb.dk", "dr.dk"], 12: ["bbc.co.uk"]}, 6: {13: ["example.org"], 14: None}}
PARTITIONED = (6, 20)
CORRUPT = (5, 21)
# captures per domain: more than one gzip member holds (partitions.MEMBER_BYTES), so each domain has its own
PER_DOMAIN = 600


def digest(text: str) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(text.encode()).digest()).decode("ascii")


def job_entries(job_id: int, per_domain: int = PER_DOMAIN) -> list[DedupEntry]:
    """Captures of every domain of DOMAINS and a logo they share, in no domain order."""
    date = f"202601{job_id % 28 + 1:02d}120000"
    entries = []
    for domain in DOMAINS:
        for n in range(per_domain):
            entries.append(DedupEntry(digest(f"{domain} {n}"), f"http://www.{domain}/img/{n}.png", date,
                                      f"<urn:uuid:{job_id}-{domain}-{n}>", f"{job_id}-1.warc.gz", 1000 + n))
        entries.append(DedupEntry(digest("logo"), f"https://{domain}/logo.png", date))
    random.Random(job_id).shuffle(entries)
    return entries


def store_entries(store: ArchiveStore, work: Path, harvest_id: int, job_id: int, entries: list[DedupEntry]) -> None:
    """A job as a harvester stored it before partitions: the entries file and SHA256SUMS."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{job_id}.gz"
    write_entries(path, entries)
    store.store(path, harvest_id, job_id, entries_name(job_id))
    store.write_checksums(harvest_id, job_id)


def make_store(engine: Engine, tmp_path: Path, per_domain: int = PER_DOMAIN) -> ArchiveStore:
    """The old jobs of OLD_JOBS (in the database but job 14), one partitioned already, one corrupt."""
    store = ArchiveStore(tmp_path / "store")
    store.root.mkdir()
    (store.root / "dedup-index").mkdir()   # not a harvest directory
    with engine.begin() as conn:
        config_ids = {domain: make_domain(conn, domain)[1] for domain in DOMAINS}
        rows, links = [], {}
        for harvest_id, jobs in OLD_JOBS.items():
            make_selective(conn, harvest_id, f"harvest {harvest_id}", list(config_ids.values()))
            for job_id, domains in jobs.items():
                if domains is None:
                    continue
                rows.append({**new_job_row(job_id=job_id, harvest_id=harvest_id, channel="FOCUSED", snapshot=False,
                                           orderxml="default_orderxml", harvest_num=1, creationdate=T0),
                             "status": int(JobStatus.DONE)})
                links[job_id] = [config_ids[domain] for domain in domains]
        JobRepository(conn).insert(rows, links)
    for harvest_id, jobs in OLD_JOBS.items():
        for job_id in jobs:
            store_entries(store, tmp_path / "made", harvest_id, job_id, job_entries(job_id, per_domain))
    harvest_id, job_id = PARTITIONED
    work = tmp_path / "made"
    items = [(e.digest, e.url, e.date, e.record_id, e.warc_file, e.warc_offset) for e in job_entries(job_id)]
    write_partitioned(items, work / f"{job_id}.gz", work / f"{job_id}.domains", ["kb.dk"])
    store.store(work / f"{job_id}.gz", harvest_id, job_id, entries_name(job_id))
    store.store(work / f"{job_id}.domains", harvest_id, job_id, directory_name(job_id))
    store.write_checksums(harvest_id, job_id)
    harvest_id, job_id = CORRUPT
    whole = gzip.compress(b"".join(f"{e.digest}\t{e.url}\t{e.date}\t\t\t\n".encode() for e in job_entries(job_id)))
    (work / "cut.gz").write_bytes(whole[:len(whole) // 2])
    store.store(work / "cut.gz", harvest_id, job_id, entries_name(job_id))
    store.write_checksums(harvest_id, job_id)
    return store


def old_jobs() -> list[tuple[int, int]]:
    return [(harvest_id, job_id) for harvest_id, jobs in OLD_JOBS.items() for job_id in jobs]


def stored_bytes(store: ArchiveStore) -> dict[str, bytes]:
    return {path.relative_to(store.root).as_posix(): path.read_bytes()
            for path in sorted(store.root.rglob("*")) if path.is_file()}


def assert_checksums_complete(job: Path) -> None:
    """``sha256sum -c`` accepts the job's SHA256SUMS, and it lists every file of the job.

    A killed process may leave the store's temporary files (``.<name>.tmp-<pid>-<random>``), which are never
    a stored file and never listed.
    """
    checked = subprocess.run(["sha256sum", "--strict", "-c", CHECKSUMS], cwd=job, capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    listed = {line.split("  ", 1)[1] for line in (job / CHECKSUMS).read_text().splitlines()}
    present = {path.relative_to(job).as_posix() for path in job.rglob("*")
               if path.is_file() and not path.name.startswith(".")} - {CHECKSUMS}
    assert listed == present


def harvestsuite(database_url: str, store: ArchiveStore, *args: str) -> list[str]:
    script = shutil.which("harvestsuite") or str(Path(sys.executable).with_name("harvestsuite"))
    return [script, "--set", f"harvestsuite.database.url={database_url}", "--set",
            f"harvestsuite.archive.root={store.root}", *args]


def test_old_jobs_get_their_partitions_beside_their_untouched_entries(engine: Engine, tmp_path: Path) -> None:
    store = make_store(engine, tmp_path)
    before = stored_bytes(store)
    index_before = build_job_index(store, [(5, 11)], ["dr.dk"], tmp_path / "before.sqlite")
    assert index_before.whole_job_ids == (11,)
    count = count_jobs(store)
    assert (count.pending, count.partitioned) == (5, 1)

    work = tmp_path / "work"
    work.mkdir()
    started, finished = [], []
    summary = rebuild_store(store, engine, work_dir=work, on_start=lambda job: started.append(job.job_id),
                            on_done=finished.append)
    assert (summary.rebuilt, summary.skipped, summary.unknown) == (4, 1, 1)
    assert summary.entries == 4 * len(job_entries(11)) and summary.seconds > 0
    (failed,) = summary.failed
    assert (failed.harvest_id, failed.job_id, failed.outcome) == (*CORRUPT, RebuildOutcome.FAILED)
    assert str(store.job_path(*CORRUPT) / entries_name(21)) in failed.reason and "unreadable" in failed.reason
    assert started == [11, 12, 21, 13, 14], "by harvest, then job"
    assert {result.job_id: result.outcome for result in finished}[20] is RebuildOutcome.DONE
    assert list(work.iterdir()) == [], "working files are removed"

    after = stored_bytes(store)
    assert {name: data for name, data in after.items() if name in before and not name.endswith(CHECKSUMS)} == \
        {name: data for name, data in before.items() if not name.endswith(CHECKSUMS)}, "no stored file changed"
    for harvest_id, job_id in old_jobs():
        job = store.job_path(harvest_id, job_id)
        directory = parse_directory((job / directory_name(job_id)).read_text(), job_id)
        assert directory.data_name == f"{job_id}.by-domain.gz"
        # the same captures, now in domain order (plus the shared partition's logo, first)
        rebuilt = list(read_entry_fields(job / by_domain_name(job_id)))
        original = list(read_entry_fields(job / entries_name(job_id)))
        assert sorted(set(rebuilt)) == sorted(set(original)) and len(rebuilt) == len(original) + 1
        domains = [domain_of_entry_url(item[1]) for item in rebuilt[1:]]
        assert domains == sorted(domains)
        own = OLD_JOBS[harvest_id][job_id] or []
        assert sorted(directory.own_domains()) == sorted(own)
        assert_checksums_complete(job)
    # the job partitioned already and the corrupt one are as they were
    for harvest_id, job_id in (PARTITIONED, CORRUPT):
        assert not store.has(harvest_id, job_id, by_domain_name(job_id))
    assert not store.has(*CORRUPT, directory_name(21))

    index_after = build_job_index(store, [(5, 11)], ["dr.dk"], tmp_path / "after.sqlite")
    assert index_after.whole_job_ids == () and index_after.source_job_ids == (11,)
    whole_file = (store.job_path(5, 11) / entries_name(11)).stat().st_size
    assert index_after.bytes_read < whole_file / 2, "the directory and dr.dk's member, not the whole file"
    dr = [entry for entry in job_entries(11) if domain_of_entry_url(entry.url) == "dr.dk"]
    with DedupIndex(index_before.path) as old, DedupIndex(index_after.path) as new:
        for entry in dr:
            assert new.lookup(entry.digest, entry.url) == old.lookup(entry.digest, entry.url) == entry
        assert new.lookup(digest("kb.dk 3"), "http://www.kb.dk/img/3.png") is None

    again = rebuild_store(store, engine, work_dir=work)
    assert (again.rebuilt, again.skipped, again.entries) == (0, 5, 0)
    assert [result.job_id for result in again.failed] == [21]
    assert stored_bytes(store) == after


def test_the_command_counts_rebuilds_names_the_unreadable_job_and_fails(engine: Engine, database_url: str,
                                                                        tmp_path: Path) -> None:
    store = make_store(engine, tmp_path)
    dry = subprocess.run(harvestsuite(database_url, store, "dedup", "rebuild", "--dry-run"), capture_output=True,
                         text=True, timeout=120, check=False)
    assert dry.returncode == 0, dry.stderr
    assert "would rebuild 5 job(s); 1 have their partitions already" in dry.stdout
    assert not store.has(5, 11, directory_name(11))

    first = subprocess.run(harvestsuite(database_url, store, "dedup", "rebuild", "--work-dir", str(tmp_path / "w")),
                           capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "rebuilt 4 job(s) (1 not in the harvest database: no own domains), skipped 1 as done, failed 1;" \
        in first.stdout
    assert f"{4 * len(job_entries(11)):,} entries in" in first.stdout and "entries/s" in first.stdout
    assert "job 14 of harvest 6 is not in the harvest database: partitioned with own domains: none" in first.stderr
    assert "job 21 of harvest 5: not rebuilt:" in first.stderr and "unreadable" in first.stderr
    assert "1 job(s) not rebuilt" in first.stderr and "  job 21 of harvest 5: " in first.stderr
    assert "rebuilding" in first.stderr, "the progress bar"
    assert all(store.has(h, j, directory_name(j)) for h, j in old_jobs())

    second = subprocess.run(harvestsuite(database_url, store, "dedup", "rebuild"), capture_output=True, text=True,
                            timeout=120, check=False)
    assert second.returncode == 1
    assert "rebuilt 0 job(s), skipped 5 as done, failed 1; 0 entries" in second.stdout

    shutil.rmtree(store.root)
    missing = subprocess.run(harvestsuite(database_url, store, "dedup", "rebuild"), capture_output=True, text=True,
                             timeout=120, check=False)
    assert missing.returncode == 2 and f"the archive store's root {store.root} is missing" in missing.stderr


def test_a_failed_store_of_the_directory_leaves_none_and_a_rerun_completes_the_job(engine: Engine,
                                                                                  tmp_path: Path) -> None:
    store = make_store(engine, tmp_path)
    # something in the directory's name, so its store fails after the data file was stored
    obstacle = store.job_path(5, 12) / directory_name(12)
    obstacle.symlink_to(tmp_path / "nowhere")
    work = tmp_path / "work"
    work.mkdir()
    summary = rebuild_store(store, engine, work_dir=work)
    assert sorted(result.job_id for result in summary.failed) == [12, 21] and summary.rebuilt == 3
    assert store.has(5, 12, by_domain_name(12)) and not store.has(5, 12, directory_name(12))
    assert list(work.iterdir()) == []
    assert not [path for path in store.root.rglob(".*")], "no temporary file is left in the store"
    # what a reader sees of job 12 meanwhile: no directory, so its whole entries file, as before the rebuild
    assert build_job_index(store, [(5, 12)], ["bbc.co.uk"], tmp_path / "i.sqlite").whole_job_ids == (12,)

    # and job 13 as if killed after its directory was stored, before its SHA256SUMS listed it
    sums_13 = store.job_path(6, 13) / CHECKSUMS
    sums_13.write_text("".join(line for line in sums_13.read_text().splitlines(keepends=True)
                               if not line.endswith(("13.domains\n", "13.by-domain.gz\n"))))

    obstacle.unlink()
    again = rebuild_store(store, engine, work_dir=work)
    assert_checksums_complete(store.job_path(6, 13))
    assert again.rebuilt == 1 and again.skipped == 4 and [result.job_id for result in again.failed] == [21]
    job = store.job_path(5, 12)
    assert parse_directory((job / directory_name(12)).read_text(), 12).data_name == "12.by-domain.gz"
    assert_checksums_complete(job)
    assert build_job_index(store, [(5, 12)], ["bbc.co.uk"], tmp_path / "j.sqlite").whole_job_ids == ()


def test_a_killed_rebuild_leaves_whole_jobs_or_none_and_a_rerun_completes_it(engine: Engine, database_url: str,
                                                                             tmp_path: Path) -> None:
    store = make_store(engine, tmp_path)
    # many more old jobs, large enough that the kill lands while some are still to do
    for job_id in range(100, 130):
        store_entries(store, tmp_path / "made", 7, job_id, job_entries(job_id, per_domain=2000))
    command = harvestsuite(database_url, store, "dedup", "rebuild", "--work-dir", str(tmp_path / "w"))
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not store.has(7, 101, directory_name(101)) and time.monotonic() < deadline:
            time.sleep(0.01)
        running.send_signal(signal.SIGKILL)
        running.communicate(timeout=30)
    finally:
        if running.poll() is None:
            running.kill()
    jobs = [(7, job_id) for job_id in range(100, 130)]
    done = [job for job in jobs if store.has(*job, directory_name(job[1]))]
    assert 2 <= len(done) < len(jobs), "killed midway"
    for harvest_id, job_id in done:
        # a directory in the store always has its whole data file
        path = store.job_path(harvest_id, job_id)
        directory = parse_directory((path / directory_name(job_id)).read_text(), job_id)
        assert sum(1 for _ in read_entry_fields(path / by_domain_name(job_id))) == \
            sum(segment.count for segment in directory.segments.values())

    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 1 and "failed 1;" in rerun.stdout, rerun.stdout + rerun.stderr
    # the four old jobs and the partitioned one of make_store were done before the kill, in harvests 5 and 6
    assert f"rebuilt {len(jobs) - len(done)} job(s)" in rerun.stdout
    assert f"skipped {len(done) + 5} as done" in rerun.stdout
    for harvest_id, job_id in jobs + old_jobs():
        assert store.has(harvest_id, job_id, directory_name(job_id))
        assert_checksums_complete(store.job_path(harvest_id, job_id))
    assert count_jobs(store).pending == 1   # the corrupt job


def test_a_job_still_being_stored_is_left_to_its_harvester(engine: Engine, tmp_path: Path):
    """Its entries file is stored and its SHA256SUMS not yet written: the harvester stores its own directory
    next, so the rebuild takes the job only once its upload has finished."""
    store = make_store(engine, tmp_path)
    harvest_id, job_id = 5, 11
    (store.job_path(harvest_id, job_id) / CHECKSUMS).unlink()
    summary = rebuild_store(store, engine, work_dir=tmp_path / "work")
    assert not store.has(harvest_id, job_id, directory_name(job_id))
    assert (harvest_id, job_id) not in [(r.harvest_id, r.job_id) for r in summary.failed]
    store.write_checksums(harvest_id, job_id)  # the upload ends
    rebuild_store(store, engine, work_dir=tmp_path / "work")
    assert store.has(harvest_id, job_id, directory_name(job_id))
