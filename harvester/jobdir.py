"""A job's directory on the harvester: the controller's durable state from the moment a job is taken.

Every path and marker of a job directory is named here and nowhere else; post-processing, the controller
and the upload ask ``JobDirectory`` (and ``Launch``, for one of the crawler's launch directories).
Layout (NetarchiveSuite's job directory, with files of ours)::

    <serverDir>/<jobID>_<epochMillis>/
        job.json            the DoOneCrawl message as received: everything needed to crawl, report and store
        harvestInfo.xml     NetarchiveSuite's PersistentJobData; its presence marks an unfinished job
        seeds.txt
        crawler-beans.cxml  the job's template with the deduplication index location filled in
        dedup-index.sqlite  the deduplication index copied from the archive store (when the job has one)
        resume.json         written at shutdown when the crawl was checkpointed; removed when it resumes
        shutdown-checkpoint.json  the bundled engine's: the checkpoint it wrote at its own shutdown, once the
                            crawl had ended after it (``engine_shutdown_checkpoint``)
        outcome.json        how the crawl ended, written before post-processing starts
        changes.jsonl       the live changes the controller handled, one JSON line each, applied or refused
                            (harvester/steering.py); the applied ones go into the metadata WARC
        job.log             the crawler's log of the job (builds, launches, checkpoints)
        checkpoints/        the crawler's checkpoints, one directory each
        <launchId>/         the crawler's launch directories (14-digit UTC names), one per launch:
            logs/           crawl.log, progress-statistics.log and the crawler's other logs (*.log, *.out);
                            crawl-unarchived.log when crawl.log was reconciled with the WARC files
            warcs/          the WARC files, ``*.warc.gz.open`` while written, ``*.warc.gz`` once closed
            reports/        the crawler's ``*-report.txt`` files
        latest              the crawler's link to the newest launch (not a launch of its own)
        metadata/           the metadata WARC, once written
        qa-report.json      the job's QA report (harvester/postprocess/qa.py), also in the metadata WARC
        cdxj/               one sorted CDXJ index per WARC file, ``<warc name>.cdxj``
        dedup/              the job's deduplication entries, ``<jobID>.gz``, and their directory ``<jobID>.domains``
        stored.json         the upload's ledger: the files already stored, with their sha256 (harvester/upload.py)
        reported.json       the status sent to the scheduler, once sent; the job stays here until every file
                            is stored (harvester/finish.py)

cdxj/, dedup/ and the WARC files are stored under the same names in the job's archive-store directory
(``files_to_store``). The crawler's files (job.log, checkpoints/, the launches, latest) are Heritrix's
layout, written by a real Heritrix 3 or by the bundled engine (harvester/engine/rest/jobregistry.py) and only read here.

The directory is written under a temporary name and renamed, so a directory with a ``harvestInfo.xml``
is always complete. Nothing here opens the harvest database: it all comes from the message.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lxml import etree

from harvestdef.crawltemplate import DEDUPLICATION_INDEX_LOCATION, placeholder, template_parser
from harvestdef.dedup import entries_name
from harvestdef.dedup.partitions import directory_name
from harvestdef.errors import HarvestSuiteError
from harvestdef.files import fsync_directory, write_atomically
from harvestdef.messages import (
    HARVEST_INFO_VERSION,
    CrawlStatus,
    DoOneCrawl,
    HarvestInfo,
    MessageError,
    decode,
    encode,
)
from harvestdef.model.status import JobStatus
from harvester.heritrix3.layout import (
    CHECKPOINTS_DIR,
    CRAWL_LOG,
    JOB_LOG,
    LOGS_DIR,
    PRIMARY_CONFIG,
    PROGRESS_LOG,
    REPORT_SUFFIX,
    REPORTS_DIR,
    SEEDS,
    SHUTDOWN_CHECKPOINT,
    WARCS_DIR,
)
from harvester.postprocess.warcfiles import OPEN_SUFFIX, WARC_SUFFIXES, is_crawl_warc

HARVEST_INFO = "harvestInfo.xml"
JOB_MESSAGE = "job.json"
DEDUP_INDEX = "dedup-index.sqlite"
METADATA_DIR = "metadata"
RESUME = "resume.json"
OUTCOME = "outcome.json"
QA_REPORT = "qa-report.json"
LIVE_CHANGES = "changes.jsonl"
CDXJ_DIR = "cdxj"
CDXJ_SUFFIX = ".cdxj"
UPLOAD_LEDGER = "stored.json"
REPORTED = "reported.json"
# The job's own files that go into the metadata WARC as setup records, in this order.
SETUP_FILES = (PRIMARY_CONFIG, SEEDS, HARVEST_INFO)
LOG_SUFFIXES = (".log", ".out")
INDEX_PLACEHOLDER = placeholder(DEDUPLICATION_INDEX_LOCATION)

log = logging.getLogger(__name__)


class JobDirectoryError(HarvestSuiteError):
    """A job directory that cannot be read back; the message names the directory and the fault."""


@dataclass
class CrawlOutcome:
    """How a crawl ended, kept in outcome.json so a restart during post-processing still knows.

    ``failed``: the job must end FAILED (the crawler died, could not be driven, the crawl was
    interrupted, or an operator ended it as failed). ``stalled``: the watchdog stopped it; ``stopped``: an
    operator stopped it; in either case unfinished domains become DOWNLOAD_UNFINISHED.
    ``errors``: one line per problem, for the report's harvest errors.
    ``end``: the crawl was ended as asked, by an operator or at a budget of the whole crawl, which is no
    error: the fields of the report's CrawlEnd (``cause``, ``at``, and ``user`` and ``change`` or
    ``limit``); None otherwise, also when outcome.json has no ``end``.
    """

    failed: bool = False
    stalled: bool = False
    stopped: bool = False
    errors: list[str] = field(default_factory=list)
    end: dict[str, Any] | None = None


@dataclass(frozen=True)
class Launch:
    """One of the crawler's launch directories, ``<launchId>/``: its logs, WARC files and reports."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def crawl_log(self) -> Path:
        return self.path / LOGS_DIR / CRAWL_LOG

    @property
    def progress_log(self) -> Path:
        return self.path / LOGS_DIR / PROGRESS_LOG

    def warc_files(self) -> list[Path]:
        """The crawl's closed WARC files of this launch, sorted by name."""
        return _files(self.path / WARCS_DIR, is_crawl_warc)

    def open_warc_files(self) -> list[Path]:
        """The files the crawler left open (``*.open``), sorted by name."""
        return _files(self.path / WARCS_DIR, lambda name: name.endswith(OPEN_SUFFIX))

    def reports(self) -> list[Path]:
        """The crawler's ``*-report.txt`` files, sorted by name."""
        return _files(self.path / REPORTS_DIR, lambda name: name.endswith(REPORT_SUFFIX))

    def logs(self) -> list[Path]:
        """The crawler's logs (``*.log``, ``*.out``), sorted by name."""
        return _files(self.path / LOGS_DIR, lambda name: name.endswith(LOG_SUFFIXES))


