"""One job-generation run of one harvest definition, in one transaction (docs/jobgen.md, A run).

The run increments the harvest's numevents (the new value is every job's harvest_num), selects and
estimates its configurations (``selection``), packs them (``packing``) and writes the jobs (``building``);
for a selective or event harvest it also moves nextdate to the schedule's next event after now (missed
events are skipped, with a warning; None means no more runs). Everything is written in one transaction, so
a failed run leaves nothing behind: the harvest definition is then deactivated in a transaction of its own
(NetarchiveSuite does the same), the cause is logged, and JobGenerationError names the harvest and the
cause. Runs are serialised: by an advisory lock on PostgreSQL, by the write lock the run's transaction
takes at its start on SQLite. Job ids come from the database (harvestdef.repositories.jobs), so nothing
else that makes jobs meanwhile collides with a run either.

A run asked for outside the schedule ("run now") is taken in the run's transaction
(harvestdef.repositories.runrequests), or in the deactivation's after a failed run; when the schedule did
not make the harvest due, its next run date stays as it was.

``preview`` does the selection and packing only, in a transaction that is rolled back.

A run's inputs (the harvest, its channel, traps, templates, schedule) are read directly, in the run's
transaction under its lock, as selection and building stream theirs; what the run changes goes through
the repositories (jobs: JobRepository; numevents, nextdate and a deactivation: HarvestRepository).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, Engine, select, text

from harvestdef import harvestreasons as reasons
from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql, write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import DatabaseError, JobGenerationError, NotFoundError
from harvestdef.repositories.base import database_errors
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.jobs import allocate_job_ids
from harvestdef.repositories.runrequests import RunRequestRepository
from harvestdef.settings import NamingConvention, Settings
from harvestdef.traps import parse_stored_traps
from scheduler.jobgen.building import BULK_CHECK_THRESHOLD, JobWriter, RunContext, TemplateInfo
from scheduler.jobgen.memberseeds import MemberSeeds
from scheduler.jobgen.packing import Candidates, HarvestLimits, PackedJob, PackingRules, job_generator
from scheduler.jobgen.selection import CRAWL_ATTRIBUTE_TREE, HarvestSource, select_candidates

log = logging.getLogger(__name__)

# Any constant will do, as long as only job generation uses it: it serialises runs on PostgreSQL.
_ADVISORY_LOCK = 0x6A6F6267656E
SORT_MEMORY = "64MB"


@dataclass(frozen=True)
class GenerationOptions:
    """The settings a run uses, read once (``from_settings``)."""

    rules: PackingRules = field(default_factory=PackingRules)
    alias_timeout: int = 31_536_000
    next_job_id: int = 0
    deduplication_enabled: bool = True
    object_limit_by_quota_enforcer: bool = True
    naming_convention: NamingConvention = "LegacyNamingConvention"
    collection_name: str = "netarkivet"
    operator: str = "HarvestSuite"
    timezone: str = ""
    batch_size: int = 10_000
    # job_configs rows from which PostgreSQL checks their foreign keys once per load (building.py)
    bulk_check_threshold: int = BULK_CHECK_THRESHOLD

    @classmethod
    def from_settings(cls, settings: Settings) -> GenerationOptions:
        jobgen = settings.jobgen
        return cls(rules=PackingRules.from_settings(jobgen), alias_timeout=settings.domain.aliasTimeout,
                   next_job_id=settings.database.nextJobId, deduplication_enabled=jobgen.deduplicationEnabled,
                   object_limit_by_quota_enforcer=jobgen.objectLimitIsSetByQuotaEnforcer,
                   naming_convention=jobgen.namingConvention, collection_name=jobgen.collectionName,
                   operator=settings.harvester.organization, timezone=settings.scheduler.timezone,
                   batch_size=jobgen.domainConfigSubsetSize)


@dataclass(frozen=True)
class HarvestToGenerate:
    """The harvest definition row with its snapshot or selective details."""

    harvest_id: int
    name: str
    comments: str
    audience: str
    numevents: int
    edition: int
    channel_id: int | None
    snapshot: bool
    limits: HarvestLimits
    previous_harvest_id: int | None = None
    schedule_id: int | None = None
    nextdate: datetime | None = None
    crawlertraps: str | None = None
    active: bool = True


@dataclass
class GenerationResult:
    harvest_id: int
    harvest_name: str
    harvest_num: int
    job_ids: list[int]
    jobs: list[PackedJob]
    next_date: datetime | None = None
    requested: bool = False  # the run was asked for ("run now"); its request is taken


def load_harvest(conn: Connection, harvest: str | int) -> HarvestToGenerate:
    """The harvest definition by name or id; NotFoundError if there is none."""
    hd, full, partial = s.harvestdefinitions, s.fullharvests, s.partialharvests
    query = (select(hd, full.c.maxobjects, full.c.maxbytes, full.c.maxjobrunningtime, full.c.previoushd,
                    full.c.harvest_id.label("full_id"), partial.c.schedule_id, partial.c.nextdate,
                    partial.c.crawlertraps)
             .select_from(hd.outerjoin(full, full.c.harvest_id == hd.c.harvest_id)
                          .outerjoin(partial, partial.c.harvest_id == hd.c.harvest_id)))
    key = hd.c.harvest_id if isinstance(harvest, int) else hd.c.name
    row = conn.execute(query.where(key == harvest)).mappings().first()
    if row is None:
        raise NotFoundError("harvest definition", harvest)
    snapshot = row["full_id"] is not None
    if snapshot:
        limits = HarvestLimits(True, row["maxobjects"], row["maxbytes"], row["maxjobrunningtime"])
    else:
        limits = HarvestLimits(False)
    return HarvestToGenerate(
        harvest_id=row["harvest_id"], name=row["name"], comments=row["comments"] or "",
        audience=row["audience"] or "", numevents=row["numevents"], edition=row["edition"],
        channel_id=row["channel_id"], snapshot=snapshot, limits=limits, previous_harvest_id=row["previoushd"],
        schedule_id=row["schedule_id"], nextdate=row["nextdate"], crawlertraps=row["crawlertraps"],
        active=bool(row["isactive"]))


def _tune_transaction(conn: Connection) -> None:
    """PostgreSQL settings for this transaction only. Memory is bounded for client and server together
    (1 GiB at 2 million configurations, issue 13): each sort or hash gets SORT_MEMORY and no more
    (hash_mem_multiplier 1), and no parallel workers, each of which would take as much again while competing
    with the client for the same cores. Measured at national scale: 64 MB spills the big joins to temporary
    files for about the same wall time as 256 MB in memory, with a third of the server's peak."""
    if is_postgresql(conn.engine):
        conn.execute(text(f"SET LOCAL work_mem = '{SORT_MEMORY}'"))
        conn.execute(text("SET LOCAL hash_mem_multiplier = 1.0"))
        conn.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))
        # The jobs' seed lists and templates (hundreds of MB for a national snapshot) are compressed as
        # they are stored; lz4 does it four times as fast as the default pglz (4.6 s -> 1.1 s for the 220 MB
        # of a 2-million-domain first step), for a fifth more space. Readers decompress either.
        if conn.scalar(text("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")):
            conn.execute(text("SET LOCAL default_toast_compression = 'lz4'"))


