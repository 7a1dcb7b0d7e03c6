"""Jobs: the one place that writes job rows and changes their status (docs/architecture.md, Job states).

``new_job_row`` is the one definition of a job row; job generation's bulk path and a resubmission both
use it. Job ids come from the database (``allocate_job_ids``): the sequence jobs_job_id_seq on PostgreSQL,
max(job_id)+1 on SQLite, where the caller's transaction holds the write lock (``write_transaction``), so
two generations at once never collide.

``JobRepository.change_status`` is the only way a status changes. It asks the transition table of
harvestdef.model.status, then updates with ``WHERE job_id = :id AND status = :from AND attempt_id IS NOT
DISTINCT FROM :attempt``: a compare-and-set, so of two parties acting on one job only the first changes
it, and a message of a stale attempt changes nothing (StaleJobError says what the job is now). Further
conditions (``where``) narrow the compare-and-set, and a date may be written as never before the job's
other dates (``NotBefore``): what it came to is read back with ``RETURNING`` for the audit row, so a
caller that knows what to expect changes a job in one statement without reading it first.

A repository given an ``AuditBatch`` leaves its audit rows there for the owner of the transaction to
write in one INSERT before it commits (the scheduler's intake, many changes per transaction).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, bindparam, case, func, insert, select, text, update

from harvestdef.crawltemplate import renumbered
from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql
from harvestdef.db.types import utcnow
from harvestdef.errors import JobStillCrawlingError, NotFoundError, StaleJobError, ValidationError
from harvestdef.model.controllers import LostControllerRule, last_sign_of_life
from harvestdef.model.jobs import Job
from harvestdef.model.status import JobStatus, JobTransitionReason, can_change_job_status, check_job_transition
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.audit import AuditBatch
from harvestdef.repositories.base import SYSTEM_ACTOR, record_audit
from harvestdef.repositories.hearing import read_hearing
from harvestdef.times import utc_text

_DOCUMENT_COLUMNS = ("orderxmldoc", "seedlist")
_LIST_COLUMNS = [c for c in s.jobs.c if c.name not in _DOCUMENT_COLUMNS]


def new_job_row(*, job_id: int, harvest_id: int, channel: str, snapshot: bool, orderxml: str, harvest_num: int,
                creationdate: datetime, forcemaxbytes: int = -1, forcemaxcount: int | None = None,
                forcemaxrunningtime: int | None = None, orderxmldoc: str = "", seedlist: str = "",
                num_configs: int = 0, harvestname_prefix: str | None = None, expected_objects: int | None = None,
                continuationof: int | None = None) -> dict[str, Any]:
    """A NEW job's row, every NOT NULL column filled; the one definition of what a new job holds."""
    return {
        "job_id": job_id, "harvest_id": harvest_id, "status": int(JobStatus.NEW), "channel": channel,
        "snapshot": snapshot, "forcemaxbytes": forcemaxbytes, "forcemaxcount": forcemaxcount,
        "forcemaxrunningtime": forcemaxrunningtime, "orderxml": orderxml, "orderxmldoc": orderxmldoc,
        "seedlist": seedlist, "harvest_num": harvest_num, "creationdate": creationdate,
        "num_configs": num_configs, "edition": 1, "harvestname_prefix": harvestname_prefix,
        "expected_objects": expected_objects, "continuationof": continuationof, "interrupted": False,
    }


def allocate_job_ids(conn: Connection, count: int, next_job_id_setting: int = 0) -> list[int]:
    """``count`` new job ids, ascending, never given out before.

    PostgreSQL: from the sequence, first moved past max(job_id) and the nextJobId setting if rows came in
    by other means (a restore, a NetarchiveSuite import). SQLite: max(job_id)+1 onwards; the caller's
    transaction must hold the write lock (``harvestdef.db.engine.write_transaction``).
    """
    if count <= 0:
        return []
    highest = conn.scalar(select(func.max(s.jobs.c.job_id))) or 0
    floor = max(highest, next_job_id_setting - 1)
    if not is_postgresql(conn.engine):
        return list(range(floor + 1, floor + 1 + count))
    last, called = conn.execute(text("SELECT last_value, is_called FROM jobs_job_id_seq")).one()
    if (last if called else last - 1) < floor:
        conn.execute(text("SELECT setval('jobs_job_id_seq', :floor, true)"), {"floor": floor})
    return list(conn.scalars(text("SELECT nextval('jobs_job_id_seq') FROM generate_series(1, :n) ORDER BY 1"),
                             {"n": count}))


