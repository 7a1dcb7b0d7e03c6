"""Crawl benchmark: the bundled engine, a Scrapy spider and wget, each driven as its users drive it, on a
generated site served by nginx.

    python bench/crawl.py [--pages 10000] [--hosts 50] [--threads 50] [--only delay|nodelay|memory]
                          [--memory-pages 200000] [--scrapy-python PATH] [--wget-seconds 120] [--keep DIR]

The site (pages, images, a duplicate binary on every host, redirects, 404 links, robots.txt) is written to
a temporary directory and served by Debian's nginx on a free loopback port. Host names resolve through the
engine's ``--hosts`` file; Scrapy and wget reach the same names through nginx as their HTTP proxy.

- The engine runs as ``harvestsuite engine`` (its own process) and is driven over its REST API, as the
  harvest controller drives it: create the job, build, launch, unpause, poll the status until finished.
  HarvestSuite's template settings: HTTP/1.1 keep-alive, no politeness delay, one connection per host.
- Scrapy (run with ``--scrapy-python``, a Python that has scrapy and warcio) uses the engine's concurrency
  (CONCURRENT_REQUESTS = threads, one connection per host, no delay) and writes a WARC with warcio.
- wget is the serial baseline, stopped after ``--wget-seconds``.

Each run is checked complete: the distinct page URLs with a response record in its WARC must equal the
site's pages (wget's time-limited run excepted). Printed per crawler: pages/s (response records per second
of crawl), MB/s of WARC written, CPU seconds per page and peak RSS of the crawler's process, and the
ratios. Runs: 50 ms per response (latency-bound) and undelayed (CPU-bound), each crawler pinned to CPU 0
and nginx to CPU 1 when the machine has two; ``memory`` crawls ``--memory-pages`` pages with the engine
only and prints its RSS at 25 % of the crawl and at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES_PER_HOST = 40
DUP_BINARY = bytes(random.Random(7).getrandbits(8) for _ in range(50_000))


def host_names(count: int) -> list[str]:
    return [f"www.bench{n:02d}-kulturarv.dk" for n in range(count)]


def generate_site(root: Path, hosts: list[str], pages_per_host: int, port: int) -> None:
    rng = random.Random(42)
    filler = " ".join("lorem ipsum dolor sit amet consectetur" for _ in range(70))
    for index, host in enumerate(hosts):
        base = root / host
        (base / "page").mkdir(parents=True)
        (base / "img").mkdir()
        (base / "private").mkdir()
        (base / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
        (base / "private" / "x.html").write_text("<html>private</html>")
        (base / "dup.bin").write_bytes(DUP_BINARY)
        for n in range(IMAGES_PER_HOST):
            (base / "img" / f"{n}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + rng.randbytes(2000 + n * 50))
        for n in range(pages_per_host):
            links = {(n * 2 + 1) % pages_per_host, (n * 2 + 2) % pages_per_host, (n + 1) % pages_per_host}
            links.update(rng.randrange(pages_per_host) for _ in range(3))
            anchors = "".join(f'<a href="/page/{m}.html">page {m}</a>\n' for m in sorted(links))
            extra = ""
            if n % 20 == 0:
                extra += f'<a href="/redir/{n + 1}">redirect</a>\n<a href="/missing/{n}.html">gone</a>\n'
                extra += '<a href="/dup.bin">binary</a>\n<a href="/private/x.html">private</a>\n'
            if n == 0:
                other = hosts[(index + 1) % len(hosts)]
                extra += f'<a href="http://{other}:{port}/">next host</a>\n'
            images = "".join(f'<img src="/img/{(n + k) % IMAGES_PER_HOST}.png">' for k in range(2))
            html = (f"<html><head><title>{host} {n}</title></head><body>\n{images}\n{anchors}{extra}"
                    f"<p>{filler}</p></body></html>\n")
            (base / "page" / f"{n}.html").write_text(html)
        (base / "index.html").write_text('<html><body><a href="/page/0.html">start</a></body></html>\n')


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


def engine_cxml(threads: int) -> str:
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
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def warc_page_urls(paths: list[Path]) -> tuple[int, set[str]]:
    """Response and revisit records in WARCs, and the distinct page URLs (/page/N.html) among them."""
    from warcio.archiveiterator import ArchiveIterator

    records, pages = 0, set()
    for path in paths:
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle, no_record_parse=True):
                if record.rec_type in ("response", "revisit"):
                    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                    if uri.startswith("http"):
                        records += 1
                        if "/page/" in uri:
                            pages.add(uri)
    return records, pages


def run_engine(work: Path, hosts: list[str], port: int, threads: int, label: str,
               milestone: int | None = None) -> dict:
    """``harvestsuite engine`` driven over its REST API; pages/s over the crawl's own clock."""
    sys.path.insert(0, str(ROOT))
    from harvester.crawlstates import ControllerState
    from harvester.heritrix import HeritrixClient
    from harvester.jobdir import Launch

    jobs = work / f"engine-{label}"
    job_dir = jobs / "bench"
    job_dir.mkdir(parents=True)
    (job_dir / "crawler-beans.cxml").write_text(engine_cxml(threads))
    (job_dir / "seeds.txt").write_text("".join(f"http://{host}:{port}/\n" for host in hosts))
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
    try:
        client.rescan()
        client.build("bench")
        client.launch("bench")
        client.wait_for("bench", lambda s: s.crawl_controller_state == ControllerState.PAUSED, timeout=60,
                        poll_interval=0.2)
        cpu_before = sampler.cpu_seconds()
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
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    warcs = Launch(job_dir / "latest").warc_files()
    records, pages = warc_page_urls(warcs)
    seconds = status.elapsed_report.elapsed_milliseconds / 1000
    return {"seconds": seconds, "records": records, "pages": len(pages), "cpu": cpu,
            "rss_mib": sampler.peak_rss_mib, "warc_bytes": sum(p.stat().st_size for p in warcs),
            "exit": status.crawl_exit_status, "milestone": at_milestone}


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
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=directory, env=env, stdout=subprocess.DEVNULL,
                               stderr=open(directory / "scrapy.log", "w"), preexec_fn=pinned(CRAWLER_CPU))  # noqa: SIM115
    sampler = ProcessSampler(process.pid)
    while process.poll() is None:
        sampler.sample()
        cpu = sampler.cpu_seconds()
        time.sleep(0.5)
    seconds = time.monotonic() - started
    records, pages = warc_page_urls([warc])
    return {"seconds": seconds, "records": records, "pages": len(pages), "cpu": cpu, "rss_mib": sampler.peak_rss_mib,
            "warc_bytes": warc.stat().st_size, "exit": f"exit {process.returncode}"}


