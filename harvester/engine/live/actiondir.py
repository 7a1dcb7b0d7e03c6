"""The action directory: files an operator drops into the job's ``action/`` while a launch runs, acted on as
Heritrix 3's ActionDirectory (org.archive.crawler.framework.ActionDirectory) acts on them.

The first scan comes ``initial_delay_seconds`` after the launch starts (the bean's initialDelaySeconds,
default 10), then one every ``delay_seconds`` after the last ended (delaySeconds, default 30), while the
crawl runs or is paused. Each scan takes the regular files of ``action/`` in name order. By its name, with
``.gz`` stripped (such a file is read gzipped):

- ``*.seeds``: seed lines as a seeds file has them (``#`` comments, the first word of a line, a bare host
  crawled over http); each seed joins the scope as a configured seed does (its SURT prefix where a rule has
  seedsAsSurtPrefixes), the seeds report, and is scheduled unless already included (TextSeedModule.actOn);
- ``*.schedule``, ``*.force``, ``*.include``, ``*.recover``: lines of Heritrix's recovery journal, a
  three-character tag then ``URI [hopPath [via]]`` (AbstractFrontier.importRecoverFormat). Without a ``.s``
  before the kind (``x.s.schedule``) the scope is not asked, as in Heritrix. ``schedule`` queues each URI
  not yet included; ``force`` queues it even if fetched already; ``include`` takes it as done without
  fetching it (considerIncluded: it will not be fetched unless forced); ``recover`` includes the ``Fs``
  and ``Fi`` lines, then schedules the ``F+`` lines;
- a script (``.js``, ``.groovy``, ``.bsh``, which Heritrix runs with its script engines): refused, with an
  alert; this engine runs no scripts;
- anything else: "action file ignored" in job.log, as Heritrix logs it.

Every file is then moved, whatever became of it, to ``<launchId>/actions-done/<17-digit UTC timestamp>.<name>``
with a symlink to it in ``action/done/``, as Heritrix moves it. What a file gave (URIs scheduled or
included, not added, lines skipped as no URI) is one job.log line; a refused or unreadable file is an alert
too. A file that cannot be moved is left alone for the rest of the launch (and alerted), so it is never
acted on twice.

The scan runs on the crawl's event loop, as the crawl threads do: the frontier and the scope are changed
only there, through link discovery (frontier/discovery.py) and the frontier's own methods, and need no lock. A long
file gives the crawl threads a turn every ``YIELD_EVERY_LINES`` lines. Stopping waits for the file at hand.
"""

from __future__ import annotations

import asyncio
import datetime
import gzip
import logging
import re
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harvester.engine.frontier.scope import canonical_url
from harvester.engine.parts import CrawlParts
from harvester.engine.reporting.launchlogs import CrawlLogs

SEEDS, RECOVER, INCLUDE, SCHEDULE, FORCE = "seeds", "recover", "include", "schedule", "force"
KINDS = (SEEDS, RECOVER, INCLUDE, SCHEDULE, FORCE)  # Heritrix's order of the name tests
SCRIPT_EXTENSIONS = frozenset({"js", "groovy", "bsh"})
DONE_LINK_DIRECTORY = "done"
YIELD_EVERY_LINES = 1000
_SCHEME = re.compile(r"^[a-zA-Z][\w+\-]+:")   # TextSeedModule.seedLine: a line without one is http://
_HOP_PATH = re.compile(r"^[A-Z]*$")
_RECOVER_INCLUDED_TAGS = ("Fs ", "Fi ")
_RECOVER_SCHEDULED_TAG = "F+ "


@dataclass(frozen=True)
class ActionFileKind:
    """What a file's name asks for: ``kind`` (one of KINDS), read gzipped or not, scoped (``.s.``) or not."""

    kind: str
    is_gzipped: bool
    applies_scope: bool

    @classmethod
    def of(cls, name: str) -> ActionFileKind | None:
        """The kind a name asks for; None for a name of no kind (a script, or a file Heritrix ignores)."""
        is_gzipped = name.endswith(".gz")
        core = name[:-3] if is_gzipped else name
        for kind in KINDS:
            if core.endswith(f".{kind}"):
                return cls(kind, is_gzipped, core.endswith(f".s.{kind}"))
        return None


@dataclass
class ActionOutcome:
    """What one action file gave."""

    name: str
    scheduled: int = 0
    included: int = 0
    not_added: int = 0       # already included, or refused by the scope of a ``.s.`` file
    skipped: int = 0         # lines that hold no URI
    refusal: str | None = None
    ignored: bool = False

    def describe(self) -> str:
        if self.ignored:
            return f"action file ignored: {self.name}"
        text = (f"action file {self.name}: {self.scheduled} URIs scheduled, {self.included} included, "
                f"{self.not_added} not added (already included or out of scope), "
                f"{self.skipped} lines skipped (no URI)")
        return f"{text}; refused: {self.refusal}" if self.refusal else text


def timestamp17(moment: datetime.datetime) -> str:
    """Heritrix's ArchiveUtils.get17DigitDate: yyyyMMddHHmmssSSS in UTC."""
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


