"""A job's upload is one operation: an archive store outage costs one backoff for all its files, the next
pass retries every file not stored yet, and a file stored once is never sent again. A real archive store
in tmp_path; the outage is a store root that cannot be written (a file where the directory belongs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harvestdef.archive import ArchiveStore
from harvester.jobdir import UPLOAD_LEDGER
from harvester.upload import JobUpload, UploadOptions


def three_files(tmp_path: Path) -> list[tuple[Path, str]]:
    job = tmp_path / "job"
    (job / "cdxj").mkdir(parents=True)
    files = []
    for name in ("1-1-20260101-00001.warc.gz", "1-metadata-1.warc.gz", "cdxj/1-1-20260101-00001.warc.gz.cdxj"):
        path = job / name
        path.write_bytes(f"content of {name}\n".encode() * 1000)
        files.append((path, name))
    return files


class Outage:
    """The store's root is a file until the first backoff is waited: then the store is back."""

    def __init__(self, root: Path, repair=None) -> None:
        self.root = root
        self.waits: list[float] = []
        self.repair = repair
        root.parent.mkdir(parents=True, exist_ok=True)
        root.write_text("not a directory: the archive store is down\n")

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        if self.root.is_file():
            self.root.unlink()
            self.root.mkdir()
        if self.repair is not None:
            self.repair()
        return False


def test_an_outage_of_three_files_costs_one_backoff(tmp_path):
    files = three_files(tmp_path)
    outage = Outage(tmp_path / "archive")
    upload = JobUpload(ArchiveStore(tmp_path / "archive"), 1, 1, tmp_path / "job" / UPLOAD_LEDGER, files,
                       UploadOptions(passes=5, first_delay=1, max_delay=8), outage.wait)
    result = upload.run()
    assert result.is_complete and result.stored == 3 and result.passes == 2
    assert outage.waits == [1] == result.waits
    stored = tmp_path / "archive" / "1" / "1"
    for path, name in files:
        assert (stored / name).read_bytes() == path.read_bytes()
    assert (stored / "SHA256SUMS").read_text().count("\n") == 3
    assert set(json.loads((tmp_path / "job" / UPLOAD_LEDGER).read_text())) == {name for _, name in files}


def test_the_schedule_ends_after_its_passes_with_one_line_saying_what_is_left(tmp_path):
    files = three_files(tmp_path)
    root = tmp_path / "archive"
    root.write_text("down\n")
    waits: list[float] = []
    upload = JobUpload(ArchiveStore(root), 1, 1, tmp_path / "job" / UPLOAD_LEDGER, files,
                       UploadOptions(passes=4, first_delay=1, max_delay=2), lambda s: waits.append(s) is not None)
    result = upload.run()
    assert not result.is_complete and result.is_outage and result.passes == 4
    assert waits == [1, 2, 2]  # doubling, capped at max_delay; none after the last pass
    (line,) = result.errors()
    assert line.startswith("the archive store failed: 3 of 3 files not stored yet after 4 passes and 3 backoffs: ")


def test_a_file_stored_before_the_outage_is_not_sent_again(tmp_path):
    files = three_files(tmp_path)
    root = tmp_path / "archive"
    store = ArchiveStore(root)
    store.store(files[0][0], 1, 1, files[0][1])  # stored by an earlier pass ...
    (tmp_path / "job" / UPLOAD_LEDGER).write_text(json.dumps({files[0][1]: "recorded"}))
    files[0][0].unlink()  # ... and its local copy gone: sending it again would fail
    blocker = root / "1" / "1" / "cdxj"
    blocker.write_text("a file where the directory belongs\n")  # the store fails at the third file
    upload = JobUpload(store, 1, 1, tmp_path / "job" / UPLOAD_LEDGER, files,
                       UploadOptions(passes=3, first_delay=1, max_delay=1),
                       lambda seconds: blocker.unlink() or False)
    result = upload.run()
    assert result.is_complete and result.passes == 2 and result.waits == [1]
    assert (root / "1" / "1" / files[2][1]).is_file()


def test_a_conflict_is_no_outage_and_is_not_waited_for(tmp_path):
    files = three_files(tmp_path)
    store = ArchiveStore(tmp_path / "archive")
    other = tmp_path / "other"
    other.write_bytes(b"other bytes")
    store.store(other, 1, 1, files[1][1])
    upload = JobUpload(store, 1, 1, tmp_path / "job" / UPLOAD_LEDGER, files,
                       UploadOptions(passes=3, first_delay=1, max_delay=1),
                       lambda seconds: pytest.fail("a conflict must not be waited for"))
    result = upload.run()
    assert not result.is_complete and not result.is_outage and result.passes == 1 and result.stored == 2
    (line,) = result.errors()
    assert line.startswith(f"{files[1][1]} cannot be stored")


def test_bad_options_are_refused_by_name():
    with pytest.raises(Exception, match="uploadRetries must be at least 1"):
        UploadOptions(passes=0)
    with pytest.raises(Exception, match="at most uploadRetryMaxDelay"):
        UploadOptions(first_delay=5, max_delay=1)


def test_a_missing_root_is_an_outage_and_is_never_made_by_an_upload(tmp_path):
    files = three_files(tmp_path)
    root = tmp_path / "archive"  # not mounted: the directory is not there
    made_by_upload = []

    def store_comes_back(seconds: float) -> bool:
        made_by_upload.append(root.exists())
        root.mkdir()
        return False

    upload = JobUpload(ArchiveStore(root), 1, 1, tmp_path / "job" / UPLOAD_LEDGER, files,
                       UploadOptions(passes=3, first_delay=1, max_delay=1), store_comes_back)
    result = upload.run()
    assert made_by_upload == [False]  # the first pass failed without making the root
    assert result.is_complete and result.passes == 2 and result.waits == [1]
    assert (root / "1" / "1" / "SHA256SUMS").is_file()


def test_the_failure_names_a_missing_root(tmp_path):
    upload = JobUpload(ArchiveStore(tmp_path / "gone"), 1, 1, tmp_path / UPLOAD_LEDGER, three_files(tmp_path),
                       UploadOptions(passes=1, first_delay=0, max_delay=0), lambda seconds: False)
    (line,) = upload.run().errors()
    assert f"the archive store's root {tmp_path / 'gone'} is missing; is the store mounted?" in line
    assert not (tmp_path / "gone").exists()
