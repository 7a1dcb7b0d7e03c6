"""Live job page benchmark: what people watching a running job's page cost the web UI and the crawl.

An installation as users run it, on this machine, each part a process of its own reading one settings
file: a fresh PostgreSQL database ``hs_bench_live_<random>`` (``init_database``; dropped at the end),
RabbitMQ, ``harvestsuite scheduler run``, one ``harvestsuite harvester run`` with the bundled engine as its
child, and ``harvestsuite webui run`` (waitress, its default threads). The settings are the defaults
(jobgenerationperiod 60 s, crawlLoopWaitTime 20 s, heartbeats every 30 s, a frontier report every 600 s,
livePollIntervalMs 5000) except sendReadyDelay 2 s, which only shortens the idle controller's wait for its
job. The crawl template is NetarchiveSuite's default (templates/default_orderxml.cxml) with the politeness
the demo lowers for a site on loopback (``demo_template`` of harvestdef/demo/definitions.py). The site is
tests/engine/site.py's TestSite in a process of its own: 8 hosts of ``--pages / 8`` pages, each page with
an image of its own, named to 127.0.0.1 in the engine's hosts file (``harvestsuite.crawler.hostsFile``).
A selective harvest of the 8 hosts (one configuration per domain, made from their seeds as an event
harvest makes them) runs once: one job. Once the job's second progress report is in, on the same job,
phases of ``--phase-seconds`` each:

A   no viewers;
B   ``--viewers`` viewers, each as a browser running the job page's script (webui/static/live.js): logged in
    through the login form with a session of its own, one keep-alive connection (http.client), GET
    /api/v1/jobs/{id}/live with the session cookie, the next one livePollIntervalMs after each answer (the
    first at a random moment of the first interval: pages are opened at different times);
C   the same viewers asking back to back, the worst case, reported apart (``--no-back-to-back`` leaves it out);
A'  no viewers again, so that a drift of the crawl's own rate shows.

Printed per phase: crawl.log lines/s, the lines the engine wrote to the job's crawl.log in the controller's
serverDir during the phase (counted in the file) over the phase's seconds; the /live answers, answers/s,
their p50/p95/p99 latency and size, non-200 answers; the CPU each part used, in cores. Then each viewer
phase's crawl seconds per 1,000 crawl.log lines over the same without viewers (the floor: the mean of A
and A', measured in the same run) and the drift between A and A', beside
the cores, the CPU model and the load average before and after. Every /live answer must be 200, JSON, with
the job's id and state STARTED; every phase must see the job STARTED (read from the database every half
second) and crawl.log growing up to its last seconds, and the crawl must not have reached its tail, or the
run is refused with the reason (exit status 1). The whole run takes about 3 minutes plus the phases.

Usage::

    python bench/livepage.py                                        # 50 viewers, 20 s phases
    python bench/livepage.py --phase-seconds 10 --viewers 20        # a quick check
    python bench/livepage.py --viewers 200 --pages 80000 --keep     # keep the database and the directory
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.dispatch import AMQP_URL, _cpu_seconds, _descendants, _machine_cpu_seconds  # noqa: E402
from bench.webui import ADMIN_URL, PASSWORD, Client, free_port, harvestsuite, percentile, wait_for  # noqa: E402
from harvestdef.db.engine import open_engine, write_transaction  # noqa: E402
from harvestdef.db.init import init_database  # noqa: E402
from harvestdef.db.types import utcnow  # noqa: E402
from harvestdef.demo.definitions import POLITENESS, demo_template  # noqa: E402
from harvestdef.model.status import JobStatus  # noqa: E402
from harvestdef.queues import QueueNames  # noqa: E402
from harvestdef.repositories.harvests import HarvestRepository  # noqa: E402
from harvestdef.repositories.templates import TemplateRepository  # noqa: E402
from harvestdef.settings import Settings, load_settings  # noqa: E402
from harvester.jobdir import JobDirectory  # noqa: E402

HOSTS = tuple(f"www.live{n:02d}-kulturarv.dk" for n in range(1, 9))
URIS_PER_PAGE = 2  # a TestSite page and its image
ACTOR = "bench-livepage"
TEMPLATE = "bench_live_orderxml"
HARVEST = "Live page benchmark"
VIEWER, ADMIN = "bench-viewer", "bench-admin"
FETCHING_WITHIN = 5.0  # seconds before a phase's end within which crawl.log must have grown
# The crawl must not have reached this share of the site's URIs when the last phase ends: in its tail the
# hosts' queues run dry one after another and the rate falls for reasons of its own.
TAIL_SHARE = 0.8
PARTS = ("crawl", "web UI", "viewers", "scheduler", "PostgreSQL", "RabbitMQ", "site", "other")

# The site runs as a process of its own: in this one the viewers' threads would take the GIL from it and
# its serving would count as the crawl's cost. It serves until its standard input closes, when this script
# ends or dies, so it never outlives the benchmark.
SITE_PROGRAM = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.engine.site import TestSite
with TestSite(hosts=tuple(sys.argv[2].split(",")), pages=int(sys.argv[3])) as site:
    site.write_hosts_file(sys.argv[4])
    print(site.port, flush=True)
    sys.stdin.read()
"""


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "CPU model unknown"


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def processes_named(prefixes: tuple[str, ...]) -> list[int]:
    """Every process whose command name (/proc/PID/comm) starts with one of ``prefixes``."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            if comm.read_text().strip().startswith(prefixes):
                found.append(int(comm.parent.name))
    return found


# ---------------------------------------------------------------------------------------------- processes
@dataclass
class Child:
    """One process of the installation, in a session of its own (a Ctrl-C reaches only this script, which
    then stops them in order), its output in ``log``."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def check_running(self) -> None:
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.text()[-3000:]}")

    def stop(self, grace: float) -> None:
        """SIGTERM; after ``grace`` seconds SIGKILL to its process group; then whatever is left of the group."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                print(f"  {self.name} did not stop within {grace:.0f} s: killed", flush=True)
                kill_group(self.process.pid)
                self.process.wait()
        kill_group(self.process.pid)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def clean_environment() -> dict[str, str]:
    """This environment without HarvestSuite settings: the processes read only the settings file."""
    kept = {key: value for key, value in os.environ.items()
            if not key.startswith("HARVESTSUITE__") and key != "HARVESTSUITE_CONFIG"}
    return {**kept, "PYTHONUNBUFFERED": "1"}


def start_harvestsuite(name: str, work: Path, *args: str) -> Child:
    log = work / f"{name}.log"
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "harvestdef", "--config", str(work / "settings.toml"),
                                    *args], cwd=work, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True, env=clean_environment())
    return Child(name, process, log)


def start_site(work: Path, pages_per_host: int, hosts_file: Path) -> tuple[Child, int]:
    log = work / "site.log"
    with open(log, "ab") as err:
        process = subprocess.Popen([sys.executable, "-c", SITE_PROGRAM, str(ROOT), ",".join(HOSTS),
                                    str(pages_per_host), str(hosts_file)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=err, start_new_session=True,
                                   env=clean_environment())
    assert process.stdout is not None
    child, line = Child("site", process, log), process.stdout.readline().decode().strip()
    if not line.isdigit():
        child.stop(5)
        raise RuntimeError(f"the site did not start:\n{child.text()[-2000:]}")
    return child, int(line)


def stop_site(site: Child) -> None:
    if site.process.stdin is not None and not site.process.stdin.closed:
        site.process.stdin.close()  # the site's signal to stop
    with contextlib.suppress(subprocess.TimeoutExpired):
        site.process.wait(timeout=10)
    site.stop(5)


def stop_engine(server_dir: Path, grace: float) -> None:
    """The bundled engine, should it outlive its controller (it stops by itself once the controller's pipe
    closes; this makes sure it did)."""
    pid_file = server_dir / "engine.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().split()[0])
    cmdline = Path(f"/proc/{pid}/cmdline")
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            if b"engine" not in cmdline.read_bytes():
                return  # the pid is another process's by now
        except OSError:
            return
        time.sleep(0.5)
    print(f"  the engine ({pid}) did not stop within {grace:.0f} s: killed", flush=True)
    kill_group(pid)


def wait_for_log(child: Child, needle: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while needle not in child.text():
        child.check_running()
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {needle!r} in {child.log} within {seconds:.0f} s:\n{child.text()[-3000:]}")
        time.sleep(0.2)


def delete_queues(queue_url: str, environment: str, server_dir: Path) -> None:
    """The run's queues: RabbitMQ keeps durable queues for good."""
    import pika

    names = QueueNames(environment)
    queues = [names.scheduler, names.monitor, names.dead_letter, names.jobs("FOCUSED"), names.jobs("SNAPSHOT")]
    if (server_dir / "controller-id").exists():
        queues.append(names.controller((server_dir / "controller-id").read_text().strip()))
    connection = pika.BlockingConnection(pika.URLParameters(queue_url))
    try:
        channel = connection.channel()
        for queue in queues:
            channel.queue_delete(queue)
    finally:
        connection.close()


