"""`harvestsuite demo` through a harvest database held by another writer for longer than the scheduler's
lease (10 s in the demo): its scheduler steps down and leads again, the harvests go on, and one Ctrl-C
ends it, also while the database is held. A real demo process, started with SIGINT at its default as
from a terminal."""

from __future__ import annotations

import sys

from tests.dblocks import sqlite_write_lock as write_lock_held
from tests.harvestdef.test_bulkimport import as_from_a_terminal
from tests.harvestdef.test_demo import DemoProcess, free_port

STEPPED_DOWN = "leadership lost; this scheduler stopped acting and waits to lead again"


def test_the_demo_survives_a_lock_longer_than_the_lease_and_one_ctrl_c_ends_it(tmp_path):
    directory, port, log = tmp_path / "demo", free_port(), tmp_path / "demo.log"
    command = as_from_a_terminal([sys.executable, "-m", "harvestdef", "demo", "--dir", str(directory), "--port",
                                  str(port), "--pywb-venv", str(tmp_path / "no-pywb")])
    demo = DemoProcess(directory, port, log, command=command)
    try:
        demo.wait_for(r"scheduler: running as the leader", 60)
        demo.wait_for(r"crawling on harvest controller", 150)
        with write_lock_held(directory / "harvest.db"):
            # held until the lease of 10 s has run out without a renewal and the scheduler has stepped down
            demo.wait_for(STEPPED_DOWN, 120)
        # the database answers again: the scheduler leads again and the harvests go on
        demo.wait_for(r"waits to lead again[\s\S]*scheduler: running as the leader", 60)
        demo.wait_for(r"waits to lead again[\s\S]*\) DONE: \d+ objects", 150)
        text = demo.text()
        assert "the demo stopped because" not in text and "ended by itself" not in text, text
        # one Ctrl-C ends it, even while another writer holds the database
        with write_lock_held(directory / "harvest.db"):
            # within harvestsuite.demo.stopTimeout (120 s) and its margin, whatever the roles were waiting for
            assert demo.interrupt(timeout=180) == 0
        assert "stopped; `" in demo.text()
    finally:
        demo.kill()
