"""Two `harvestsuite scheduler run` processes on one database: one leads, the other waits; killed with
SIGKILL, the leader is replaced once its lease runs out (leaderLeaseTime 4 s here), on SQLite and
PostgreSQL."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from tests.scheduler.factories import make_domain, make_selective

ROOT = Path(__file__).resolve().parent.parent.parent
LEADS = "running as the leader"
WAITS = "another scheduler is the leader on this database; waiting to take over"


class SchedulerProcess:
    def __init__(self, database_url: str, queue_path: Path, extra: dict[str, str] | None = None) -> None:
        settings = {
            "harvestsuite.database.url": database_url, "harvestsuite.queue.url": f"sqlite:///{queue_path}",
            "harvester.scheduler.jobgenerationperiod": "1", "harvestsuite.scheduler.leaderLeaseTime": "4",
            "harvester.scheduler.jobGen.config.postponeUnregisteredChannel": "false",
            **(extra or {}),
        }
        arguments = [item for key, value in settings.items() for item in ("--set", f"{key}={value}")]
        self.process = subprocess.Popen([sys.executable, "-m", "harvestdef", *arguments, "scheduler", "run"],
                                        cwd=ROOT, stderr=subprocess.PIPE, text=True, env={**os.environ})
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line)

    def first_of(self, texts: tuple[str, ...], seconds: float) -> str | None:
        """Which of ``texts`` the process says first on stderr (from where the last call stopped reading);
        None if it says none of them within ``seconds``."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            for text in texts:
                if text in line:
                    return text
        return None

    def leads_within(self, seconds: float) -> bool:
        return self.first_of((LEADS,), seconds) == LEADS

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


def test_the_second_scheduler_takes_over_when_the_leader_is_killed(engine, database_url, tmp_path):
    with engine.begin() as conn:
        make_selective(conn, 1, "daily", [make_domain(conn, "a.dk")[1]], nextdate=utcnow() - timedelta(minutes=1))
    first = SchedulerProcess(database_url, tmp_path / "queue.db")
    second = None
    try:
        assert first.leads_within(60), "the first scheduler never led"
        second = SchedulerProcess(database_url, tmp_path / "queue.db")
        # it tried the lock the leader holds, and waits: it says so, and not that it leads, then goes on
        # waiting through two of the leader's 4 s leases (a slow machine only makes a takeover later; a
        # shorter lease lets a leader starved of CPU by its neighbours miss a renewal and step down)
        assert second.first_of((WAITS, LEADS), 60) == WAITS, "two schedulers led at once"
        assert not second.leads_within(8), "two schedulers led at once"
        deadline = time.monotonic() + 60
        with engine.connect() as conn:
            while conn.scalar(select(func.count()).select_from(s.jobs)) == 0:
                conn.rollback()
                assert time.monotonic() < deadline, "the leader's tick made no jobs"
                time.sleep(0.2)
        first.process.kill()  # SIGKILL: no release of its lock
        # On SQLite the lock row lives out its lease of 4 s; with the default lease (60 s) the takeover would
        # take about a minute, so within 40 s it was this lease that ran out (on PostgreSQL the lock goes
        # with the killed process's session).
        assert second.leads_within(40), "the second scheduler did not take over"
    finally:
        first.stop()
        if second is not None:
            second.stop()
