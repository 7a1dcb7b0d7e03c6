"""A job's QA as the web UI shows it: the QA report post-processing wrote into the job's metadata WARC
(harvester/postprocess/qa.py makes it), and per domain the change against the same harvest's previous run.

The report is read from the stored metadata WARC in the archive store, one record, its size capped: the
web UI never reads a job directory on a harvester. The change per domain comes from historyinfo: this
job's row of each configuration against the row of the same configuration in the harvest's previous run
(harvest_num - 1), objects and bytes, flagged when either moved by more than
``harvestsuite.webui.qaChangeThreshold`` percent (the counts compared, not the rounded percentages, and
nothing against nothing is no change), and flagged as fallen to nothing when the previous run got something
and this one got no object. The job page lists the flagged ones and counts the others.

Read with direct, read-only queries of historyinfo and job_qa_summaries, as the history pages read their
statistics: figures shaped for this page, not definitions.

The report stores its findings as codes and figures (a reason, a fetch status, a rule); the page says them
in its language from those (``fetch_status`` below, the Quality section's own words), never the English
words the harvester wrote beside them for the JSON. A report of version 1 has no ``excluded`` and reads as
none excluded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from flask import Flask
from flask_babel import gettext, ngettext
from sqlalchemy import Connection, and_, func, select
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.errors import NotFoundError
from harvestdef.repositories.jobs import JobRepository
from webui.api.phrases import N_, Phrase, phrasebook

METADATA_WARC = re.compile(r"metadata-\d+\.warc(\.gz)?$")
QA_RECORD_PATH = "/crawl/reports/qa-report?"
MAX_REPORT_BYTES = 32 * 1024 * 1024  # far above a report's size: its lists are capped by the harvester


# Why a job has no QA report, by code (webui/api/phrases.py): English for the API, the job page's language there.
PHRASES = {
    "no_qa_report": N_("job %(job)s has no QA report: %(why)s"),
    "qa_not_stored": N_("its metadata WARC is not in the archive store (the job has not ended, or its files are not "
                        "stored yet)"),
    "qa_unreadable": N_("its metadata WARC %(name)s cannot be read: %(error)s"),
    "qa_too_large": N_("its qa-report record is over %(limit)s bytes"),
    "qa_not_json": N_("its qa-report record is not JSON: %(error)s"),
    "qa_no_record": N_("its metadata WARC holds no qa-report record (post-processing could not make one, or the job "
                       "was harvested before QA reports)"),
}
_say = phrasebook(PHRASES)

# crawl.log's fetch statuses in words (harvester/postprocess/crawllogreader.py's FETCH_STATUS_WORDS, which the
# JSON's English details use), marked for the catalogue so a page says them in its language
FETCH_STATUS_WORDS: dict[int, str] = {
    0: N_("never tried"), -1: N_("DNS lookup failed"), -2: N_("connection refused"), -3: N_("connection broken"),
    -4: N_("timed out"), -5: N_("runtime exception"), -6: N_("DNS lookup failed"), -7: N_("illegal URI"),
    -8: N_("retries exhausted"), -50: N_("prerequisite failed"), -60: N_("DNS prerequisite failed"),
    -61: N_("robots.txt prerequisite failed"), -62: N_("other prerequisite failed"),
    -63: N_("prerequisite unscheduled"), -404: N_("empty response"), -3000: N_("severe error"),
    -4000: N_("crawler trap"), -4001: N_("too many hops"), -4002: N_("too many transitive hops"),
    -5000: N_("out of scope"), -5001: N_("blocked by user"), -5002: N_("blocked by processor"),
    -5003: N_("over quota"), -5004: N_("runtime limit reached"), -5005: N_("destination refused"),
    -6000: N_("deleted by operator"), -7000: N_("thread killed"), -8000: N_("the browser could not load the page"),
    -9998: N_("robots.txt precluded"),
}


def fetch_status(status: int | None) -> str:
    """A crawl.log status in the page's words with its code, ``forbindelse afvist (-2)``, ``HTTP 503``; "–"
    for none."""
    if status is None:
        return "–"
    if status >= 100:
        return f"HTTP {status}"
    words = FETCH_STATUS_WORDS.get(status)
    if words is None:
        return gettext("DNS answered (%(status)s)", status=status) if status == 1 else \
            gettext("fetch status %(status)s", status=status)
    return f"{gettext(words)} ({status})"


# The findings that name no seed (harvestdef.messages.FIXED_FINDINGS), marked for the catalogue word for word
# (tests/webui/test_qa_words.py holds the two lists equal)
FIXED_FINDINGS = (
    N_("no object harvested: no seed of the domain is in crawl.log"),
    N_("no object harvested"),
    N_("no object harvested: the domain is not in the job's report"),
    N_("no object harvested (recorded before reasons were kept)"),
)


def nothing_harvested(reason: str | None, status: int | None = None, seed: str | None = None,
                      others: int | None = None) -> str:
    """Why a configuration got nothing, in the page's language, from a harvest_findings row's parts: the
    fetch status of the most telling seed, that seed and how many other seeds failed; a fixed finding by its
    words. A finding its controller gave no parts for (message schema before 1.7) is shown in the English
    it was stored in."""
    if not reason:
        return ""
    if status is None or seed is None or others is None:
        return gettext(reason) if reason in FIXED_FINDINGS else reason
    said = gettext("%(status)s for %(seed)s", status=fetch_status(status), seed=seed)
    if others:
        said += " " + ngettext("(and %(num)s other seed failed)", "(and %(num)s other seeds failed)", others)
    return said


def finding_words(result: dict[str, Any]) -> str:
    """``nothing_harvested`` of a configuration's result as the job API gives it (webui/api/jobs.py)."""
    return nothing_harvested(result["nothing_harvested_reason"], result["nothing_harvested_fetch_status"],
                             result["nothing_harvested_seed"], result["nothing_harvested_other_seeds_failed"])