def _to_job(row: Mapping[str, Any]) -> Job:
    values = dict(row)
    values["status"] = JobStatus(values["status"])
    values["interrupted"] = bool(values.get("interrupted"))
    values["store_failed"] = bool(values.get("store_failed"))
    for name in _DOCUMENT_COLUMNS:
        values[name] = values.get(name) or ""
    return Job(**values)


def _audit_values(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: (int(value) if isinstance(value, JobStatus) else value) for key, value in values.items()}


@dataclass(frozen=True)
class NotBefore:
    """A value for a date column: ``when``, or the latest of the row's ``columns`` (dates) if one is later;
    NULL columns are passed over. A date written so is in order with the job's others whatever the clocks
    of the processes that wrote them. ``change_status`` reads back what it came to, for the audit row."""

    when: datetime
    columns: tuple[str, ...]


def not_before(when: datetime, *columns: str) -> NotBefore:
    return NotBefore(when, columns)


NOT_NULL = object()  # in ``change_status``'s ``where``: the column IS NOT NULL

_status_updates: dict[tuple[Any, ...], Any] = {}


def _status_update(key: tuple[Any, ...]) -> Any:
    """The UPDATE of ``change_status`` for one shape of call, built once: the intake changes thousands of
    jobs a minute the same few ways, and building and caching-keying the statement each time cost more
    than running it. Every value is a bound parameter (``w_`` conditions, ``v_`` values)."""
    statement = _status_updates.get(key)
    if statement is not None:
        return statement
    from_status, to_status, attempt_is_null, value_shape, where_shape, returning = key
    j = s.jobs
    conditions = [j.c.job_id == bindparam("w_job_id"), j.c.status == int(from_status),
                  j.c.attempt_id.is_(None) if attempt_is_null else j.c.attempt_id == bindparam("w_attempt_id")]
    for name, kind in where_shape:
        conditions.append(j.c[name].is_not(None) if kind == "not null" else j.c[name].is_(None) if kind == "null"
                          else j.c[name] == bindparam(f"w_{name}"))
    changes: dict[str, Any] = {"status": int(to_status)}
    for name, columns in value_shape:
        value: ColumnElement[Any] = bindparam(f"v_{name}", type_=j.c[name].type)
        for column in columns or ():
            value = case((j.c[column] > value, j.c[column]), else_=value)
        changes[name] = value
    changes["edition"] = j.c.edition + 1
    statement = update(j).where(*conditions).values(changes)
    if returning:
        statement = statement.returning(*(j.c[name] for name in returning))
    _status_updates[key] = statement
    return statement


# The grant of a claim: the attempt goes to the asking controller only while nobody holds it (scheduler.dispatch).
_GRANT = (update(s.jobs).where(s.jobs.c.job_id == bindparam("b_job_id"),
                               s.jobs.c.attempt_id == bindparam("b_attempt_id"),
                               s.jobs.c.controller.is_(None), s.jobs.c.status == int(JobStatus.SUBMITTED))
          .values(controller=bindparam("b_cid"), claimed_at=bindparam("b_now"), edition=s.jobs.c.edition + 1))
_WRITE_DOCUMENTS = (update(s.jobs).where(s.jobs.c.job_id == bindparam("b_job_id"))
                    .values(seedlist=bindparam("b_seedlist"), orderxmldoc=bindparam("b_orderxmldoc")))

_OLDEST_NEW = (select(s.jobs).where(s.jobs.c.status == int(JobStatus.NEW), s.jobs.c.channel == bindparam("channel"))
               .order_by(s.jobs.c.job_id).limit(1))
_OLDEST_NEW_PG = _OLDEST_NEW.with_for_update(of=s.jobs, skip_locked=True)


@dataclass
class HarvestRunJobs:
    """One run of a harvest as its jobs tell it: when it was made and how many jobs it has in each status."""

    harvest_num: int
    created: datetime | None
    by_status: dict[JobStatus, int]
    first_job_id: int
    last_job_id: int

    @property
    def jobs(self) -> int:
        return sum(self.by_status.values())


