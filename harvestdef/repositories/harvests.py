"""Harvest definitions: selective and event harvests (partialharvests) and snapshot harvests (fullharvests).

``harvest_id`` is assigned here as max(harvest_id)+1, as NetarchiveSuite does "for historical reasons"
(docs/database.md, Conventions kept from NetarchiveSuite); two curators creating a harvest at the same
moment collide on the primary key and the second gets ConflictError rather than a silent overwrite.

Selective and event harvests are the same type. An event harvest is a selective harvest filled through
"add seeds" (NetarchiveSuite's event harvest form): the seeds are checked by harvestdef.seeds'
rule (one refused line refuses them all, and nothing is stored), grouped by domain, missing domains are
created, and each domain gets a configuration and a seed list named
``<HD>_<template>_<maxBytes|Unlimited>Bytes_<maxObjects|Unlimited>Objects`` (with a timestamp suffix if the
domain has that name already), which is added to the harvest.

Schedules belong to harvestdef.schedules; this module refers to them only by id and name, reading the
schedules table directly. Readiness, job generation and run numbers (numevents) are the scheduler's to
decide; what it changes of a definition is written here, audited like any change: a run recorded
(``record_run``), the deactivation after a failed run (``deactivate`` without an edition), a snapshot
step's deduplication index ready (``mark_index_ready``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, Select, delete, exists, func, insert, select, update

from harvestdef import harvestreasons as reasons
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.destinations import DestinationPolicy
from harvestdef.errors import (
    ConflictError,
    DomainNameError,
    LineRefusal,
    NotFoundError,
    RefusedLinesError,
    ValidationError,
)
from harvestdef.model.definitions import (
    DomainConfiguration,
    HarvestConfigEntry,
    HarvestDefinition,
    HarvestKind,
    HarvestOutlook,
    RunOutlook,
    SelectiveHarvest,
    SnapshotHarvest,
)
from harvestdef.model.status import JobStatus
from harvestdef.phrases import N_, Phrase, phrase
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    translate_errors,
    update_with_edition,
)
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.repositories.configurations import ConfigurationRepository, check_limit
from harvestdef.repositories.definitioncounts import recheck_unused
from harvestdef.repositories.domains import DomainDefaults, DomainRepository
from harvestdef.repositories.schedules import ScheduleRepository
from harvestdef.repositories.seedlists import SeedListRepository
from harvestdef.schedules import scheduler_zone
from harvestdef.seeds import ANY_SEED, check_event_seeds
from harvestdef.settings import Settings
from harvestdef.traps import parse_stored_traps, traps_text, validate_trap_expressions
from harvestdef.validation import check_name

STREAM_BATCH = 1000
UNCHANGED: Any = object()  # marks an optional argument that was not given (None is a real value)

_previous = s.harvestdefinitions.alias("previous")


def _harvest_select() -> Select[Any]:
    return (
        select(s.harvestdefinitions,
               s.partialharvests.c.harvest_id.label("partial_id"), s.partialharvests.c.schedule_id,
               s.partialharvests.c.nextdate, s.partialharvests.c.crawlertraps, s.partialharvests.c.isevent,
               s.schedules.c.name.label("schedule_name"),
               s.fullharvests.c.harvest_id.label("full_id"), s.fullharvests.c.maxobjects, s.fullharvests.c.maxbytes,
               s.fullharvests.c.maxjobrunningtime, s.fullharvests.c.previoushd, s.fullharvests.c.isindexready)
        .outerjoin(s.partialharvests, s.partialharvests.c.harvest_id == s.harvestdefinitions.c.harvest_id)
        .outerjoin(s.schedules, s.schedules.c.schedule_id == s.partialharvests.c.schedule_id)
        .outerjoin(s.fullharvests, s.fullharvests.c.harvest_id == s.harvestdefinitions.c.harvest_id)
    )


def _to_harvest(row: Any) -> HarvestDefinition:
    common = dict(harvest_id=row.harvest_id, name=row.name, comments=row.comments or "", numevents=row.numevents,
                  submitted=row.submitted, isactive=row.isactive, edition=row.edition, channel_id=row.channel_id,
                  audience=row.audience)
    if row.full_id is not None:
        return SnapshotHarvest(**common, maxobjects=row.maxobjects, maxbytes=row.maxbytes,
                               maxjobrunningtime=row.maxjobrunningtime, previoushd=row.previoushd,
                               isindexready=row.isindexready)
    return SelectiveHarvest(**common, schedule_id=row.schedule_id, schedule_name=row.schedule_name,
                            nextdate=row.nextdate, crawlertraps=parse_stored_traps(row.crawlertraps),
                            isevent=bool(row.isevent))


def event_config_name(harvest_name: str, template: str, maxbytes: int, maxobjects: int) -> str:
    """NetarchiveSuite's name for the configuration and seed list "add seeds" makes per domain."""
    limit_bytes = "Unlimited" if maxbytes == -1 else str(maxbytes)
    limit_objects = "Unlimited" if maxobjects == -1 else str(maxobjects)
    return f"{harvest_name}_{template}_{limit_bytes}Bytes_{limit_objects}Objects"