def run_wget(work: Path, hosts: list[str], port: int, label: str, seconds: float) -> dict:
    """wget recursive with page requisites, stopped after ``seconds``; counted from its WARC."""
    directory = work / f"wget-{label}"
    directory.mkdir()
    seeds = directory / "seeds.txt"
    seeds.write_text("".join(f"http://{host}:{port}/\n" for host in hosts))
    command = ["wget", "-r", "-l", "inf", "-e", "robots=on", "-H", "--domains", ",".join(hosts), "--page-requisites",
               "--warc-file", str(directory / "wget"), "-nv", "-o", str(directory / "wget.log"), "-i", str(seeds),
               "-e", "use_proxy=on", "-e", f"http_proxy=http://127.0.0.1:{port}/", "-P", str(directory / "files")]
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
    records, pages = warc_page_urls(warcs)
    return {"seconds": elapsed, "records": records, "pages": len(pages), "cpu": cpu, "rss_mib": sampler.peak_rss_mib,
            "warc_bytes": sum(p.stat().st_size for p in warcs), "exit": "time limit" if elapsed >= seconds else "done"}


def report(label: str, expected_pages: int, results: dict[str, dict]) -> None:
    print(f"\n== {label} ==")
    rates = {}
    for name, result in results.items():
        rate = result["records"] / max(result["seconds"], 1e-9)
        rates[name] = rate
        complete = "complete" if result["pages"] == expected_pages else \
            f"INCOMPLETE: {result['pages']} of {expected_pages} pages"
        print(f"{name:7} {result['records']:>7} records in {result['seconds']:7.1f} s = {rate:7.1f} pages/s, "
              f"{result['warc_bytes'] / 1e6 / max(result['seconds'], 1e-9):6.2f} MB/s WARC, "
              f"{1000 * result['cpu'] / max(result['records'], 1):5.2f} ms CPU/page, "
              f"peak RSS {result['rss_mib']:5.0f} MiB, {result['exit']}, {complete}")
    for name in rates:
        if name != "engine" and rates[name]:
            print(f"ratio engine/{name}: {rates['engine'] / rates[name]:.2f}x pages/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--delay-ms", type=int, default=50)
    parser.add_argument("--memory-pages", type=int, default=200_000)
    parser.add_argument("--wget-seconds", type=float, default=120)
    parser.add_argument("--scrapy-python", default=None, help="a Python with scrapy and warcio (default: skip)")
    parser.add_argument("--only", choices=("delay", "nodelay", "memory"), default=None)
    parser.add_argument("--keep", type=Path, default=None, help="work directory to keep (default: a temp dir)")
    args = parser.parse_args()
    if shutil.which("nginx") is None:
        sys.exit("nginx is missing: apt-get install -y nginx-light")
    work = args.keep or Path(tempfile.mkdtemp(prefix="hs-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # mkdtemp makes it 0700; nginx workers run as another user and must read the site
    hosts = host_names(args.hosts)
    try:
        port = free_port()  # one port for every run: pages link to other hosts with it
        runs = [("delay", args.delay_ms, args.pages), ("nodelay", 0, args.pages), ("memory", 0, args.memory_pages)]
        for label, delay, pages in runs:
            if (args.only and label != args.only) or (not args.only and label == "memory"):
                continue
            pages_per_host = pages // args.hosts
            site = work / f"site-{pages}"
            if not site.exists():
                started = time.monotonic()
                generate_site(site, hosts, pages_per_host, port)
                print(f"site: {pages_per_host * args.hosts} pages over {args.hosts} hosts generated in "
                      f"{time.monotonic() - started:.1f} s", flush=True)
            nginx = subprocess.Popen(["nginx", "-c", str(nginx_config(work, site, port, delay)), "-p", str(work)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=pinned(SERVER_CPU))
            wait_for_port(nginx, port)
            try:
                results = {"engine": run_engine(work, hosts, port, args.threads, label,
                                                milestone=pages // 4 if label == "memory" else None)}
                if label != "memory":
                    if args.scrapy_python:
                        results["scrapy"] = run_scrapy(args.scrapy_python, work, hosts, port, args.threads, label)
                    results["wget"] = run_wget(work, hosts, port, label, args.wget_seconds)
            finally:
                nginx.terminate()
                nginx.wait(10)
            report(f"{label}: {pages_per_host * args.hosts} pages, " + (f"{delay} ms per response" if delay
                                                                        else "no delay"),
                   pages_per_host * args.hosts, results)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
