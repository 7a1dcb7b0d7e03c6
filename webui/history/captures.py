"""What the history pages link to in the replay service: each run of a configuration that captured something,
as its configuration's first seed at the start of its job (webui/replaylinks.py makes the links from these;
with no replay URL set it makes none).

A run counts as captured when it has a job that started, objects, and no nothing-harvested finding: the
domain report gives a configuration that finding when none of its seeds answered 200-399 (harvester/
postprocess/domainreport.py), so a link never leads to a seed that only failed, and a run that got nothing
shows no link at all. pywb answers a capture link with the capture nearest the timestamp, so the job's
start finds that job's capture of the seed.

Read with direct, read-only queries of the few configurations and jobs one page shows, as the history pages
read their statistics: a lookup by key per table, never a scan of historyinfo.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from harvestdef.db import schema as s
from harvestdef.seeds import seed_lines

# Enough of a seed list's text for its first seed: a seed is at most 2083 characters (harvestdef/seeds.py),
# and a list's first lines are seldom comments.
SEED_TEXT_READ = 8192


@dataclass(frozen=True)
class Run:
    """One run of a configuration as a page shows it: the historyinfo row's keys and object count."""

    domain: str
    configuration: str
    job_id: int | None
    objects: int


@dataclass(frozen=True)
class RunCapture:
    """A run that captured something: the seed to replay and the moment to replay it at."""

    seed: str
    started: datetime


RunKey = tuple[str, str, int]  # domain, configuration, job id


def captured_runs(conn: Connection, runs: Iterable[Run]) -> dict[RunKey, RunCapture]:
    """The runs among ``runs`` that captured something, by (domain, configuration, job id)."""
    candidates = [run for run in runs if run.job_id is not None and run.objects > 0]
    if not candidates:
        return {}
    config_ids = _config_ids(conn, {(run.domain, run.configuration) for run in candidates})
    job_ids = {run.job_id for run in candidates}
    seeds = _first_seeds(conn, set(config_ids.values()))
    started = dict(conn.execute(select(s.jobs.c.job_id, s.jobs.c.startdate).where(
        s.jobs.c.job_id.in_(job_ids), s.jobs.c.startdate.is_not(None))).all())
    f = s.harvest_findings
    got_nothing = {(row.job_id, row.config_id) for row in conn.execute(
        select(f.c.job_id, f.c.config_id).where(f.c.job_id.in_(job_ids), f.c.config_id.in_(config_ids.values())))}
    captures = {}
    for run in candidates:
        config_id = config_ids.get((run.domain, run.configuration))
        if config_id is None or (run.job_id, config_id) in got_nothing:
            continue
        seed, moment = seeds.get(config_id), started.get(run.job_id)
        if seed is not None and moment is not None:
            captures[(run.domain, run.configuration, run.job_id)] = RunCapture(seed, moment)
    return captures


def latest_captured_run(conn: Connection, domain: str) -> Run | None:
    """The domain's newest run that captured something (by the rules above), or None."""
    h, c, d, f = s.historyinfo, s.configurations, s.domains, s.harvest_findings
    row = conn.execute(
        select(c.c.name, h.c.job_id, h.c.objectcount)
        .select_from(h.join(c, c.c.config_id == h.c.config_id).join(d, d.c.domain_id == c.c.domain_id)
                     .outerjoin(f, f.c.historyinfo_id == h.c.historyinfo_id))
        .where(d.c.name == domain, h.c.objectcount > 0, h.c.job_id.is_not(None), f.c.historyinfo_id.is_(None))
        .order_by(h.c.historyinfo_id.desc()).limit(1)).first()
    return None if row is None else Run(domain, row.name, row.job_id, row.objectcount)


def _config_ids(conn: Connection, pairs: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    c, d = s.configurations, s.domains
    rows = conn.execute(select(d.c.name.label("domain"), c.c.name, c.c.config_id)
                        .select_from(c.join(d, d.c.domain_id == c.c.domain_id))
                        .where(d.c.name.in_({domain for domain, _ in pairs}),
                               c.c.name.in_({name for _, name in pairs})))
    return {(row.domain, row.name): row.config_id for row in rows if (row.domain, row.name) in pairs}


def _first_seeds(conn: Connection, config_ids: set[int]) -> dict[int, str]:
    """Each configuration's first seed: the first of its seed lists (by id) that has one."""
    cs, sl = s.config_seedlists, s.seedlists
    rows = conn.execute(select(cs.c.config_id, func.substr(sl.c.seeds, 1, SEED_TEXT_READ).label("text"))
                        .select_from(cs.join(sl, sl.c.seedlist_id == cs.c.seedlist_id))
                        .where(cs.c.config_id.in_(config_ids)).order_by(cs.c.config_id, sl.c.seedlist_id))
    seeds: dict[int, str] = {}
    for row in rows:
        if row.config_id in seeds:
            continue
        text = row.text or ""
        if len(text) == SEED_TEXT_READ:
            text = text.rsplit("\n", 1)[0]  # a line cut short is no seed
        found = seed_lines(text)
        if found:
            seeds[row.config_id] = found[0]
    return seeds
