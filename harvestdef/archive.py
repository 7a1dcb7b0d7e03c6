"""The archive store: a directory tree that harvester, scheduler and web UI hosts all mount.

Layout (docs/architecture.md, The archive store)::

    <root>/<harvest_id>/<job_id>/{*.warc.gz, metadata WARC, cdxj/<warc>.cdxj, dedup/<job_id>.gz, SHA256SUMS}
    <root>/dedup-index/<sha256 of job ids>.sqlite

Rules this module keeps:

- A stored file never changes. Storing the same bytes under the same name again is a no-op; different
  bytes under a stored name raise ArchiveConflictError and leave the stored file as it was.
- A file appears under its final name only complete and verified: it is copied to a temporary name in the
  target directory (``.<name>.tmp-<pid>-<random>``), fsynced, re-read and compared with the source's
  sha256, and only then given its name. A failure removes the temporary file.
- Files are streamed in 1 MiB chunks, never read whole.

It does not know what the files mean (WARC, CDXJ, dedup entries): callers pass names.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from harvestdef.errors import ArchiveConflictError, ArchiveStoreError
from harvestdef.files import fsync_directory

if TYPE_CHECKING:
    from harvestdef.settings import Settings

CHUNK = 1 << 20
CHECKSUMS = "SHA256SUMS"
# What _temporary_path makes; write_checksums skips these, and store refuses names starting with a dot,
# so a stored file can never be mistaken for one.
_TEMPORARY = re.compile(r"^\..+\.tmp-\d+-[0-9a-f]+$")
# One line of `sha256sum` output in text or binary mode.
_CHECKSUM_LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")


@dataclass(frozen=True)
class StoredFile:
    """A file in a job's directory of the store; ``name`` is relative to that directory."""
    name: str
    size: int
    sha256: str