def init_app(app: Flask) -> None:
    app.jinja_env.filters.update(fetch_status=fetch_status, nothing_harvested=nothing_harvested,
                                 finding_words=finding_words)


class NoQaReportError(NotFoundError):
    """A job without a QA report (yet); the message says why, and ``phrase`` says it for a page."""

    def __init__(self, job_id: int, why: Phrase) -> None:
        super().__init__("QA report of job", job_id)
        self.phrase = _say("no_qa_report", job=job_id, why=why)
        self.args = (self.phrase.english(),)

    def __str__(self) -> str:
        return self.args[0]


def metadata_warcs(store: ArchiveStore, harvest_id: int, job_id: int) -> list[Path]:
    """The job's metadata WARCs in the archive store, by name."""
    directory = store.job_path(harvest_id, job_id)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and METADATA_WARC.search(p.name))


def read_qa_report(store: ArchiveStore, harvest_id: int, job_id: int) -> dict[str, Any]:
    """The QA report of a job from its stored metadata WARC; NoQaReportError saying why there is none."""
    warcs = metadata_warcs(store, harvest_id, job_id)
    if not warcs:
        raise NoQaReportError(job_id, _say("qa_not_stored"))
    for path in warcs:
        try:
            body = _qa_record(path)
        except ArchiveLoadFailed as exc:
            raise NoQaReportError(job_id, _say("qa_unreadable", name=path.name, error=str(exc))) from exc
        if body is None:
            continue
        if len(body) > MAX_REPORT_BYTES:
            raise NoQaReportError(job_id, _say("qa_too_large", limit=MAX_REPORT_BYTES))
        try:
            report = json.loads(body)
        except ValueError as exc:
            raise NoQaReportError(job_id, _say("qa_not_json", error=str(exc))) from exc
        if isinstance(report, dict):
            return report
    raise NoQaReportError(job_id, _say("qa_no_record"))


def _qa_record(path: Path) -> bytes | None:
    """The qa-report record's content (at most one byte over the cap), None when the WARC has none."""
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream):
            url = record.rec_headers.get_header("WARC-Target-URI") or ""
            if record.rec_type == "resource" and QA_RECORD_PATH in url:
                return record.content_stream().read(MAX_REPORT_BYTES + 1)
    return None


def _change(now: int, before: int) -> float | None:
    """The change in percent, to one decimal; None when there was nothing before to compare with."""
    return None if before <= 0 else round((now - before) * 100.0 / before, 1)


