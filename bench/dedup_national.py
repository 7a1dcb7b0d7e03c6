"""Deduplication at national size: a history of snapshot steps kept per domain, and each job's own index.

A synthetic history of snapshot harvests is written into an archive store under a temporary directory
(``--root``, default the system's temporary directory): each step is one harvest of ``--jobs-per-step``
jobs that together take every one of ``--domains`` registered domains (``site0001234.dk``, with hosts
``www.``, ``cdn.`` and the bare name); each job's entries go to ``dedup/<job_id>.gz`` and its directory
``dedup/<job_id>.domains``, written with harvestdef.dedup.partitions.write_partitioned_sorted from
entries made already in domain order. The model of the captures:

* each domain has ``--captures-per-domain`` captures a step; a payload changes at a step with a chance
  of 1 in 10 (a new digest, one change in four under a new URL), so most of a step's entries are the
  originals its revisits name, with the date, record and WARC file of the step that first captured them;
* a third of the domains carry one payload of a shared pool (1,000 logos and pixels), so the same payload
  is captured under many domains and each job's shared partition holds the pool;
* job splitting is not stable: at each step a twentieth of each job's domains (another twentieth at each
  step) are in another job of its group of jobs (a tenth of a step's jobs form a group).

Then, all in one run, each figure beside its floor measured in the same run:

* history 1: after the first group of step 1 (a tenth of a step), the indexes of that group's jobs of
  step 2; history 2: after step 1 whole, the indexes of every job of step 2; history 3: after the last
  step, the indexes of every job of the step after it. Each index is built in one of 2 worker processes
  (``--workers``) with build_job_index, from the sources a scheduler would give (every earlier job that
  harvested one of its domains, newest first). The comparison is fair because every job's own work is the
  same at the three histories (the same number of domains and captures, from the newest step) while the
  history grows a hundredfold: the time a job takes should stay the same. The step's figure is the wall
  time until its last index is built; each index is checked (below) after that;
* per job: the index time, its size against the uncompressed entry text of its own domains and against the
  compressed member bytes read; for ``--floor-jobs`` of them, the floor: reading the directories and the
  members the job needs (the same range reads and decompression, nothing written) plus writing an index
  of the same captures from a list already in memory (DedupIndexWriter.add_fields); the build's ratio;
* lookups from one thread on one job's index, in a process of their own: by URL and by digest, hits and
  misses, every answer checked against the model (the earliest capture);
* peak RSS (ru_maxrss) of the parent, of the builder processes and of the lookup process.

Every run is checked complete: each written directory is read back (domains and entries counted), and the
pairs of each index (read back from it) must equal the distinct pairs expected from the model: its
domains' captures and the pairs the shared partitions of its sources add.

Usage::

    python bench/dedup_national.py --scale small      # 40,000 domains, 3 steps of 20 jobs: under a minute
    python bench/dedup_national.py --scale national   # 2,000,000 domains, 10 steps of 200 jobs of 10,000
                                                      # domains, 5 captures each: 100,000,000 captures
    nohup .venv/bin/python bench/dedup_national.py --scale national --root /work/tmp > /tmp/national.log 2>&1 &

Options override the scale's figures (``--domains``, ``--steps``, ``--jobs-per-step``,
``--captures-per-domain``, ``--lookups``, ``--floor-jobs``); ``--keep`` keeps the store and prints where,
``--history-only`` writes the history and stops.

Targets (2 cores, the store on local disk): a 10,000-domain job's index in <= 10 s and <= 2x the entry
text of its domains; all 200 indexes of a step in <= 120 s, their cost the same whatever the history;
>= 100,000 lookups/s from one thread; peak RSS of the builder and of the lookup process <= 1 GiB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvestdef.archive import ArchiveStore  # noqa: E402
from harvestdef.dedup import DedupIndex, DedupIndexWriter  # noqa: E402
from harvestdef.dedup.entries import EntryFields, parse_entry_line  # noqa: E402
from harvestdef.dedup.jobindex import build_job_index  # noqa: E402
from harvestdef.dedup.partitions import (  # noqa: E402
    SHARED,
    directory_name,
    parse_directory,
    write_partitioned_sorted,
)

SCALES = {
    "small": {"domains": 40_000, "steps": 3, "jobs_per_step": 20, "captures_per_domain": 5, "lookups": 100_000,
              "floor_jobs": 4},
    "national": {"domains": 2_000_000, "steps": 10, "jobs_per_step": 200, "captures_per_domain": 5,
                 "lookups": 1_000_000, "floor_jobs": 10},
}
GROUPS = 10                     # a step's jobs fall into this many groups; domains move within a group
MOVED = 20                      # 1 in MOVED of a job's domains is in another job of its group at each step
CHANGE_PERCENT = 10             # a payload changes at a step with this chance
POOL = 1_000                    # shared payloads: logos and pixels
STEP_SECONDS = 91 * 86_400      # a snapshot step every quarter
EPOCH = 1_451_606_400           # 2016-01-01 UTC
SECTIONS = ("images", "media/photos", "files/pdf", "wp-content/uploads", "static/img", "dokumenter")
EXTENSIONS = (".jpg", ".png", ".pdf", ".gif", ".mp4", ".html", ".webp")
_MASK = (1 << 64) - 1
# a byte -> one of the 32 base32 letters, by its low five bits
_BASE32 = bytes(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[n % 32] for n in range(256))


@dataclass(frozen=True)
class Model:
    """The synthetic history: which job holds which domain at each step, and each domain's captures."""
    domains: int
    steps: int
    jobs_per_step: int
    captures_per_domain: int

    @property
    def per_job(self) -> int:
        return self.domains // self.jobs_per_step

    @property
    def group(self) -> int:
        return self.jobs_per_step // GROUPS

    def job_id(self, step: int, job: int) -> int:
        return step * 1_000_000 + job

    def _window(self, step: int) -> tuple[int, int]:
        """The positions (within a job's base range) of the domains that are elsewhere at ``step``."""
        width = self.per_job // MOVED
        start = (step * 7 % MOVED) * width
        return start, start + width

    def _rotation(self, step: int) -> int:
        return 1 + step % (self.group - 1)

    def job_of(self, domain: int, step: int) -> int:
        base = domain // self.per_job
        start, end = self._window(step)
        if not start <= domain % self.per_job < end:
            return base
        first = base - base % self.group
        return first + (base - first + self._rotation(step)) % self.group

    def domains_of(self, step: int, job: int) -> list[int]:
        """The job's domains at ``step``, in domain order (the names sort as the numbers)."""
        start, end = self._window(step)
        first = job - job % self.group
        giver = first + (job - first - self._rotation(step)) % self.group
        kept = [domain for domain in range(job * self.per_job, (job + 1) * self.per_job)
                if not start <= domain % self.per_job < end]
        moved = range(giver * self.per_job + start, giver * self.per_job + end)
        return sorted(kept + list(moved))

    def sources(self, step: int, domains: list[int]) -> list[tuple[int, int]]:
        """(harvest_id, job_id) of every job before ``step`` that harvested one of ``domains``, newest first."""
        found = []
        for earlier in range(step - 1, 0, -1):
            jobs = sorted({self.job_of(domain, earlier) for domain in domains})
            found.extend((earlier, self.job_id(earlier, job)) for job in jobs)
        return found