def _select(conn: Connection, harvest: HarvestToGenerate, options: GenerationOptions, now: datetime,
            seeds: MemberSeeds | None = None) -> Candidates:
    source = HarvestSource(harvest.harvest_id, harvest.snapshot, harvest.previous_harvest_id)
    return select_candidates(conn, source, harvest.limits, options.rules, now, options.alias_timeout,
                             options.batch_size, seeds)


def preview(engine: Engine, harvest: str | int, options: GenerationOptions,
            now: datetime | None = None) -> tuple[HarvestToGenerate, Candidates, list[PackedJob]]:
    """The jobs the next run would make; writes nothing."""
    now = now or utcnow()
    try:
        with database_errors(f"previewing harvest definition {harvest!r}"), engine.connect() as conn:
            try:
                _tune_transaction(conn)
                hd = load_harvest(conn, harvest)
                candidates = _select(conn, hd, options, now)
                jobs = list(job_generator(options.rules).pack(candidates))
            finally:
                conn.rollback()
    except DatabaseError as exc:
        raise JobGenerationError(f"previewing harvest definition {harvest!r} failed: {exc.__cause__}") from exc
    return hd, candidates, jobs


def _channel(conn: Connection, harvest: HarvestToGenerate) -> str:
    ch = s.harvestchannel
    if harvest.channel_id is not None:
        name = conn.scalar(select(ch.c.name).where(ch.c.id == harvest.channel_id))
    else:
        name = conn.scalar(select(ch.c.name).where(ch.c.issnapshot == harvest.snapshot, ch.c.isdefault)
                           .order_by(ch.c.id))
    if name is None:
        kind = "snapshot" if harvest.snapshot else "selective"
        raise JobGenerationError(f"no harvest channel for harvest definition {harvest.name!r} "
                                 f"(channel id {harvest.channel_id}, no default {kind} channel)")
    return name


