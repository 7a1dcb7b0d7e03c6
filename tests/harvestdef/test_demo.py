"""`harvestsuite demo`: its site, its definitions, and the command as a newcomer runs it (a real process
with the scheduler, a harvest controller with the bundled engine, the web UI and, where pywb's environment
is, the replay service)."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import http.cookiejar
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import func, select
from warcio.archiveiterator import ArchiveIterator

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from harvestdef.demo import definitions, runner
from harvestdef.demo.site import HOSTS, DemoSite
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent.parent


def get(port: int, host: str, path: str) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": f"{host}:{port}"})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------------------------------------- the site
def test_the_demo_site_tells_its_hosts_apart_by_name():
    news = HOSTS[0]
    with DemoSite() as site:
        status, headers, body = get(site.port, news.name, "/")
        assert status == 200 and headers["content-type"].startswith("text/html")
        assert b"Served at" in body and f"/{news.section}/1.html".encode() in body
        status, headers, photo = get(site.port, news.name, "/fotos/3.png")
        assert status == 200 and headers["content-type"] == "image/png"
        assert photo.startswith(b"\x89PNG\r\n\x1a\n") and int(headers["content-length"]) == len(photo)
        assert get(site.port, HOSTS[1].name, "/fotos/3.png")[2] != photo  # every photo a payload of its own
        assert get(site.port, news.name, "/robots.txt")[2] == f"User-agent: *\nDisallow: {news.disallowed}\n".encode()
        assert get(site.port, news.name, f"/{news.section}/{news.documents + 1}.html")[0] == 404
        assert get(site.port, news.name, "/fotos/x.png")[0] == 404
        # a browser opening the port itself learns what the port serves
        status, _, directory = get(site.port, "127.0.0.1", "/")
        assert status == 200 and all(host.name.encode() in directory for host in HOSTS)
        assert site.requests[news.name] == 5


def test_only_the_front_pages_change_between_requests():
    host = HOSTS[1]
    with DemoSite() as site:
        first, front = get(site.port, host.name, f"/{host.section}/2.html"), get(site.port, host.name, "/")
        time.sleep(1.1)  # the front page shows the second it was served
        again = get(site.port, host.name, f"/{host.section}/2.html")
        assert again[2] == first[2] and again[1]["last-modified"] == first[1]["last-modified"]
        assert get(site.port, host.name, "/")[2] != front[2]


def test_the_trap_host_has_an_endless_calendar():
    trap = next(host for host in HOSTS if host.trap)
    with DemoSite() as site:
        _, _, page = get(site.port, trap.name, "/kalender/2026/12/")
        assert b'href="/kalender/2027/1/"' in page
        assert get(site.port, HOSTS[0].name, "/kalender/2026/12/")[0] == 404


# ---------------------------------------------------------------------------------------------- definitions
def test_the_demo_template_is_the_default_with_millisecond_politeness():
    orderxml = (ROOT / "templates" / "default_orderxml.cxml").read_text(encoding="utf-8")
    demo = definitions.demo_template(orderxml)
    assert "disposition.minDelayMs=40" in demo and "disposition.minDelayMs=1000" not in demo
    with pytest.raises(ValueError, match="minDelayMs"):
        definitions.demo_template(orderxml.replace("disposition.minDelayMs", "disposition.minimumDelay"))


def test_the_definitions_are_made_once_and_ready_to_run(tmp_path):
    engine = open_engine(f"sqlite:///{tmp_path / 'harvest.db'}")
    init_database(engine)
    settings = load_settings(None, environ={}, overrides={
        "harvester.datamodel.domain.defaultOrderxml": definitions.TEMPLATE})
    made = definitions.create_definitions(engine, settings, site_port=8123)
    assert set(made.harvests) == {definitions.SELECTIVE, definitions.EVENT, definitions.SNAPSHOT_STEP_1,
                                  definitions.SNAPSHOT_STEP_2}
    assert definitions.create_definitions(engine, settings, site_port=8123).harvests == ()
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.harvestdefinitions)) == 4
        seeds = set(conn.scalars(select(s.seedlists.c.seeds)))
        assert "http://www.nordposten.dk:8123/" in seeds
        assert all(":8123/" in seed for seed in seeds)
        harvests = HarvestRepository(conn)
        step_2 = harvests.get_snapshot(definitions.SNAPSHOT_STEP_2)
        step_1 = harvests.get_snapshot(definitions.SNAPSHOT_STEP_1)
        assert not step_2.isactive and step_2.previoushd == step_1.harvest_id
        assert harvests.get_snapshot(definitions.SNAPSHOT_STEP_1).maxobjects == definitions.STEP_1_MAX_OBJECTS
        assert len(list(harvests.configurations(definitions.SELECTIVE))) == 2
        assert len(list(harvests.configurations(definitions.EVENT))) == 2
        # the event harvest is one, as its page and the API say, and the selective harvest is not
        assert harvests.get_selective(definitions.EVENT).isevent
        assert not harvests.get_selective(definitions.SELECTIVE).isevent
        assert conn.scalar(select(s.domains.c.crawlertraps).where(s.domains.c.name == "strandvejen.dk"))
    # step 2 waits for step 1: no jobs yet, so it stays inactive
    assert definitions.activate_continuation(engine) is None
    assert definitions.ensure_admin(engine, "first password") is True
    assert definitions.ensure_admin(engine, "second password") is False
    engine.dispose()


# ---------------------------------------------------------------------------------------------- the command
class DemoProcess:
    def __init__(self, directory: Path, port: int, log: Path, *options: str, command: list[str] | None = None) -> None:
        """The demo in ``directory`` with ``options``, or ``command`` as a shell would run it (its cwd:
        ``directory``'s parent)."""
        self.log = log
        self.offset = log.stat().st_size if log.exists() else 0
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTSUITE")}
        command = command or [sys.executable, "-m", "harvestdef", "demo", "--dir", str(directory), "--port", str(port),
                              *options]
        with open(log, "ab") as out:
            # a session of its own, so that ``kill`` reaches its children too (pywb), as a terminal's would
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=directory.parent,
                                            env={**env, "PYTHONUNBUFFERED": "1"}, start_new_session=True)

    def text(self) -> str:
        return self.log.read_bytes()[self.offset:].decode("utf-8", "replace")

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text())
            if found:
                return found
            if self.process.poll() is not None:
                raise AssertionError(f"the demo exited ({self.process.returncode}) before {pattern!r}:\n{self.text()}")
            time.sleep(0.3)
        raise AssertionError(f"no {pattern!r} within {timeout} s:\n{self.text()}")

    def interrupt(self, timeout: float = 90) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the demo did not stop within {timeout} s of Ctrl-C:\n{self.text()}") from None

    def kill(self) -> None:
        """Kill the demo and what it started in its session (the engine has a session of its own, which
        the next run's harvest controller stops)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


# Loads the demo's roles as the demo does, then runs each in this one thread with its stop event already set,
# so it starts and stops at once; prints, per role, the modules it imported that loading it had not.
ROLE_IMPORTS = """
import json, sys, threading
from pathlib import Path
from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from harvestdef.demo import runner
from harvestdef.settings import load_settings

