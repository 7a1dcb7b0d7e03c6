"""The archive store: verified, immutable uploads, SHA256SUMS that sha256sum accepts, and fetching back."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from harvestdef.archive import ArchiveStore, StoredFile
from harvestdef.errors import ArchiveConflictError, ArchiveStoreError
from harvestdef.settings import load_settings


def _file(path: Path, content: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def _leftovers(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.rglob("*") if ".tmp-" in path.name)


def test_store_copies_the_file_with_its_checksum(tmp_path):
    content = os.urandom(3 * (1 << 20) + 17)  # more than one copy chunk
    source = _file(tmp_path / "work" / "7-42-20260101-00000.warc.gz", content)
    store = ArchiveStore(tmp_path / "archive")
    stored = store.store(source, 7, 42, "7-42-20260101-00000.warc.gz")
    target = tmp_path / "archive" / "7" / "42" / "7-42-20260101-00000.warc.gz"
    assert target.read_bytes() == content
    assert stored == StoredFile("7-42-20260101-00000.warc.gz", len(content), hashlib.sha256(content).hexdigest())
    assert store.has(7, 42, "7-42-20260101-00000.warc.gz") and not store.has(7, 42, "other.warc.gz")
    assert _leftovers(tmp_path / "archive") == []


def test_names_with_subdirectories_land_in_them(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    source = _file(tmp_path / "x.cdxj", b"dk,kb)/ 20260101120000 {}\n")
    store.store(source, 7, 42, "cdxj/x.warc.gz.cdxj")
    assert (store.job_path(7, 42) / "cdxj" / "x.warc.gz.cdxj").read_bytes() == b"dk,kb)/ 20260101120000 {}\n"
    assert store.job_path(7, 42) == tmp_path / "archive" / "7" / "42"


def test_storing_the_same_file_again_is_a_no_op(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    source = _file(tmp_path / "a.warc.gz", b"the same bytes")
    first = store.store(source, 1, 2, "a.warc.gz")
    target = store.job_path(1, 2) / "a.warc.gz"
    inode = target.stat().st_ino
    assert store.store(source, 1, 2, "a.warc.gz") == first
    assert target.stat().st_ino == inode
    assert _leftovers(tmp_path / "archive") == []


def test_other_content_under_a_stored_name_is_refused_and_the_stored_file_kept(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    store.store(_file(tmp_path / "one" / "a.warc.gz", b"original"), 1, 2, "a.warc.gz")
    with pytest.raises(ArchiveConflictError) as raised:
        store.store(_file(tmp_path / "two" / "a.warc.gz", b"impostor"), 1, 2, "a.warc.gz")
    message = str(raised.value)
    assert str(store.job_path(1, 2) / "a.warc.gz") in message
    assert hashlib.sha256(b"original").hexdigest() in message and hashlib.sha256(b"impostor").hexdigest() in message
    assert (store.job_path(1, 2) / "a.warc.gz").read_bytes() == b"original"
    assert _leftovers(tmp_path / "archive") == []


def test_a_missing_source_fails_and_leaves_nothing(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    with pytest.raises(ArchiveStoreError, match="gone.warc.gz"):
        store.store(tmp_path / "gone.warc.gz", 1, 2, "gone.warc.gz")
    assert not store.has(1, 2, "gone.warc.gz")
    assert _leftovers(tmp_path / "archive") == []


def test_a_read_error_in_the_middle_of_the_copy_leaves_no_temporary_file(tmp_path):
    # Reading this process's memory at address 0 opens fine and then fails with EIO on the first read.
    store = ArchiveStore(tmp_path / "archive")
    with pytest.raises(ArchiveStoreError, match="Input/output error"):
        store.store(Path("/proc/self/mem"), 1, 2, "mem.bin")
    assert not store.has(1, 2, "mem.bin")
    assert list((tmp_path / "archive" / "1" / "2").iterdir()) == []


@pytest.mark.parametrize("name", ["/etc/passwd", "../3/a.warc.gz", "cdxj/../../a", "", ".hidden", "SHA256SUMS",
                                  "dedup/.x.gz.tmp-1-ab"])
def test_names_outside_the_job_directory_or_reserved_are_refused(tmp_path, name):
    store = ArchiveStore(tmp_path / "archive")
    source = _file(tmp_path / "a", b"x")
    with pytest.raises(ValueError, match="name"):
        store.store(source, 1, 2, name)


def test_path_of_refuses_escapes(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    assert store.path_of("dedup-index/abc.sqlite") == tmp_path / "archive" / "dedup-index" / "abc.sqlite"
    for relative in ("/etc/passwd", "../x", "1/../../x", ""):
        with pytest.raises(ValueError, match="relative"):
            store.path_of(relative)


def test_checksums_are_merged_across_calls_and_pass_sha256sum(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    store.store(_file(tmp_path / "a.warc.gz", b"first warc"), 1, 2, "a.warc.gz")
    store.store(_file(tmp_path / "a.cdxj", b"cdx lines"), 1, 2, "cdxj/a.warc.gz.cdxj")
    sums = store.write_checksums(1, 2)
    assert sums == store.job_path(1, 2) / "SHA256SUMS"
    first_lines = sums.read_text().splitlines()
    assert first_lines == [f"{hashlib.sha256(b'first warc').hexdigest()}  a.warc.gz",
                           f"{hashlib.sha256(b'cdx lines').hexdigest()}  cdxj/a.warc.gz.cdxj"]
    store.store(_file(tmp_path / "2.gz", b"dedup entries"), 1, 2, "dedup/2.gz")
    # a temporary file left by a crashed upload is not listed
    _file(store.job_path(1, 2) / ".b.warc.gz.tmp-123-abcdef", b"half")
    store.write_checksums(1, 2)
    lines = sums.read_text().splitlines()
    assert lines == [first_lines[0], first_lines[1], f"{hashlib.sha256(b'dedup entries').hexdigest()}  dedup/2.gz"]
    checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=store.job_path(1, 2), capture_output=True,
                             text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": OK") == 3


def test_recorded_checksums_are_kept_not_recomputed(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    store.store(_file(tmp_path / "a.warc.gz", b"warc"), 1, 2, "a.warc.gz")
    sums = store.write_checksums(1, 2)
    recorded = "0" * 64
    sums.write_text(f"{recorded}  a.warc.gz\n")
    store.write_checksums(1, 2)
    assert sums.read_text() == f"{recorded}  a.warc.gz\n"


def test_checksums_of_a_job_that_is_not_there(tmp_path):
    with pytest.raises(ArchiveStoreError, match="no job directory"):
        ArchiveStore(tmp_path).write_checksums(1, 2)


def test_seal_lists_what_an_abandoned_upload_left_and_says_how_many(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    assert store.seal(1, 2) is None, "no directory: nothing was stored"
    store.store(_file(tmp_path / "a.warc.gz", b"stored before the controller died"), 1, 2, "a.warc.gz")
    _file(store.job_path(1, 2) / ".b.warc.gz.tmp-123-abcdef", b"a copy cut short")
    assert store.seal(1, 2) == 1
    # the controller comes back with the rest: its SHA256SUMS keeps the line and adds the new files
    store.store(_file(tmp_path / "a.cdxj", b"cdx lines"), 1, 2, "cdxj/a.warc.gz.cdxj")
    store.write_checksums(1, 2)
    assert [line.split("  ")[1] for line in (store.job_path(1, 2) / "SHA256SUMS").read_text().splitlines()] == [
        "a.warc.gz", "cdxj/a.warc.gz.cdxj"]


def test_seal_leaves_a_controllers_sha256sums_as_it_is(tmp_path):
    """A controller writes SHA256SUMS only once it has stored every file: that list is never replaced by
    a seal's, which may have been made before the last files came."""
    store = ArchiveStore(tmp_path / "archive")
    store.store(_file(tmp_path / "a.warc.gz", b"first"), 1, 2, "a.warc.gz")
    sums = store.write_checksums(1, 2)
    store.store(_file(tmp_path / "b.warc.gz", b"second"), 1, 2, "b.warc.gz")  # not listed yet
    before = sums.read_bytes()
    assert store.seal(1, 2) == 1
    assert sums.read_bytes() == before
    assert not _leftovers(store.job_path(1, 2))


