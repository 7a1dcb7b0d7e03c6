"""The engine's jobs: the registry of job directories and each job's state, as Heritrix 3 keeps them.

A job is a directory holding ``crawler-beans.cxml``, as a Heritrix 3 job is. Its state is one of four, and
every action a client may POST is allowed or refused by ``JOB_ACTIONS`` alone, one table in the form of
harvestdef's job states (harvestdef/model/status.py)::

    UNBUILT --build--> READY --launch--> ACTIVE --(crawl ends)--> FINISHED --teardown--> UNBUILT
                         \\--teardown--> UNBUILT

While ACTIVE, the crawl controller's own state narrows the actions further to those its one table allows
(harvester/heritrix3/states.py, ``available_actions``: one cannot pause a PAUSED crawl). A failed build leaves
the job UNBUILT with the reason in ``job.log``.

On disk, per job: ``job.log`` (this module's file), one ``<launchId>/`` directory per launch (14-digit UTC
timestamp, with a copy of the cxml) and a ``latest`` symlink to the newest; ``checkpoints/`` is written by
the crawl; ``shutdown-checkpoint.json`` names the checkpoint written at an engine shutdown once the
crawl has ended after it (``CrawlJob.stop_for_shutdown``). ``launchCount`` and ``lastLaunch`` are read
back from the launch directories, so they survive an engine restart. A job added from outside the jobs
dir (``action=add``) is remembered by a ``<name>.jobpath`` file in the jobs dir, as Heritrix does.

A running crawl takes live changes: a script of HarvestSuite's library (harvester/heritrix3/scripting.py) and
the bean properties live/livechanges.py lists. Each script is one job.log line, carried out or refused.

The crawl itself (harvester.engine.crawl) runs in its own thread; this module only drives it.
"""

from __future__ import annotations

import datetime
import enum
import json
import logging
import re
import shutil
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from harvestdef.destinations import PUBLIC_ONLY, DestinationPolicy
from harvestdef.errors import CrawlEngineError, NotFoundError
from harvestdef.files import write_atomically
from harvester.engine.config import ConfigError, CrawlConfig, load_crawl_config
from harvester.engine.crawl import CrawlController, CrawlStateError
from harvester.engine.extraction.sitemaps import SitemapLimits
from harvester.engine.fetching.bounds import ResponseBounds
from harvester.engine.fetching.browser import BrowserOptions
from harvester.engine.live.livechanges import PropertyError, ScriptOutcome
from harvester.engine.reporting.figures import LaunchStatus
from harvester.engine.reporting.reports import REPORT_FILES
from harvester.heritrix3.layout import (
    ACTION_DIR,
    CHECKPOINTS_DIR,
    JOB_LOG,
    LATEST,
    PRIMARY_CONFIG,
    REPORTS_DIR,
    SEEDS,
    SHUTDOWN_CHECKPOINT,
)
from harvester.heritrix3.scripting import ScriptRefused, parse_script
from harvester.heritrix3.states import ACTIVE, ControllerEvent, ControllerState, CrawlExitStatus, available_actions

PROFILE_NAME = "profile-crawler-beans.cxml"
JOBPATH_SUFFIX = ".jobpath"
LAUNCH_ID = re.compile(r"^\d{14}$")
JOB_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
JOB_LOG_TAIL_LINES = 5
SCRIPT_CHANGES_NAMED = 10  # the applied changes a script's job.log line names
# How long a stopping engine waits for each crawl to end after its checkpoint and terminate.
SHUTDOWN_JOIN_SECONDS = 30.0
# The names of the script engines whose scripts are read (Heritrix's JSR-223 names for Groovy and BeanShell;
# HarvestSuite's library is Groovy, and its call lines read the same in BeanShell).
SCRIPT_ENGINES = frozenset({"groovy", "beanshell", "bsh"})

log = logging.getLogger(__name__)


class JobState(enum.Enum):
    UNBUILT = "Unbuilt"
    READY = "Ready"
    ACTIVE = "Active"
    FINISHED = "Finished"

    def __repr__(self) -> str:
        return self.name


class Action(enum.StrEnum):
    BUILD = "build"
    LAUNCH = "launch"
    PAUSE = "pause"
    UNPAUSE = "unpause"
    CHECKPOINT = "checkpoint"
    TERMINATE = "terminate"
    TEARDOWN = "teardown"