# ---------------------------------------------------------------------------------------------- set-up
def toml_value(value: object) -> str:
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(str(value))


def write_settings(path: Path, values: dict[str, object]) -> Settings:
    path.write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in values.items()), encoding="utf-8")
    return load_settings(path, environ={})


def create_harvest(url: str, settings: Settings, site_port: int) -> int:
    """The template and a selective harvest of every host of the site, due now, as a curator makes them."""
    engine = open_engine(url)
    try:
        with write_transaction(engine) as conn:
            templates = TemplateRepository(conn, ACTOR)
            templates.create(TEMPLATE, demo_template(templates.get("default_orderxml").orderxml),
                             "default_orderxml with the demo's politeness, for a site on loopback")
            harvests = HarvestRepository.from_settings(conn, settings, ACTOR)
            harvest = harvests.create_selective(HARVEST, "Once", nextdate=utcnow(), active=True,
                                                comments="bench/livepage.py")
            harvests.add_seeds(HARVEST, [f"http://{host}:{site_port}/" for host in HOSTS], TEMPLATE,
                               harvest.edition)
            return harvest.harvest_id
    finally:
        engine.dispose()


class CrawlWatch:
    """The running job as the benchmark reads it: its status in the database, and the lines of its crawl.log
    (complete lines only, read on from where the last count stopped)."""

    def __init__(self, url: str, job_id: int, crawl_log: Path) -> None:
        self.engine = create_engine(url, pool_size=1)
        self.job_id = job_id
        self.crawl_log = crawl_log
        self._offset = self._lines = 0

    def status(self) -> JobStatus:
        with self.engine.connect() as conn:
            return JobStatus(conn.scalar(text("SELECT status FROM jobs WHERE job_id = :id"), {"id": self.job_id}))

    def lines(self) -> int:
        with open(self.crawl_log, "rb") as log:
            log.seek(self._offset)
            while chunk := log.read(1 << 20):
                complete = chunk.rfind(b"\n") + 1
                self._lines += chunk.count(b"\n", 0, complete)
                self._offset += complete
                if complete < len(chunk):
                    break  # a line being written is counted once it is complete
        return self._lines

    def close(self) -> None:
        self.engine.dispose()


