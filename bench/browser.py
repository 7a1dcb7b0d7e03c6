"""Browser crawler benchmark: pages per minute of the browser crawler (the BROWSER channel's) beside the
bundled engine's, on one core, over the same local site.

    python bench/browser.py [--pages 100] [--runs 1]

The site is tests/engine/scriptsite.py's ``/pages/N``: each page links to the next in its HTML (so the
engine crawls it as well as the browser) and writes into itself, by a script, what it fetched from
``/pages/N/data.json``. It runs in a child process on CPU 1; the crawls run in this process on CPU 0, the
browser crawler's Chromium and Playwright driver with them (children inherit the CPU), so each crawler has
one core. Both crawl with tests/engine/data/small-crawler-beans.cxml (no politeness delay) driven as a
launch of the engine (CrawlController), the browser crawler with pagesPerMinutePerHost off (it is a
politeness limit, not a capacity) and Chromium at its defaults otherwise.

Each crawl must capture every page (a 200 line for each ``/pages/N`` in its crawl.log), or the run is
refused (exit status 1). Printed per crawler: pages, seconds from the first to the last crawl.log line,
pages per minute, CPU seconds per page (this process and its children, Chromium included), and how many
pages' script-made content (``data.json``) is in the WARC; then the ratio and the machine.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import platform
import resource
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvester.engine.config import load_crawl_config  # noqa: E402
from harvester.engine.crawl import CrawlController  # noqa: E402
from harvester.engine.fetching.browser import BrowserOptions  # noqa: E402
from tests.engine.conftest import write_job  # noqa: E402
from tests.engine.scriptsite import HOST, ScriptSite  # noqa: E402


def serve(pages: int, ports: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {1})
    with ScriptSite(pages=pages) as site:
        ports.put(site.port)
        stop.wait()


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def crawl(directory: Path, port: int, pages: int, browser: BrowserOptions | None) -> dict[str, float]:
    seed = f"http://{HOST}:{port}/pages/1"
    job_dir = directory / ("browser" if browser else "engine")
    cxml = write_job(job_dir, [seed], {"crawlController.maxToeThreads": 1},
                     {'<property name="maxHops" value="20"/>': f'<property name="maxHops" value="{pages + 1}"/>'})
    launch_dir = job_dir / "launch"
    launch_dir.mkdir()
    cpu_before = cpu_seconds()
    controller = CrawlController(load_crawl_config(cxml, job_dir), job_dir, launch_dir, {HOST: "127.0.0.1"},
                                 logging.getLogger("bench"), browser=browser)
    controller.start()
    if not controller.join(3600):
        controller.terminate()
        raise SystemExit("the crawl did not end within an hour")
    cpu = cpu_seconds() - cpu_before
    lines = [line.split() for line in (launch_dir / "logs" / "crawl.log").read_text().splitlines() if line]
    page_urls = {f"http://{HOST}:{port}/pages/{n}" for n in range(1, pages + 1)}
    captured = {fields[3] for fields in lines if fields[3] in page_urls and fields[1] == "200"}
    if captured != page_urls:
        raise SystemExit(f"{'browser' if browser else 'engine'}: {len(captured)} of {pages} pages captured")
    data = sum(1 for fields in lines if fields[3].endswith("/data.json") and fields[1] == "200")
    times = sorted(datetime.strptime(fields[0], "%Y-%m-%dT%H:%M:%S.%fZ") for fields in lines)
    seconds = max((times[-1] - times[0]).total_seconds(), 0.001)
    return {"pages": len(captured), "seconds": seconds, "per_minute": len(captured) / seconds * 60,
            "cpu_per_page": cpu / len(captured), "data": data}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    arguments = parser.parse_args()
    ports: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(arguments.pages, ports, stop), daemon=True)
    server.start()
    port = ports.get(timeout=30)
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {0})
    browser = BrowserOptions(pages_per_minute_per_host=0)
    results: dict[str, list[dict[str, float]]] = {"engine": [], "browser": []}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-browser-") as scratch:
            for run in range(arguments.runs):
                for name, options in (("engine", None), ("browser", browser)):
                    directory = Path(scratch) / f"run{run}"
                    directory.mkdir(exist_ok=True)
                    results[name].append(crawl(directory, port, arguments.pages, options))
    finally:
        stop.set()
        server.join(10)
    print(f"{arguments.pages} pages of a script-built site, one core each, {arguments.runs} run(s); best run shown")
    print(f"{'crawler':<8} {'pages':>6} {'seconds':>8} {'pages/min':>10} {'CPU s/page':>11} "
          f"{'script data in WARC':>20}")
    best = {}
    for name, runs in results.items():
        best[name] = max(runs, key=lambda figures: figures["per_minute"])
        figures = best[name]
        print(f"{name:<8} {figures['pages']:>6.0f} {figures['seconds']:>8.1f} {figures['per_minute']:>10.0f} "
              f"{figures['cpu_per_page']:>11.3f} {figures['data']:>14.0f} of {figures['pages']:.0f}")
    print(f"engine / browser: {best['engine']['per_minute'] / best['browser']['per_minute']:.0f} x the pages per "
          "minute")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}")


if __name__ == "__main__":
    main()
