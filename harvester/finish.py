"""After the crawl: post-process a job directory, store its files in the archive store, and say what to report.

The post-processing steps (docs/harvester.md, Post-processing), each guarded on its own so that one failing step
skips none of the others, and every failure is listed in the report:

1. close WARC files a killed crawler left open (``*.open``), keeping every complete record, and bring that
   launch's crawl.log (every launch's, when the crawl failed) into agreement with its WARCs (``reconcile``),
   so the domain report counts what the archive holds;
2. a sorted CDXJ index per WARC (``cdxj/<warc>.cdxj``), each WARC guarded on its own, records it could
   index only in part named in the errors;
3. the job's deduplication entries (``dedup/<job_id>.gz``);
4. the job's QA report (``qa-report.json``, harvester/postprocess/qa.py), then the metadata WARC
   (``metadata/<name>``), which carries it: a job whose QA report failed still gets its metadata WARC;
5. the domain report from crawl.log and progress-statistics.log;
6. every file stored in the archive store (temporary name, fsync, checksum verified, rename), then
   SHA256SUMS: one operation with one backoff schedule for the whole job (harvester/upload.py);
7. DONE, or FAILED when the crawl failed or a file could not be stored, with the report and errors: the
   ``JobReport`` that ``finish`` returns. The controller sends its message (it alone sends what a
   controller tells the scheduler), then hands it back to ``reported``, which keeps it in the job
   directory and moves the directory to oldjobs once every file is stored. In that order: a controller
   that dies between the two sends the report again at its next start, and the scheduler takes a repeat
   as one, where the other order could leave a job never reported.

A job whose files could not all be stored stays in serverDir, marked as reported (``reported.json``):
the controller retries it between jobs and at its next start (or ``harvestsuite harvester
upload-leftovers`` does), each time one pass over the files not stored yet (``store_leftover``), and
only once all are stored moves the directory to oldjobs. A job that failed only because the store failed
(an outage: the crawl went well) is reported FAILED with ``store_outage``, and once its files are stored
it is reported again, DONE with the same report (kept in ``reported.json``): the scheduler then records
it DONE with its history. Stored WARCs are deleted from the job directory once verified in the store;
logs, reports and indexes move to oldjobs with the directory. Where each of these files lives is
harvester/jobdir.py's to say.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestdef import __version__
from harvestdef.archive import ArchiveStore
from harvestdef.dedup import DedupIndex
from harvestdef.dedup.partitions import write_partitioned
from harvestdef.errors import HarvestSuiteError
from harvestdef.files import write_atomically
from harvestdef.messages import (
    ERROR_DETAILS_LIMIT,
    ERROR_SUMMARY_LIMIT,
    CrawlEnd,
    CrawlStatus,
    DomainReport,
    HandledChange,
    MessageError,
    QaSummary,
    clip,
)
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.settings import Settings
from harvester.engine.config import load_crawl_config
from harvester.heritrix3.layout import PRIMARY_CONFIG
from harvester.jobdir import CrawlOutcome, JobDirectory, Launch
from harvester.postprocess.cdxj import CdxjIndexResult, write_cdxj
from harvester.postprocess.dedupentries import extract_dedup_entries
from harvester.postprocess.domainreport import build_domain_report
from harvester.postprocess.metadata import MetadataInfo, metadata_file_name, write_metadata_warc
from harvester.postprocess.qa import QaReport, build_qa_report, operator_rules
from harvester.postprocess.reconcile import UNARCHIVED_LOG, Reconciliation, reconcile_crawl_log
from harvester.postprocess.warcfiles import close_open_warc
from harvester.upload import JobUpload, UploadOptions, UploadResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinishOptions:
    oldjobs_dir: Path
    organization: str
    collection: str | None        # the metadata file's prefix (metadataFileNameFormat = prefix), else None
    upload: UploadOptions = UploadOptions()
    crawler_version: str = f"HarvestSuite engine {__version__}"


@dataclass(frozen=True)
class JobReport:
    """What post-processing has to tell the scheduler about one job; the controller sends ``message``, then
    hands the report to ``PostProcessor.reported``.

    ``status``: the job's status as reported, now or earlier. ``message``: the CrawlStatus to send now;
    None when there is nothing to send (a job reported earlier whose files are still not all stored).
    ``is_stored``: every file is in the archive store, so the directory goes to oldjobs once ``message`` is
    sent. ``upload_errors`` and ``second_report`` go with a job's first report into its directory:
    ``second_report`` is the DONE report of a job FAILED only by an archive store outage, sent once all its
    files are stored.
    """

    status: JobStatus
    message: CrawlStatus | None
    is_stored: bool
    upload_errors: tuple[str, ...] = ()
    second_report: CrawlStatus | None = None


#: The stop reasons of a domain whose crawl ended at an object or byte limit, its harvest's or its
#: configuration's: a budget, not a fault of the crawl.
BUDGET_STOP_REASONS = frozenset({StopReason.OBJECT_LIMIT, StopReason.SIZE_LIMIT, StopReason.CONFIG_OBJECT_LIMIT,
                                 StopReason.CONFIG_SIZE_LIMIT})

class PostProcessor:
    """``wait(seconds)`` sleeps between upload passes and returns True to give up (a stop requested);
    ``on_upload(seconds)``, if set, is told how long each upload of a job's files took."""

    def __init__(self, options: FinishOptions, store: ArchiveStore,
                 wait: Callable[[float], bool] | None = None) -> None:
        self.options = options
        self.store = store
        self.wait = wait or _sleep
        self.on_upload: Callable[[float], None] | None = None

    @classmethod
    def from_settings(cls, settings: Settings, store: ArchiveStore) -> PostProcessor:
        h = settings.harvester
        server_dir = Path(h.serverDir).resolve()
        oldjobs = Path(h.oldjobsDir)
        collection = settings.jobgen.collectionName if h.metadataFileNameFormat == "prefix" else None
        crawler = f"HarvestSuite engine {__version__}" if not h.heritrixUrl else "Heritrix 3"
        return cls(FinishOptions(oldjobs_dir=oldjobs if oldjobs.is_absolute() else server_dir / oldjobs,
                                 organization=h.organization, collection=collection,
                                 upload=UploadOptions(passes=h.uploadRetries, first_delay=h.uploadRetryDelay,
                                                      max_delay=h.uploadRetryMaxDelay),
                                 crawler_version=crawler), store)

    # ------------------------------------------------------------------ the steps
    def finish(self, jobdir: JobDirectory, controller_id: str) -> JobReport:
        """Post-process the job and store its files; returns what ``controller_id`` is to report.

        A job reported earlier (a controller that stopped after its report) is not post-processed again:
        one more pass stores what is left (``store_leftover``)."""
        reported = jobdir.reported_status
        if reported is not None:
            log.info("job %d was reported %s earlier; storing what is left", jobdir.job.job_id, reported.name)
            return self.store_leftover(jobdir, passes=1)
        job = jobdir.job
        outcome = jobdir.outcome or CrawlOutcome(failed=True, errors=["the crawl's outcome was not recorded"])
        errors: list[str] = list(outcome.errors)

        def step(name: str, work) -> object:
            try:
                return work()
            except Exception as exc:  # noqa: BLE001 - every step is guarded on its own
                log.exception("job %d: post-processing step %r failed", job.job_id, name)
                errors.append(f"{name} failed: {exc}")
                return None

        killed_launches = step("closing open WARC files", lambda: self._close_open_warcs(jobdir)) or []
        if outcome.failed:
            # A controller that died between closing and reconciling left no open file to tell by; reconciling
            # a launch that agrees already changes nothing.
            killed_launches = jobdir.launches()
        for launch in killed_launches:
            reconciled = step("reconciling crawl.log with the WARC files",
                              lambda launch=launch: self._reconcile(launch))
            if reconciled is not None and reconciled.changed:
                errors.append(f"crawl.log of {launch.name} did not agree with its WARC files (the crawler was "
                              f"killed): {reconciled.unarchived_lines} lines without records moved to "
                              f"{UNARCHIVED_LOG}, {reconciled.recovered_lines} lines made from records")
        warcs = jobdir.warc_files()
        if not warcs:
            errors.append("no WARC files were written")
        for warc in warcs:  # each WARC guarded on its own: one that cannot be read takes no other index down
            indexed = step(f"CDXJ indexing of {warc.name}", lambda warc=warc: self._write_cdxj(jobdir, warc))
            if indexed is not None and indexed.problems:
                errors.append(f"CDXJ indexing of {warc.name}: {len(indexed.problems)} records indexed without "
                              f"their payload's details: {'; '.join(indexed.problems[:3])}")
        step("extracting deduplication entries", lambda: self._write_dedup_entries(jobdir, warcs))
        # the domain report first: the QA report counts what a domain's limit kept out as excluded, not missing
        result = step("the domain report", lambda: self._domain_report(jobdir, outcome))
        report = result.report if result is not None else None
        limited = [row.domain for row in report.domains if row.stop_reason in BUDGET_STOP_REASONS] if report else []
        qa_report = step("the QA report", lambda: self._write_qa_report(jobdir, warcs, limited))
        step("writing the metadata WARC", lambda: self._write_metadata(jobdir, warcs, qa_report))
        upload = self._store_all(jobdir)
        upload_errors = upload.errors()
        status = JobStatus.FAILED if outcome.failed or upload_errors else JobStatus.DONE
        # Only an outage of a job that would be DONE is reported again once stored: the scheduler turns
        # such a FAILED job DONE, and no other.
        store_outage = upload.is_outage and not outcome.failed and report is not None
        qa_summary = qa_report.summary if isinstance(qa_report, QaReport) else None
        message = _crawl_status(jobdir, controller_id, status, report, errors, upload_errors, store_outage,
                                qa_summary)
        log.info("job %d ends %s%s", job.job_id, status.name, f": {'; '.join(errors + upload_errors)}"
                 if errors or upload_errors else "")
        second = None
        if store_outage:
            second = _crawl_status(jobdir, controller_id, JobStatus.DONE, report, errors, store_outage=True,
                                   qa_summary=qa_summary)
        return JobReport(status, message, upload.is_complete, tuple(upload_errors), second)

    def _close_open_warcs(self, jobdir: JobDirectory) -> list[Launch]:
        """Close the WARC files a killed crawler left open; the launches that had any."""
        killed = []
        for launch in jobdir.launches():
            for path in launch.open_warc_files():
                closed = close_open_warc(path)
                log.warning("job %d: WARC file %s was left open by the crawler: %s", jobdir.job.job_id, path.name,
                            f"closed as {closed.name}" if closed else "nothing complete in it")
                if launch not in killed:
                    killed.append(launch)
        return killed

    @staticmethod
    def _reconcile(launch: Launch) -> Reconciliation | None:
        """Reconcile the launch's crawl.log with its WARCs; None for a launch without WARC files (its crawler
        wrote none, with its writer off or killed before a first whole record): nothing to say it against."""
        warcs = launch.warc_files()
        return reconcile_crawl_log(launch.crawl_log, warcs) if warcs else None

    @staticmethod
    def _write_cdxj(jobdir: JobDirectory, warc: Path) -> CdxjIndexResult:
        out = jobdir.cdxj_index(warc)
        out.parent.mkdir(exist_ok=True)
        return write_cdxj(warc, out)

    def _write_dedup_entries(self, jobdir: JobDirectory, warcs: list[Path]) -> None:
        path = jobdir.dedup_entries
        path.parent.mkdir(exist_ok=True)
        # the index the crawl read tells where the originals of its revisits are stored
        entries = extract_dedup_entries(warcs, jobdir.dedup_index)
        fields = ((e.digest, e.url, e.date, e.record_id, e.warc_file, e.warc_offset) for e in entries)
        summary = write_partitioned(fields, path, jobdir.dedup_directory, jobdir.job.domain_configurations)
        log.info("job %d: %d deduplication entries over %d domains, %d payloads under several domains",
                 jobdir.job.job_id, summary.entries, summary.domains, summary.shared)

    @staticmethod
    def _write_qa_report(jobdir: JobDirectory, warcs: list[Path], limited_domains: list[str]) -> QaReport:
        job = jobdir.job
        started = time.monotonic()
        # what the operators' live changes and the template's traps kept out is excluded, not missing
        rules = operator_rules(jobdir.live_changes(), _template_traps(jobdir))
        report = build_qa_report(job.job_id, job.harvest_id, job.seeds,
                                 [launch.crawl_log for launch in jobdir.launches()], warcs,
                                 job.domain_configurations, work_dir=jobdir.path, rules=rules,
                                 limited_domains=limited_domains)
        write_atomically(jobdir.qa_report, report.to_json().encode("utf-8"))
        log.info("job %d: QA report in %.1f s: %d of %d seeds not captured, %d missing resources on %d pages",
                 job.job_id, time.monotonic() - started, report.seeds_not_captured, report.seeds_total,
                 report.missing_resources, report.pages_with_missing_resources)
        return report

    def _write_metadata(self, jobdir: JobDirectory, warcs: list[Path], qa_report: QaReport | None = None) -> Path:
        job = jobdir.job
        index_jobs: tuple[int, ...] | None = None
        missing: tuple[int, ...] | None = None
        if job.metadata.deduplication_job_ids is not None:
            requested = tuple(job.metadata.deduplication_job_ids)
            index_jobs, missing = requested, ()
            if jobdir.dedup_index.is_file():
                with DedupIndex(jobdir.dedup_index) as index:
                    index_jobs, missing = tuple(index.job_ids), tuple(index.missing_job_ids)
            elif requested:
                index_jobs, missing = (), requested
        info = MetadataInfo(job_id=job.job_id, harvest_id=job.harvest_id, harvest_num=job.harvest_num,
                            organization=self.options.organization, heritrix_version=self.options.crawler_version,
                            software_version=__version__, aliases=list(job.metadata.aliases),
                            deduplication_job_ids=index_jobs, deduplication_job_ids_left_out=missing or (),
                            live_changes=[c for c in jobdir.live_changes() if c.get("state") == "applied"],
                            qa_report=jobdir.qa_report if qa_report is not None else None)
        launches = jobdir.launches()
        reports = [path for launch in launches for path in launch.reports()]
        logs = [path for launch in launches for path in launch.logs()]
        if jobdir.job_log.is_file():
            logs.append(jobdir.job_log)
        out = jobdir.metadata_warc(metadata_file_name(job.job_id, job.harvest_id, self.options.collection))
        out.parent.mkdir(exist_ok=True)
        return write_metadata_warc(out, info, jobdir.setup_files(), reports, logs, warcs)

    def _domain_report(self, jobdir: JobDirectory, outcome: CrawlOutcome):
        launches = jobdir.launches()
        crawl_logs = [launch.crawl_log for launch in launches]
        progress = launches[-1].progress_log if launches else None
        forced = StopReason.DOWNLOAD_UNFINISHED if (outcome.stalled or outcome.stopped or outcome.failed) else None
        result = build_domain_report(crawl_logs, progress, jobdir.job.domain_configurations,
                                     forced_stop_reason=forced)
        if result.domains_outside_job:
            log.info("job %d: crawl.log holds %d domains outside the job (e.g. %s); left out of its report",
                     jobdir.job.job_id, result.domains_outside_job, ", ".join(result.outside_examples))
        if result.invalid_lines:
            log.warning("job %d: %d invalid crawl.log lines skipped", jobdir.job.job_id, result.invalid_lines)
        return result

    # ------------------------------------------------------------------ storing
    def _store_all(self, jobdir: JobDirectory, passes: int | None = None) -> UploadResult:
        """Store every file not stored yet, as one operation with one backoff schedule of ``passes`` passes
        (default: uploadRetries); the WARCs leave the harvester once all is stored and verified."""
        job = jobdir.job
        upload = JobUpload(self.store, job.harvest_id, job.job_id, jobdir.upload_ledger, jobdir.files_to_store(),
                           self.options.upload, self.wait)
        started = time.monotonic()
        result = upload.run(passes)
        if self.on_upload is not None:
            self.on_upload(time.monotonic() - started)
        if result.is_complete:
            for path in jobdir.warc_files():
                path.unlink()
        return result

    def store_leftover(self, jobdir: JobDirectory, passes: int | None = None) -> JobReport:
        """Store what a reported job could not store before; ``is_stored`` in the answer once all is stored.

        A job reported FAILED because of a store outage is then to be reported again, DONE: that report is
        the answer's ``message``."""
        status = jobdir.reported_status
        if status is None:
            raise HarvestSuiteError(f"job {jobdir.job.job_id} in {jobdir.path} was not reported yet: it is "
                                    f"post-processed first")
        result = self._store_all(jobdir, passes)
        if not result.is_complete:
            log.error("job %d: %d of %d files are still not stored; they stay in %s: %s", jobdir.job.job_id,
                      result.files - result.stored, result.files, jobdir.path, "; ".join(result.errors()))
            return JobReport(status, None, is_stored=False)
        return JobReport(status, jobdir.kept_second_report(), is_stored=True)

    def reported(self, jobdir: JobDirectory, report: JobReport) -> None:
        """``report``'s message was sent: keep a first report in the job directory, so it is not made again,
        and move the directory to oldjobs once every file is stored."""
        if jobdir.reported_status is None:
            jobdir.mark_reported(report.status, list(report.upload_errors), report.second_report)
        if report.is_stored:
            target = jobdir.move_to(self.options.oldjobs_dir)
            log.info("job %d: job directory moved to %s", jobdir.job.job_id, target)

    def pending_uploads(self, jobdir: JobDirectory) -> bool:
        return jobdir.reported_status is not None


