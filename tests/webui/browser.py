"""The web UI in a real browser: Debian's chromium driven by Playwright, against ``harvestsuite webui run``.

``ServedWebui`` starts the web UI as an operator would: ``harvestsuite webui run`` on a free port in its own
process, stopped at the end, on a SQLite harvest database made as ``harvestsuite db init`` and ``harvestsuite
users add`` make it, by the functions they call (init_database, UserRepository) in the test's process: those
commands have tests of their own (tests/harvestdef/test_cli.py), and a process of each per test cost a browser
test seconds of CPU. ``launch_chromium``
starts /usr/bin/chromium by its path: ``playwright install`` downloads a browser of its own, which this
project never does (scripts/setup.sh installs Debian's).

Without playwright or chromium the tests skip saying why, but only when CI is unset (tests/servers.py):
with CI=true they fail, since scripts/setup.sh installs both.
"""

from __future__ import annotations

import http.client
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from harvestdef.repositories.users import UserRepository
from tests.servers import in_ci
from tests.webui.conftest import PASSWORD, ROLES

CHROMIUM = os.environ.get("HARVESTSUITE_CHROMIUM", "/usr/bin/chromium")
# No sandbox (root in a container), no GPU, and nothing that reaches out to the network on its own.
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")
SCREENS = Path(os.environ.get("HARVESTSUITE_SCREENS", "/tmp/harvestsuite-screens"))
STARTUP_SECONDS = 30.0


def require_browser() -> None:
    """Skip (or, with CI=true, fail) unless playwright and chromium are both installed."""
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package playwright (pip install -e '.[test]')")
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"chromium at {CHROMIUM} (apt-get install chromium)")
    if not missing:
        return
    message = "browser tests need " + " and ".join(missing) + "; scripts/setup.sh installs both"
    if in_ci():
        pytest.fail(message + "; CI=true, so this is a failure, not a skip")
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServedWebui:
    """``harvestsuite webui run`` on a fresh SQLite harvest database in ``directory``; a context manager.

    ``url`` is where it answers; ``harvestsuite(*args)`` runs another command on the same database;
    ``settings`` are passed to every command with ``--set``.
    """

    def __init__(self, directory: Path, users: tuple[str, ...] = ROLES, settings: dict[str, str] | None = None
                 ) -> None:
        self.directory = directory
        self.users = users
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = directory / "webui.log"
        self._settings = ["--set", f"harvestsuite.database.url=sqlite:///{directory / 'harvest.db'}",
                          "--set", f"harvestsuite.archive.root={directory / 'archive'}"]
        for key, value in (settings or {}).items():
            self._settings += ["--set", f"{key}={value}"]
        self._process: subprocess.Popen[bytes] | None = None

    def harvestsuite(self, *args: str, stdin: str | None = None) -> str:
        """Run ``harvestsuite ARGS`` on this database; its stdout, or an assertion naming its stderr."""
        done = subprocess.run([sys.executable, "-m", "harvestdef", *self._settings, *args], input=stdin,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"harvestsuite {' '.join(args)} failed:\n{done.stderr}"
        return done.stdout

    def __enter__(self) -> ServedWebui:
        engine = open_engine(f"sqlite:///{self.directory / 'harvest.db'}")
        try:
            init_database(engine)
            with engine.begin() as conn:
                users = UserRepository(conn)
                for name in self.users:
                    users.create(name, name if name in ROLES else "curator", password=PASSWORD)
        finally:
            engine.dispose()
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "harvestdef", *self._settings,
                 "--set", f"harvestsuite.webui.secretKey={secrets.token_urlsafe(24)}",
                 "webui", "run", "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_until_it_answers()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_until_it_answers(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise AssertionError(f"harvestsuite webui run exited with {self._process.returncode}:\n"
                                     f"{self.log()}")
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            try:
                connection.request("GET", "/login")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            finally:
                connection.close()
            time.sleep(0.1)
        raise AssertionError(f"the web UI did not answer on {self.url} within {STARTUP_SECONDS} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __exit__(self, *exc_info: Any) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        self._process = None


def launch_chromium(playwright: Any) -> Any:
    """Debian's chromium, headless, by its executable path, in UTC whatever the machine's zone: the pages add
    the reader's own time beside a UTC time where the zones differ (static/times.js), so a test that wants
    another zone asks its context for it (``timezone_id``)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS),
                                      env={**os.environ, "TZ": "UTC"})


def log_in(page: Any, base_url: str, name: str, password: str = PASSWORD) -> None:
    """Fill in and send the login form as a person would."""
    page.goto(f"{base_url}/login")
    page.get_by_label("User").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()


def screenshot(page: Any, directory: Path, name: str) -> Path:
    """A full-page PNG in ``directory`` and a copy in /tmp/harvestsuite-screens to look at afterwards."""
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    SCREENS.mkdir(parents=True, exist_ok=True)
    (SCREENS / f"{name}.png").write_bytes(path.read_bytes())
    return path
