"""The metadata WARC of a job: what was asked for, how it went, and the CDX of its WARCs.

Records, in this order; all after the first are ``resource`` records (as NetarchiveSuite's
MetadataFileWriterWarc writes them) with WARC-Warcinfo-ID, WARC-IP-Address and SHA-1 block and payload
digests:

1. ``warcinfo``: software ``HarvestSuite/<version>``, format, conformsTo, ip, hostname, isPartOf = job id.
2. ``metadata://<org>/crawl/setup/aliases?majorversion=1&minorversion=0&harvestid=H&harvestnum=N&jobid=J``
   (text/plain, "X is an alias for Y" lines), only when the job has aliases.
3. ``metadata://<org>/crawl/setup/duplicatereductionjobs?...`` (same parameters; the comma-separated ids of
   the jobs whose entries made the deduplication index, possibly empty), only when deduplication is on.
   Jobs that were asked for but left out of the index (no entries found) go in a record of their own,
   ``metadata://<org>/crawl/setup/duplicatereductionleftout?...`` (same form), only when there are any.
   Its path does not start with "duplicatereductionjobs", so NetarchiveSuite's readers, which match that
   prefix, never take it for the list of jobs used.
   One ``metadata://<org>/crawl/setup/jobchange?<same parameters>&version=V`` record (application/json)
   per live change applied to the running crawl, in version order: its kind, what it changed, who made it
   and when, and when the controller applied it (harvester/steering.py).
   One ``metadata://<org>/crawl/reports/qa-report?<same parameters>`` record (application/json): the job's
   QA report (harvester/postprocess/qa.py), when post-processing could make one.
4. Heritrix files as ``metadata://<org>/crawl/{setup|reports|logs}/<file name>?heritrixVersion=V&harvestid=H
   &jobid=J``: setup files, then reports, then logs, each group sorted by URL; text/xml for .xml files,
   text/plain otherwise. The copy of the crawl template among the setup files (``*.cxml``, Heritrix 1's
   ``order.xml``) is written with its credential values (passwords, form items, cookie values) replaced by
   ``[masked]`` (harvestdef/templatesecrets.py): the metadata WARC is kept forever and read by every role,
   while the crawler needed the real values only for the crawl, from the job's own crawler-beans.cxml.
5. One ``metadata://<org>/crawl/index/cdx?majorversion=2&minorversion=0&harvestid=H&jobid=J&filename=F``
   record (application/x-cdx) per archive file, sorted by file name, holding its 8-field CDX lines
   (harvester.postprocess.cdx) in file order.

Files are streamed into their records (digest pass, then copy): a large crawl.log is never in memory, and
CDX lines beyond 1 MiB are spooled to a temporary file. The WARC is written under a temporary name and renamed when
complete; this module never decides which files belong to a job, the caller passes them.
"""

from __future__ import annotations

import hashlib
import json
import socket
import tempfile
from base64 import b32encode
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote

from warcio.recordbuilder import RecordBuilder
from warcio.warcwriter import WARCWriter

from harvestdef.errors import ValidationError
from harvestdef.files import replacing
from harvestdef.messages import AliasRecord
from harvestdef.templatesecrets import masked_template
from harvester.postprocess.cdx import cdx_lines

WARC_VERSION = "WARC/1.1"
CONFORMS_TO = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
SETUP, REPORTS, LOGS = "setup", "reports", "logs"
_CHUNK = 1 << 16
_SPOOL_IN_MEMORY = 1 << 20  # CDX text up to 1 MiB stays in memory, larger goes to a temporary file


@dataclass(frozen=True)
class MetadataInfo:
    """What the metadata WARC says about the job besides its files.

    ``deduplication_job_ids`` None means deduplication was off for the job (no record is written);
    ``deduplication_job_ids_left_out`` are jobs that were asked for but had no entries in the index.
    ``hostname`` and ``ip`` default to this machine's.
    """

    job_id: int
    harvest_id: int
    harvest_num: int
    organization: str
    heritrix_version: str
    software_version: str
    aliases: Sequence[AliasRecord] = ()
    deduplication_job_ids: Sequence[int] | None = None
    deduplication_job_ids_left_out: Sequence[int] = ()
    live_changes: Sequence[Mapping[str, Any]] = ()  # the applied ones, each with its "version"
    qa_report: Path | None = None  # the job's QA report (JSON), None when there is none
    hostname: str | None = None
    ip: str | None = None


