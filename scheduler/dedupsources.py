"""Each job's deduplication sources: which earlier jobs hold the captures of its domains, and whether the
job may be dispatched (docs/scheduler.md, Deduplication).

A job deduplicates against the earlier captures of its own domains. Its harvest controller builds the
job's index from the partitions of those domains in the archive store (harvestdef.dedup.jobindex); the
scheduler says which jobs to read. For every domain of the job, the candidates are the jobs of its
chain that harvested one of the domain's configurations:

* a selective or event harvest's run N: the jobs of its runs before N;
* a snapshot step: the jobs of the steps before it in its chain of previoushd links, and of the chain
  of the most recent other snapshot harvest submitted before it (``chain_jobs``).

The newest candidate decides, walking back from it: a candidate that has not ended (NEW, SUBMITTED,
STARTED) holds the job back, since its captures come only when it ends; an ended one whose entries are
stored is the domain's source; an ended one without stored entries (it failed before, or its store is
still to come) is passed over for the next older one. A domain none of whose ended candidates has
stored entries is not covered. A domain harvested by no candidate has no history and needs nothing.

NetarchiveSuite's rule of a satisfactory share (harvester.indexserver.satisfactorythresholdpercentage)
is counted over the job's domains with history: at least that share must be covered, else the job is
held with the reason, counted again at every tick, and nothing else waits for it. The job's row in
job_dedup_sources records the outcome. The dispatcher admits a NEW job (``has_index_ready``) when it is of
a selective or event harvest's first run, when its row is ready, or when its run has a ready row in
harvest_run_dedup_index: the runs made ready before migration 0028_job_dedup_sources with one index of
every capture of the jobs before them, whose jobs still go with that index (``find_run_index``).

Nothing is built here and nothing is read from the store but whether a job's entries file exists, so a
step's jobs go out as soon as the jobs holding their domains have ended, each one on its own.

A job's row goes through harvestdef.repositories.jobdedup, which the web UI reads too; the queries over
job_configs that find the earlier jobs of a job's domains, and harvest_run_dedup_index, this module's own
record of the runs given one index before migration 0028_job_dedup_sources (docs/database.md, Additions),
read the schema here.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, Select, Table, and_, bindparam, case, exists, func, or_, select, true

from harvestdef import harvestreasons as reasons
from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.dedup import entries_name
from harvestdef.model.status import JobStatus
from harvestdef.phrases import Phrase
from harvestdef.repositories.jobdedup import JobDedupRepository, JobDedupSources
from harvestdef.settings import Settings
from scheduler.notify import Notifier

log = logging.getLogger(__name__)

UNFINISHED = (int(JobStatus.NEW), int(JobStatus.SUBMITTED), int(JobStatus.STARTED))
# A refusal names this many jobs without entries, and counts the rest.
MISSING_SHOWN = 10
# From this many jobs on, a run's domains are found by a hash join rather than by a lookup per configuration.
MANY_JOBS = 20


@dataclass(frozen=True, order=True)
class HarvestRun:
    """One run of a harvest definition: the jobs it generated share harvest_id and harvest_num."""

    harvest_id: int
    harvest_num: int

    def __str__(self) -> str:
        return f"harvest {self.harvest_id} run {self.harvest_num}"


@dataclass(frozen=True)
class RunIndex:
    """A row of harvest_run_dedup_index."""

    run: HarvestRun
    job_ids: tuple[int, ...]
    ready: bool
    index_path: str | None
    missing_job_ids: tuple[int, ...]
    entries: int | None
    failures: int
    error: str | None
    refusal: str | None = None


def chain_jobs(conn: Connection, run: HarvestRun, snapshot: bool) -> ColumnElement[bool]:
    """SQL, a condition on s.jobs: the jobs of the chain that ``run`` deduplicates against."""
    j = s.jobs
    if snapshot:
        return j.c.harvest_id.in_(earlier_snapshot_steps(conn, run.harvest_id))
    return and_(j.c.harvest_id == run.harvest_id, j.c.harvest_num < run.harvest_num)


def earlier_snapshot_steps(conn: Connection, harvest_id: int) -> list[int]:
    """The steps before ``harvest_id`` in its previoushd chain, and the chain of the most recent other
    snapshot harvest submitted before it (docs/scheduler.md, Which earlier jobs)."""
    full, hd = s.fullharvests, s.harvestdefinitions

    def chain(start: int | None) -> list[int]:
        steps: list[int] = []
        while start is not None and start not in steps:  # a cycle of previoushd links ends the chain
            steps.append(start)
            start = conn.scalar(select(full.c.previoushd).where(full.c.harvest_id == start))
        return steps

    own = chain(harvest_id)
    continued = select(full.c.previoushd).where(full.c.previoushd.is_not(None))
    submitted = conn.scalar(select(hd.c.submitted).where(hd.c.harvest_id == harvest_id))
    older = None
    if submitted is not None:
        older = conn.scalar(
            select(hd.c.harvest_id).join(full, full.c.harvest_id == hd.c.harvest_id)
            .where(hd.c.harvest_id.not_in(own), hd.c.harvest_id.not_in(continued), hd.c.submitted < submitted)
            .order_by(hd.c.submitted.desc(), hd.c.harvest_id.desc()).limit(1))
    return sorted(set(own[1:]) | set(chain(older)))


def has_index_ready(jobs: Table) -> ColumnElement[bool]:
    """SQL: a row of ``jobs`` may go as far as deduplication goes: a first selective run's, one whose sources
    are ready, or one of a run given its index before migration 0028_job_dedup_sources."""
    r = s.harvest_run_dedup_index
    return or_(and_(jobs.c.snapshot.is_(False), jobs.c.harvest_num <= 1), has_sources_ready(jobs),
               exists().where(r.c.harvest_id == jobs.c.harvest_id, r.c.harvest_num == jobs.c.harvest_num,
                              r.c.ready.is_(True)))


_RUN_INDEX = select(s.harvest_run_dedup_index).where(
    s.harvest_run_dedup_index.c.harvest_id == bindparam("harvest_id"),
    s.harvest_run_dedup_index.c.harvest_num == bindparam("harvest_num"))  # built once: every release reads it


def find_run_index(conn: Connection, run: HarvestRun) -> RunIndex | None:
    row = conn.execute(_RUN_INDEX, {"harvest_id": run.harvest_id, "harvest_num": run.harvest_num}).first()
    if row is None:
        return None
    return RunIndex(run=run, job_ids=parse_job_ids(row.job_ids), ready=row.ready, index_path=row.index_path,
                    missing_job_ids=parse_job_ids(row.missing_job_ids or ""), entries=row.entries,
                    failures=row.failures, error=row.error, refusal=row.refusal)


def format_job_ids(job_ids: Sequence[int]) -> str:
    return ",".join(str(job_id) for job_id in sorted(job_ids))


def parse_job_ids(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


@dataclass(frozen=True)
class JobSources:
    """The outcome for one job; ``sources`` are (harvest_id, job_id), newest first."""
    job_id: int
    sources: tuple[tuple[int, int], ...]
    domains: int
    with_history: int
    covered: int
    waiting_for: tuple[int, ...]       # candidates not ended that hold the newest captures of some domain
    missing_job_ids: tuple[int, ...]   # ended jobs without stored entries, where a domain found no source

    def satisfies(self, threshold_percentage: int) -> bool:
        return self.covered * 100 >= threshold_percentage * self.with_history


class StoredEntries:
    """Whether a job's entries file is in the archive store, asked once per job per tick."""

    def __init__(self, store: ArchiveStore) -> None:
        self.store = store
        self._known: dict[int, bool] = {}

    def __call__(self, harvest_id: int, job_id: int) -> bool:
        found = self._known.get(job_id)
        if found is None:
            found = self._known[job_id] = self.store.has(harvest_id, job_id, entries_name(job_id))
        return found

    def without_entries(self) -> set[int]:
        """The jobs asked about so far whose entries file is not stored."""
        return {job_id for job_id, found in self._known.items() if not found}