def wait_for_job(url: str, harvest_id: int, server_dir: Path, controller: Child, seconds: float) -> tuple[int, Path]:
    """The harvest's job once it is STARTED, and its crawl.log once the engine has written to it."""
    engine = create_engine(url)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            controller.check_running()
            with engine.connect() as conn:
                job = conn.execute(text("SELECT job_id, status FROM jobs WHERE harvest_id = :id"),
                                   {"id": harvest_id}).first()
            if job is not None and JobStatus(job.status) not in (JobStatus.NEW, JobStatus.SUBMITTED):
                if JobStatus(job.status) != JobStatus.STARTED:
                    raise RuntimeError(f"job {job.job_id} is {JobStatus(job.status).name}:\n"
                                       f"{controller.text()[-3000:]}")
                for path in server_dir.glob(f"{job.job_id}_*"):
                    launches = JobDirectory.load(path).launches() if (path / "job.json").exists() else []
                    if launches and launches[-1].crawl_log.exists() and launches[-1].crawl_log.stat().st_size:
                        return job.job_id, launches[-1].crawl_log
            time.sleep(0.5)
    finally:
        engine.dispose()
    raise RuntimeError(f"no job of harvest {harvest_id} crawling within {seconds:.0f} s:\n{controller.text()[-3000:]}")


