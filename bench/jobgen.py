"""Job-generation benchmark on PostgreSQL: a national snapshot's two steps against the database's own floor.

Builds a fresh database (``init_database``) shaped like a national archive that has run a snapshot
every half year (all of it generated inside PostgreSQL with generate_series, so 20 million history rows
load in minutes):

* N domains (default 2,000,000), one default configuration each on one of three crawl templates, mixed
  byte and object limits, four default seeds; crawler traps on 2 % of the domains, aliases on 1 % (half
  of them expired), crawl attributes (EAV) on 1 % of the configurations, 0.5 % inactive domains;
* ``--history-steps`` earlier snapshot steps (default 10), each with a historyinfo row for every
  configuration: mixed stop reasons, object counts from a skewed (log-uniform-squared) distribution and
  bytes per object between 2 KB and 100 KB; plus four runs of a selective harvest over 5 % of the
  domains. config_history_summary is computed from that history, as ``harvestsuite db rebuild-summaries``
  would (status intake keeps it up to date in a running system).

Then, each in its own child process so each peak RSS is its own, it generates

(a) a first snapshot step (every domain's default configuration, estimated from its history);
(b) the continuation of the latest earlier step (the configurations that step carries over),

and after each times the database's floor for the same work on the same data: (i) the sorted read of every
candidate of the step with the history row generation reads for it (config_history_summary, one row per
configuration) and its seed lists, which selection reads in the same pass so that writing reads nothing
back: ``COPY (SELECT … FROM domains d JOIN configurations c … JOIN config_seedlists … JOIN seedlists … LEFT
JOIN config_history_summary … ORDER BY d.name COLLATE "C", c.name COLLATE "C", seedlist_id) TO
'/dev/null'``, the order selection puts them in (it reads them unsorted and sorts them itself,
scheduler/jobgen/ordering.py); should the summary lag historyinfo, generation reads historyinfo and the
floor is the historyinfo read below), and (ii) an INSERT … SELECT of as many rows as the step wrote into
job_configs, into a logged table with the same primary key. Beside it, the same read without the seed lists
(the floor of a generation that reads them back when writing) and the floor of a generation that reads
historyinfo (issue 13's pinned floor): the sorted join of the step's configurations with all their
history, ``COPY (SELECT … LEFT JOIN historyinfo h … ORDER BY c.template_id, c.maxbytes, h.objectcount)``,
each plus the same insert;
it prints the floors and ratios, except a ratio to the pinned floor, which is no floor of work that does not
read historyinfo (it is the floor above when generation does). The reads run with the session settings
generation uses (work_mem = SORT_MEMORY, hash_mem_multiplier 1, no parallel workers). It prints wall time,
the floors and ratios, the job and configuration counts read back from the database, the client's peak RSS
(VmHWM) and PostgreSQL's memory: the peak of the private memory (RssAnon, sampled every 0.1 s) summed over
the database's backends and parallel workers, and the bytes its sorts and hashes spilled over work_mem into
temporary files; first the date, command, machine (nproc, CPU model) and load average, and the load average
again with every step.

Usage::

    python bench/jobgen.py                                       # 2,000,000 domains, 10 history steps
    python bench/jobgen.py --domains 200000                      # a quick check
    python bench/jobgen.py --keep                                # leave the database for a look afterwards
    python bench/jobgen.py --url postgresql+psycopg://…/hs_bench_x  # reuse a kept database

Targets (2 cores): each step <= 3 x the floor of the work generation does (moonshot 2 x), <= 1 GiB client
and server together.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvestdef.bulkload import restore_constraints, set_aside_constraints, skip_foreign_key_checks  # noqa: E402
from harvestdef.db.engine import open_engine  # noqa: E402
from harvestdef.db.init import init_database  # noqa: E402
from scheduler.jobgen.generate import SORT_MEMORY  # noqa: E402

ADMIN_URL = os.environ.get("HARVESTSUITE_TEST_PG", "postgresql+psycopg://root@127.0.0.1:5432/postgres")
BYTE_LIMITS = "ARRAY[1000000000, 1000000000, 500000000, -1, 100000000, 1000000000, 20000000, 2000000000]"
# Stop reasons of an earlier step by a uniform draw w (ordinals of harvestdef.model.status.StopReason):
# 55 % complete, 20 % the harvest's byte limit, 5 % time limit, 3 % object limit, 5 % unfinished,
# 8 % the configuration's byte limit, 4 % its object limit.
STOP_REASON_SQL = ("CASE WHEN w < 0.55 THEN 0 WHEN w < 0.75 THEN 2 WHEN w < 0.80 THEN 6 WHEN w < 0.83 THEN 1 "
                   "WHEN w < 0.88 THEN 4 WHEN w < 0.96 THEN 3 ELSE 5 END")


def _harvests(steps: int) -> dict[str, int]:
    """Harvest definition ids: the earlier steps 1..N, then the selective one and the two timed steps."""
    return {"selective": steps + 1, "first": steps + 2, "continuation": steps + 3}


def build(url: str, domains: int, steps: int) -> None:
    engine = open_engine(url)
    init_database(engine)
    ids = _harvests(steps)
    started = time.monotonic()
    with engine.begin() as conn:
        conn.execute(text("SET LOCAL work_mem = '512MB'"))
        conn.execute(text("SELECT setseed(0.1313)"))
        orderxml = conn.scalar(text("SELECT orderxml FROM ordertemplates WHERE name = 'default_orderxml'"))
        for name in ("bench_b_orderxml", "bench_c_orderxml"):
            conn.execute(text("INSERT INTO ordertemplates (name, orderxml, isactive) VALUES (:n, :x, true)"),
                         {"n": name, "x": orderxml})
        templates = [conn.scalar(text("SELECT template_id FROM ordertemplates WHERE name = :n"), {"n": name})
                     for name in ("default_orderxml", "bench_b_orderxml", "bench_c_orderxml")]
        # domains.defaultconfig and configurations.domain_id refer to each other, and the tables are empty:
        # load with the checks and secondary indexes set aside, restore (and check) once at the end.
        skip_foreign_key_checks(conn)
        restore = set_aside_constraints(conn, ["domains", "configurations", "seedlists", "config_seedlists",
                                               "historyinfo", "eav_attribute"], foreign_keys=False)
        params = {"n": domains, "steps": steps, "t1": templates[0], "t2": templates[1], "t3": templates[2]}
        # names in no particular order against their ids, as a real archive's are
        conn.execute(text(
            "INSERT INTO domains (domain_id, name, defaultconfig, edition, crawlertraps, alias, lastaliasupdate, "
            "isactive) SELECT i, substr(md5(i::text), 1, 6) || '-' || i || '.dk', i, 1, "
            "CASE WHEN i % 50 = 7 THEN E'.*/calendar/.*\\n.*[?&]sort=.*' END, "
            "CASE WHEN i % 100 = 13 THEN i - 1 END, "
            "CASE WHEN i % 200 = 13 THEN now() - interval '30 days' WHEN i % 100 = 13 THEN "
            "now() - interval '2 years' END, i % 200 <> 99 FROM generate_series(1, :n) i"), params)
        conn.execute(text(
            f"INSERT INTO configurations (config_id, name, domain_id, template_id, maxobjects, maxrate, maxbytes) "
            f"SELECT i, 'defaultconfig', i, CASE WHEN i % 10 < 7 THEN :t1 WHEN i % 10 < 9 THEN :t2 ELSE :t3 END, "
            f"CASE WHEN i % 20 = 3 THEN 5000 WHEN i % 50 = 11 THEN 20000 ELSE -1 END, 100, "
            f"({BYTE_LIMITS})[1 + i % 8] FROM generate_series(1, :n) i"), params)
        conn.execute(text(
            "INSERT INTO seedlists (seedlist_id, name, domain_id, seeds) SELECT domain_id, 'defaultseeds', "
            "domain_id, 'http://www.' || name || E'\\nhttps://www.' || name || E'\\nhttp://' || name || "
            "E'\\nhttps://' || name FROM domains"))
        conn.execute(text("INSERT INTO config_seedlists (config_id, seedlist_id) "
                          "SELECT i, i FROM generate_series(1, :n) i"), params)
        conn.execute(text(
            "INSERT INTO eav_attribute (tree_id, entity_id, type_id, val_int) SELECT 2, i, 1 + (i / 100) % 3, "
            "CASE (i / 100) % 3 WHEN 0 THEN 5 + i % 30 WHEN 1 THEN 1 ELSE 0 END "
            "FROM generate_series(1, :n) i WHERE i % 100 = 42"), params)
        # Every earlier step has a row for every configuration, step by step as intake writes them.
        conn.execute(text(
            f"INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id, harvest_id, job_id, "
            f"harvest_time) SELECT {STOP_REASON_SQL}, objects, objects * floor(power(10, 3.3 + 1.7 * v)), "
            f"i, k, k * 1000000 + i / 10000, timestamp '2016-03-01' + (k - 1) * interval '6 months' "
            f"+ (i % 10000) * interval '1 minute' FROM ("
            f"  SELECT k, i, random() AS v, random() AS w, floor(power(10, 0.5 + 4.5 * power(random(), 1.5))) "
            f"  AS objects FROM generate_series(1, :steps) k CROSS JOIN LATERAL generate_series(1, :n) i) drawn"),
            params)
        conn.execute(text(
            "INSERT INTO harvestdefinitions (harvest_id, name, comments, numevents, submitted, isactive, edition) "
            "SELECT k, 'broad-step-' || k, '', 1, timestamp '2016-01-01' + (k - 1) * interval '6 months', "
            "true, 1 FROM generate_series(1, :steps) k"), params)
        conn.execute(text("INSERT INTO fullharvests (harvest_id, maxobjects, maxbytes, maxjobrunningtime, "
                          "isindexready) SELECT k, -1, 100000000, 0, true FROM generate_series(1, :steps) k"),
                     params)
        for key, name, previous, maxbytes in (("first", "broad-new-step1", None, 10_000_000),
                                              ("continuation", "broad-latest-step2", steps, 1_000_000_000)):
            conn.execute(text("INSERT INTO harvestdefinitions (harvest_id, name, comments, numevents, submitted, "
                              "isactive, edition) VALUES (:id, :name, '', 0, now(), true, 1)"),
                         {"id": ids[key], "name": name})
            conn.execute(text("INSERT INTO fullharvests (harvest_id, maxobjects, previoushd, maxbytes, "
                              "maxjobrunningtime, isindexready) VALUES (:id, -1, :prev, :maxbytes, 0, true)"),
                         {"id": ids[key], "prev": previous, "maxbytes": maxbytes})
        _selective(conn, ids["selective"], steps, domains)
        restore_constraints(conn, restore)
        _summaries(conn)
        for table, column in (("domains", "domain_id"), ("configurations", "config_id"),
                              ("seedlists", "seedlist_id"), ("historyinfo", "historyinfo_id"),
                              ("eav_attribute", "id")):
            conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                              f"(SELECT coalesce(max({column}), 1) FROM {table}))"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
        rows = conn.scalar(text("SELECT count(*) FROM historyinfo"))
    engine.dispose()
    print(f"built {domains:,} domains, {steps} earlier steps, {rows:,} historyinfo rows "
          f"in {time.monotonic() - started:.0f} s", flush=True)


def _selective(conn: Connection, harvest_id: int, steps: int, domains: int) -> None:
    """A monthly selective harvest of 5 % of the domains' default configurations, with four runs of history."""
    conn.execute(text("INSERT INTO harvestdefinitions (harvest_id, name, comments, numevents, submitted, isactive, "
                      "edition) VALUES (:id, 'selective-news', '', 4, now(), true, 1)"), {"id": harvest_id})
    schedule = conn.scalar(text("SELECT min(schedule_id) FROM schedules"))
    conn.execute(text("INSERT INTO partialharvests (harvest_id, schedule_id, nextdate) VALUES (:id, :s, now())"),
                 {"id": harvest_id, "s": schedule})
    conn.execute(text("INSERT INTO harvest_configs (harvest_id, config_id) SELECT :id, i "
                      "FROM generate_series(1, :n) i WHERE i % 20 = 5"), {"id": harvest_id, "n": domains})
    conn.execute(text(
        f"INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id, harvest_id, job_id, harvest_time) "
        f"SELECT {STOP_REASON_SQL}, objects, objects * 20000, i, :id, 900000000 + r, "
        f"timestamp '2016-03-01' + (:steps - 1) * interval '6 months' + r * interval '1 month' FROM ("
        f"  SELECT r, i, random() AS w, floor(power(10, 1 + 3 * random())) AS objects "
        f"  FROM generate_series(1, 4) r CROSS JOIN LATERAL generate_series(5, :n, 20) i) drawn"),
        {"id": harvest_id, "steps": steps, "n": domains})