def find_job_sources(conn: Connection, job_id: int, candidates: ColumnElement[bool],
                     stored: Callable[[int, int], bool]) -> JobSources:
    """The sources of ``job_id`` among the jobs that ``candidates`` (a condition on s.jobs) admits."""
    return find_run_sources(conn, [job_id], candidates, stored)[job_id]


def find_run_sources(conn: Connection, job_ids: Sequence[int], candidates: ColumnElement[bool],
                     stored: Callable[[int, int], bool]) -> dict[int, JobSources]:
    """The sources of each of ``job_ids`` among the jobs that ``candidates`` (a condition on s.jobs) admits.

    Every ended candidate is asked whether its entries are stored, once a tick (``StoredEntries``). Then one
    statement for all the jobs walks back from each domain's newest candidate, passing over those without
    entries, and counts each job's domains by the candidate each ends on. It joins the newest candidates,
    as many as the jobs, in bulk, and looks up by key only the domains that find none among them. So the
    rows read are about as many as the jobs' domains, whatever the steps of their history, they are
    counted where they are, and what comes back is a row per job and source, per unfinished candidate and
    per job without entries that leaves domains uncovered. A candidate that ended between the question
    and the statement is asked about then, and the statement made again.
    """
    if not job_ids:
        return {}
    passed = stored.without_entries() if isinstance(stored, StoredEntries) else set()
    # Every ended candidate is asked about first (a file's existence each, asked once a tick): a pass reads
    # all of the jobs' history, and one that found a job without entries would be made again.
    j = s.jobs
    ended = conn.execute(select(j.c.job_id, j.c.harvest_id).where(candidates, j.c.status.not_in(UNFINISHED))).all()
    passed |= {job_id for job_id, harvest_id in ended if not stored(harvest_id, job_id)}
    # The newest candidates, as many as the jobs: in a run after a run (a step after a step) they hold the
    # newest captures of most domains.
    recent = conn.scalar(select(j.c.job_id).where(candidates).order_by(j.c.job_id.desc())
                         .offset(len(job_ids) - 1).limit(1))
    while True:
        groups = conn.execute(_newest_candidates(job_ids, candidates, passed, recent)).all()
        found = {earlier for _, earlier, harvest_id, status, _, _ in groups
                 if earlier is not None and status not in UNFINISHED and not stored(harvest_id, earlier)}
        if not found:
            break
        passed |= found
    by_job: dict[int, list[tuple[int | None, int | None, int | None, int | None, int]]] = {
        job_id: [] for job_id in job_ids}
    for job_id, earlier, harvest_id, status, newest, count in groups:
        by_job[job_id].append((earlier, harvest_id, status, newest, count))
    return {job_id: _job_sources(job_id, rows) for job_id, rows in by_job.items()}


