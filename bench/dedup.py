"""Deduplication index benchmark: building the index of a snapshot's jobs, then looking captures up in it.

Writes synthetic entries files (``dedup/<job_id>.gz``, with write_entries) for several jobs into a
temporary archive store: realistic URLs on many hosts and sha1:BASE32 digests; per 50 entries, 40 new
payloads at new URLs, 5 shared payloads (a pool of logos and icons) at new URLs, 3 earlier URLs with a
changed payload, 1 tracking pixel (one payload under ever new URLs) and 1 repeat of an earlier
(digest, URL) pair with a later date. Then:

* the floor, measured in the same run: reading and parsing every entries file (read_entries), nothing
  stored;
* build_index over all jobs, in seconds and entries/s, and its ratio to the floor; the number of pairs
  read back must equal the distinct pairs written;
* lookups/s from one thread, a mix of by-digest and by-URL, hits and misses, every answer checked against
  what was written (the earliest capture).

Usage::

    python bench/dedup.py                                # 10,000,000 entries, 200,000 lookups
    python bench/dedup.py --entries 1000000 --lookups 50000

Targets (2 cores): 10,000,000 entries indexed in <= 120 s; >= 50,000 lookups/s.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvestdef.archive import ArchiveStore  # noqa: E402
from harvestdef.dedup import (  # noqa: E402
    DedupEntry,
    DedupIndex,
    build_index,
    entries_name,
    read_entries,
    write_entries,
)

HARVEST_ID = 7
FIRST_JOB_ID = 101
SECTIONS = ("images", "media/photos", "files/pdf", "wp-content/uploads/2025/03", "static/img", "dokumenter")
EXTENSIONS = (".jpg", ".png", ".pdf", ".gif", ".mp4", ".docx", ".webp")
POOL_SIZE = 997
# random bytes -> base32 letters: each byte's low five bits pick one of the 32 letters
_BASE32 = bytes(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[n % 32] for n in range(256))


class Synthetic:
    """The entries of every job, made in order, with what the lookups need to check their answers."""

    def __init__(self, entries: int, jobs: int, sample_every: int) -> None:
        self.total = entries
        self.jobs = jobs
        self.rng = random.Random(20260101)
        self.sample_every = sample_every
        self.pool = [self.digest() for _ in range(POOL_SIZE)]
        self.pixel = self.digest()
        self.first_url: dict[str, tuple[str, str]] = {}   # shared digest -> (URL, date) of its first capture
        self.samples: list[DedupEntry] = []               # captures whose (digest, URL) pair is unique
        self.repeats: list[DedupEntry] = []               # the original of a pair written twice
        self.recent: list[DedupEntry] = []
        self.repeated_pairs = 0
        self.start = datetime(2025, 6, 1, tzinfo=UTC)

    def digest(self) -> str:
        return "sha1:" + self.rng.randbytes(32).translate(_BASE32).decode("ascii")

    def job_entries(self, job: int) -> Iterator[DedupEntry]:
        per_job = self.total // self.jobs
        first = job * per_job
        last = self.total if job == self.jobs - 1 else first + per_job
        warc = f"{HARVEST_ID}-{FIRST_JOB_ID + job}-20250601120000-{{:05d}}-sb-prod-har-00{job % 4}.kb.dk.warc.gz"
        second, date = -1, ""
        for number in range(first, last):
            kind = number % 50
            if number // 4 != second:  # four captures a second
                second = number // 4
                date = (self.start + timedelta(seconds=second)).strftime("%Y%m%d%H%M%S")
            host = f"www.{'kulturarv' if number % 3 else 'bibliotek'}{number % 20011:05d}.dk"
            url = (f"https://{host}/{SECTIONS[number % len(SECTIONS)]}/{number:09d}-"
                   f"{number % 7919}{EXTENSIONS[number % len(EXTENSIONS)]}")
            digest = self.digest()
            if 40 <= kind < 45:
                digest = self.pool[number % POOL_SIZE]
            elif 45 <= kind < 48:
                url = self.recent[-(kind - 44) * 10].url       # an earlier URL, its payload changed
            elif kind == 48:
                digest, url = self.pixel, f"https://{host}/pixel.gif?visit={number}"
            elif kind == 49:
                original = self.recent[-49]                    # kind 0 of this round: a unique pair
                digest, url = original.digest, original.url
                self.repeated_pairs += 1
                if len(self.repeats) < 5_000:
                    self.repeats.append(original)
            uuid = f"{self.rng.getrandbits(128):032x}"
            record_id = f"<urn:uuid:{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:]}>"
            entry = DedupEntry(digest, url, date, record_id,
                               warc.format(number // 20_000), (number % 20_000) * 48_000)
            if kind == 0:
                self.recent = [entry]
                if number % self.sample_every == 0:
                    self.samples.append(entry)
            else:
                self.recent.append(entry)
            if (40 <= kind < 45 or kind == 48) and digest not in self.first_url:
                self.first_url[digest] = (url, date)
            yield entry


def peak_rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak_rss() -> None:
    """Start VmHWM afresh (Linux: writing 5 to clear_refs), so the figure is the build's own."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")