def _summaries(conn: Connection) -> None:
    """config_history_summary from historyinfo, by the rule of harvestdef.repositories.history: newest row;
    best row = most objects (the older on ties) among the rows up to the newest DOWNLOAD_COMPLETE one."""
    conn.execute(text("DELETE FROM config_history_summary"))
    conn.execute(text(
        "INSERT INTO config_history_summary SELECT latest.config_id, latest.historyinfo_id, latest.harvest_id, "
        "latest.job_id, latest.harvest_time, latest.stopreason, latest.objectcount, latest.bytecount, "
        "best.historyinfo_id, best.stopreason, best.objectcount, best.bytecount FROM ("
        "  SELECT DISTINCT ON (config_id) * FROM historyinfo "
        "  ORDER BY config_id, harvest_time DESC, harvest_id DESC, historyinfo_id DESC) latest JOIN ("
        "  SELECT DISTINCT ON (config_id) * FROM ("
        "    SELECT h.*, count(*) FILTER (WHERE stopreason = 0) OVER (PARTITION BY config_id "
        "      ORDER BY harvest_time DESC, harvest_id DESC, historyinfo_id DESC "
        "      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newer_complete FROM historyinfo h) folded "
        "  WHERE newer_complete = 0 "
        "  ORDER BY config_id, objectcount DESC, harvest_time, harvest_id, historyinfo_id) best "
        "ON best.config_id = latest.config_id"))


