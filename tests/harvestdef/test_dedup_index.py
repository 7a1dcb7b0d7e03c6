"""The deduplication index file: written by DedupIndexWriter, read by DedupIndex, answering the DeDuplicator's
two matching methods (by digest and by URL)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from harvestdef.dedup import DedupEntry, DedupIndex, DedupIndexWriter
from harvestdef.dedup.index import write_staging
from harvestdef.errors import DedupFormatError

LOGO = "sha1:" + "L" * 32
PDF = "sha1:" + "P" * 32
A, B, C = "http://www.kb.dk/logo.png", "https://www.kb.dk/logo.png", "http://www.kb.dk/other.png"


def test_by_url_finds_only_that_urls_capture_and_by_digest_the_earliest_of_any(tmp_path):
    path = tmp_path / "index.sqlite"
    with DedupIndexWriter(path) as writer:
        assert writer.add(LOGO, B, "20260102120000", "<urn:uuid:b>", "b.warc.gz", 200)
        assert writer.add(LOGO, A, "20260101120000", "<urn:uuid:a>", "a.warc.gz", 100)
        assert writer.add(PDF, C, "20260103120000")
    with DedupIndex(path) as index:
        assert index.lookup(LOGO, B) == DedupEntry(LOGO, B, "20260102120000", "<urn:uuid:b>", "b.warc.gz", 200)
        assert index.lookup(LOGO, C) is None
        assert index.lookup(LOGO) == DedupEntry(LOGO, A, "20260101120000", "<urn:uuid:a>", "a.warc.gz", 100)
        assert index.lookup(PDF) == DedupEntry(PDF, C, "20260103120000")
        assert index.lookup(PDF, C) == index.lookup(PDF)
        assert index.lookup("sha1:" + "Z" * 32) is None
        assert index.lookup("sha1:" + "Z" * 32, A) is None
        assert len(index) == 3


def test_each_pair_keeps_its_earliest_capture(tmp_path):
    path = tmp_path / "index.sqlite"
    with DedupIndexWriter(path) as writer:
        assert writer.add(LOGO, A, "20260105000000", "<urn:uuid:late>")
        assert not writer.add(LOGO, A, "20260101000000", "<urn:uuid:early>", "e.warc.gz", 7)
        assert not writer.add(LOGO, A, "20260109000000", "<urn:uuid:later>")
    with DedupIndex(path) as index:
        assert index.lookup(LOGO, A) == DedupEntry(LOGO, A, "20260101000000", "<urn:uuid:early>", "e.warc.gz", 7)
        assert len(index) == 1


def test_bulk_entries_are_merged_with_single_ones(tmp_path):
    path = tmp_path / "index.sqlite"
    with DedupIndexWriter(path) as writer:
        assert writer.add_many([DedupEntry(LOGO, A, "20260103000000", "<urn:uuid:1>", "one.warc.gz", 1),
                                DedupEntry(LOGO, A, "20260102000000", "<urn:uuid:2>", "two.warc.gz", 2),
                                DedupEntry(LOGO, B, "20260104000000")]) == 3
        # add sees what add_many staged: the pair is present
        assert not writer.add(LOGO, A, "20260105000000")
        assert writer.add(PDF, A, "20260101000000")
        writer.add_many(iter([DedupEntry(LOGO, B, "20260101000000", "<urn:uuid:3>", "two.warc.gz", 3)]))
    with DedupIndex(path) as index:
        assert index.lookup(LOGO, A) == DedupEntry(LOGO, A, "20260102000000", "<urn:uuid:2>", "two.warc.gz", 2)
        assert index.lookup(LOGO) == DedupEntry(LOGO, B, "20260101000000", "<urn:uuid:3>", "two.warc.gz", 3)
        assert len(index) == 3


def test_staging_files_keep_their_warc_file_names(tmp_path):
    first, second = tmp_path / "first.part", tmp_path / "second.part"
    assert write_staging(first, [(LOGO, A, "20260101000000", None, "x.warc.gz", 1),
                                 (PDF, A, "20260101000000", None, "y.warc.gz", 2)]) == 2
    write_staging(second, [(LOGO, B, "20260101000000", None, "y.warc.gz", 3),
                           (PDF, B, "20260101000000", None, "z.warc.gz", 4),
                           (PDF, C, "20260101000000", None, None, None)])
    path = tmp_path / "index.sqlite"
    with DedupIndexWriter(path) as writer:
        writer.add(LOGO, C, "20260101000000", warc_file="z.warc.gz", warc_offset=5)
        assert writer.add_staging(first) == 2
        assert writer.add_staging(second) == 3
    with DedupIndex(path) as index:
        found = {(entry.digest, entry.url): (entry.warc_file, entry.warc_offset)
                 for entry in (index.lookup(digest, url) for digest in (LOGO, PDF) for url in (A, B, C))
                 if entry is not None}
    assert found == {(LOGO, A): ("x.warc.gz", 1), (PDF, A): ("y.warc.gz", 2), (LOGO, B): ("y.warc.gz", 3),
                     (PDF, B): ("z.warc.gz", 4), (PDF, C): (None, None), (LOGO, C): ("z.warc.gz", 5)}


def test_the_jobs_of_the_index_are_recorded(tmp_path):
    path = tmp_path / "index.sqlite"
    with DedupIndexWriter(path) as writer:
        writer.set_jobs([3, 1, 2], [5, 4])
    with DedupIndex(path) as index:
        assert index.job_ids == (1, 2, 3)
        assert index.missing_job_ids == (4, 5)
        assert len(index) == 0
        assert index.lookup(LOGO) is None


def test_the_tables_have_the_agreed_layout(tmp_path):
    path = tmp_path / "index.sqlite"
    with DedupIndexWriter(path) as writer:
        writer.add(LOGO, A, "20260101120000")
    with sqlite3.connect(path) as connection:
        tables = {name: [(row[1], row[2], row[5]) for row in connection.execute(f"PRAGMA table_info({name})")]
                  for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    connection.close()
    assert tables == {
        "capture": [("digest", "TEXT", 1), ("url", "TEXT", 2), ("date", "INTEGER", 0), ("record_id", "TEXT", 0),
                    ("warc_file_id", "INTEGER", 0), ("warc_offset", "INTEGER", 0)],
        "warc_file": [("id", "INTEGER", 1), ("name", "TEXT", 0)],
        "original": [("digest", "TEXT", 1), ("url", "TEXT", 0)],
        "meta": [("key", "TEXT", 1), ("value", "TEXT", 0)],
    }


def test_a_failed_block_leaves_no_file_and_an_earlier_index_as_it_was(tmp_path):
    path = tmp_path / "index.sqlite"
    with pytest.raises(ValueError, match="14 digits"), DedupIndexWriter(path) as writer:
        writer.add(LOGO, A, "20260101120000")
        writer.add(PDF, B, "2026-01-01")
    assert list(tmp_path.iterdir()) == []
    with DedupIndexWriter(path) as writer:
        writer.add(LOGO, A, "20260101120000")
    with pytest.raises(ValueError, match="14 digits"), DedupIndexWriter(path) as writer:
        writer.add_many([DedupEntry(PDF, B, "20260101120000"), DedupEntry(PDF, C, "tomorrow")])
    assert [p.name for p in tmp_path.iterdir()] == ["index.sqlite"]
    with DedupIndex(path) as index:
        assert len(index) == 1 and index.lookup(LOGO, A) is not None


def test_lookups_from_another_thread(tmp_path):
    path = tmp_path / "index.sqlite"
    with DedupIndexWriter(path) as writer:
        writer.add(LOGO, A, "20260101120000")
    found = []
    with DedupIndex(path) as index:
        thread = threading.Thread(target=lambda: found.append(index.lookup(LOGO)))
        thread.start()
        thread.join()
    assert found == [DedupEntry(LOGO, A, "20260101120000")]


def test_a_missing_index_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"), DedupIndex(tmp_path / "none.sqlite"):
        pass


def test_a_file_that_is_not_an_index(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE dedup (digest TEXT PRIMARY KEY)")
    connection.close()
    with pytest.raises(DedupFormatError, match="not a deduplication index"), DedupIndex(path):
        pass


def test_using_the_index_outside_its_block(tmp_path):
    path = tmp_path / "index.sqlite"
    with DedupIndexWriter(path) as writer:
        writer.add(LOGO, A, "20260101120000")
    index = DedupIndex(path)
    with pytest.raises(RuntimeError, match="outside its with-block"):
        index.lookup(LOGO)
    with pytest.raises(RuntimeError, match="outside its with-block"):
        DedupIndexWriter(tmp_path / "x.sqlite").add(LOGO, A, "20260101120000")
