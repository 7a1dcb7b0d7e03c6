"""``harvestsuite demo``: the whole system in one process, on files in one working directory.

The scheduler, one harvest controller (with the bundled crawl engine as its child process) and the web
UI run as threads, each the role its package offers through the ``harvestsuite.roles`` entry points, so
harvestdef starts them without importing them. They share nothing but what a real installation shares:
the harvest database (SQLite, ``harvest.db``), the embedded queue (``queue.db``) and the archive store
(``archive/``). The demo site and the narrator run beside them, and the replay service (pywb over the
archive store, harvestdef/replay/) on the port after the web UI's, whose "view" links open it; without
pywb's environment (``.venv-pywb``, built by scripts/setup.sh) the demo says how to build it and runs
without replay. With replay, the QA worker (the scheduler package's ``qa`` role) pictures each job's seeds
as replayed, for the job page. Neither is one of the harvest's roles: a pywb or QA worker that fails is told
and the harvests go on.

Ports: the web UI on ``--port`` (8080), replay on the next (8081), the demo site on the one after (8082,
chosen at the first run and kept, since the demo's seeds name it). A port in use is replaced by a free one,
except the web UI's, which the person chose.

The working directory keeps everything between runs: ``demo.json`` holds what the first run chose (the
demo site's port, the admin password, the keys), so a second run continues where the first stopped. A
lock file keeps a second demo out of a directory in use.
"""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import secrets
import shlex
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TextIO

from harvestdef.cli import command_as_run
from harvestdef.db.engine import engine_from_settings
from harvestdef.db.init import init_database
from harvestdef.demo import definitions
from harvestdef.demo.narrator import Narrator
from harvestdef.demo.site import HOSTS, DemoSite, write_hosts_file
from harvestdef.errors import HarvestSuiteError
from harvestdef.files import exclusive_lock, write_atomically
from harvestdef.replay.environment import is_ready
from harvestdef.replay.service import LOG_FILE, ReplayService
from harvestdef.settings import Settings, load_settings

ROLE_GROUP = "harvestsuite.roles"
ROLES = ("webui", "scheduler", "harvester")  # the order they start in
QA_ROLE = "qa"  # run beside replay when installed: thumbnails are pictures of replayed pages
STATE_FILE = "demo.json"
SETTINGS_FILE = "settings.toml"
LOCK_FILE = "demo.lock"
REPLAY_DIR = "replay"  # pywb's working directory in the demo's
PYWB_VENV = ".venv-pywb"  # where scripts/setup.sh builds pywb's environment, beside .venv

Role = Callable[[Settings, threading.Event], None]
log = logging.getLogger("harvestsuite.demo")


class DemoError(HarvestSuiteError):
    """The demo cannot start; the message says why and what to do."""


@dataclass(frozen=True)
class DemoState:
    """What the first run chose and every later run reuses."""

    site_port: int
    admin_password: str
    secret_key: str
    engine_password: str

    @classmethod
    def load_or_create(cls, path: Path, web_port: int) -> tuple[DemoState, bool]:
        if path.exists():
            try:
                return cls(**json.loads(path.read_text(encoding="utf-8"))), False
            except (ValueError, TypeError) as exc:
                raise DemoError(f"{path} cannot be read ({exc}); delete the directory to start the demo afresh")\
                    from None
        # the port after the web UI's is the replay service's
        state = cls(site_port=_free_port(prefer=web_port + 2, avoid={web_port + 1}),
                    admin_password=secrets.token_urlsafe(9),
                    secret_key=secrets.token_hex(32), engine_password=secrets.token_urlsafe(12))
        write_atomically(path, json.dumps(asdict(state), indent=1).encode("utf-8"))  # mode 0600: it holds passwords
        return state, True


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # the same option the servers set, so a port in TIME_WAIT counts as free, as it is for them
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def _free_port(prefer: int, avoid: set[int] | frozenset[int] = frozenset()) -> int:
    """``prefer`` when it is free and not in ``avoid``, else a free port the system gives (not in ``avoid``)."""
    if prefer <= 65535 and prefer not in avoid and not _port_in_use(prefer):
        return prefer
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port not in avoid:
            return port


