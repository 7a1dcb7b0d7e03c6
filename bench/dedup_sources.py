"""Deduplication-sources benchmark on PostgreSQL: the scheduler's decision for a national snapshot step's jobs
against the database's and the archive store's own floor.

Builds a fresh database (``init_database``), all of it generated inside PostgreSQL with generate_series:

* N domains (default 2,000,000), one configuration each;
* a chain of ``--steps`` earlier snapshot steps (default 10), linked by previoushd, each of
  ``--jobs-per-step`` DONE jobs (default 200) that share out all the domains (10,000 each by default), so
  each step writes N job_configs rows. Which job holds a domain changes from step to step, as job splitting
  moves domains between jobs: step k puts domain i in job ``((a_k * i + b_k) mod N) * jobs / N``, a
  permutation of its own for every step (a_k prime to N), so a new job's domains come from every job of the
  step before;
* the next step: as many NEW jobs sharing out the domains the same way (with its own permutation);
* an archive store in a temporary directory (``--store`` to choose the parent) holding
  ``<harvest_id>/<job_id>/dedup/<job_id>.gz`` (empty: only its existence is asked) for every earlier job
  but ``--missing-per-step`` of each step (default 3), whose domains the decision passes over for the step
  before; with one step of history those domains are not covered.

The history grows in phases, newest step first, so that one build times the decision at each number of
steps in ``--history`` (default 1,3,10, capped at ``--steps``): the steps of a phase are loaded with
job_configs' indexes set aside and rebuilt, then VACUUM ANALYZE, and the job_dedup_sources rows of the
phase before are deleted. In each phase it times, in a child process so that its peak RSS is its own,
exactly what the tick does for the run (scheduler/tick.py, ``_index_runs``)::

    with write_transaction(engine) as conn:
        candidates = chain_jobs(conn, HarvestRun(new_step, 1), snapshot=True)
        JobReadiness(store, Notifier(), 70).run_note(conn, new_step, 1, candidates, StoredEntries(store))

with the time of each ``find_run_sources`` call (all the run's jobs at once, one statement per pass), taken by a
wrapper around it. Then it times the floor of the same work on the same data: (i) the bare read of the same
(domain, earlier job, harvest, status) rows the decision reads, ``COPY (SELECT … job_configs →
configurations → the domains' configurations → their job_configs → jobs of the chain) TO '/dev/null'``, in
one statement for all the jobs and once per job, and (ii) the archive store's existence checks alone:
``ArchiveStore.has`` for the jobs the decision asked about. The decision joins in bulk only the rows of the
newest candidates, as many as the jobs (and looks up by key the few domains that find none there), so its
ratio is its wall time over the one-statement read of those rows plus the store checks; the ratios to the
reads of every row are shown beside. It checks
completeness: every new job has its ready row, and each row's domains, domains with history, covered
domains, sources and jobs without entries equal the ones the model above gives, computed in Python from
the permutations and the missing jobs, not from the database; the rows, jobs and job_configs counts are read
back from the database. It prints the client's peak RSS (VmHWM), the peak private memory of the database's
backends (bench/jobgen.py's ServerMemory) and the bytes PostgreSQL spilled into temporary files during the
decision; first the date, command, machine (nproc, CPU model) and load average, and the load average again
with every phase.

Usage::

    python bench/dedup_sources.py                          # 2,000,000 domains, 10 earlier steps of 200 jobs
    python bench/dedup_sources.py --scale small            # 20,000 domains (100 per job): under a minute
    python bench/dedup_sources.py --steps 3 --history 3    # one phase only
    python bench/dedup_sources.py --keep                   # leave the database for a look afterwards

Target (the issue's, 2 cores): all the indexes of a 200-job step ready within 2 minutes after the step before
it ends; the scheduler's decision for the 200 jobs is part of that, so it should take a small part of it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.jobgen import ADMIN_URL, ServerMemory, peak_rss_mib  # noqa: E402
from harvestdef.archive import ArchiveStore  # noqa: E402
from harvestdef.bulkload import restore_constraints, set_aside_constraints  # noqa: E402
from harvestdef.db.engine import open_engine  # noqa: E402
from harvestdef.db.init import init_database  # noqa: E402
from harvestdef.dedup import entries_name  # noqa: E402
from harvestdef.model.status import JobStatus  # noqa: E402

THRESHOLD = 70  # satisfactorythresholdpercentage, NetarchiveSuite's default
HARVEST_NUM = 1  # a snapshot step's only run
TARGET_S = 120.0  # the issue's: a step's indexes ready within 2 minutes after the step before ends
SCALES = {"national": 2_000_000, "small": 20_000}


@dataclass(frozen=True)
class Model:
    """The generated history: which job of which step holds each domain, and which jobs' entries are missing.

    Steps are numbered 1..steps, the new step is steps + 1; step k is harvest definition k and its jobs are
    ``(k - 1) * jobs + position + 1``, so a later step's jobs have higher ids, as generated jobs do.
    """

    domains: int
    steps: int
    jobs: int
    missing_per_step: int

    def factor(self, step: int) -> tuple[int, int]:
        """(a, b) of step ``step``'s permutation i -> (a * i + b) mod N, a prime to N."""
        a = int(self.domains * (0.6180339887 * step % 1)) | 1
        while math.gcd(a, self.domains) != 1:
            a += 2
        return a % self.domains or 1, (step * 7919) % self.domains

    def position(self, step: int, domain_index: int) -> int:
        """The position (0..jobs-1) in its step of the job that holds domain ``domain_index + 1``."""
        a, b = self.factor(step)
        return ((a * domain_index + b) % self.domains) * self.jobs // self.domains

    def job_id(self, step: int, position: int) -> int:
        return (step - 1) * self.jobs + position + 1

    def missing(self, step: int) -> set[int]:
        """The positions of the jobs of ``step`` whose entries are not stored."""
        count = min(self.missing_per_step, self.jobs - 1)
        return {(step * 37 + n * 71) % self.jobs for n in range(count)}

    def expected(self, first_step: int) -> dict[int, dict]:
        """What each new job's row must say when the chain is steps ``first_step``..steps: computed from the
        permutations alone, walking back from the newest step past the jobs without entries."""
        new = self.steps + 1
        missing = {step: self.missing(step) for step in range(first_step, new)}
        rows = {self.job_id(new, p): {"domains": 0, "with_history": 0, "covered": 0, "sources": set(),
                                      "missing": set()} for p in range(self.jobs)}
        a_new, b_new = self.factor(new)
        factors = {step: self.factor(step) for step in range(first_step, new)}
        n, jobs = self.domains, self.jobs
        for i in range(n):
            row = rows[(new - 1) * jobs + ((a_new * i + b_new) % n) * jobs // n + 1]
            row["domains"] += 1
            row["with_history"] += 1
            for step in range(new - 1, first_step - 1, -1):
                a, b = factors[step]
                position = ((a * i + b) % n) * jobs // n
                if position not in missing[step]:
                    row["covered"] += 1
                    row["sources"].add((step, (step - 1) * jobs + position + 1))
                    break
            else:
                a, b = factors[new - 1]
                row["missing"].add((new - 2) * jobs + ((a * i + b) % n) * jobs // n + 1)
        return rows


# ---------------------------------------------------------------- building


def build_base(url: str, model: Model) -> None:
    """Domains, configurations and the new step's NEW jobs with their job_configs."""
    engine = open_engine(url)
    init_database(engine)
    with engine.begin() as conn:
        template = conn.scalar(text("SELECT template_id FROM ordertemplates WHERE name = 'default_orderxml'"))
        restore = set_aside_constraints(conn, ["domains", "configurations"], foreign_keys=False)
        conn.execute(text("SET LOCAL session_replication_role = replica"))  # defaultconfig <-> domain_id
        params = {"n": model.domains, "t": template}
        conn.execute(text("INSERT INTO domains (domain_id, name, defaultconfig, edition, isactive) "
                          "SELECT i, substr(md5(i::text), 1, 6) || '-' || i || '.dk', i, 1, true "
                          "FROM generate_series(1, :n) i"), params)
        conn.execute(text("INSERT INTO configurations (config_id, name, domain_id, template_id, maxobjects, "
                          "maxrate, maxbytes) SELECT i, 'defaultconfig', i, :t, -1, 100, 1000000000 "
                          "FROM generate_series(1, :n) i"), params)
        restore_constraints(conn, restore)
        for table, column in (("domains", "domain_id"), ("configurations", "config_id")):
            conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), :n)"), params)
        _add_step(conn, model, model.steps + 1, JobStatus.NEW)
    engine.dispose()