def _job_sources(job_id: int, groups: Sequence[tuple[int | None, int | None, int | None, int | None, int]]
                 ) -> JobSources:
    """One job's outcome from its rows of ``_newest_candidates``."""
    sources: dict[int, int] = {}
    waiting: set[int] = set()
    missing: set[int] = set()
    domains = with_history = covered = 0
    for earlier, harvest_id, status, newest, count in groups:
        domains += count
        if earlier is None and newest is None:  # no candidate harvested these domains
            continue
        with_history += count
        if earlier is None:  # every candidate of these domains ended without stored entries
            missing.add(newest)
        elif status in UNFINISHED:
            waiting.add(earlier)
        else:
            sources[earlier] = harvest_id
            covered += count
    return JobSources(job_id=job_id, sources=tuple((sources[job], job) for job in sorted(sources, reverse=True)),
                      domains=domains, with_history=with_history, covered=covered,
                      waiting_for=tuple(sorted(waiting)), missing_job_ids=tuple(sorted(missing)))


def _newest_candidates(job_ids: Sequence[int], candidates: ColumnElement[bool], passed: set[int],
                       recent: int | None = None) -> Select:
    """SQL: per job of ``job_ids``, its domains counted by the newest of their candidates that is not in
    ``passed`` (with its harvest_id and status), else by their newest candidate (both NULL: no candidate).

    With ``recent``, a job id: the candidates from it on are joined in bulk (the step or run before, where
    most domains find theirs), and a domain that finds none there is looked up by key among all the
    candidates. So the statement reads the rows of the newest candidates, not of the whole history, and its
    cost does not grow with the steps before it.

    ``passed`` holds ended jobs only (only those are asked about), so no status is read per row."""
    jc, c, j = s.job_configs, s.configurations, s.jobs
    if len(job_ids) < MANY_JOBS:
        # A subquery per configuration: a join would read all of configurations to find a few jobs' few
        # thousand (PostgreSQL plans a hash join); the subquery looks each one up by its key.
        domain_of = select(c.c.domain_id).where(c.c.config_id == jc.c.config_id).scalar_subquery()
        own = select(jc.c.job_id, domain_of.label("domain_id")).where(jc.c.job_id.in_(sorted(job_ids)))
    else:
        # For a run's many jobs a hash join is right: a lookup per configuration costs more than reading
        # configurations once.
        own = (select(jc.c.job_id, c.c.domain_id).join(c, c.c.config_id == jc.c.config_id)
               .where(jc.c.job_id.in_(sorted(job_ids))))
    own_domains = own.distinct().subquery("own")
    chain = select(j.c.job_id).where(candidates)
    not_passed = (lambda column: column.not_in(sorted(passed))) if passed else (lambda column: true())
    earlier_jc, earlier_c = jc.alias("earlier_jc"), c.alias("earlier_c")
    # The chain's jobs as a set built once per statement (a hashed subplan), joined on with the domains'
    # configurations so that only the chain's rows of job_configs are carried on, rather than every earlier
    # job of the domains (of every harvest) looked up and filtered afterwards. An outer join, so that a
    # domain no candidate harvested is counted too.
    joined = and_(earlier_jc.c.config_id == earlier_c.c.config_id, earlier_jc.c.job_id.in_(chain))
    if recent is not None:
        joined = and_(joined, earlier_jc.c.job_id >= recent)
    earlier = earlier_c.join(earlier_jc, joined)
    candidate = case((earlier_jc.c.job_id != own_domains.c.job_id, earlier_jc.c.job_id))
    taken = candidate if not passed else case((not_passed(earlier_jc.c.job_id), candidate))
    history = (select(own_domains.c.job_id, own_domains.c.domain_id, func.max(taken).label("earlier"),
                      func.max(candidate).label("newest"))
               .select_from(own_domains.outerjoin(earlier, earlier_c.c.domain_id == own_domains.c.domain_id))
               .group_by(own_domains.c.job_id, own_domains.c.domain_id).subquery("history"))
    found, newest_found = history.c.earlier, history.c.newest
    if recent is not None:
        # The domains that found no candidate from ``recent`` on: looked up by key, one by one (a CASE
        # evaluates its subquery only where it is needed).
        def newest_of(keep: Callable[[ColumnElement[int]], ColumnElement[bool]]) -> ColumnElement[int]:
            by_key_jc, by_key_c = jc.alias("by_key_jc"), c.alias("by_key_c")
            return (select(func.max(by_key_jc.c.job_id))
                    .select_from(by_key_c.join(by_key_jc, by_key_jc.c.config_id == by_key_c.c.config_id))
                    .where(by_key_c.c.domain_id == history.c.domain_id, by_key_jc.c.job_id.in_(chain),
                           by_key_jc.c.job_id != history.c.job_id, keep(by_key_jc.c.job_id))
                    .scalar_subquery())
        found = case((history.c.earlier.is_(None), newest_of(not_passed)), else_=history.c.earlier)
        newest_found = case((history.c.earlier.is_(None), newest_of(lambda column: true())),
                            else_=history.c.newest)
    resolved = select(history.c.job_id, history.c.domain_id, found.label("earlier"),
                      newest_found.label("newest")).subquery("resolved")
    newest = case((resolved.c.earlier.is_(None), resolved.c.newest)).label("newest")
    # count(domain_id): a configuration without its row in configurations has no domain, as in a join
    counted = (select(resolved.c.job_id, resolved.c.earlier, newest, func.count(resolved.c.domain_id).label("domains"))
               .group_by(resolved.c.job_id, resolved.c.earlier, newest).subquery("counted"))
    taken_job = j.alias("taken_job")
    return (select(counted.c.job_id, counted.c.earlier, taken_job.c.harvest_id, taken_job.c.status,
                   counted.c.newest, counted.c.domains)
            .select_from(counted.outerjoin(taken_job, taken_job.c.job_id == counted.c.earlier)))