def default_pywb_venv() -> Path:
    """pywb's environment as scripts/setup.sh builds it: ``.venv-pywb`` beside the environment running this."""
    return Path(sys.prefix).parent / PYWB_VENV


def _shown(path: Path) -> str:
    """``path`` as a shell word: relative to the working directory when below it, absolute otherwise."""
    try:
        relative = path.relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(path))
    return shlex.quote(str(relative) if relative.parent != Path(".") else f"./{relative}")


def demo_settings(directory: Path, web_port: int, state: DemoState, replay_port: int | None = None,
                  pywb_venv: Path | None = None) -> dict[str, object]:
    """Every setting the demo changes from the defaults: its files, and intervals of seconds. With
    ``replay_port`` the replay service runs there (from ``pywb_venv``) and the web UI links to it."""
    replay: dict[str, object] = {}
    if replay_port is not None:
        replay = {
            "harvestsuite.replay.url": f"http://127.0.0.1:{replay_port}",
            "harvestsuite.replay.bind": "127.0.0.1",
            "harvestsuite.replay.port": replay_port,
            "harvestsuite.replay.workDir": str(directory / REPLAY_DIR),
            "harvestsuite.replay.pywbVenv": str(pywb_venv or default_pywb_venv()),
            "harvestsuite.replay.syncIntervalMs": 2000,
            # the QA worker pictures each seed a few seconds after its job, once replay has found the files
            "harvestsuite.qa.thumbnailIntervalMs": 5000,
            "harvestsuite.qa.thumbnailDelayMs": 3000,
        }
    return {
        "harvestsuite.database.url": f"sqlite:///{directory / 'harvest.db'}",
        "harvestsuite.queue.url": f"sqlite:///{directory / 'queue.db'}",
        "harvestsuite.archive.root": str(directory / "archive"),
        "harvester.harvesting.serverdir": str(directory / "harvester"),
        "harvester.harvesting.oldjobsDir": str(directory / "harvester" / "oldjobs"),
        "harvester.harvesting.channel": ["FOCUSED", "SNAPSHOT"],
        "harvester.harvesting.sendReadyDelay": 1,
        "harvester.harvesting.minSpaceLeft": 100_000_000,
        "harvester.harvesting.heritrix.crawlLoopWaitTime": 2,
        "harvester.harvesting.heritrix.inactivityTimeout": 120,
        "harvester.harvesting.heritrix.noresponseTimeout": 120,
        "harvester.harvesting.heritrix.adminPassword": state.engine_password,
        "harvester.harvesting.frontier.frontierReportWaitTime": 30,
        "harvestsuite.harvester.heartbeatInterval": 5,
        "harvestsuite.crawler.hostsFile": str(directory / "hosts"),
        "harvester.scheduler.jobgenerationperiod": 5,
        # a leader whose lease of 10 s ran out while another writer held the database steps down and leads
        # again; the statements wait for the lock as long as by default (an import's batches hold it for a
        # while, and the demo keeps harvesting beside an import without a failure)
        "harvestsuite.scheduler.leaderLeaseTime": 10,
        "harvestsuite.scheduler.intakeProcesses": 0,
        "harvestsuite.scheduler.intakeThreads": 2,
        "harvestsuite.webui.host": "127.0.0.1",
        "harvestsuite.webui.port": web_port,
        "harvestsuite.webui.secretKey": state.secret_key,
        "harvester.datamodel.domain.defaultOrderxml": definitions.TEMPLATE,
        **replay,
    }


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string


def write_settings(path: Path, values: dict[str, object]) -> None:
    text = ("# Written by `harvestsuite demo` at every start; `harvestsuite --config THIS_FILE ...` runs any\n"
            "# other command on the demo's database, queue and archive store.\n"
            + "".join(f"{key} = {_toml_value(value)}\n" for key, value in values.items()))
    write_atomically(path, text.encode("utf-8"))  # mode 0600, as the passwords in it want


