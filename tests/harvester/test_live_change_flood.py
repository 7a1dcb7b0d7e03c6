"""A flood of live changes to a running crawl, with real processes: the scheduler (a thread), a harvest
controller process, its bundled engine, RabbitMQ and the local test site (see conftest.py).

Hundreds of reject rules wait in the controller's durable control queue, and a pause behind them: the
controller carries out the pause first, then the rules in few scripts, each rule answered on its own. What
happened is read from what the controller and the engine wrote: the job directory's changes.jsonl (the
order the controller handled the changes in) and the engine's job.log (one line per script it ran, with
the number of changes in it), not from a clock.
"""

from __future__ import annotations

import json
import re

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.livechanges import APPLIED, REFUSED
from harvestdef.repositories.jobchanges import JobChangeRepository
from tests.harvester.test_controller_failures import wait_for
from tests.harvester.test_live_steering import change, crawler_status, job_with_its_controller_away, settled

RULES = 300


def unsent(h, job_id: int) -> int:
    with h.engine.connect() as conn:
        return conn.scalar(select(s.job_changes.c.version).where(
            s.job_changes.c.job_id == job_id, s.job_changes.c.sent_at.is_(None)).limit(1))


def test_a_pause_behind_a_flood_of_rules_is_carried_out_first_and_the_rules_in_few_scripts(harvesting):
    h, harvest_id, job_id, directory = job_with_its_controller_away(harvesting, "flooded")

    # the rules are sent while the controller is away, then the pause: it waits behind them in the queue.
    # Amid them, an unreject of a rule there is not: the crawler refuses it, and the rules after it still go.
    with write_transaction(h.engine) as conn:
        changes = JobChangeRepository(conn)
        rules = [changes.add(job_id, "reject", {"regex": f".*/flood-{number}/.*"}, "ops1", utcnow()).version
                 for number in range(RULES // 2)]
        refused = changes.add(job_id, "unreject", {"regex": ".*/never-added/.*"}, "ops1", utcnow()).version
        rules += [changes.add(job_id, "reject", {"regex": f".*/flood-{number}/.*"}, "ops1", utcnow()).version
                  for number in range(RULES // 2, RULES)]
    wait_for(lambda: unsent(h, job_id) is None, 60, "the rules sent to the control queue")
    pause = change(h, job_id, "pause")
    wait_for(lambda: unsent(h, job_id) is None, 60, "the pause sent behind them")

    second = h.start_controller("second")
    assert settled(h, job_id, pause, 60).state == APPLIED
    answers = [settled(h, job_id, version, 60) for version in rules]
    assert {answer.state for answer in answers} == {APPLIED}, [a for a in answers if a.state != APPLIED][:3]
    assert answers[7].reason == "reject rule added: .*/flood-7/.*", answers[7]
    unrejected = settled(h, job_id, refused, 60)
    assert unrejected.state == REFUSED and "no reject rule .*/never-added/.*" in unrejected.reason, unrejected
    wait_for(lambda: crawler_status(h, job_id) == "CRAWLER_PAUSED", 30, "the crawler paused")

    handled = [json.loads(line)["version"] for line in (directory / "changes.jsonl").read_text().splitlines()]
    assert handled == [pause, *sorted([*rules, refused])], "the pause first, then the rules in version order"
    job_log = "".join(path.read_text(encoding="utf-8") for path in directory.glob("**/job.log"))
    per_script = [int(carried or failed) for carried, failed in re.findall(
        r"Script carried out: \d+ calls, (\d+) changes|Script failed after (\d+) changes carried out", job_log)]
    assert sum(per_script) == RULES, per_script
    # many changes in one round: a script carries at least a hundred of them (the engine's own count); the
    # script that failed on the unreject applied the rules before it, and the rest went in a script after it
    assert max(per_script) >= 100 and len(per_script) < RULES // 10, per_script
    assert per_script == [RULES // 2, RULES // 2], per_script
    events = "".join(path.read_text(encoding="utf-8") for path in directory.glob("[0-9]*/logs/scripting_events.log"))
    assert events.count("Added a reject rule matching regex '.*/flood-") == RULES

    stop = change(h, job_id, "stop")
    assert settled(h, job_id, stop, 60).state == APPLIED, second.text()[-3000:]
    h.wait_for_jobs(harvest_id, timeout=120)
