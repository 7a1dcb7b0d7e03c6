"""What the demo prints: its narrator's lines from the harvest database (the first-harvest hint once per demo
directory, a job resumed after a restart, counts in the number they need), and one log format, every line
with its time, for the story, the roles' own lines and other modules' log records alike."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from datetime import UTC, datetime

from sqlalchemy import insert, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.demo.narrator import Narrator
from harvestdef.messages import JobEvent
from harvestdef.model.status import JobStatus, StopReason
from tests.webui.test_nothing_harvested import CONTROLLER, started_job, transport  # noqa: F401 - a fixture

SEEDS = {domain: f"http://www.{domain}/" for domain in ("good.dk", "forbidden.dk", "dead.invalid")}
WEB = "http://127.0.0.1:8080"


def told(caplog) -> list[str]:  # noqa: ANN001 - pytest's fixture
    return [record.getMessage() for record in caplog.records if record.name == "harvestsuite.demo"]


def finish(engine, job_id: int, objects: int, duplicates: int) -> None:  # noqa: ANN001
    """The job DONE with one domain's figures, as the scheduler's intake writes them."""
    with engine.begin() as conn:
        config = conn.scalar(s.job_configs.select().with_only_columns(s.job_configs.c.config_id)
                             .where(s.job_configs.c.job_id == job_id).limit(1))
        conn.execute(insert(s.historyinfo).values(
            stopreason=int(StopReason.DOWNLOAD_COMPLETE), objectcount=objects, bytecount=1000, config_id=config,
            harvest_id=1, job_id=job_id, harvest_time=utcnow(), duplicate_objects=duplicates))
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(status=int(JobStatus.DONE)))


def test_the_first_harvest_hint_is_said_once_per_demo_directory(engine, transport, tmp_path, caplog):  # noqa: F811
    caplog.set_level(logging.INFO, logger="harvestsuite.demo")
    job_id, _, _ = started_job(engine, transport, SEEDS)
    first = Narrator(engine, WEB, tmp_path)
    first.start()
    finish(engine, job_id, objects=1, duplicates=1)
    first.look()
    lines = told(caplog)
    done = next(line for line in lines if " DONE: " in line)
    # one of each, said as one
    assert "DONE: 1 object, 1.0 KB from 1 domain (1 DOWNLOAD_COMPLETE), 1 of them a payload archived before " \
           "(a revisit record, not stored again)" in done, done
    assert sum("the first harvest is in" in line for line in lines) == 1

    # the demo stopped and started again in the same directory: its first harvest is in already
    caplog.clear()
    again = Narrator(engine, WEB, tmp_path)
    again.start()
    # the next job of the story: the same job made to run again, its figures of before gone
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(status=int(JobStatus.STARTED)))
        conn.execute(s.historyinfo.delete().where(s.historyinfo.c.job_id == job_id))
    again._seen[job_id] = JobStatus.STARTED  # watched, as a job unfinished at the start is
    finish(engine, job_id, objects=3, duplicates=0)
    again.look()
    lines = told(caplog)
    assert any("DONE: 3 objects, 1.0 KB from 1 domain" in line for line in lines), lines
    assert not any("the first harvest is in" in line for line in lines), lines


def test_a_job_resumed_after_a_restart_is_told(engine, transport, tmp_path, caplog):  # noqa: F811
    caplog.set_level(logging.INFO, logger="harvestsuite.demo")
    job_id, attempt, handle = started_job(engine, transport, SEEDS)
    before = datetime(2026, 12, 1, 10, 0, tzinfo=UTC).isoformat()
    assert handle(JobEvent(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, kind="checkpoint",
                           checkpoint="cp00001-20261201100000", happened_at=before))
    narrator = Narrator(engine, WEB, tmp_path)
    narrator.start()  # the demo runs again; the job STARTED in the earlier run is taken up by its controller
    narrator.look()
    assert not [line for line in told(caplog) if "resumed" in line]
    assert handle(JobEvent(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, kind="resume",
                           checkpoint="cp00001-20261201100000", happened_at=utcnow().isoformat()))
    narrator.look()
    narrator.look()  # told once
    assert [line for line in told(caplog) if "resumed" in line] == [
        f"resumed job {job_id} (daily, run 1) from its checkpoint cp00001-20261201100000 on harvest controller "
        f"{CONTROLLER}: {WEB}/status/jobs/{job_id}"]


# What the demo's process prints while it runs: the story, a role's own line, another module's warning and a
# line written in two pieces, all through the demo's one log.
ONE_LOG = """
import logging, sys
import click
logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
from harvestdef.demo.runner import log, one_log
with one_log():
    log.info("job 1 (News and local history, run 1) made by the scheduler")
    click.echo("qa: 1 job done, 2 thumbnails made", err=True)
    logging.getLogger("harvester.commands").warning("the harvest controller stops after the current step")
    sys.stderr.write("harvest controller ctl-1 ")
    sys.stderr.write("stopped\\n")
click.echo("after the demo", err=True)
"""


def test_every_line_the_demo_prints_has_its_time_in_one_format():
    done = subprocess.run([sys.executable, "-c", ONE_LOG], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 5, lines
    stamp = r"\d\d:\d\d:\d\d "
    assert [re.sub(f"^{stamp}", "", line) for line in lines[:4]] == [
        "job 1 (News and local history, run 1) made by the scheduler",
        "qa: 1 job done, 2 thumbnails made",
        "WARNING harvester.commands: the harvest controller stops after the current step",
        "harvest controller ctl-1 stopped"]
    assert all(re.match(stamp, line) for line in lines[:4]), lines
    assert lines[4] == "after the demo", "the demo's format ends with the demo"
