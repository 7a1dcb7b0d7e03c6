"""After the crawl: post-process a job directory, store its files in the archive store, report to the scheduler.

The steps of reference §6 (design.md §The flow, step 8), each guarded on its own so that one failing step
skips none of the others, and every failure is listed in the report:

1. close WARC files a killed crawler left open (``*.open``), keeping every complete record, and bring that
   launch's crawl.log (every launch's, when the crawl failed) into agreement with its WARCs (``reconcile``),
   so the domain report counts what the archive holds;
2. a sorted CDXJ index per WARC (``cdxj/<warc>.cdxj``), each WARC guarded on its own, records it could
   index only in part named in the errors;
3. the job's deduplication entries (``dedup/<job_id>.gz``);
4. the metadata WARC (``metadata/<name>``);
5. the domain report from crawl.log and progress-statistics.log;
6. every file stored in the archive store (temporary name, fsync, checksum verified, rename), then
   SHA256SUMS: one operation with one backoff schedule for the whole job (harvester/upload.py);
7. DONE, or FAILED when the crawl failed or a file could not be stored, sent with the report and errors.

A job whose files could not all be stored stays in serverDir, marked as reported (``reported.json``):
the controller retries it between jobs and at its next start (or ``harvestsuite harvester
upload-leftovers`` does), each time one pass over the files not stored yet, and only once all are
stored moves the directory to oldjobs. A job that failed only because the store failed (an outage: the
crawl went well) is reported FAILED with ``store_outage``, and once its files are stored it is reported
again, DONE with the same report (kept in ``reported.json``): the scheduler then records it DONE with its
history. Stored WARCs are deleted from the job directory once verified in the store; logs, reports and
indexes move to oldjobs with the directory.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harvestdef import __version__
from harvestdef.archive import ArchiveStore
from harvestdef.dedup import DedupIndex, entries_name, write_entries
from harvestdef.messages import CrawlStatus, MessageError, decode, encode
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.settings import Settings
from harvester.jobdir import (
    CRAWLER_BEANS,
    DEDUP_INDEX,
    HARVEST_INFO,
    METADATA_DIR,
    SEEDS,
    CrawlOutcome,
    JobDirectory,
)
from harvester.postprocess.cdxj import CdxjIndexResult, write_cdxj
from harvester.postprocess.dedupentries import extract_dedup_entries
from harvester.postprocess.domainreport import build_domain_report
from harvester.postprocess.metadata import MetadataInfo, metadata_file_name, write_metadata_warc
from harvester.postprocess.reconcile import UNARCHIVED_LOG, Reconciliation, reconcile_crawl_log
from harvester.postprocess.warcfiles import close_open_warc
from harvester.protocol import SchedulerLink
from harvester.upload import JobUpload, UploadOptions, UploadResult

REPORTED = "reported.json"
CDXJ_DIR = "cdxj"
WARC_SUFFIXES = (".warc.gz", ".warc")
# Reference §6.1: Heritrix files that go into the metadata WARC.
SETUP_FILES = (CRAWLER_BEANS, SEEDS, HARVEST_INFO)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinishOptions:
    oldjobs_dir: Path
    organization: str
    collection: str | None        # the metadata file's prefix (metadataFileNameFormat = prefix), else None
    upload: UploadOptions = UploadOptions()
    crawler_version: str = f"HarvestSuite engine {__version__}"


class PostProcessor:
    """``wait(seconds)`` sleeps between upload passes and returns True to give up (a stop requested)."""

    def __init__(self, options: FinishOptions, store: ArchiveStore,
                 wait: Callable[[float], bool] | None = None) -> None:
        self.options = options
        self.store = store
        self.wait = wait or _sleep

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

    # ------------------------------------------------------------------ the files of a job
    @staticmethod
    def warc_files(jobdir: JobDirectory) -> list[Path]:
        """Closed WARC files of every launch, oldest launch first."""
        found = []
        for launch in jobdir.launch_directories():
            warcs = launch / "warcs"
            if warcs.is_dir():
                found += sorted(p for p in warcs.iterdir() if p.is_file() and p.name.endswith(WARC_SUFFIXES))
        return found

    @staticmethod
    def _launch_files(jobdir: JobDirectory, subdirectory: str, suffixes: tuple[str, ...]) -> Iterator[Path]:
        for launch in jobdir.launch_directories():
            directory = launch / subdirectory
            if directory.is_dir():
                yield from sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(suffixes))

    # ------------------------------------------------------------------ the steps
    def finish(self, jobdir: JobDirectory, link: SchedulerLink) -> JobStatus:
        """Post-process, store and report the job; returns the status reported."""
        reported = self._reported(jobdir)
        if reported is not None:
            log.info("job %d was reported %s earlier; storing what is left", jobdir.job.job_id, reported.name)
            self.store_leftover(jobdir, link, passes=1)
            return reported
        job = jobdir.job
        outcome = jobdir.outcome or CrawlOutcome(failed=True, errors=["the crawl's outcome was not recorded"])
        errors: list[str] = list(outcome.errors)

        def step(name: str, work) -> object:
            try:
                return work()
            except Exception as exc:  # noqa: BLE001 - every step is guarded on its own (design.md step 8)
                log.exception("job %d: post-processing step %r failed", job.job_id, name)
                errors.append(f"{name} failed: {exc}")
                return None

        killed_launches = step("closing open WARC files", lambda: self._close_open_warcs(jobdir)) or []
        if outcome.failed:
            # A controller that died between closing and reconciling left no open file to tell by; reconciling
            # a launch that agrees already changes nothing.
            killed_launches = jobdir.launch_directories()
        for launch in killed_launches:
            reconciled = step("reconciling crawl.log with the WARC files",
                              lambda launch=launch: self._reconcile(launch))
            if reconciled is not None and reconciled.changed:
                errors.append(f"crawl.log of {launch.name} did not agree with its WARC files (the crawler was "
                              f"killed): {reconciled.unarchived_lines} lines without records moved to "
                              f"{UNARCHIVED_LOG}, {reconciled.recovered_lines} lines made from records")
        warcs = self.warc_files(jobdir)
        if not warcs:
            errors.append("no WARC files were written")
        for warc in warcs:  # each WARC guarded on its own: one that cannot be read takes no other index down
            indexed = step(f"CDXJ indexing of {warc.name}", lambda warc=warc: self._write_cdxj(jobdir, warc))
            if indexed is not None and indexed.problems:
                errors.append(f"CDXJ indexing of {warc.name}: {len(indexed.problems)} records indexed without "
                              f"their payload's details: {'; '.join(indexed.problems[:3])}")
        step("extracting deduplication entries", lambda: self._write_dedup_entries(jobdir, warcs))
        step("writing the metadata WARC", lambda: self._write_metadata(jobdir, warcs))
        result = step("the domain report", lambda: self._domain_report(jobdir, outcome))
        report = result.report if result is not None else None
        upload = self._store_all(jobdir)
        upload_errors = upload.errors()
        status = JobStatus.FAILED if outcome.failed or upload_errors else JobStatus.DONE
        # Only an outage of a job that would be DONE is reported again once stored: the scheduler turns
        # such a FAILED job DONE, and no other.
        store_outage = upload.is_outage and not outcome.failed and report is not None
        harvest_errors = "; ".join(errors)
        message = CrawlStatus(job_id=job.job_id, attempt_id=job.attempt_id, controller_id=link.controller_id,
                              status=status, domain_report=report, harvest_errors=harvest_errors[:4000],
                              harvest_error_details=harvest_errors, upload_errors="; ".join(upload_errors)[:4000],
                              upload_error_details="\n".join(upload_errors), store_outage=store_outage)
        link.send_status(message)
        log.info("job %d reported %s%s", job.job_id, status.name, f": {'; '.join(errors + upload_errors)}"
                 if errors or upload_errors else "")
        second = None
        if store_outage:
            second = CrawlStatus(job_id=job.job_id, attempt_id=job.attempt_id, controller_id=link.controller_id,
                                 status=JobStatus.DONE, domain_report=report, harvest_errors=harvest_errors[:4000],
                                 harvest_error_details=harvest_errors, store_outage=True)
        self._mark_reported(jobdir, status, upload_errors, second)
        if upload.is_complete:
            self._move(jobdir)
        return status

    def _close_open_warcs(self, jobdir: JobDirectory) -> list[Path]:
        """Close the WARC files a killed crawler left open; the launches that had any."""
        killed = []
        for launch in jobdir.launch_directories():
            warcs = launch / "warcs"
            if not warcs.is_dir():
                continue
            for path in sorted(warcs.glob("*.open")):
                closed = close_open_warc(path)
                log.warning("job %d: WARC file %s was left open by the crawler: %s", jobdir.job.job_id, path.name,
                            f"closed as {closed.name}" if closed else "nothing complete in it")
                if launch not in killed:
                    killed.append(launch)
        return killed

    @staticmethod
    def _reconcile(launch: Path) -> Reconciliation | None:
        """Reconcile the launch's crawl.log with its WARCs; None for a launch without WARC files (its crawler
        wrote none, with its writer off or killed before a first whole record): nothing to say it against."""
        directory = launch / "warcs"
        warcs = sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(WARC_SUFFIXES)) \
            if directory.is_dir() else []
        return reconcile_crawl_log(launch / "logs" / "crawl.log", warcs) if warcs else None

    @staticmethod
    def _write_cdxj(jobdir: JobDirectory, warc: Path) -> CdxjIndexResult:
        out = jobdir.path / CDXJ_DIR
        out.mkdir(exist_ok=True)
        return write_cdxj(warc, out / f"{warc.name}.cdxj")

    def _write_dedup_entries(self, jobdir: JobDirectory, warcs: list[Path]) -> None:
        path = jobdir.path / entries_name(jobdir.job.job_id)
        path.parent.mkdir(exist_ok=True)
        # the index the crawl read tells where the originals of its revisits are stored
        count = write_entries(path, extract_dedup_entries(warcs, jobdir.path / DEDUP_INDEX))
        log.info("job %d: %d deduplication entries", jobdir.job.job_id, count)

    def _write_metadata(self, jobdir: JobDirectory, warcs: list[Path]) -> Path:
        job = jobdir.job
        index_jobs: tuple[int, ...] | None = None
        missing: tuple[int, ...] | None = None
        if job.metadata.deduplication_job_ids is not None:
            requested = tuple(job.metadata.deduplication_job_ids)
            index_jobs, missing = requested, ()
            index_file = jobdir.path / DEDUP_INDEX
            if index_file.is_file():
                with DedupIndex(index_file) as index:
                    index_jobs, missing = tuple(index.job_ids), tuple(index.missing_job_ids)
            elif requested:
                index_jobs, missing = (), requested
        info = MetadataInfo(job_id=job.job_id, harvest_id=job.harvest_id, harvest_num=job.harvest_num,
                            organization=self.options.organization, heritrix_version=self.options.crawler_version,
                            software_version=__version__, aliases=list(job.metadata.aliases),
                            deduplication_job_ids=index_jobs, deduplication_job_ids_left_out=missing or ())
        setup = [jobdir.path / name for name in SETUP_FILES if (jobdir.path / name).is_file()]
        reports = list(self._launch_files(jobdir, "reports", ("-report.txt",)))
        logs = list(self._launch_files(jobdir, "logs", (".log", ".out")))
        if (jobdir.path / "job.log").is_file():
            logs.append(jobdir.path / "job.log")
        out = jobdir.path / METADATA_DIR / metadata_file_name(job.job_id, job.harvest_id, self.options.collection)
        out.parent.mkdir(exist_ok=True)
        return write_metadata_warc(out, info, setup, reports, logs, warcs)

    def _domain_report(self, jobdir: JobDirectory, outcome: CrawlOutcome):
        launches = jobdir.launch_directories()
        crawl_logs = [launch / "logs" / "crawl.log" for launch in launches]
        progress = launches[-1] / "logs" / "progress-statistics.log" if launches else None
        forced = StopReason.DOWNLOAD_UNFINISHED if (outcome.stalled or outcome.failed) else None
        result = build_domain_report(crawl_logs, progress, jobdir.job.domain_configurations,
                                     forced_stop_reason=forced)
        if result.domains_outside_job:
            log.info("job %d: crawl.log holds %d domains outside the job (e.g. %s); left out of its report",
                     jobdir.job.job_id, result.domains_outside_job, ", ".join(result.outside_examples))
        if result.invalid_lines:
            log.warning("job %d: %d invalid crawl.log lines skipped", jobdir.job.job_id, result.invalid_lines)
        return result

    # ------------------------------------------------------------------ storing
    def _files_to_store(self, jobdir: JobDirectory) -> list[tuple[Path, str]]:
        """(local file, name in the store) of everything the job leaves in the archive."""
        files = [(path, path.name) for path in self.warc_files(jobdir)]
        metadata = jobdir.path / METADATA_DIR
        if metadata.is_dir():
            files += [(p, p.name) for p in sorted(metadata.iterdir()) if p.is_file() and p.name.endswith(WARC_SUFFIXES)]
        cdxj = jobdir.path / CDXJ_DIR
        if cdxj.is_dir():
            files += [(p, f"{CDXJ_DIR}/{p.name}") for p in sorted(cdxj.iterdir()) if p.name.endswith(".cdxj")]
        dedup = jobdir.path / entries_name(jobdir.job.job_id)
        if dedup.is_file():
            files.append((dedup, entries_name(jobdir.job.job_id)))
        return files

    def _store_all(self, jobdir: JobDirectory, passes: int | None = None) -> UploadResult:
        """Store every file not stored yet, as one operation with one backoff schedule of ``passes`` passes
        (default: uploadRetries); the WARCs leave the harvester once all is stored and verified."""
        job = jobdir.job
        upload = JobUpload(self.store, job.harvest_id, job.job_id, jobdir.path, self._files_to_store(jobdir),
                           self.options.upload, self.wait)
        result = upload.run(passes)
        if result.is_complete:
            for path in self.warc_files(jobdir):
                path.unlink()
        return result

    def store_leftover(self, jobdir: JobDirectory, link: SchedulerLink | None, passes: int | None = None) -> bool:
        """Store what a reported job could not store before; True (and moved to oldjobs) once all is stored.

        A job reported FAILED because of a store outage is then reported again, DONE (through ``link``;
        without one the directory stays, stored, until a controller sends that report at its start)."""
        result = self._store_all(jobdir, passes)
        if not result.is_complete:
            log.error("job %d: %d of %d files are still not stored; they stay in %s: %s", jobdir.job.job_id,
                      result.files - result.stored, result.files, jobdir.path, "; ".join(result.errors()))
            return False
        second = self._second_report(jobdir)
        if second is not None:
            if link is None:
                log.warning("job %d: all files stored; its DONE report is sent by the controller at its next start",
                            jobdir.job.job_id)
                return False
            link.send_status(second)
            log.info("job %d: all files stored after an archive store outage; reported again as DONE",
                     jobdir.job.job_id)
        self._move(jobdir)
        return True

    def _move(self, jobdir: JobDirectory) -> None:
        target = jobdir.move_to(self.options.oldjobs_dir)
        log.info("job %d: job directory moved to %s", jobdir.job.job_id, target)

    @staticmethod
    def _reported(jobdir: JobDirectory) -> JobStatus | None:
        try:
            return JobStatus[json.loads((jobdir.path / REPORTED).read_text(encoding="utf-8"))["status"]]
        except (FileNotFoundError, KeyError, ValueError):
            return None

    @staticmethod
    def _second_report(jobdir: JobDirectory) -> CrawlStatus | None:
        """The DONE report kept for a job FAILED by a store outage, to be sent once its files are stored."""
        try:
            kept = json.loads((jobdir.path / REPORTED).read_text(encoding="utf-8")).get("second_report")
        except (FileNotFoundError, ValueError):
            return None
        if not kept:
            return None
        try:
            message = decode(kept.encode("utf-8"), (CrawlStatus,))
        except MessageError as exc:
            log.error("job %d: the DONE report kept in %s is unreadable (%s); the job stays FAILED",
                      jobdir.job.job_id, jobdir.path / REPORTED, exc)
            return None
        assert isinstance(message, CrawlStatus)
        return message

    @staticmethod
    def _mark_reported(jobdir: JobDirectory, status: JobStatus, upload_errors: list[str],
                       second_report: CrawlStatus | None = None) -> None:
        kept = encode(second_report).decode("utf-8") if second_report is not None else None
        temporary = jobdir.path / f".{REPORTED}.tmp"
        temporary.write_text(json.dumps({"status": status.name, "upload_errors": upload_errors,
                                         "second_report": kept}), encoding="utf-8")
        os.replace(temporary, jobdir.path / REPORTED)

    def pending_uploads(self, jobdir: JobDirectory) -> bool:
        return self._reported(jobdir) is not None


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False
