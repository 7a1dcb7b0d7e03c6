"""The one hierarchy of HarvestSuite's errors.

Lower layers' exceptions (SQLAlchemy, pika, HTTP clients, lxml) are translated into these at the
boundary that calls them, always with ``raise ... from exc`` so the cause stays visible::

    HarvestSuiteError
    ├── SettingsError              a settings file or variable is wrong (names key, source, expected type)
    ├── ValidationError            bad input from a person or a file (names the input and what is wrong)
    │   ├── FieldError             one field's value is refused (``field`` names it: too long, out of range…)
    │   ├── DomainNameError        not a valid domain name (with the reason)
    │   ├── TemplateError          a crawl template that is not well-formed (line and column)
    │   ├── CrawlerTrapError       a crawler trap that is not a valid regular expression (line)
    │   ├── PlanInputError         the offline planner's JSON is wrong (every error with its JSON path)
    │   └── DedupFormatError       a deduplication entries or index file that is not in its format (line)
    ├── NotFoundError              no such row (names the kind and the key)
    ├── ConflictError              the row exists already (names the kind and the key)
    ├── StaleEditionError          optimistic locking: somebody else changed the row since it was read
    ├── IllegalTransitionError     a job status change that the transition table forbids
    ├── StaleJobError              a job is no longer in the status or attempt a change expected
    ├── DatabaseError              the harvest database failed (translated from SQLAlchemy/psycopg)
    ├── JobGenerationError         a harvest definition could not be split into jobs
    ├── QueueError                 the queue transport failed (translated from pika / sqlite)
    ├── ArchiveStoreError          the archive store failed (upload, checksum, missing file)
    │   └── ArchiveConflictError   a different file is stored under the same name already
    ├── HeritrixError              the crawler's REST API failed or answered unexpectedly
    └── CrawlEngineError           the bundled crawl engine refused an action or could not carry it out

The bundled crawl engine (harvester/engine/) defines its own errors under these; harvestdef does not import
them. They keep the builtin base they had before they joined, so ``except ValueError``/``KeyError``/
``RuntimeError`` still catches them::

    ValidationError ── engine.config.ConfigError     a crawl configuration that cannot be used (line, column)
                    ├─ engine.beans.BeanError        a crawler-beans file that is not well-formed (line, column)
                    ├─ engine.hostsfile.HostsFileError (also ValueError) a hosts-file line that cannot be read
                    └─ engine.tls.CertificateError  (also ValueError) --cert without --key, or the reverse
    NotFoundError ──── engine.jobs.UnknownJobError   (also KeyError) no job of that name in the engine
    CrawlEngineError ─ engine.jobs.JobActionError    a job action refused in the job's state, or failed
                    ├─ engine.crawl.CrawlStateError  (also RuntimeError) a crawl action its state forbids
                    └─ engine.checkpoint.CheckpointError a checkpoint that cannot be resumed (names it, says why)
"""

from __future__ import annotations


class HarvestSuiteError(Exception):
    """Base of every error HarvestSuite raises on purpose."""


class SettingsError(HarvestSuiteError):
    """A settings file, environment variable or command-line override is wrong."""


class ValidationError(HarvestSuiteError):
    """Bad input: the message names the input and what is wrong with it; ``field`` names the field of a
    request it came from, where one is known."""

    field: str | None = None


class FieldError(ValidationError):
    """One field's value is refused: ``field`` names it, ``problem`` says what is wrong."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.field, self.problem)


class DomainNameError(ValidationError):
    """A name that is not a valid domain name; the message says why."""


class TemplateError(ValidationError):
    """A crawl template that is not well-formed XML."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class CrawlerTrapError(ValidationError):
    """A crawler trap that is not a valid regular expression; ``line`` is 1-based in the input."""

    def __init__(self, message: str, line: int, expression: str) -> None:
        super().__init__(message)
        self.line = line
        self.expression = expression


class PlanInputError(ValidationError):
    """The offline planner's input is wrong; ``errors`` holds every (json_path, message) found."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(f"{path}: {message}" for path, message in self.errors))


class NotFoundError(HarvestSuiteError):
    """No row of that kind with that key."""

    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"no {kind} {key!r}")
        self.kind = kind
        self.key = key


class ConflictError(HarvestSuiteError):
    """A row of that kind with that key exists already."""

    def __init__(self, kind: str, key: object, detail: str = "") -> None:
        super().__init__(f"{kind} {key!r} exists already" + (f": {detail}" if detail else ""))
        self.kind = kind
        self.key = key


class StaleEditionError(HarvestSuiteError):
    """The row was changed by somebody else since it was read (optimistic locking on ``edition``)."""

    def __init__(self, kind: str, key: object, expected_edition: int, current_edition: int | None) -> None:
        now = "deleted" if current_edition is None else f"now at edition {current_edition}"
        super().__init__(
            f"{kind} {key!r} was changed by somebody else: you edited edition {expected_edition}, "
            f"it is {now}; reload and apply your change again"
        )
        self.kind = kind
        self.key = key
        self.expected_edition = expected_edition
        self.current_edition = current_edition


class IllegalTransitionError(HarvestSuiteError):
    """A status change that the state machine's transition table does not allow."""

    def __init__(self, what: str, from_state: object, to_state: object) -> None:
        super().__init__(f"{what}: illegal status change {from_state} -> {to_state}")
        self.what = what
        self.from_state = from_state
        self.to_state = to_state


class StaleJobError(HarvestSuiteError):
    """A job status change found the job in another status or attempt than it expected: somebody else
    changed it first (a compare-and-set that lost), so nothing was written."""

    def __init__(self, job_id: int, expected: str, actual: str) -> None:
        super().__init__(f"job {job_id} was expected {expected} but is {actual}; nothing was changed")
        self.job_id = job_id
        self.expected = expected
        self.actual = actual


class DatabaseError(HarvestSuiteError):
    """The harvest database failed; the cause is chained."""


class JobGenerationError(HarvestSuiteError):
    """A harvest definition could not be split into jobs."""


class QueueError(HarvestSuiteError):
    """The queue transport failed; the cause is chained."""


class ArchiveStoreError(HarvestSuiteError):
    """The archive store failed: an upload, a checksum or a missing file."""


class HeritrixError(HarvestSuiteError):
    """The crawler's REST API failed or answered something we cannot use."""


class CrawlEngineError(HarvestSuiteError):
    """The bundled crawl engine refused an action or could not carry it out; the message says which and why."""


class ArchiveConflictError(ArchiveStoreError):
    """A different file is stored under that name already; the stored file is kept as it was."""

    def __init__(self, path: object, stored_sha256: str, new_sha256: str) -> None:
        super().__init__(f"{path} is stored already with sha256 {stored_sha256}; refusing to replace it with "
                         f"different content (sha256 {new_sha256})")
        self.path = path
        self.stored_sha256 = stored_sha256
        self.new_sha256 = new_sha256

    def __reduce__(self) -> tuple[type, tuple[object, str, str]]:
        # Rebuilt from its fields, not its message, when it crosses a process boundary.
        return type(self), (self.path, self.stored_sha256, self.new_sha256)


class DedupFormatError(ValidationError):
    """A deduplication entries file or index file that is not in the agreed format; ``line`` is 1-based, or
    None when the file as a whole is wrong (a broken gzip stream, an index of another format)."""

    def __init__(self, path: object, line: int | None, problem: str) -> None:
        where = f"{path}, line {line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem

    def __reduce__(self) -> tuple[type, tuple[object, int | None, str]]:
        # Raised in the processes that read entries files, and re-raised from their pickled copy.
        return type(self), (self.path, self.line, self.problem)