class JobRepository:
    """Reads jobs, writes new ones, changes their status; every change is audited."""

    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR, audit: AuditBatch | None = None) -> None:
        self.conn = conn
        self.actor = actor
        self.audit = audit

    def _record(self, job_id: int, action: str, before: Mapping[str, Any] | None,
                after: Mapping[str, Any] | None) -> None:
        if self.audit is not None:
            self.audit.record(self.actor, "jobs", job_id, action, before, after)
        else:
            record_audit(self.conn, self.actor, "jobs", job_id, action, before, after)

    # ------------------------------------------------------------------ reading
    def get(self, job_id: int, with_documents: bool = True, for_update: bool = False) -> Job:
        """The job; ``for_update`` locks its row until the transaction ends (PostgreSQL; SQLite's write
        transaction holds the whole database), so a status change decided on what was read cannot lose
        a race with another handler of the same job."""
        columns = list(s.jobs.c) if with_documents else _LIST_COLUMNS
        query = select(*columns).where(s.jobs.c.job_id == job_id)
        if for_update and is_postgresql(self.conn.engine):
            query = query.with_for_update()
        row = self.conn.execute(query).mappings().first()
        if row is None:
            raise NotFoundError("job", job_id)
        return _to_job(row)

    def find(self, job_id: int, with_documents: bool = True, for_update: bool = False) -> Job | None:
        try:
            return self.get(job_id, with_documents, for_update)
        except NotFoundError:
            return None

    def list_jobs(self, status: JobStatus | Iterable[JobStatus] | None = None, harvest_id: int | None = None,
                  channel: str | None = None, harvest_num: int | None = None, limit: int | None = None,
                  offset: int = 0, newest_first: bool = False) -> list[Job]:
        """Jobs without their template and seeds, by job id, filtered by whatever is given."""
        query = select(*_LIST_COLUMNS)
        if status is not None:
            statuses = [status] if isinstance(status, JobStatus) else list(status)
            query = query.where(s.jobs.c.status.in_([int(x) for x in statuses]))
        if harvest_id is not None:
            query = query.where(s.jobs.c.harvest_id == harvest_id)
        if harvest_num is not None:
            query = query.where(s.jobs.c.harvest_num == harvest_num)
        if channel is not None:
            query = query.where(s.jobs.c.channel == channel.upper())
        query = query.order_by(s.jobs.c.job_id.desc() if newest_first else s.jobs.c.job_id)
        if limit is not None:
            query = query.limit(limit)
        if offset:
            query = query.offset(offset)
        return [_to_job(row) for row in self.conn.execute(query).mappings()]

    def runs_of(self, harvest_id: int, limit: int = 20) -> list[HarvestRunJobs]:
        """The harvest's newest ``limit`` runs, newest first: when each was made, its jobs by status. One
        grouped read of the jobs' (harvest_id, harvest_num) index range: a run has hundreds of jobs at most."""
        j = s.jobs
        rows = self.conn.execute(
            select(j.c.harvest_num, j.c.status, func.count(), func.min(j.c.creationdate), func.min(j.c.job_id),
                   func.max(j.c.job_id))
            .where(j.c.harvest_id == harvest_id,
                   j.c.harvest_num.in_(select(j.c.harvest_num).where(j.c.harvest_id == harvest_id).distinct()
                                       .order_by(j.c.harvest_num.desc()).limit(limit).scalar_subquery()))
            .group_by(j.c.harvest_num, j.c.status)).all()
        runs: dict[int, HarvestRunJobs] = {}
        for harvest_num, status, count, created, first, last in rows:
            run = runs.setdefault(harvest_num, HarvestRunJobs(harvest_num, created, {}, first, last))
            run.by_status[JobStatus(status)] = count
            run.created = min(run.created, created) if run.created and created else run.created or created
            run.first_job_id, run.last_job_id = min(run.first_job_id, first), max(run.last_job_id, last)
        return [runs[number] for number in sorted(runs, reverse=True)]

    def oldest_new(self, channel: str, may_go: ColumnElement[bool] | None = None) -> Job | None:
        """The NEW job of ``channel`` with the lowest id, locked for the caller's transaction; on PostgreSQL
        rows another transaction holds are skipped, so two dispatchers never take the same job.
        ``may_go`` is a further condition on the jobs table (the dispatcher's: its deduplication sources are ready)."""
        postgresql = is_postgresql(self.conn.engine)
        if may_go is None:
            query = _OLDEST_NEW_PG if postgresql else _OLDEST_NEW
        else:
            query = _OLDEST_NEW.where(may_go)
            if postgresql:
                query = query.with_for_update(of=s.jobs, skip_locked=True)
        row = self.conn.execute(query, {"channel": channel}).mappings().first()
        return _to_job(row) if row is not None else None

    def configurations(self, job_id: int) -> list[dict[str, Any]]:
        """The job's domain configurations: config_id, domain, name, maxobjects, maxbytes."""
        jc, c, d = s.job_configs, s.configurations, s.domains
        rows = self.conn.execute(
            select(c.c.config_id, d.c.name.label("domain"), c.c.name, c.c.maxobjects, c.c.maxbytes)
            .select_from(jc.join(c, c.c.config_id == jc.c.config_id).join(d, d.c.domain_id == c.c.domain_id))
            .where(jc.c.job_id == job_id).order_by(d.c.name)).mappings()
        return [dict(row) for row in rows]

    # ------------------------------------------------------------------ writing
    def insert(self, rows: Sequence[Mapping[str, Any]], config_ids: Mapping[int, Sequence[int]] | None = None,
               audit: bool = True) -> None:
        """Insert rows made by ``new_job_row``, and their job_configs rows if given (job id -> config ids)."""
        for start in range(0, len(rows), 1000):
            self.conn.execute(insert(s.jobs), list(rows[start:start + 1000]))
        if config_ids:
            links = [{"job_id": job_id, "config_id": config_id}
                     for job_id, ids in config_ids.items() for config_id in ids]
            for start in range(0, len(links), 5000):
                self.conn.execute(insert(s.job_configs), links[start:start + 5000])
        if audit:
            for row in rows:
                self._record(row["job_id"], "insert", None,
                             {k: v for k, v in row.items() if k not in _DOCUMENT_COLUMNS})

    def write_documents(self, documents: Sequence[tuple[int, str, str]]) -> None:
        """Fill the seed list and the crawl template of NEW jobs just inserted: (job id, seeds, template), in
        one executemany. Not audited, as the jobs' insertion is not: the run's own audit row on the harvest
        definition records it (scheduler.jobgen)."""
        if documents:
            self.conn.execute(_WRITE_DOCUMENTS, [{"b_job_id": job_id, "b_seedlist": seeds, "b_orderxmldoc": template}
                                                 for job_id, seeds, template in documents])

    def grant_claim(self, job_id: int, attempt_id: str, controller_id: str, now: datetime) -> bool:
        """Grant the job's attempt to ``controller_id`` if the job is SUBMITTED with that attempt and nobody
        holds it: a compare-and-set on jobs.controller (NULL -> the controller), so of two controllers
        asking for one attempt exactly one is granted. True if this call granted it (audited); False
        changes nothing, and the caller reads the job to say why."""
        granted = self.conn.execute(_GRANT, {"b_job_id": job_id, "b_attempt_id": attempt_id, "b_cid": controller_id,
                                             "b_now": now}).rowcount == 1
        if granted:
            self._record(job_id, "update", {"controller": None}, {"controller": controller_id, "claimed_at": now})
        return granted

    def change_status(self, job_id: int, from_status: JobStatus, to_status: JobStatus, *,
                      attempt_id: str | None, values: Mapping[str, Any] | None = None,
                      where: Mapping[str, Any] | None = None, returning: Sequence[str] = (),
                      reason: JobTransitionReason | None = None) -> Row[Any] | None:
        """Move the job from ``from_status`` to ``to_status`` if it is still there with ``attempt_id`` and
        meets ``where`` (column name -> the value it must have; None: IS NULL; ``NOT_NULL``). A value may be
        a ``NotBefore``; what it came to is read back for the audit row, as are the ``returning``
        columns, and the row of them is returned (None when nothing is read back). ``reason`` is the one a
        transition of the table may need; it is written into the audit row.

        :raise IllegalTransitionError: the transition table forbids the change, or it needs another reason
            (nothing is read or written).
        :raise StaleJobError: the job is in another status or attempt now, or fails ``where``; nothing was
            written.
        :raise NotFoundError: no such job.
        """
        check_job_transition(job_id, from_status, to_status, reason)
        values = dict(values or {})
        where = dict(where or {})
        computed = [name for name, value in values.items() if isinstance(value, NotBefore)]
        read_back = tuple(computed + [name for name in returning if name not in computed])
        key = (from_status, to_status, attempt_id is None,
               tuple((name, value.columns if isinstance(value, NotBefore) else None)
                     for name, value in values.items()),
               tuple((name, "not null" if value is NOT_NULL else "null" if value is None else "equal")
                     for name, value in where.items()),
               read_back)
        parameters = {"w_job_id": job_id, "w_attempt_id": attempt_id,
                      **{f"w_{name}": value for name, value in where.items()
                         if value is not None and value is not NOT_NULL},
                      **{f"v_{name}": value.when if isinstance(value, NotBefore) else value
                         for name, value in values.items()}}
        result = self.conn.execute(_status_update(key), parameters)
        row: Row[Any] | None = None
        if read_back:
            row = result.first()
            changed = row is not None
        else:
            changed = result.rowcount == 1
        if not changed:
            j = s.jobs
            current = self.conn.execute(select(j.c.status, j.c.attempt_id).where(j.c.job_id == job_id)).first()
            if current is None:
                raise NotFoundError("job", job_id)
            condition = " and the further conditions" if where else ""
            raise StaleJobError(job_id, f"{from_status} with attempt {attempt_id}{condition}",
                                f"{JobStatus(current.status)} with attempt {current.attempt_id}")
        after = _audit_values({"status": int(to_status), **{
            name: (row._mapping[name] if name in computed and row is not None else value)
            for name, value in values.items()}})
        if reason is not None:
            after["reason"] = reason.name
        self._record(job_id, "update", {"status": int(from_status), "attempt_id": attempt_id}, after)
        return row

    def set_interrupted(self, job_id: int, attempt_id: str | None, interrupted: bool) -> bool:
        """Mark (or clear) a STARTED job whose controller went silent; False if the job moved on."""
        j = s.jobs
        changed = self.conn.execute(
            update(j).where(j.c.job_id == job_id, j.c.status == int(JobStatus.STARTED),
                            j.c.attempt_id.is_not_distinct_from(attempt_id), j.c.interrupted.is_(not interrupted))
            .values(interrupted=interrupted, edition=j.c.edition + 1)).rowcount == 1
        if changed:
            self._record(job_id, "update", {"interrupted": not interrupted}, {"interrupted": interrupted})
        return changed

    def resubmit(self, job_id: int, next_job_id_setting: int = 0, now: datetime | None = None,
                 reason: JobTransitionReason | None = None) -> Job:
        """NetarchiveSuite's resubmission (JobDBDAO.rescheduleJob): a copy of the job with a new id goes NEW, the old
        one becomes RESUBMITTED and names the copy. From FAILED (an operator's restart) the copy is a
        continuation of the old job. The caller makes sure no attempt of the job may still run, or, for a
        STARTED job (``reason`` CONTROLLER_LOST), that its attempt's controller is lost or has left it: that
        attempt is never granted again and its report never taken, because the job is no longer SUBMITTED or
        STARTED.

        :raise ValidationError: the transition table does not let the job's status go RESUBMITTED (with
            ``reason``).
        """
        old = self.get(job_id)
        if not can_change_job_status(old.status, JobStatus.RESUBMITTED, reason):
            raise ValidationError(phrase(N_("job %(job)s is %(status)s: only FAILED and SUBMITTED jobs, and STARTED "
                                            "jobs of a lost controller, can be resubmitted"),
                                         job=job_id, status=str(old.status)))
        now = now or utcnow()
        (new_id,) = allocate_job_ids(self.conn, 1, next_job_id_setting)
        prefix = old.harvestname_prefix
        if prefix:
            # the prefix names the job: <job>-<harvest> or <collection>-<job>-<harvest>
            parts = prefix.split("-")
            parts[-2] = str(new_id)
            prefix = "-".join(parts)
        orderxmldoc = old.orderxmldoc
        if orderxmldoc:
            orderxmldoc = renumbered(orderxmldoc, old.harvestname_prefix or f"{job_id}-{old.harvest_id}",
                                     prefix or f"{new_id}-{old.harvest_id}", new_id, now.isoformat())
        row = new_job_row(
            job_id=new_id, harvest_id=old.harvest_id, channel=old.channel, snapshot=old.snapshot,
            orderxml=old.orderxml, harvest_num=old.harvest_num, creationdate=now, forcemaxbytes=old.forcemaxbytes,
            forcemaxcount=old.forcemaxcount, orderxmldoc=orderxmldoc, seedlist=old.seedlist,
            num_configs=old.num_configs, harvestname_prefix=prefix, expected_objects=old.expected_objects,
            continuationof=job_id if old.status == JobStatus.FAILED else None)
        config_ids = list(self.conn.scalars(select(s.job_configs.c.config_id)
                                            .where(s.job_configs.c.job_id == job_id)))
        self.insert([row], {new_id: config_ids})
        self.change_status(job_id, old.status, JobStatus.RESUBMITTED, attempt_id=old.attempt_id,
                           values={"resubmitted_as_job": new_id}, reason=reason)
        return self.get(new_id)

    def restart(self, job_id: int, lost: LostControllerRule, next_job_id_setting: int = 0,
                now: datetime | None = None) -> Job:
        """An operator's restart of a FAILED job (NetarchiveSuite's "Restart"): ``resubmit``, refused while the job's
        attempt may still run, i.e. while its controller reports that attempt and is not lost (``lost``)
        (a job the timeout supervisor failed may still be crawling).

        :raise ValidationError: the job is not FAILED.
        :raise JobStillCrawlingError: its attempt still runs (a conflict that ends with that crawl).
        """
        now = now or utcnow()
        job = self.get(job_id, with_documents=False, for_update=True)
        if job.status != JobStatus.FAILED:
            raise ValidationError(phrase(N_("job %(job)s is %(status)s: only a FAILED job can be restarted"),
                                         job=job_id, status=str(job.status)))
        running = self.crawling_controller(job, lost, now)
        if running is not None:
            limit = lost.silence_limit(running.heartbeat_interval)
            raise JobStillCrawlingError(job_id, running.controller_id, utc_text(running.last_heartbeat),
                                        round(limit.total_seconds()))
        return self.resubmit(job_id, next_job_id_setting, now)

    def crawling_controller(self, job: Job, lost: LostControllerRule, now: datetime | None = None) -> Any:
        """The controller (``controller_id``, ``last_heartbeat``, ``heartbeat_interval``) that still reports
        crawling the job's current attempt and is not lost by ``lost``, or None.

        A job can be FAILED while its crawl goes on (the timeout supervisor failed a silent controller), so
        a restart asks this first: a second crawl of the same seeds would run beside the first.
        """
        h = s.harvesters
        now = now or utcnow()
        # judged as the scheduler judges it: while it is deaf to heartbeats nobody counts as lost
        hearing = read_hearing(self.conn)
        for row in self.conn.execute(select(h.c.controller_id, h.c.last_heartbeat, h.c.heartbeat_interval).where(
                h.c.current_job_id == job.job_id, h.c.current_attempt_id == job.attempt_id,
                h.c.last_heartbeat.is_not(None))):
            if not lost.is_lost(last_sign_of_life(row.last_heartbeat, None), row.heartbeat_interval, now, hearing):
                return row
        return None

    def reject(self, job_id: int) -> None:
        """FAILED -> FAILED_REJECTED: an archivist's "not to be harvested again"."""
        job = self.get(job_id, with_documents=False)
        self.change_status(job_id, JobStatus.FAILED, JobStatus.FAILED_REJECTED, attempt_id=job.attempt_id)

    def unreject(self, job_id: int) -> None:
        job = self.get(job_id, with_documents=False)
        self.change_status(job_id, JobStatus.FAILED_REJECTED, JobStatus.FAILED, attempt_id=job.attempt_id)