class ArchiveStore:
    """The archive store under ``root``; see the module docstring for its layout and rules."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def from_settings(cls, settings: Settings) -> ArchiveStore:
        return cls(settings.archive.root)

    def job_path(self, harvest_id: int, job_id: int) -> Path:
        """``<root>/<harvest_id>/<job_id>``."""
        for what, value in (("harvest_id", harvest_id), ("job_id", job_id)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
        return self.root / str(harvest_id) / str(job_id)

    def path_of(self, relative: str) -> Path:
        """``root / relative``; absolute paths and '..' are refused, so nothing outside the store is reached."""
        return self.root / _checked_relative(relative, "path")

    def require_root(self) -> None:
        """Refuse to go on when the root is not an existing directory: an unmounted or removed store must
        fail as an outage, not be made anew on the local disk by ``store``'s directories.

        :raise ArchiveStoreError: naming the root and what it is instead.
        """
        if not self.root.is_dir():
            what = "not a directory" if self.root.exists() else "missing"
            raise ArchiveStoreError(f"the archive store's root {self.root} is {what}; is the store mounted?")

    def has(self, harvest_id: int, job_id: int, name: str) -> bool:
        return (self.job_path(harvest_id, job_id) / _checked_name(name)).is_file()

    def store(self, source: Path, harvest_id: int, job_id: int, name: str) -> StoredFile:
        """Copy ``source`` into the job's directory as ``name`` (which may contain subdirectories).

        :raise ArchiveConflictError: ``name`` is stored already with other content.
        :raise ArchiveStoreError: the source cannot be read, the copy cannot be written or does not verify.
        """
        target = self.job_path(harvest_id, job_id) / _checked_name(name)
        source = Path(source)
        if target.is_file():
            return self._stored_already(source, target, name, _sha256_of_file(target))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary, size, sha256 = _copy_to_temporary(source, target)
        except OSError as exc:
            raise ArchiveStoreError(f"cannot store {source} as {target}: {exc}") from exc
        try:
            # A hard link, unlike os.replace, fails when the name exists: a concurrent store of other
            # content under the same name is then detected instead of silently overwriting a stored file.
            os.link(temporary, target)
        except FileExistsError:
            return self._stored_already(source, target, name, _sha256_of_file(target), sha256)
        except OSError as exc:
            raise ArchiveStoreError(f"cannot store {source} as {target}: {exc}") from exc
        finally:
            temporary.unlink(missing_ok=True)
        fsync_directory(target.parent)
        return StoredFile(name, size, sha256)

    def write_checksums(self, harvest_id: int, job_id: int) -> Path:
        """Write ``<job_path>/SHA256SUMS`` (``sha256sum -c`` format, sorted by path) for every file of the job.

        Lines of an earlier SHA256SUMS are kept for files that still exist, since stored files never
        change; files not listed there are read and summed.
        """
        job = self.job_path(harvest_id, job_id)
        if not job.is_dir():
            raise ArchiveStoreError(f"no job directory {job} in the archive store")
        sums_path = job / CHECKSUMS
        recorded = _read_checksums(sums_path) if sums_path.is_file() else {}
        temporary = _write_checksum_lines(job, recorded)
        try:
            os.replace(temporary, sums_path)
        finally:
            temporary.unlink(missing_ok=True)
        fsync_directory(job)
        return sums_path

    def seal(self, harvest_id: int, job_id: int) -> int | None:
        """List the files of a job whose attempt was abandoned, perhaps mid-upload, in its SHA256SUMS: the
        files it stored before it stopped are then listed like any other. Returns how many files the
        job's SHA256SUMS lists, or None when the store has no directory for the job.

        A SHA256SUMS already there is left as it is: a controller writes one only once it has stored every
        file, so it is complete. The seal's own is given its name only if there is still none (a hard link,
        which fails when the name exists), so a controller that finished meanwhile is never overwritten by
        a shorter list; one that comes back later with the rest replaces the seal's, keeping its lines.
        """
        job = self.job_path(harvest_id, job_id)
        if not job.is_dir():
            return None
        sums_path = job / CHECKSUMS
        if not sums_path.is_file():
            temporary = _write_checksum_lines(job, {})
            try:
                os.link(temporary, sums_path)
            except FileExistsError:
                pass
            finally:
                temporary.unlink(missing_ok=True)
            fsync_directory(job)
        return len(_read_checksums(sums_path))

    def read_bytes(self, harvest_id: int, job_id: int, name: str) -> bytes:
        """The whole of a job's stored file ``name``, checked against the job's SHA256SUMS when it lists the file.

        For small files (a deduplication partition directory); large ones are copied with ``fetch``.

        :raise ArchiveStoreError: the file is not in the store, cannot be read, or its checksum does not match.
        """
        relative = f"{harvest_id}/{job_id}/{_checked_name(name)}"
        path = self.path_of(relative)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ArchiveStoreError(f"no file {relative!r} in the archive store ({path})") from None
        except OSError as exc:
            raise ArchiveStoreError(f"cannot read {path}: {exc}") from exc
        recorded = self._recorded_checksum(relative)
        if recorded is not None and recorded != hashlib.sha256(data).hexdigest():
            raise ArchiveStoreError(f"{path} does not match the sha256 its {CHECKSUMS} records")
        return data

    def read_range(self, harvest_id: int, job_id: int, name: str, offset: int, length: int) -> bytes:
        """``length`` bytes of a job's stored file from ``offset``: a part of a file that never changes.

        :raise ArchiveStoreError: the file is not in the store, cannot be read, or is shorter than asked.
        """
        path = self.job_path(harvest_id, job_id) / _checked_name(name)
        try:
            with open(path, "rb") as file:
                file.seek(offset)
                data = file.read(length)
        except FileNotFoundError:
            raise ArchiveStoreError(f"no file {name!r} of job {job_id} in the archive store ({path})") from None
        except OSError as exc:
            raise ArchiveStoreError(f"cannot read {path}: {exc}") from exc
        if len(data) != length:
            raise ArchiveStoreError(f"{path} holds {len(data)} bytes from offset {offset}, not the {length} asked for")
        return data

    def fetch(self, relative: str, destination: Path) -> Path:
        """Copy the store's file ``relative`` to ``destination`` (a file path) and return it.

        The copy is written under a temporary name beside ``destination``, re-read and compared with the
        sha256 of what was read from the store and, when the job's SHA256SUMS lists the file, with the
        checksum recorded there; only then is it renamed to ``destination``.

        :raise ArchiveStoreError: the file is not in the store, or a checksum does not match.
        """
        source = self.path_of(relative)
        if not source.is_file():
            raise ArchiveStoreError(f"no file {relative!r} in the archive store ({source})")
        destination = Path(destination)
        recorded = self._recorded_checksum(relative)
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            temporary, _, sha256 = _copy_to_temporary(source, destination)
        except OSError as exc:
            raise ArchiveStoreError(f"cannot fetch {source} to {destination}: {exc}") from exc
        try:
            if recorded is not None and recorded != sha256:
                raise ArchiveStoreError(f"{source} has sha256 {sha256} but its {CHECKSUMS} records {recorded}")
            os.replace(temporary, destination)
        except OSError as exc:
            raise ArchiveStoreError(f"cannot fetch {source} to {destination}: {exc}") from exc
        finally:
            temporary.unlink(missing_ok=True)
        return destination

    def _stored_already(self, source: Path, target: Path, name: str, stored: str,
                        offered: str | None = None) -> StoredFile:
        """The outcome of storing ``source`` where ``target`` exists: a no-op if the bytes are equal."""
        if offered is None:
            try:
                offered = _sha256_of_file(source)
            except OSError as exc:
                raise ArchiveStoreError(f"cannot store {source} as {target}: {exc}") from exc
        if offered != stored:
            raise ArchiveConflictError(target, stored, offered)
        return StoredFile(name, target.stat().st_size, stored)

    def _recorded_checksum(self, relative: str) -> str | None:
        """The sha256 that the job's SHA256SUMS records for a ``<harvest_id>/<job_id>/...`` path, if any."""
        parts = PurePosixPath(relative).parts
        if len(parts) < 3 or not (parts[0].isdigit() and parts[1].isdigit()):
            return None
        sums_path = self.root / parts[0] / parts[1] / CHECKSUMS
        if not sums_path.is_file():
            return None
        return _read_checksums(sums_path).get("/".join(parts[2:]))