directory = Path(sys.argv[1])
(directory / "archive").mkdir()
state = runner.DemoState(site_port=1, admin_password="a", secret_key="k" * 64, engine_password="e")
runner.write_settings(directory / "settings.toml", runner.demo_settings(directory, int(sys.argv[2]), state))
settings = load_settings(directory / "settings.toml", environ={})
engine = open_engine(settings.database.url)
init_database(engine)
engine.dispose()
roles = {**runner.load_roles(), "qa": runner.load_qa_role()}
stop = threading.Event()
stop.set()
imported = {}
for name, role in roles.items():
    before = set(sys.modules)
    role(settings, stop)
    imported[name] = sorted(set(sys.modules) - before)
print(json.dumps(imported))
"""


def test_loading_the_roles_imports_all_they_run_before_their_threads_start(tmp_path):
    """The demo starts its roles' threads at once. A role that imported its modules as it started could meet
    another doing the same within one package (each holding a module the other waits for), and CPython fails
    one of the imports: the web UI and the harvest controller did so over warcio's modules, and the demo
    stopped at its start. Loading the roles imports what they run, so their threads import nothing of note."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTSUITE")}
    done = subprocess.run([sys.executable, "-c", ROLE_IMPORTS, str(tmp_path), str(free_port())], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(imported) == {"scheduler", "harvester", "webui", "qa"}
    # a codec is imported when a name is first looked up; it imports nothing but the codecs module
    assert {name: [module for module in modules if not module.startswith("encodings.")]
            for name, modules in imported.items()} == {name: [] for name in imported}


def run_demo_command(directory: Path, port: int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTSUITE")}
    return subprocess.run([sys.executable, "-m", "harvestdef", "demo", "--dir", str(directory), "--port", str(port)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=directory.parent)


def log_in(port: int, password: str) -> urllib.request.OpenerDirector:
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = opener.open(f"http://127.0.0.1:{port}/login", timeout=10).read().decode()
    token = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    data = urllib.parse.urlencode({"name": definitions.ADMIN, "password": password, "csrf_token": token}).encode()
    opener.open(f"http://127.0.0.1:{port}/login", data=data, timeout=10)
    return opener


def test_the_demo_harvests_reports_stops_and_continues(tmp_path):
    directory, port, log = tmp_path / "demo", free_port(), tmp_path / "demo.log"
    no_pywb = tmp_path / "no-pywb"
    demo = DemoProcess(directory, port, log, "--pywb-venv", str(no_pywb))
    try:
        password = demo.wait_for(r"log in as admin, password (\S+)", 60).group(1)
        # without pywb's environment it says how to build it, and runs without replay
        install = demo.wait_for(r"replay:  off, no pywb environment at (\S+); `([^`]+)` builds it", 10)
        assert install.group(1) == str(no_pywb)
        # the command as the demo was run (here `PYTHON -m harvestdef`), then its arguments
        words = shlex.split(install.group(2))
        assert words[:3] == [sys.executable, "-m", "harvestdef"], words
        setting, value = words[4].split("=", 1)
        assert words[3] == "--set" and words[5:] == ["replay", "install"]
        assert setting == "harvestsuite.replay.pywbVenv" and (tmp_path / value).resolve() == no_pywb
        done = demo.wait_for(r"job (\d+) \(News and local history, run 1\) DONE: (\d+) objects", 150)
        selective_job = int(done.group(1))
        demo.wait_for(r"Snapshot 2026 step 1 has finished; (\d+) domains stopped on its limit", 150)
        demo.wait_for(r"job (\d+) \(Snapshot 2026 step 2, run 1\) DONE", 150)
        demo.wait_for(r"job (\d+) \(Folkemødet 2026, run 1\) DONE", 150)

        # the web UI answers with the admin login the demo printed, and shows the job
        opener = log_in(port, password)
        page = opener.open(f"http://127.0.0.1:{port}/status/jobs/{selective_job}", timeout=10).read().decode()
        assert "DONE" in page and "News and local history" in page
        assert "replay-link" not in page, "no replay service, no links to it"

        # a second demo: the directory is taken; another directory on the same port: the port is taken
        busy = run_demo_command(directory, free_port())
        assert busy.returncode == 2 and "a demo is already running in" in busy.stderr, busy.stderr
        taken = run_demo_command(tmp_path / "other", port)
        assert taken.returncode == 2 and f"port {port} is in use" in taken.stderr, taken.stderr

        assert demo.interrupt() == 0
        stopped = re.search(r"stopped; `([^`]+)` continues where it stopped; `([^`]+)` lists its jobs", demo.text())
        assert stopped, demo.text()
        rerun, list_jobs = (shlex.split(command) for command in stopped.groups())
        assert rerun[:3] == [sys.executable, "-m", "harvestdef"], rerun
        assert rerun[3:5] == ["demo", "--dir"] and rerun[6:9] == ["--port", str(port), "--pywb-venv"]
        assert (tmp_path / rerun[5]).resolve() == directory and (tmp_path / rerun[9]).resolve() == no_pywb
    finally:
        demo.kill()

    # the commands it named run as printed, from where the demo ran
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTSUITE")}
    listed = subprocess.run(list_jobs, capture_output=True, text=True, timeout=60, cwd=directory.parent, env=env)
    assert listed.returncode == 0 and re.search(rf"^{selective_job} +DONE +", listed.stdout, re.M), listed

    # what the archive store holds for the selective job: WARC with the pages, metadata WARC, CDXJ, dedup
    settings = load_settings(directory / "settings.toml", environ={})
    engine = open_engine(settings.database.url)
    with engine.connect() as conn:
        harvest_id = conn.scalar(select(s.jobs.c.harvest_id).where(s.jobs.c.job_id == selective_job))
        stored = Path(settings.archive.root) / str(harvest_id) / str(selective_job)
        warcs = sorted(stored.glob(f"{selective_job}-*.warc.gz"))
        metadata = [path for path in warcs if "-metadata-" in path.name]
        assert len(metadata) == 1 and len(warcs) >= 2
        with open(next(path for path in warcs if path not in metadata), "rb") as stream:
            urls = {record.rec_headers.get_header("WARC-Target-URI") for record in ArchiveIterator(stream)
                    if record.rec_type == "response"}
        assert any(url.startswith("http://www.nordposten.dk:") and url.endswith("/artikel/120.html") for url in urls)
        assert (stored / "cdxj").is_dir() and (stored / "dedup" / f"{selective_job}.gz").exists()
        assert (stored / "SHA256SUMS").exists()

        # step 2 harvested exactly the domains step 1 stopped on its object limit
        by_name = dict(conn.execute(select(s.harvestdefinitions.c.name, s.harvestdefinitions.c.harvest_id)).all())

        def domains_of(harvest: str, reasons: tuple[StopReason, ...] | None = None) -> set[str]:
            query = (select(s.domains.c.name)
                     .join(s.configurations, s.configurations.c.domain_id == s.domains.c.domain_id)
                     .join(s.historyinfo, s.historyinfo.c.config_id == s.configurations.c.config_id)
                     .where(s.historyinfo.c.harvest_id == by_name[harvest]))
            if reasons:
                query = query.where(s.historyinfo.c.stopreason.in_(reasons))
            return set(conn.scalars(query))

        limited = domains_of(definitions.SNAPSHOT_STEP_1, (StopReason.OBJECT_LIMIT, StopReason.CONFIG_OBJECT_LIMIT))
        assert limited == {"nordposten.dk", "byhistorie.dk", "strandvejen.dk"}
        assert domains_of(definitions.SNAPSHOT_STEP_2) == limited
        jobs_before = conn.scalar(select(func.count()).select_from(s.jobs))
        assert conn.scalar(select(func.count()).select_from(s.jobs).where(
            s.jobs.c.status == JobStatus.DONE)) >= 4
    engine.dispose()

    # a rerun (the command it printed) continues: same definitions and login, nothing made twice
    again = DemoProcess(directory, port, log, command=rerun)
    try:
        again.wait_for(r"continuing: the harvest definitions are there from an earlier run", 60)
        assert f"password {password}" in again.wait_for(r"log in as admin, password \S+", 30).group(0)
        again.wait_for(r"harvest controller \S+: channels FOCUSED, SNAPSHOT", 60)
        assert again.interrupt() == 0
    finally:
        again.kill()
    engine = open_engine(settings.database.url)
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.harvestdefinitions)) == 4
        assert conn.scalar(select(func.count()).select_from(s.jobs)) >= jobs_before
    engine.dispose()


# ---------------------------------------------------------------------------------------------- replay
def stored_payload(archive: Path, url: str, job_id: int | str = "*") -> bytes:
    """The payload of the first response record of ``url`` in the archive store's WARCs (of job ``job_id``
    alone, when given: the demo harvests the same pages again, each capture served anew)."""
    for path in sorted(archive.glob(f"*/{job_id}/*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response" and record.rec_headers.get_header("WARC-Target-URI") == url:
                    return record.content_stream().read()
    raise AssertionError(f"no response record of {url} in {archive}")


def replayed(link: str) -> tuple[int, bytes]:
    """pywb's answer to a capture link in its ``id_`` form: the capture's bytes as archived, not rewritten."""
    found = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/(\w+)/(\d{14})/(.+)", link)
    assert found, link
    port, collection, stamp, url = found.groups()
    connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
    try:
        connection.request("GET", f"/{collection}/{stamp}id_/{url}")
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def replay_links(page: str) -> list[str]:
    return re.findall(r'<a href="([^"]+)" target="_blank" rel="noopener" class="replay-link">view</a>', page)


def test_the_demo_replays_what_it_harvested_on_the_port_after_the_web_uis(tmp_path):
    from tests.pywb import pywb_venv

    venv = pywb_venv()
    directory, port, log = tmp_path / "demo", free_port(), tmp_path / "demo.log"
    demo = DemoProcess(directory, port, log, "--pywb-venv", str(venv))
    try:
        password = demo.wait_for(r"log in as admin, password (\S+)", 60).group(1)
        replay_url = demo.wait_for(r"replay:  (http://127\.0\.0\.1:(\d+)) ", 10).group(1)
        site_port = json.loads((directory / runner.STATE_FILE).read_text(encoding="utf-8"))["site_port"]
        if f"port {port + 1}" not in demo.text():  # a port some other program holds is replaced, and told
            assert replay_url == f"http://127.0.0.1:{port + 1}" and site_port == port + 2
        done = demo.wait_for(rf"job (\d+) \({re.escape(definitions.SELECTIVE)}, run 1\) DONE", 150)
        job_id = int(done.group(1))
        told = demo.wait_for(r"its first seed as harvested, replayed by pywb at (\S+): (\S+)", 10)
        assert told.group(1) == replay_url and told.group(2).startswith(f"{replay_url}/all/")

        opener = log_in(port, password)
        page = opener.open(f"http://127.0.0.1:{port}/status/jobs/{job_id}", timeout=10).read().decode()
        seed = f"http://www.nordposten.dk:{site_port}/"
        [seed_link] = [link for link in replay_links(page) if link.endswith(f"/{seed}")]
        assert seed_link.startswith(f"{replay_url}/all/"), "the replay service's origin, never the web UI's"
        # pywb finds the job's files within one sync of the archive store (2 s in the demo)
        deadline = time.monotonic() + 30
        while (answer := replayed(seed_link))[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert answer == (200, stored_payload(directory / "archive", seed, job_id)), answer[0]

        # a 2xx line of the crawl-log search replays the page as the site serves it
        query = urllib.parse.urlencode({"domain": "nordposten.dk", "regex": r"^\S+ +200 +\d+ \S+/artikel/12\.html "})
        search = opener.open(f"http://127.0.0.1:{port}/status/jobs/{job_id}?{query}", timeout=10).read().decode()
        [article_link] = [link for link in replay_links(search) if link.endswith("/artikel/12.html")]
        status, body = replayed(article_link)
        assert status == 200 and body == get(site_port, "www.nordposten.dk", "/artikel/12.html")[2]

        # the QA worker runs beside replay: the seed's picture, as replayed, comes to the job page
        picture = f"/status/jobs/{job_id}/thumbnails/{hashlib.sha1(seed.encode()).hexdigest()}.png"
        deadline = time.monotonic() + 60
        while picture not in page and time.monotonic() < deadline:
            time.sleep(1)
            page = opener.open(f"http://127.0.0.1:{port}/status/jobs/{job_id}", timeout=10).read().decode()
        assert picture in page, "no thumbnail of the seed on the job page within 60 s"
        assert opener.open(f"http://127.0.0.1:{port}{picture}", timeout=10).read().startswith(b"\x89PNG")
        # Ctrl-C of a terminal reaches the QA worker's Chromium too: that ends the worker with the demo, unsaid
        os.killpg(demo.process.pid, signal.SIGINT)
        assert demo.process.wait(timeout=90) == 0
        assert "the QA worker stopped" not in demo.text(), demo.text()
    finally:
        demo.kill()
    try:
        status = replayed(seed_link)[0]
    except OSError:
        status = None
    assert status is None, "pywb still answers after the demo stopped"