def _template_traps(jobdir: JobDirectory) -> list[str]:
    """The crawler traps of the job's crawl template: the regexes of its scope's REJECT regex rules. A
    template that cannot be read gives none (the QA report then counts what they kept out as missing), as
    its crawl would have failed at its start."""
    path = jobdir.path / PRIMARY_CONFIG
    if not path.is_file():
        return []
    try:
        config = load_crawl_config(path, jobdir.path)
    except (HarvestSuiteError, OSError, ValueError) as exc:
        log.warning("job %d: the crawler traps of %s could not be read for the QA report: %s", jobdir.job.job_id,
                    path, exc)
        return []
    return [pattern for rule in config.scope_rules if rule.decision == "REJECT"
            and rule.kind in ("MatchesListRegexDecideRule", "MatchesRegexDecideRule") for pattern in rule.patterns]


# A budget of the whole crawl -> the CrawlLimitEnforcer property that holds its limit
_BUDGET_LIMITS = {"max_objects": "max_documents_download", "max_bytes": "max_bytes_download",
                  "max_running_time": "max_time_seconds"}


def _crawl_end(jobdir: JobDirectory, end: dict[str, Any] | None) -> CrawlEnd | None:
    """The report's CrawlEnd from the outcome's ``end``; a budget the crawler ended at without saying its
    limit gets it from the job's crawler-beans (0 when they cannot be read). None for an outcome without an
    end or with one that is not a CrawlEnd (an outcome.json edited by hand): the crawl's end then goes
    unsaid rather than the job's report unsent."""
    if end is None:
        return None
    values = {name: end[name] for name in ("cause", "at", "user", "change", "limit") if name in end}
    if values.get("cause") in _BUDGET_LIMITS and not values.get("limit"):
        try:
            config = load_crawl_config(jobdir.path / PRIMARY_CONFIG, jobdir.path)
            values["limit"] = max(0, int(getattr(config, _BUDGET_LIMITS[values["cause"]])))
        except (HarvestSuiteError, OSError, ValueError) as exc:
            log.warning("job %d: the limit of its %s could not be read: %s", jobdir.job.job_id, values["cause"], exc)
    try:
        return CrawlEnd(**values)
    except (MessageError, TypeError) as exc:
        log.warning("job %d: the crawl's end %r is left out of its report: %s", jobdir.job.job_id, end, exc)
        return None