@contextmanager
def directory_lock(directory: Path) -> Iterator[None]:
    """Hold the demo directory for this process; a second demo in it is told who has it."""
    with exclusive_lock(directory / LOCK_FILE, lambda holder: DemoError(
            f"a demo is already running in {directory} ({holder}); stop it with Ctrl-C, or start another one "
            f"with --dir and --port")):
        yield


def load_roles() -> dict[str, Role]:
    """The roles of the installed packages; an installation that lacks one cannot run the demo."""
    found = {entry.name: entry for entry in entry_points(group=ROLE_GROUP)}
    missing = [name for name in ROLES if name not in found]
    if missing:
        raise DemoError(f"this installation has no {', '.join(missing)} role (entry points {ROLE_GROUP}); "
                        f"install HarvestSuite again with pip")
    return {name: found[name].load() for name in ROLES}


def load_qa_role() -> Role | None:
    """The QA worker's role, if this installation has it (the scheduler package's)."""
    found = {entry.name: entry for entry in entry_points(group=ROLE_GROUP)}
    return found[QA_ROLE].load() if QA_ROLE in found else None


class StampedLines(io.TextIOBase):
    """A text stream that starts every line written to it with the time (``HH:MM:SS``), and writes it to
    ``stream``. The demo's roles print their own lines (``click.echo``) and other modules log theirs; through
    this stream everything the demo prints reads as one log, each line with its time."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._at_line_start = True
        self._lock = threading.Lock()  # the roles' threads write at once

    @property
    def encoding(self) -> str:  # type: ignore[override] - the stream's, so click writes text to this one
        return self.stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.stream.errors

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click asks whether a stream takes bytes by writing b""
            raise TypeError(f"a text stream takes str, not {type(text).__name__}")
        with self._lock:
            stamped = []
            for line in text.splitlines(keepends=True):
                if self._at_line_start:
                    stamped.append(time.strftime("%H:%M:%S "))
                stamped.append(line)
                self._at_line_start = line.endswith("\n")
            self.stream.write("".join(stamped))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()


@contextmanager
def one_log() -> Iterator[None]:
    """While the demo runs: every line on stderr with its time, in one format. The demo's story is its
    message alone; another module's record says its level and logger; what the roles print is as printed."""
    original = sys.stderr
    stamped = sys.stderr = StampedLines(original)
    root = logging.getLogger()
    others = [handler for handler in root.handlers
              if isinstance(handler, logging.StreamHandler) and handler.stream is original]
    formats = [(handler, handler.formatter) for handler in others]
    for handler in others:
        handler.setStream(stamped)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    story = logging.StreamHandler(stamped)
    story.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(story)
    level, propagate = log.level, log.propagate
    log.setLevel(logging.INFO)  # the story is told whatever the level of the other loggers
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(story)
        log.setLevel(level)
        log.propagate = propagate
        for handler, formatter in formats:
            handler.setStream(original)
            handler.setFormatter(formatter)  # type: ignore[arg-type]
        sys.stderr = original


