"""crawl.log benchmark: the per-domain report over a 10-million-line crawl.log.

A crawl.log in Heritrix 3's 12 columns is generated in a temporary directory: 5,000 job domains with one
seed each (source-tagged, so every line is attributed through its seed), DNS lookups, pages and images
with ``content-size:`` annotations, duplicates, 404s, quota blocks, a few lines on domains outside the
job and a few invalid lines. Then, each in a fresh child process so peak memory is its own:

* the floor: ``for line in file: line.split()`` over the same file, the least any parser must do;
* the domain report: ``build_domain_report`` over the file, checked against the counts made while the
  file was generated.

It prints lines/s for both, the ratio report/floor (which carries over to other machines better than the
absolute figures), and the peak RSS (resource.getrusage) of each child: it must stay flat as the log
grows, since the report streams the log and keeps one entry per domain.

Usage::

    python bench/crawllog.py                    # 10,000,000 lines
    python bench/crawllog.py --lines 1000000 --domains 20000
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvestdef.model.status import StopReason  # noqa: E402
from harvester.postprocess.domainreport import build_domain_report  # noqa: E402

DIGEST = "sha1:QRI6RVZXWNEZI7UVZYBN7YSNL2IOF5II"


def domain_name(number: int) -> str:
    return f"domæne{number}.dk" if number % 50 == 0 else f"domain{number}.dk"


def host_name(number: int) -> str:
    name = domain_name(number)
    return "www." + (name.encode("idna").decode("ascii") if not name.isascii() else name)


def generate(path: Path, lines: int, domains: int, seed: int = 1) -> dict[str, list[int]]:
    """Write the log; returns the expected [objects, bytes, duplicate objects] per job domain."""
    generator = random.Random(seed)
    expected = {domain_name(number): [0, 0, 0] for number in range(domains)}
    quota_every = 997
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as out:
        for number in range(lines):
            domain = generator.randrange(domains)
            host = host_name(domain)
            seed_url = f"http://{host}/"
            kind = generator.random()
            if number % 100_003 == 0:
                out.write(f"2026-01-01T10:00:00.000Z 200 {number} http://{host}/cut\n")  # invalid: 4 columns
                continue
            if kind < 0.02:
                url, status, mime, size = f"dns:{host}", 1, "text/dns", 53
            elif kind < 0.04:
                url, status, mime, size = f"http://{host}/missing/{number}", 404, "text/html", 120
            elif number % quota_every == 0:
                out.write(f"2026-01-01T10:00:00.000Z -5003          - http://{host}/q/{number} LL {seed_url} unknown"
                          f" #001 - - {seed_url} Q:groupMaxFetchSuccesses\n")
                continue
            elif kind < 0.05:
                other = f"http://cdn.example{number % 997}.com/x.js"
                out.write(f"2026-01-01T10:00:00.000Z   200        900 {other} E {seed_url} application/javascript"
                          f" #002 20260101100000000+5 {DIGEST} - content-size:900\n")
                continue
            elif kind < 0.55:
                url, status, mime, size = f"http://{host}/page/{number}", 200, "text/html", generator.randrange(
                    500, 60_000)
            else:
                url, status, mime, size = f"http://{host}/img/{number}.png", 200, "image/png", generator.randrange(
                    100, 200_000)
            duplicate = mime == "image/png" and kind > 0.9
            annotations = ("duplicate:digest," if duplicate else "") + f"content-size:{size}"
            out.write(f"2026-01-01T10:00:00.000Z {status:>5} {size:>10} {url} LLE {seed_url} {mime} #{number % 50:03d}"
                      f" 20260101100000000+{number % 900} {DIGEST} {seed_url} {annotations}\n")
            totals = expected[domain_name(domain)]
            totals[0] += 1
            totals[1] += size
            totals[2] += duplicate
    return expected


def _floor(path: str, queue: multiprocessing.Queue) -> None:
    started = time.perf_counter()
    count = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line.split()
            count += 1
    queue.put((count, time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))


def _report(path: str, domains: int, queue: multiprocessing.Queue) -> None:
    configurations = {domain_name(number): "defaultconfig" for number in range(domains)}
    started = time.perf_counter()
    result = build_domain_report(Path(path), None, configurations)
    elapsed = time.perf_counter() - started
    figures = {stats.domain: [stats.objects, stats.bytes, stats.duplicate_objects] for stats in result.report.domains}
    reasons = {stats.stop_reason for stats in result.report.domains}
    queue.put((result.lines_read, elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, figures,
               result.invalid_lines, result.domains_outside_job, reasons))


def in_child(target, *args) -> tuple:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    answer = queue.get()
    process.join()
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--domains", type=int, default=5_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawllog-bench-") as directory:
        path = Path(directory) / "crawl.log"
        started = time.perf_counter()
        expected = generate(path, args.lines, args.domains)
        print(f"generated {args.lines:,} lines ({path.stat().st_size / 2**20:,.0f} MiB) in "
              f"{time.perf_counter() - started:.1f} s")
        in_child(_floor, str(path))  # warms the page cache, so both runs below read from memory
        floor_lines, floor_seconds, floor_rss = in_child(_floor, str(path))
        lines, seconds, rss, figures, invalid, outside, reasons = in_child(_report, str(path), args.domains)
        if figures != expected:
            wrong = [domain for domain in expected if figures.get(domain) != expected[domain]]
            raise SystemExit(f"domain report disagrees with the generated counts for {len(wrong)} domains, "
                             f"e.g. {wrong[:3]}")
        assert lines == floor_lines == args.lines, (lines, floor_lines)
        assert StopReason.OBJECT_LIMIT in reasons and invalid > 0 and outside > 0
        print(f"floor (line.split()):  {floor_lines / floor_seconds:>12,.0f} lines/s  {floor_seconds:6.1f} s  "
              f"peak RSS {floor_rss / 1024:6.1f} MiB")
        print(f"domain report:         {lines / seconds:>12,.0f} lines/s  {seconds:6.1f} s  "
              f"peak RSS {rss / 1024:6.1f} MiB  ({invalid} invalid lines, {outside} domains outside the job)")
        print(f"ratio report/floor: {seconds / floor_seconds:.2f}x the floor's time")


if __name__ == "__main__":
    main()