class ServerMemory:
    """Samples the private memory (RssAnon) of every backend of one database, parallel workers included."""

    def __init__(self, admin_url: str, database: str, interval: float = 0.1) -> None:
        self.engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        self.database = database
        self.interval = interval
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ServerMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.engine.dispose()

    def _run(self) -> None:
        with self.engine.connect() as conn:
            while not self._stop.is_set():
                pids = conn.scalars(text("SELECT pid FROM pg_stat_activity WHERE datname = :d"),
                                    {"d": self.database}).all()
                self.peak_kib = max(self.peak_kib, sum(_rss_anon_kib(pid) for pid in pids))
                self._stop.wait(self.interval)


def _rss_anon_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:  # the backend ended between listing and reading
        pass
    return 0


def peak_rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def run_step(url: str, harvest_id: int) -> None:
    """Child process: generate one run and print its figures as JSON."""
    import logging

    from scheduler.jobgen.generate import GenerationOptions, generate_jobs

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    engine = open_engine(url)
    started = time.monotonic()
    result = generate_jobs(engine, harvest_id, GenerationOptions())
    seconds = time.monotonic() - started
    engine.dispose()
    print(json.dumps({"harvest": result.harvest_name, "seconds": seconds, "peak_rss_mib": peak_rss_mib()}))