def refusal_of(found: JobSources, threshold_percentage: int) -> Phrase:
    """Why ``found`` is held back (harvestdef/harvestreasons.py: stored in English and as its phrase)."""
    return reasons.job_refusal(found.job_id, found.with_history, found.covered, threshold_percentage,
                               found.missing_job_ids, MISSING_SHOWN)


def record_sources(conn: Connection, found: JobSources, refusal: Phrase | None) -> bool:
    """Write the job's row: ready unless ``refusal``. True when a refusal is news (told once)."""
    repository = JobDedupRepository(conn)
    before = repository.find(found.job_id)
    english = None if refusal is None else str(refusal)
    repository.record(JobDedupSources(
        job_id=found.job_id, ready=refusal is None, sources=found.sources, domains=found.domains,
        with_history=found.with_history, covered=found.covered, missing_job_ids=found.missing_job_ids,
        refusal=english, changed_at=utcnow(),
        refusal_phrase=None if refusal is None else reasons.stored(refusal)))
    return english is not None and (before is None or before.refusal != english[:2000])


def find_sources_row(conn: Connection, job_id: int) -> JobDedupSources | None:
    return JobDedupRepository(conn).find(job_id)


def has_sources_ready(jobs: Table) -> ColumnElement[bool]:
    """SQL: the row of ``jobs`` has its ready row in job_dedup_sources."""
    r = s.job_dedup_sources
    return exists().where(r.c.job_id == jobs.c.job_id, r.c.ready.is_(True))


