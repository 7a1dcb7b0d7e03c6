"""Storing one job's files in the archive store: one operation with one retry schedule.

A pass offers every file not stored yet to the store (harvestdef/archive.py: temporary name, fsync,
checksum verified, rename), then writes SHA256SUMS. What the pass meets decides what comes next:

- a file stored: its name and sha256 go into the job directory's ledger (``JobDirectory.upload_ledger``,
  replaced atomically after each file), so no later pass, controller start or ``upload-leftovers`` sends it again;
- a conflict (other bytes under the name in the store): that file can never be stored, the pass goes on
  with the others and the job's upload fails for good;
- any other failure is the store's (its root missing, unwritable, full, unmounted): the pass stops at
  once, since the next file would fail the same way, and the whole job's upload waits one backoff before
  the next pass retries every file not stored yet. A root that does not exist is such a failure too: an
  upload never makes it, so an unmounted store is not filled on the local disk.

So an outage costs one backoff schedule per job, not one per file: ``passes`` passes at most, the waits
between them starting at ``first_delay`` seconds and doubling up to ``max_delay``. The caller decides
what to do with an upload the schedule did not finish (harvester/finish.py keeps the job directory and
tries again later).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harvestdef.archive import ArchiveStore
from harvestdef.errors import ArchiveConflictError, HarvestSuiteError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UploadOptions:
    passes: int = 5             # harvestsuite.harvester.uploadRetries
    first_delay: float = 2.0    # harvestsuite.harvester.uploadRetryDelay
    max_delay: float = 60.0     # harvestsuite.harvester.uploadRetryMaxDelay

    def __post_init__(self) -> None:
        if self.passes < 1:
            raise HarvestSuiteError(f"harvestsuite.harvester.uploadRetries must be at least 1, not {self.passes}")
        if self.first_delay < 0 or self.max_delay < self.first_delay:
            raise HarvestSuiteError(f"harvestsuite.harvester.uploadRetryDelay ({self.first_delay}) must be >= 0 and "
                                    f"at most uploadRetryMaxDelay ({self.max_delay})")


@dataclass
class UploadResult:
    """What a job's upload came to."""

    files: int                     # files of the job
    stored: int                    # of them stored and verified (in this upload or before)
    passes: int                    # passes made
    waits: list[float] = field(default_factory=list)  # the backoffs waited between passes, in seconds
    conflicts: list[str] = field(default_factory=list)  # one line per file the store holds other bytes for
    store_failure: str | None = None  # the store's failure that stopped the last pass

    @property
    def is_complete(self) -> bool:
        return self.store_failure is None and not self.conflicts

    @property
    def is_outage(self) -> bool:
        """Not complete only because the store failed: a later upload may complete it."""
        return self.store_failure is not None and not self.conflicts

    def errors(self) -> list[str]:
        """One line per reason the upload is not complete, for the job's report."""
        lines = list(self.conflicts)
        if self.store_failure is not None:
            # counts first: the scheduler keeps the first 300 characters in jobs.upload_errors
            lines.append(f"the archive store failed: {self.files - self.stored} of {self.files} files not stored "
                         f"yet after {self.passes} passes and {len(self.waits)} backoffs: {self.store_failure}")
        return lines


class JobUpload:
    """The upload of one job's files: ``run`` makes passes until every file is stored or the schedule ends.

    ``wait(seconds)`` sleeps between passes and returns True to give up early (the controller passes its
    stop event's ``wait``, so a shutdown does not sit out a backoff).
    """

    def __init__(self, store: ArchiveStore, harvest_id: int, job_id: int, ledger: Path,
                 files: Sequence[tuple[Path, str]], options: UploadOptions,
                 wait: Callable[[float], bool]) -> None:
        self.store = store
        self.harvest_id = harvest_id
        self.job_id = job_id
        self.ledger_path = Path(ledger)
        self.files = list(files)
        self.options = options
        self.wait = wait

    def run(self, passes: int | None = None) -> UploadResult:
        """Up to ``passes`` passes (default: the options'), with a backoff between two."""
        passes = passes or self.options.passes
        result = UploadResult(files=len(self.files), stored=0, passes=0)
        delay = self.options.first_delay
        while True:
            self._one_pass(result)
            if result.store_failure is None or result.passes >= passes:
                return result
            log.warning("job %d: the archive store failed on pass %d of %d (%s); %d of %d files not stored yet, "
                        "all retried in %g s", self.job_id, result.passes, passes, result.store_failure,
                        result.files - result.stored, result.files, delay)
            result.waits.append(delay)
            if self.wait(delay):
                return result
            delay = min(delay * 2, self.options.max_delay)

    def _one_pass(self, result: UploadResult) -> None:
        result.passes += 1
        result.store_failure = None
        result.conflicts = []
        ledger = self._read_ledger()
        result.stored = sum(1 for _, name in self.files if name in ledger)
        try:
            # The harvester never makes the store's root: a missing one is an unmounted store.
            self.store.require_root()
        except HarvestSuiteError as exc:
            result.store_failure = str(exc)
            return
        for path, name in self.files:
            if name in ledger:
                continue
            try:
                stored = self.store.store(path, self.harvest_id, self.job_id, name)
            except ArchiveConflictError as exc:
                result.conflicts.append(f"{name} cannot be stored: {exc}")
                log.error("job %d: %s cannot be stored: %s", self.job_id, name, exc)
                continue
            except (OSError, HarvestSuiteError) as exc:
                result.store_failure = f"{name}: {exc}"
                break
            ledger[name] = stored.sha256
            self._write_ledger(ledger)
        result.stored = sum(1 for _, name in self.files if name in ledger)
        if result.store_failure is None and not result.conflicts:
            try:
                self.store.write_checksums(self.harvest_id, self.job_id)
            except (OSError, HarvestSuiteError) as exc:
                result.store_failure = f"SHA256SUMS: {exc}"

    def _read_ledger(self) -> dict[str, str]:
        try:
            data = json.loads(self.ledger_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            # A ledger is written atomically, so this is damage from outside: every file is offered again,
            # which the store answers as a no-op for bytes it holds already.
            log.error("job %d: %s is unreadable (%s); every file is offered to the store again", self.job_id,
                      self.ledger_path, exc)
            return {}
        return {str(name): str(sha256) for name, sha256 in data.items()} if isinstance(data, dict) else {}

    def _write_ledger(self, ledger: dict[str, str]) -> None:
        temporary = self.ledger_path.with_name(f".{self.ledger_path.name}.tmp")
        temporary.write_text(json.dumps(ledger, sort_keys=True), encoding="utf-8")
        os.replace(temporary, self.ledger_path)