def _temp_bytes(conn: Connection) -> int:
    conn.execute(text("SELECT pg_stat_clear_snapshot()"))
    return conn.scalar(text("SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")) or 0


def floor(url: str, harvest_id: int, continuation: bool) -> dict:
    """The floors of one step, in seconds: ``read_summary`` (the sorted read of every candidate with the
    history row generation reads, config_history_summary, and its seed lists, which selection reads in the
    same pass), ``read_without_seeds`` (the same without the seed lists: the floor of a generation that reads
    them back when writing), ``read_history`` (issue 13's pinned floor: the sorted join over all of
    historyinfo), ``read`` (the one generation does: the summary's unless
    the summary lags historyinfo, when generation reads historyinfo and so does its floor), ``write`` (an
    INSERT … SELECT of as many rows as the step wrote into job_configs); and the step's job and
    configuration counts. The reads run with the session settings generation uses (work_mem, no parallel
    workers) and COPY to /dev/null, so only the server's work is timed."""
    from scheduler.jobgen.selection import summary_is_current

    engine = open_engine(url)
    with engine.connect() as conn:
        counts = conn.execute(text(
            "SELECT count(DISTINCT j.job_id), count(*) FROM jobs j JOIN job_configs jc ON jc.job_id = j.job_id "
            "WHERE j.harvest_id = :h"), {"h": harvest_id}).one()
        summary_current = summary_is_current(conn)
        carried = ""
        if continuation:
            # the configurations the previous step carries over: the ones this step wrote (made before timing)
            conn.execute(text("CREATE TEMP TABLE carried AS SELECT jc.config_id FROM jobs j "
                              "JOIN job_configs jc ON jc.job_id = j.job_id WHERE j.harvest_id = :h"),
                         {"h": harvest_id})
            conn.execute(text("ANALYZE carried"))
            carried = "JOIN carried ON carried.config_id = c.config_id "
        conn.execute(text(f"SET work_mem = '{SORT_MEMORY}'"))
        conn.execute(text("SET hash_mem_multiplier = 1.0"))
        conn.execute(text("SET max_parallel_workers_per_gather = 0"))
        conn.commit()

        def timed(statement: str) -> float:
            started = time.monotonic()
            conn.execute(text(statement))
            conn.commit()
            return time.monotonic() - started

        # What selection reads (selection.summary_query): each candidate with its summary row, its domain's
        # name and traps and its seed lists (a row per seed list), in the order it puts them in.
        read_summary = timed(
            'COPY (SELECT d.name COLLATE "C", c.name COLLATE "C", c.config_id, c.domain_id, c.template_id, '
            "c.maxobjects, c.maxbytes, chs.best_objectcount, chs.best_bytecount, chs.best_stopreason, "
            "d.crawlertraps, sl.seeds "
            f"FROM domains d JOIN configurations c ON c.config_id = d.defaultconfig {carried}"
            "JOIN config_seedlists cs ON cs.config_id = c.config_id "
            "JOIN seedlists sl ON sl.seedlist_id = cs.seedlist_id "
            "LEFT JOIN config_history_summary chs ON chs.config_id = c.config_id "
            'ORDER BY d.name COLLATE "C", c.name COLLATE "C", sl.seedlist_id) TO \'/dev/null\'')
        # The same without the seed lists: the floor's read for a generation that reads them back job by job
        # when writing (shown beside, not used in the ratio).
        read_without_seeds = timed(
            'COPY (SELECT d.name COLLATE "C", c.name COLLATE "C", c.config_id, c.domain_id, c.template_id, '
            "c.maxobjects, c.maxbytes, chs.best_objectcount, chs.best_bytecount, chs.best_stopreason "
            f"FROM domains d JOIN configurations c ON c.config_id = d.defaultconfig {carried}"
            "LEFT JOIN config_history_summary chs ON chs.config_id = c.config_id "
            'ORDER BY d.name COLLATE "C", c.name COLLATE "C") TO \'/dev/null\'')
        read_history = timed(
            "COPY (SELECT d.name, c.config_id, c.template_id, c.maxbytes, c.maxobjects, h.objectcount, h.bytecount, "
            f"h.stopreason FROM domains d JOIN configurations c ON c.config_id = d.defaultconfig {carried}"
            "LEFT JOIN historyinfo h ON h.config_id = c.config_id "
            "ORDER BY c.template_id, c.maxbytes, h.objectcount) TO '/dev/null'")
        conn.execute(text("DROP TABLE IF EXISTS floor_job_configs"))
        conn.execute(text("CREATE TABLE floor_job_configs (job_id bigint NOT NULL, config_id bigint NOT NULL, "
                          "PRIMARY KEY (job_id, config_id))"))
        conn.commit()
        write = timed(f"INSERT INTO floor_job_configs SELECT g / 10000, g FROM generate_series(1, {counts[1]}) g")
        conn.execute(text("DROP TABLE floor_job_configs"))
        conn.commit()
    engine.dispose()
    return {"read_summary": read_summary, "read_without_seeds": read_without_seeds, "read_history": read_history,
            "read": read_summary if summary_current else read_history, "summary_current": summary_current,
            "write": write, "jobs": counts[0], "configurations": counts[1]}