def metadata_file_name(job_id: int, harvest_id: int, collection: str | None = None) -> str:
    """``<job_id>-metadata-1.warc.gz``, or ``<collection>-<job_id>-<harvest_id>-metadata-1.warc.gz``
    (NetarchiveSuite's names, metadataFileNameFormat default and prefix)."""
    if collection:
        return f"{collection}-{job_id}-{harvest_id}-metadata-1.warc.gz"
    return f"{job_id}-metadata-1.warc.gz"


def heritrix_file_category(name: str) -> str | None:
    """Which metadata URL group a Heritrix file belongs to, as NetarchiveSuite groups them: ``*-report.txt``
    reports, ``*.log`` and ``*.out`` logs, other ``.xml/.txt/.cxml`` files setup; None for any other file, which
    NetarchiveSuite does not store."""
    if name.endswith("-report.txt"):
        return REPORTS
    if name.endswith((".log", ".out")):
        return LOGS
    if name.endswith((".xml", ".txt", ".cxml")):
        return SETUP
    return None


def _setup_query(info: MetadataInfo) -> str:
    return f"majorversion=1&minorversion=0&harvestid={info.harvest_id}&harvestnum={info.harvest_num}" \
           f"&jobid={info.job_id}"


def aliases_url(info: MetadataInfo) -> str:
    return f"metadata://{info.organization}/crawl/setup/aliases?{_setup_query(info)}"


def duplicate_reduction_url(info: MetadataInfo) -> str:
    return f"metadata://{info.organization}/crawl/setup/duplicatereductionjobs?{_setup_query(info)}"


def duplicate_reduction_left_out_url(info: MetadataInfo) -> str:
    return f"metadata://{info.organization}/crawl/setup/duplicatereductionleftout?{_setup_query(info)}"


def live_change_url(info: MetadataInfo, version: int) -> str:
    return f"metadata://{info.organization}/crawl/setup/jobchange?{_setup_query(info)}&version={version}"


def qa_report_url(info: MetadataInfo) -> str:
    return f"metadata://{info.organization}/crawl/reports/qa-report?{_setup_query(info)}"


def heritrix_file_url(info: MetadataInfo, category: str, name: str) -> str:
    return (f"metadata://{info.organization}/crawl/{category}/{quote(name, safe='')}"
            f"?heritrixVersion={quote(info.heritrix_version, safe='')}&harvestid={info.harvest_id}"
            f"&jobid={info.job_id}")


def cdx_url(info: MetadataInfo, archive_file_name: str) -> str:
    return (f"metadata://{info.organization}/crawl/index/cdx?majorversion=2&minorversion=0"
            f"&harvestid={info.harvest_id}&jobid={info.job_id}&filename={quote(archive_file_name, safe='')}")


def _local_ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


class _ExactReader:
    """Gives exactly ``length`` bytes of a file that was measured before; fails if it shrank meanwhile."""

    def __init__(self, handle: BinaryIO, length: int, source: str):
        self.handle = handle
        self.remaining = length
        self.source = source

    def read(self, size: int = -1) -> bytes:
        if self.remaining <= 0:
            return b""
        wanted = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.handle.read(wanted)
        if not data:
            raise ValidationError(f"{self.source} ended {self.remaining} bytes early while it was archived")
        self.remaining -= len(data)
        return data


