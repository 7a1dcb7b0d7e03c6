"""Web UI API benchmark on PostgreSQL: latency of the read endpoints under 16 concurrent clients.

Builds a fresh database ``hs_bench_webui_<random>`` (``init_database``), COPY-loads N domains (one
configuration and seed list each; one in eight named ``kultur…``), J jobs in H harvest definitions and
R rows of historyinfo (R / N runs of every configuration, each run's configurations split over its
harvests' jobs), then fills harvest_run_summary and config_history_summary with ``harvestsuite db
rebuild-summaries``. Then it serves the web UI as an operator would (``harvestsuite webui run``, waitress,
16 threads) and, in the same run, 16 client threads with keep-alive connections (http.client) and an API
token from ``harvestsuite users token`` call, one endpoint at a time: domain search (``/domains?q=kultur*``),
job list (``/jobs?status=DONE``), domain history (``/domains/{name}/history``, random domains) and harvest
statistics (``/harvests/{name}/statistics``, random harvests), all under /api/v1; each answer must be 200
with a list ``items`` (a 404 at first: reported missing, skipped). Printed: p50/p95/p99 and requests/s beside
the target p95 <= 200 ms; then, once each, overviews that read a whole table and a CSV export with the
server's peak memory (flat while it streams). The database is dropped at the end (``--keep`` keeps it).

``--database NAME`` loads into a database of that name once and keeps it: a later run with the same name
and sizes finds the load marker (a comment on the database, written when the load committed and again
when the summaries were rebuilt), skips the load, brings the schema up to date (``harvestsuite db
init``: its migrations fill what they add), rebuilds the summaries only if that never finished, and
measures. The load average is printed beside the figures: on a shared machine they mean little without it.

Usage::

    python bench/webui.py                                                  # 2,000,000 / 100,000 / 10,000,000
    python bench/webui.py --domains 20000 --jobs 1000 --history 100000     # 1/100: a quick check
    python bench/webui.py --database hs_bench_webui_full                   # load once, measure again later
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.jobgen import ADMIN_URL  # noqa: E402
from harvestdef.bulkload import copy_text  # noqa: E402
from harvestdef.db.engine import open_engine  # noqa: E402
from harvestdef.db.init import init_database  # noqa: E402
from harvestdef.model.status import JobStatus, StopReason  # noqa: E402

TARGET_P95_MS = 200.0
CLIENTS = 16
STEMS = ("kultur", "nyheder", "sport", "musik", "kommune", "butik", "forening", "rejse")
HARVESTS = 200
FIRST_RUN = datetime(2021, 3, 1, tzinfo=UTC)
PASSWORD = "bench password, not secret"


def copy_lines(conn, table: str, columns: str, lines, chunk: int = 50_000) -> None:  # noqa: ANN001
    """COPY generated tab-separated lines into ``table``, ``chunk`` lines per write."""
    def chunks():  # noqa: ANN202
        batch = []
        for line in lines:
            batch.append(line)
            if len(batch) == chunk:
                yield "".join(batch)
                batch = []
        yield "".join(batch)
    copy_text(conn, table, [name.strip() for name in columns.split(",")], chunks())
# the history's stop reasons, mostly complete, as a snapshot's are
STOP_REASONS = ([StopReason.DOWNLOAD_COMPLETE] * 8 + [StopReason.SIZE_LIMIT] * 6 + [StopReason.TIME_LIMIT] * 2
                + [StopReason.DOWNLOAD_UNFINISHED, StopReason.OBJECT_LIMIT, StopReason.CONFIG_SIZE_LIMIT,
                   StopReason.CONFIG_OBJECT_LIMIT])


def domain_name(i: int) -> str:
    return f"{STEMS[i % len(STEMS)]}-{i:07d}.dk"


def harvest_name(h: int) -> str:
    return f"selective-{h:03d}"


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def load_marker(domains: int, jobs: int, history: int) -> str:
    return f"bench/webui.py load: domains={domains} jobs={jobs} history={history}"


SUMMARISED = "; summaries rebuilt"  # appended to the load marker once rebuild-summaries has committed


def set_marker(url: str, marker: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            name = make_url(url).database
            conn.execute(text(f"COMMENT ON DATABASE \"{name}\" IS '{marker.replace(chr(39), chr(39) * 2)}'"))
    finally:
        engine.dispose()


def loaded_marker(admin_url: str, name: str) -> str | None:
    """The load marker of database ``name``; "" if it exists without one (a load that did not finish);
    None if there is no such database."""
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            row = conn.execute(text("SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                                    "WHERE datname = :name"), {"name": name}).first()
    finally:
        admin.dispose()
    return None if row is None else row[0] or ""


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"


def build(url: str, domains: int, jobs: int, history: int) -> None:
    """Load the database with COPY; historyinfo row k is run k // domains of configuration k % domains + 1."""
    engine = open_engine(url)
    init_database(engine)
    runs = max(1, history // domains)
    jobs_per_run = max(HARVESTS, jobs // runs)
    started = time.monotonic()
    with engine.begin() as conn:
        template = conn.scalar(text("SELECT template_id FROM ordertemplates WHERE name = 'default_orderxml'"))
        schedule = conn.scalar(text("SELECT min(schedule_id) FROM schedules"))
        # domains.defaultconfig and configurations.domain_id refer to each other: load without FK triggers
        conn.execute(text("SET LOCAL session_replication_role = replica"))
        copy_lines(conn, "domains", "domain_id, name, defaultconfig, edition",
                   (f"{i}\t{domain_name(i)}\t{i}\t1\n" for i in range(1, domains + 1)))
        copy_lines(conn, "configurations", "config_id, name, domain_id, template_id, maxobjects, maxrate, maxbytes",
                   (f"{i}\tdefaultconfig\t{i}\t{template}\t-1\t100\t{1_000_000_000 if i % 3 else -1}\n"
                    for i in range(1, domains + 1)))
        copy_lines(conn, "seedlists", "seedlist_id, name, domain_id, seeds",
                   (f"{i}\tdefaultseeds\t{i}\thttps://www.{domain_name(i)}/\n" for i in range(1, domains + 1)))
        copy_lines(conn, "config_seedlists", "config_id, seedlist_id", (f"{i}\t{i}\n" for i in range(1, domains + 1)))
        submitted = _timestamp(FIRST_RUN - timedelta(days=30))
        copy_lines(conn, "harvestdefinitions", "harvest_id, name, comments, numevents, submitted, isactive, edition",
                   (f"{h}\t{harvest_name(h)}\t\t{runs}\t{submitted}\ttrue\t1\n" for h in range(1, HARVESTS + 1)))
        copy_lines(conn, "partialharvests", "harvest_id, schedule_id",
                   (f"{h}\t{schedule}\n" for h in range(1, HARVESTS + 1)))

        def job_of(run: int, config_id: int) -> int:
            return run * jobs_per_run + (config_id - 1) * jobs_per_run // domains + 1

        def harvest_of(job_id: int) -> int:
            return ((job_id - 1) % jobs_per_run) * HARVESTS // jobs_per_run + 1

        def job_lines() -> Iterator[str]:
            for job_id in range(1, runs * jobs_per_run + 1):
                run = (job_id - 1) // jobs_per_run
                status = JobStatus.FAILED if job_id % 23 == 0 else JobStatus.DONE
                begun = FIRST_RUN + timedelta(days=90 * run, minutes=job_id % 10_000)
                yield (f"{job_id}\t{harvest_of(job_id)}\t{int(status)}\tFOCUSED\tfalse\tdefault_orderxml\t"
                       f"<crawl-order/>\thttps://www.{domain_name(job_id % domains + 1)}/\t{run + 1}\t"
                       f"{_timestamp(begun)}\t{_timestamp(begun + timedelta(hours=3))}\t{_timestamp(begun)}\t"
                       f"{_timestamp(begun)}\t{domains // jobs_per_run}\n")

        copy_lines(conn, "jobs", "job_id, harvest_id, status, channel, snapshot, orderxml, orderxmldoc, seedlist, "
                                "harvest_num, startdate, enddate, submitteddate, creationdate, num_configs",
                   job_lines())
        copy_lines(conn, "job_configs", "job_id, config_id",
                   (f"{job_of(k // domains, k % domains + 1)}\t{k % domains + 1}\n" for k in range(runs * domains)))

        def history_lines() -> Iterator[str]:
            for k in range(history):
                run, config_id = divmod(k, domains)
                job_id = job_of(min(run, runs - 1), config_id)
                stop = STOP_REASONS[(k * 7) % len(STOP_REASONS)]
                objects = (k * 37) % 3000 + 1
                size = objects * ((k * 13) % 60_000 + 1_000)
                novel = size // (2 + run % 3)
                when = FIRST_RUN + timedelta(days=90 * run, minutes=job_id % 10_000 + 180)
                yield (f"{int(stop)}\t{objects}\t{size}\t{config_id}\t{harvest_of(job_id)}\t{job_id}\t"
                       f"{_timestamp(when)}\t{objects // 2}\t{novel}\t{objects - objects // 2}\t{size - novel}\n")

        copy_lines(conn, "historyinfo", "stopreason, objectcount, bytecount, config_id, harvest_id, job_id, "
                                       "harvest_time, novel_objects, novel_bytes, duplicate_objects, duplicate_bytes",
                   history_lines())
        for table, column in (("domains", "domain_id"), ("configurations", "config_id"),
                              ("seedlists", "seedlist_id"), ("historyinfo", "historyinfo_id")):
            conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                              f"(SELECT max({column}) FROM {table}))"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    set_marker(url, load_marker(domains, jobs, history))
    engine.dispose()
    print(f"loaded {domains:,} domains, {runs * jobs_per_run:,} jobs in {HARVESTS} harvests, {history:,} "
          f"historyinfo rows in {time.monotonic() - started:.1f} s", flush=True)


@dataclass
class Figures:
    latencies_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


class Client:
    """One keep-alive connection with the bearer token; ``get`` returns (status, seconds, body)."""

    def __init__(self, port: int, token: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    def get(self, path: str) -> tuple[int, float, bytes]:
        started = time.perf_counter()
        try:
            self.connection.request("GET", path, headers=self.headers)
            response = self.connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()  # reconnects on the next request
            raise
        return response.status, time.perf_counter() - started, body

    def close(self) -> None:
        self.connection.close()


def problem_with(status: int, body: bytes) -> str | None:
    """None when the answer is 200 with a JSON object holding a list ``items``; else what is wrong."""
    if status != 200:
        return f"status {status}: {body[:200]!r}"
    try:
        document = json.loads(body)
    except ValueError:
        return f"not JSON: {body[:200]!r}"
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        return f"no items list: {body[:200]!r}"
    return None


def alone_ms(port: int, token: str, paths: list[str], count: int = 30) -> float:
    """The median latency of one client alone (after a warm-up): the floor the concurrent figures queue on."""
    client = Client(port, token)
    try:
        for path in paths[:3]:
            client.get(path)
        return statistics.median(client.get(paths[n % len(paths)])[1] * 1000 for n in range(count))
    finally:
        client.close()


def measure(port: int, token: str, paths: list[str], requests: int, max_seconds: float,
            clients: int) -> Figures:
    """``requests`` GETs (cycling through ``paths``) from ``clients`` threads at once, each on its own
    keep-alive connection."""
    figures = Figures()
    counter = iter(range(requests))
    lock = threading.Lock()
    deadline = time.monotonic() + max_seconds

    def work() -> None:
        client = Client(port, token)
        try:
            while time.monotonic() < deadline:
                with lock:
                    number = next(counter, None)
                if number is None:
                    return
                path = paths[number % len(paths)]
                try:
                    status, seconds, body = client.get(path)
                except (OSError, http.client.HTTPException) as exc:
                    with lock:
                        figures.failures.append(f"{path}: {exc!r}")
                    continue
                problem = problem_with(status, body)
                with lock:
                    figures.latencies_ms.append(seconds * 1000)
                    if problem:
                        figures.failures.append(f"{path}: {problem}")
        finally:
            client.close()

    threads = [threading.Thread(target=work, name=f"client-{n}") for n in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    figures.seconds = time.monotonic() - started
    return figures


def api_routes(port: int, token: str) -> set[str]:
    """The GET routes the API describes at /api/v1/openapi.json, e.g. ``/domains/{name}/history``."""
    client = Client(port, token)
    try:
        status, _, body = client.get("/api/v1/openapi.json")
    finally:
        client.close()
    if status != 200:
        raise RuntimeError(f"GET /api/v1/openapi.json answered {status}: {body[:200]!r}")
    return {path for path, methods in json.loads(body)["paths"].items() if "get" in methods}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def harvestsuite(url: str, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "harvestdef", "--set", f"harvestsuite.database.url={url}", *args],
                          input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"harvestsuite {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def wait_for(port: int, process: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"harvestsuite webui run exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the web UI did not listen on port {port} within {seconds} s")


def peak_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmHWM:")[1].split()[0]) / 1024


def once(port: int, token: str, pid: int, path: str) -> None:
    """One GET read to its end: lines, seconds and the server's peak memory (VmHWM) before and after."""
    before, started, lines, client = peak_mb(pid), time.perf_counter(), 0, Client(port, token)
    client.connection.request("GET", path, headers=client.headers)
    response = client.connection.getresponse()
    while chunk := response.read(1 << 16):
        lines += chunk.count(b"\n")
    print(f"once: GET {path}: {response.status}, {lines} lines in {time.perf_counter() - started:.2f} s; server "
          f"peak RSS {before:.0f} -> {peak_mb(pid):.0f} MB", flush=True)
    client.close()


def serve_and_measure(url: str, domains: int, requests: int, max_seconds: float, clients: int) -> bool:
    user = f"bench-{secrets.token_hex(4)}"  # one per run: a reused database keeps the users of earlier runs
    harvestsuite(url, "users", "add", user, "--role", "admin", stdin=PASSWORD + "\n")
    token = harvestsuite(url, "users", "token", user).strip()
    port = free_port()
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"hs-bench-webui-{port}.log"
    rng = random.Random(20261123)
    endpoints = {
        ("domain search       ", "/domains"): ["/api/v1/domains?q=kultur*"],
        ("job list            ", "/jobs"): ["/api/v1/jobs?status=DONE"],
        ("domain history      ", "/domains/{name}/history"): [
            f"/api/v1/domains/{quote(domain_name(rng.randint(1, domains)))}/history" for _ in range(500)],
        ("harvest statistics  ", "/harvests/{name}/statistics"): [
            f"/api/v1/harvests/{harvest_name(rng.randint(1, HARVESTS))}/statistics" for _ in range(200)],
    }
    all_good = True
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "harvestdef", "--set", f"harvestsuite.database.url={url}",
             "--set", f"harvestsuite.webui.secretKey={secrets.token_urlsafe(24)}",
             "webui", "run", "--host", "127.0.0.1", "--port", str(port), "--threads", "16"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(port, server)
            print(f"web UI: harvestsuite webui run (waitress, 16 threads) on port {port}; {clients} clients, "
                  f"{requests} requests per endpoint; log {log_path}", flush=True)
            print(f"{'endpoint':20}  {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'req/s':>7}  target p95 <= "
                  f"{TARGET_P95_MS:.0f} ms")
            routes = api_routes(port, token)
            for (label, route), paths in endpoints.items():
                if route not in routes:
                    print(f"{label}  404: GET /api/v1{route} is not in /api/v1/openapi.json (yet)", flush=True)
                    all_good = False
                    continue
                floor = alone_ms(port, token, paths)
                figures = measure(port, token, paths, requests, max_seconds, clients)
                values = figures.latencies_ms
                if not values:
                    print(f"{label}  no answers: {figures.failures[:1]}", flush=True)
                    all_good = False
                    continue
                p95 = percentile(values, 0.95)
                verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
                print(f"{label}  {percentile(values, 0.50):8.1f} {p95:8.1f} {percentile(values, 0.99):8.1f} "
                      f"{len(values) / figures.seconds:7.1f}  {verdict} ({len(values)} answers, "
                      f"mean {statistics.fmean(values):.1f} ms; one client alone: p50 {floor:.1f} ms; "
                      f"{load_average()})", flush=True)
                if figures.failures:
                    all_good = False
                    print(f"    {len(figures.failures)} bad answers, e.g. {figures.failures[0]}", flush=True)
            for path in ("/tlds?limit=1000", "/unused/configurations", "/unused", "/export/domains.csv?q=kultur*"):
                once(port, token, server.pid, f"/api/v1{path}")
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    return all_good


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", type=int, default=2_000_000)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--history", type=int, default=10_000_000)
    parser.add_argument("--requests", type=int, default=2_000, help="requests per endpoint")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="at most this long per endpoint")
    parser.add_argument("--clients", type=int, default=CLIENTS, help="concurrent clients (threads)")
    parser.add_argument("--admin-url", default=ADMIN_URL)
    parser.add_argument("--keep", action="store_true", help="do not drop the benchmark database")
    parser.add_argument("--database", metavar="NAME",
                        help="load into this database once and keep it; reuse it when it holds these sizes")
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores; PostgreSQL at {make_url(args.admin_url).host}; {load_average()}",
          flush=True)
    name = args.database or f"hs_bench_webui_{uuid.uuid4().hex[:8]}"
    wanted = load_marker(args.domains, args.jobs, args.history)
    found = loaded_marker(args.admin_url, name) if args.database else None
    if found is not None and found not in (wanted, wanted + SUMMARISED):
        print(f"database {name!r} exists but does not hold a finished load of these sizes "
              f"({found or 'no load marker: its load did not finish'}); drop it or name another", file=sys.stderr)
        return 2
    admin = create_engine(args.admin_url, isolation_level="AUTOCOMMIT")
    if found is None:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(args.admin_url).set(database=name).render_as_string(hide_password=False)
    keep = args.keep or bool(args.database)
    try:
        if found is None:
            build(url, args.domains, args.jobs, args.history)
        else:
            print(f"reusing database {name!r} ({found}); bringing its schema up to date", flush=True)
            print(harvestsuite(url, "db", "init").strip(), flush=True)
        if found != wanted + SUMMARISED:
            started = time.monotonic()
            print(harvestsuite(url, "db", "rebuild-summaries").strip(),
                  f"in {time.monotonic() - started:.1f} s", flush=True)
            set_marker(url, wanted + SUMMARISED)
        all_good = serve_and_measure(url, args.domains, args.requests, args.max_seconds, args.clients)
    finally:
        if keep:
            print(f"database kept: {url}")
        else:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return 0 if all_good else 1


if __name__ == "__main__":
    sys.exit(main())