def _counts(url: str, harvest_id: int) -> tuple[int, int]:
    engine = open_engine(url)
    with engine.connect() as conn:
        jobs, configs = conn.execute(text(
            "SELECT count(DISTINCT j.job_id), count(*) FROM jobs j JOIN job_configs jc ON jc.job_id = j.job_id "
            "WHERE j.harvest_id = :h"), {"h": harvest_id}).one()
    engine.dispose()
    return jobs, configs


def measure(url: str, admin_url: str, database: str, label: str, harvest_id: int, continuation: bool,
            with_floor: bool = True) -> dict:
    engine = open_engine(url)
    with engine.connect() as conn:
        spilled_before = _temp_bytes(conn)
    with ServerMemory(admin_url, database) as server:
        done = subprocess.run([sys.executable, __file__, "--run-step", str(harvest_id), "--url", url],
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{label}: failed\n{done.stderr}")
    with engine.connect() as conn:
        spilled = _temp_bytes(conn) - spilled_before
    engine.dispose()
    for line in done.stderr.splitlines():
        if "scheduler.jobgen" in line:
            print("   ", line.split(" ", 2)[-1])
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if with_floor:
        floors = floor(url, harvest_id, continuation)
    else:
        jobs, configs = _counts(url, harvest_id)
        floors = {"read_summary": float("nan"), "read_without_seeds": float("nan"), "read_history": float("nan"),
                  "read": float("nan"),
                  "summary_current": None, "write": float("nan"), "jobs": jobs, "configurations": configs}
    wall, write = figures["seconds"], floors["write"]
    row = {"step": label, "jobs": floors["jobs"], "configurations": floors["configurations"], "wall_s": wall,
           "floor_read_s": floors["read"], "floor_write_s": write, "floor_s": floors["read"] + write,
           "ratio": wall / (floors["read"] + write),
           "floor_summary_s": floors["read_summary"] + write, "ratio_summary": wall / (floors["read_summary"] + write),
           "floor_without_seeds_s": floors["read_without_seeds"] + write,
           "ratio_without_seeds": wall / (floors["read_without_seeds"] + write),
           "floor_history_s": floors["read_history"] + write,
           "generation_reads": {True: "config_history_summary and seed lists", False: "historyinfo",
                                None: "(not timed)"}[floors["summary_current"]],
           "client_peak_rss_mib": figures["peak_rss_mib"],
           "server_peak_private_mib": server.peak_kib / 1024, "server_spilled_mib": spilled / 2**20}
    row["client_plus_server_mib"] = row["client_peak_rss_mib"] + row["server_peak_private_mib"]
    print(f"{label}: {row['jobs']} jobs, {row['configurations']:,} configurations; wall {wall:.1f} s; "
          f"floor (generation reads {row['generation_reads']}) {row['floor_s']:.1f} s "
          f"(read {row['floor_read_s']:.1f} s + write {write:.1f} s), ratio {row['ratio']:.2f}; "
          f"without the seed lists {row['floor_without_seeds_s']:.1f} s, ratio {row['ratio_without_seeds']:.2f}; "
          f"issue 13's pinned floor (sorted join over historyinfo, + write) {row['floor_history_s']:.1f} s, "
          f"no ratio: the floor only while generation reads historyinfo, when it is the floor above; "
          f"client peak RSS "
          f"{row['client_peak_rss_mib']:.0f} MiB + server peak private {row['server_peak_private_mib']:.0f} MiB = "
          f"{row['client_plus_server_mib']:.0f} MiB; spilled over work_mem ({SORT_MEMORY}) "
          f"{row['server_spilled_mib']:.0f} MiB; load average {'/'.join(f'{v:.2f}' for v in os.getloadavg())}",
          flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", type=int, default=2_000_000)
    parser.add_argument("--history-steps", type=int, default=10)
    parser.add_argument("--admin-url", default=ADMIN_URL)
    parser.add_argument("--url", help="an existing benchmark database (from --keep): skip building")
    parser.add_argument("--keep", action="store_true", help="do not drop the benchmark database")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--only", choices=("first", "continuation"), help="time one step only")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor (while tuning; no ratio)")
    parser.add_argument("--run-step", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_step is not None:
        run_step(args.url, args.run_step)
        return 0

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown")
    print(f"job-generation benchmark {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC: "
          f"{' '.join(['python', *sys.argv])}\nmachine: nproc {os.cpu_count()}, {model}; load average "
          f"{'/'.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    admin = create_engine(args.admin_url, isolation_level="AUTOCOMMIT")
    if args.url:
        url, name = args.url, make_url(args.url).database
        with open_engine(url).connect() as conn:
            steps = conn.scalar(text("SELECT count(*) FROM harvestdefinitions WHERE name LIKE 'broad-step-%'"))
            conn.execute(text("TRUNCATE job_configs, jobs CASCADE"))
            conn.execute(text("UPDATE harvestdefinitions SET numevents = 0, isactive = true WHERE harvest_id > :s + 1"),
                         {"s": steps})
            conn.commit()
    else:
        steps = args.history_steps
        name = f"hs_bench_{uuid.uuid4().hex[:8]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(args.admin_url).set(database=name).render_as_string(hide_password=False)
    ids = _harvests(steps)
    rows = []
    try:
        if not args.url:
            build(url, args.domains, steps)
        for key, label, continuation in (("first", "(a) first snapshot step", False),
                                         ("continuation", "(b) continuation step", True)):
            if args.only in (None, key):
                rows.append(measure(url, args.admin_url, name, label, ids[key], continuation, not args.no_floor))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    finally:
        if args.keep or args.url:
            print(f"database kept: {url}")
        else:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
