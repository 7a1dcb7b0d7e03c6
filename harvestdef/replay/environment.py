"""pywb's virtual environment: built once from PyPI with pinned requirements, then reused.

pywb 2.9.1 pins Werkzeug 2.2, which Flask 3 cannot share, so it never goes into HarvestSuite's own
environment. ``scripts/setup.sh`` builds it for a deployment (``harvestsuite replay install``) and the tests
build theirs under a cache directory; both through ``ensure_environment``. A lock file beside the
environment lets one process build it while others wait, and a marker written last means an interrupted
build is completed by the next one rather than taken as ready.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from harvestdef.errors import ReplayError

PYWB_VERSION = "2.9.1"
# pywb imports pkg_resources, which setuptools 81 and later no longer ship.
PYWB_REQUIREMENTS = (f"pywb=={PYWB_VERSION}", "setuptools<81")
READY_MARKER = "harvestsuite-pywb-ready"
INSTALL_TIMEOUT = 900.0


def wayback_path(venv: Path) -> Path:
    """pywb's server command inside ``venv``."""
    return venv / "bin" / "wayback"


def is_ready(venv: Path) -> bool:
    """Whether ``venv`` holds a completed build of exactly the pinned requirements."""
    marker = venv / READY_MARKER
    return marker.is_file() and marker.read_text(encoding="utf-8").split() == list(PYWB_REQUIREMENTS)


def ensure_environment(venv: Path, progress: Callable[[str], None] = lambda message: None) -> Path:
    """``venv`` with pywb installed, built first when missing or incomplete.

    :raise ReplayError: the build failed (no network, no wheel for this platform), with pip's errors.
    """
    venv = Path(venv).absolute()
    if is_ready(venv):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # Another process may have finished the build while this one waited for the lock.
        if not is_ready(venv):
            _build(venv, progress)
    return venv


def _build(venv: Path, progress: Callable[[str], None]) -> None:
    started = time.monotonic()
    progress(f"building the environment {venv} ({' '.join(PYWB_REQUIREMENTS)}); done once, then reused")
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
         *PYWB_REQUIREMENTS],
        [str(wayback_path(venv)), "--version"],
    ]
    for command in steps:
        shown = " ".join(command[:4])
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise ReplayError(f"pywb {PYWB_VERSION} could not be installed: {shown} took over "
                              f"{INSTALL_TIMEOUT:.0f} s") from None
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip().splitlines()
            errors = [line for line in output if "ERROR" in line] or output[-5:]
            raise ReplayError(f"pywb {PYWB_VERSION} could not be installed into {venv}: {shown} exited "
                              f"{result.returncode}: {' | '.join(errors)}")
    (venv / READY_MARKER).write_text("\n".join(PYWB_REQUIREMENTS) + "\n", encoding="utf-8")
    progress(f"environment ready after {time.monotonic() - started:.0f} s")
