"""Crawl benchmark: the bundled engine against ``wget --warc-file`` on a generated site served by nginx.

    python bench/crawl.py [--pages 20000] [--hosts 50] [--wget-seconds 120] [--keep DIR]

The site (pages, images, a duplicate binary on every host, redirects, 404 links, robots.txt) is written
to a temporary directory and served by Debian's nginx (a second process, so the server is not Python) on
a free loopback port with its own configuration; every host name resolves through the engine's
``--hosts`` mapping, and wget reaches the same names by using nginx as its HTTP proxy (nginx picks the
server from the absolute request URI). Two runs: each response delayed 50 ms (nginx echo_sleep), and
undelayed. The engine runs with politeness delays 0 and one connection per host; wget is sequential.
wget is stopped after --wget-seconds (a 20,000-page delayed crawl would take it 20 minutes): its rate is
what it fetched in that time. Prints pages/s, MB/s and peak RSS for both, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
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


def start_nginx(config: Path, port: int) -> subprocess.Popen:
    process = subprocess.Popen(["nginx", "-c", str(config), "-p", str(config.parent)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"nginx did not start: {process.stderr.read().decode()}") from None
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("nginx did not start listening within 10 s")


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
 </bean>
 <bean id="disposition" class="org.archive.crawler.postprocessor.DispositionProcessor">
  <property name="delayFactor" value="0"/><property name="minDelayMs" value="0"/>
  <property name="maxDelayMs" value="0"/>
 </bean>
 <bean id="frontier" class="org.archive.crawler.frontier.BdbFrontier">
  <property name="maxRetries" value="3"/><property name="retryDelaySeconds" value="1"/>
 </bean>
 <bean id="warcWriter" class="org.archive.modules.writer.WARCWriterProcessor">
  <property name="prefix" value="BENCH"/><property name="compress" value="true"/>
 </bean>
 <bean id="DeDuplicator" class="is.hi.bok.deduplicator.DeDuplicator"/>
 <bean id="statisticsTracker" class="org.archive.crawler.reporting.StatisticsTracker">
  <property name="intervalSeconds" value="5"/>
 </bean>
</beans>
"""


def run_engine_child(job_dir: Path, hosts_file: Path) -> None:
    """In the child process: one crawl, then its figures as JSON on stdout."""
    import logging

    sys.path.insert(0, str(ROOT))
    from harvester.engine.config import load_crawl_config
    from harvester.engine.crawl import CrawlController
    from harvester.engine.hostsfile import load_hosts_file

    config = load_crawl_config(job_dir / "crawler-beans.cxml", job_dir)
    launch = job_dir / time.strftime("%Y%m%d%H%M%S")
    launch.mkdir()
    controller = CrawlController(config, job_dir, launch, load_hosts_file(hosts_file), logging.getLogger("bench"))
    started = time.monotonic()
    controller.start()
    controller.join()
    elapsed = time.monotonic() - started
    status = controller.status()
    print(json.dumps({"seconds": elapsed, "fetched": status.uri_totals["downloadedUriCount"],
                      "bytes": status.size_totals["total"], "exit": status.exit_status,
                      "revisits": status.size_totals["dupByHashCount"],
                      "warc_bytes": sum(p.stat().st_size for p in (launch / "warcs").iterdir())}))