class _MetadataWriter:
    """Writes the records of one metadata WARC into an open file; every record refers to the warcinfo."""

    def __init__(self, out: BinaryIO, file_name: str, info: MetadataInfo):
        self.info = info
        self.ip = info.ip or _local_ip()
        self.builder = RecordBuilder(warc_version=WARC_VERSION)
        self.writer = WARCWriter(out, gzip=file_name.endswith(".gz"), warc_version=WARC_VERSION)
        content = {"software": f"HarvestSuite/{info.software_version}", "format": "WARC File Format 1.1",
                   "conformsTo": CONFORMS_TO, "ip": self.ip, "hostname": info.hostname or socket.gethostname(),
                   "isPartOf": str(info.job_id)}
        warcinfo = self.builder.create_warcinfo_record(file_name, content)
        self.writer.write_record(warcinfo)
        self.warcinfo_id = warcinfo.rec_headers.get_header("WARC-Record-ID")

    def write_stream(self, url: str, content_type: str, handle: BinaryIO, source: str) -> None:
        """A resource record of everything in ``handle`` from its current position to its end."""
        start = handle.tell()
        digest = hashlib.sha1()
        length = 0
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            length += len(chunk)
        handle.seek(start)
        value = "sha1:" + b32encode(digest.digest()).decode("ascii")
        record = self.builder.create_warc_record(
            url, "resource", payload=_ExactReader(handle, length, source), length=length,
            warc_content_type=content_type,
            warc_headers_dict={"WARC-Warcinfo-ID": self.warcinfo_id, "WARC-IP-Address": self.ip,
                               "WARC-Block-Digest": value, "WARC-Payload-Digest": value})
        self.writer.write_record(record)

    def write_text(self, url: str, text: str, content_type: str = "text/plain") -> None:
        with tempfile.SpooledTemporaryFile(_SPOOL_IN_MEMORY) as spool:
            spool.write(text.encode("utf-8"))
            spool.seek(0)
            self.write_stream(url, content_type, spool, url)

    def write_file(self, url: str, path: Path) -> None:
        content_type = "text/xml" if path.name.endswith(".xml") else "text/plain"
        with open(path, "rb") as handle:
            self.write_stream(url, content_type, handle, str(path))

    def write_template(self, url: str, path: Path) -> None:
        """A copy of the crawl template, its credential values masked (module docstring)."""
        content_type = "text/xml" if path.name.endswith(".xml") else "text/plain"
        self.write_text(url, masked_template(path.read_text(encoding="utf-8", errors="replace")), content_type)

    def write_cdx(self, archive_file: Path) -> None:
        with tempfile.SpooledTemporaryFile(_SPOOL_IN_MEMORY) as spool:
            for line in cdx_lines(archive_file):
                spool.write(line.encode("utf-8") + b"\n")
            spool.seek(0)
            self.write_stream(cdx_url(self.info, archive_file.name), "application/x-cdx", spool, str(archive_file))


def is_template_file(name: str) -> bool:
    """True for a setup file that is a copy of the crawl template: ``*.cxml``, or Heritrix 1's order.xml."""
    return name.endswith(".cxml") or name == "order.xml"


def _sorted_by_url(info: MetadataInfo, category: str, files: Sequence[Path]) -> list[tuple[str, Path]]:
    return sorted(((heritrix_file_url(info, category, Path(path).name), Path(path)) for path in files),
                  key=lambda pair: (pair[0], str(pair[1])))


def write_metadata_warc(out_path: Path, info: MetadataInfo, setup_files: Sequence[Path],
                        report_files: Sequence[Path], log_files: Sequence[Path],
                        archive_files: Sequence[Path]) -> Path:
    """Write the job's metadata WARC to ``out_path`` (gzip-compressed per record when it ends in .gz).

    Raises FileNotFoundError naming the first missing input before anything is written; on any failure the
    temporary file is removed and ``out_path`` is left as it was.
    """
    out_path = Path(out_path)
    groups = [(SETUP, setup_files), (REPORTS, report_files), (LOGS, log_files)]
    for path in [Path(p) for _, files in groups for p in files] + [Path(p) for p in archive_files]:
        if not path.is_file():
            raise FileNotFoundError(f"metadata WARC {out_path.name}: input file {path} does not exist")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out_path) as out:
        writer = _MetadataWriter(out, out_path.name, info)
        if info.aliases:
            writer.write_text(aliases_url(info), "".join(f"{alias.domain} is an alias for {alias.alias_of}\n"
                                                         for alias in info.aliases))
        if info.deduplication_job_ids is not None:
            writer.write_text(duplicate_reduction_url(info), ",".join(map(str, info.deduplication_job_ids)))
            if info.deduplication_job_ids_left_out:
                writer.write_text(duplicate_reduction_left_out_url(info),
                                  ",".join(map(str, info.deduplication_job_ids_left_out)))
        for change in sorted(info.live_changes, key=lambda change: int(change["version"])):
            writer.write_text(live_change_url(info, int(change["version"])),
                              json.dumps(change, sort_keys=True, indent=1) + "\n", "application/json")
        if info.qa_report is not None:
            with open(info.qa_report, "rb") as handle:
                writer.write_stream(qa_report_url(info), "application/json", handle, str(info.qa_report))
        for category, files in groups:
            for url, path in _sorted_by_url(info, category, files):
                if category == SETUP and is_template_file(path.name):
                    writer.write_template(url, path)
                else:
                    writer.write_file(url, path)
        for archive_file in sorted((Path(p) for p in archive_files), key=lambda p: (p.name, str(p))):
            writer.write_cdx(archive_file)
    return out_path
