"""The deduplication index file: written by DedupIndexWriter, read by DedupIndex."""

from __future__ import annotations

import sqlite3

import pytest

from harvestdef.dedup import DedupEntry, DedupIndex, DedupIndexWriter


def test_written_entries_are_found_by_digest(tmp_path):
    path = tmp_path / "index" / "dedup.sqlite"
    with DedupIndexWriter(path) as writer:
        assert writer.add("sha1:AAAA", "http://www.kb.dk/a.png", "20260101120000", "<urn:uuid:1>", "x.warc.gz", 123)
        assert not writer.add("sha1:AAAA", "http://www.kb.dk/later.png", "20260102120000")
        writer.add("sha1:BBBB", "http://www.kb.dk/b.pdf", "20260101120001")
    with DedupIndex(path) as index:
        assert index.lookup("sha1:AAAA") == DedupEntry("sha1:AAAA", "http://www.kb.dk/a.png", "20260101120000",
                                                       "<urn:uuid:1>", "x.warc.gz", 123)
        assert index.lookup("sha1:BBBB").record_id is None
        assert index.lookup("sha1:CCCC") is None
        assert len(index) == 2


def test_the_table_has_the_agreed_layout(tmp_path):
    path = tmp_path / "dedup.sqlite"
    with DedupIndexWriter(path) as writer:
        writer.add("sha1:AAAA", "http://a/", "20260101120000")
    with sqlite3.connect(path) as connection:
        columns = [(row[1], row[2], row[5]) for row in connection.execute("PRAGMA table_info(dedup)")]
    assert columns == [("digest", "TEXT", 1), ("url", "TEXT", 0), ("date", "TEXT", 0), ("record_id", "TEXT", 0),
                       ("warc_file", "TEXT", 0), ("warc_offset", "INTEGER", 0)]


def test_a_failed_block_writes_nothing(tmp_path):
    path = tmp_path / "dedup.sqlite"
    with pytest.raises(ValueError), DedupIndexWriter(path) as writer:
        writer.add("sha1:AAAA", "http://a/", "20260101120000")
        writer.add("sha1:BBBB", "http://b/", "2026-01-01")
    with DedupIndex(path) as index:
        assert len(index) == 0


def test_a_missing_index_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"), DedupIndex(tmp_path / "none.sqlite"):
        pass