class Demo:
    """One run of the demo in ``directory`` with the web UI on ``web_port``, replay from ``pywb_venv``
    (default: ``default_pywb_venv()``)."""

    def __init__(self, directory: Path, web_port: int, pywb_venv: Path | None = None) -> None:
        self.directory = directory.resolve()
        self.web_port = web_port
        self.web_url = f"http://127.0.0.1:{web_port}"
        self.pywb_venv = (pywb_venv or default_pywb_venv()).absolute()
        self.pywb_venv_given = pywb_venv is not None
        self.replay_url = ""
        self.replay: ReplayService | None = None
        self.stop = threading.Event()
        self.failures: list[str] = []
        self._signals = 0

    def run(self) -> int:
        """Run until Ctrl-C or SIGTERM (0), or until a role fails (1)."""
        with one_log():
            return self._run()

    def _run(self) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "archive").mkdir(exist_ok=True)  # the archive store's root: uploads never make it
        with directory_lock(self.directory):
            if _port_in_use(self.web_port):
                raise DemoError(f"port {self.web_port} is in use (another demo, or another program); stop it, or "
                                f"give the web UI another port with --port")
            roles = load_roles()
            state, first = DemoState.load_or_create(self.directory / STATE_FILE, self.web_port)
            if _port_in_use(state.site_port):
                raise DemoError(f"port {state.site_port}, the demo site's (chosen at the first run, kept in "
                                f"{self.directory / STATE_FILE}), is in use; stop what uses it, or start afresh "
                                f"in another --dir")
            replay_port = None
            if is_ready(self.pywb_venv):
                # chosen at every run: no seed names it; an earlier demo's site may hold the port after the UI's
                replay_port = _free_port(prefer=self.web_port + 1, avoid={state.site_port})
                self.replay_url = f"http://127.0.0.1:{replay_port}"
                if replay_port != self.web_port + 1:
                    log.info("port %d, the one after the web UI's, is %s: replay takes %d", self.web_port + 1,
                             "the demo site's" if state.site_port == self.web_port + 1 else "in use", replay_port)
            settings_path = self.directory / SETTINGS_FILE
            write_settings(settings_path, demo_settings(self.directory, self.web_port, state, replay_port,
                                                        self.pywb_venv))
            settings = load_settings(settings_path, environ={})
            write_hosts_file(self.directory / "hosts")
            engine = engine_from_settings(settings.database)
            try:
                self._prepare(engine, settings, state, first)
                with DemoSite(state.site_port) as site:
                    self._announce(state, site, settings)
                    return self._run_roles(roles, settings, engine)
            finally:
                engine.dispose()

    def _prepare(self, engine, settings: Settings, state: DemoState, first: bool) -> None:  # noqa: ANN001
        log.info("%s the harvest database %s", "creating" if first else "opening", settings.database.url)
        init_database(engine)
        created = definitions.create_definitions(engine, settings, state.site_port)
        if created.harvests:
            log.info("created %d domains of the demo site and the harvest definitions: %s", len(created.domains),
                     "; ".join(repr(name) for name in created.harvests))
        else:
            log.info("continuing: the harvest definitions are there from an earlier run")
        definitions.ensure_admin(engine, state.admin_password)

    def _announce(self, state: DemoState, site: DemoSite, settings: Settings) -> None:
        log.info("demo site on 127.0.0.1:%d: %s (names resolved for the crawler by %s)", site.port,
                 ", ".join(host.name for host in HOSTS), self.directory / "hosts")
        log.info("")
        log.info("    web UI:  %s   log in as %s, password %s", self.web_url, definitions.ADMIN, state.admin_password)
        if self.replay_url:
            log.info("    replay:  %s   pywb over the archive store: the \"view\" links of the job and history "
                     "pages open the pages as harvested there", self.replay_url)
            log.info("    QA:      thumbnails of each job's seeds as replayed, on the job page a few seconds after "
                     "the job (headless Chromium at %s)", settings.qa.chromium)
        else:
            log.info("    replay:  off, no pywb environment at %s; `%s --set harvestsuite.replay.pywbVenv=%s "
                     "replay install` builds it (scripts/setup.sh does), then run the demo again",
                     self.pywb_venv, command_as_run(), _shown(self.pywb_venv))
        log.info("    files:   %s (settings.toml, harvest.db, queue.db, archive/, harvester/%s)", self.directory,
                 f", {REPLAY_DIR}/" if self.replay_url else "")
        log.info("    Ctrl-C stops the demo; running it again continues where it stopped")
        log.info("")

    def _run_roles(self, roles: dict[str, Role], settings: Settings, engine) -> int:  # noqa: ANN001
        previous = {signum: signal.signal(signum, self._on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}
        narrator = Narrator(engine, self.web_url, Path(settings.archive.root), replay_url=self.replay_url)
        threads = [threading.Thread(target=self._guard, args=(name, role, settings), name=f"demo-{name}",
                                    daemon=True) for name, role in roles.items()]
        threads.append(threading.Thread(target=narrator.run, args=(self.stop,), name="demo-narrator", daemon=True))
        if self.replay_url:
            threads.append(threading.Thread(target=self._replay, args=(settings,), name="demo-replay", daemon=True))
            qa_role = load_qa_role()
            if qa_role is not None:
                threads.append(threading.Thread(target=self._qa, args=(qa_role, settings), name="demo-qa",
                                                daemon=True))
        try:
            for thread in threads:
                thread.start()
            while not self.stop.wait(0.5):
                pass
            if not self.failures:
                log.info("stopping: the harvest controller checkpoints a running crawl, which the next run "
                         "resumes (Ctrl-C again stops at once)")
            # one Ctrl-C always ends the demo: a role that does not stop in time (one waiting for a database
            # another writer holds, say) is left to the next run's cleanup, as after a second Ctrl-C
            timeout = settings.demo.stopTimeout
            deadline = time.monotonic() + timeout
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            running = [thread.name.removeprefix("demo-") for thread in threads if thread.is_alive()]
            if running:
                log.warning("%s did not stop within %d s (harvestsuite.demo.stopTimeout)", ", ".join(running),
                            timeout)
                self._stop_at_once(1)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if self.failures:
            log.error("the demo stopped because %s", "; ".join(self.failures))
            return 1
        command = command_as_run()
        venv = f" --pywb-venv {_shown(self.pywb_venv)}" if self.pywb_venv_given else ""
        log.info("stopped; `%s demo --dir %s --port %d%s` continues where it stopped; `%s --config %s jobs list` "
                 "lists its jobs", command, _shown(self.directory), self.web_port, venv, command,
                 _shown(self.directory / SETTINGS_FILE))
        return 0

    def _replay(self, settings: Settings) -> None:
        """Run the replay service until the demo stops; if it ends first, say so and let the harvests go on."""
        service = self.replay = ReplayService.from_settings(settings)
        try:
            code = service.run(self.stop)
        except Exception as exc:  # noqa: BLE001 - replay is a window on the harvests, not one of their roles
            log.error("replay stopped: %s; the demo goes on without it", exc)
            return
        if not self.stop.is_set():
            log.error("replay stopped: pywb exited %d (its output is in %s); the demo goes on without it", code,
                      service.layout.work_dir / LOG_FILE)

    def _qa(self, role: Role, settings: Settings) -> None:
        """Run the QA worker until the demo stops; like replay, a window on the harvests: its end is told and
        the harvests go on."""
        try:
            role(settings, self.stop)
        except Exception as exc:  # noqa: BLE001 - thumbnails are a view of the harvests, not one of their roles
            if self.stop.is_set():  # Ctrl-C reaches its Chromium too (the terminal's process group): a stop
                return
            log.error("the QA worker stopped: %s; the demo goes on without thumbnails", exc)

    def _guard(self, name: str, role: Role, settings: Settings) -> None:
        """Run one role; if it ends before it was asked to, the demo stops and says why."""
        try:
            role(settings, self.stop)
        except Exception as exc:  # noqa: BLE001 - any failure of a role ends the demo, told in one line
            self.failures.append(f"the {name} failed: {exc}")
            logging.getLogger(__name__).debug("the %s failed", name, exc_info=True)
        else:
            if not self.stop.is_set():
                self.failures.append(f"the {name} ended by itself (its log lines above say why)")
        self.stop.set()

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._signals += 1
        if self._signals == 1:
            self.stop.set()
            return
        self._stop_at_once(128 + signum)

    def _stop_at_once(self, code: int) -> None:
        """End the process now, whatever its threads are doing."""
        # The engine is a process of its own; the next run's harvest controller stops what it left. pywb
        # would keep the replay port, and nothing finds it later.
        if self.replay is not None:
            self.replay.kill()
        log.warning("stopped at once; the next run cleans up after it")
        logging.shutdown()
        os._exit(code)