def _files(directory: Path, wanted: Callable[[str], bool]) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and wanted(p.name))


def harvest_info_xml(job: DoOneCrawl, written_at: str) -> bytes:
    """NetarchiveSuite's PersistentJobData (v0.6) for ``job``: the file its tools look for.

    Its values are the message's, and version and jobSubmitDate those job generation fixed
    (``job.harvest_info``), so the file says what the job's WARCs say. A message without harvest info (from
    a scheduler that sends none, or for a job whose template fixed none) is still a job to crawl: the file
    then carries this harvester's version and ``written_at`` as jobSubmitDate, and a comment at its top says
    so, for whoever compares it with the WARCs.
    """
    info = job.harvest_info
    root = etree.Element("harvestInfo")
    if info is None:
        root.append(etree.Comment(" jobSubmitDate is when the harvester wrote this file: the job message "
                                  "carried no harvest info fixed at job generation "))
        info = HarvestInfo(version=HARVEST_INFO_VERSION, job_submit_date=written_at)
    values = [
        ("version", info.version), ("jobId", job.job_id), ("harvestNum", job.harvest_num),
        ("origHarvestDefinitionID", job.harvest_id), ("maxBytesPerDomain", job.max_bytes_per_domain),
        ("maxObjectsPerDomain", job.max_objects_per_domain), ("orderXMLName", job.template_name),
        ("origHarvestDefinitionName", job.harvest_name), ("origHarvestDefinitionComments", job.harvest_comments),
        ("scheduleName", job.schedule_name), ("harvestFilenamePrefix", job.archive_file_prefix),
        ("jobSubmitDate", info.job_submit_date), ("performer", ""), ("audience", job.audience),
        ("channel", job.channel), ("snapshot", str(job.snapshot).lower()), ("attemptId", job.attempt_id),
    ]
    for name, value in values:
        etree.SubElement(root, name).text = str(value)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


