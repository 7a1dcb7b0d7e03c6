"""The bundled crawl engine as the harvest controller's child process.

The engine runs ``harvestsuite engine`` (``python -m harvester.engine.cli``) in its own process group and
session, so a signal meant for the controller's terminal does not reach it, and the controller stops it
on purpose: SIGTERM (the engine checkpoints and terminates its crawls, closing every WARC), then SIGKILL
after a grace time. Its standard input is a pipe the controller holds open and never writes to, and it
runs with ``--stop-when-stdin-closes``: a controller that dies without stopping it (SIGKILL, the OOM killer)
closes the pipe by dying, and the engine stops as at SIGTERM, so no orphan crawls a job the scheduler
may give to another controller (harvester/engine/cli.py says why a pipe).

Its jobs directory is ``<serverDir>/engine``; its pid goes to ``<serverDir>/engine.pid`` so that a
controller started after a SIGKILL first stops the engine its predecessor left running, if it is still
stopping (or was started without the pipe). Its output goes to ``<serverDir>/engine.out`` and
``engine.err``; the URL it listens on is read from the former.
Credentials reach it in a file readable only by the owner, never on its command line.

A controller whose crawler is ``browser`` (``harvestsuite.harvester.crawler``) starts it with ``--browser``,
the browser crawler, and hands it its own browser settings (``harvestsuite.crawler.browser.*``) as
environment variables, the settings' own override, so the child crawls under the limits the controller was
given whichever way they were given. The destination policy's allowed networks and names
(``harvestsuite.network.allowDestinations``) reach it the same way, so it refuses what the controller would.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from harvestdef.errors import HeritrixError
from harvestdef.settings import ENV_PREFIX
from harvester.engine.rest.tls import CERT_FILE

PID_FILE = "engine.pid"
AUTH_FILE = "engine.auth"
OUT_FILE = "engine.out"
ERR_FILE = "engine.err"
ENGINE_DIR = "engine"
LISTENING = re.compile(r"Engine listening at (https://\S+?)(?:/engine)?\s*$", re.MULTILINE)
STOP_GRACE_SECONDS = 45.0

log = logging.getLogger(__name__)


def _is_engine(pid: int, jobs_dir: Path) -> bool:
    """True if ``pid`` is a running crawl engine serving ``jobs_dir`` (not a reused pid)."""
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    text = [argument.decode("utf-8", "replace") for argument in arguments]
    return any("harvester.engine" in part or part == "engine" for part in text) and os.fspath(jobs_dir) in text


def _stop_group(pid: int, grace: float, child: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM to the process group led by ``pid``, SIGKILL after ``grace`` seconds. ``child`` is the
    Popen of ``pid`` when it is ours (it is reaped through it); a stale engine of a dead controller is
    reaped by init."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if child is not None:
        try:
            child.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            pass
    else:
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
    log.warning("crawl engine %d did not stop within %.0f s of SIGTERM: killing it", pid, grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    if child is not None:
        child.wait()


class BundledEngine:
    """Start, watch and stop the bundled engine for one controller (one serverDir)."""

    def __init__(self, server_dir: Path, user: str, password: str, port: int = 0, bind: str = "127.0.0.1",
                 hosts_file: str = "", start_timeout: float = 60.0,
                 browser_settings: Mapping[str, object] | None = None,
                 allow_destinations: tuple[str, ...] = ()) -> None:
        self.server_dir = Path(server_dir).resolve()
        self.jobs_dir = self.server_dir / ENGINE_DIR
        self.user = user
        self.password = password
        self.port = port
        self.bind = bind
        self.hosts_file = hosts_file
        self.start_timeout = start_timeout
        # None: the engine fetches over HTTP; else the browser crawler, with these settings (dotted key -> value)
        self.browser_settings = dict(browser_settings) if browser_settings is not None else None
        self.allow_destinations = tuple(allow_destinations)
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def ca_file(self) -> Path:
        """The engine's self-signed certificate, pinned by the controller's client."""
        return self.jobs_dir / CERT_FILE

    def stop_stale(self) -> bool:
        """Stop an engine a killed controller left running on this serverDir; True if there was one."""
        pid_file = self.server_dir / PID_FILE
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            return False
        if pid != (self._process.pid if self._process else None) and _is_engine(pid, self.jobs_dir):
            log.warning("stopping crawl engine %d left running by an earlier controller on %s", pid, self.server_dir)
            _stop_group(pid, STOP_GRACE_SECONDS)
            pid_file.unlink(missing_ok=True)
            return True
        pid_file.unlink(missing_ok=True)
        return False

    def start(self) -> str:
        """Start the engine and return its URL once it answers.

        :raise HeritrixError: it exited or printed no URL within the start timeout (its error output is
            quoted).
        """
        self.stop_stale()
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        auth = self.server_dir / AUTH_FILE
        descriptor = os.open(auth, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(f"{self.user}:{self.password}\n")
        command = [sys.executable, "-m", "harvester.engine.cli", "--jobs-dir", os.fspath(self.jobs_dir),
                   "--port", str(self.port), "--bind", self.bind, "--auth", f"@{auth}", "--stop-when-stdin-closes"]
        if self.hosts_file:
            command += ["--hosts", self.hosts_file]
        environment = {**os.environ, "PYTHONUNBUFFERED": "1",
                       ENV_PREFIX + "HARVESTSUITE__NETWORK__ALLOWDESTINATIONS": ",".join(self.allow_destinations)}
        if self.browser_settings is not None:
            command.append("--browser")
            environment.update({ENV_PREFIX + key.replace(".", "__").upper(): str(value)
                                for key, value in self.browser_settings.items()})
        out_path, err_path = self.server_dir / OUT_FILE, self.server_dir / ERR_FILE
        with open(out_path, "wb") as out, open(err_path, "ab") as err:
            self._process = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.PIPE,
                                             start_new_session=True, env=environment)
        (self.server_dir / PID_FILE).write_text(f"{self._process.pid}\n")
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            match = LISTENING.search(out_path.read_text(encoding="utf-8", errors="replace"))
            if match:
                self.url = match.group(1)
                log.info("crawl engine %d listening at %s", self._process.pid, self.url)
                return self.url
            if self._process.poll() is not None:
                raise HeritrixError(f"the crawl engine exited at start with code {self._process.returncode}: "
                                    f"{self._tail(err_path)}")
            time.sleep(0.1)
        self.stop()
        raise HeritrixError(f"the crawl engine printed no URL within {self.start_timeout:.0f} s: "
                            f"{self._tail(err_path)}")

    def is_alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def exit_description(self) -> str:
        """Why the engine is gone, for the job's errors."""
        if self._process is None:
            return "the crawl engine was never started"
        code = self._process.poll()
        if code is None:
            return "the crawl engine is running"
        how = f"was killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        return f"the crawl engine (pid {self._process.pid}) {how}: {self._tail(self.server_dir / ERR_FILE)}"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace time; idempotent."""
        if self._process is not None and self._process.poll() is None:
            _stop_group(self._process.pid, STOP_GRACE_SECONDS, self._process)
        if self._process is not None and self._process.stdin is not None:
            self._process.stdin.close()
        (self.server_dir / PID_FILE).unlink(missing_ok=True)
        (self.server_dir / AUTH_FILE).unlink(missing_ok=True)

    @staticmethod
    def _tail(path: Path, lines: int = 5) -> str:
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return "(no error output)"
        return " | ".join(text[-lines:]) or "(no error output)"
