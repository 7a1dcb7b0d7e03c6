"""The replay service: pywb's ``wayback`` server as a child process over the archive store.

``ReplayService.run`` writes pywb's working directory (``layout``), starts ``wayback`` from pywb's own
virtual environment on the configured address, then keeps the layout in step with the store every sync
interval until its stop event is set or the child exits. Stopping terminates the child (SIGTERM, then
SIGKILL after a grace period), so Ctrl-C or a systemd stop never leaves pywb running; ``kill`` is for a
process that exits at once without waiting for ``run`` to return.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from harvestdef.errors import ReplayError
from harvestdef.replay.environment import is_ready, wayback_path
from harvestdef.replay.layout import ReplayLayout

if TYPE_CHECKING:
    from harvestdef.settings import Settings

STOP_TIMEOUT = 10.0
LOG_FILE = "wayback.log"
log = logging.getLogger("harvestsuite.replay")


class ReplayService:
    """pywb from ``venv`` serving ``layout`` on ``bind``:``port``."""

    def __init__(self, layout: ReplayLayout, venv: Path, bind: str, port: int, sync_interval: float) -> None:
        self.layout = layout
        self.venv = Path(venv).absolute()
        self.bind = bind
        self.port = port
        self.sync_interval = sync_interval
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ReplayService:
        replay = settings.replay
        return cls(ReplayLayout(Path(settings.archive.root), Path(replay.workDir)), Path(replay.pywbVenv),
                   replay.bind, replay.port, replay.syncIntervalMs / 1000)

    def check(self) -> None:
        """:raise ReplayError: pywb's environment is missing or incomplete, saying how to build it."""
        if not is_ready(self.venv):
            raise ReplayError(f"no pywb environment at {self.venv}: build it with `harvestsuite replay install` "
                              "(scripts/setup.sh does), or point harvestsuite.replay.pywbVenv at one")

    def run(self, stop: threading.Event) -> int:
        """Serve until ``stop`` is set (0) or pywb exits by itself (its exit status, at least 1)."""
        self.check()
        self.layout.write_config()
        self._sync()
        process = self._process = self._start()
        log.info("replay: pywb (pid %d) on http://%s:%d over %s; its output in %s", process.pid, self.bind,
                 self.port, self.layout.store_root, self.layout.work_dir / LOG_FILE)
        try:
            while not stop.wait(self.sync_interval):
                if process.poll() is not None:
                    log.error("replay: pywb exited %d; see %s", process.returncode,
                              self.layout.work_dir / LOG_FILE)
                    return process.returncode or 1
                self._sync()
            return 0
        finally:
            _stop(process)

    def kill(self) -> None:
        """Kill pywb now, if it runs (its process exits with its parent's hard stop, never outliving it)."""
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()

    def _sync(self) -> None:
        try:
            result = self.layout.sync()
        except OSError as exc:
            # An unmounted store for a moment must not end replay; the next sync tries again.
            log.warning("replay: cannot read the archive store %s: %s", self.layout.store_root, exc)
            return
        if result.new_collections:
            log.info("replay: new collections %s", ", ".join(result.new_collections))
        if result.path_index_changed:
            log.info("replay: %d WARC files in the path index", result.warcs)

    def _start(self) -> subprocess.Popen[bytes]:
        # HarvestSuite's own Python paths must not leak into pywb's interpreter.
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
        command = [str(wayback_path(self.venv)), "--bind", self.bind, "--port", str(self.port)]
        try:
            with open(self.layout.work_dir / LOG_FILE, "ab") as output:
                return subprocess.Popen(command, cwd=self.layout.work_dir, env=env, stdin=subprocess.DEVNULL,
                                        stdout=output, stderr=subprocess.STDOUT)
        except OSError as exc:
            raise ReplayError(f"cannot start pywb ({command[0]}): {exc}") from exc


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)
