"""A job's directory on the harvester: the controller's durable state from the moment a job is taken.

Layout (reference §5.1, with one file of ours)::

    <serverDir>/<jobID>_<epochMillis>/
        job.json            the DoOneCrawl message as received: everything needed to crawl, report and store
        harvestInfo.xml     NetarchiveSuite's PersistentJobData; its presence marks an unfinished job
        seeds.txt
        crawler-beans.cxml  the job's template with the deduplication index location filled in
        dedup-index.sqlite  the deduplication index copied from the archive store (when the job has one)
        metadata/           the metadata WARC, once written
        resume.json         written at shutdown when the crawl was checkpointed; removed when it resumes
        outcome.json        how the crawl ended, written before post-processing starts
        <launchId>/         the crawler's launch directories (logs/, warcs/, reports/), one per launch

The directory is written under a temporary name and renamed, so a directory with a ``harvestInfo.xml``
is always complete. Nothing here opens the harvest database: it all comes from the message.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lxml import etree

from harvestdef.crawltemplate import DEDUPLICATION_INDEX_LOCATION, placeholder, template_parser
from harvestdef.files import fsync_directory, write_atomically
from harvestdef.messages import HARVEST_INFO_VERSION, DoOneCrawl, HarvestInfo, MessageError, decode, encode

HARVEST_INFO = "harvestInfo.xml"
JOB_MESSAGE = "job.json"
SEEDS = "seeds.txt"
CRAWLER_BEANS = "crawler-beans.cxml"
DEDUP_INDEX = "dedup-index.sqlite"
METADATA_DIR = "metadata"
RESUME = "resume.json"
OUTCOME = "outcome.json"
INDEX_PLACEHOLDER = placeholder(DEDUPLICATION_INDEX_LOCATION)

log = logging.getLogger(__name__)


class JobDirectoryError(Exception):
    """A job directory that cannot be read back; the message names the directory and the fault."""


@dataclass
class CrawlOutcome:
    """How a crawl ended, kept in outcome.json so a restart during post-processing still knows.

    ``failed``: the job must end FAILED (the crawler died, could not be driven, or the crawl was
    interrupted). ``stalled``: the watchdog stopped it; unfinished domains become DOWNLOAD_UNFINISHED.
    ``errors``: one line per problem, for the report's harvest errors.
    """

    failed: bool = False
    stalled: bool = False
    errors: list[str] = field(default_factory=list)


def harvest_info_xml(job: DoOneCrawl, written_at: str) -> bytes:
    """NetarchiveSuite's PersistentJobData (v0.6) for ``job``: the file its tools look for.

    Its values are the message's, and version and jobSubmitDate those job generation fixed
    (``job.harvest_info``), so the file says what the job's WARCs say. A message without harvest info (sent
    by a scheduler from before it, or for a job whose template fixed none) is still a job to crawl: the
    file then says what it said before, this harvester's version and ``written_at`` as jobSubmitDate, and
    a comment at its top says so, for whoever compares it with the WARCs.
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
    """One job's directory; ``create`` persists a new job, ``load`` reads one back (leftovers, resume)."""

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
            write_atomically(building / CRAWLER_BEANS, template.encode("utf-8"))
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

    @property
    def outcome(self) -> CrawlOutcome | None:
        try:
            return CrawlOutcome(**json.loads((self.path / OUTCOME).read_text(encoding="utf-8")))
        except (FileNotFoundError, TypeError, ValueError):
            return None

    def record_outcome(self, outcome: CrawlOutcome) -> None:
        write_atomically(self.path / OUTCOME, json.dumps(asdict(outcome)).encode())

    # ------------------------------------------------------------------ the crawler's files
    def launch_directories(self) -> list[Path]:
        """The crawler's launch directories (14-digit names), oldest first."""
        return sorted(p for p in self.path.iterdir()
                      if p.is_dir() and not p.is_symlink() and p.name.isdigit() and len(p.name) == 14)

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
