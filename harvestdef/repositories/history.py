"""Harvest history: historyinfo rows from a job's domain report, and the two summaries kept beside them.

``HistoryWriter.record_job`` turns a final report into one historyinfo row per domain configuration of
the job (NetarchiveSuite's LegacyHarvestReport): a configuration whose domain is missing from the report
gets a row with nothing harvested and the report's default stop reason, so a domain that produced
nothing still carries on into the next snapshot step (NetarchiveSuite drops it). In the same
transaction it writes the companion rows of harvest_findings, one per configuration that got nothing
(the report's finding with its reason from crawl.log; a configuration with no object that the report does
not explain, as from a controller that speaks message schema 1.0, is flagged "no object harvested"), and
updates

* harvest_run_summary: per harvest run (harvest_id, harvest_num) the jobs done and failed, objects,
  bytes, novel and duplicate figures, configurations per stop reason and configurations that got nothing;
* config_history_summary: per configuration its newest row and its best row by the rule of the
  expected-size estimate (NetarchiveSuite's DomainHistory.getBestHarvestInfoExpectation: newest first,
  most objects, the older row on ties, nothing older than the newest DOWNLOAD_COMPLETE row).

Both are kept incrementally, which is exact for rows written in time order (as status intake does).
A ``HistoryBatch`` gathers the rows and run totals of every job that ends in one transaction and writes
them together at its end: one INSERT of historyinfo, the configuration summaries (in config_id order),
and one update per harvest run. Taking each shared run row once, last and in key order, keeps two
transactions that end jobs of the same runs from waiting on each other in a cycle.
``rebuild_summaries`` computes them again from historyinfo and jobs, for history written by other
means (imports, NetarchiveSuite data, benchmarks), streaming historyinfo in one ordered pass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, bindparam, case, delete, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite

from harvestdef import messages
from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql
from harvestdef.db.types import utcnow
from harvestdef.messages import NothingHarvested
from harvestdef.model.status import JobStatus, StopReason

log = logging.getLogger(__name__)

UNLIMITED = -1
_STOP_COLUMNS = {reason: f"stop_{reason.name.lower()}" for reason in StopReason}
_STOP_BY_ORDINAL = {int(reason): column for reason, column in _STOP_COLUMNS.items()}


def _at_most(limit: int, bound: int | None) -> bool:
    """limit <= bound where -1 (or None) is infinite: NetarchiveSuite's compareInf(limit, bound) <= 0."""
    if bound is None or bound == UNLIMITED:
        return True
    if limit == UNLIMITED:
        return False
    return limit <= bound


def legacy_stop_reason(reason: StopReason, bytes_received: int, config_maxbytes: int, config_maxobjects: int,
                       job_maxbytes: int | None, job_maxobjects: int | None) -> StopReason:
    """The stop reason stored for a configuration (NetarchiveSuite's LegacyHarvestReport): a quota hit is
    the configuration's own when its limit is the one that bound, i.e. it is not above the job's."""
    if reason == StopReason.SIZE_LIMIT and config_maxbytes != UNLIMITED and (
            _at_most(config_maxbytes, job_maxbytes) or config_maxbytes <= bytes_received):
        return StopReason.CONFIG_SIZE_LIMIT
    if reason == StopReason.OBJECT_LIMIT and config_maxobjects != UNLIMITED and _at_most(
            config_maxobjects, job_maxobjects):
        return StopReason.CONFIG_OBJECT_LIMIT
    return reason


@dataclass(frozen=True)
class DomainFigures:
    """What a job harvested for one domain (the scheduler's view of a DomainStats line)."""

    objects: int
    bytes: int
    stop_reason: StopReason
    novel_objects: int | None = None
    novel_bytes: int | None = None
    duplicate_objects: int | None = None
    duplicate_bytes: int | None = None
    nothing_harvested: NothingHarvested | None = None


NO_OBJECT = NothingHarvested(messages.NO_OBJECT)
NOT_IN_REPORT = NothingHarvested(messages.NOT_IN_REPORT)


def finding_of(figures: DomainFigures) -> NothingHarvested | None:
    """The finding stored for a configuration: the report's, else "no object harvested" when it has none."""
    if figures.nothing_harvested is not None:
        return figures.nothing_harvested
    return NO_OBJECT if figures.objects == 0 else None


class JobFigures(Protocol):
    """What history needs to know of a job: a ``Job``, or a row read back when its status changed."""

    job_id: int
    harvest_id: int
    harvest_num: int
    forcemaxbytes: int
    forcemaxcount: int | None