def wait_for_reports(port: int, token: str, job_id: int, seconds: float) -> dict:
    """The job's /live answer (asked with the API token) once its second progress report and a frontier
    report are in: the crawl has been running for a progress interval, and a viewer sees all of it."""
    client = Client(port, token)
    first = None
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            status, _, body = client.get(f"/api/v1/jobs/{job_id}/live")
            if status != 200:
                raise RuntimeError(f"GET /api/v1/jobs/{job_id}/live answered {status}: {body[:300]!r}")
            live = json.loads(body)
            first = first or live["reported_at"]
            if first and live["reported_at"] != first and live["frontier_reported_at"]:
                return live
            time.sleep(1)
    finally:
        client.close()
    raise RuntimeError(f"job {job_id} had not two progress reports and a frontier report within {seconds:.0f} s")


# ---------------------------------------------------------------------------------------------- viewers
class Viewer:
    """One person with the job page open: a session of their own from the login form, one keep-alive
    connection, cookies kept as a browser keeps them."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes, float]:
        """(status, body, seconds from sending the request to having read the whole answer)."""
        headers = dict(headers or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{key}={value}" for key, value in self.cookies.items())
        started = time.perf_counter()
        try:
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
            answer = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()  # reconnects at the next request
            raise
        seconds = time.perf_counter() - started
        for header in response.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie()
            cookie.load(header)
            self.cookies.update((key, morsel.value) for key, morsel in cookie.items())
        return response.status, answer, seconds

    def log_in(self, name: str, password: str) -> None:
        status, page, _ = self.request("GET", "/login")
        match = re.search(rb'name="csrf_token" value="([^"]+)"', page)
        if status != 200 or match is None:
            raise RuntimeError(f"GET /login answered {status} without a CSRF token: {page[:300]!r}")
        form = urlencode({"name": name, "password": password, "csrf_token": match.group(1).decode()})
        status, answer, _ = self.request("POST", "/login", form.encode(),
                                         {"Content-Type": "application/x-www-form-urlencoded"})
        if status != 302:
            raise RuntimeError(f"logging in as {name} answered {status}: {answer[:300]!r}")

    def close(self) -> None:
        self.connection.close()


def problem_with(status: int, body: bytes, job_id: int) -> str | None:
    """None when the answer is 200 with the live view of the job, STARTED; else what is wrong."""
    if status != 200:
        return f"status {status}: {body[:200]!r}"
    try:
        live = json.loads(body)
    except ValueError:
        return f"not JSON: {body[:200]!r}"
    if not isinstance(live, dict) or live.get("job_id") != job_id:
        return f"not job {job_id}'s live view: {body[:200]!r}"
    return None if live.get("state") == "STARTED" else f"the job is {live.get('state')}, not STARTED"


# ---------------------------------------------------------------------------------------------- phases
class CpuMeter:
    """CPU seconds so far of each part of the installation, and the whole machine's busy and idle seconds."""

    def __init__(self, leaders: dict[str, int]) -> None:
        self.leaders = leaders  # part -> the pid of the process that it and its children are

    def read(self) -> dict[str, float]:
        used = {part: sum(_cpu_seconds(pid) for pid in _descendants(leader)) for part, leader in self.leaders.items()}
        used["viewers"] = time.process_time()  # this script: the viewers' threads and the sampling
        used["PostgreSQL"] = sum(_cpu_seconds(pid) for pid in processes_named(("postgres",)))
        used["RabbitMQ"] = sum(_cpu_seconds(pid) for pid in processes_named(("beam.smp", "epmd", "erl_child")))
        used["busy"], used["idle"] = _machine_cpu_seconds()
        return used


@dataclass
class Phase:
    label: str
    what: str
    seconds: float = 0.0
    lines: int = 0
    lines_at_end: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    answer_bytes: int = 0
    last_answer: float = 0.0
    statuses: Counter[int] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    cores: dict[str, float] = field(default_factory=dict)
    load: float = 0.0

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.seconds