def _write_checksum_lines(job: Path, recorded: dict[str, str]) -> Path:
    """A temporary file beside SHA256SUMS holding a line for every file of ``job``, fsynced; ``recorded``
    gives the digests known already. The caller gives it its name."""
    lines = [f"{recorded.get(relative) or _sha256_of_file(job / relative)}  {relative}\n"
             for relative in _job_files(job)]
    temporary = _temporary_path(job / CHECKSUMS)
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as out:
            out.writelines(lines)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def _checked_relative(relative: str, what: str) -> PurePosixPath:
    path = PurePosixPath(relative)
    if (not path.parts or path.is_absolute() or ".." in path.parts or "\\" in relative
            or "\n" in relative):
        raise ValueError(f"archive store {what} {relative!r} must be relative, without '..', "
                         "backslashes or newlines")
    return path


def _checked_name(name: str) -> PurePosixPath:
    """A file name inside a job's directory; dot-names are refused so that temporary files stay apart."""
    path = _checked_relative(name, "name")
    if any(part.startswith(".") for part in path.parts) or path == PurePosixPath(CHECKSUMS):
        raise ValueError(f"archive store name {name!r} must not start with '.' or be {CHECKSUMS}")
    return path


def _temporary_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(6)}")


def _copy_to_temporary(source: Path, target: Path) -> tuple[Path, int, str]:
    """Copy ``source`` to a temporary name beside ``target``, fsynced and verified by re-reading.

    Returns the temporary path, the size and the sha256; on any failure the temporary file is removed.
    """
    temporary = _temporary_path(target)
    with open(source, "rb") as reader:
        try:
            with open(temporary, "xb") as writer:
                size, sha256 = _copy_stream(reader, writer)
                writer.flush()
                os.fsync(writer.fileno())
            written = _sha256_of_file(temporary)
            if written != sha256:
                raise ArchiveStoreError(f"copy of {source} at {temporary} has sha256 {written}, "
                                        f"but {sha256} was read from the source")
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    return temporary, size, sha256


def _copy_stream(reader: BinaryIO, writer: BinaryIO) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    while chunk := reader.read(CHUNK):
        digest.update(chunk)
        writer.write(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def _sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as reader:
        while chunk := reader.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _job_files(job: Path) -> list[str]:
    """Relative POSIX paths of a job's files, sorted; SHA256SUMS and temporary files left out."""
    found = []
    for directory, subdirectories, files in os.walk(job):
        subdirectories.sort()
        for name in files:
            if _TEMPORARY.match(name):
                continue
            relative = (Path(directory) / name).relative_to(job).as_posix()
            if relative == CHECKSUMS:
                continue
            if "\n" in relative or "\\" in relative:
                # sha256sum would escape such a name; the store never makes one.
                raise ArchiveStoreError(f"cannot list {job / relative!r} in {CHECKSUMS}: newline or backslash")
            found.append(relative)
    return sorted(found)


def _read_checksums(path: Path) -> dict[str, str]:
    """relative path -> sha256 from a SHA256SUMS file."""
    recorded = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            match = _CHECKSUM_LINE.match(line.rstrip("\n"))
            if match is None:
                raise ArchiveStoreError(f"{path}, line {number}: not a sha256sum line: {line[:200]!r}")
            recorded[match.group(2)] = match.group(1)
    return recorded
