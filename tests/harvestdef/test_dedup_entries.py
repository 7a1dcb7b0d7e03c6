"""A job's deduplication entries file: written and read back, and broken files named precisely."""

from __future__ import annotations

import gzip

import pytest

from harvestdef.dedup import DedupEntry, entries_name, read_entries, write_entries
from harvestdef.errors import DedupFormatError

DIGEST = "sha1:" + "A" * 32
OTHER = "sha1:" + "B2" * 16
ENTRIES = [
    DedupEntry(DIGEST, "http://www.kb.dk/logo.png", "20260101120000", "<urn:uuid:0d5bd1a8-8ab3-4b8a-9d6b-1c2b3a4d5e6f>",
               "7-42-20260101120000-00000-sb.warc.gz", 12345),
    DedupEntry(OTHER, "https://www.kulturarv.dk/rapport.pdf?år=2026", "20260101120001"),
]


def _gzip(path, text: str) -> None:
    with gzip.open(path, "wt", encoding="utf-8", newline="\n") as out:
        out.write(text)


def test_entries_round_trip(tmp_path):
    path = tmp_path / "42.gz"
    assert write_entries(path, iter(ENTRIES)) == 2
    assert list(read_entries(path)) == ENTRIES
    with gzip.open(path, "rt", encoding="utf-8") as raw:
        assert raw.read().splitlines() == [
            f"{DIGEST}\thttp://www.kb.dk/logo.png\t20260101120000\t<urn:uuid:0d5bd1a8-8ab3-4b8a-9d6b-1c2b3a4d5e6f>"
            "\t7-42-20260101120000-00000-sb.warc.gz\t12345",
            f"{OTHER}\thttps://www.kulturarv.dk/rapport.pdf?år=2026\t20260101120001\t\t\t"]
    assert [p.name for p in tmp_path.iterdir()] == ["42.gz"]


def test_the_name_in_the_job_directory():
    assert entries_name(42) == "dedup/42.gz"


def test_an_empty_job_has_an_empty_file(tmp_path):
    assert write_entries(tmp_path / "1.gz", []) == 0
    assert list(read_entries(tmp_path / "1.gz")) == []


@pytest.mark.parametrize(("entry", "problem"), [
    (DedupEntry(DIGEST, "http://a/\tb", "20260101120000"), "tab or line break"),
    (DedupEntry(DIGEST, "http://a/\nb", "20260101120000"), "tab or line break"),
    (DedupEntry(DIGEST, "http://a/", "20260101120000", warc_file="a\tb.warc.gz"), "tab or line break"),
    (DedupEntry("sha1:abc", "http://a/", "20260101120000"), "not sha1:BASE32"),
    (DedupEntry(DIGEST, "http://a/", "2026-01-01"), "14 digits"),
    (DedupEntry(DIGEST, "http://a/", "20260101120000", warc_offset=-1), "non-negative"),
])
def test_entries_that_would_break_the_format_are_refused(tmp_path, entry, problem):
    path = tmp_path / "1.gz"
    with pytest.raises(ValueError, match=problem):
        write_entries(path, [ENTRIES[0], entry])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("line", "problem"), [
    (f"{DIGEST}\thttp://a/\t20260101120000\t\t\n", "expected 6 tab-separated fields, found 5"),
    ("md5:abc\thttp://a/\t20260101120000\t\t\t\n", "digest 'md5:abc' is not sha1:BASE32"),
    (f"{DIGEST}\t\t20260101120000\t\t\t\n", "the URL is empty"),
    (f"{DIGEST}\thttp://a/\t2026010112000\t\t\t\n", "date '2026010112000' is not 14 digits"),
    (f"{DIGEST}\thttp://a/\t20260101120000\t\t\t-5\n", "offset '-5' is not a non-negative integer"),
    (f"{DIGEST}\thttp://a/\t20260101120000\t\t\t12", "the last line has no newline"),
])
def test_a_bad_line_is_named_with_its_file_and_number(tmp_path, line, problem):
    path = tmp_path / "42.gz"
    good = f"{DIGEST}\thttp://www.kb.dk/\t20260101120000\t\t\t\n"
    _gzip(path, good + good + line)
    entries = read_entries(path)
    assert next(entries).url == "http://www.kb.dk/"
    with pytest.raises(DedupFormatError) as raised:
        list(entries)
    assert str(raised.value).startswith(f"{path}, line 3: {problem}")
    assert raised.value.line == 3 and raised.value.path == path


def test_a_file_that_is_not_gzip(tmp_path):
    path = tmp_path / "42.gz"
    path.write_text("sha1:...\n")
    with pytest.raises(DedupFormatError, match=r"42.gz: unreadable after line 0: Not a gzipped file"):
        list(read_entries(path))


def test_a_file_cut_short(tmp_path):
    path = tmp_path / "42.gz"
    write_entries(path, [DedupEntry(DIGEST, f"http://www.kb.dk/{n}.png", "20260101120000") for n in range(20_000)])
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(DedupFormatError, match="unreadable after line [1-9][0-9]*: Compressed file ended"):
        list(read_entries(path))