# Every allowed action per job state and the state it leads to. ACTIVE -> FINISHED is not an action: the
# crawl reports it. ``teardown`` is refused while a crawl runs (it would drop a live controller).
JOB_ACTIONS: dict[JobState, dict[Action, JobState]] = {
    JobState.UNBUILT: {Action.BUILD: JobState.READY},
    JobState.READY: {Action.LAUNCH: JobState.ACTIVE, Action.TEARDOWN: JobState.UNBUILT},
    JobState.ACTIVE: {Action.PAUSE: JobState.ACTIVE, Action.UNPAUSE: JobState.ACTIVE,
                      Action.CHECKPOINT: JobState.ACTIVE, Action.TERMINATE: JobState.ACTIVE},
    JobState.FINISHED: {Action.TEARDOWN: JobState.UNBUILT},
}

class JobActionError(CrawlEngineError):
    """An action the job cannot take now (illegal in its state, or failed); the message says why."""


class NoCrawlError(JobActionError):
    """The job has no launched crawl, so nothing of a crawl (its beans) to read or change."""


class UnknownJobError(NotFoundError, KeyError):
    """No job of that name in the engine.

    Also a KeyError, for callers that catch that; its text is
    NotFoundError's ("no job 'name'"), not KeyError's quoted repr.
    """

    def __init__(self, name: str) -> None:
        super().__init__("job", name)

    __str__ = Exception.__str__


@dataclass(frozen=True)
class JobSnapshot:
    """A consistent view of one job for the status representations."""

    name: str
    directory: Path
    primary_config: Path
    state: JobState
    controller_state: ControllerState | None
    exit_status: CrawlExitStatus | None
    available_actions: tuple[str, ...]
    launch_count: int
    last_launch: str | None
    launch_dir: Path | None
    checkpoints: tuple[str, ...]
    resumed_checkpoint: str | None
    job_log_tail: tuple[str, ...]
    launch_status: LaunchStatus | None
    is_profile: bool = False

    @property
    def status_description(self) -> str:
        # Heritrix's strings exactly: wrappers (NetarchiveSuite) compare them.
        if self.state is JobState.ACTIVE:
            return f"Active: {self.controller_state}"
        if self.state is JobState.FINISHED:
            return f"Finished: {self.exit_status}"
        return self.state.value

    @property
    def is_running(self) -> bool:
        return self.state is JobState.ACTIVE

    @property
    def is_launchable(self) -> bool:
        return self.state is JobState.READY

    @property
    def has_application_context(self) -> bool:
        return self.state is not JobState.UNBUILT


@dataclass(frozen=True)
class EngineSnapshot:
    jobs_dir: Path
    jobs: tuple[JobSnapshot, ...]
    profile_name: str = PROFILE_NAME