class HistoryBatch:
    """The historyinfo rows and run totals of the jobs that end in one transaction, written by ``flush``."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.findings: list[dict[str, Any] | None] = []  # the harvest_findings row of each row, or None
        self.runs: dict[tuple[int, int], dict[str, Any]] = {}

    def add(self, job: JobFigures, final_status: JobStatus, rows: list[dict[str, Any]],
            findings: list[NothingHarvested | None] | None = None, replaces_failed: bool = False) -> None:
        """Add a job's historyinfo rows and, in the same order, each one's finding (None: it got something),
        and its count to its run's totals; ``replaces_failed``: the job was counted FAILED before (a job
        failed by an archive store outage, DONE now), so that count is taken back."""
        findings = findings if findings is not None else [None] * len(rows)
        self.rows.extend(rows)
        self.findings.extend(
            None if finding is None else {"job_id": row["job_id"], "config_id": row["config_id"],
                                          "harvest_id": row["harvest_id"], "harvest_num": job.harvest_num,
                                          "reason": finding.reason[:2000], "fetch_status": finding.fetch_status,
                                          "seed": finding.seed, "other_seeds_failed": finding.other_seeds_failed}
            for row, finding in zip(rows, findings, strict=True))
        totals = self.runs.get((job.harvest_id, job.harvest_num))
        if totals is None:
            totals = self.runs[(job.harvest_id, job.harvest_num)] = {
                "harvest_id": job.harvest_id, "harvest_num": job.harvest_num, "jobs_done": 0, "jobs_failed": 0,
                "configurations": 0, "objects": 0, "bytes": 0, "novel_objects": 0, "novel_bytes": 0,
                "duplicate_objects": 0, "duplicate_bytes": 0, **dict.fromkeys(_STOP_COLUMNS.values(), 0),
                "nothing_harvested": 0}
        totals["jobs_done"] += int(final_status == JobStatus.DONE)
        totals["jobs_failed"] += int(final_status == JobStatus.FAILED) - int(replaces_failed)
        totals["configurations"] += len(rows)
        totals["nothing_harvested"] += sum(finding is not None for finding in findings)
        for row in rows:
            totals["objects"] += row["objectcount"]
            totals["bytes"] += row["bytecount"]
            for name in ("novel_objects", "novel_bytes", "duplicate_objects", "duplicate_bytes"):
                totals[name] += row[name] or 0
            totals[_STOP_COLUMNS[StopReason(row["stopreason"])]] += 1

    def flush(self, conn: Connection) -> None:
        """Write what was added, into the caller's transaction; call it last before the commit (it takes
        the runs' summary rows, which every transaction ending a job of the run waits for)."""
        rows, self.rows = self.rows, []
        findings, self.findings = self.findings, []
        runs, self.runs = self.runs, {}
        ids: list[int] = []
        if rows:
            h = s.historyinfo
            if is_postgresql(conn.engine) or len(rows) == 1:
                ids = list(conn.scalars(insert(h).returning(h.c.historyinfo_id, sort_by_parameter_order=True), rows))
            else:
                for row in rows:
                    ids.append(conn.execute(insert(h).values(row)).inserted_primary_key[0])
        finding_rows = [{**finding, "historyinfo_id": historyinfo_id}
                        for finding, historyinfo_id in zip(findings, ids, strict=True) if finding is not None]
        if finding_rows:
            conn.execute(insert(s.harvest_findings), finding_rows)
        _add_to_config_summary(conn, rows, ids)
        now = utcnow()
        for key in sorted(runs):
            conn.execute(_summary_upsert(conn, "run"), [{**runs[key], "updated_at": now}])


class HistoryWriter:
    """Writes a job's history and its summaries into the caller's transaction: at once, or into the
    transaction's ``HistoryBatch`` when given one."""

    def __init__(self, conn: Connection, batch: HistoryBatch | None = None) -> None:
        self.conn = conn
        self.batch = batch

    def record_job(self, job: JobFigures, final_status: JobStatus, default_stop_reason: StopReason | None,
                   domains: Mapping[str, DomainFigures] | None, harvest_time: datetime | None = None,
                   replaces_failed: bool = False) -> int:
        """Write the job's historyinfo rows (none when ``domains`` is None: a failed job without a
        report) and update both summaries; returns the number of rows written. Without a batch, call it
        last in the transaction: it ends by updating the run's summary row, which concurrent jobs of the
        run wait for. ``replaces_failed``: see ``HistoryBatch.add``."""
        harvest_time = harvest_time or utcnow()
        rows: list[dict[str, Any]] = []
        findings: list[NothingHarvested | None] = []
        if domains is not None:
            default = default_stop_reason if default_stop_reason is not None else StopReason.DOWNLOAD_UNFINISHED
            configs = self.conn.execute(_JOB_CONFIGS, {"job_id": job.job_id})
            for config_id, domain, maxbytes, maxobjects in configs:
                figures = domains.get(domain) or DomainFigures(0, 0, default, 0, 0, 0, 0, NOT_IN_REPORT)
                findings.append(finding_of(figures))
                reason = legacy_stop_reason(figures.stop_reason, figures.bytes, maxbytes, maxobjects,
                                            job.forcemaxbytes, job.forcemaxcount)
                rows.append({
                    "stopreason": int(reason), "objectcount": figures.objects, "bytecount": figures.bytes,
                    "config_id": config_id, "harvest_id": job.harvest_id, "job_id": job.job_id,
                    "harvest_time": harvest_time, "novel_objects": figures.novel_objects,
                    "novel_bytes": figures.novel_bytes, "duplicate_objects": figures.duplicate_objects,
                    "duplicate_bytes": figures.duplicate_bytes})
        if self.batch is not None:
            self.batch.add(job, final_status, rows, findings, replaces_failed)
        else:
            batch = HistoryBatch()
            batch.add(job, final_status, rows, findings, replaces_failed)
            batch.flush(self.conn)
        return len(rows)


