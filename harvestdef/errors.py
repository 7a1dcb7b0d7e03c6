"""The one hierarchy of HarvestSuite's errors.

Lower layers' exceptions (SQLAlchemy, pika, HTTP clients, lxml) are translated into these at the
boundary that calls them, always with ``raise ... from exc`` so the cause stays visible::

    HarvestSuiteError
    ├── SettingsError              a settings file or variable is wrong (names key, source, expected type)
    ├── ValidationError            bad input from a person or a file (names the input and what is wrong)
    │   ├── FieldError             one field's value is refused (``field`` names it: too long, out of range…)
    │   ├── DomainNameError        not a valid domain name (with the reason)
    │   ├── UrlError               a URL that cannot be a seed or name a domain (with the reason)
    │   ├── RefusedLinesError      lines of seeds or domain names refused, each with line, text and reason
    │   ├── TemplateError          a crawl template that is not well-formed (line and column)
    │   ├── CrawlerTrapError       a crawler trap that is not a valid regular expression (line)
    │   ├── PatternError           a regular expression that cannot be used as given (the construct, column)
    │   ├── PlanInputError         the offline planner's JSON is wrong (every error with its JSON path)
    │   └── DedupFormatError       a deduplication entries or index file that is not in its format (line)
    ├── NotFoundError              no such row (names the kind and the key)
    ├── ConflictError              the row exists already (names the kind and the key)
    │   └── JobStillCrawlingError  a FAILED job's attempt still crawls, so it cannot be restarted yet
    ├── StaleEditionError          optimistic locking: the row was changed since it was read (by whom)
    ├── IllegalTransitionError     a job status change that the transition table forbids
    ├── StaleJobError              a job is no longer in the status or attempt a change expected
    ├── DatabaseError              the harvest database failed (translated from SQLAlchemy/psycopg)
    │   ├── DatabaseBusyError      other writers kept the database locked past its wait
    │   └── DatabaseUnavailableError the database server refused or dropped the connection
    ├── JobGenerationError         a harvest definition could not be split into jobs
    ├── QueueError                 the queue transport failed (translated from pika / sqlite)
    ├── ArchiveStoreError          the archive store failed (upload, checksum, missing file)
    │   └── ArchiveConflictError   a different file is stored under the same name already
    ├── ReplayError                pywb's environment cannot be built or its server cannot run
    │   └── ReplayUnavailableError the replay service does not answer (names its address)
    ├── HeritrixError              the crawler's REST API failed or answered unexpectedly
    └── CrawlEngineError           the bundled crawl engine refused an action or could not carry it out

The bundled crawl engine (harvester/engine/) and the payload decoder (harvester/decoding.py) define their
own errors under these; harvestdef does not import them. Those marked "also" derive from that builtin too,
so ``except ValueError``/``KeyError``/``RuntimeError`` catches them as well::

    ValidationError ── engine.config.ConfigError     a crawl configuration that cannot be used (line, column)
                    ├─ engine.beans.BeanError        a crawler-beans file that is not well-formed (line, column)
                    ├─ engine.hostsfile.HostsFileError (also ValueError) a hosts-file line that cannot be read
                    ├─ engine.tls.CertificateError  (also ValueError) --cert without --key, or the reverse
                    ├─ decoding.ContentDecodingError a payload that does not decode as its Content-Encoding says
                    └─ decoding.DecodedSizeLimitError a payload that decodes to more than its reader's limit
    NotFoundError ──── engine.jobregistry.UnknownJobError   (also KeyError) no job of that name in the engine
    CrawlEngineError ─ engine.jobregistry.JobActionError    a job action refused in the job's state, or failed
                    ├─ engine.crawl.CrawlStateError  (also RuntimeError) a crawl action its state forbids
                    └─ engine.checkpoint.CheckpointError a checkpoint that cannot be resumed (names it, says why)

The message contract and the harvest controller define theirs beside the code that raises them::

    ValidationError ── messages.MessageError          a message that is not in its contract (names the field)
                    └─ messages.MessageVersionError  a message of a schema version this code cannot read
    HarvestSuiteError ├─ harvester.jobdir.JobDirectoryError a job directory that cannot be read back
                      ├─ harvester.protocol.RegistrationRefusedError the scheduler refused the channels
                      └─ harvester.protocol.SchedulerSilentError no answer within the claim timeout

The web UI's ``AuthError`` (401/403) and the API's ``ApiError`` are the answers its one error boundary
(webui/api/errors.py) sends, not errors of the harvest: they stay outside this tree.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from harvestdef.phrases import N_, Phrase, english, phrase

# How much of a refused line an error shows; a longer one is cut, with its length said.
SHOWN_LINE_CHARACTERS = 120
# How many refused lines the message of a RefusedLinesError lists; its ``refusals`` hold all of them.
LISTED_REFUSALS = 20
# Unicode categories a line shows as escapes: controls, format characters, line and paragraph separators.
_INVISIBLE = frozenset(("Cc", "Cf", "Zl", "Zp"))


# The kinds of rows an error names ("no domain 'kb.dk'"), each marked for the catalogue so a page says it in
# its language; a kind not here is said as it is.
KIND_WORDS = {kind: kind for kind in (
    N_("harvest definition"), N_("template"), N_("crawl template"), N_("active template"), N_("job"), N_("user"),
    N_("extended field"), N_("domain"), N_("seed list"), N_("run request of harvest definition"),
    N_("harvest channel"), N_("default harvest channel"), N_("configuration"), N_("default configuration of domain"),
    N_("configuration of harvest definition"), N_("webhook"), N_("webhook delivery"), N_("schedule"),
    N_("global crawler trap list"), N_("API token"), N_("password"), N_("configuration of the harvest"),
    N_("crawler trap list"), N_("crawl template for new domains (harvester.datamodel.domain.defaultOrderxml)"))}


def kind_words(kind: str) -> str | Phrase:
    """``kind`` as a phrase the catalogue says, where it is one of KIND_WORDS."""
    return phrase(KIND_WORDS[kind]) if kind in KIND_WORDS else kind


class HarvestSuiteError(Exception):
    """Base of every error HarvestSuite raises on purpose. Its message is English; where a page may show it,
    ``phrase`` says the same in words the web UI's catalogue can say in the page's language
    (harvestdef/phrases.py): given as the message, the phrase is kept and its English becomes the message."""

    phrase: Phrase | None = None

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], Phrase):
            self.phrase = args[0]
            args = (args[0].english(), *args[1:])
        super().__init__(*args)


class SettingsError(HarvestSuiteError):
    """A settings file, environment variable or command-line override is wrong."""


class ValidationError(HarvestSuiteError):
    """Bad input: the message names the input and what is wrong with it; ``field`` names the field of a
    request it came from, where one is known."""

    field: str | None = None


class FieldError(ValidationError):
    """One field's value is refused: ``field`` names it, ``problem`` says what is wrong (given as a phrase,
    it is ``phrase``: the problem without the field's name, which a page says by the field's label)."""

    def __init__(self, field: str, problem: str | Phrase) -> None:
        super().__init__(f"{field}: {english(problem)}")
        self.field = field
        self.problem = english(problem)
        self.phrase = problem if isinstance(problem, Phrase) else None

    def __reduce__(self) -> tuple[type, tuple[str, str | Phrase]]:
        return type(self), (self.field, self.phrase or self.problem)


class DomainNameError(ValidationError):
    """A name that is not a valid domain name; the message names it and says why, ``reason`` says only why."""

    def __init__(self, message: str | Phrase, reason: str | Phrase | None = None) -> None:
        super().__init__(message)
        self.reason = english(reason or message)
        # the reason as a phrase where it was given as one, else its English
        self.reason_phrase: str | Phrase = reason or message


class UrlError(ValidationError):
    """A URL that cannot be used as a seed or to name a domain; ``reason`` says why in words."""

    def __init__(self, message: str | Phrase, reason: str | Phrase | None = None) -> None:
        super().__init__(message)
        self.reason = english(reason or message)
        # the reason as a phrase where it was given as one, else its English
        self.reason_phrase: str | Phrase = reason or message


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error``, then each error it was raised from (``raise ... from``) or while handling, nearest first,
    each once: where a translated error's driver error, or an interrupt it replaced, is found."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def shown(text: str) -> str:
    """A line as an error shows it: invisible characters escaped (``\\x00``, ``\\u200b``), cut if very long."""
    escaped = "".join(char.encode("unicode_escape").decode("ascii")
                      if unicodedata.category(char) in _INVISIBLE else char for char in text)
    if len(escaped) <= SHOWN_LINE_CHARACTERS:
        return escaped
    return f"{escaped[:SHOWN_LINE_CHARACTERS - 20]}… ({len(text)} characters)"


@dataclass(frozen=True)
class LineRefusal:
    """One refused line of an input: its 1-based number, the line as shown (``shown``), the reason in words."""

    line: int
    text: str
    reason: str
    # the reason as a phrase, which a page says in its language; the English ``reason`` is what the API gives
    phrase: Phrase | None = dataclass_field(default=None, compare=False)

    @classmethod
    def of(cls, line: int, raw: str, reason: str | Phrase) -> LineRefusal:
        return cls(line, shown(raw), english(reason), reason if isinstance(reason, Phrase) else None)

    def __str__(self) -> str:
        return f"line {self.line}: '{self.text}': {self.reason}"


class RefusedLinesError(ValidationError):
    """Lines of an input (a seed list, event seeds, domain names, a file) that were refused: every one of
    them, in ``refusals``; nothing of the request was stored. ``what`` names the input, ``field`` the
    request field it came in (for the API's answer). ``total`` counts the refused lines when ``refusals``
    holds only the first of very many (a file of millions of lines)."""

    def __init__(self, what: str | Phrase, refusals: Sequence[LineRefusal], field: str | None = None,
                 total: int | None = None) -> None:
        self.what = english(what)
        self.what_phrase = what if isinstance(what, Phrase) else None
        self.refusals = tuple(refusals)
        self.field = field
        self.total = max(total or 0, len(self.refusals))
        count = self.total
        listed = min(len(self.refusals), LISTED_REFUSALS)
        more = f"; and {count - listed} more" if count > listed else ""
        super().__init__(f"{what}: {count} line{'' if count == 1 else 's'} refused, nothing was stored: "
                         + "; ".join(str(refusal) for refusal in self.refusals[:LISTED_REFUSALS]) + more)

    @property
    def summary(self) -> str:
        """The message without the lines, for a page that lists them beneath it."""
        return f"{self.what}: {self.total} line{'' if self.total == 1 else 's'} refused, nothing was stored"

    @property
    def summary_phrase(self) -> Phrase:
        """``summary`` as a phrase."""
        what = self.what_phrase or self.what
        if self.total == 1:
            return phrase(N_("%(what)s: 1 line refused, nothing was stored"), what=what)
        return phrase(N_("%(what)s: %(count)s lines refused, nothing was stored"), what=what, count=self.total)

    def __reduce__(self) -> tuple[type, tuple[str | Phrase, tuple[LineRefusal, ...], str | None, int]]:
        return type(self), (self.what_phrase or self.what, self.refusals, self.field, self.total)


class TemplateError(ValidationError):
    """A crawl template that is not well-formed XML."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class CrawlerTrapError(ValidationError):
    """A crawler trap that is not a valid regular expression; ``line`` is 1-based in the input. Where several
    lines of one input are refused, ``refusals`` holds every one (the first is ``line``), each with its
    reason, and the message names them all."""

    def __init__(self, message: str, line: int, expression: str,
                 refusals: Sequence[LineRefusal] = ()) -> None:
        super().__init__(message)
        self.line = line
        self.expression = expression
        self.refusals = tuple(refusals)


class PatternError(ValidationError):
    """A regular expression a person gave that is refused (harvestdef/patterns.py): ``reason`` names the
    construct and, where there is one, its 1-based ``column``; ``construct`` is a short tag of what failed."""

    def __init__(self, pattern: str, reason: str, column: int | None = None, construct: str = "") -> None:
        super().__init__(f"{pattern!r}: {reason}")
        self.pattern = pattern
        self.reason = reason
        self.column = column
        self.construct = construct

    def __reduce__(self) -> tuple[type, tuple[str, str, int | None, str]]:
        return type(self), (self.pattern, self.reason, self.column, self.construct)


class PlanInputError(ValidationError):
    """The offline planner's input is wrong; ``errors`` holds every (json_path, message) found."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(f"{path}: {message}" for path, message in self.errors))


class NotFoundError(HarvestSuiteError):
    """No row of that kind with that key."""

    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"no {kind} {key!r}")
        self.phrase = phrase(N_("no %(kind)s %(key)s"), kind=kind_words(kind), key=repr(key))
        self.kind = kind
        self.key = key


class ConflictError(HarvestSuiteError):
    """A row of that kind with that key exists already. ``sentence``, when given, is the whole message (a
    unique key the database refused, said for people: harvestdef.db.uniqueness); ``field`` names the request
    field whose value is taken."""

    def __init__(self, kind: str, key: object, detail: str | Phrase = "", *, sentence: str | Phrase | None = None,
                 field: str | None = None) -> None:
        super().__init__(english(sentence) if sentence else
                         f"{kind} {key!r} exists already" + (f": {english(detail)}" if detail else ""))
        if isinstance(sentence, Phrase):
            self.phrase = sentence
        elif not sentence:
            self.phrase = (phrase(N_("%(kind)s %(key)s exists already: %(detail)s"), kind=kind_words(kind),
                                  key=repr(key), detail=detail) if detail else
                           phrase(N_("%(kind)s %(key)s exists already"), kind=kind_words(kind), key=repr(key)))
        self.kind = kind
        self.key = key
        self.field = field


class JobStillCrawlingError(ConflictError):
    """An operator's restart of a FAILED job whose controller still reports crawling its attempt: the job may
    be restarted once that crawl stops, so the request conflicts with the harvesters' state, not with
    itself."""

    def __init__(self, job_id: int, controller_id: str, last_heartbeat: str, silence_timeout: int) -> None:
        HarvestSuiteError.__init__(
            self, f"job {job_id} cannot be restarted yet: its controller {controller_id} still reported crawling "
                  f"it at {last_heartbeat} (less than {silence_timeout} s ago); stop that crawl or wait until the "
                  f"controller reports it no more")
        self.kind = "job"
        self.key = job_id
        self.controller_id = controller_id


class StaleEditionError(HarvestSuiteError):
    """The row was changed since it was read (optimistic locking on ``edition``).

    ``name`` is what people call the row (a domain's name where ``key`` is its id); ``changed_by`` and
    ``changed_at`` say who made the newer edition and when (its audit row), and ``actor`` who tried to
    change it: the message says "somebody else" only when those two differ, and "another tab or request
    of yours" when they are the same user. Without them it says only that the row was changed."""

    def __init__(self, kind: str, key: object, expected_edition: int, current_edition: int | None, *,
                 name: str | None = None, changed_by: str | None = None, changed_at: str | None = None,
                 actor: str | None = None) -> None:
        shown = name if name is not None else repr(key)
        now = "deleted" if current_edition is None else f"now at edition {current_edition}"
        when = f" at {changed_at}" if changed_at else ""
        said_now = (phrase(N_("deleted")) if current_edition is None else
                    phrase(N_("now at edition %(edition)s"), edition=current_edition))
        if changed_by is None:
            how = "was changed since it was read"
            said_how = phrase(N_("was changed since it was read"))
        elif actor is not None and changed_by == actor:
            how = (f"was changed by you ({changed_by}) in another tab or request{when}, since this page was "
                   f"loaded")
            said_how = (phrase(N_("was changed by you (%(user)s) in another tab or request at %(time)s, since this "
                                  "page was loaded"), user=changed_by, time=changed_at) if changed_at else
                        phrase(N_("was changed by you (%(user)s) in another tab or request, since this page was "
                                  "loaded"), user=changed_by))
        else:
            how = f"was changed by somebody else ({changed_by}{when})"
            said_how = (phrase(N_("was changed by somebody else (%(user)s at %(time)s)"), user=changed_by,
                               time=changed_at) if changed_at else
                        phrase(N_("was changed by somebody else (%(user)s)"), user=changed_by))
        super().__init__(f"{kind} {shown} {how}: you edited edition {expected_edition}, it is {now}; reload and "
                         f"apply your change again")
        self.phrase = phrase(N_("%(kind)s %(name)s %(how)s: you edited edition %(edition)s, it is %(now)s; reload "
                                "and apply your change again"), kind=kind_words(kind), name=shown, how=said_how,
                             edition=expected_edition, now=said_now)
        self.kind = kind
        self.key = key
        self.name = name
        self.expected_edition = expected_edition
        self.current_edition = current_edition
        self.changed_by = changed_by
        self.changed_at = changed_at
        self.actor = actor


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


class DatabaseBusyError(DatabaseError):
    """The harvest database stayed locked by other writers past a wait: nobody's fault, and over once they
    are done. Its message is a sentence for people (what stopped, what was kept, what to do), with no SQL."""


class DatabaseUnavailableError(DatabaseError):
    """The harvest database does not answer now (the server refused or dropped the connection, its file
    cannot be opened): nobody's fault, and over once it is back. Its message is a sentence for people."""


class JobGenerationError(HarvestSuiteError):
    """A harvest definition could not be split into jobs."""


class QueueError(HarvestSuiteError):
    """The queue transport failed; the cause is chained."""


class ArchiveStoreError(HarvestSuiteError):
    """The archive store failed: an upload, a checksum or a missing file."""


class ReplayError(HarvestSuiteError):
    """The replay service cannot run: pywb's environment is missing or broken, or its server failed."""


class ReplayUnavailableError(ReplayError):
    """The replay service does not answer, or not as pywb does; the message names its address."""


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

