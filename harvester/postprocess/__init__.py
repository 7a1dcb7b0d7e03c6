"""Post-processing of a finished crawl (docs/harvester.md, Post-processing).

Each step is a function that stands alone, so the harvest controller can guard each one by itself and
report every failure: close the WARC files a crawler left open (``warcfiles``) and bring a killed
crawler's crawl.log into agreement with them (``reconcile``), write the metadata WARC
with the job's files and CDX (``metadata``, ``cdx``), index each WARC as CDXJ (``cdxj``), extract the
deduplication entries (``dedupentries``) and build the per-domain report from crawl.log and
progress-statistics.log (``domainreport``, ``crawllog``). Nothing here uploads, sends messages or knows
the job directory's layout: the caller passes the files.
"""

from harvester.postprocess.cdx import cdx_lines
from harvester.postprocess.cdxj import write_cdxj
from harvester.postprocess.crawllogreader import CrawlLogLine, CrawlLogReader, InvalidLine, iter_crawl_log
from harvester.postprocess.dedupentries import extract_dedup_entries
from harvester.postprocess.domainreport import (
    DomainReportResult,
    build_domain_report,
    stop_reason_from_progress_log,
)
from harvester.postprocess.metadata import (
    MetadataInfo,
    heritrix_file_category,
    metadata_file_name,
    write_metadata_warc,
)
from harvester.postprocess.reconcile import Reconciliation, reconcile_crawl_log
from harvester.postprocess.warcfiles import close_open_warc, is_crawl_warc, is_open_warc

__all__ = [
    "CrawlLogLine",
    "CrawlLogReader",
    "DomainReportResult",
    "InvalidLine",
    "MetadataInfo",
    "Reconciliation",
    "build_domain_report",
    "cdx_lines",
    "close_open_warc",
    "extract_dedup_entries",
    "heritrix_file_category",
    "is_crawl_warc",
    "is_open_warc",
    "iter_crawl_log",
    "metadata_file_name",
    "reconcile_crawl_log",
    "stop_reason_from_progress_log",
    "write_cdxj",
    "write_metadata_warc",
]