def _crawl_status(jobdir: JobDirectory, controller_id: str, status: JobStatus, report: DomainReport | None,
                  harvest_errors: list[str], upload_errors: list[str] | None = None,
                  store_outage: bool = False, qa_summary: QaSummary | None = None) -> CrawlStatus:
    """A final CrawlStatus of the job, its error texts cut to the contract's limits, with how the crawl
    ended when that was asked for (the outcome's ``end``)."""
    harvest = "; ".join(harvest_errors)
    upload = upload_errors or []
    outcome = jobdir.outcome
    return CrawlStatus(job_id=jobdir.job.job_id, attempt_id=jobdir.job.attempt_id, controller_id=controller_id,
                       status=status, domain_report=report, harvest_errors=clip(harvest, ERROR_SUMMARY_LIMIT),
                       harvest_error_details=clip(harvest, ERROR_DETAILS_LIMIT),
                       upload_errors=clip("; ".join(upload), ERROR_SUMMARY_LIMIT),
                       upload_error_details=clip("\n".join(upload), ERROR_DETAILS_LIMIT), store_outage=store_outage,
                       qa_summary=qa_summary, live_changes=_handled_changes(jobdir),
                       crawl_end=_crawl_end(jobdir, outcome.end if outcome is not None else None))


def _handled_changes(jobdir: JobDirectory) -> list[HandledChange]:
    """The live changes the controller handled, as it answered them (changes.jsonl), for the final report."""
    handled = []
    for entry in jobdir.live_changes():
        try:
            handled.append(HandledChange(version=int(entry["version"]), state=str(entry["state"]),
                                         reason=clip(str(entry.get("reason", "")), ERROR_SUMMARY_LIMIT),
                                         happened_at=str(entry["happened_at"])))
        except (KeyError, TypeError, ValueError):
            log.warning("job %d: a line of %s is not a handled change; left out of the report: %r",
                        jobdir.job.job_id, jobdir.live_changes_file.name, entry)
    return handled


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False