def is_beyond(now: int, before: int, threshold: int) -> bool:
    """Whether ``now`` moved by more than ``threshold`` percent from ``before``, in whole numbers: neither a
    rounded figure (50.04 % is beyond 50 %, exactly 50 % is not) nor nothing against nothing counts."""
    return before > 0 and abs(now - before) * 100 > threshold * before


def domain_changes(conn: Connection, job_id: int, threshold: int) -> list[dict[str, Any]]:
    """Each configuration of the job against the same configuration in the harvest's previous run."""
    job = JobRepository(conn).get(job_id, with_documents=False)
    h, previous_h, j, c, d = (s.historyinfo, s.historyinfo.alias("previous_h"), s.jobs, s.configurations,
                              s.domains)
    previous_jobs = select(j.c.job_id).where(j.c.harvest_id == job.harvest_id,
                                             j.c.harvest_num == job.harvest_num - 1)
    rows = conn.execute(
        select(d.c.name.label("domain"), c.c.name.label("configuration"), h.c.objectcount, h.c.bytecount,
               previous_h.c.objectcount.label("previous_objects"), previous_h.c.bytecount.label("previous_bytes"))
        .select_from(h.join(c, c.c.config_id == h.c.config_id).join(d, d.c.domain_id == c.c.domain_id)
                     .outerjoin(previous_h, and_(previous_h.c.config_id == h.c.config_id,
                                                 previous_h.c.harvest_id == h.c.harvest_id,
                                                 previous_h.c.job_id.in_(previous_jobs))))
        .where(h.c.job_id == job_id).order_by(d.c.name, c.c.name)).all()
    changes = []
    for row in rows:
        entry: dict[str, Any] = {"domain": row.domain, "configuration": row.configuration,
                                 "objects": row.objectcount, "bytes": row.bytecount,
                                 "previous_objects": row.previous_objects, "previous_bytes": row.previous_bytes,
                                 "objects_change": None, "bytes_change": None, "objects_beyond": False,
                                 "bytes_beyond": False, "flagged": False, "fell_to_nothing": False}
        if row.previous_objects is not None:
            entry["objects_change"] = _change(row.objectcount, row.previous_objects)
            entry["bytes_change"] = _change(row.bytecount, row.previous_bytes)
            entry["fell_to_nothing"] = row.previous_objects > 0 and row.objectcount == 0
            entry["objects_beyond"] = is_beyond(row.objectcount, row.previous_objects, threshold)
            entry["bytes_beyond"] = is_beyond(row.bytecount, row.previous_bytes or 0, threshold)
            entry["flagged"] = entry["fell_to_nothing"] or entry["objects_beyond"] or entry["bytes_beyond"]
        changes.append(entry)
    return changes


def run_qa_sums(conn: Connection, harvest_id: int) -> dict[int, dict[str, int]]:
    """Per run of a harvest, the sums of its jobs' QA summaries (only runs with any)."""
    q = s.job_qa_summaries
    rows = conn.execute(
        select(q.c.harvest_num, func.count().label("jobs"), func.sum(q.c.seeds_total).label("seeds_total"),
               func.sum(q.c.seeds_not_captured).label("seeds_not_captured"),
               func.sum(q.c.pages_with_missing_resources).label("pages_with_missing_resources"),
               func.sum(q.c.missing_resources).label("missing_resources"))
        .where(q.c.harvest_id == harvest_id).group_by(q.c.harvest_num)).all()
    return {row.harvest_num: {"jobs": int(row.jobs), "seeds_total": int(row.seeds_total),
                              "seeds_not_captured": int(row.seeds_not_captured),
                              "pages_with_missing_resources": int(row.pages_with_missing_resources),
                              "missing_resources": int(row.missing_resources)} for row in rows}


def job_qa(conn: Connection, store: ArchiveStore, job_id: int, threshold: int) -> dict[str, Any]:
    """The job's QA: its report, and the change per domain against the previous run, with the threshold."""
    job = JobRepository(conn).get(job_id, with_documents=False)
    report = read_qa_report(store, job.harvest_id, job.job_id)
    return {"job_id": job.job_id, "harvest_id": job.harvest_id, "harvest_num": job.harvest_num,
            "report": report, "change_threshold": threshold,
            "domain_changes": domain_changes(conn, job_id, threshold)}