def test_fetch_copies_a_file_out(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    store.store(_file(tmp_path / "a.warc.gz", b"payload"), 1, 2, "a.warc.gz")
    store.write_checksums(1, 2)
    destination = tmp_path / "job" / "copy.warc.gz"
    assert store.fetch("1/2/a.warc.gz", destination) == destination
    assert destination.read_bytes() == b"payload"
    assert _leftovers(tmp_path / "job") == []


def test_fetch_refuses_a_file_that_no_longer_matches_its_recorded_checksum(tmp_path):
    store = ArchiveStore(tmp_path / "archive")
    store.store(_file(tmp_path / "a.warc.gz", b"payload"), 1, 2, "a.warc.gz")
    store.write_checksums(1, 2)
    (store.job_path(1, 2) / "a.warc.gz").write_bytes(b"bit rot")
    destination = tmp_path / "job" / "a.warc.gz"
    with pytest.raises(ArchiveStoreError, match="SHA256SUMS records"):
        store.fetch("1/2/a.warc.gz", destination)
    assert not destination.exists() and _leftovers(tmp_path / "job") == []


def test_fetch_of_a_missing_file(tmp_path):
    with pytest.raises(ArchiveStoreError, match="no file 'dedup-index/x.sqlite'"):
        ArchiveStore(tmp_path).fetch("dedup-index/x.sqlite", tmp_path / "x.sqlite")


def test_from_settings_reads_the_root(tmp_path):
    settings = load_settings(environ={}, overrides={"harvestsuite.archive.root": str(tmp_path / "store")})
    assert ArchiveStore.from_settings(settings).root == tmp_path / "store"