def _global_traps(conn: Connection) -> tuple[str, ...]:
    lists, expressions = s.global_crawler_trap_lists, s.global_crawler_trap_expressions
    rows = conn.scalars(
        select(expressions.c.trap_expression)
        .join(lists, lists.c.global_crawler_trap_list_id == expressions.c.crawler_trap_list_id)
        # NetarchiveSuite's trap_expression is nullable; a NULL traps nothing
        .where(lists.c.isactive, expressions.c.trap_expression.is_not(None)).order_by(lists.c.name, expressions.c.id))
    return tuple(dict.fromkeys(trap.strip() for trap in rows if trap.strip()))


def attribute_names(conn: Connection) -> tuple[str, ...]:
    ta = s.eav_type_attribute
    return tuple(conn.scalars(select(ta.c.name).where(ta.c.tree_id == CRAWL_ATTRIBUTE_TREE).order_by(ta.c.id)))


def _templates(conn: Connection, names: set[str]) -> dict[str, TemplateInfo]:
    t = s.ordertemplates
    rows = conn.execute(select(t.c.name, t.c.orderxml, t.c.description, t.c.lastupdated)
                        .where(t.c.name.in_(sorted(names))))
    return {name: TemplateInfo(name, orderxml, description or "", lastupdated)
            for name, orderxml, description, lastupdated in rows}


def _schedule_name(conn: Connection, harvest: HarvestToGenerate) -> str:
    if harvest.schedule_id is None:
        return ""
    return conn.scalar(select(s.schedules.c.name).where(s.schedules.c.schedule_id == harvest.schedule_id)) or ""


def next_run_date(conn: Connection, harvest: HarvestToGenerate, numevents: int, now: datetime,
                  timezone: str) -> datetime | None:
    """The selective harvest's next run after this one (docs/jobgen.md, A run, step 6), skipping missed events."""
    from harvestdef.schedules import Schedule, scheduler_zone

    row = conn.execute(select(s.schedules).where(s.schedules.c.schedule_id == harvest.schedule_id)).mappings().one()
    schedule = Schedule.from_row(row)
    zone = scheduler_zone(timezone)
    previous = harvest.nextdate or now
    following = schedule.next_event(previous, numevents, zone)
    skipped = 0
    while following is not None and following < now:
        skipped += 1
        following = schedule.next_event(following, numevents, zone)
    if skipped:
        log.warning("harvest definition %r: %d missed run(s) skipped; next run %s", harvest.name, skipped, following)
    return following


