"""What the running crawl's crawl.log says so far: lines per fetch status and objects and bytes per domain.

The controller reads each launch's crawl.log as it grows, only the complete lines written since its last
look (the file is appended to; a partial last line waits for its newline), and counts them with the domain
report's own rules (harvester/postprocess/domainreport.py DomainTally), so the figures a running job shows
are the ones its final report starts from. The crawler's REST API has no such figures: Heritrix's reports
count response codes but not network errors, and hosts, not the job's domains.
"""

from __future__ import annotations

from collections import Counter

from harvestdef.messages import CRAWL_TALLY_DOMAINS, DomainCount
from harvestdef.model.status import StopReason
from harvester.jobdir import JobDirectory
from harvester.postprocess.crawllogreader import MIN_FIELDS, STATUS
from harvester.postprocess.domainreport import DomainTally, normalised_domains

READ_LIMIT = 16 << 20  # bytes read per look at one file: a long backlog is caught up over several turns


class LiveTally:
    """Counts of one job's crawl.log lines, brought up to date by ``update``."""

    def __init__(self, jobdir: JobDirectory) -> None:
        self.jobdir = jobdir
        self.job_domains = normalised_domains(jobdir.job.domain_configurations)
        self.tally = DomainTally(self.job_domains, StopReason.DOWNLOAD_COMPLETE, use_seed=True)
        self.status_counts: Counter[str] = Counter()
        self.lines = 0
        self._offsets: dict[str, int] = {}
        self._sent: dict[str, tuple[int, int]] = {}

    def update(self) -> None:
        """Count the complete lines written since the last update, in every launch's crawl.log."""
        for launch in self.jobdir.launches():
            path = launch.crawl_log
            key = str(path)
            offset = self._offsets.get(key, 0)
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read(READ_LIMIT)
            except FileNotFoundError:
                continue
            end = chunk.rfind(b"\n") + 1
            if end == 0:
                continue
            self._offsets[key] = offset + end
            self.tally.add_fields(self._fields(chunk[:end].decode("utf-8", errors="replace").splitlines()))

    def _fields(self, lines: list[str]):
        counts = self.status_counts
        for text in lines:
            fields = text.split()
            if len(fields) < MIN_FIELDS:
                continue
            status = fields[STATUS]
            if not status.lstrip("-").isdigit():
                continue
            self.lines += 1
            counts[status] += 1
            yield fields

    def changed_domains(self) -> list[DomainCount]:
        """The job's domains whose counts changed since the last call (at most CRAWL_TALLY_DOMAINS; the rest
        are in the next calls), as they stand now."""
        changed = []
        for normalised, entry in self.tally.counts.items():
            figures = (entry.objects, entry.bytes)
            if self._sent.get(normalised) != figures:
                changed.append(DomainCount(domain=self.job_domains[normalised], objects=entry.objects,
                                           bytes=entry.bytes))
                self._sent[normalised] = figures
                if len(changed) == CRAWL_TALLY_DOMAINS:
                    break
        return changed