class ActionDirectory:
    """The action directory of one launch: ``start`` on the crawl's loop, ``stop`` before the loop ends."""

    def __init__(self, action_dir: Path, done_dir: Path, parts: CrawlParts, logs: CrawlLogs,
                 job_log: logging.Logger, delay_seconds: float, initial_delay_seconds: float) -> None:
        self.action_dir = Path(action_dir)
        self.done_dir = Path(done_dir)
        self.parts = parts
        self.logs = logs
        self.job_log = job_log
        self.delay_seconds = max(0.05, delay_seconds)
        self.initial_delay_seconds = max(0.0, initial_delay_seconds)
        self._unmovable: set[str] = set()
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self.action_dir.mkdir(parents=True, exist_ok=True)
        self.done_dir.mkdir(parents=True, exist_ok=True)
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """End the scans; a file being acted on is finished and moved first."""
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        delay = self.initial_delay_seconds
        while True:
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=delay)
                return
            except TimeoutError:
                pass
            await self.scan()
            delay = self.delay_seconds

    async def scan(self) -> list[ActionOutcome]:
        """Act on every file now in ``action/``, in name order, and move each to the done directory."""
        try:
            paths = sorted(path for path in self.action_dir.iterdir()
                           if path.is_file() and path.name not in self._unmovable)
        except OSError as exc:
            self.logs.alert("SEVERE", f"action directory {self.action_dir} cannot be read: {exc}")
            return []
        outcomes = []
        for path in paths:
            if self._stop.is_set():
                break
            moment = datetime.datetime.now(datetime.UTC)
            try:
                outcome = await self.act_on(path)
            except Exception as exc:  # one bad file must not end the scans, nor stay to be acted on again
                outcome = ActionOutcome(path.name, refusal=f"failed: {exc!r}")
            self._report(outcome, path)
            self._move(path, f"{timestamp17(moment)}.{path.name}")
            outcomes.append(outcome)
        return outcomes

    async def act_on(self, path: Path) -> ActionOutcome:
        """Do what one file asks; the outcome says what it gave."""
        outcome = ActionOutcome(path.name)
        kind = ActionFileKind.of(path.name)
        if kind is None:
            extension = path.name.rpartition(".")[2] if "." in path.name else ""
            if extension in SCRIPT_EXTENSIONS:
                outcome.refusal = ("a script; this engine runs no scripts (Heritrix runs .js, .groovy and .bsh "
                                   "action files with its script engines)")
            else:
                outcome.ignored = True
            return outcome
        try:
            if kind.kind == SEEDS:
                await self._add_seeds(path, kind, outcome)
            elif kind.kind == RECOVER:
                await self._import(path, kind, outcome, include=True, force=False, tags=_RECOVER_INCLUDED_TAGS)
                await self._import(path, kind, outcome, include=False, force=False, tags=(_RECOVER_SCHEDULED_TAG,))
            else:
                await self._import(path, kind, outcome, include=kind.kind == INCLUDE, force=kind.kind == FORCE,
                                   tags=None)
        except (OSError, EOFError, UnicodeError, zlib.error, gzip.BadGzipFile) as exc:
            outcome.refusal = f"cannot be read further: {exc}"
        return outcome

    async def _add_seeds(self, path: Path, kind: ActionFileKind, outcome: ActionOutcome) -> None:
        for number, line in enumerate(_lines(path, kind.is_gzipped), start=1):
            if number % YIELD_EVERY_LINES == 0:
                await asyncio.sleep(0)
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            seed = words[0]
            url = None
            if seed[0].isalnum():  # Heritrix's "likely URI"; other lines are directives to it, none to this engine
                url = canonical_url(seed if _SCHEME.match(seed) else f"http://{seed}")
            if url is None:
                outcome.skipped += 1
            elif self.parts.add_seed(url):
                outcome.scheduled += 1
            else:
                outcome.not_added += 1

    async def _import(self, path: Path, kind: ActionFileKind, outcome: ActionOutcome, *, include: bool,
                      force: bool, tags: tuple[str, ...] | None) -> None:
        """AbstractFrontier.importRecoverFormat: the lines whose tag is one of ``tags`` (any tag when None)."""
        discovery = self.parts.discovery
        for number, line in enumerate(_lines(path, kind.is_gzipped), start=1):
            if number % YIELD_EVERY_LINES == 0:
                await asyncio.sleep(0)
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            if tags is not None and line[:3] not in tags:
                continue
            if len(line) < 4:
                outcome.skipped += 1
                continue
            words = line[3:].split()
            url = canonical_url(words[0]) if words else None
            if url is None:
                outcome.skipped += 1
                continue
            hop_path = words[1] if len(words) > 1 and _HOP_PATH.match(words[1]) else ""
            via = words[2] if len(words) > 2 and len(words[2]) > 1 else ""
            if include:
                added = discovery.include(url, hop_path, apply_scope=kind.applies_scope)
                outcome.included += added
            else:
                added = discovery.schedule(url, hop_path, via, "", apply_scope=kind.applies_scope, force=force)
                outcome.scheduled += added
            outcome.not_added += not added

    def _report(self, outcome: ActionOutcome, path: Path) -> None:
        if outcome.refusal:
            self.job_log.warning(outcome.describe())
            self.logs.alert("WARNING", f"action file {path} refused: {outcome.refusal}")
        elif outcome.ignored:
            self.job_log.warning(outcome.describe())  # Heritrix's level for it
        else:
            self.job_log.info(outcome.describe())

    def _move(self, path: Path, done_name: str) -> None:
        done = self.done_dir / done_name
        try:
            shutil.move(path, done)
        except OSError as exc:
            self._unmovable.add(path.name)
            self.logs.alert("SEVERE", f"action file {path} cannot be moved to {done}: {exc}; "
                                      "it is left in place and not acted on again in this launch")
            return
        link = self.action_dir / DONE_LINK_DIRECTORY / done_name
        try:
            link.parent.mkdir(exist_ok=True)
            link.symlink_to(done.resolve())
        except OSError as exc:
            self.job_log.warning(f"failed to create symlink from {link} to {done}: {exc}")


def _lines(path: Path, is_gzipped: bool) -> Iterator[str]:
    opener = gzip.open if is_gzipped else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as text:
        yield from text