def _generate(conn: Connection, harvest: HarvestToGenerate, options: GenerationOptions,
              now: datetime) -> GenerationResult:
    if is_postgresql(conn.engine):
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK})
        # read again under the lock: a run that finished meanwhile has moved numevents on
        harvest = load_harvest(conn, harvest.harvest_id)
    _tune_transaction(conn)
    harvest_num = harvest.numevents + 1
    started = time.monotonic()
    seeds = MemberSeeds()
    candidates = _select(conn, harvest, options, now, seeds)
    selected = time.monotonic()
    jobs = list(job_generator(options.rules).pack(candidates))
    packed = time.monotonic()
    context = RunContext(
        harvest_id=harvest.harvest_id, harvest_name=harvest.name, harvest_comments=harvest.comments,
        audience=harvest.audience, schedule_name=_schedule_name(conn, harvest), harvest_num=harvest_num,
        channel=_channel(conn, harvest), snapshot=harvest.snapshot, global_traps=_global_traps(conn),
        harvest_traps=parse_stored_traps(harvest.crawlertraps), attribute_names=attribute_names(conn),
        creation_date=now, deduplication_enabled=options.deduplication_enabled,
        object_limit_by_quota_enforcer=options.object_limit_by_quota_enforcer,
        naming_convention=options.naming_convention, collection_name=options.collection_name,
        operator=options.operator)
    writer = JobWriter(conn, context, _templates(conn, {job.template_name for job in jobs}),
                       allocate_job_ids(conn, len(jobs), options.next_job_id), options.bulk_check_threshold)
    job_ids = writer.write(jobs, candidates, seeds)
    log.info("harvest %r: %d configurations selected in %.1f s, packed into %d jobs in %.1f s, written in %.1f s",
             harvest.name, len(candidates), selected - started, len(jobs), packed - selected,
             time.monotonic() - packed)
    next_date = None
    harvests = HarvestRepository(conn)
    requested = RunRequestRepository(conn).take(harvest.harvest_id, f"run {harvest_num} made, {len(job_ids)} jobs")
    if harvest.snapshot:
        harvests.record_run(harvest.harvest_id, harvest_num)
    elif requested is not None and not is_due(harvest, now):
        # a run outside the schedule: the next scheduled run stays where it was
        next_date = harvest.nextdate
        harvests.record_run(harvest.harvest_id, harvest_num)
    else:
        next_date = next_run_date(conn, harvest, harvest_num, now, options.timezone)
        harvests.record_run(harvest.harvest_id, harvest_num, next_date)
    return GenerationResult(harvest.harvest_id, harvest.name, harvest_num, job_ids, jobs, next_date,
                            requested=requested is not None)


def is_due(harvest: HarvestToGenerate, now: datetime) -> bool:
    """Whether the selective harvest's schedule makes it ready now (active, its next run date come)."""
    return harvest.active and harvest.nextdate is not None and harvest.nextdate <= now


def generate_jobs(engine: Engine, harvest: str | int, options: GenerationOptions,
                  now: datetime | None = None) -> GenerationResult:
    """Generate the jobs of one run of ``harvest`` (name or id), all in one transaction.

    :raise NotFoundError: no such harvest definition (nothing is changed).
    :raise JobGenerationError: the run failed; nothing of it was written and the harvest was deactivated.
    """
    now = now or utcnow()
    with engine.connect() as conn:
        hd = load_harvest(conn, harvest)
    try:
        with write_transaction(engine) as conn:
            result = _generate(conn, hd, options, now)
    except Exception as exc:  # noqa: BLE001 - any failure of a run deactivates its harvest
        cause = f"{type(exc).__name__}: {exc}"
        log.error("job generation for harvest definition %r (id %d) failed, deactivating it: %s",
                  hd.name, hd.harvest_id, cause, exc_info=True)
        deactivation_failure = _deactivate(engine, hd, cause)
        raise JobGenerationError(
            reasons.generation_failed(hd.name, hd.harvest_id, deactivation_failure, cause)) from exc
    if not result.jobs:
        log.warning("harvest definition %r made 0 jobs (probable cause: it continues a harvest that is "
                    "already finished, or no configuration has an active seed)", hd.name)
    log.info("Created %d jobs for harvest definition (%s)", len(result.jobs), hd.name)
    return result


def _deactivate(engine: Engine, harvest: HarvestToGenerate, cause: str) -> str | None:
    """Deactivate ``harvest`` after its failed run; returns why that failed too, None when it worked.

    The caller's message must not claim a deactivation that did not happen (the harvest would still be
    picked by the next tick), so the outcome is returned rather than only logged.
    """
    try:
        with database_errors(f"deactivating harvest definition {harvest.name!r}"), \
                write_transaction(engine) as conn:
            HarvestRepository(conn).deactivate(harvest.harvest_id)
            # a run asked for is used up by the failure, or every tick would fail it again
            RunRequestRepository(conn).take(harvest.harvest_id, f"the run failed and the harvest was deactivated: "
                                                                f"{cause}"[:2000])
    except DatabaseError as exc:
        # The run's own error is the one raised; this one is logged beside it and named in its message.
        log.error("could not deactivate harvest definition %r after failed job generation (%s)",
                  harvest.name, cause, exc_info=True)
        cause_of_failure = exc.__cause__ or exc
        return f"{type(cause_of_failure).__name__}: {cause_of_failure}"
    return None
