"""The whole system with the engine killed (-9) mid-crawl: the controller post-processes what it left, and the
objects historyinfo counts are the captures in the stored WARCs, which `warcio check` passes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvestdef.model.status import JobStatus
from tests.harvester.test_controller_failures import crawled_lines, slow_template, wait_for


def _captures(warcs: list[Path]) -> int:
    count = 0
    for path in warcs:
        with path.open("rb") as handle:
            count += sum(1 for record in ArchiveIterator(handle, no_record_parse=True)
                         if record.rec_type in ("response", "revisit"))
    return count


def test_a_killed_engine_leaves_historyinfo_counting_what_the_archive_holds(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler()
    h.start_controller()
    wait_for(lambda: crawled_lines(h.server_dir) >= 8, 60, "eight crawl.log lines")
    os.kill(int((h.server_dir / "engine.pid").read_text()), signal.SIGKILL)
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.FAILED
    stored = sorted(p for p in (h.archive / str(harvest_id) / str(job.job_id)).glob("*.warc.gz")
                    if "metadata" not in p.name)
    assert stored
    captures = _captures(stored)
    assert captures >= 6
    (row,) = h.history(job.job_id)
    assert row.objectcount == captures, job.harvest_errors
    for path in stored:
        checked = subprocess.run([str(Path(sys.executable).parent / "warcio"), "check", "-v", str(path)],
                                 capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, checked.stdout + checked.stderr
