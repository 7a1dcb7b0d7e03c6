"""QA benchmark: the time the QA step (harvester/postprocess/qa.py) adds to post-processing a job.

    python bench/qa.py [--pages 1000] [--hosts 10] [--runs 3] [--keep DIR]

The job is real: bench/crawl.py's site generator writes ``--pages`` pages over ``--hosts`` hosts (two images
a page from 40 per host, a duplicate binary, redirects, links to missing pages, a directory robots.txt
forbids), Debian's nginx serves it on a free loopback port, and the bundled engine crawls it in a job
directory as a harvest controller does: ``JobDirectory.create`` from a DoOneCrawl message, the engine
started by ``BundledEngine`` and driven by ``CrawlDriver`` through its REST API, the outcome recorded. The
crawl template is templates/default_orderxml.cxml filled as job generation fills it (robots.txt obeyed, no
limits, no deduplication index) with the politeness delays at 0: only post-processing is timed. The crawl
must have a response record for every page, or the run is refused.

Post-processing is ``PostProcessor.finish`` as the controller runs it (CDXJ indexes, deduplication entries,
the QA report, the metadata WARC, the domain report, every file stored in an archive store with checksums),
each time on a fresh copy of the crawled job directory (the copy is not timed), ``--runs`` times each way,
alternating which goes first:

- with the QA step, timing the step inside it;
- without it (the step left out, the metadata WARC written without the report).

Every run must end DONE with no error, its metadata WARC with a QA report record (or without one, when the
step was left out), or the run is refused (exit status 1). Printed: what the job holds (pages, records,
crawl.log lines, WARC bytes), each run's seconds, the medians, and the QA step's seconds, ms per page and
share of post-processing, beside the difference between the two ways; then the machine.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from crawl import (  # noqa: E402
    free_port,
    generate_site,
    host_names,
    nginx_config,
    page_path,
    wait_for_port,
    warc_counts,
)
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

from harvestdef.archive import ArchiveStore  # noqa: E402
from harvestdef.crawltemplate import METADATA_ITEMS  # noqa: E402
from harvestdef.messages import DoOneCrawl, PreHarvestMetadata  # noqa: E402
from harvestdef.model.status import JobStatus  # noqa: E402
from harvester.crawldriver import CrawlDriver, DriverOptions  # noqa: E402
from harvester.engineprocess import BundledEngine  # noqa: E402
from harvester.finish import FinishOptions, JobReport, PostProcessor  # noqa: E402
from harvester.heritrix import HeritrixClient  # noqa: E402
from harvester.jobdir import JobDirectory  # noqa: E402
from harvester.postprocess.qa import QaReport  # noqa: E402
from scheduler.jobgen.building import WarcWriterOptions, fill_placeholders, warc_writer_bean  # noqa: E402

TEMPLATE = ROOT / "templates" / "default_orderxml.cxml"
JOB_ID, HARVEST_ID = 1, 1
PREFIX = f"{JOB_ID}-{HARVEST_ID}"
# No politeness delay: the site is on loopback and the crawl is not what is measured.
NO_DELAY = {"disposition.delayFactor=5.0": "disposition.delayFactor=0",
            "disposition.minDelayMs=1000": "disposition.minDelayMs=0",
            "disposition.maxDelayMs=30000": "disposition.maxDelayMs=0"}
QA_RECORD = "/crawl/reports/qa-report?"


def filled_template() -> str:
    """The default template with every placeholder filled as job generation fills it for this job."""
    text = TEMPLATE.read_text(encoding="utf-8")
    for old, new in NO_DELAY.items():
        if old not in text:
            raise SystemExit(f"{TEMPLATE} has no {old!r}: adapt NO_DELAY in {__file__}")
        text = text.replace(old, new)
    values = {
        "CRAWLERTRAPS_PLACEHOLDER": "", "DEDUPLICATION_ENABLED_PLACEHOLDER": "false",
        "ARCHIVER_BEAN_REFERENCE_PLACEHOLDER": '<ref bean="warcWriter"/>', "ARCHIVE_FILE_PREFIX_PLACEHOLDER": PREFIX,
        METADATA_ITEMS: "", "MAX_TIME_SECONDS_PLACEHOLDER": "0",
        "QUOTA_ENFORCER_GROUP_MAX_FETCH_SUCCES_PLACEHOLDER": "-1", "FRONTIER_QUEUE_TOTAL_BUDGET_PLACEHOLDER": "-1",
        "QUOTA_ENFORCER_MAX_BYTES_PLACEHOLDER": "-1",
        "MAX_HOPS": "50", "HONOR_ROBOTS_DOT_TXT": "obey", "EXTRACT_JAVASCRIPT": "true",
    }
    values["ARCHIVER_PROCESSOR_BEAN_PLACEHOLDER"] = fill_placeholders(warc_writer_bean(WarcWriterOptions()), values,
                                                                      "default_orderxml")
    return fill_placeholders(text, values, "default_orderxml")


def job_message(hosts: list[str], port: int) -> DoOneCrawl:
    return DoOneCrawl(
        job_id=JOB_ID, attempt_id=f"{JOB_ID}-1", harvest_id=HARVEST_ID, harvest_name="qa-bench", harvest_comments="",
        audience="", schedule_name="", channel="FOCUSED", snapshot=False, max_objects_per_domain=-1,
        max_bytes_per_domain=-1, max_running_time=0, template_name="default_orderxml", template=filled_template(),
        seeds=[f"http://{host}:{port}/" for host in hosts],
        domain_configurations={host.removeprefix("www."): "defaultconfig" for host in hosts}, harvest_num=1,
        archive_file_prefix=PREFIX, metadata=PreHarvestMetadata(aliases=[], deduplication_job_ids=None))


def crawl(work: Path, hosts: list[str], port: int) -> tuple[JobDirectory, float]:
    """Crawl the site in a new job directory as a harvest controller does; the directory and the seconds."""
    server_dir = work / "server"
    server_dir.mkdir()
    hosts_file = work / "hosts"
    hosts_file.write_text("".join(f"{host} 127.0.0.1\n" for host in hosts), encoding="utf-8")
    jobdir = JobDirectory.create(server_dir, job_message(hosts, port))
    password = secrets.token_urlsafe(12)
    engine = BundledEngine(server_dir, "admin", password, hosts_file=str(hosts_file))
    started = time.monotonic()
    url = engine.start()
    try:
        client = HeritrixClient(url, "admin", password, ca_file=engine.ca_file, timeout=120)
        driver = CrawlDriver(client, jobdir.name, jobdir.path,
                             DriverOptions(poll_interval=1.0, frontier_report_interval=0),
                             on_status=lambda status: None, shutdown=threading.Event(),
                             engine_alive=engine.is_alive, engine_gone=engine.exit_description)
        result = driver.run()
    finally:
        engine.stop()
    if result.outcome.failed or result.outcome.errors:
        raise SystemExit(f"REFUSED: the crawl failed: {'; '.join(result.outcome.errors)}")
    jobdir.record_outcome(result.outcome)
    return jobdir, time.monotonic() - started


class TimedQa(PostProcessor):
    """Post-processing as the controller runs it, timing the QA step inside it."""

    qa_seconds = 0.0

    def _write_qa_report(self, jobdir: JobDirectory, warcs: list[Path], limited_domains: list[str]) -> QaReport:
        started = time.perf_counter()
        try:
            return PostProcessor._write_qa_report(jobdir, warcs, limited_domains)
        finally:
            self.qa_seconds = time.perf_counter() - started


class WithoutQa(PostProcessor):
    """Post-processing with the QA step left out: the metadata WARC is written without the report."""

    qa_seconds = 0.0

    def _write_qa_report(self, jobdir: JobDirectory, warcs: list[Path], limited_domains: list[str]) -> None:
        return None


def post_process(crawled: JobDirectory, work: Path, label: str, processor_class: type) -> tuple[float, float, Path]:
    """Post-process a fresh copy of the crawled job directory; seconds in all, seconds of the QA step, store."""
    run = work / label
    server_dir = run / "server"
    shutil.copytree(crawled.path, server_dir / crawled.path.name, symlinks=True)
    (run / "archive").mkdir()
    jobdir = JobDirectory.load(server_dir / crawled.path.name)
    processor = processor_class(FinishOptions(oldjobs_dir=run / "oldjobs", organization="bench", collection=None),
                                ArchiveStore(run / "archive"))
    started = time.perf_counter()
    report: JobReport = processor.finish(jobdir, "bench-controller")
    seconds = time.perf_counter() - started
    problems = []
    if report.status != JobStatus.DONE or not report.is_stored:
        problems.append(f"ended {report.status.name}, stored {report.is_stored}")
    if report.message is not None and report.message.harvest_error_details:
        problems.append(f"errors: {report.message.harvest_error_details}")
    has_qa = qa_record_in_store(run / "archive")
    if has_qa != (processor_class is TimedQa):
        problems.append("a QA report record in the metadata WARC" if has_qa else "no QA report record")
    if problems:
        raise SystemExit(f"REFUSED: post-processing run {label}: {'; '.join(problems)}")
    return seconds, processor.qa_seconds, run / "archive"


def qa_record_in_store(archive: Path) -> bool:
    for path in archive.glob("*/*/*metadata*.warc.gz"):
        with open(path, "rb") as stream:
            if any(QA_RECORD in (record.rec_headers.get_header("WARC-Target-URI") or "")
                   for record in ArchiveIterator(stream)):
                return True
    return False


def count_lines(path: Path) -> int:
    with open(path, "rb") as lines:
        return sum(1 for _ in lines)


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000, help="pages of the site (default 1000)")
    parser.add_argument("--hosts", type=int, default=10, help="hosts the pages are spread over (default 10)")
    parser.add_argument("--runs", type=int, default=3, help="post-processing runs each way (default 3)")
    parser.add_argument("--keep", type=Path, default=None, help="work directory to keep (default: a temp dir)")
    args = parser.parse_args()
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        sys.exit("nginx is missing: apt-get install -y nginx-light (scripts/setup.sh does)")
    if args.pages < args.hosts or args.runs < 1:
        sys.exit("--pages must be at least --hosts, and --runs at least 1")
    work = args.keep or Path(tempfile.mkdtemp(prefix="hs-bench-qa-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # mkdtemp makes it 0700; nginx workers run as another user and must read the site
    hosts = host_names(args.hosts)
    pages_per_host = args.pages // args.hosts
    pages = pages_per_host * args.hosts
    load_before = os.getloadavg()
    try:
        port = free_port()
        generate_site(work / "site", hosts, pages_per_host, port)
        nginx_binary = shutil.which("nginx") or "/usr/sbin/nginx"
        nginx = subprocess.Popen([nginx_binary, "-c", str(nginx_config(work, work / "site", port, 0)), "-p", str(work)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_for_port(nginx, port)
            crawled, crawl_seconds = crawl(work, hosts, port)
        finally:
            nginx.terminate()
            nginx.wait(10)
        warcs = crawled.warc_files()
        # the generated pages among the HTML pages captured (status 200, text/html)
        records, html_urls = warc_counts(warcs)
        page_urls = html_urls & {f"http://{host}:{port}{page_path(n)}" for host in hosts for n in range(pages_per_host)}
        log_lines = sum(count_lines(launch.crawl_log) for launch in crawled.launches())
        print(f"site: {pages:,} pages over {args.hosts} hosts (bench/crawl.py's generator), 40 images a host, "
              f"served by nginx on 127.0.0.1:{port}")
        print(f"job: crawled by the bundled engine in {crawl_seconds:.1f} s; {len(page_urls):,} of {pages:,} pages "
              f"captured; {records:,} records (response and revisit); {log_lines:,} crawl.log lines; "
              f"{sum(path.stat().st_size for path in warcs) / 1e6:.1f} MB in {len(warcs)} WARC files", flush=True)
        if len(page_urls) != pages:
            sys.exit(f"REFUSED: the crawl is not complete: {len(page_urls):,} of {pages:,} pages captured")

        with_qa: list[tuple[float, float]] = []
        without_qa: list[float] = []
        for run in range(1, args.runs + 1):
            ways = [("with", TimedQa), ("without", WithoutQa)]
            for way, processor_class in ways if run % 2 else reversed(ways):
                seconds, qa_seconds, archive = post_process(crawled, work, f"run-{run}-{way}-qa", processor_class)
                if way == "with":
                    with_qa.append((seconds, qa_seconds))
                else:
                    without_qa.append(seconds)
                print(f"run {run} {way:>7} the QA step: post-processing {seconds:6.2f} s"
                      + (f", of which the QA step {qa_seconds:5.2f} s" if way == "with" else ""), flush=True)
                if args.keep is None:
                    shutil.rmtree(archive.parent, ignore_errors=True)

        total_with = statistics.median(seconds for seconds, _ in with_qa)
        total_without = statistics.median(without_qa)
        qa = statistics.median(qa_seconds for _, qa_seconds in with_qa)
        share = statistics.median(qa_seconds / seconds for seconds, qa_seconds in with_qa)
        print(f"\nmedians of {args.runs} runs each way, for a job of {pages:,} pages ({records:,} records, "
              f"{log_lines:,} crawl.log lines):")
        print(f"  post-processing with the QA step     {total_with:7.2f} s")
        print(f"  post-processing without the QA step  {total_without:7.2f} s")
        print(f"  the QA step (timed inside)           {qa:7.2f} s = {1000 * qa / pages:.2f} ms per page = "
              f"{share:.0%} of post-processing")
        print(f"  with minus without                   {total_with - total_without:7.2f} s = "
              f"{1000 * (total_with - total_without) / pages:.2f} ms per page")
        print(f"machine: {len(os.sched_getaffinity(0))} CPUs available (nproc), {cpu_model()}; load average "
              f"(1, 5, 15 min) before {', '.join(f'{value:.2f}' for value in load_before)}, after "
              f"{', '.join(f'{value:.2f}' for value in os.getloadavg())}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