def _utc_iso(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class _JobLogFormatter(logging.Formatter):
    """Heritrix's job.log line: ISO timestamp in UTC, level, message."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
        text = f"{_utc_iso(moment)} {record.levelname} {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class CrawlJob:
    """One job directory and, once built, its configuration and its current launch's controller."""

    def __init__(self, name: str, directory: Path, hosts: Mapping[str, str],
                 sitemap_limits: SitemapLimits | None = None, browser: BrowserOptions | None = None,
                 bounds: ResponseBounds | None = None, destinations: DestinationPolicy = PUBLIC_ONLY) -> None:
        self.name = name
        self.destinations = destinations  # what the crawl may connect to (harvestdef/destinations.py)
        self.directory = directory
        self.sitemap_limits = sitemap_limits or SitemapLimits()
        self.bounds = bounds or ResponseBounds()
        self.browser = browser  # None: fetched over HTTP; else loaded in Chromium (fetching/browserfetch.py)
        # A profile (Heritrix: copyTo with asProfile) holds profile-crawler-beans.cxml; it builds, never launches.
        self.is_profile = not (directory / PRIMARY_CONFIG).is_file() and (directory / PROFILE_NAME).is_file()
        self.hosts = dict(hosts)
        self.api_port = 0  # set by the registry once the server listens; WARC names end with it
        self._lock = threading.RLock()
        self._config: CrawlConfig | None = None
        self._controller: CrawlController | None = None
        self._launch_dir: Path | None = None
        self._resumed_checkpoint: str | None = None
        self.job_log = logging.getLogger(f"harvester.engine.job.{name}.{id(self):x}")
        self.job_log.propagate = False
        self.job_log.setLevel(logging.INFO)
        self._handler = logging.FileHandler(directory / JOB_LOG, encoding="utf-8", delay=True)
        self._handler.setFormatter(_JobLogFormatter())
        self.job_log.addHandler(self._handler)

    @property
    def primary_config(self) -> Path:
        return self.directory / (PROFILE_NAME if self.is_profile else PRIMARY_CONFIG)

    def close(self) -> None:
        self.job_log.removeHandler(self._handler)
        self._handler.close()

    # -- state ---------------------------------------------------------------------------------------------

    def _state(self, launch_status: LaunchStatus | None = None) -> JobState:
        """The job's state; ``launch_status`` is the controller's status when the caller has one already."""
        if self._controller is not None:
            launch_status = launch_status or self._controller.status()
            return (JobState.FINISHED if launch_status.controller_state is ControllerState.FINISHED
                    else JobState.ACTIVE)
        return JobState.READY if self._config is not None else JobState.UNBUILT

    def _available_actions(self, state: JobState, controller_state: ControllerState | None) -> tuple[Action, ...]:
        allowed = tuple(JOB_ACTIONS[state])
        if self.is_profile:
            allowed = tuple(action for action in allowed if action is not Action.LAUNCH)
        if state is JobState.ACTIVE:
            narrowed = {Action(str(event)) for event in available_actions(controller_state)}
            allowed = tuple(action for action in allowed if action in narrowed)
        return allowed

    def _require(self, action: Action) -> JobState:
        """Check ``action`` against the tables; raise naming job, action and state when it is not allowed."""
        launch_status = self._controller.status() if self._controller is not None else None
        state = self._state(launch_status)
        controller_state = launch_status.controller_state if launch_status else None
        if action not in self._available_actions(state, controller_state):
            where = f"{state.value}" + (f" ({controller_state})" if controller_state else "")
            raise JobActionError(f"job {self.name}: action '{action}' is not available while {where}")
        return JOB_ACTIONS[state][action]

    # -- actions -------------------------------------------------------------------------------------------

    def perform(self, action: Action, checkpoint: str | None = None) -> None:
        """Carry out one action; raise JobActionError (also written to job.log) when it is refused or fails."""
        with self._lock:
            try:
                self._require(action)
                if action is Action.BUILD:
                    self._build()
                elif action is Action.LAUNCH:
                    self._launch(checkpoint)
                elif action is Action.TEARDOWN:
                    self._teardown()
                else:
                    self._drive(action)
            except JobActionError as exc:
                self.job_log.warning(str(exc))
                raise

    def run_script(self, text: str, engine: str) -> ScriptOutcome:
        """Read ``text`` as a script of HarvestSuite's library and carry out its calls on the running crawl.

        Never raises for the script's sake: a script refused (another engine, a line that is not one of the
        calls), a call that fails or a job with no running crawl is an outcome with its failure, as
        Heritrix's script console reports a script's exception. One job.log line either way."""
        with self._lock:
            controller = self._controller
            state = self._state()
        try:
            if engine.strip().lower() not in SCRIPT_ENGINES:
                raise ScriptRefused(f"no script engine {engine!r}: this engine reads groovy (or beanshell) "
                                    "scripts of HarvestSuite's library (harvester/heritrix3/scripting.py)")
            calls = parse_script(text)
            if controller is None:
                raise CrawlStateError(f"job {self.name} has no crawl running (it is {state.value})")
            outcome = controller.run_script(calls)
        except ScriptRefused as exc:
            self.job_log.warning(f"Script refused: {exc}")
            return ScriptOutcome("", f"script refused: {exc}", ())
        except CrawlStateError as exc:
            self.job_log.warning(f"Script not run: {exc}")
            return ScriptOutcome("", f"script not run: {exc}", ())
        if outcome.failure is not None:
            done = f" after {len(outcome.applied)} changes carried out" if outcome.applied else ""
            self.job_log.warning(f"Script failed{done}: {outcome.failure}")
        else:
            # a script of hundreds of changes names the first few: scripting_events.log has each of them
            named = "; ".join(outcome.applied[:SCRIPT_CHANGES_NAMED])
            more = len(outcome.applied) - SCRIPT_CHANGES_NAMED
            self.job_log.info(f"Script carried out: {len(calls)} calls, {len(outcome.applied)} changes"
                              + (f" ({named}{f'; and {more} more' if more > 0 else ''})" if outcome.applied else ""))
        return outcome

    def _launched_controller(self) -> CrawlController:
        with self._lock:
            if self._controller is None:
                raise NoCrawlError(f"job {self.name} has no launched crawl, so no crawl beans "
                                   f"(it is {self._state().value})")
            return self._controller

    def bean_property(self, path: str) -> int | float:
        """The value of a bean property of the launched crawl (livechanges.PROPERTIES); NoCrawlError without
        a launched crawl, PropertyError for another path."""
        return self._launched_controller().bean_property(path)

    def set_bean_property(self, path: str, text: str) -> int | float:
        """Set a bean property on the running crawl from ``text``; the value in force afterwards.
        NoCrawlError, CrawlStateError (not running), PropertyError (path or value refused): nothing changed."""
        controller = self._launched_controller()
        try:
            before = controller.bean_property(path)
            value = controller.set_bean_property(path, text)
        except (PropertyError, CrawlStateError) as exc:
            self.job_log.warning(f"Bean property {path} not set: {exc}")
            raise
        self.job_log.info(f"Bean property {path} set to {value} (was {before})")
        return value

    def report_text(self, report: str) -> str | None:
        """A report by Heritrix's class name (``FrontierSummaryReport``): live while the crawl runs, else the
        file of the latest launch. None when the name is unknown or no launch has written it."""
        file_name = REPORT_FILES.get(report)
        if file_name is None:
            return None
        with self._lock:
            controller = self._controller
        if controller is not None:
            return controller.report_text(file_name)
        path = self.directory / LATEST / REPORTS_DIR / file_name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def _build(self) -> None:
        try:
            config = load_crawl_config(self.primary_config, self.directory)
        except ConfigError as exc:
            place = f" (line {exc.line}, column {exc.column})" if getattr(exc, "line", None) is not None else ""
            self.job_log.error(f"Build failed: {self.primary_config.name}{place}: {exc}")
            raise JobActionError(f"job {self.name}: build failed{place}: {exc}") from exc
        except OSError as exc:
            self.job_log.error(f"Build failed: cannot read {self.primary_config}: {exc}")
            raise JobActionError(f"job {self.name}: build failed: {exc}") from exc
        for warning in config.warnings:
            self.job_log.warning(warning)
        self._config = config
        self.job_log.info("Job instantiated")

    def _resolve_checkpoint(self, checkpoint: str) -> Path:
        names = self.checkpoint_names()
        if not names:
            raise JobActionError(f"job {self.name}: no checkpoint to launch from in {self.directory / CHECKPOINTS_DIR}")
        name = names[-1] if checkpoint == "latest" else checkpoint
        if name not in names:
            raise JobActionError(f"job {self.name}: no checkpoint {checkpoint!r} (have: {', '.join(names)})")
        return self.directory / CHECKPOINTS_DIR / name

    def _new_launch_dir(self) -> Path:
        moment = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        # Launch ids are unique per job: a second launch within the same second takes the next second.
        while (self.directory / moment.strftime("%Y%m%d%H%M%S")).exists():
            moment += datetime.timedelta(seconds=1)
        launch_dir = self.directory / moment.strftime("%Y%m%d%H%M%S")
        launch_dir.mkdir()
        return launch_dir

    def _point_latest(self, launch_dir: Path) -> None:
        # Replace the symlink by rename, so a reader never finds it missing.
        temporary = self.directory / f".{LATEST}.new"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(launch_dir.name, target_is_directory=True)
        temporary.replace(self.directory / LATEST)

    def _launch(self, checkpoint: str | None) -> None:
        assert self._config is not None  # READY guarantees a built configuration
        checkpoint_dir = self._resolve_checkpoint(checkpoint) if checkpoint else None
        launch_dir = self._new_launch_dir()
        shutil.copy2(self.primary_config, launch_dir / PRIMARY_CONFIG)
        self._point_latest(launch_dir)
        (self.directory / ACTION_DIR).mkdir(exist_ok=True)
        try:
            controller = CrawlController(self._config, self.directory, launch_dir, self.hosts, self.job_log,
                                         checkpoint=checkpoint_dir, api_port=self.api_port,
                                         sitemap_limits=self.sitemap_limits, browser=self.browser,
                                         bounds=self.bounds, destinations=self.destinations)
            controller.start()
        except Exception as exc:
            # Anything the crawl raises while starting is the crawl's failure, not the engine's: log it, stay READY.
            self.job_log.exception(f"Launch failed: {exc}")
            raise JobActionError(f"job {self.name}: launch failed: {exc}") from exc
        self._controller = controller
        self._launch_dir = launch_dir
        self._resumed_checkpoint = checkpoint_dir.name if checkpoint_dir else None
        resumed = f" from checkpoint {checkpoint_dir.name}" if checkpoint_dir else ""
        self.job_log.info(f"Job launched{resumed} in {launch_dir.name}")

    def _drive(self, action: Action) -> None:
        assert self._controller is not None  # ACTIVE guarantees a controller
        if action is Action.PAUSE:
            self._controller.pause()
            self.job_log.info("Job paused")
        elif action is Action.UNPAUSE:
            self._controller.unpause()
            self.job_log.info("Job unpaused")
        elif action is Action.CHECKPOINT:
            name = self._controller.checkpoint()
            self.job_log.info(f"Checkpoint {name} written")
        elif action is Action.TERMINATE:
            self._controller.terminate()
            self.job_log.info("Job terminated by operator")

    def _teardown(self) -> None:
        if self._controller is not None:
            self._controller.join(timeout=5.0)
        self._controller = None
        self._config = None
        self._launch_dir = None
        self._resumed_checkpoint = None
        self.job_log.info("Job torn down")

    def stop_for_shutdown(self) -> None:
        """Checkpoint a live crawl when its state allows, then terminate it and wait for it to end.

        A running crawl is paused first, as Heritrix checkpoints a paused crawl: the checkpoint waits for
        the fetches in flight, and none starts between it and the terminate, so a resume from it fetches
        and writes nothing again.

        Once the crawl has ended with nothing crawled after its checkpoint (the same figures at its end as
        at the checkpoint), ``SHUTDOWN_CHECKPOINT`` in the job directory names the checkpoint and its
        launch: a harvest controller that died without stopping its crawl (the engine then stops at end of
        its standard input) finds there, when it starts again, that the job can be resumed from it. Written
        last, so a checkpoint that failed, a crawl that did not end or an engine killed meanwhile leave none."""
        with self._lock:
            if self._controller is None or self._state() is not JobState.ACTIVE:
                return
            controller_state = self._controller.status().controller_state
            checkpointed = None
            if ControllerEvent.CHECKPOINT in available_actions(controller_state):
                try:
                    if controller_state in ACTIVE:
                        self._controller.pause()
                    name = self._controller.checkpoint()
                    checkpointed = (name, self._controller.status().figures)
                    self.job_log.info(f"Checkpoint {name} written at engine shutdown; launch from it to resume")
                except Exception:
                    # A failed checkpoint must not keep the engine from stopping; the crawl is still terminated.
                    self.job_log.exception("Checkpoint at engine shutdown failed")
            self._controller.terminate()
            self.job_log.info("Job terminated at engine shutdown")
            controller = self._controller
            launch_dir = self._launch_dir
        if not controller.join(timeout=SHUTDOWN_JOIN_SECONDS):
            self.job_log.error(f"Crawl did not end within {SHUTDOWN_JOIN_SECONDS:.0f} s of engine shutdown")
            return
        if checkpointed is not None and launch_dir is not None:
            name, figures = checkpointed
            ended = controller.status().figures
            if ((ended.uri_totals.downloaded_uri_count, ended.size_totals.total)
                    != (figures.uri_totals.downloaded_uri_count, figures.size_totals.total)):
                self.job_log.error(f"Crawl went on after checkpoint {name} at engine shutdown: not marked resumable")
                return
            written = _utc_iso(datetime.datetime.now(datetime.UTC))
            write_atomically(self.directory / SHUTDOWN_CHECKPOINT, json.dumps(
                {"checkpoint": name, "launch": launch_dir.name, "written": written}).encode("utf-8"))

    # -- views ---------------------------------------------------------------------------------------------

    def launch_ids(self) -> list[str]:
        return sorted(entry.name for entry in self.directory.iterdir()
                      if entry.is_dir() and not entry.is_symlink() and LAUNCH_ID.match(entry.name))

    def checkpoint_names(self) -> list[str]:
        directory = self.directory / CHECKPOINTS_DIR
        if not directory.is_dir():
            return []
        return sorted(entry.name for entry in directory.iterdir() if entry.is_dir() and entry.name.startswith("cp"))

    def job_log_tail(self, lines: int = JOB_LOG_TAIL_LINES) -> tuple[str, ...]:
        """The newest lines of job.log, newest first (Heritrix's jobLogTail)."""
        path = self.directory / JOB_LOG
        if not path.is_file():
            return ()
        with path.open(encoding="utf-8", errors="replace") as job_log:
            return tuple(reversed([line.rstrip("\n") for line in deque(job_log, maxlen=lines)]))

    def snapshot(self) -> JobSnapshot:
        with self._lock:
            launch_status = self._controller.status() if self._controller is not None else None
            state = self._state(launch_status)
            controller_state = launch_status.controller_state if launch_status else None
            if state is JobState.READY:
                controller_state = ControllerState.NASCENT  # Heritrix's state of a built, unlaunched crawl
            launches = self.launch_ids()
            last_launch = None
            if launches:
                moment = datetime.datetime.strptime(launches[-1], "%Y%m%d%H%M%S").replace(tzinfo=datetime.UTC)
                last_launch = _utc_iso(moment)
            return JobSnapshot(
                name=self.name, directory=self.directory, primary_config=self.primary_config, state=state,
                controller_state=controller_state,
                exit_status=launch_status.exit_status if launch_status else None,
                available_actions=tuple(str(a) for a in self._available_actions(state, controller_state)),
                launch_count=len(launches), last_launch=last_launch, launch_dir=self._launch_dir,
                checkpoints=tuple(self.checkpoint_names()), resumed_checkpoint=self._resumed_checkpoint,
                job_log_tail=self.job_log_tail(), launch_status=launch_status, is_profile=self.is_profile)


class JobRegistry:
    """All jobs of one engine, found in (or added to) its jobs directory."""

    def __init__(self, jobs_dir: Path, hosts: Mapping[str, str], sitemap_limits: SitemapLimits | None = None,
                 browser: BrowserOptions | None = None, bounds: ResponseBounds | None = None,
                 destinations: DestinationPolicy = PUBLIC_ONLY) -> None:
        self.jobs_dir = jobs_dir
        self.destinations = destinations
        self.hosts = dict(hosts)
        self.sitemap_limits = sitemap_limits or SitemapLimits()
        self.bounds = bounds or ResponseBounds()
        self.browser = browser
        self._api_port = 0
        self._lock = threading.Lock()
        self._jobs: dict[str, CrawlJob] = {}
        jobs_dir.mkdir(parents=True, exist_ok=True)
        self.rescan()

    @property
    def api_port(self) -> int:
        return self._api_port

    @api_port.setter
    def api_port(self, port: int) -> None:
        """The port the REST API listens on, known only once the server is bound (``--port 0``)."""
        with self._lock:
            self._api_port = port
            for job in self._jobs.values():
                job.api_port = port

    def _new_job(self, name: str, directory: Path) -> CrawlJob:
        job = CrawlJob(name, directory, self.hosts, self.sitemap_limits, self.browser, bounds=self.bounds,
                       destinations=self.destinations)
        job.api_port = self._api_port
        return job

    def _candidate_dirs(self) -> Iterable[tuple[str, Path]]:
        for entry in sorted(self.jobs_dir.iterdir()):
            if entry.is_dir() and ((entry / PRIMARY_CONFIG).is_file() or (entry / PROFILE_NAME).is_file()):
                yield entry.name, entry
            elif entry.is_file() and entry.name.endswith(JOBPATH_SUFFIX):
                target = Path(entry.read_text(encoding="utf-8").strip())
                if (target / PRIMARY_CONFIG).is_file():
                    yield entry.name[: -len(JOBPATH_SUFFIX)], target

    def rescan(self) -> list[str]:
        """Register every job directory not known yet; return the names found now."""
        with self._lock:
            for name, directory in self._candidate_dirs():
                if name not in self._jobs:
                    self._jobs[name] = self._new_job(name, directory)
                    log.info("job %s registered from %s", name, directory)
            return sorted(self._jobs)

    def create(self, name: str) -> CrawlJob:
        """A new job directory with our default profile as its crawler-beans.cxml."""
        if not JOB_NAME.match(name):
            raise JobActionError(f"{name!r} is not a usable job name (letters, digits, '.', '_', '-')")
        with self._lock:
            directory = self.jobs_dir / name
            if name in self._jobs or directory.exists():
                if name in self._jobs:
                    self._jobs[name].job_log.warning(f"Job exists: {name} (create refused)")
                raise JobActionError(f"job {name} exists already")
            directory.mkdir()
            profile = files("harvester.engine").joinpath(PROFILE_NAME).read_bytes()
            (directory / PRIMARY_CONFIG).write_bytes(profile)
            # The profile reads its seeds from seeds.txt: one URL per line, '#' for comments.
            (directory / SEEDS).write_text("# one seed URL per line\n", encoding="utf-8")
            job = self._jobs[name] = self._new_job(name, directory)
        job.job_log.info(f"Job created from profile {PROFILE_NAME}")
        return job

    def copy(self, source: CrawlJob, new_name: str, as_profile: bool) -> CrawlJob:
        """Heritrix's copyTo: a new job directory with the source's configuration files (not its launches,
        checkpoints or job.log); as a profile, the primary config is named profile-crawler-beans.cxml."""
        if not JOB_NAME.match(new_name):
            raise JobActionError(f"{new_name!r} is not a usable job name (letters, digits, '.', '_', '-')")
        with self._lock:
            directory = self.jobs_dir / new_name
            if new_name in self._jobs or directory.exists():
                raise JobActionError(f"job {new_name} exists already")
            directory.mkdir()
            for entry in source.directory.iterdir():
                if entry.is_file() and not entry.is_symlink() and entry.name != JOB_LOG:
                    target = entry.name
                    if entry == source.primary_config:
                        target = PROFILE_NAME if as_profile else PRIMARY_CONFIG
                    shutil.copy2(entry, directory / target)
            job = self._jobs[new_name] = self._new_job(new_name, directory)
        kind = "profile" if as_profile else "job"
        source.job_log.info(f"Copied to {kind} {new_name}")
        job.job_log.info(f"Job copied from {source.name}" + (" as a profile" if as_profile else ""))
        return job

    def add(self, path: Path) -> CrawlJob:
        """Register an existing directory holding a crawler-beans.cxml, wherever it is."""
        directory = Path(path).resolve()
        if not (directory / PRIMARY_CONFIG).is_file():
            raise JobActionError(f"{directory} holds no {PRIMARY_CONFIG}")
        name = directory.name
        with self._lock:
            if name in self._jobs:
                if self._jobs[name].directory.resolve() == directory:
                    return self._jobs[name]
                raise JobActionError(f"job {name} exists already (in {self._jobs[name].directory})")
            if directory.parent != self.jobs_dir.resolve():
                (self.jobs_dir / f"{name}{JOBPATH_SUFFIX}").write_text(f"{directory}\n", encoding="utf-8")
            job = self._jobs[name] = self._new_job(name, directory)
        job.job_log.info(f"Job added from {directory}")
        return job

    def get(self, name: str) -> CrawlJob:
        with self._lock:
            try:
                return self._jobs[name]
            except KeyError:
                raise UnknownJobError(name) from None

    def snapshot(self) -> EngineSnapshot:
        with self._lock:
            jobs = list(self._jobs.values())
        return EngineSnapshot(jobs_dir=self.jobs_dir, jobs=tuple(job.snapshot() for job in jobs))

    def shutdown(self) -> None:
        """Checkpoint and stop every live crawl (each on its own, so one failure does not skip the rest)."""
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            try:
                job.stop_for_shutdown()
            except Exception:
                log.exception("stopping job %s at shutdown failed", job.name)
            finally:
                job.close()