class JobReadiness:
    """Writes the rows of the NEW jobs of a run, and says why those not ready wait (the Ticker's part of
    deduplication; None in its place means deduplication is off)."""

    def __init__(self, store: ArchiveStore, notifier: Notifier, threshold_percentage: int = 70) -> None:
        if not 0 <= threshold_percentage <= 100:
            raise ValueError(f"threshold_percentage is a percentage from 0 to 100, got {threshold_percentage}")
        self.store = store
        self.notifier = notifier
        self.threshold_percentage = threshold_percentage

    @classmethod
    def from_settings(cls, settings: Settings, notifier: Notifier) -> JobReadiness:
        return cls(ArchiveStore.from_settings(settings), notifier, settings.scheduler.satisfactorythresholdpercentage)

    def run_note(self, conn: Connection, harvest_id: int, harvest_num: int, candidates: ColumnElement[bool],
                 stored: StoredEntries | None = None,
                 decisions: collections.Counter[str] | None = None) -> Phrase | None:
        """Decide each NEW job of the run without a ready row; None once all may go, else why they wait.

        ``candidates`` (a condition on s.jobs) are the jobs of the run's chain (``chain_jobs``). ``decisions``,
        if given, counts each job's outcome: ``ready``, ``refused`` (too few earlier captures stored) or
        ``waiting`` (earlier jobs not ended), for the scheduler's metrics.
        """
        j = s.jobs
        stored = stored or StoredEntries(self.store)
        job_ids = conn.scalars(
            select(j.c.job_id).where(j.c.harvest_id == harvest_id, j.c.harvest_num == harvest_num,
                                     j.c.status == int(JobStatus.NEW), ~has_sources_ready(j))
            .order_by(j.c.job_id)).all()
        waiting: list[JobSources] = []
        refused: list[tuple[JobSources, Phrase]] = []
        news: list[str] = []
        for job_id, found in find_run_sources(conn, job_ids, candidates, stored).items():
            if found.waiting_for:
                waiting.append(found)
                if decisions is not None:
                    decisions["waiting"] += 1
                continue
            refusal = None if found.satisfies(self.threshold_percentage) else refusal_of(
                found, self.threshold_percentage)
            if decisions is not None:
                decisions["ready" if refusal is None else "refused"] += 1
            if refusal is None:
                log.info("job %d deduplicates against jobs %s: %d of its %d domains have earlier captures",
                         job_id, ", ".join(str(source) for _, source in found.sources) or "none",
                         found.covered, found.domains)
            if record_sources(conn, found, refusal):
                news.append(str(refusal or ""))
            if refusal is not None:
                refused.append((found, refusal))
        if news:
            self.notifier.notify(f"Deduplication of harvest {harvest_id} run {harvest_num} refused for "
                                 f"{len(news)} jobs", f"{news[0]}. Those jobs are not dispatched until enough of "
                                 "the entries are stored; the scheduler counts again at every tick.")
        new_jobs = conn.scalar(select(func.count()).select_from(j).where(
            j.c.harvest_id == harvest_id, j.c.harvest_num == harvest_num, j.c.status == int(JobStatus.NEW)))
        notes = []
        if waiting:
            unfinished = {job for found in waiting for job in found.waiting_for}
            notes.append(reasons.sources_wait_for_jobs(len(waiting), new_jobs, len(unfinished)))
        if refused:
            notes.append(reasons.sources_refused(len(refused), new_jobs, refused[0][1]))
        return reasons.joined(*notes)


__all__ = ["HarvestRun", "JobReadiness", "JobSources", "RunIndex", "StoredEntries", "UNFINISHED",
           "chain_jobs", "earlier_snapshot_steps", "find_job_sources", "find_run_index", "find_run_sources",
           "find_sources_row", "format_job_ids", "has_index_ready", "has_sources_ready", "parse_job_ids",
           "record_sources", "refusal_of"]
