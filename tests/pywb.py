"""pywb, the web archive replay tool, as a local server over WARC files the tests wrote and indexed.

pywb lives in a virtual environment of its own, built once from PyPI by harvestdef.replay.environment (the
builder ``harvestsuite replay install`` uses) and kept under the user's cache
(``$XDG_CACHE_HOME`` or ``~/.cache``, ``harvestsuite-test/pywb-venv-<pywb version>-py<X.Y>``) or in
``HARVESTSUITE_PYWB_VENV``; its pinned dependencies never meet HarvestSuite's. A lock file beside the
environment lets one pytest process build it while the others wait. When pywb cannot be installed (no
network, no wheel for this platform) the calling test skips saying why; with CI=true it fails instead.

``pywb_server`` makes a pywb working directory with one collection, starts ``wayback`` on a free loopback
port and stops it afterwards; ``replay`` fetches a capture's original bytes through ``id_`` replay.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from harvestdef.errors import ReplayError
from harvestdef.replay.environment import PYWB_VERSION, ensure_environment, is_ready
from tests.servers import in_ci

VENV_ENV = "HARVESTSUITE_PYWB_VENV"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
PORT_ATTEMPTS = 3

# The reason the environment could not be built, once that was tried in this process.
_failed_builds: list[str] = []


def pywb_venv_dir() -> Path:
    configured = os.environ.get(VENV_ENV)
    if configured:
        return Path(configured).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    return cache / "harvestsuite-test" / f"pywb-venv-{PYWB_VERSION}-py{python}"


def cannot_run(reason: str) -> None:
    """Skip the calling test with ``reason``, or fail it under CI=true."""
    if in_ci():
        pytest.fail(f"{reason}; CI=true, so this is a failure, not a skip")
    pytest.skip(reason)


def _progress(message: str) -> None:
    print(f"pywb: {message}", file=sys.stderr, flush=True)


def pywb_venv() -> Path:
    """The virtual environment with pywb, built first if it is missing or incomplete."""
    venv = pywb_venv_dir()
    if is_ready(venv):
        return venv
    if _failed_builds:
        # One failed installation per test run is enough to know; the other tests give its reason.
        cannot_run(_failed_builds[0])
    try:
        return ensure_environment(venv, progress=_progress)
    except ReplayError as exc:
        _failed_builds.append(str(exc))
        cannot_run(str(exc))
        raise


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _link_all(files: Iterable[Path], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for path in files:
        (directory / path.name).symlink_to(Path(path).resolve())


def _answers(base_url: str) -> bool:
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=2)
    try:
        connection.request("GET", "/")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)


def _start(venv: Path, working_dir: Path, log_path: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    """Start wayback on a free port; the process and its base URL, or None if it lost the port."""
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [str(venv / "bin" / "wayback"), "--bind", "127.0.0.1", "--port", str(port)],
            cwd=working_dir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            if "Address already in use" in log_path.read_text(encoding="utf-8", errors="replace"):
                return None
            pytest.fail(f"wayback exited {process.returncode}; its output ({log_path}):\n{_tail(log_path)}")
        if _answers(base_url):
            return process, base_url
        time.sleep(0.1)
    _stop(process)
    pytest.fail(f"wayback did not answer at {base_url} within {START_TIMEOUT} s; its output:\n{_tail(log_path)}")


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


@contextmanager
def pywb_server(working_dir: Path, collection: str, cdxj_files: Iterable[Path],
                warc_files: Iterable[Path]) -> Iterator[str]:
    """Serve ``collection`` (indexes: ``cdxj_files``, archive: ``warc_files``) with pywb; yields its base URL.

    ``working_dir``, an empty directory, becomes pywb's working directory (``collections/<collection>/indexes``
    and ``archive`` hold symlinks to the given files; ``wayback.log`` the server's output). The CDXJ files
    must be sorted, and their ``filename`` fields name WARC files by base name. The server is stopped on
    leaving.
    """
    venv = pywb_venv()
    collection_dir = working_dir / "collections" / collection
    _link_all(cdxj_files, collection_dir / "indexes")
    _link_all(warc_files, collection_dir / "archive")
    # pywb prints an error and carries on with its defaults when config.yaml is missing.
    (working_dir / "config.yaml").write_text("collections_root: collections\n", encoding="utf-8")
    log_path = working_dir / "wayback.log"
    for _ in range(PORT_ATTEMPTS):
        started = _start(venv, working_dir, log_path)
        if started is not None:
            break
    else:
        pytest.fail(f"wayback found no free port in {PORT_ATTEMPTS} attempts; its output:\n{_tail(log_path)}")
    process, base_url = started
    try:
        yield base_url
    finally:
        _stop(process)


def replay(base_url: str, collection: str, timestamp14: str,
           url: str) -> tuple[int, http.client.HTTPMessage, bytes]:
    """Fetch ``<base_url>/<collection>/<timestamp14>id_/<url>``: status, headers and the original bytes.

    ``id_`` asks pywb for the capture as archived, without rewriting. Redirects (pywb answers one when the
    nearest capture has another timestamp) are returned, not followed.
    """
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("GET", f"/{collection}/{timestamp14}id_/{url}")
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()