def add_steps(url: str, model: Model, steps: Sequence[int], store: ArchiveStore) -> None:
    """Earlier steps ``steps`` (each older than the oldest loaded so far), linked into the chain, with their
    entries files in ``store``; job_configs' secondary indexes are set aside for the load and rebuilt."""
    engine = open_engine(url)
    with engine.begin() as conn:
        # no foreign-key check per row: the generated rows refer to jobs made in the same transaction
        conn.execute(text("SET LOCAL session_replication_role = replica"))
        restore = set_aside_constraints(conn, ["job_configs"], foreign_keys=False)
        for step in sorted(steps, reverse=True):
            _add_step(conn, model, step, JobStatus.DONE)
            conn.execute(text("UPDATE fullharvests SET previoushd = :k WHERE harvest_id = :next"),
                         {"k": step, "next": step + 1})
        restore_constraints(conn, restore)
        conn.execute(text("DELETE FROM job_dedup_sources"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    engine.dispose()
    for step in steps:
        missing = model.missing(step)
        for position in range(model.jobs):
            if position in missing:
                continue
            job_id = model.job_id(step, position)
            path = store.job_path(step, job_id) / entries_name(job_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()


def _add_step(conn: Connection, model: Model, step: int, status: JobStatus) -> None:
    """Harvest definition ``step`` (previoushd NULL: the step before is linked when it is loaded), its jobs,
    and its job_configs in job order, as generation writes them."""
    a, b = model.factor(step)
    inverse = pow(a, -1, model.domains)
    params = {"k": step, "n": model.domains, "jobs": model.jobs, "status": int(status),
              "first": model.job_id(step, 0), "b": b, "inv": inverse}
    conn.execute(text("INSERT INTO harvestdefinitions (harvest_id, name, comments, numevents, submitted, "
                      "isactive, edition) VALUES (:k, 'broad-step-' || :k, '', 1, "
                      "timestamp '2016-01-01' + (:k - 1) * interval '6 months', true, 1)"), params)
    conn.execute(text("INSERT INTO fullharvests (harvest_id, maxobjects, previoushd, maxbytes, maxjobrunningtime, "
                      "isindexready) VALUES (:k, -1, NULL, 100000000, 0, true)"), params)
    conn.execute(text(
        "INSERT INTO jobs (job_id, harvest_id, status, channel, snapshot, orderxml, orderxmldoc, seedlist, "
        "harvest_num, num_configs, creationdate) SELECT :first + p, :k, :status, 'SNAPSHOT', true, "
        f"'default_orderxml', '', '', {HARVEST_NUM}, "
        "(:n * (p + 1) + :jobs - 1) / :jobs - (:n * p + :jobs - 1) / :jobs, now() "
        "FROM generate_series(CAST(0 AS bigint), :jobs - 1) p"), params)
    # Position p of the permutation is domain inverse * (p - b) mod N + 1; p in order is job order.
    conn.execute(text(
        "INSERT INTO job_configs (job_id, config_id) SELECT :first + (p * :jobs) / :n, "
        "((p - :b + :n) % :n) * :inv % :n + 1 FROM generate_series(CAST(0 AS bigint), :n - 1) p"), params)


# ---------------------------------------------------------------- timing


def run_decision(url: str, store_root: str, harvest_id: int) -> None:
    """Child process: decide the new step's jobs as the tick does and print the figures as JSON."""
    import scheduler.dedupsources as dedupsources
    from harvestdef.db.engine import write_transaction
    from scheduler.dedupsources import HarvestRun, JobReadiness, StoredEntries, chain_jobs
    from scheduler.notify import Notifier

    asked: list[tuple[int, int]] = []

    class CountingStore(ArchiveStore):
        def has(self, harvest_id: int, job_id: int, name: str) -> bool:
            asked.append((harvest_id, job_id))
            return super().has(harvest_id, job_id, name)

    calls: list[tuple[int, float]] = []
    decide = dedupsources.find_run_sources

    def timed_find(conn: Connection, job_ids: Sequence[int], *args: object) -> dict[int, dedupsources.JobSources]:
        started = time.perf_counter()
        found = decide(conn, job_ids, *args)
        calls.append((len(job_ids), time.perf_counter() - started))
        return found

    dedupsources.find_run_sources = timed_find  # run_note looks it up in the module at every call
    store = CountingStore(store_root)
    engine = open_engine(url)
    with engine.connect() as conn:  # the pool's first connection, not timed
        conn.execute(text("SELECT 1"))
    started = time.perf_counter()
    with write_transaction(engine) as conn:
        candidates = chain_jobs(conn, HarvestRun(harvest_id, HARVEST_NUM), snapshot=True)
        note = JobReadiness(store, Notifier(), THRESHOLD).run_note(conn, harvest_id, HARVEST_NUM, candidates,
                                                                   StoredEntries(store))
    seconds = time.perf_counter() - started
    engine.dispose()
    print(json.dumps({"seconds": seconds, "calls": calls, "asked": asked, "note": note,
                      "peak_rss_mib": peak_rss_mib()}))


def _temp_bytes(conn: Connection) -> int:
    conn.execute(text("SELECT pg_stat_clear_snapshot()"))
    return conn.scalar(text("SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")) or 0


def _pairs_query(own: str, chain: Sequence[int], by_key: bool) -> str:
    """The (domain, earlier job, harvest, status) rows of the jobs ``own`` (a condition on job_configs ojc)
    picks, without find_job_sources' counting (and without a DISTINCT: one configuration per domain, no row
    twice). ``by_key`` finds the jobs' domains by a lookup per configuration, the plan for one job; else by a
    join, which PostgreSQL hashes, the plan for all of them at once."""
    steps = ", ".join(str(step) for step in chain)
    if by_key:
        domains = ("SELECT DISTINCT ojc.job_id, (SELECT oc.domain_id FROM configurations oc "
                   f"WHERE oc.config_id = ojc.config_id) AS domain_id FROM job_configs ojc WHERE {own}")
    else:
        domains = ("SELECT DISTINCT ojc.job_id, oc.domain_id FROM job_configs ojc "
                   f"JOIN configurations oc ON oc.config_id = ojc.config_id WHERE {own}")
    return (f"SELECT own.domain_id, j.job_id, j.harvest_id, j.status FROM ({domains}) own "
            "JOIN configurations ec ON ec.domain_id = own.domain_id "
            "JOIN job_configs ejc ON ejc.config_id = ec.config_id JOIN jobs j ON j.job_id = ejc.job_id "
            f"WHERE j.harvest_id IN ({steps}) AND j.job_id <> own.job_id")


def floor(url: str, store_root: str, model: Model, chain: Sequence[int], asked: Sequence[tuple[int, int]]) -> dict:
    """The floor of the decision, in seconds: the one-statement read of the rows of the newest candidates (as
    many as the jobs), which the decision joins in bulk, and, beside it, the one-statement and per-job reads
    of every (domain, earlier job) row (COPY to /dev/null: only the server's work); and the store's existence
    checks of the jobs the decision asked."""
    new = model.steps + 1
    job_ids = [model.job_id(new, p) for p in range(model.jobs)]
    engine = open_engine(url)
    with engine.connect() as conn:
        started = time.perf_counter()
        for job_id in job_ids:
            one_job = _pairs_query(f"ojc.job_id = {job_id}", chain, by_key=True)
            conn.execute(text(f"COPY ({one_job}) TO '/dev/null'"))
        per_job = time.perf_counter() - started
        conn.commit()
        started = time.perf_counter()
        every = _pairs_query(f"ojc.job_id BETWEEN {job_ids[0]} AND {job_ids[-1]}", chain, by_key=False)
        conn.execute(text(f"COPY ({every}) TO '/dev/null'"))
        one = time.perf_counter() - started
        conn.commit()
        pairs = conn.scalar(text(f"SELECT count(*) FROM ({every}) pairs"))
        # the rows of the newest candidates, as many as the jobs: what find_run_sources joins in bulk
        steps = ", ".join(str(step) for step in chain)
        recent = conn.scalar(text(f"SELECT job_id FROM jobs WHERE harvest_id IN ({steps}) ORDER BY job_id DESC "
                                  f"OFFSET {len(job_ids) - 1} LIMIT 1"))
        newest = every + f" AND j.job_id >= {recent}"
        started = time.perf_counter()
        conn.execute(text(f"COPY ({newest}) TO '/dev/null'"))
        newest_read = time.perf_counter() - started
        conn.commit()
        newest_pairs = conn.scalar(text(f"SELECT count(*) FROM ({newest}) pairs"))
    engine.dispose()
    store = ArchiveStore(store_root)
    started = time.perf_counter()
    for harvest_id, job_id in asked:
        store.has(harvest_id, job_id, entries_name(job_id))
    checks = time.perf_counter() - started
    return {"read_per_job": per_job, "read_one": one, "read_newest": newest_read, "store": checks, "pairs": pairs,
            "newest_pairs": newest_pairs}


def check(url: str, model: Model, first_step: int) -> dict:
    """The rows, jobs and job_configs read back from the database, and the new jobs whose row differs from
    the model's."""
    from harvestdef.repositories.jobdedup import parse_sources
    from scheduler.dedupsources import parse_job_ids

    expected = model.expected(first_step)
    engine = open_engine(url)
    with engine.connect() as conn:
        rows = {row.job_id: row for row in conn.execute(text(
            "SELECT r.* FROM job_dedup_sources r JOIN jobs j ON j.job_id = r.job_id WHERE j.harvest_id = :h"),
            {"h": model.steps + 1})}
        jobs, job_configs = conn.execute(text(
            "SELECT count(DISTINCT j.job_id), count(*) FROM jobs j JOIN job_configs jc ON jc.job_id = j.job_id "
            "WHERE j.harvest_id BETWEEN :first AND :last"), {"first": first_step, "last": model.steps}).one()
    engine.dispose()
    wrong = []
    for job_id, want in expected.items():
        row = rows.get(job_id)
        got = None if row is None else {
            "ready": row.ready, "domains": row.domains, "with_history": row.with_history, "covered": row.covered,
            "sources": set(parse_sources(row.sources)), "missing": set(parse_job_ids(row.missing_job_ids or ""))}
        if got != {"ready": True, **want}:
            wrong.append(job_id)
    return {"rows": len(rows), "ready": sum(1 for row in rows.values() if row.ready), "wrong": wrong,
            "sources": sum(len(want["sources"]) for want in expected.values()),
            "covered": sum(row.covered for row in rows.values()),
            "with_history": sum(row.with_history for row in rows.values()),
            "earlier_jobs": jobs, "earlier_job_configs": job_configs}


def measure(url: str, admin_url: str, database: str, store_root: str, model: Model, history: int) -> dict:
    new = model.steps + 1
    first_step = new - history
    engine = open_engine(url)
    with engine.connect() as conn:
        spilled_before = _temp_bytes(conn)
    with ServerMemory(admin_url, database) as server:
        done = subprocess.run([sys.executable, __file__, "--run-decision", str(new), "--url", url,
                               "--store", store_root], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{history} steps: the decision failed\n{done.stderr}")
    with engine.connect() as conn:
        spilled = _temp_bytes(conn) - spilled_before
    engine.dispose()
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    floors = floor(url, store_root, model, range(first_step, new), figures["asked"])
    found = check(url, model, first_step)
    calls = figures["calls"]
    wall = figures["seconds"]
    base = floors["read_newest"] + floors["store"]
    row = {"history_steps": history, "jobs": sum(jobs for jobs, _ in calls), "wall_s": wall,
           "statements_s": [seconds for _, seconds in calls], "pairs": floors["pairs"],
           "newest_pairs": floors["newest_pairs"], "store_checks": len(figures["asked"]),
           "floor_read_newest_s": floors["read_newest"], "floor_read_one_statement_s": floors["read_one"],
           "floor_read_per_job_s": floors["read_per_job"], "floor_store_s": floors["store"], "floor_s": base,
           "ratio": wall / base, "ratio_one_statement": wall / (floors["read_one"] + floors["store"]),
           "ratio_per_job_read": wall / (floors["read_per_job"] + floors["store"]),
           "client_peak_rss_mib": figures["peak_rss_mib"], "server_peak_private_mib": server.peak_kib / 1024,
           "server_temp_mib": spilled / 2**20, "note": figures["note"], **found}
    complete = found["rows"] == found["ready"] == model.jobs and not found["wrong"]
    row["complete"] = complete
    print(f"{history} earlier steps ({found['earlier_jobs']} jobs, {found['earlier_job_configs']:,} job_configs): "
          f"decision for {row['jobs']} jobs {wall:.1f} s (target {TARGET_S:.0f} s for the whole step's indexes), "
          f"find_run_sources {' + '.join(f'{s:.1f}' for s in row['statements_s'])} s; read {row['pairs']:,} "
          f"(domain, earlier job) rows, {row['store_checks']} store checks", flush=True)
    print(f"    floor: the newest candidates' {floors['newest_pairs']:,} rows read in one statement "
          f"{floors['read_newest']:.1f} s + store checks {floors['store'] * 1000:.1f} ms = {base:.1f} s, ratio "
          f"{row['ratio']:.2f}; every row read in one statement {floors['read_one']:.1f} s (ratio "
          f"{row['ratio_one_statement']:.2f}), one job at a time {floors['read_per_job']:.1f} s (ratio "
          f"{row['ratio_per_job_read']:.2f})", flush=True)
    print(f"    rows read back: {found['rows']} ({found['ready']} ready), {found['with_history']:,} domains with "
          f"history, {found['covered']:,} covered, {found['sources']:,} sources expected; "
          f"{'all as the model says' if complete else 'NOT as the model says: jobs ' + str(found['wrong'][:10])}; "
          f"note {figures['note']!r}", flush=True)
    print(f"    client peak RSS {row['client_peak_rss_mib']:.0f} MiB, server peak private "
          f"{row['server_peak_private_mib']:.0f} MiB, PostgreSQL temp files {row['server_temp_mib']:.0f} MiB; "
          f"load average {'/'.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=tuple(SCALES), default="national",
                        help="national: 2,000,000 domains; small: 20,000 (a check in under a minute)")
    parser.add_argument("--domains", type=int, help="overrides --scale")
    parser.add_argument("--steps", type=int, default=10, help="earlier snapshot steps in the chain")
    parser.add_argument("--jobs-per-step", type=int, default=200)
    parser.add_argument("--missing-per-step", type=int, default=3, help="earlier jobs per step without entries")
    parser.add_argument("--history", default="1,3,10", help="numbers of earlier steps to time at (<= --steps)")
    parser.add_argument("--admin-url", default=ADMIN_URL)
    parser.add_argument("--store", help="parent directory of the archive store (default: the temp directory)")
    parser.add_argument("--keep", action="store_true", help="do not drop the database and the store")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--run-decision", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_decision is not None:
        run_decision(args.url, args.store, args.run_decision)
        return 0

    domains = args.domains or SCALES[args.scale]
    if args.jobs_per_step < 1 or domains < args.jobs_per_step or args.steps < 1:
        parser.error("need at least one step, one job per step and a domain per job")
    model = Model(domains, args.steps, args.jobs_per_step, args.missing_per_step)
    points = sorted({min(int(value), args.steps) for value in args.history.split(",")} | {args.steps})
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    print(f"deduplication-sources benchmark {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC: "
          f"{' '.join(['python', *sys.argv])}\nmachine: nproc {os.cpu_count()}, {cpu}; load average "
          f"{'/'.join(f'{v:.2f}' for v in os.getloadavg())}\n{domains:,} domains, {args.steps} earlier steps of "
          f"{model.jobs} jobs ({domains // model.jobs:,} domains each), {min(model.missing_per_step, model.jobs - 1)} "
          f"jobs per step without entries; timed at {', '.join(map(str, points))} steps of history", flush=True)
    admin = create_engine(args.admin_url, isolation_level="AUTOCOMMIT")
    name = f"hs_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(args.admin_url).set(database=name).render_as_string(hide_password=False)
    store_root = tempfile.mkdtemp(prefix="hs-dedup-store-", dir=args.store)
    rows = []
    try:
        started = time.monotonic()
        build_base(url, model)
        print(f"built {domains:,} domains and the new step's {model.jobs} jobs in {time.monotonic() - started:.0f} s",
              flush=True)
        loaded = 0
        for history in points:
            started = time.monotonic()
            add_steps(url, model, range(model.steps - history + 1, model.steps - loaded + 1), ArchiveStore(store_root))
            loaded = history
            with open_engine(url).connect() as conn:
                size = conn.scalar(text("SELECT pg_database_size(current_database())"))
            print(f"loaded steps {model.steps - history + 1}..{model.steps} in {time.monotonic() - started:.0f} s; "
                  f"database {size / 2**30:.1f} GiB", flush=True)
            rows.append(measure(url, args.admin_url, name, store_root, model, history))
        if len(rows) > 1:
            first, last = rows[0], rows[-1]
            print(f"growth: {first['history_steps']} -> {last['history_steps']} steps of history: decision "
                  f"{first['wall_s']:.1f} -> {last['wall_s']:.1f} s (x{last['wall_s'] / first['wall_s']:.1f}), "
                  f"rows read {first['pairs']:,} -> {last['pairs']:,} "
                  f"(x{last['pairs'] / max(first['pairs'], 1):.1f})", flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    finally:
        if args.keep:
            print(f"database kept: {url}; store kept: {store_root}")
        else:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            shutil.rmtree(store_root, ignore_errors=True)
        admin.dispose()
    return 0 if rows and all(row["complete"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
