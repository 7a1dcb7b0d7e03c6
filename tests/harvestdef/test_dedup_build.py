"""Building the deduplication index of a set of jobs from their entries files in the archive store."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from harvestdef.archive import ArchiveStore
from harvestdef.dedup import DedupEntry, DedupIndex, build_index, entries_name, index_relative_path, write_entries
from harvestdef.errors import DedupCoverageError

LOGO = "sha1:" + "L" * 32
PDF = "sha1:" + "P" * 32


def _job(store: ArchiveStore, harvest_id: int, job_id: int, entries: list[DedupEntry]) -> None:
    path = store.job_path(harvest_id, job_id) / entries_name(job_id)
    path.parent.mkdir(parents=True)
    write_entries(path, entries)


def test_the_index_name_is_the_sha256_of_the_sorted_job_ids():
    expected = "dedup-index/" + hashlib.sha256(b"1,2,3").hexdigest() + ".sqlite"
    assert index_relative_path([3, 1, 2]) == expected
    assert index_relative_path([2, 3, 1, 3]) == expected
    assert index_relative_path([10, 9]) == "dedup-index/" + hashlib.sha256(b"9,10").hexdigest() + ".sqlite"


def test_no_jobs_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no job ids"):
        build_index(ArchiveStore(tmp_path), [])


def test_the_index_holds_every_job_and_names_the_missing_one(tmp_path):
    store = ArchiveStore(tmp_path)
    _job(store, 5, 1, [DedupEntry(LOGO, "http://www.kb.dk/logo.png", "20260101000000", "<urn:uuid:1>", "1.warc.gz", 10),
                       DedupEntry(PDF, "http://www.kb.dk/a.pdf", "20260101000001")])
    _job(store, 6, 3, [DedupEntry(LOGO, "http://www.kb.dk/logo.png", "20260201000000"),
                       DedupEntry(LOGO, "https://kb.dk/logo.png", "20260201000000", "<urn:uuid:3>", "3.warc.gz", 30)])
    calls = []
    built = build_index(store, [(5, 1), (5, 2), (6, 3)], progress=lambda done, total: calls.append((done, total)))
    assert built.relative_path == index_relative_path([1, 2, 3])
    assert built.path == tmp_path / built.relative_path and built.path.is_file()
    assert (built.job_ids, built.missing_job_ids, built.entries, built.reused) == ((1, 3), (2,), 3, False)
    assert calls == [(1, 3), (2, 3), (3, 3)]
    with DedupIndex(built.path) as index:
        assert index.job_ids == (1, 3) and index.missing_job_ids == (2,)
        assert index.lookup(LOGO) == DedupEntry(LOGO, "http://www.kb.dk/logo.png", "20260101000000",
                                                "<urn:uuid:1>", "1.warc.gz", 10)
        assert index.lookup(LOGO, "https://kb.dk/logo.png").warc_file == "3.warc.gz"
        assert index.lookup(PDF, "http://www.kb.dk/logo.png") is None
    assert sorted(p.name for p in (tmp_path / "dedup-index").iterdir()) == [built.path.name]


def test_a_built_index_is_reused(tmp_path):
    store = ArchiveStore(tmp_path)
    _job(store, 5, 1, [DedupEntry(LOGO, "http://www.kb.dk/logo.png", "20260101000000")])
    first = build_index(store, [(5, 1), (5, 2)])
    modified = first.path.stat().st_mtime_ns
    # new entries for job 2 do not change an index already built for jobs 1 and 2
    _job(store, 5, 2, [DedupEntry(PDF, "http://www.kb.dk/a.pdf", "20260101000000")])
    again = build_index(store, [(5, 2), (5, 1)])
    assert again.reused and not first.reused
    assert (again.relative_path, again.job_ids, again.missing_job_ids, again.entries) == \
        (first.relative_path, (1,), (2,), 1)
    assert again.path.stat().st_mtime_ns == modified
    other = build_index(store, [(5, 2)])
    assert not other.reused and other.relative_path != first.relative_path and other.entries == 1


def test_a_job_under_two_harvests_is_refused(tmp_path):
    with pytest.raises(ValueError, match="job 1 is given under harvests 5 and 6"):
        build_index(ArchiveStore(tmp_path), [(5, 1), (6, 1)])


def test_a_job_whose_entries_cannot_be_read_is_left_out_whole_and_counts_against_the_threshold(tmp_path):
    store = ArchiveStore(tmp_path)
    _job(store, 5, 1, [DedupEntry(LOGO, "http://www.kb.dk/logo.png", "20260101000000")])
    broken = store.job_path(5, 2) / entries_name(2)
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not gzip")
    # a good first line, then a bad one: none of the job's entries may reach the index
    half = store.job_path(5, 3) / entries_name(3)
    half.parent.mkdir(parents=True)
    with gzip.open(half, "wt", encoding="utf-8") as text:
        text.write(f"{LOGO}\thttp://www.kb.dk/half.png\t20260101000000\t\t\t\n{LOGO}\tbroken\n")
    with pytest.raises(DedupCoverageError, match=r"only 1 of the 3 jobs could be read \(33 %\), fewer than "
                                                 r"satisfactorythresholdpercentage \(34 %\): unreadable entries "
                                                 r"of jobs 2, 3$"):
        build_index(store, [(5, 1), (5, 2), (5, 3)], threshold_percentage=34)
    assert [path.name for path in (tmp_path / "dedup-index").iterdir()] == [], "a refused index leaves nothing"
    built = build_index(store, [(5, 1), (5, 2), (5, 3)], threshold_percentage=33)
    assert (built.job_ids, built.missing_job_ids, built.unreadable_job_ids, built.entries) == ((1,), (2, 3), (2, 3), 1)
    with DedupIndex(built.path) as index:
        assert index.missing_job_ids == (2, 3) and index.lookup(LOGO, "http://www.kb.dk/half.png") is None


def test_jobs_without_any_entries_make_an_empty_index(tmp_path):
    built = build_index(ArchiveStore(tmp_path), [(5, 1), (5, 2)])
    assert (built.job_ids, built.missing_job_ids, built.entries, built.reused) == ((), (1, 2), 0, False)
    with DedupIndex(built.path) as index:
        assert len(index) == 0 and index.lookup(LOGO) is None