def view(viewer: Viewer, path: str, job_id: int, started: float, deadline: float, first_wait: float,
         pause: float, stop: threading.Event, phase: Phase, lock: threading.Lock) -> None:
    """One viewer through a phase: ask, read the answer, ask again ``pause`` seconds later (live.js waits so
    after an answer and after a failure alike); no request starts after ``deadline``."""
    headers = {"Accept": "application/json"}
    next_at = started + first_wait
    while next_at < deadline:
        if stop.wait(max(0.0, next_at - time.monotonic())):
            return
        try:
            status, body, seconds = viewer.request("GET", path, headers=headers)
        except (OSError, http.client.HTTPException) as exc:
            with lock:
                phase.problems.append(f"request failed: {exc!r}")
            next_at = time.monotonic() + pause
            continue
        problem = problem_with(status, body, job_id)
        now = time.monotonic()
        with lock:
            phase.latencies_ms.append(seconds * 1000)
            phase.answer_bytes += len(body)
            phase.statuses[status] += 1
            phase.last_answer = max(phase.last_answer, now - started)
            if problem:
                phase.problems.append(problem)
        next_at = now + pause


def run_phase(phase: Phase, seconds: float, watch: CrawlWatch, meter: CpuMeter, viewers: list[Viewer],
              pause: float, stop: threading.Event, rng: random.Random) -> Phase:
    """``seconds`` of the crawl with ``viewers`` asking ``pause`` seconds after each answer (none: the floor),
    the job's status and crawl.log read every half second."""
    lock = threading.Lock()
    path = f"/api/v1/jobs/{watch.job_id}/live"
    if (status := watch.status()) != JobStatus.STARTED:
        phase.refusals.append(f"the job was {status.name} at the phase's start")
    lines_before, cpu_before = watch.lines(), meter.read()
    started = time.monotonic()
    deadline = started + seconds
    threads = [threading.Thread(target=view, name=f"viewer-{n}", daemon=True, args=(
        viewer, path, watch.job_id, started, deadline, rng.uniform(0, pause), pause, stop, phase, lock))
        for n, viewer in enumerate(viewers)]
    for thread in threads:
        thread.start()
    last_growth, lines = started, lines_before
    while (now := time.monotonic()) < deadline:
        time.sleep(min(0.5, deadline - now))
        status, counted = watch.status(), watch.lines()
        if status != JobStatus.STARTED:
            phase.refusals.append(f"the job was {status.name} {time.monotonic() - started:.1f} s into the phase")
            break
        if counted > lines:
            last_growth, lines = time.monotonic(), counted
    ended = time.monotonic()
    phase.lines_at_end = watch.lines()
    phase.lines, phase.seconds = phase.lines_at_end - lines_before, ended - started
    cpu_after, phase.load = meter.read(), os.getloadavg()[0]
    for thread in threads:
        thread.join(timeout=90)
    if ended - last_growth > FETCHING_WITHIN:
        phase.refusals.append(f"crawl.log got no new line in the phase's last {ended - last_growth:.1f} s: the "
                              f"crawl had stopped fetching")
    phase.cores = {part: (cpu_after[part] - cpu_before[part]) / phase.seconds for part in cpu_after}
    phase.cores["other"] = max(0.0, phase.cores["busy"] - sum(phase.cores[part] for part in PARTS[:-1]))
    return phase


def print_phases(phases: list[Phase]) -> None:
    print(f"\n{'phase':33} {'seconds':>7} {'crawl.log':>9} {'lines/s':>7} {'answers':>7} {'answers/s':>9} "
          f"{'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'KB each':>7} {'non-200':>7}")
    for phase in phases:
        values = phase.latencies_ms
        answers = (f"{len(values):7d} {len(values) / max(phase.seconds, phase.last_answer):9.1f} "
                   f"{percentile(values, 0.50):7.1f} {percentile(values, 0.95):7.1f} {percentile(values, 0.99):7.1f} "
                   f"{phase.answer_bytes / len(values) / 1000:7.1f} "
                   f"{sum(n for status, n in phase.statuses.items() if status != 200):7d}") if values else ""
        print(f"{phase.label + '  ' + phase.what:33} {phase.seconds:7.1f} {phase.lines:9d} "
              f"{phase.lines_per_second:7.1f} {answers}")
    print(f"\nCPU in each phase, in cores (CPU seconds per second; the machine has {os.cpu_count()}):")
    print(f"{'phase':6} {'busy':>5} " + " ".join(f"{part:>10}" for part in PARTS) + f" {'load 1 min':>10}")
    for phase in phases:
        print(f"{phase.label:6} {phase.cores['busy']:5.2f} "
              + " ".join(f"{phase.cores[part]:10.2f}" for part in PARTS) + f" {phase.load:10.2f}")
    bad = [f"{phase.label}: {problem}" for phase in phases for problem in phase.problems]
    answers = sum(len(phase.latencies_ms) for phase in phases)
    if bad:
        print(f"\nBAD: {len(bad)} /live requests failed or were not answered 200 with the STARTED job's live view "
              f"(of {answers} answers); the first: {bad[0]}")
    else:
        print(f"\nevery /live answer ({answers}) was 200, JSON, with the job's id and state STARTED; no request failed")


