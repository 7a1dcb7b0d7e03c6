"""Dispatch benchmark: the production path from NEW job to DONE with its historyinfo rows.

A fresh PostgreSQL database gets N NEW jobs (one domain configuration each, the real default crawl
template, in one selective harvest). Then, for each transport (RabbitMQ and the embedded SQLite queue):

* the scheduler runs as `harvestsuite scheduler run` in its own process;
* C simulated harvest controllers (tests/scheduler/simcontroller.py) run in P child processes: each
  registers, sends ready messages while idle, takes a DoOneCrawl message, claims its attempt, reports
  STARTED and then DONE with a domain report. Every publish waits for its confirm.

The figure is full cycles per second: jobs DONE (read back from the database) over the wall time from
the first ready message to the last DONE. Every run is checked complete: every job DONE, one historyinfo
row per job, every job crawled by exactly one controller, and no job crawled twice. The CPU per cycle is
printed for the scheduler's processes, the controllers' and the rest of the machine (the broker and the
database when they run here), with how busy the cores were. Beside it, measured
in the same run, the transport's floor: confirmed publishes per second from as many publishers in as
many processes, and the share of it the cycles used (a cycle publishes six confirmed messages); and the
database's floor: the rows one cycle must write (four changes of the job row and their audit rows, the
controller's row, a historyinfo row, both summaries), as bare SQL through psycopg, one transaction per
cycle on each of four connections at once. Both ratios carry over to other machines better than the
absolute figure.

Usage::

    python bench/dispatch.py                          # 10,000 jobs, 50 controllers, both transports
    python bench/dispatch.py --jobs 2000 --transport amqp

Target (2 cores): >= 100 full cycles/s on RabbitMQ.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, insert, select, text, update
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvestdef.db import schema as s  # noqa: E402
from harvestdef.db.engine import open_engine  # noqa: E402
from harvestdef.db.init import init_database  # noqa: E402
from harvestdef.db.types import utcnow  # noqa: E402
from harvestdef.model.status import JobStatus  # noqa: E402
from harvestdef.repositories.jobs import JobRepository, allocate_job_ids, new_job_row  # noqa: E402

ADMIN_URL = os.environ.get("HARVESTSUITE_TEST_PG", "postgresql+psycopg://root@127.0.0.1:5432/postgres")
AMQP_URL = os.environ.get("HARVESTSUITE_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672/%2F")


def build(url: str, jobs: int) -> None:
    """N domains with one configuration each, one selective harvest, and one NEW job per configuration."""
    engine = open_engine(url)
    init_database(engine)
    now = utcnow()
    with engine.begin() as conn:
        template = conn.execute(select(s.ordertemplates.c.template_id, s.ordertemplates.c.orderxml)
                                .where(s.ordertemplates.c.name == "default_orderxml")).one()
        schedule_id = conn.scalar(select(s.schedules.c.schedule_id).order_by(s.schedules.c.schedule_id))
        conn.execute(insert(s.harvestdefinitions).values(harvest_id=1, name="bench", comments="", numevents=1,
                                                         submitted=now, isactive=False, edition=1))
        conn.execute(insert(s.partialharvests).values(harvest_id=1, schedule_id=schedule_id, nextdate=None))
        conn.execute(insert(s.domains), [{"name": f"site{n}.bench.dk", "edition": 1} for n in range(jobs)])
        domain_ids = list(conn.scalars(select(s.domains.c.domain_id).order_by(s.domains.c.domain_id)))
        conn.execute(insert(s.configurations), [
            {"name": "defaultconfig", "domain_id": d, "template_id": template.template_id, "maxobjects": -1,
             "maxbytes": 1_000_000_000, "maxrate": 100} for d in domain_ids])
        config_ids = list(conn.scalars(select(s.configurations.c.config_id).order_by(s.configurations.c.config_id)))
        conn.execute(update(s.domains).where(s.domains.c.domain_id == s.configurations.c.domain_id)
                     .values(defaultconfig=s.configurations.c.config_id))
        job_ids = allocate_job_ids(conn, jobs)
        rows = [new_job_row(job_id=job_id, harvest_id=1, channel="FOCUSED", snapshot=False,
                            orderxml="default_orderxml", harvest_num=1, creationdate=now,
                            orderxmldoc=template.orderxml, seedlist=f"http://www.site{n}.bench.dk/",
                            num_configs=1, harvestname_prefix=f"{job_id}-1")
                for n, job_id in enumerate(job_ids)]
        JobRepository(conn).insert(rows, dict(zip(job_ids, ([c] for c in config_ids), strict=True)), audit=False)
    engine.dispose()


def controllers_process(queue_url: str, env: str, first: int, count: int, result_path: str, ready: Any, go: Any,
                        finish: Any) -> None:
    """``count`` simulated controllers in threads of one process, until ``finish`` is set. Their
    transports are opened first; they start when ``go`` is set."""
    sys.path.insert(0, str(ROOT))
    from harvestdef.queues import QueueNames, open_transport
    from harvestdef.settings import load_settings
    from tests.scheduler.simcontroller import SimController

    # prefetch 1: an idle controller waits on a subscription to its job queue and holds at most one job
    settings = load_settings(environ={}, overrides={
        "harvestsuite.queue.url": queue_url, "common.environmentName": env, "harvestsuite.queue.pollInterval": 20,
        "harvestsuite.queue.prefetch": 1})
    names = QueueNames(env)
    stop = threading.Event()
    controllers = []
    for number in range(first, first + count):
        controllers.append(SimController(open_transport(settings.queue), names, f"bench-{number}", ["FOCUSED"],
                                         ready_delay=0.5, answer_timeout=60, poll=0.5, subscribe=True))
    threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in controllers]
    ready.set()
    go.wait()
    for thread in threads:
        thread.start()
    finish.wait()
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    with open(result_path, "w") as handle:
        for c in controllers:
            for job_id, attempt in c.crawled:
                handle.write(f"{job_id} {attempt} {c.controller_id}\n")
            handle.write(f"ready {c.ready_messages} {c.controller_id}\n")
    for c in controllers:
        c.transport.close()


def delete_queues(queue_url: str, env: str, controllers: int) -> None:
    """The run's queues: RabbitMQ keeps durable queues for good, and thousands of them slow its start."""
    if not queue_url.startswith("amqp"):
        return
    import pika

    from harvestdef.queues import QueueNames

    names = QueueNames(env)
    connection = pika.BlockingConnection(pika.URLParameters(queue_url))
    try:
        channel = connection.channel()
        for queue in [names.scheduler, names.monitor, names.dead_letter, names.jobs("FOCUSED"),
                      *(names.controller(f"bench-{n}") for n in range(controllers))]:
            channel.queue_delete(queue)
    finally:
        connection.close()