def _unknown_configuration(error: Exception, domain: str, config_name: str | None) -> str | Phrase:
    """Why a (domain, configuration) pair names no configuration, in words."""
    if isinstance(error, DomainNameError):
        return error.reason_phrase
    if isinstance(error, NotFoundError) and error.kind == "domain":
        return phrase(N_("no domain %(domain)s"), domain=str(error.key))
    if isinstance(error, NotFoundError) and config_name is None:
        return phrase(N_("domain %(domain)s has no default configuration"), domain=domain)
    if isinstance(error, NotFoundError):
        return phrase(N_("domain %(domain)s has no configuration %(configuration)s"), domain=domain,
                      configuration=config_name)
    return getattr(error, "phrase", None) or str(error)


class HarvestRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR, domain_defaults: DomainDefaults | None = None,
                 valid_seed_regex: str = ANY_SEED, clock: Callable[[], datetime] = utcnow,
                 zone: ZoneInfo | None = None, snapshot_job_time: int = 0,
                 destinations: DestinationPolicy | None = None) -> None:
        self.conn = conn
        # the destination policy an event seed's host passes before resolution (None: not asked)
        self.destinations = destinations
        self.zone = zone
        self.snapshot_job_time = snapshot_job_time  # a new snapshot's seconds per job when none is given
        self.actor = actor
        self.clock = clock
        self.valid_seed_regex = valid_seed_regex
        self._domains = DomainRepository(conn, actor, domain_defaults)
        self._configurations = ConfigurationRepository(conn, actor, valid_seed_regex)
        self._seedlists = SeedListRepository(conn, actor, valid_seed_regex, destinations)

    @classmethod
    def from_settings(cls, conn: Connection, settings: Settings, actor: str = SYSTEM_ACTOR) -> HarvestRepository:
        return cls(conn, actor, DomainDefaults.from_settings(settings), settings.domain.validSeedRegex,
                   zone=scheduler_zone(settings.scheduler.timezone),
                   snapshot_job_time=settings.jobgen.maxTimeToCompleteJob,
                   destinations=settings.network.policy())

    # ------------------------------------------------------------ reading
    def get(self, name: str) -> HarvestDefinition:
        row = self.conn.execute(_harvest_select().where(s.harvestdefinitions.c.name == name)).first()
        if row is None:
            raise NotFoundError("harvest definition", name)
        return _to_harvest(row)

    def get_by_id(self, harvest_id: int) -> HarvestDefinition:
        row = self.conn.execute(_harvest_select().where(s.harvestdefinitions.c.harvest_id == harvest_id)).first()
        if row is None:
            raise NotFoundError("harvest definition", harvest_id)
        return _to_harvest(row)

    def get_selective(self, name: str) -> SelectiveHarvest:
        harvest = self.get(name)
        if not isinstance(harvest, SelectiveHarvest):
            raise ValidationError(f"harvest definition {name!r} is a snapshot harvest, not a selective one")
        return harvest

    def get_snapshot(self, name: str) -> SnapshotHarvest:
        harvest = self.get(name)
        if not isinstance(harvest, SnapshotHarvest):
            raise ValidationError(f"harvest definition {name!r} is a selective harvest, not a snapshot")
        return harvest

    def all_harvests(self, kind: HarvestKind | None = None) -> Iterator[HarvestDefinition]:
        """Harvest definitions by name (of one kind, if given), streamed."""
        stmt = _harvest_select().order_by(s.harvestdefinitions.c.name)
        if kind is HarvestKind.SNAPSHOT:
            stmt = stmt.where(s.fullharvests.c.harvest_id.is_not(None))
        elif kind is HarvestKind.SELECTIVE:
            stmt = stmt.where(s.partialharvests.c.harvest_id.is_not(None))
        for row in self.conn.execute(stmt.execution_options(yield_per=STREAM_BATCH)):
            yield _to_harvest(row)

    def page(self, after: str | None, size: int, kind: HarvestKind | None = None) -> list[HarvestDefinition]:
        """Up to ``size`` harvest definitions by name (of one kind, if given), after the name ``after``."""
        stmt = _harvest_select().order_by(s.harvestdefinitions.c.name).limit(size)
        if after is not None:
            stmt = stmt.where(s.harvestdefinitions.c.name > after)
        if kind is HarvestKind.SNAPSHOT:
            stmt = stmt.where(s.fullharvests.c.harvest_id.is_not(None))
        elif kind is HarvestKind.SELECTIVE:
            stmt = stmt.where(s.partialharvests.c.harvest_id.is_not(None))
        return [_to_harvest(row) for row in self.conn.execute(stmt)]

    def states(self, harvest_ids: Iterable[int]) -> dict[int, Any]:
        """The scheduler's harvest_state rows (state, reason, changed_at) of these harvests, by harvest id."""
        ids = list(harvest_ids)
        if not ids:
            return {}
        rows = self.conn.execute(select(s.harvest_state).where(s.harvest_state.c.harvest_id.in_(ids)))
        return {row.harvest_id: row for row in rows}

    def outlook(self, harvest: HarvestDefinition) -> HarvestOutlook:
        """Whether ``harvest`` runs (again), why not, and its last run. An inactive harvest carries the reason
        too when it would not run if activated, so saving it can warn."""
        last_run_at = None
        if harvest.numevents:
            j = s.jobs
            last_run_at = self.conn.scalar(select(func.min(j.c.creationdate)).where(
                j.c.harvest_id == harvest.harvest_id, j.c.harvest_num == harvest.numevents))
        reason = self._end_reason(harvest)
        if not harvest.isactive:
            outlook = RunOutlook.INACTIVE
        elif reason is None:
            outlook = RunOutlook.ACTIVE
        else:
            outlook = RunOutlook.FINISHED if harvest.numevents else RunOutlook.CANNOT_RUN
        return HarvestOutlook(outlook, "" if reason is None else str(reason), harvest.numevents, last_run_at,
                              reason)

    def _end_reason(self, harvest: HarvestDefinition) -> Phrase | None:
        if isinstance(harvest, SnapshotHarvest):
            return reasons.snapshot_has_run() if harvest.numevents else None
        assert isinstance(harvest, SelectiveHarvest)
        if harvest.nextdate is not None:
            return None
        schedule = ScheduleRepository(self.conn).get(harvest.schedule_id)
        return (schedule.end_reason(harvest.numevents, self.clock(), self._zone())
                or reasons.next_date_cleared())

    def _zone(self) -> ZoneInfo:
        return self.zone if self.zone is not None else scheduler_zone("")

    def configurations(self, name: str) -> Iterator[HarvestConfigEntry]:
        """The configurations of a selective harvest, by domain and configuration name, streamed."""
        harvest = self.get_selective(name)
        stmt = (select(s.harvest_configs.c.config_id, s.domains.c.name.label("domain_name"),
                       s.configurations.c.name.label("config_name"))
                .join(s.configurations, s.configurations.c.config_id == s.harvest_configs.c.config_id)
                .join(s.domains, s.domains.c.domain_id == s.configurations.c.domain_id)
                .where(s.harvest_configs.c.harvest_id == harvest.harvest_id)
                .order_by(s.domains.c.name, s.configurations.c.name))
        for row in self.conn.execute(stmt.execution_options(yield_per=STREAM_BATCH)):
            yield HarvestConfigEntry(harvest.harvest_id, row.config_id, row.domain_name, row.config_name)

    def configuration_choices(self, name: str) -> dict[str, list[str]]:
        """Every configuration name of each domain the selective harvest names, by domain: what a curator
        may change a domain's configuration in the harvest to. One join over the harvest's domains."""
        harvest = self.get_selective(name)
        hc, c, d = s.harvest_configs, s.configurations, s.domains
        chosen = c.alias("chosen")
        domains = (select(chosen.c.domain_id).join(hc, hc.c.config_id == chosen.c.config_id)
                   .where(hc.c.harvest_id == harvest.harvest_id))
        choices: dict[str, list[str]] = {}
        for domain, config in self.conn.execute(
                select(d.c.name, c.c.name).join(c, c.c.domain_id == d.c.domain_id)
                .where(d.c.domain_id.in_(domains)).order_by(d.c.name, c.c.name)):
            choices.setdefault(domain, []).append(config)
        return choices

    # ------------------------------------------------------------ creating
    def next_harvest_id(self) -> int:
        return int(self.conn.scalar(select(func.coalesce(func.max(s.harvestdefinitions.c.harvest_id), 0))) or 0) + 1

    def _schedule(self, schedule: int | str) -> int:
        column = s.schedules.c.schedule_id if isinstance(schedule, int) else s.schedules.c.name
        schedule_id = self.conn.scalar(select(s.schedules.c.schedule_id).where(column == schedule))
        if schedule_id is None:
            raise NotFoundError("schedule", schedule)
        return int(schedule_id)

    def _channel_id(self, channel: str | None, snapshot: bool) -> int | None:
        if channel is None:
            return None
        target = ChannelRepository(self.conn, self.actor).get(channel)
        if target.issnapshot != snapshot:
            if target.issnapshot:
                raise ValidationError(phrase(N_("channel %(name)s is for snapshot harvests, not selective ones"),
                                             name=target.name))
            raise ValidationError(phrase(N_("channel %(name)s is for selective harvests, not snapshot ones"),
                                         name=target.name))
        return target.channel_id

    def _insert_definition(self, name: str, comments: str, audience: str | None, active: bool,
                           channel_id: int | None) -> int:
        name = check_name(name, "harvest definition", s.harvestdefinitions.c.name)
        if self.conn.scalar(select(exists().where(s.harvestdefinitions.c.name == name))):
            raise ConflictError("harvest definition", name, field="name",
                                sentence=f"a harvest definition named {name} already exists")
        harvest_id = self.next_harvest_id()
        with translate_errors("harvest definition", name):
            self.conn.execute(insert(s.harvestdefinitions).values(
                harvest_id=harvest_id, name=name, comments=comments, numevents=0, submitted=self.clock(),
                isactive=active, edition=1, channel_id=channel_id, audience=audience))
        return harvest_id

    def _audit_insert(self, harvest_id: int, detail_table: Any) -> None:
        record_audit(self.conn, self.actor, "harvestdefinitions", harvest_id, "insert", None,
                     {**(fetch_row(self.conn, s.harvestdefinitions, "harvest_id", harvest_id) or {}),
                      **(fetch_row(self.conn, detail_table, "harvest_id", harvest_id) or {})})

    def create_selective(self, name: str, schedule: int | str, *, comments: str = "", audience: str | None = None,
                         nextdate: datetime | None = None, crawlertraps: str = "", channel: str | None = None,
                         active: bool = False, event: bool = False) -> SelectiveHarvest:
        """A new selective (or, with ``event``, event) harvest on ``schedule`` (id or name); ConflictError if
        the name exists.

        Without ``nextdate`` it runs at the schedule's first event from now, as NetarchiveSuite's
        PartialHarvest does; the scheduler never runs a harvest whose nextdate is empty.
        """
        schedule_id = self._schedule(schedule)
        if nextdate is None:
            nextdate = ScheduleRepository(self.conn).get(schedule_id).first_event(self.clock(), self._zone())
        traps = validate_trap_expressions(crawlertraps)
        harvest_id = self._insert_definition(name, comments, audience, active, self._channel_id(channel, False))
        self.conn.execute(insert(s.partialharvests).values(
            harvest_id=harvest_id, schedule_id=schedule_id, nextdate=nextdate, crawlertraps=traps_text(traps),
            isevent=event))
        self._audit_insert(harvest_id, s.partialharvests)
        return self.get_selective(name.strip())

    def create_snapshot(self, name: str, *, maxobjects: int = -1, maxbytes: int = -1,
                        maxjobrunningtime: int | None = None, previous: str | None = None, comments: str = "",
                        audience: str | None = None, channel: str | None = None,
                        active: bool = False) -> SnapshotHarvest:
        """A new snapshot harvest, continuing ``previous`` (a snapshot's name) if given. Without
        ``maxjobrunningtime`` its jobs get the repository's ``snapshot_job_time`` (NetarchiveSuite's setting
        harvester.scheduler.jobGen.maxTimeToCompleteJob)."""
        if maxjobrunningtime is None:
            maxjobrunningtime = self.snapshot_job_time
        check_limit("maxobjects", maxobjects)
        check_limit("maxbytes", maxbytes)
        if maxjobrunningtime < 0:
            raise ValidationError(phrase(N_("maxjobrunningtime is seconds per job, 0 = no limit; not %(value)s"),
                                         value=maxjobrunningtime))
        previoushd = self.get_snapshot(previous).harvest_id if previous is not None else None
        harvest_id = self._insert_definition(name, comments, audience, active, self._channel_id(channel, True))
        self.conn.execute(insert(s.fullharvests).values(
            harvest_id=harvest_id, maxobjects=maxobjects, maxbytes=maxbytes, maxjobrunningtime=maxjobrunningtime,
            previoushd=previoushd, isindexready=False))
        self._audit_insert(harvest_id, s.fullharvests)
        return self.get_snapshot(name.strip())

    # ------------------------------------------------------------ editing
    def _update(self, name: str, expected_edition: int, values: dict[str, Any]) -> HarvestDefinition:
        current = self.get(name)
        update_with_edition(self.conn, self.actor, s.harvestdefinitions, "harvest_id", current.harvest_id,
                            expected_edition, values, "harvest definition")
        return self.get_by_id(current.harvest_id)

    def _update_detail(self, harvest_id: int, table: Any, values: dict[str, Any]) -> None:
        if not values:
            return
        before = fetch_row(self.conn, table, "harvest_id", harvest_id)
        self.conn.execute(update(table).where(table.c.harvest_id == harvest_id).values(**values))
        record_audit(self.conn, self.actor, table.name, harvest_id, "update", before,
                     fetch_row(self.conn, table, "harvest_id", harvest_id))

    def rename(self, name: str, new_name: str, expected_edition: int) -> HarvestDefinition:
        new_name = check_name(new_name, "harvest definition", s.harvestdefinitions.c.name)
        with translate_errors("harvest definition", new_name):
            return self._update(name, expected_edition, {"name": new_name})

    def set_comments(self, name: str, comments: str, expected_edition: int) -> HarvestDefinition:
        return self._update(name, expected_edition, {"comments": comments})

    def set_audience(self, name: str, audience: str | None, expected_edition: int) -> HarvestDefinition:
        return self._update(name, expected_edition, {"audience": audience})

    def activate(self, name: str, expected_edition: int) -> HarvestDefinition:
        """Activate; a snapshot continuing a previous one needs that one complete: it has jobs, none of them
        NEW, SUBMITTED or STARTED."""
        current = self.get(name)
        if isinstance(current, SnapshotHarvest) and current.previoushd is not None:
            self._check_previous_complete(current)
        return self._update(name, expected_edition, {"isactive": True})

    def deactivate(self, harvest: str | int, expected_edition: int | None = None) -> HarvestDefinition:
        """Deactivate the harvest (by name or id) at ``expected_edition``; without one, whatever edition it is
        at: the scheduler's deactivation after a failed run, decided on what it has just
        read, not on an editor's form."""
        if expected_edition is not None:
            name = harvest if isinstance(harvest, str) else self.get_by_id(harvest).name
            return self._update(name, expected_edition, {"isactive": False})
        harvest_id = harvest if isinstance(harvest, int) else self.get(harvest).harvest_id
        self._update_by_id(harvest_id, {"isactive": False})
        return self.get_by_id(harvest_id)

    # ------------------------------------------------------------ the scheduler's changes
    def _update_by_id(self, harvest_id: int, values: dict[str, Any]) -> None:
        """Update the definition's row at whatever edition it is (the scheduler acts on what it has just read
        under its own lock, not on an editor's form), moving the edition on and auditing the change."""
        hd = s.harvestdefinitions
        before = fetch_row(self.conn, hd, "harvest_id", harvest_id)
        if before is None:
            raise NotFoundError("harvest definition", harvest_id)
        self.conn.execute(update(hd).where(hd.c.harvest_id == harvest_id).values(**values, edition=hd.c.edition + 1))
        record_audit(self.conn, self.actor, hd.name, harvest_id, "update", before,
                     fetch_row(self.conn, hd, "harvest_id", harvest_id))

    def record_run(self, harvest_id: int, harvest_num: int, next_date: datetime | None = UNCHANGED) -> None:
        """A run's jobs were generated: numevents becomes ``harvest_num``, and a selective or event harvest's
        nextdate becomes ``next_date`` (None: no more runs). One audit row holds both, the next date
        in the harvest definition's ``after``, as the run's jobs are not audited one by one."""
        hd = s.harvestdefinitions
        before = fetch_row(self.conn, hd, "harvest_id", harvest_id)
        if before is None:
            raise NotFoundError("harvest definition", harvest_id)
        self.conn.execute(update(hd).where(hd.c.harvest_id == harvest_id)
                          .values(numevents=harvest_num, edition=hd.c.edition + 1))
        after = fetch_row(self.conn, hd, "harvest_id", harvest_id)
        if next_date is not UNCHANGED:
            self.conn.execute(update(s.partialharvests).where(s.partialharvests.c.harvest_id == harvest_id)
                              .values(nextdate=next_date))
            after = {**(after or {}), "nextdate": next_date}
        record_audit(self.conn, self.actor, hd.name, harvest_id, "update", before, after)

    def mark_index_ready(self, harvest_id: int) -> None:
        """The snapshot step's deduplication index is built (or none is needed): isindexready, audited."""
        self._update_detail(harvest_id, s.fullharvests, {"isindexready": True})

    def _check_previous_complete(self, harvest: SnapshotHarvest) -> None:
        previous = self.get_by_id(harvest.previoushd or 0)
        statuses = list(self.conn.scalars(select(s.jobs.c.status).where(s.jobs.c.harvest_id == previous.harvest_id)
                                          .distinct()))
        if not statuses:
            raise ValidationError(phrase(N_("snapshot %(name)s continues %(previous)s, which has no jobs yet"),
                                         name=repr(harvest.name), previous=repr(previous.name)))
        unfinished = {JobStatus.NEW, JobStatus.SUBMITTED, JobStatus.STARTED} & {JobStatus(v) for v in statuses}
        if unfinished:
            raise ValidationError(phrase(N_("snapshot %(name)s continues %(previous)s, which still has jobs "
                                            "%(statuses)s"), name=repr(harvest.name), previous=repr(previous.name),
                                         statuses=", ".join(sorted(str(u) for u in unfinished))))

    def update_selective(self, name: str, expected_edition: int, *, schedule: int | str | None = None,
                         nextdate: datetime | None = UNCHANGED, crawlertraps: str | None = None
                         ) -> SelectiveHarvest:
        """Change the schedule, the next date (None = never again) or the harvest-level crawler traps.

        A new schedule without a ``nextdate`` moves the next run to the new schedule's first event from the
        later of now and the old next run (NetarchiveSuite's PartialHarvest.setSchedule), or to none when
        the new schedule has ended or its repeats are used up; a harvest whose schedule had run its course
        runs again once given a schedule with events to come."""
        current = self.get_selective(name)
        values: dict[str, Any] = {}
        if schedule is not None:
            values["schedule_id"] = self._schedule(schedule)
            if values["schedule_id"] != current.schedule_id and nextdate is UNCHANGED:
                values["nextdate"] = self._first_run(values["schedule_id"], current)
        if nextdate is not UNCHANGED:
            values["nextdate"] = nextdate
        if crawlertraps is not None:
            values["crawlertraps"] = traps_text(validate_trap_expressions(crawlertraps))
        self._update(name, expected_edition, {})
        self._update_detail(current.harvest_id, s.partialharvests, values)
        return self.get_selective(name)

    def _first_run(self, schedule_id: int, harvest: SelectiveHarvest) -> datetime | None:
        schedule = ScheduleRepository(self.conn).get(schedule_id)
        now = self.clock()
        if schedule.end_reason(harvest.numevents, now, self._zone()) is not None:
            return None
        after = harvest.nextdate if harvest.nextdate is not None and harvest.nextdate > now else now
        return schedule.first_event(after, self._zone())

    def update_snapshot(self, name: str, expected_edition: int, *, maxobjects: int | None = None,
                        maxbytes: int | None = None, maxjobrunningtime: int | None = None,
                        previous: str | None = UNCHANGED) -> SnapshotHarvest:
        current = self.get_snapshot(name)
        values: dict[str, Any] = {}
        for what, value in (("maxobjects", maxobjects), ("maxbytes", maxbytes)):
            check_limit(what, value)
            if value is not None:
                values[what] = value
        if maxjobrunningtime is not None:
            if maxjobrunningtime < 0:
                raise ValidationError(phrase(N_("maxjobrunningtime must be 0 (no limit) or more, not %(value)s"),
                                             value=maxjobrunningtime))
            values["maxjobrunningtime"] = maxjobrunningtime
        if previous is not UNCHANGED:
            previoushd = None if previous is None else self.get_snapshot(previous).harvest_id
            if previoushd == current.harvest_id:
                raise ValidationError(phrase(N_("snapshot %(name)s cannot continue itself"), name=repr(name)))
            values["previoushd"] = previoushd
        self._update(name, expected_edition, {})
        self._update_detail(current.harvest_id, s.fullharvests, values)
        return self.get_snapshot(name)

    # ------------------------------------------------------------ configurations of a selective harvest
    def _add_config_ids(self, harvest_id: int, config_ids: Iterable[int]) -> None:
        config_ids = list(dict.fromkeys(config_ids))
        present = set(self.conn.scalars(select(s.harvest_configs.c.config_id).where(
            s.harvest_configs.c.harvest_id == harvest_id)))
        for config_id in config_ids:
            if config_id in present:
                continue
            self.conn.execute(insert(s.harvest_configs).values(harvest_id=harvest_id, config_id=config_id))
            record_audit(self.conn, self.actor, "harvest_configs", f"{harvest_id}:{config_id}", "insert", None,
                         {"harvest_id": harvest_id, "config_id": config_id})
        # a configuration a harvest names is used from now on
        self.conn.execute(delete(s.unused_configurations).where(
            s.unused_configurations.c.config_id.in_(config_ids)))

    def add_configurations(self, name: str, configurations: Iterable[tuple[str, str | None]],
                           expected_edition: int) -> SelectiveHarvest:
        """Add (domain, configuration name) pairs; a None name means the domain's default configuration.

        Every pair is looked up before anything is written: RefusedLinesError names each one that names no
        configuration (its 1-based number in ``configurations``, the pair as ``domain/configuration``, and
        why: no such domain, or no such configuration of it), and nothing is added."""
        current = self.get_selective(name)
        config_ids = []
        refusals: list[LineRefusal] = []
        for number, (domain, config_name) in enumerate(configurations, start=1):
            try:
                config = (self._configurations.default_of(domain) if config_name is None
                          else self._configurations.get(domain, config_name))
            except (NotFoundError, ValidationError) as exc:
                given = domain if config_name is None else f"{domain}/{config_name}"
                refusals.append(LineRefusal.of(number, given, _unknown_configuration(exc, domain, config_name)))
                continue
            config_ids.append(config.config_id)
        if refusals:
            raise RefusedLinesError(phrase(N_("configurations of harvest %(name)s"), name=current.name), refusals,
                                    "configurations")
        self._update(name, expected_edition, {})
        self._add_config_ids(current.harvest_id, config_ids)
        return self.get_selective(name)

    def remove_configuration(self, name: str, domain: str, config_name: str, expected_edition: int
                             ) -> SelectiveHarvest:
        """Take a domain configuration out of the harvest (NetarchiveSuite's "remove config").

        The configuration stays with its domain; if no harvest names it any more and it is not the
        domain's default, it counts as unused again. NotFoundError if the harvest does not name the
        configuration; StaleEditionError if the harvest moved on from ``expected_edition``.
        """
        current = self.get_selective(name)
        config = self._configurations.get(domain, config_name)
        hc = s.harvest_configs
        if not self.conn.scalar(select(exists().where(hc.c.harvest_id == current.harvest_id,
                                                      hc.c.config_id == config.config_id))):
            raise NotFoundError("configuration of harvest definition", f"{name}: {domain}/{config_name}")
        self._update(name, expected_edition, {})
        self.conn.execute(delete(hc).where(hc.c.harvest_id == current.harvest_id, hc.c.config_id == config.config_id))
        record_audit(self.conn, self.actor, "harvest_configs", f"{current.harvest_id}:{config.config_id}", "delete",
                     {"harvest_id": current.harvest_id, "config_id": config.config_id}, None)
        recheck_unused(self.conn, [config.domain_id])
        return self.get_selective(name)

    # ------------------------------------------------------------ event harvests
    def _free_name(self, domain_id: int, base: str) -> str:
        """``base`` if neither a configuration nor a seed list of the domain has it, else timestamp-suffixed."""
        def taken(candidate: str) -> bool:
            return bool(self.conn.scalar(select(exists().where(
                s.configurations.c.domain_id == domain_id, s.configurations.c.name == candidate)))) or bool(
                self.conn.scalar(select(exists().where(
                    s.seedlists.c.domain_id == domain_id, s.seedlists.c.name == candidate))))

        if not taken(base):
            return base
        # NetarchiveSuite appends the time in milliseconds; a counter settles two calls in one millisecond.
        stamped = f"{base}_{int(self.clock().timestamp() * 1000)}"
        candidate, number = stamped, 1
        while taken(candidate):
            number += 1
            candidate = f"{stamped}_{number}"
        return candidate

    def add_seeds(self, name: str, seeds: str | Iterable[str], template: str, expected_edition: int, *,
                  maxbytes: int = -1, maxobjects: int = -1, maxrate: int | None = None,
                  attributes: Mapping[str, int] | None = None) -> list[DomainConfiguration]:
        """NetarchiveSuite's event harvest form: turn seeds into per-domain configurations of this harvest.

        Every seed is checked (harvestdef.seeds.check_event_seeds) before anything is written;
        RefusedLinesError names every refused line. Each configuration made gets the crawl ``attributes``
        (stored values by EAV type name, harvestdef.crawlattributes; a type not given: its default), as
        NetarchiveSuite's form saves them per configuration. Returns the configurations made, one per domain.
        """
        harvest = self.get_selective(name)
        check_limit("maxbytes", maxbytes)
        check_limit("maxobjects", maxobjects)
        check_limit("maxrate", maxrate)
        if not self.conn.scalar(select(s.ordertemplates.c.isactive).where(s.ordertemplates.c.name == template)):
            raise NotFoundError("active template", template)
        checked = check_event_seeds(seeds, self.valid_seed_regex, self.destinations)
        if checked.refusals:
            raise RefusedLinesError(phrase(N_("seeds of harvest %(name)s"), name=harvest.name), checked.refusals,
                                    "seeds")
        by_domain = checked.by_domain
        if not by_domain:
            raise ValidationError(phrase(N_("no seeds given")))
        self._update(name, expected_edition, {})
        base = event_config_name(harvest.name, template, maxbytes, maxobjects)
        made: list[DomainConfiguration] = []
        for domain_name, domain_seeds in by_domain.items():
            domain, _ = self._domains.get_or_create(domain_name)
            config_name = self._free_name(domain.domain_id, base)
            seedlist = self._seedlists.create(domain.name, config_name, domain_seeds, domain.edition)
            made.append(self._configurations.create(
                domain.name, config_name, template, [seedlist.seedlist_id], domain.edition + 1,
                maxobjects=maxobjects, maxbytes=maxbytes, maxrate=maxrate, crawl_attributes=attributes or {}))
        self._add_config_ids(harvest.harvest_id, [config.config_id for config in made])
        return made
