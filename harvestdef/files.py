"""Writing files so that a crash leaves the old file or the new one, never half of one.

A file is written under a temporary name beside its final name, flushed and fsynced, renamed over the final
name, and the directory is fsynced so that the rename itself survives a power cut. Everything HarvestSuite
keeps on disk as state (job directories, indexes, the archive store's files) is written this way.

A directory one process must have alone (a controller's serverDir, the demo's directory) is held with
``exclusive_lock``.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename, link or new file in ``directory`` durable."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextmanager
def replacing(path: str | os.PathLike[str], mode: str = "wb", **open_arguments: Any) -> Iterator[IO[Any]]:
    """A file to write that takes ``path``'s place only when the block ends without an error; on an error
    the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, mode, **open_arguments) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """``data`` becomes the whole content of ``path``, or ``path`` stays as it was."""
    with replacing(path) as handle:
        handle.write(data)


@contextmanager
def exclusive_lock(path: str | os.PathLike[str], busy: Callable[[str], Exception]) -> Iterator[None]:
    """Hold the lock file ``path`` (created if missing) for this process while the block runs.

    The file names its holder (``pid N``); when another process holds it, ``busy(holder)`` is raised. The
    lock is the kernel's (flock), so a killed holder never leaves it behind.
    """
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise busy(handle.read().strip() or "another process") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