def _mix(*key: int) -> int:
    # A tuple of ints hashes the same in every process (only str and bytes hashes are salted).
    return ((hash(key) & _MASK) * 0x9E3779B97F4A7C15 & _MASK) >> 16


def _digest(text: str) -> str:
    # 32 base32 letters from a hash of ``text`` in one call each (base64.b32encode is Python, and slow)
    return "sha1:" + hashlib.shake_128(text.encode()).digest(32).translate(_BASE32).decode("ascii")


_POOL_DIGESTS = [_digest(f"pool {number}") for number in range(POOL)]


def domain_name(domain: int) -> str:
    return f"site{domain:07d}.dk"


def _date(step: int, domain: int, slot: int) -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(EPOCH + (step - 1) * STEP_SECONDS
                                                     + _mix(domain, slot, step, 3) % (STEP_SECONDS // 2)))


def _version(domain: int, slot: int, step: int) -> int:
    """The step that first captured the payload the slot holds at ``step``."""
    for earlier in range(step, 1, -1):
        if _mix(domain, slot, earlier) % 100 < CHANGE_PERCENT:
            return earlier
    return 1


def domain_entries(model: Model, domain: int, step: int) -> list[EntryFields]:
    """The domain's entries in the job that holds it at ``step``, in order of (digest, URL, date)."""
    name = domain_name(domain)
    items = []
    for slot in range(model.captures_per_domain):
        if slot == 0 and domain % 3 == 0:
            pooled = _mix(domain, 1) % POOL
            digest, version = _POOL_DIGESTS[pooled], 1
            url = f"https://{name}/pixel.gif" if pooled < 50 else f"https://cdn.{name}/static/logo.png"
        else:
            version = _version(domain, slot, step)
            digest = _digest(f"{domain}/{slot}/{version}")
            host = ("www.", "cdn.", "")[slot % 3] + name
            mixed = _mix(domain, slot)
            url = (f"https://{host}/{SECTIONS[mixed % len(SECTIONS)]}/{domain:07d}-{slot}"
                   f"{EXTENSIONS[mixed % len(EXTENSIONS)]}")
            if version > 1 and _mix(domain, slot, version, 5) % 4 == 0:
                url += f"?v={version}"
        date = _date(version, domain, slot)
        uuid = hashlib.md5(f"{domain}/{slot}/{version}".encode()).hexdigest()
        job = model.job_of(domain, version)
        warc = f"{version}-{model.job_id(version, job)}-{date}-{domain % 97:05d}-sb-prod-har-00{job % 4}.kb.dk.warc.gz"
        items.append((digest, url, date, f"<urn:uuid:{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:]}>",
                      warc, _mix(domain, slot, version, 9) % 1_000_000_000))
    items.sort()
    return items


def job_partitions(model: Model, step: int, domains: list[int],
                   shared: dict[str, list] | None = None) -> Iterator[tuple[str, list[EntryFields]]]:
    """(domain, its entries) of a job at ``step``; ``shared`` gathers the model's view of its shared
    partition: each pool payload -> [domains it is under, (date, URL, domain) of its earliest capture]."""
    for domain in domains:
        items = domain_entries(model, domain, step)
        if shared is not None:
            for digest, url, date, *_ in items:
                if digest in _POOL_DIGESTS_SET:
                    seen = shared.setdefault(digest, [0, (date, url, domain)])
                    seen[0] += 1
                    seen[1] = min(seen[1], (date, url, domain))
        yield domain_name(domain), items


_POOL_DIGESTS_SET = frozenset(_POOL_DIGESTS)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- in worker processes -------------------------------------------------------------------------------

def write_job(task: tuple[Model, str, int, int]) -> dict:
    """Write one job's partitions into the store, read its directory back, and note the model's shared
    partition for the checks."""
    model, root, step, job = task
    started = time.monotonic()
    store = ArchiveStore(Path(root) / "store")
    job_id = model.job_id(step, job)
    domains = model.domains_of(step, job)
    directory = store.job_path(step, job_id) / "dedup"
    directory.mkdir(parents=True, exist_ok=True)
    pooled: dict[str, list] = {}
    summary = write_partitioned_sorted(job_partitions(model, step, domains, pooled), directory / f"{job_id}.gz",
                                       directory / f"{job_id}.domains", [domain_name(d) for d in domains])
    seconds = time.monotonic() - started
    written = parse_directory((directory / f"{job_id}.domains").read_text(encoding="utf-8"), job_id)
    counted = sum(segment.count for name, segment in written.segments.items() if name != SHARED)
    # a pool payload's domains: each domain holds it at one URL at most
    shared = {digest: seen[1] for digest, seen in pooled.items() if seen[0] > 1}
    model_file = Path(root) / "model" / f"{job_id}.json"
    model_file.write_text(json.dumps(shared), encoding="utf-8")
    return {"job_id": job_id, "entries": summary.entries, "entries_read_back": counted,
            "domains_read_back": len(written.own_domains()), "shared": summary.shared, "shared_model": len(shared),
            "text_bytes": summary.text_bytes, "bytes": (directory / f"{job_id}.gz").stat().st_size,
            "seconds": seconds, "rss_mib": peak_rss_mib()}


def _read_needed(store: ArchiveStore, sources: list[tuple[int, int]], wanted: set[str]
                 ) -> tuple[list[str], int, int, int]:
    """The floor's reading: the directories of the sources until every domain is found, one range read
    and decompression per member holding wanted domains; -> (lines of the wanted domains and the shared
    partitions, text bytes of the wanted domains' lines, compressed bytes of their members, bytes read)."""
    pending = set(wanted)
    lines: list[str] = []
    own_text = member_bytes = read = 0
    for harvest_id, job_id in sources:
        if not pending:
            break
        raw = store.read_bytes(harvest_id, job_id, directory_name(job_id))
        read += len(raw)
        directory = parse_directory(raw.decode("utf-8"), job_id)
        segments = {domain: directory.segments[domain] for domain in pending if domain in directory.segments}
        if not segments:
            continue
        pending -= set(segments)
        segments[SHARED] = directory.segments[SHARED]
        by_member: dict[tuple[int, int], list[tuple[str, int, int]]] = {}
        for domain, segment in segments.items():
            by_member.setdefault((segment.offset, segment.length), []).append((domain, segment.skip, segment.count))
        for (offset, length), parts in sorted(by_member.items()):
            member = store.read_range(harvest_id, job_id, f"dedup/{directory.data_name}", offset, length)
            read += len(member)
            text = zlib.decompress(member, wbits=31).decode("utf-8").split("\n")
            if any(domain != SHARED for domain, _, _ in parts):
                member_bytes += length
            for domain, skip, count in parts:
                part = text[skip:skip + count]
                if domain != SHARED:
                    own_text += sum(map(len, part)) + len(part)
                lines.extend(part)
    return lines, own_text, member_bytes, read


def _expected_pairs(model: Model, root: str, step: int, domains: list[int],
                    sources: list[tuple[int, int]]) -> int:
    """The model's distinct pairs of a job's index: its domains' captures at the step before, and the pairs
    of other domains that the shared partitions of the sources used (those of that step) add."""
    own = set(domains)
    extra = 0
    for harvest_id, job_id in sources:
        if harvest_id != step - 1:
            break
        shared = json.loads((Path(root) / "model" / f"{job_id}.json").read_text(encoding="utf-8"))
        extra += sum(1 for _, _, domain in shared.values() if domain not in own)
    return len(domains) * model.captures_per_domain + extra


def build_job(task: tuple[Model, str, int, int]) -> dict:
    """Build one job's index as a controller would, from the sources the scheduler would give."""
    model, root, step, job = task
    store = ArchiveStore(Path(root) / "store")
    domains = model.domains_of(step, job)
    sources = model.sources(step, domains)
    path = Path(root) / "indexes" / f"{model.job_id(step, job)}.sqlite"
    started = time.monotonic()
    built = build_job_index(store, sources, [domain_name(domain) for domain in domains], path)
    seconds = time.monotonic() - started
    return {"job": job, "seconds": seconds, "domains_found": built.domains_found, "domains": built.domains,
            "sources_given": len(sources), "sources_used": len(built.source_job_ids), "bytes_read": built.bytes_read,
            "rss_mib": peak_rss_mib()}


def check_job(task: tuple[Model, str, int, int, bool]) -> dict:
    """One built index checked against the model, after every index of the step is ready (not timed)."""
    model, root, step, job, keep = task
    store = ArchiveStore(Path(root) / "store")
    domains = model.domains_of(step, job)
    sources = model.sources(step, domains)
    path = Path(root) / "indexes" / f"{model.job_id(step, job)}.sqlite"
    with DedupIndex(path) as index:
        pairs = len(index)
    _, own_text, member_bytes, _ = _read_needed(store, sources, {domain_name(domain) for domain in domains})
    result = {"job": job, "pairs": pairs, "expected": _expected_pairs(model, root, step, domains, sources),
              "index_bytes": path.stat().st_size, "own_text": own_text, "member_bytes": member_bytes}
    if not keep:
        path.unlink()
    return result


def floor_job(task: tuple[Model, str, int, int]) -> dict:
    """The floor of one job's index beside its build, measured one after the other in this process."""
    model, root, step, job = task
    store = ArchiveStore(Path(root) / "store")
    domains = model.domains_of(step, job)
    sources = model.sources(step, domains)
    names = {domain_name(domain) for domain in domains}
    started = time.monotonic()
    lines, _, _, _ = _read_needed(store, sources, names)
    read_seconds = time.monotonic() - started
    fields = [parse_entry_line(line + "\n", "floor", number) for number, line in enumerate(lines, start=1)]
    path = Path(root) / "indexes" / f"floor-{job}.sqlite"
    started = time.monotonic()
    with DedupIndexWriter(path) as writer:
        writer.add_fields(fields)
    write_seconds = time.monotonic() - started
    path.unlink()
    started = time.monotonic()
    build_job_index(store, sources, sorted(names), path)
    build_seconds = time.monotonic() - started
    path.unlink()
    return {"job": job, "read": read_seconds, "write": write_seconds, "build": build_seconds,
            "rss_mib": peak_rss_mib()}


def lookup_job(task: tuple[Model, str, int, int, int]) -> dict:
    """Lookups from one thread on one job's index, every answer checked against the model."""
    model, root, step, job, count = task
    domains = model.domains_of(step, job)
    sources = model.sources(step, domains)
    own: list[EntryFields] = [item for domain in domains for item in domain_entries(model, domain, step - 1)]
    earliest: dict[str, tuple[str, str]] = {}
    for digest, url, date, *_ in own:
        if digest in _POOL_DIGESTS_SET and (digest not in earliest or (date, url) < earliest[digest]):
            earliest[digest] = (date, url)
    for harvest_id, job_id in sources:
        if harvest_id != step - 1:
            break
        shared = json.loads((Path(root) / "model" / f"{job_id}.json").read_text(encoding="utf-8"))
        for digest, (date, url, _) in shared.items():
            if digest not in earliest or (date, url) < earliest[digest]:
                earliest[digest] = (date, url)
    unique = [item for item in own if item[0] not in _POOL_DIGESTS_SET]
    pooled = [item for item in own if item[0] in _POOL_DIGESTS_SET]
    rng = random.Random(5)
    mine = set(domains)
    questions: list[tuple[str, str | None, tuple[str, str] | None]] = []
    for number in range(count):
        kind = number % 8
        item = rng.choice(unique)
        if kind == 0:    # by digest, a payload captured once
            questions.append((item[0], None, (item[1], item[2])))
        elif kind == 1:  # by URL, hit
            questions.append((item[0], item[1], (item[1], item[2])))
        elif kind == 2:  # by digest, a payload never seen
            questions.append((_digest(f"never {number}"), None, None))
        elif kind == 3:  # by URL, the payload seen but under another URL
            questions.append((item[0], item[1] + "?other", None))
        elif kind == 4:  # by URL, a payload never seen at a URL seen
            questions.append((_digest(f"changed {number}"), item[1], None))
        elif kind == 5:  # by digest, a shared payload: its earliest capture under any domain
            digest = rng.choice(sorted(earliest))
            date, url = earliest[digest]
            questions.append((digest, None, (url, date)))
        elif kind == 6:  # by URL, a shared payload under this domain
            shared_item = rng.choice(pooled)
            questions.append((shared_item[0], shared_item[1], (shared_item[1], shared_item[2])))
        else:            # by URL, a capture of a domain of another job (never a shared payload)
            other = rng.randrange(model.domains)
            while other in mine:
                other = rng.randrange(model.domains)
            found = [item for item in domain_entries(model, other, step - 1) if item[0] not in _POOL_DIGESTS_SET]
            questions.append((found[0][0], found[0][1], None))
    path = Path(root) / "indexes" / f"{model.job_id(step, job)}.sqlite"
    with DedupIndex(path) as index:
        lookup = index.lookup
        started = time.monotonic()
        answers = [lookup(digest, url) for digest, url, _ in questions]
        seconds = time.monotonic() - started
    wrong = sum(1 for (_, _, expected), answer in zip(questions, answers, strict=True)
                if (None if answer is None else (answer.url, answer.date)) != expected)
    hits = sum(answer is not None for answer in answers)
    return {"lookups": count, "hits": hits, "wrong": wrong, "seconds": seconds, "rss_mib": peak_rss_mib()}


def _ready(_: int) -> float:
    time.sleep(0.2)  # both workers of the pool take one, so both have started before anything is timed
    return peak_rss_mib()


def _quantiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], ordered[-1]


def disk_bytes(path: Path) -> int:
    return sum(os.lstat(os.path.join(folder, name)).st_blocks * 512
               for folder, _, names in os.walk(path) for name in names)


class Failed(Exception):
    pass


def write_history(pool: multiprocessing.pool.Pool, model: Model, root: str, tasks: list[tuple[int, int]]) -> dict:
    """Write the jobs ``tasks`` ((step, job)) with the pool, checking each as it is read back."""
    expected_entries = model.per_job * model.captures_per_domain
    totals = {"jobs": 0, "entries": 0, "text_bytes": 0, "bytes": 0, "rss_mib": 0.0}
    for result in pool.imap_unordered(write_job, [(model, root, step, job) for step, job in tasks], chunksize=2):
        if not (result["entries"] == result["entries_read_back"] == expected_entries
                and result["domains_read_back"] == model.per_job and result["shared"] == result["shared_model"]):
            raise Failed(f"job {result['job_id']} written incompletely: {result}")
        totals["jobs"] += 1
        for key in ("entries", "text_bytes", "bytes"):
            totals[key] += result[key]
        totals["rss_mib"] = max(totals["rss_mib"], result["rss_mib"])
    return totals


def build_step(context: multiprocessing.context.BaseContext, model: Model, root: str, step: int, jobs: list[int],
               workers: int, keep_job: int | None) -> tuple[float, list[dict]]:
    """Build the indexes of ``jobs`` of ``step`` in ``workers`` fresh processes, then check each; -> (the wall
    seconds until the last index was built, results). The checks read every index and its members again, so
    they come after the clock stops: the figure is the time until every index of the step is ready."""
    with context.Pool(workers) as pool:
        pool.map(_ready, range(workers), chunksize=1)
        started = time.monotonic()
        built = list(pool.imap_unordered(build_job, [(model, root, step, job) for job in jobs]))
        wall = time.monotonic() - started
        checked = {result["job"]: result for result in pool.imap_unordered(
            check_job, [(model, root, step, job, job == keep_job) for job in jobs])}
    results = [{**result, **checked[result["job"]]} for result in built]
    for result in results:
        if result["pairs"] != result["expected"] or not result["domains_found"] == result["domains"] == model.per_job:
            raise Failed(f"the index of job {result['job']} of step {step} is incomplete: {result}")
    return wall, results


def report_step(label: str, history: int, step: int, wall: float, results: list[dict], floors: list[dict]) -> dict:
    seconds = _quantiles([result["seconds"] for result in results])
    to_text = _quantiles([result["index_bytes"] / result["own_text"] for result in results])
    to_members = _quantiles([result["index_bytes"] / result["member_bytes"] for result in results])
    index_mib = _quantiles([result["index_bytes"] / 2**20 for result in results])
    pairs = sum(result["pairs"] for result in results)
    print(f"{label}: history {history:,} captures; {len(results)} indexes of step {step} ({pairs:,} pairs, each "
          f"equal to the pairs expected) in {wall:.1f} s wall, {wall / len(results):.2f} s a job, "
          f"{pairs / wall:,.0f} pairs/s", flush=True)
    print(f"  per job: {seconds[0]:.2f} s median, {seconds[1]:.2f} s p95, {seconds[2]:.2f} s max; index "
          f"{index_mib[0]:.1f} MiB median ({index_mib[2]:.1f} max) = {to_text[0]:.2f}x median ({to_text[1]:.2f} "
          f"p95, {to_text[2]:.2f} max) the entry text of its domains, {to_members[0]:.2f}x median "
          f"({to_members[2]:.2f} max) the compressed members holding them; sources given "
          f"{max(r['sources_given'] for r in results)} at most, used {max(r['sources_used'] for r in results)} at "
          f"most; builder peak RSS {max(r['rss_mib'] for r in results):,.0f} MiB", flush=True)
    ratios = [floor["build"] / (floor["read"] + floor["write"]) for floor in floors]
    if floors:
        print(f"  floor of {len(floors)} jobs, one at a time: read "
              f"{statistics.median(f['read'] for f in floors):.2f} s + write "
              f"{statistics.median(f['write'] for f in floors):.2f} s median; the build of the same jobs "
              f"{statistics.median(f['build'] for f in floors):.2f} s median = {statistics.median(ratios):.2f}x the "
              f"floor (max {max(ratios):.2f}x)", flush=True)
    return {"label": label, "history": history, "wall": wall, "jobs": len(results), "per_job": seconds,
            "to_text": to_text, "to_members": to_members, "ratio": statistics.median(ratios) if ratios else None}


def measure(context: multiprocessing.context.BaseContext, model: Model, root: str, step: int, jobs: list[int],
            args: argparse.Namespace, label: str, history: int, keep_job: int | None = None) -> dict:
    wall, results = build_step(context, model, root, step, jobs, args.workers, keep_job)
    sample = jobs[::max(1, len(jobs) // args.floor_jobs)][:args.floor_jobs]
    with context.Pool(1) as pool:
        floors = pool.map(floor_job, [(model, root, step, job) for job in sample], chunksize=1)
    return report_step(label, history, step, wall, results, floors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--domains", type=int)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--jobs-per-step", type=int)
    parser.add_argument("--captures-per-domain", type=int)
    parser.add_argument("--lookups", type=int)
    parser.add_argument("--floor-jobs", type=int, help="jobs whose floor is measured at each history")
    parser.add_argument("--workers", type=int, default=2, help="processes that write the history and build indexes")
    parser.add_argument("--root", help="where the temporary store goes (default: the system's temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the store and print where it is")
    parser.add_argument("--history-only", action="store_true", help="write the history, then stop")
    args = parser.parse_args()
    for key, value in SCALES[args.scale].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    model = Model(args.domains, args.steps, args.jobs_per_step, args.captures_per_domain)
    if (args.domains % args.jobs_per_step or args.jobs_per_step % GROUPS or model.group < 2
            or model.per_job % MOVED or args.captures_per_domain < 2 or args.steps < 1):
        parser.error(f"--jobs-per-step must divide --domains and be a multiple of {GROUPS * 2}, a job's domains a "
                     f"multiple of {MOVED}, and --captures-per-domain at least 2")

    print(f"{os.cpu_count()} cores; load average at the start: " + " ".join(f"{n:.2f}" for n in os.getloadavg()),
          flush=True)
    print(f"model: {model.domains:,} domains, {model.steps} steps of {model.jobs_per_step} jobs of {model.per_job:,} "
          f"domains, {model.captures_per_domain} captures a domain: {model.domains * model.captures_per_domain:,} "
          f"captures a step, {model.domains * model.captures_per_domain * model.steps:,} in all", flush=True)
    root = tempfile.mkdtemp(prefix="hs-bench-national-", dir=args.root)
    (Path(root) / "model").mkdir()
    (Path(root) / "indexes").mkdir()
    context = multiprocessing.get_context("spawn")
    summaries = []
    try:
        jobs = list(range(model.jobs_per_step))
        group = jobs[:model.group]
        history_seconds = 0.0
        totals = {"entries": 0, "text_bytes": 0, "bytes": 0, "rss_mib": 0.0}
        # The history is written in three parts, each history figure measured where it stands.
        parts = [("history 1 (a tenth of step 1)", [(1, job) for job in group], group),
                 ("history 2 (step 1)", [(1, job) for job in jobs[model.group:]], jobs),
                 (f"history 3 (steps 1 to {model.steps})",
                  [(step, job) for step in range(2, model.steps + 1) for job in jobs], jobs)]
        for number, (label, tasks, built) in enumerate(parts, start=1):
            if tasks:
                with context.Pool(args.workers) as pool:
                    started = time.monotonic()
                    written = write_history(pool, model, root, tasks)
                    seconds = time.monotonic() - started
                history_seconds += seconds
                for key in ("entries", "text_bytes", "bytes"):
                    totals[key] += written[key]
                totals["rss_mib"] = max(totals["rss_mib"], written["rss_mib"])
                print(f"wrote {written['jobs']} jobs, {written['entries']:,} entries "
                      f"({written['text_bytes'] / 2**30:.2f} GiB of text, {written['bytes'] / 2**30:.2f} GiB "
                      f"compressed) in {seconds:.1f} s, "
                      f"{written['entries'] / seconds:,.0f} entries/s; history now {totals['entries']:,} captures",
                      flush=True)
            if args.history_only:
                continue
            step = 2 if number < 3 else model.steps + 1
            last = number == 3
            summaries.append(measure(context, model, root, step, built, args, label, totals["entries"],
                                     keep_job=0 if last else None))
        used = disk_bytes(Path(root) / "store")
        print(f"history: {totals['entries']:,} captures of {model.domains:,} domains in {model.steps} steps written in "
              f"{history_seconds:.1f} s ({totals['entries'] / history_seconds:,.0f} entries/s); "
              f"{totals['text_bytes'] / 2**30:.2f} GiB of entry text, {used / 2**30:.2f} GiB on disk; "
              f"writer peak RSS {totals['rss_mib']:,.0f} MiB", flush=True)
        if not args.history_only:
            with context.Pool(1) as pool:
                looked = pool.apply(lookup_job, ((model, root, model.steps + 1, 0, args.lookups),))
            rate = looked["lookups"] / looked["seconds"]
            print(f"lookups on the index of job 0 of step {model.steps + 1}: {looked['lookups']:,} "
                  f"({looked['hits']:,} hits) in {looked['seconds']:.2f} s, {rate:,.0f} lookups/s from one thread, "
                  f"{looked['wrong']} wrong; "
                  f"lookup process peak RSS {looked['rss_mib']:,.0f} MiB", flush=True)
            if looked["wrong"]:
                raise Failed(f"{looked['wrong']} lookups answered wrong")
            print("step builds by history: " + "; ".join(
                f"{s['history']:,} captures: {s['jobs']} jobs in {s['wall']:.1f} s, {s['per_job'][0]:.2f} s a job "
                f"median" for s in summaries), flush=True)
        print(f"parent peak RSS {peak_rss_mib():,.0f} MiB; load average at the end: "
              + " ".join(f"{n:.2f}" for n in os.getloadavg()), flush=True)
    except Failed as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept the store at {root}", flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
