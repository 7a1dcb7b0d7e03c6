"""Crawl benchmark: the bundled engine on the templates harvests run with, beside a Scrapy spider and wget,
on a generated site of a fixed shape served by nginx.

    python bench/crawl.py [--pages 10000] [--hosts 50] [--threads 50] [--only nodelay|delay|memory]
                          [--templates heritrix,nas,tuned] [--memory-pages 200000] [--scrapy-python PATH]
                          [--wget-seconds 120] [--py-spy DIR] [--keep DIR]

The site (``--hosts`` hosts of ``--pages``/``--hosts`` HTML pages each; by default 50 x 200) has this shape,
the same in every run so figures compare across runs: every HTML page is about 6 KB with 28 links (26 to
other pages of its host, 2 images; on every 20th page four of the page links give way to a redirect (301
to a page), a missing page (404), a binary identical on every host and a page robots.txt forbids); the
host's home page ``/`` is its page 0 and also links the next host; 40 images of 2-4 KB per host;
robots.txt forbids ``/private/``.
It is written to a temporary directory and served by Debian's nginx (one worker, access log off) on a free
loopback port, pinned to the other CPU than the crawler when the machine has two, so the server is not
the bottleneck. Host names resolve through the engine's ``--hosts`` file; Scrapy and wget reach the same
names through nginx as their HTTP proxy.

The engine runs as ``harvestsuite engine`` (its own process, pinned to CPU 0), driven over its REST API as
the harvest controller drives it (create the job, build, launch, unpause, poll the status until finished),
with ``--threads`` crawl threads, on three templates, each a named line:

- ``heritrix-default``: Heritrix 3's default profile as a new user gets it
  (../shared/fixtures/heritrix3/heritrix3-profile-crawler-beans.cxml beside the checkout; the line is
  skipped, saying so, when the file is absent). Changed, all in its simpleOverrides properties:
  ``metadata.operatorContactUrl`` (the profile's placeholder, which every user must replace),
  ``crawlController.maxToeThreads`` = threads (profile: 25), and politeness off:
  ``disposition.delayFactor=0``, ``disposition.minDelayMs=0``, ``disposition.maxDelayMs=0`` (profile:
  5.0, 3000, 30000). Its seeds go where the profile has them, in ``seeds.textSource.value``. HTTP/1.0,
  a connection per request.
- ``nas-default``: templates/default_orderxml.cxml filled as job generation fills it
  (scheduler.jobgen.building.filled_template, with the crawl attributes' defaults: MAX_HOPS 20, robots.txt
  ignored, JavaScript extraction on; no quotas, no time limit, no traps) and with the deduplication index
  location left empty, as the harvest controller leaves it without an index. Changed in its
  simpleOverrides: politeness off, ``disposition.delayFactor=0``, ``disposition.minDelayMs=0``,
  ``disposition.maxDelayMs=0``, ``disposition.maxPerHostBandwidthUsageKbSec=0`` (template: 5.0, 1000,
  30000, 500), and ``crawlController.maxToeThreads`` = threads (template: 50). HTTP/1.1 with
  ``Connection: close`` (sendConnectionClose=true).
- ``harvestsuite-tuned``: the benchmark's own minimal template, kept to compare with earlier figures:
  HTTP/1.1 keep-alive, no politeness delay, obeys robots.txt, one queue per host.

Optionally (``--scrapy-python``, a Python that has scrapy and warcio) Scrapy at the same concurrency
(CONCURRENT_REQUESTS = threads, one connection per host, no delay) writing a WARC with warcio, and wget,
the serial baseline, stopped after ``--wget-seconds`` (0: not run).

Everything is counted from the WARCs written, read back with warcio: HTML pages are response records of
``text/html`` with status 200 (distinct URLs); records are all response and revisit records of http(s) URLs
(pages, images, redirects, 404s, robots.txt, the duplicate binary). Each run leads with what carries to
another machine: each line's CPU per HTML page as a multiple of the floor, the least an archiving crawler does
with a page (lxml parse and links, gzip level 6 of its bytes), measured on the crawler's CPU in the same run
before and after the lines; and the engine's HTML pages/s against Scrapy's and wget's. Printed per line: HTML
pages and HTML pages/s, records and records/s, CPU milliseconds per HTML page and per record of the crawler's
process (user + system from /proc, from unpause to finished; for the engine its whole process), MB/s of WARC,
peak RSS, the load average before and after the line, and whether the run is complete: every HTML page of the
site captured (wget's time-limited run excepted). The header gives the date, command, nproc, CPU model and
load average. Runs: undelayed (``nodelay``, CPU-bound), 50 ms per response (``delay``, latency-bound) and
``memory``, which crawls ``--memory-pages`` pages with the Heritrix default profile only and prints its RSS at
25 % of the crawl and at the end. ``--py-spy DIR`` records a py-spy profile of each engine line (collapsed
stacks, DIR/RUN-LINE.txt; py-spy from the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import lxml.html

ROOT = Path(__file__).resolve().parent.parent
HERITRIX_PROFILE = ROOT.parent / "shared" / "fixtures" / "heritrix3" / "heritrix3-profile-crawler-beans.cxml"
NAS_TEMPLATE = ROOT / "templates" / "default_orderxml.cxml"
IMAGES_PER_HOST = 40
PAGE_LINKS = 26          # links from a page to other pages of its host
PAGE_BYTES = 6_000       # a page's size, filled up with text
EXTRAS_EVERY = 20        # every 20th page links a redirect, a 404, the duplicate binary and a forbidden page
DUP_BINARY = bytes(random.Random(7).getrandbits(8) for _ in range(50_000))
TEMPLATES = ("heritrix", "nas", "tuned")
LINE_NAMES = {"heritrix": "heritrix-default", "nas": "nas-default", "tuned": "harvestsuite-tuned"}
WORDS = ("kulturarv", "arkiv", "samling", "bibliotek", "museum", "udstilling", "historie", "dokument", "fortid",
         "nutid", "bevaring", "digital", "netarkiv", "side", "indhold")


def host_names(count: int) -> list[str]:
    return [f"www.bench{n:02d}-kulturarv.dk" for n in range(count)]


def page_path(number: int) -> str:
    return "/" if number == 0 else f"/page/{number}.html"


def generate_site(root: Path, hosts: list[str], pages_per_host: int, port: int) -> None:
    """The site of the docstring's shape; the same bytes for the same arguments."""
    rng = random.Random(42)
    for index, host in enumerate(hosts):
        base = root / host
        (base / "page").mkdir(parents=True)
        (base / "img").mkdir()
        (base / "private").mkdir()
        (base / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
        (base / "private" / "x.html").write_text("<html><body>private</body></html>\n")
        (base / "dup.bin").write_bytes(DUP_BINARY)
        for n in range(IMAGES_PER_HOST):
            (base / "img" / f"{n}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + rng.randbytes(2000 + n * 50))
        for n in range(pages_per_host):
            wanted = PAGE_LINKS if n % EXTRAS_EVERY else PAGE_LINKS - 4
            links = [m % pages_per_host for m in (n + 1, n * 2 + 1, n * 2 + 2)]
            while len(set(links)) < min(wanted, pages_per_host - 1):
                links.append(rng.randrange(pages_per_host))
            anchors = "".join(f'<li><a href="{page_path(m)}">Side {m} om {rng.choice(WORDS)}</a></li>\n'
                              for m in sorted(set(links) - {n}))
            extra = ""
            if n % EXTRAS_EVERY == 0:
                extra += (f'<li><a href="/redir/{(n + 1) % pages_per_host or 1}">flyttet</a></li>\n'
                          f'<li><a href="/missing/{n}.html">væk</a></li>\n'
                          '<li><a href="/dup.bin">data</a></li>\n<li><a href="/private/x.html">privat</a></li>\n')
            if n == 0:
                extra += f'<li><a href="http://{hosts[(index + 1) % len(hosts)]}:{port}/">næste vært</a></li>\n'
            images = "".join(f'<img src="/img/{(n + k) % IMAGES_PER_HOST}.png" alt="billede {k}">\n'
                             for k in range(2))
            head = (f"<!DOCTYPE html>\n<html lang=\"da\"><head><meta charset=\"utf-8\"><title>{host} side {n}"
                    f"</title></head><body>\n<h1>Side {n}</h1>\n{images}<ul>\n{anchors}{extra}</ul>\n")
            tail = "</body></html>\n"
            filler = []
            size = len(head.encode()) + len(tail)
            while size < PAGE_BYTES:
                sentence = "<p>" + " ".join(rng.choice(WORDS) for _ in range(40)) + ".</p>\n"
                filler.append(sentence)
                size += len(sentence.encode())
            target = base / "index.html" if n == 0 else base / "page" / f"{n}.html"
            target.write_text(head + "".join(filler) + tail)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def nginx_config(work: Path, site: Path, port: int, delay_ms: int) -> Path:
    delay = ""
    if delay_ms:
        # echo_sleep holds every response; the file is then served from the named location.
        delay = f"echo_sleep {delay_ms / 1000:.3f};\n            echo_exec @file;"
    else:
        delay = "try_files $uri $uri/index.html =404;"
    config = work / f"nginx-{delay_ms}.conf"
    modules = "load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;\n" if delay_ms else ""
    config.write_text(f"""{modules}worker_processes 1;
pid {work}/nginx-{delay_ms}.pid;
error_log {work}/nginx-error.log error;
daemon off;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    types {{ text/html html; image/png png; application/octet-stream bin; text/plain txt; }}
    default_type application/octet-stream;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        server_name ~^(?<site_host>[^:]+)$;
        root {site}/$site_host;
        index index.html;
        location ~ ^/redir/(\\d+)$ {{ return 301 /page/$1.html; }}
        location / {{
            {delay}
        }}
        location @file {{ try_files $uri $uri/index.html =404; }}
    }}
}}
""")
    return config


def wait_for_port(process: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"nginx did not start: {process.stderr.read().decode()}") from None
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("nginx did not start listening within 10 s")


CRAWLER_CPU = 0
SERVER_CPU = 1


def pinned(cpu: int):
    """preexec_fn pinning a child to one CPU, when the machine has more than one."""
    if (os.cpu_count() or 1) < 2:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


FLOOR_SAMPLE = 200       # HTML pages of the site the floor is measured on


def floor_cpu_per_page(site: Path, hosts: list[str], pages_per_host: int, seconds: float = 1.0) -> float:
    """CPU seconds per HTML page of the least an archiving crawler does with one, measured on this machine in
    this run: parse it with lxml and take its links, and gzip its bytes as a WARC record's member (level 6).
    The crawler's CPU per page divided by this is what carries to another machine: a machine half as fast
    has a floor twice as slow."""
    sample = [(site / host / ("index.html" if n == 0 else f"page/{n}.html")).read_bytes()
              for host in hosts for n in range(pages_per_host)][:FLOOR_SAMPLE]
    affinity = os.sched_getaffinity(0)
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {CRAWLER_CPU})  # on the crawler's CPU, as the crawler is measured
    try:
        pages, started = 0, time.process_time()
        while time.process_time() - started < seconds:
            for body in sample:
                document = lxml.html.document_fromstring(body)
                sum(1 for _link in document.iterlinks())
                gzip.compress(body, compresslevel=6)
            pages += len(sample)
        return (time.process_time() - started) / pages
    finally:
        os.sched_setaffinity(0, affinity)


def with_overrides(cxml: str, values: dict[str, object]) -> str:
    """``cxml`` with ``key=value`` lines set in its simpleOverrides properties: a key already there gets the
    new value in its place, the others are added at the end (Java properties: one line a key)."""
    start = cxml.index('id="simpleOverrides"')
    block_start = cxml.index("<value>", start) + len("<value>")
    block_end = cxml.index("</value>", block_start)
    block = cxml[block_start:block_end]
    added = []
    for key, value in values.items():
        line = re.compile(rf"^([ \t]*){re.escape(key)}[ \t]*=.*$", re.MULTILINE)
        if line.search(block):
            block = line.sub(lambda match, v=value, k=key: f"{match.group(1)}{k}={v}", block)
        else:
            added.append(f"{key}={value}")
    if added:
        block = block.rstrip() + "\n" + "\n".join(added) + "\n   "
    return cxml[:block_start] + block + cxml[block_end:]


POLITENESS_OFF = {"disposition.delayFactor": 0, "disposition.minDelayMs": 0, "disposition.maxDelayMs": 0}


def heritrix_profile_cxml(seeds: list[str], threads: int) -> str:
    """Heritrix 3's default profile with the changes the docstring names."""
    cxml = HERITRIX_PROFILE.read_text(encoding="utf-8")
    cxml = with_overrides(cxml, {"metadata.operatorContactUrl": "http://bench.harvestsuite.invalid/contact",
                                 "crawlController.maxToeThreads": threads, **POLITENESS_OFF})
    example = "http://example.example/example"
    if example not in cxml:
        raise RuntimeError(f"{HERITRIX_PROFILE} has no example seed to put the seeds in place of")
    return cxml.replace(example, "\n".join(seeds), 1)


def nas_default_cxml(threads: int) -> str:
    """templates/default_orderxml.cxml as job generation fills it for one job, then as the harvest controller
    writes it without a deduplication index, with the changes the docstring names."""
    sys.path.insert(0, str(ROOT))
    from harvestdef.crawlattributes import ATTRIBUTES
    from harvestdef.crawltemplate import DEDUPLICATION_INDEX_LOCATION, placeholder
    from scheduler.jobgen.building import RunContext, TemplateInfo, filled_template
    from scheduler.jobgen.expectation import UNLIMITED
    from scheduler.jobgen.packing import PackedJob

    context = RunContext(harvest_id=1, harvest_name="bench", harvest_comments="", audience="",
                         schedule_name="", harvest_num=0, channel="FOCUSED", snapshot=False, global_traps=(),
                         harvest_traps=(), attribute_names=tuple(kind.name for kind in ATTRIBUTES),
                         creation_date=datetime.now(UTC))
    template = TemplateInfo(name="default_orderxml", document=NAS_TEMPLATE.read_text(encoding="utf-8"),
                            description="bench", lastupdated=None)
    job = PackedJob(template_name=template.name,
                    attributes=tuple(kind.default for kind in ATTRIBUTES),
                    max_objects_per_domain=UNLIMITED, max_bytes_per_domain=UNLIMITED, max_running_time=0,
                    configuration_sets_object_limit=False, configuration_sets_byte_limit=False)
    cxml = filled_template(context, template, 1, job, traps=())
    cxml = cxml.replace(placeholder(DEDUPLICATION_INDEX_LOCATION), "")
    return with_overrides(cxml, {**POLITENESS_OFF, "disposition.maxPerHostBandwidthUsageKbSec": 0,
                                 "crawlController.maxToeThreads": threads})


def tuned_cxml(threads: int) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans">
 <bean id="metadata" class="org.archive.modules.CrawlMetadata">
  <property name="jobName" value="bench"/><property name="robotsPolicyName" value="obey"/>
 </bean>
 <bean id="seeds" class="org.archive.modules.seeds.TextSeedModule">
  <property name="textSource"><bean class="org.archive.spring.ConfigFile">
   <property name="path" value="seeds.txt"/></bean></property>
 </bean>
 <bean id="scope" class="org.archive.modules.deciderules.DecideRuleSequence"><property name="rules"><list>
  <bean class="org.archive.modules.deciderules.RejectDecideRule"/>
  <bean class="org.archive.modules.deciderules.surt.SurtPrefixedDecideRule"/>
  <bean class="org.archive.modules.deciderules.TooManyHopsDecideRule"><property name="maxHops" value="1000"/></bean>
  <bean class="org.archive.modules.deciderules.TransclusionDecideRule"/>
  <bean class="org.archive.modules.deciderules.PrerequisiteAcceptDecideRule"/>
 </list></property></bean>
 <bean id="crawlController" class="org.archive.crawler.framework.CrawlController">
  <property name="maxToeThreads" value="{threads}"/>
 </bean>
 <bean id="fetchHttp" class="org.archive.modules.fetcher.FetchHTTP">
  <property name="timeoutSeconds" value="60"/><property name="soTimeoutMs" value="20000"/>
  <property name="useHTTP11" value="true"/><property name="sendConnectionClose" value="false"/>
 </bean>
 <bean id="disposition" class="org.archive.crawler.postprocessor.DispositionProcessor">
  <property name="delayFactor" value="0"/><property name="minDelayMs" value="0"/>
  <property name="maxDelayMs" value="0"/>
 </bean>
 <bean id="frontier" class="org.archive.crawler.frontier.BdbFrontier">
  <property name="maxRetries" value="3"/><property name="retryDelaySeconds" value="1"/>
 </bean>
 <bean id="queueAssignmentPolicy" class="org.archive.crawler.frontier.HostnameQueueAssignmentPolicy"/>
 <bean id="warcWriter" class="org.archive.modules.writer.WARCWriterProcessor">
  <property name="prefix" value="BENCH"/><property name="compress" value="true"/>
 </bean>
 <bean id="statisticsTracker" class="org.archive.crawler.reporting.StatisticsTracker">
  <property name="intervalSeconds" value="5"/>
 </bean>
</beans>
"""



class ProcessSampler:
    """CPU seconds and resident memory of a process, read from /proc while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_rss_mib = 0.0
        self.rss_mib = 0.0

    def sample(self) -> None:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_rss_mib = int(line.split()[1]) / 1024
                elif line.startswith("VmRSS:"):
                    self.rss_mib = int(line.split()[1]) / 1024
        except OSError:
            pass

    def cpu_seconds(self) -> float:
        """User plus system CPU seconds of the process (all its threads) so far."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def warc_counts(paths: list[Path]) -> tuple[int, set[str]]:
    """Response and revisit records of http(s) URLs in WARCs, and the distinct URLs of the HTML pages among
    them: response records of text/html with status 200."""
    from warcio.archiveiterator import ArchiveIterator

    records, pages = 0, set()
    for path in paths:
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type not in ("response", "revisit"):
                    continue
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if not uri.startswith("http"):
                    continue
                records += 1
                http = record.http_headers
                if (record.rec_type == "response" and http is not None and http.get_statuscode() == "200"
                        and (http.get_header("Content-Type") or "").split(";")[0].strip() == "text/html"):
                    pages.add(uri)
    return records, pages


def load_average() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def py_spy_record(pid: int, output: Path) -> subprocess.Popen | None:
    """py-spy recording ``pid`` into ``output`` until the process ends or it is stopped: collapsed stacks, one
    line a stack with its sample count (what flamegraph.pl and speedscope read)."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        print("  py-spy is missing (pip install -e '.[bench]'): no profile", flush=True)
        return None
    return subprocess.Popen([py_spy, "record", "--pid", str(pid), "--rate", "250", "--nonblocking", "--format",
                             "raw", "-o", str(output)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_engine(work: Path, hosts: list[str], port: int, threads: int, label: str, template: str,
               milestone: int | None = None, profile_dir: Path | None = None) -> dict:
    """``harvestsuite engine`` driven over its REST API on one of the templates; seconds on the crawl's clock."""
    sys.path.insert(0, str(ROOT))
    from harvester.heritrix import HeritrixClient
    from harvester.heritrix3.states import ControllerState
    from harvester.jobdir import Launch

    seeds = [f"http://{host}:{port}/" for host in hosts]
    cxml = {"heritrix": lambda: heritrix_profile_cxml(seeds, threads), "nas": lambda: nas_default_cxml(threads),
            "tuned": lambda: tuned_cxml(threads)}[template]()
    jobs = work / f"engine-{label}-{template}"
    job_dir = jobs / "bench"
    job_dir.mkdir(parents=True)
    (job_dir / "crawler-beans.cxml").write_text(cxml)
    (job_dir / "seeds.txt").write_text("".join(f"{seed}\n" for seed in seeds))
    hosts_file = work / "hosts"
    hosts_file.write_text("".join(f"{host} 127.0.0.1\n" for host in hosts))
    command = [str(Path(sys.executable).parent / "harvestsuite"), "engine", "--jobs-dir", str(jobs), "--port", "0",
               "--auth", "admin:bench", "--hosts", str(hosts_file), "--bind", "127.0.0.1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               preexec_fn=pinned(CRAWLER_CPU))
    url = None
    for line in process.stdout:
        if "Engine listening at " in line:
            url = line.split("Engine listening at ", 1)[1].strip().removesuffix("/engine")
            break
    if url is None:
        raise RuntimeError("the engine did not start")
    threading.Thread(target=process.stdout.read, daemon=True).start()
    sampler = ProcessSampler(process.pid)
    client = HeritrixClient(url, "admin", "bench", verify=False, timeout=120)
    load_before = load_average()
    spy = None
    try:
        client.rescan()
        client.build("bench")
        if profile_dir is not None:
            spy = py_spy_record(process.pid, profile_dir / f"{label}-{LINE_NAMES[template]}.txt")
        # From the launch: NetarchiveSuite's template sets pauseAtStart=false, so its crawl starts at once.
        cpu_before = sampler.cpu_seconds()
        client.launch("bench")
        started = client.wait_for("bench", lambda s: s.crawl_controller_state not in (
            None, ControllerState.NASCENT, ControllerState.PREPARING), timeout=60, poll_interval=0.1)
        if started.crawl_controller_state == ControllerState.PAUSED:
            client.unpause("bench")
        at_milestone = None
        while True:
            time.sleep(1.0)
            sampler.sample()
            status = client.job_status("bench")
            downloaded = status.uri_totals_report.downloaded_uri_count if status.uri_totals_report else 0
            if milestone and at_milestone is None and downloaded >= milestone:
                at_milestone = (downloaded, sampler.rss_mib, sampler.peak_rss_mib)
                print(f"  engine at {downloaded} URIs: RSS {sampler.rss_mib:.0f} MiB "
                      f"(peak {sampler.peak_rss_mib:.0f} MiB)", flush=True)
            if status.is_finished:
                break
        sampler.sample()
        cpu = sampler.cpu_seconds() - cpu_before
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    warcs = Launch(job_dir / "latest").warc_files()
    records, pages = warc_counts(warcs)
    seconds = status.elapsed_report.elapsed_milliseconds / 1000
    return {"seconds": seconds, "records": records, "pages": pages, "cpu": cpu,
            "rss_mib": sampler.peak_rss_mib, "warc_bytes": sum(p.stat().st_size for p in warcs),
            "exit": status.crawl_exit_status, "milestone": at_milestone, "load": (load_before, load_average())}


SCRAPY_SPIDER = """
import io
import scrapy
from warcio.warcwriter import WARCWriter
from warcio.statusandheaders import StatusAndHeaders


class WarcPipeline:
    def open_spider(self, spider):
        self.handle = open(spider.settings["WARC_PATH"], "wb")
        self.writer = WARCWriter(self.handle, gzip=True)

    def close_spider(self, spider):
        self.handle.close()

    def process_item(self, item, spider):
        response = item["response"]
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, vs in response.headers.items() for v in vs]
        http_headers = StatusAndHeaders(f"{response.status} OK", headers, protocol="HTTP/1.1")
        record = self.writer.create_warc_record(response.url, "response", payload=io.BytesIO(response.body),
                                                http_headers=http_headers)
        self.writer.write_record(record)
        return {}


class BenchSpider(scrapy.Spider):
    name = "bench"
    custom_settings = {"ITEM_PIPELINES": {__name__ + ".WarcPipeline": 100}}

    async def start(self):
        self.bench_hosts = set(self.hosts.split(","))
        for host in sorted(self.bench_hosts):
            yield scrapy.Request(f"http://{host}:{self.settings['BENCH_PORT']}/")

    def parse(self, response):
        yield {"response": response}
        if not isinstance(response, scrapy.http.TextResponse):
            return
        for href in response.css("a::attr(href), img::attr(src)").getall():
            url = response.urljoin(href)
            if url.split("/")[2].split(":")[0] in self.bench_hosts:
                yield scrapy.Request(url, callback=self.parse)
"""


def run_scrapy(python: str, work: Path, hosts: list[str], port: int, threads: int, label: str) -> dict:
    directory = work / f"scrapy-{label}"
    directory.mkdir()
    spider = directory / "bench_spider.py"
    spider.write_text(SCRAPY_SPIDER)
    warc = directory / "scrapy.warc.gz"
    settings = {"CONCURRENT_REQUESTS": threads, "CONCURRENT_REQUESTS_PER_DOMAIN": 1, "DOWNLOAD_DELAY": 0,
                "ROBOTSTXT_OBEY": True, "LOG_LEVEL": "WARNING", "WARC_PATH": str(warc), "BENCH_PORT": port,
                "TELNETCONSOLE_ENABLED": False, "REDIRECT_ENABLED": True, "HTTPERROR_ALLOW_ALL": True,
                "DEPTH_PRIORITY": 0, "REACTOR_THREADPOOL_MAXSIZE": 10}
    command = [python, "-m", "scrapy", "runspider", str(spider)]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    command += ["-a", f"hosts={','.join(hosts)}"]
    env = {**os.environ, "http_proxy": f"http://127.0.0.1:{port}/"}
    load_before = load_average()
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=directory, env=env, stdout=subprocess.DEVNULL,
                               stderr=open(directory / "scrapy.log", "w"), preexec_fn=pinned(CRAWLER_CPU))  # noqa: SIM115
    sampler = ProcessSampler(process.pid)
    while process.poll() is None:
        sampler.sample()
        cpu = sampler.cpu_seconds()
        time.sleep(0.5)
    seconds = time.monotonic() - started
    records, pages = warc_counts([warc])
    return {"seconds": seconds, "records": records, "pages": pages, "cpu": cpu, "rss_mib": sampler.peak_rss_mib,
            "warc_bytes": warc.stat().st_size, "exit": f"exit {process.returncode}",
            "load": (load_before, load_average())}


def run_wget(work: Path, hosts: list[str], port: int, label: str, seconds: float) -> dict:
    """wget recursive with page requisites, stopped after ``seconds``; counted from its WARC."""
    directory = work / f"wget-{label}"
    directory.mkdir()
    seeds = directory / "seeds.txt"
    seeds.write_text("".join(f"http://{host}:{port}/\n" for host in hosts))
    command = ["wget", "-r", "-l", "inf", "-e", "robots=on", "-H", "--domains", ",".join(hosts), "--page-requisites",
               "--warc-file", str(directory / "wget"), "-nv", "-o", str(directory / "wget.log"), "-i", str(seeds),
               "-e", "use_proxy=on", "-e", f"http_proxy=http://127.0.0.1:{port}/", "-P", str(directory / "files")]
    load_before = load_average()
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               preexec_fn=pinned(CRAWLER_CPU))
    sampler = ProcessSampler(process.pid)
    cpu = 0.0
    while process.poll() is None and time.monotonic() - started < seconds:
        sampler.sample()
        cpu = sampler.cpu_seconds()
        time.sleep(0.5)
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        process.wait(30)
    elapsed = time.monotonic() - started
    warcs = sorted(directory.glob("wget*.warc.gz"))
    records, pages = warc_counts(warcs)
    return {"seconds": elapsed, "records": records, "pages": pages, "cpu": cpu, "rss_mib": sampler.peak_rss_mib,
            "warc_bytes": sum(p.stat().st_size for p in warcs), "exit": "time limit" if elapsed >= seconds else "done",
            "load": (load_before, load_average())}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def report(label: str, expected: set[str], results: dict[str, dict], floor: float) -> None:
    """The run's lines: first what carries to another machine (each crawler's CPU per HTML page as a multiple of
    the floor measured in this run, and the engine's pages/s against Scrapy's and wget's), then each line's
    absolute figures."""
    print(f"\n== {label} ==")
    print(f"floor: {1000 * floor:.3f} ms CPU per HTML page (lxml parse and links, gzip level 6), measured in this run")
    rates, lines = {}, []
    for name, result in results.items():
        seconds = max(result["seconds"], 1e-9)
        pages = len(result["pages"])
        rates[name] = pages / seconds
        missing = expected - result["pages"]
        complete = "complete" if not missing else \
            f"INCOMPLETE: {len(missing)} of {len(expected)} HTML pages missing, e.g. {sorted(missing)[0]}"
        per_page = result["cpu"] / max(pages, 1)
        print(f"ratio {name}/floor: {per_page / floor:5.1f}x CPU per HTML page ({complete})")
        lines.append(f"{name:18} {pages:>7} HTML pages in {result['seconds']:6.1f} s = {rates[name]:7.1f} "
                     f"HTML pages/s; {result['records']:>7} records = {result['records'] / seconds:7.1f} records/s; "
                     f"{1000 * per_page:5.2f} ms CPU/HTML page "
                     f"({1000 * result['cpu'] / max(result['records'], 1):5.2f} ms/record); "
                     f"{result['warc_bytes'] / 1e6 / seconds:5.2f} MB/s WARC; peak RSS {result['rss_mib']:4.0f} MiB; "
                     f"load {result['load'][0]} -> {result['load'][1]}; {result['exit']}, {complete}")
    engines = [name for name in results if name in LINE_NAMES.values()]
    for other in ("scrapy", "wget"):
        if rates.get(other):
            for engine in engines:
                print(f"ratio {engine}/{other}: {rates[engine] / rates[other]:.2f}x HTML pages/s")
    for line in lines:
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000, help="HTML pages of the site, over all hosts")
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--delay-ms", type=int, default=50)
    parser.add_argument("--memory-pages", type=int, default=200_000)
    parser.add_argument("--wget-seconds", type=float, default=120, help="0: no wget line")
    parser.add_argument("--scrapy-python", default=None, help="a Python with scrapy and warcio (default: skip)")
    parser.add_argument("--templates", default=",".join(TEMPLATES),
                        help=f"engine lines, comma-separated from {', '.join(TEMPLATES)}")
    parser.add_argument("--only", choices=("delay", "nodelay", "memory"), default=None)
    parser.add_argument("--py-spy", type=Path, default=None, metavar="DIR",
                        help="record a py-spy profile (collapsed stacks) of every engine line into DIR")
    parser.add_argument("--keep", type=Path, default=None, help="work directory to keep (default: a temp dir)")
    args = parser.parse_args()
    templates = [name.strip() for name in args.templates.split(",") if name.strip()]
    unknown = set(templates) - set(TEMPLATES)
    if unknown:
        parser.error(f"--templates: unknown {', '.join(sorted(unknown))} (known: {', '.join(TEMPLATES)})")
    if shutil.which("nginx") is None:
        sys.exit("nginx is missing: apt-get install -y nginx-light")
    if "heritrix" in templates and not HERITRIX_PROFILE.exists():
        print(f"heritrix-default: skipped, {HERITRIX_PROFILE} is absent (it comes with shared/ beside the checkout)")
        templates.remove("heritrix")
    print(f"crawl benchmark {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: {' '.join(['python', *sys.argv])}\n"
          f"machine: nproc {os.cpu_count()}, {cpu_model()}, Python {platform.python_version()}; "
          f"load average {load_average()}", flush=True)
    if args.py_spy:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    work = args.keep or Path(tempfile.mkdtemp(prefix="hs-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # mkdtemp makes it 0700; nginx workers run as another user and must read the site
    hosts = host_names(args.hosts)
    try:
        port = free_port()  # one port for every run: pages link to other hosts with it
        runs = [("nodelay", 0, args.pages), ("delay", args.delay_ms, args.pages), ("memory", 0, args.memory_pages)]
        for label, delay, pages in runs:
            if (args.only and label != args.only) or (not args.only and label == "memory"):
                continue
            pages_per_host = pages // args.hosts
            expected = {f"http://{host}:{port}{page_path(n)}" for host in hosts for n in range(pages_per_host)}
            site = work / f"site-{pages}"
            if not site.exists():
                started = time.monotonic()
                generate_site(site, hosts, pages_per_host, port)
                print(f"site: {len(expected)} HTML pages over {args.hosts} hosts generated in "
                      f"{time.monotonic() - started:.1f} s", flush=True)
            nginx = subprocess.Popen(["nginx", "-c", str(nginx_config(work, site, port, delay)), "-p", str(work)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=pinned(SERVER_CPU))
            wait_for_port(nginx, port)
            results = {}
            floors = [floor_cpu_per_page(site, hosts, pages_per_host)]
            try:
                for template in (["heritrix"] if label == "memory" else templates):
                    results[LINE_NAMES[template]] = run_engine(
                        work, hosts, port, args.threads, label, template,
                        milestone=pages // 4 if label == "memory" else None, profile_dir=args.py_spy)
                if label != "memory":
                    if args.scrapy_python:
                        results["scrapy"] = run_scrapy(args.scrapy_python, work, hosts, port, args.threads, label)
                    if args.wget_seconds > 0:
                        results["wget"] = run_wget(work, hosts, port, label, args.wget_seconds)
            finally:
                nginx.terminate()
                nginx.wait(10)
            # before and after the lines, so a change of the machine's load during the run is averaged in
            floors.append(floor_cpu_per_page(site, hosts, pages_per_host))
            report(f"{label}: {len(expected)} HTML pages, " + (f"{delay} ms per response" if delay else "no delay"),
                   expected, results, sum(floors) / len(floors))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
