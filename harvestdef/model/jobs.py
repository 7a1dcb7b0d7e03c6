"""Job: one crawl of a set of domain configurations, as the jobs table holds it (NetarchiveSuite's Job class)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from harvestdef.model.status import JobStatus


@dataclass(frozen=True)
class Job:
    """A row of jobs. ``orderxmldoc`` and ``seedlist`` are large: listings leave them empty."""

    job_id: int
    harvest_id: int
    status: JobStatus
    channel: str
    snapshot: bool
    forcemaxbytes: int
    forcemaxcount: int | None
    forcemaxrunningtime: int | None
    orderxml: str
    harvest_num: int
    num_configs: int
    edition: int
    harvestname_prefix: str | None = None
    harvest_errors: str | None = None
    harvest_error_details: str | None = None
    upload_errors: str | None = None
    upload_error_details: str | None = None
    creationdate: datetime | None = None
    submitteddate: datetime | None = None
    startdate: datetime | None = None
    enddate: datetime | None = None
    resubmitted_as_job: int | None = None
    continuationof: int | None = None
    attempt_id: str | None = None
    controller: str | None = None
    claimed_at: datetime | None = None
    interrupted: bool = False
    expected_objects: int | None = None
    store_failed: bool = False  # FAILED only because the archive store could not take its files (yet)
    orderxmldoc: str = ""
    seedlist: str = ""

    @property
    def seeds(self) -> list[str]:
        return [line for line in self.seedlist.splitlines() if line.strip()]