def wait_with_rusage(process: subprocess.Popen, timeout: float | None) -> tuple[int, float]:
    """Wait for a child (SIGINT after ``timeout``); its peak RSS in MiB, from wait4."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode, usage.ru_maxrss / 1024
        if deadline is not None and time.monotonic() > deadline:
            process.send_signal(signal.SIGINT)
            deadline = None
        time.sleep(0.05)


def run_engine(work: Path, hosts: list[str], port: int, threads: int, label: str) -> dict:
    job_dir = work / f"engine-{label}"
    job_dir.mkdir()
    (job_dir / "crawler-beans.cxml").write_text(engine_cxml(threads))
    (job_dir / "seeds.txt").write_text("".join(f"http://{host}:{port}/\n" for host in hosts))
    hosts_file = work / "hosts"
    hosts_file.write_text("".join(f"{host} 127.0.0.1\n" for host in hosts))
    process = subprocess.Popen([sys.executable, __file__, "_engine", str(job_dir), str(hosts_file)],
                               stdout=subprocess.PIPE, text=True)
    output_lines = []
    _, rss = wait_with_rusage(process, None)
    output_lines.append(process.stdout.read())
    result = json.loads(output_lines[-1].strip().splitlines()[-1])
    result["rss_mib"] = rss
    return result


def run_wget(work: Path, hosts: list[str], port: int, label: str, seconds: float) -> dict:
    directory = work / f"wget-{label}"
    directory.mkdir()
    seeds = directory / "seeds.txt"
    seeds.write_text("".join(f"http://{host}:{port}/\n" for host in hosts))
    log = directory / "wget.log"
    command = ["wget", "-r", "-l", "inf", "--delete-after", "-e", "robots=on", "-H", "--domains",
               ",".join(hosts), "--page-requisites", "--warc-file", str(directory / "wget"), "-nv",
               "-o", str(log), "-i", str(seeds), "-e", "use_proxy=on", "-e", f"http_proxy=http://127.0.0.1:{port}/",
               "-P", str(directory / "files")]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, rss = wait_with_rusage(process, seconds)
    elapsed = time.monotonic() - started
    text = log.read_text(errors="replace")
    fetched = text.count(" URL:") + text.count(" ERROR 404")
    warc_bytes = sum(p.stat().st_size for p in directory.glob("wget*.warc*"))
    return {"seconds": elapsed, "fetched": fetched, "bytes": warc_bytes, "rss_mib": rss, "warc_bytes": warc_bytes}


def report(label: str, engine: dict, wget: dict) -> None:
    engine_rate = engine["fetched"] / engine["seconds"]
    wget_rate = wget["fetched"] / wget["seconds"]
    print(f"\n== {label} ==")
    print(f"engine: {engine['fetched']} fetches in {engine['seconds']:.1f} s = {engine_rate:.0f} pages/s, "
          f"{engine['bytes'] / 1e6 / engine['seconds']:.2f} MB/s, peak RSS {engine['rss_mib']:.0f} MiB, "
          f"exit {engine['exit']}, {engine['revisits']} revisits, WARC {engine['warc_bytes'] / 1e6:.1f} MB")
    print(f"wget:   {wget['fetched']} fetches in {wget['seconds']:.1f} s = {wget_rate:.0f} pages/s, "
          f"{wget['bytes'] / 1e6 / wget['seconds']:.2f} MB/s (WARC bytes), peak RSS {wget['rss_mib']:.0f} MiB")
    print(f"ratio engine/wget: {engine_rate / max(wget_rate, 1e-9):.1f}x pages/s")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_engine":
        run_engine_child(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--delay-ms", type=int, default=50)
    parser.add_argument("--wget-seconds", type=float, default=120)
    parser.add_argument("--only", choices=("delay", "nodelay"), default=None)
    parser.add_argument("--keep", type=Path, default=None, help="work directory to keep (default: a temp dir)")
    args = parser.parse_args()
    if shutil.which("nginx") is None:
        sys.exit("nginx is missing: apt-get install -y nginx-light")
    work = args.keep or Path(tempfile.mkdtemp(prefix="hs-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # mkdtemp makes it 0700; nginx workers run as another user and must read the site
    hosts = host_names(args.hosts)
    try:
        site = work / "site"
        port = free_port()  # one port for both runs: pages link to other hosts with it
        if not site.exists():
            started = time.monotonic()
            generate_site(site, hosts, args.pages // args.hosts, port)
            print(f"site: {args.pages} pages over {args.hosts} hosts generated in {time.monotonic() - started:.1f} s")
        runs = [("delay", args.delay_ms), ("nodelay", 0)]
        for label, delay in runs:
            if args.only and label != args.only:
                continue
            nginx = start_nginx(nginx_config(work, site, port, delay), port)
            try:
                engine = run_engine(work, hosts, port, args.threads, label)
                wget = run_wget(work, hosts, port, label, args.wget_seconds)
            finally:
                nginx.terminate()
                nginx.wait(10)
            report(f"{label}: {delay} ms per response" if delay else "no delay", engine, wget)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