def print_ratios(phases: list[Phase]) -> None:
    """Each viewer phase's crawl time per 1,000 crawl.log lines over the floor: that time without viewers
    (the mean of A and A'), the least the crawl takes. A ratio above 1 is what the viewers cost; one below 1
    by less than the drift between A and A' is noise, not a crawl sped up by its viewers."""
    before, after = phases[0].lines_per_second, phases[-1].lines_per_second  # A and A'
    floor = (1000 / before + 1000 / after) / 2
    drift = abs(1000 / after - 1000 / before) / floor
    print(f"\ncrawl seconds per 1,000 crawl.log lines without viewers: A {1000 / before:.2f}, A' {1000 / after:.2f}; "
          f"the floor (their mean) {floor:.2f}; drift |A' - A| / floor {drift:.3f}")
    for phase in phases[1:-1]:
        answers = len(phase.latencies_ms)
        seconds = 1000 / phase.lines_per_second
        print(f"crawl seconds per 1,000 lines with viewers / floor: {phase.label} ({phase.what}) "
              f"{seconds:.2f} / {floor:.2f} = {seconds / floor:.3f}"
              f"{' (within the drift: no measurable cost)' if seconds / floor < 1 + drift else ''}; "
              f"the web UI's CPU per answer {1000 * phase.cores['web UI'] * phase.seconds / max(1, answers):.1f} ms")


WHAT_THE_FIGURES_COUNT = """
What the figures count:
  crawl.log, lines/s  lines the bundled engine wrote to the job's crawl.log during the phase (one per URI it
                      dealt with: fetched, refused by robots.txt, failed), counted in the file in the
                      controller's serverDir; over the phase's seconds
  answers, answers/s  /live answers the viewers read in the phase (requests sent before its end, read to their
                      end); over the phase's seconds, or up to the last answer if that came later
  p50/p95/p99 ms      from sending GET /api/v1/jobs/{id}/live on the viewer's keep-alive connection to having
                      read the whole answer: the session checked against the database, the job, its newest
                      progress report, progress samples and frontier report read, the JSON written
  KB each             the mean size of an answer's body
  non-200             answers with another status (failed requests and wrong bodies are told below the table)
  CPU, in cores       CPU seconds (user and system) per second of the phase: crawl = the harvest controller and
                      its engine; web UI = waitress and its threads; viewers = this script (the viewers' clients
                      and the half-second sampling); scheduler = it and its intake processes; PostgreSQL and
                      RabbitMQ = all their processes on the machine (other databases' work included); site = the
                      TestSite; other = the rest of the machine's busy time; busy = the whole machine's
  floor               the crawl's seconds per 1,000 crawl.log lines without viewers, the mean of A and A',
                      measured in the same run: the least the crawl takes
  CPU per answer      the web UI's CPU seconds in the phase over its /live answers (PostgreSQL's share not in it)"""


