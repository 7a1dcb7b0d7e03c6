"""``--stop-when-stdin-closes``: the engine stops as at SIGTERM when the pipe of whoever started it closes,
and only with the option: an engine started by hand runs on whatever its standard input is."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.engine.engine_process import PASSWORD, USER
from tests.engine.site import wait_for

LISTENING = re.compile(r"Engine listening at https://")


def start_engine(jobs_dir: Path, stdin: int, *options: str) -> tuple[subprocess.Popen[bytes], Path]:
    out = jobs_dir.parent / f"{jobs_dir.name}.out"
    command = [sys.executable, "-m", "harvester.engine.cli", "--jobs-dir", str(jobs_dir), "--port", "0",
               "--auth", f"{USER}:{PASSWORD}", *options]
    with open(out, "wb") as handle:
        process = subprocess.Popen(command, stdin=stdin, stdout=handle, stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return process, out


def is_listening(out: Path) -> bool:
    return bool(LISTENING.search(out.read_text(encoding="utf-8", errors="replace")))


def test_the_engine_stops_when_its_pipe_closes_and_only_when_asked_to(tmp_path: Path) -> None:
    watched, watched_out = start_engine(tmp_path / "watched", subprocess.PIPE, "--stop-when-stdin-closes")
    by_hand, by_hand_out = start_engine(tmp_path / "by-hand", subprocess.DEVNULL)
    try:
        assert wait_for(lambda: is_listening(watched_out) and is_listening(by_hand_out), 30)
        assert watched.poll() is None, "an open pipe keeps it running"
        assert watched.stdin is not None
        watched.stdin.close()
        assert watched.wait(timeout=20) == 0
        text = watched_out.read_text(encoding="utf-8")
        assert "standard input closed" in text and "Engine stopped" in text
        # Started without the option on /dev/null (end of file at once), and still serving.
        assert by_hand.poll() is None
    finally:
        for process in (watched, by_hand):
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=60)