# Confirmed messages one cycle publishes: ready, DoOneCrawl, claim, claim answer, STARTED, DONE.
MESSAGES_PER_CYCLE = 6


def floor_publishers(queue_url: str, queue: str, threads: int, messages: int, body_size: int) -> None:
    """``threads`` publishers in this child process, each with its own transport, as the controllers have."""
    sys.path.insert(0, str(ROOT))
    from harvestdef.queues import open_transport
    from harvestdef.settings import load_settings

    settings = load_settings(environ={}, overrides={"harvestsuite.queue.url": queue_url,
                                                    "common.environmentName": "floor"})
    body = b"x" * body_size

    def publish() -> None:
        with open_transport(settings.queue) as transport:
            for _ in range(messages):
                transport.publish(queue, body)

    workers = [threading.Thread(target=publish) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def broker_floor(queue_url: str, controllers: int, processes: int, messages_each: int = 100) -> float:
    """The transport's own floor, measured in the same run: confirmed persistent publishes per second from
    as many publishers, in as many processes, as the controllers, with messages of a cycle's mean size.
    Checked complete by counting the queue afterwards."""
    from harvestdef.queues import open_transport
    from harvestdef.settings import load_settings

    queue = f"floor.{uuid.uuid4().hex[:8]}"
    per_process = -(-controllers // processes)
    context = multiprocessing.get_context("spawn")
    children = [context.Process(target=floor_publishers, args=(queue_url, queue, min(per_process, controllers - first),
                                                               messages_each, 2500))
                for first in range(0, controllers, per_process)]
    started = time.monotonic()
    for child in children:
        child.start()
    for child in children:
        child.join()
    wall = time.monotonic() - started
    settings = load_settings(environ={}, overrides={"harvestsuite.queue.url": queue_url,
                                                    "common.environmentName": "floor"})
    with open_transport(settings.queue) as transport:
        count = transport.message_count(queue)
        transport.purge(queue)
    if queue_url.startswith("amqp"):
        import pika

        connection = pika.BlockingConnection(pika.URLParameters(queue_url))
        connection.channel().queue_delete(queue)
        connection.close()
    if count != controllers * messages_each:
        raise SystemExit(f"floor run incomplete: {count} of {controllers * messages_each} messages in the queue")
    return count / wall


def database_floor(url: str, jobs: int, connections: int = 4) -> float:
    """Bare cycles per second: for each of ``jobs`` jobs, in one transaction, the rows a cycle writes,
    one statement each, with no ORM, no messages and nothing read that is not written. The jobs are
    left as they were (``run`` sets every job NEW again and empties what a cycle fills)."""
    import psycopg

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        job_ids = [row[0] for row in conn.execute("SELECT job_id FROM jobs ORDER BY job_id LIMIT %s", (jobs,))]
        configs = dict(conn.execute("SELECT job_id, config_id FROM job_configs WHERE job_id = ANY(%s)", (job_ids,)))
        conn.execute("INSERT INTO harvesters (controller_id, host, channels, accepted) "
                     "VALUES ('floor', 'floor', 'FOCUSED', true) ON CONFLICT DO NOTHING")
    audit = ("INSERT INTO audit_log (changed_at, actor, tablename, row_key, action, before, after) VALUES "
             + ", ".join(["(now(), 'floor', 'jobs', %s, 'update', '{\"status\": 1}', '{\"status\": 2}')"] * 4))
    history = ("INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id, harvest_id, job_id, "
               "harvest_time, novel_objects, novel_bytes, duplicate_objects, duplicate_bytes) "
               "VALUES (0, 10, 10000, %s, 1, %s, now(), 5, 5000, 5, 5000) RETURNING historyinfo_id")
    config_summary = (
        "INSERT INTO config_history_summary (config_id, latest_historyinfo_id, latest_harvest_id, latest_job_id, "
        "latest_harvest_time, latest_stopreason, latest_objectcount, latest_bytecount, best_historyinfo_id, "
        "best_stopreason, best_objectcount, best_bytecount) VALUES (%s, %s, 1, %s, now(), 0, 10, 10000, %s, 0, 10, "
        "10000) ON CONFLICT (config_id) DO UPDATE SET latest_historyinfo_id = excluded.latest_historyinfo_id")
    run_summary = ("INSERT INTO harvest_run_summary (harvest_id, harvest_num, jobs_done, configurations, objects, "
                   "bytes, updated_at) VALUES (1, 1, 1, 1, 10, 10000, now()) ON CONFLICT (harvest_id, harvest_num) "
                   "DO UPDATE SET jobs_done = harvest_run_summary.jobs_done + 1, updated_at = now()")

    def cycles(mine: list[int]) -> None:
        with psycopg.connect(dsn) as conn:
            for job_id in mine:
                with conn.transaction():
                    conn.execute("UPDATE harvesters SET last_ready = now() WHERE controller_id = 'floor'")
                    conn.execute("UPDATE jobs SET status = 1, attempt_id = 'floor', submitteddate = now(), "
                                 "edition = edition + 1 WHERE job_id = %s AND status = 0", (job_id,))
                    conn.execute("UPDATE jobs SET controller = 'floor', claimed_at = now(), edition = edition + 1 "
                                 "WHERE job_id = %s AND controller IS NULL", (job_id,))
                    conn.execute("UPDATE jobs SET status = 2, startdate = now(), edition = edition + 1 "
                                 "WHERE job_id = %s AND status = 1", (job_id,))
                    conn.execute("UPDATE jobs SET status = 3, enddate = now(), edition = edition + 1 "
                                 "WHERE job_id = %s AND status = 2", (job_id,))
                    conn.execute(audit, (str(job_id),) * 4)
                    (historyinfo_id,) = conn.execute(history, (configs[job_id], job_id)).fetchone()
                    conn.execute(config_summary, (configs[job_id], historyinfo_id, job_id, historyinfo_id))
                    conn.execute(run_summary)

    workers = [threading.Thread(target=cycles, args=(job_ids[n::connections],)) for n in range(connections)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return len(job_ids) / (time.monotonic() - started)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a live process and of its children that have ended (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    # utime, stime, cutime, cstime: fields 14-17 of proc(5), counted from the state field (3) here
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _machine_cpu_seconds() -> tuple[float, float]:
    """The busy and the idle CPU seconds of the whole machine so far, over every core (Linux /proc/stat;
    time stolen by a hypervisor is neither)."""
    user, nice, system, idle, iowait, irq, softirq = (
        int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:8])
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, (idle + iowait) / tick


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from the parent ids in /proc)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found = [pid]
    for parent in found:
        found.extend(parents.get(parent, []))
    return found


def _settled(pids: Callable[[], list[int]], timeout: float = 60.0) -> None:
    """Wait until the processes have started up: under a tenth of a core's CPU over half a second."""
    deadline = time.monotonic() + timeout
    before = sum(_cpu_seconds(pid) for pid in pids())
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = sum(_cpu_seconds(pid) for pid in pids())
        if now - before < 0.05:
            return
        before = now


def run(url: str, queue_url: str, jobs: int, controllers: int, processes: int, work: Path
        ) -> tuple[float, float, float, float, float, int]:
    """Returns the wall time of the cycles, the CPU seconds the controllers' processes and the scheduler's
    (with its intake processes) used meanwhile, the busy and idle CPU seconds of the whole machine
    meanwhile (the broker, the database and this script are most of the rest), and how many ready
    messages the controllers sent."""
    env = f"B{uuid.uuid4().hex[:8]}"
    engine = create_engine(url)
    with engine.begin() as conn:  # every job NEW again, for this transport's run
        conn.execute(update(s.jobs).values(status=int(JobStatus.NEW), attempt_id=None, controller=None,
                                           claimed_at=None, submitteddate=None, startdate=None, enddate=None))
        for table in (s.historyinfo, s.harvesters, s.harvest_run_summary, s.config_history_summary):
            conn.execute(table.delete())
    environment = {**os.environ, "HARVESTSUITE__HARVESTSUITE__DATABASE__URL": url,
                   "HARVESTSUITE__HARVESTSUITE__QUEUE__URL": queue_url,
                   "HARVESTSUITE__COMMON__ENVIRONMENTNAME": env,
                   "HARVESTSUITE__HARVESTER__SCHEDULER__JOBGENERATIONPERIOD": "3600",
                   "HARVESTSUITE__HARVESTSUITE__QUEUE__POLLINTERVAL": "20"}
    scheduler = subprocess.Popen([sys.executable, "-m", "harvestdef", "scheduler", "run"], env=environment,
                                 cwd=ROOT, stderr=subprocess.PIPE, text=True)
    assert scheduler.stderr is not None
    seen = []
    while not seen or "running as the leader" not in seen[-1]:
        line = scheduler.stderr.readline()
        if not line:
            raise SystemExit("the scheduler did not start:\n" + "".join(seen))
        seen.append(line)
    log_path = work / f"scheduler-{env}.log"

    def keep_log() -> None:
        with open(log_path, "w") as log_file:
            for text_line in scheduler.stderr:
                log_file.write(text_line)

    threading.Thread(target=keep_log, daemon=True).start()
    per_process = -(-controllers // processes)
    context = multiprocessing.get_context("spawn")
    children = []
    go = context.Event()
    finish = context.Event()
    ready_events = []
    for index, first in enumerate(range(0, controllers, per_process)):
        ready = context.Event()
        child = context.Process(target=controllers_process, args=(
            queue_url, env, first, min(per_process, controllers - first), str(work / f"{env}-{index}"),
            ready, go, finish))
        child.start()
        children.append(child)
        ready_events.append(ready)
    # Starting up (imports, the scheduler's intake processes, the controllers' connections) is not a cycle:
    # the clock and the CPU count start once every process is up, when the controllers are let go.
    for ready in ready_events:
        if not ready.wait(120):
            raise SystemExit("the controllers did not start within 2 minutes")
    _settled(lambda: _descendants(scheduler.pid))
    scheduler_pids = _descendants(scheduler.pid)
    controller_pids = [child.pid for child in children if child.pid is not None]
    cpu_scheduler = -sum(_cpu_seconds(pid) for pid in scheduler_pids)
    cpu_controllers = -sum(_cpu_seconds(pid) for pid in controller_pids)
    machine_busy, machine_idle = _machine_cpu_seconds()
    started = time.monotonic()
    go.set()
    done = 0
    last_report = started
    with engine.connect() as conn:
        while done < jobs:
            time.sleep(0.5)
            done = conn.scalar(select(func.count()).where(s.jobs.c.status == int(JobStatus.DONE)))
            conn.rollback()
            if time.monotonic() - last_report > 10:
                print(f"  {done:,} of {jobs:,} jobs DONE after {time.monotonic() - started:.0f} s", flush=True)
                last_report = time.monotonic()
            if time.monotonic() - started > 3600:
                raise SystemExit(f"only {done} of {jobs} jobs DONE after an hour")
    wall = time.monotonic() - started
    cpu_scheduler += sum(_cpu_seconds(pid) for pid in scheduler_pids)
    cpu_controllers += sum(_cpu_seconds(pid) for pid in controller_pids)
    busy_now, idle_now = _machine_cpu_seconds()
    machine_busy, machine_idle = busy_now - machine_busy, idle_now - machine_idle
    finish.set()
    for child in children:
        child.join(timeout=120)
    scheduler.terminate()
    scheduler.wait(timeout=60)
    delete_queues(queue_url, env, controllers)
    lines = [line.split() for index in range(len(children))
             for line in (work / f"{env}-{index}").read_text().splitlines()]
    crawled = [line for line in lines if line[0] != "ready"]
    ready_messages = sum(int(line[1]) for line in lines if line[0] == "ready")
    with engine.connect() as conn:
        history = conn.scalar(select(func.count()).select_from(s.historyinfo))
        statuses = dict(conn.execute(select(s.jobs.c.status, func.count()).group_by(s.jobs.c.status)).all())
        attempts = {job_id: attempt for job_id, attempt in conn.execute(select(s.jobs.c.job_id, s.jobs.c.attempt_id))}
    engine.dispose()
    ids = [int(job_id) for job_id, _, _ in crawled]
    problems = []
    if statuses != {int(JobStatus.DONE): jobs}:
        problems.append(f"job statuses {statuses}")
    if history != jobs:
        problems.append(f"{history} historyinfo rows for {jobs} jobs")
    if len(ids) != len(set(ids)) or len(ids) != jobs:
        problems.append(f"{len(ids)} crawls of {len(set(ids))} distinct jobs")
    if any(attempts[int(job_id)] != attempt for job_id, attempt, _ in crawled):
        problems.append("a crawl of an attempt that is not the job's")
    retried = sum("could not be handled now" in line for line in log_path.read_text().splitlines())
    if retried:
        print(f"  the scheduler put {retried} messages back for a later try; first one:", flush=True)
        print("  " + next(line for line in log_path.read_text().splitlines() if "could not be handled" in line))
    if problems:
        raise SystemExit("incomplete run: " + "; ".join(problems))
    return wall, cpu_controllers, cpu_scheduler, machine_busy, machine_idle, ready_messages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--controllers", type=int, default=50)
    parser.add_argument("--processes", type=int, default=5, help="child processes the controllers run in")
    parser.add_argument("--transport", choices=("amqp", "sqlite", "both"), default="both")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"hs_bench_dispatch_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        started = time.monotonic()
        build(url, args.jobs)
        print(f"database {name}: {args.jobs:,} NEW jobs in {time.monotonic() - started:.1f} s; "
              f"{args.controllers} controllers in {args.processes} processes; {os.cpu_count()} cores", flush=True)
        with tempfile.TemporaryDirectory() as work:
            transports = ["amqp", "sqlite"] if args.transport == "both" else [args.transport]
            for transport in transports:
                queue_url = AMQP_URL if transport == "amqp" else f"sqlite:///{Path(work) / 'queue.db'}"
                floor = broker_floor(queue_url, args.controllers, args.processes)
                bare = database_floor(url, min(args.jobs, 2000))
                wall, cpu_controllers, cpu_scheduler, machine_busy, machine_idle, ready_messages = run(
                    url, queue_url, args.jobs, args.controllers, args.processes, Path(work))
                cycles = args.jobs / wall
                print(f"{transport:6s}: {args.jobs:,} full cycles (ready, dispatch, claim, STARTED, DONE with "
                      f"report) in {wall:.1f} s = {cycles:.0f} cycles/s; every job DONE once, "
                      f"{args.jobs:,} historyinfo rows", flush=True)
                rest = machine_busy - cpu_scheduler - cpu_controllers
                print(f"        CPU per cycle: scheduler {1000 * cpu_scheduler / args.jobs:.1f} ms, controllers "
                      f"{1000 * cpu_controllers / args.jobs:.1f} ms, the rest of the machine (broker, database, "
                      f"this script) {1000 * rest / args.jobs:.1f} ms; the machine's cores "
                      f"{machine_busy / (machine_busy + machine_idle):.0%} busy", flush=True)
                print(f"        {ready_messages / args.jobs:.1f} ready "
                      f"messages per cycle; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}",
                      flush=True)
                print(f"        floor: {floor:,.0f} confirmed publishes/s from {args.controllers} publishers; a cycle "
                      f"publishes {MESSAGES_PER_CYCLE}, so the cycles ran at "
                      f"{cycles * MESSAGES_PER_CYCLE / floor:.0%} of the transport's floor "
                      f"(at most {floor / MESSAGES_PER_CYCLE:.0f} cycles/s)", flush=True)
                print(f"        database floor: {bare:,.0f} bare cycles/s (a cycle's rows, one transaction each, "
                      f"4 connections); the cycles ran at {cycles / bare:.0%} of it", flush=True)
    finally:
        if not args.keep:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