_JOB_CONFIGS = (
    select(s.configurations.c.config_id, s.domains.c.name, s.configurations.c.maxbytes, s.configurations.c.maxobjects)
    .select_from(s.job_configs.join(s.configurations, s.configurations.c.config_id == s.job_configs.c.config_id)
                 .join(s.domains, s.domains.c.domain_id == s.configurations.c.domain_id))
    .where(s.job_configs.c.job_id == bindparam("job_id")).order_by(s.configurations.c.config_id))


def _add_to_config_summary(conn: Connection, rows: list[dict[str, Any]], ids: list[int]) -> None:
    """Fold the rows (in the order written) into config_history_summary. One INSERT … ON CONFLICT may
    touch a row once only, so a configuration that comes twice (two runs' jobs ending together) goes into
    a second statement after the first."""
    layers: list[list[dict[str, Any]]] = []
    seen: dict[int, int] = {}
    for row, historyinfo_id in zip(rows, ids, strict=True):
        layer = seen[row["config_id"]] = seen.get(row["config_id"], -1) + 1
        if layer == len(layers):
            layers.append([])
        layers[layer].append({
            "config_id": row["config_id"], "latest_historyinfo_id": historyinfo_id,
            "latest_harvest_id": row["harvest_id"], "latest_job_id": row["job_id"],
            "latest_harvest_time": row["harvest_time"], "latest_stopreason": row["stopreason"],
            "latest_objectcount": row["objectcount"], "latest_bytecount": row["bytecount"],
            "best_historyinfo_id": historyinfo_id, "best_stopreason": row["stopreason"],
            "best_objectcount": row["objectcount"], "best_bytecount": row["bytecount"],
        })
    for summary_rows in layers:
        summary_rows.sort(key=lambda row: row["config_id"])  # row locks in one order in every transaction
        for start in range(0, len(summary_rows), 1000):
            conn.execute(_summary_upsert(conn, "config"), summary_rows[start:start + 1000])


_summary_upserts: dict[tuple[str, str], Any] = {}


def _summary_upsert(conn: Connection, which: str) -> Any:
    """The INSERT … ON CONFLICT that adds to a run's summary (``run``) or folds a row into a configuration's
    (``config``), built once per dialect: building it cost more than running it."""
    key = (conn.engine.dialect.name, which)
    statement = _summary_upserts.get(key)
    if statement is not None:
        return statement
    dialect_insert = postgresql.insert if is_postgresql(conn.engine) else sqlite.insert
    if which == "run":
        table = s.harvest_run_summary
        statement = dialect_insert(table)
        added = ["jobs_done", "jobs_failed", "configurations", "objects", "bytes", "novel_objects", "novel_bytes",
                 "duplicate_objects", "duplicate_bytes", *_STOP_COLUMNS.values(), "nothing_harvested"]
        statement = statement.on_conflict_do_update(
            index_elements=["harvest_id", "harvest_num"],
            set_={**{name: table.c[name] + statement.excluded[name] for name in added},
                  "updated_at": statement.excluded.updated_at})
    else:
        table = s.config_history_summary
        statement = dialect_insert(table)
        excluded = statement.excluded
        complete = int(StopReason.DOWNLOAD_COMPLETE)
        # The newest row becomes the best unless an older one (already folded into best_*) has at least
        # as many objects; a complete newest row ends the fold there (as NetarchiveSuite's
        # DomainHistory.getBestHarvestInfoExpectation does).
        newest_wins = (excluded.latest_stopreason == complete) | (
            table.c.best_objectcount < excluded.latest_objectcount)
        values = {f"latest_{name}": excluded[f"latest_{name}"]
                  for name in ("historyinfo_id", "harvest_id", "job_id", "harvest_time", "stopreason",
                               "objectcount", "bytecount")}
        for name in ("historyinfo_id", "stopreason", "objectcount", "bytecount"):
            values[f"best_{name}"] = case((newest_wins, excluded[f"best_{name}"]), else_=table.c[f"best_{name}"])
        statement = statement.on_conflict_do_update(index_elements=["config_id"], set_=values)
    _summary_upserts[key] = statement
    return statement