# ---------------------------------------------------------------------------------------------- main
def measure(args: argparse.Namespace, url: str, environment: str, work: Path, children: list[Child],
            viewers: list[Viewer], stop: threading.Event) -> int:
    """Start the installation, crawl, run the phases and print; 0 if the run counts and every answer was good."""
    load_before = load_average()
    pages_per_host = max(1, args.pages // len(HOSTS))
    site_uris = len(HOSTS) * pages_per_host * URIS_PER_PAGE
    server_dir = work / "server"
    site, site_port = start_site(work, pages_per_host, work / "hosts")
    children.append(site)
    (work / "archive").mkdir()
    settings = write_settings(work / "settings.toml", {
        "harvestsuite.database.url": url, "harvestsuite.queue.url": args.queue_url,
        "common.environmentName": environment, "harvestsuite.archive.root": str(work / "archive"),
        "harvester.harvesting.serverdir": str(server_dir), "harvester.harvesting.channel": ["FOCUSED"],
        "harvester.harvesting.sendReadyDelay": 2,
        "harvester.harvesting.heritrix.adminPassword": secrets.token_urlsafe(12),
        "harvestsuite.crawler.hostsFile": str(work / "hosts"),
        "harvestsuite.webui.secretKey": secrets.token_urlsafe(24)})
    engine = open_engine(url)
    init_database(engine)
    engine.dispose()
    harvest_id = create_harvest(url, settings, site_port)
    harvestsuite(url, "users", "add", VIEWER, "--role", "curator", stdin=PASSWORD + "\n")
    harvestsuite(url, "users", "add", ADMIN, "--role", "admin", stdin=PASSWORD + "\n")
    token = harvestsuite(url, "users", "token", ADMIN).strip()
    poll_ms = settings.webui.livePollIntervalMs
    amqp = urlsplit(args.queue_url)
    print(f"set-up: database {make_url(url).database} on PostgreSQL {make_url(url).host}:{make_url(url).port}; "
          f"RabbitMQ {amqp.hostname}:{amqp.port} (queues {environment}.*); harvestsuite scheduler run, harvester "
          f"run (bundled engine), webui run (waitress, {settings.webui.threads} threads); directory {work}")
    print(f"site: tests/engine/site.py TestSite, a process of its own: {len(HOSTS)} hosts x {pages_per_host:,} "
          f"pages, each with its image: {site_uris:,} URIs and a few dozen more per host; named to 127.0.0.1 by "
          f"harvestsuite.crawler.hostsFile")
    print(f"template: templates/default_orderxml.cxml with demo_template's politeness (harvestdef/demo/"
          f"definitions.py: {', '.join(POLITENESS.values())}); one selective harvest of the {len(HOSTS)} hosts")
    print(f"settings: defaults (jobgenerationperiod {settings.scheduler.jobgenerationperiod} s, crawlLoopWaitTime "
          f"{settings.harvester.crawlLoopWaitTime} s, heartbeatInterval {settings.harvester.heartbeatInterval} s, "
          f"frontierReportWaitTime {settings.harvester.frontierReportWaitTime} s, livePollIntervalMs {poll_ms}) "
          f"but sendReadyDelay {settings.harvester.sendReadyDelay} s", flush=True)

    scheduler = start_harvestsuite("scheduler", work, "-v", "scheduler", "run")
    children.append(scheduler)
    wait_for_log(scheduler, "running as the leader", 120)
    port = free_port()
    webui = start_harvestsuite("webui", work, "webui", "run", "--host", "127.0.0.1", "--port", str(port))
    children.append(webui)
    wait_for(port, webui.process)
    controller = start_harvestsuite("controller", work, "-v", "harvester", "run")
    children.append(controller)
    started = time.monotonic()
    job_id, crawl_log = wait_for_job(url, harvest_id, server_dir, controller,
                                     3 * settings.scheduler.jobgenerationperiod + 120)
    print(f"job {job_id} STARTED {time.monotonic() - started:.0f} s after the controller started (the scheduler's "
          f"next tick made it); crawl.log: {crawl_log}", flush=True)
    watch = CrawlWatch(url, job_id, crawl_log)
    try:
        live = wait_for_reports(port, token, job_id, 3 * settings.harvester.crawlLoopWaitTime + 60)
        print(f"second progress report: {live['downloaded']:,} URIs downloaded, {live['queued']:,} queued, "
              f"{len(live['queues'])} queues in the frontier report, {len(live['history'])} progress samples; "
              f"{watch.lines():,} crawl.log lines", flush=True)
        for _ in range(args.viewers):
            viewers.append(Viewer(port))
            viewers[-1].log_in(VIEWER, PASSWORD)
        print(f"{args.viewers} viewers logged in, a session each; each asks GET /api/v1/jobs/{job_id}/live as "
              f"webui/static/live.js does", flush=True)
        meter = CpuMeter({"crawl": controller.process.pid, "web UI": webui.process.pid,
                          "scheduler": scheduler.process.pid, "site": site.process.pid})
        rng = random.Random(20261123)
        plan = [(Phase("A", "no viewers"), [], 0.0),
                (Phase("B", f"{args.viewers} viewers every {poll_ms} ms"), viewers, poll_ms / 1000)]
        if not args.no_back_to_back:
            plan.append((Phase("C", f"{args.viewers} viewers back to back"), viewers, 0.0))
        plan.append((Phase("A'", "no viewers again"), [], 0.0))
        phases = []
        for phase, who, pause in plan:
            print(f"phase {phase.label}: {phase.what}, {args.phase_seconds:.0f} s", flush=True)
            phases.append(run_phase(phase, args.phase_seconds, watch, meter, who, pause, stop, rng))
            if who and phase is plan[-2][0]:
                for viewer in viewers:
                    viewer.close()  # A' without their connections
    finally:
        watch.close()
    print_phases(phases)
    refusals = [f"phase {phase.label}: {reason}" for phase in phases for reason in phase.refusals]
    if phases[-1].lines_at_end >= TAIL_SHARE * site_uris:
        refusals.append(f"crawl.log had {phases[-1].lines_at_end:,} lines at the end, {TAIL_SHARE:.0%} or more of "
                        f"the site's {site_uris:,} URIs: the crawl was in its tail")
    for reason in refusals:
        print(f"REFUSED: {reason}")
    if refusals:
        print("the run does not count; if the crawl ended or ran dry, make the site bigger (--pages)")
    else:
        print_ratios(phases)
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}; load average (1, 5, 15 min) before {load_before}, "
          f"after {load_average()}")
    print(WHAT_THE_FIGURES_COUNT)
    return 1 if refusals or any(phase.problems for phase in phases) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", type=int, default=50, help="people with the job page open (default 50)")
    parser.add_argument("--phase-seconds", type=float, default=20.0, help="seconds of each phase (default 20)")
    parser.add_argument("--pages", type=int, default=40_000,
                        help=f"pages of the site over its {len(HOSTS)} hosts, each with an image (default 40000)")
    parser.add_argument("--no-back-to-back", action="store_true", help="leave out phase C (viewers back to back)")
    parser.add_argument("--keep", action="store_true", help="keep the database and the working directory")
    parser.add_argument("--admin-url", default=ADMIN_URL, help="PostgreSQL, where the database is made")
    parser.add_argument("--queue-url", default=AMQP_URL, help="RabbitMQ")
    args = parser.parse_args()

    def terminated(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, terminated)  # cleaned up as after a Ctrl-C
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}; load average before {load_average()}", flush=True)
    run = uuid.uuid4().hex[:8]
    name, environment = f"hs_bench_live_{run}", f"BL{run}"  # the database, and the prefix of the queues
    admin = create_engine(args.admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(args.admin_url).set(database=name).render_as_string(hide_password=False)
    work = Path(tempfile.mkdtemp(prefix=f"hs-bench-live-{run}-")).resolve()
    children: list[Child] = []
    viewers: list[Viewer] = []
    stop = threading.Event()
    try:
        return measure(args, url, environment, work, children, viewers, stop)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the clean-up runs to its end
        stop.set()
        print("cleaning up: the controller (it checkpoints the crawl), "
              "the web UI, the scheduler, the site", flush=True)
        for viewer in viewers:
            viewer.close()
        for child in reversed(children):
            try:
                if child.name == "site":
                    stop_site(child)
                else:
                    child.stop(120 if child.name == "controller" else 30)
                    if child.name == "controller":
                        stop_engine(work / "server", 60)
            except Exception as exc:  # noqa: BLE001 - the other parts are still to be stopped
                print(f"  stopping {child.name} failed: {exc!r}", flush=True)
        try:
            delete_queues(args.queue_url, environment, work / "server")
        except Exception as exc:  # noqa: BLE001 - the database is still to be dropped
            print(f"  deleting the run's queues failed: {exc!r}", flush=True)
        if args.keep:
            print(f"kept: database {url}; directory {work}")
        else:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            shutil.rmtree(work, ignore_errors=True)
        admin.dispose()


if __name__ == "__main__":
    sys.exit(main())