class JobDirectory:
    """One job's directory; ``create`` persists a new job, ``load`` reads one back (leftovers, resume).

    It names every path and marker in the directory (the module docstring draws them): ask it, never
    join a name to ``path`` elsewhere."""

    def __init__(self, path: Path, job: DoOneCrawl):
        self.path = Path(path)
        self.job = job

    @property
    def name(self) -> str:
        """Also the crawler's job name."""
        return self.path.name

    # ------------------------------------------------------------------ writing
    @classmethod
    def create(cls, server_dir: Path, job: DoOneCrawl, dedup_index: Path | None = None,
               deduplication: bool = True) -> JobDirectory:
        """Persist ``job``: message, harvestInfo.xml, seeds, the template with the index location, and the
        deduplication index (``dedup_index``, a local copy, moved in). Complete or absent, never half.

        ``deduplication`` False switches the template's DeDuplicator off (an external Heritrix 3 reads
        Lucene indexes, not ours)."""
        name = f"{job.job_id}_{int(time.time() * 1000)}"
        final = Path(server_dir) / name
        building = Path(server_dir) / f".{name}.tmp"
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        try:
            (building / METADATA_DIR).mkdir()
            index_location = ""
            if dedup_index is not None:
                shutil.move(os.fspath(dedup_index), building / DEDUP_INDEX)
                index_location = os.fspath(final / DEDUP_INDEX)
            write_atomically(building / JOB_MESSAGE, encode(job))
            write_atomically(building / SEEDS, ("\n".join(job.seeds) + "\n").encode("utf-8"))
            template = job.template.replace(INDEX_PLACEHOLDER, index_location)
            if not deduplication:
                template = without_deduplication(template)
            write_atomically(building / PRIMARY_CONFIG, template.encode("utf-8"))
            submitted = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            write_atomically(building / HARVEST_INFO, harvest_info_xml(job, submitted))
            os.replace(building, final)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        fsync_directory(Path(server_dir))
        return cls(final, job)

    @classmethod
    def load(cls, path: Path) -> JobDirectory:
        """Read a job directory back; JobDirectoryError if its message is missing or unreadable."""
        message = Path(path) / JOB_MESSAGE
        try:
            job = decode(message.read_bytes(), DoOneCrawl)
        except FileNotFoundError:
            raise JobDirectoryError(f"job directory {path} has no {JOB_MESSAGE}") from None
        except MessageError as exc:
            raise JobDirectoryError(f"job directory {path}: {JOB_MESSAGE} is not a valid job message: {exc}") \
                from exc
        assert isinstance(job, DoOneCrawl)
        return cls(Path(path), job)

    # ------------------------------------------------------------------ markers
    @property
    def resume_checkpoint(self) -> str | None:
        """The checkpoint to resume from, if the crawl was checkpointed at shutdown."""
        try:
            return json.loads((self.path / RESUME).read_text(encoding="utf-8"))["checkpoint"]
        except (FileNotFoundError, KeyError, ValueError):
            return None

    def mark_resumable(self, checkpoint: str) -> None:
        write_atomically(self.path / RESUME, json.dumps({"checkpoint": checkpoint}).encode())

    def clear_resumable(self) -> None:
        (self.path / RESUME).unlink(missing_ok=True)

    def engine_shutdown_checkpoint(self) -> str | None:
        """The checkpoint the bundled engine wrote when it stopped on its own, if the crawl can resume from it.

        A controller that dies without warning cannot checkpoint its crawl nor write ``resume.json``; its
        engine does the first (it stops when its standard input closes) and leaves the engine's marker. That
        marker is written only once the crawl ended with nothing crawled after the checkpoint, but it is
        trusted only while it still describes the directory: no outcome recorded (the controller has already
        decided how the crawl ended), its checkpoint the newest in checkpoints/ and its launch the newest
        launch. A later launch or checkpoint means the crawl went on after it, and resuming from it would
        fetch and write again what came after."""
        try:
            marker = json.loads((self.path / SHUTDOWN_CHECKPOINT).read_text(encoding="utf-8"))
            checkpoint, launch = marker["checkpoint"], marker["launch"]
        except FileNotFoundError:
            return None
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("job %d: %s is unreadable (%s): not resumed from it", self.job.job_id,
                        SHUTDOWN_CHECKPOINT, exc)
            return None
        checkpoints = sorted(p.name for p in self.checkpoints_dir.iterdir()) if self.checkpoints_dir.is_dir() else []
        launches = [launch.name for launch in self.launches()]
        if self.outcome is None and checkpoints[-1:] == [checkpoint] and launches[-1:] == [launch]:
            return str(checkpoint)
        log.warning("job %d: the engine's shutdown checkpoint %s of launch %s is not the newest checkpoint (%s) of "
                    "the newest launch (%s), or the crawl's outcome is recorded: not resumed from it",
                    self.job.job_id, checkpoint, launch, checkpoints[-1] if checkpoints else "none",
                    launches[-1] if launches else "none")
        return None

    def engine_shutdown_checkpoint_time(self) -> datetime | None:
        """When the engine wrote its shutdown checkpoint's marker (moments after the checkpoint), or None."""
        try:
            written = json.loads((self.path / SHUTDOWN_CHECKPOINT).read_text(encoding="utf-8"))["written"]
            return datetime.fromisoformat(str(written).replace("Z", "+00:00"))
        except (FileNotFoundError, KeyError, TypeError, ValueError):
            return None

    def clear_engine_shutdown_checkpoint(self) -> None:
        (self.path / SHUTDOWN_CHECKPOINT).unlink(missing_ok=True)

    @property
    def outcome(self) -> CrawlOutcome | None:
        try:
            return CrawlOutcome(**json.loads((self.path / OUTCOME).read_text(encoding="utf-8")))
        except (FileNotFoundError, TypeError, ValueError):
            return None

    def record_outcome(self, outcome: CrawlOutcome) -> None:
        write_atomically(self.path / OUTCOME, json.dumps(asdict(outcome)).encode())

    @property
    def live_changes_file(self) -> Path:
        return self.path / LIVE_CHANGES

    def live_changes(self) -> list[dict[str, object]]:
        """The live changes handled so far, in the order handled; a line cut short by a crash is skipped."""
        try:
            lines = self.live_changes_file.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        handled = []
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("version"), int):
                handled.append(entry)
        return handled

    def record_live_change(self, entry: dict[str, object]) -> None:
        """Append one handled change and sync it: it is the controller's memory of what it applied."""
        self.record_live_changes([entry])

    def record_live_changes(self, entries: Sequence[dict[str, object]]) -> None:
        """Append a round of handled changes, in the order handled, and sync them once."""
        if not entries:
            return
        with open(self.live_changes_file, "a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(entry, sort_keys=True) + "\n" for entry in entries))
            handle.flush()
            os.fsync(handle.fileno())

    @property
    def reported_status(self) -> JobStatus | None:
        """The status sent to the scheduler after post-processing, once sent; None before."""
        try:
            return JobStatus[json.loads((self.path / REPORTED).read_text(encoding="utf-8"))["status"]]
        except (FileNotFoundError, KeyError, ValueError):
            return None

    def kept_second_report(self) -> CrawlStatus | None:
        """The DONE report kept for a job FAILED by an archive store outage, to be sent once its files are
        stored; None when there is none, or it cannot be read (logged: the job then stays FAILED)."""
        try:
            kept = json.loads((self.path / REPORTED).read_text(encoding="utf-8")).get("second_report")
        except (FileNotFoundError, ValueError):
            return None
        if not kept:
            return None
        try:
            message = decode(kept.encode("utf-8"), (CrawlStatus,))
        except MessageError as exc:
            log.error("job %d: the DONE report kept in %s is unreadable (%s); the job stays FAILED",
                      self.job.job_id, self.path / REPORTED, exc)
            return None
        assert isinstance(message, CrawlStatus)
        return message

    def mark_reported(self, status: JobStatus, upload_errors: list[str],
                      second_report: CrawlStatus | None = None) -> None:
        """Record that ``status`` was sent, with the upload's errors and the DONE report to send once every
        file is stored (``second_report``, for a job FAILED by an archive store outage)."""
        kept = encode(second_report).decode("utf-8") if second_report is not None else None
        write_atomically(self.path / REPORTED, json.dumps({"status": status.name, "upload_errors": upload_errors,
                                                           "second_report": kept}).encode())

    # ------------------------------------------------------------------ the crawler's files
    def launches(self) -> list[Launch]:
        """The crawler's launch directories (14-digit names), oldest first; the ``latest`` link is none."""
        return [Launch(p) for p in sorted(self.path.iterdir())
                if p.is_dir() and not p.is_symlink() and p.name.isdigit() and len(p.name) == 14]

    def warc_files(self) -> list[Path]:
        """The crawl's closed WARC files of every launch, oldest launch first."""
        return [path for launch in self.launches() for path in launch.warc_files()]

    @property
    def job_log(self) -> Path:
        return self.path / JOB_LOG

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / CHECKPOINTS_DIR

    # ------------------------------------------------------------------ what post-processing writes
    @property
    def dedup_index(self) -> Path:
        """The deduplication index the crawl read (present only when the job has one)."""
        return self.path / DEDUP_INDEX

    def setup_files(self) -> list[Path]:
        """The job's own files for the metadata WARC, those present, in their order."""
        return [self.path / name for name in SETUP_FILES if (self.path / name).is_file()]

    @property
    def qa_report(self) -> Path:
        """The job's QA report, written before the metadata WARC that carries it."""
        return self.path / QA_REPORT

    def metadata_warc(self, name: str) -> Path:
        return self.path / METADATA_DIR / name

    def cdxj_index(self, warc: Path) -> Path:
        """Where the CDXJ index of ``warc`` goes."""
        return self.path / CDXJ_DIR / f"{warc.name}{CDXJ_SUFFIX}"

    @property
    def dedup_entries(self) -> Path:
        """The job's deduplication entries, under the name they have in the archive store."""
        return self.path / entries_name(self.job.job_id)

    @property
    def dedup_directory(self) -> Path:
        """The directory of the entries' domain partitions (harvestdef.dedup.partitions), as in the archive store."""
        return self.path / directory_name(self.job.job_id)

    @property
    def upload_ledger(self) -> Path:
        return self.path / UPLOAD_LEDGER

    def files_to_store(self) -> list[tuple[Path, str]]:
        """(local file, name in the job's archive-store directory) of everything the job leaves in the archive:
        the crawl's WARC files, the metadata WARC, the CDXJ indexes, the deduplication entries and their directory."""
        files = [(path, path.name) for path in self.warc_files()]
        files += [(path, path.name) for path in _files(self.path / METADATA_DIR,
                                                       lambda name: name.endswith(WARC_SUFFIXES))]
        files += [(path, f"{CDXJ_DIR}/{path.name}") for path in _files(self.path / CDXJ_DIR,
                                                                       lambda name: name.endswith(CDXJ_SUFFIX))]
        if self.dedup_entries.is_file():
            files.append((self.dedup_entries, entries_name(self.job.job_id)))
            # after its entries file: a directory in the store always has its data beside it
            if self.dedup_directory.is_file():
                files.append((self.dedup_directory, directory_name(self.job.job_id)))
        return files

    def move_to(self, oldjobs_dir: Path) -> Path:
        """Move the finished directory to ``oldjobs_dir`` (harvestInfo.xml stays: the copy is complete)."""
        oldjobs_dir.mkdir(parents=True, exist_ok=True)
        target = oldjobs_dir / self.name
        if target.exists():
            target = oldjobs_dir / f"{self.name}-{int(time.time() * 1000)}"
        shutil.move(os.fspath(self.path), target)
        self.path = target
        return target


def without_deduplication(template: str) -> str:
    """The crawler-beans.cxml with every DeDuplicator bean's ``enabled`` property set to false."""
    root = etree.fromstring(template.encode("utf-8"), template_parser())
    for bean in root.iter("{*}bean"):
        if not bean.get("class", "").endswith(".DeDuplicator"):
            continue
        enabled = [p for p in bean.findall("{*}property") if p.get("name") == "enabled"]
        if enabled:
            enabled[0].set("value", "false")
            for child in list(enabled[0]):
                enabled[0].remove(child)
        else:
            etree.SubElement(bean, bean.tag.replace("bean", "property"), name="enabled", value="false")
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8").decode("utf-8")


def unfinished_job_directories(server_dir: Path) -> list[Path]:
    """Every job directory in ``server_dir`` holding harvestInfo.xml, oldest job first."""
    if not server_dir.is_dir():
        return []
    found = [p for p in server_dir.iterdir() if p.is_dir() and not p.name.startswith(".")
             and (p / HARVEST_INFO).is_file()]
    return sorted(found, key=lambda p: p.name)