def lookups(synthetic: Synthetic, count: int) -> list[tuple[str, str | None, tuple[str, str] | None]]:
    """(digest, url or None, expected (url, date) or None), a fixed mix of the kinds of question."""
    rng = random.Random(5)
    shared = [digest for digest in synthetic.pool if digest in synthetic.first_url]
    questions = []
    for number in range(count):
        kind = number % 8
        sample = rng.choice(synthetic.samples)
        if kind == 0:    # by digest, a payload captured once
            questions.append((sample.digest, None, (sample.url, sample.date)))
        elif kind == 1:  # by URL, hit
            questions.append((sample.digest, sample.url, (sample.url, sample.date)))
        elif kind == 2:  # by digest, a payload never seen
            questions.append((synthetic.digest(), None, None))
        elif kind == 3:  # by URL, the payload seen but under another URL
            questions.append((sample.digest, sample.url + "?other", None))
        elif kind == 4:  # by URL, a payload never seen
            questions.append((synthetic.digest(), sample.url, None))
        elif kind == 5:  # by digest, a shared payload: its first capture
            digest = rng.choice(shared)
            questions.append((digest, None, synthetic.first_url[digest]))
        elif kind == 6:  # by URL, a pair written twice: the earlier capture
            original = rng.choice(synthetic.repeats)
            questions.append((original.digest, original.url, (original.url, original.date)))
        else:            # by digest, the tracking pixel under every URL
            questions.append((synthetic.pixel, None, synthetic.first_url[synthetic.pixel]))
    return questions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000_000)
    parser.add_argument("--lookups", type=int, default=200_000)
    parser.add_argument("--jobs", type=int, default=16, help="jobs the entries are spread over")
    args = parser.parse_args()
    if args.entries < 50 * args.jobs:
        parser.error("--entries must be at least 50 per job")

    # The figures are wall times: on a shared machine, other work shows in them.
    print("load average at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    with tempfile.TemporaryDirectory(prefix="hs-bench-dedup-") as root:
        store = ArchiveStore(root)
        synthetic = Synthetic(args.entries, args.jobs, sample_every=max(50, args.entries // 20_000 // 50 * 50))
        started = time.monotonic()
        jobs = []
        for job in range(args.jobs):
            job_id = FIRST_JOB_ID + job
            path = store.job_path(HARVEST_ID, job_id) / entries_name(job_id)
            path.parent.mkdir(parents=True)
            write_entries(path, synthetic.job_entries(job))
            jobs.append((HARVEST_ID, job_id))
        jobs.append((HARVEST_ID, FIRST_JOB_ID + args.jobs))  # a job without entries: left out
        distinct = args.entries - synthetic.repeated_pairs
        print(f"wrote {args.entries:,} entries ({distinct:,} distinct (digest, URL) pairs) for {args.jobs} jobs "
              f"in {time.monotonic() - started:.1f} s", flush=True)

        started = time.monotonic()
        parsed = sum(1 for job_id in range(FIRST_JOB_ID, FIRST_JOB_ID + args.jobs)
                     for _ in read_entries(store.job_path(HARVEST_ID, job_id) / entries_name(job_id)))
        floor = time.monotonic() - started
        if parsed != args.entries:
            print(f"FAILED: read {parsed:,} entries back, {args.entries:,} written", file=sys.stderr)
            return 1
        print(f"floor (read and parse every entries file): {floor:.1f} s, {args.entries / floor:,.0f} entries/s",
              flush=True)

        reset_peak_rss()
        started = time.monotonic()
        built = build_index(store, jobs)
        seconds = time.monotonic() - started
        build_rss = peak_rss_mib()
        worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if built.entries != distinct or built.missing_job_ids != (FIRST_JOB_ID + args.jobs,):
            print(f"FAILED: the index holds {built.entries:,} pairs, {distinct:,} written; "
                  f"missing {built.missing_job_ids}", file=sys.stderr)
            return 1
        size_mib = built.path.stat().st_size / 2**20
        print(f"build_index: {args.entries:,} entries in {seconds:.1f} s, {args.entries / seconds:,.0f} entries/s, "
              f"{seconds / floor:.2f}x the floor; index {size_mib:,.0f} MiB; peak RSS {build_rss:,.0f} MiB "
              f"(largest worker process {worker_rss:,.0f} MiB)", flush=True)
        started = time.monotonic()
        again = build_index(store, jobs)
        print(f"build_index again (reused={again.reused}): {time.monotonic() - started:.3f} s", flush=True)

        questions = lookups(synthetic, args.lookups)
        with DedupIndex(built.path) as index:
            started = time.monotonic()
            answers = [index.lookup(digest, url) for digest, url, _ in questions]
            seconds = time.monotonic() - started
        wrong = sum(1 for (_, _, expected), answer in zip(questions, answers, strict=True)
                    if (None if answer is None else (answer.url, answer.date)) != expected)
        hits = sum(answer is not None for answer in answers)
        print(f"lookups: {args.lookups:,} ({hits:,} hits) in {seconds:.2f} s, {args.lookups / seconds:,.0f} "
              f"lookups/s, {wrong} wrong; peak RSS {peak_rss_mib():,.0f} MiB", flush=True)
    print("load average at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
