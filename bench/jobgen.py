"""Job-generation benchmark on PostgreSQL: a national snapshot's first step and its continuation step.

Builds a fresh database (``init_database``) with N domains (one configuration each, two templates, mixed
byte limits, four default seeds), loads a previous snapshot step's historyinfo for 75 % of them with mixed
stop reasons (all with COPY), then times in separate child processes, so each peak RSS is its own:

(a) generating a first snapshot step (every domain's default configuration, estimated from the history);
(b) generating the continuation of the previous step (the configurations its history carries over).

Usage::

    python bench/jobgen.py                    # 2,000,000 domains
    python bench/jobgen.py --domains 200000   # a quick check
    python bench/jobgen.py --keep             # leave the database for a look afterwards

Targets (2 cores): each step <= 60 s wall and <= 1 GiB peak RSS.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvestdef.db.engine import open_engine  # noqa: E402
from harvestdef.db.init import init_database  # noqa: E402
from harvestdef.model.status import StopReason  # noqa: E402

ADMIN_URL = os.environ.get("HARVESTSUITE_TEST_PG", "postgresql+psycopg://root@127.0.0.1:5432/postgres")
PREVIOUS_STEP, FIRST_STEP, CONTINUATION_STEP = 1, 2, 3
BYTE_LIMITS = (1_000_000_000, 1_000_000_000, 500_000_000, -1, 100_000_000, 1_000_000_000, 20_000_000, 2_000_000_000)
# stop reasons of the previous step, as a broad crawl's step 1 with a small byte limit ends
STOP_REASONS = ([StopReason.DOWNLOAD_COMPLETE] * 8 + [StopReason.SIZE_LIMIT] * 6 + [StopReason.TIME_LIMIT] * 2
                + [StopReason.DOWNLOAD_UNFINISHED, StopReason.OBJECT_LIMIT, StopReason.CONFIG_SIZE_LIMIT,
                   StopReason.CONFIG_OBJECT_LIMIT])
CHUNK_ROWS = 50_000


def _copy(raw, table: str, columns: str, lines) -> None:
    """COPY text lines into ``table`` in chunks."""
    with raw.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        buffer = io.StringIO()
        for number, line in enumerate(lines, start=1):
            buffer.write(line)
            if number % CHUNK_ROWS == 0:
                copy.write(buffer.getvalue())
                buffer = io.StringIO()
        copy.write(buffer.getvalue())


def build(url: str, domains: int, history_share: float) -> None:
    engine = open_engine(url)
    init_database(engine)
    started = time.monotonic()
    with engine.begin() as conn:
        raw = conn.connection.driver_connection
        template_text = conn.scalar(text("SELECT orderxml FROM ordertemplates WHERE name = 'default_orderxml'"))
        conn.execute(text("INSERT INTO ordertemplates (name, orderxml, isactive) VALUES ('bench_orderxml', :x, true)"),
                     {"x": template_text})
        templates = dict(conn.execute(text("SELECT name, template_id FROM ordertemplates")).all())
        default_template, other_template = templates["default_orderxml"], templates["bench_orderxml"]
        # domains.defaultconfig and configurations.domain_id refer to each other: load without FK triggers
        conn.execute(text("SET LOCAL session_replication_role = replica"))
        _copy(raw, "domains", "domain_id, name, defaultconfig, edition",
              (f"{i}\tsite{i:07d}.dk\t{i}\t1\n" for i in range(1, domains + 1)))
        _copy(raw, "configurations", "config_id, name, domain_id, template_id, maxobjects, maxrate, maxbytes",
              (f"{i}\tdefaultconfig\t{i}\t{other_template if i % 5 == 0 else default_template}\t-1\t100\t"
               f"{BYTE_LIMITS[i % len(BYTE_LIMITS)]}\n" for i in range(1, domains + 1)))
        _copy(raw, "seedlists", "seedlist_id, name, domain_id, seeds",
              (f"{i}\tdefaultseeds\t{i}\thttp://www.site{i:07d}.dk\\nhttps://www.site{i:07d}.dk\\n"
               f"http://site{i:07d}.dk\\nhttps://site{i:07d}.dk\n" for i in range(1, domains + 1)))
        _copy(raw, "config_seedlists", "config_id, seedlist_id", (f"{i}\t{i}\n" for i in range(1, domains + 1)))
        submitted = datetime(2026, 1, 1, tzinfo=UTC).strftime("%Y-%m-%d %H:%M:%S")
        for harvest_id, name, previous, maxbytes, numevents in (
                (PREVIOUS_STEP, "broad-2026-step1", None, 10_000_000, 1),
                (FIRST_STEP, "broad-2027-step1", None, 10_000_000, 0),
                (CONTINUATION_STEP, "broad-2026-step2", PREVIOUS_STEP, 1_000_000_000, 0)):
            conn.execute(text("INSERT INTO harvestdefinitions (harvest_id, name, comments, numevents, submitted, "
                              "isactive, edition) VALUES (:id, :name, '', :n, :t, true, 1)"),
                         {"id": harvest_id, "name": name, "n": numevents, "t": submitted})
            conn.execute(text("INSERT INTO fullharvests (harvest_id, maxobjects, previoushd, maxbytes, "
                              "maxjobrunningtime, isindexready) VALUES (:id, -1, :prev, :maxbytes, 0, true)"),
                         {"id": harvest_id, "prev": previous, "maxbytes": maxbytes})
        crawled = int(domains * history_share)
        when = (datetime(2026, 2, 1, tzinfo=UTC) + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")

        def history_lines():
            for i in range(1, crawled + 1):
                stop = STOP_REASONS[(i * 7) % len(STOP_REASONS)]
                objects = (i * 37) % 300 + (0 if stop == StopReason.DOWNLOAD_COMPLETE else 50)
                size = 10_000_000 if stop in (StopReason.SIZE_LIMIT, StopReason.CONFIG_SIZE_LIMIT) \
                    else objects * ((i * 13) % 60_000 + 1_000)
                yield f"{int(stop)}\t{objects}\t{size}\t{i}\t{PREVIOUS_STEP}\t{i // 10_000 + 1}\t{when}\n"

        _copy(raw, "historyinfo", "stopreason, objectcount, bytecount, config_id, harvest_id, job_id, harvest_time",
              history_lines())
        for table, column in (("domains", "domain_id"), ("configurations", "config_id"),
                              ("seedlists", "seedlist_id")):
            conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                              f"(SELECT max({column}) FROM {table}))"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))
    engine.dispose()
    print(f"built {domains:,} domains and {crawled:,} historyinfo rows in {time.monotonic() - started:.1f} s",
          flush=True)


def peak_rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def run_step(url: str, harvest_id: int) -> None:
    """Child process: generate one run and print its figures as JSON."""
    from scheduler.jobgen.generate import GenerationOptions, generate_jobs

    engine = open_engine(url)
    started = time.monotonic()
    result = generate_jobs(engine, harvest_id, GenerationOptions())
    seconds = time.monotonic() - started
    configs = sum(len(job) for job in result.jobs)
    engine.dispose()
    print(json.dumps({"harvest": result.harvest_name, "jobs": len(result.jobs), "configs": configs,
                      "seconds": round(seconds, 1), "peak_rss_mib": round(peak_rss_mib(), 1)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", type=int, default=2_000_000)
    parser.add_argument("--history-share", type=float, default=0.75)
    parser.add_argument("--admin-url", default=ADMIN_URL)
    parser.add_argument("--keep", action="store_true", help="do not drop the benchmark database")
    parser.add_argument("--run-step", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_step is not None:
        run_step(args.url, args.run_step)
        return 0

    name = f"hs_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(args.admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        build(url, args.domains, args.history_share)
        for label, harvest_id in (("(a) first snapshot step", FIRST_STEP),
                                  ("(b) continuation step", CONTINUATION_STEP)):
            done = subprocess.run([sys.executable, __file__, "--run-step", str(harvest_id), "--url", url],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"{label}: failed\n{done.stderr}", file=sys.stderr)
                return 1
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{label}: {figures['jobs']} jobs, {figures['configs']:,} configurations, "
                  f"{figures['seconds']} s wall, peak RSS {figures['peak_rss_mib']} MiB", flush=True)
    finally:
        if args.keep:
            print(f"database kept: {url}")
        else:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