def rebuild_summaries(conn: Connection, batch_size: int = 10_000,
                      progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Compute harvest_run_summary and config_history_summary again from historyinfo and jobs, in the
    caller's transaction; returns (runs, configurations). historyinfo is streamed once, in order."""
    h, j, f = s.historyinfo, s.jobs, s.harvest_findings
    conn.execute(delete(s.harvest_run_summary))
    conn.execute(delete(s.config_history_summary))
    now = utcnow()
    runs: dict[tuple[int, int], dict[str, Any]] = {}

    def run(harvest_id: int, harvest_num: int) -> dict[str, Any]:
        key = (harvest_id, harvest_num)
        if key not in runs:
            runs[key] = {"harvest_id": harvest_id, "harvest_num": harvest_num, "jobs_done": 0, "jobs_failed": 0,
                         "configurations": 0, "objects": 0, "bytes": 0, "novel_objects": 0, "novel_bytes": 0,
                         "duplicate_objects": 0, "duplicate_bytes": 0, **dict.fromkeys(_STOP_COLUMNS.values(), 0),
                         "nothing_harvested": 0, "updated_at": now}
        return runs[key]

    for harvest_id, harvest_num, status, count in conn.execute(
            select(j.c.harvest_id, j.c.harvest_num, j.c.status, func.count())
            .where(j.c.status.in_([int(JobStatus.DONE), int(JobStatus.FAILED)]))
            .group_by(j.c.harvest_id, j.c.harvest_num, j.c.status)):
        run(harvest_id, harvest_num)["jobs_done" if status == JobStatus.DONE else "jobs_failed"] += count

    query = (select(h.c.config_id, h.c.historyinfo_id, h.c.harvest_id, h.c.job_id, h.c.harvest_time,
                    h.c.stopreason, h.c.objectcount, h.c.bytecount, h.c.novel_objects, h.c.novel_bytes,
                    h.c.duplicate_objects, h.c.duplicate_bytes, j.c.harvest_num,
                    f.c.historyinfo_id.label("finding"))
             .select_from(h.outerjoin(j, j.c.job_id == h.c.job_id)
                          .outerjoin(f, f.c.historyinfo_id == h.c.historyinfo_id))
             .order_by(h.c.config_id, h.c.harvest_time.desc(), h.c.harvest_id.desc(), h.c.historyinfo_id.desc()))
    summaries: list[dict[str, Any]] = []
    current: int | None = None
    settled = False
    configurations = 0
    result = conn.execute(query, execution_options={"stream_results": True, "yield_per": batch_size})
    for row in result:
        if row.harvest_num is not None:
            totals = run(row.harvest_id, row.harvest_num)
            totals["configurations"] += 1
            totals["objects"] += row.objectcount
            totals["bytes"] += row.bytecount
            for name in ("novel_objects", "novel_bytes", "duplicate_objects", "duplicate_bytes"):
                totals[name] += getattr(row, name) or 0
            if row.stopreason in _STOP_BY_ORDINAL:
                totals[_STOP_BY_ORDINAL[row.stopreason]] += 1
            totals["nothing_harvested"] += row.finding is not None
        if row.config_id != current:
            if len(summaries) >= batch_size:
                conn.execute(insert(s.config_history_summary), summaries)
                summaries.clear()
            current, settled = row.config_id, False
            configurations += 1
            if progress is not None and configurations % 100_000 == 0:
                progress(configurations)
            summaries.append({
                "config_id": row.config_id, "latest_historyinfo_id": row.historyinfo_id,
                "latest_harvest_id": row.harvest_id, "latest_job_id": row.job_id,
                "latest_harvest_time": row.harvest_time, "latest_stopreason": row.stopreason,
                "latest_objectcount": row.objectcount, "latest_bytecount": row.bytecount,
                "best_historyinfo_id": row.historyinfo_id, "best_stopreason": row.stopreason,
                "best_objectcount": row.objectcount, "best_bytecount": row.bytecount})
        elif not settled and row.objectcount >= summaries[-1]["best_objectcount"]:
            summaries[-1].update(best_historyinfo_id=row.historyinfo_id, best_stopreason=row.stopreason,
                                 best_objectcount=row.objectcount, best_bytecount=row.bytecount)
        settled = settled or row.stopreason == StopReason.DOWNLOAD_COMPLETE
    result.close()
    if summaries:
        conn.execute(insert(s.config_history_summary), summaries)
    run_rows = list(runs.values())
    for start in range(0, len(run_rows), 1000):
        conn.execute(insert(s.harvest_run_summary), run_rows[start:start + 1000])
    return len(runs), configurations

