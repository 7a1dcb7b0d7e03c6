"""Job-generation previews: what the next run of a harvest would make, without making it.

``summarise`` turns ``scheduler.jobgen.generate.preview``'s answer into the figures a curator reads before
activating a snapshot or running a harvest, the same as ``harvestsuite jobgen preview`` prints: per job its
template, crawl attributes, limits, number of configurations (with the first few by name), expected
objects and expected bytes; and their totals.

Expected bytes are NetarchiveSuite's expectation of objects (DomainConfiguration.getExpectedNumberOfObjects,
scheduler.jobgen.expectation) converted the way that expectation converts a byte limit into objects: each
configuration's expected objects times the bytes per object of its best history row, or
expectedAverageBytesPerObject without one; never more than the job's byte limit per domain.

The web UI asks for a preview (harvestdef.repositories.runrequests) and each tick makes those waiting
(``make_waiting_previews``): a national snapshot's selection takes about a minute, which a web request
should not hold, and job generation is the scheduler's.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from harvestdef.crawlattributes import as_json
from harvestdef.db.engine import write_transaction
from harvestdef.errors import HarvestSuiteError
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.runrequests import RunRequestRepository
from harvestdef.times import utc_text
from scheduler.jobgen.expectation import NO_HISTORY, UNLIMITED, ExpectationParams
from scheduler.jobgen.generate import GenerationOptions, HarvestToGenerate, attribute_names, load_harvest, preview
from scheduler.jobgen.packing import Candidates, PackedJob

log = logging.getLogger(__name__)

SAMPLE_CONFIGURATIONS = 5  # configurations named per job
SAMPLED_JOBS = 200  # jobs whose configurations are named; a national snapshot's others are counted only


def expected_bytes(candidates: Candidates, job: PackedJob, params: ExpectationParams) -> int:
    """The bytes the job's configurations are expected to harvest (the module's rule)."""
    total = 0
    for index in job.members:
        objects = candidates.expectation(index, job.max_objects_per_domain, job.max_bytes_per_domain)
        best_objects = candidates.best_objects[index]
        if candidates.best_stop[index] != NO_HISTORY and best_objects > 0:
            per_object = candidates.best_bytes[index] // best_objects
        else:
            per_object = params.expected_average_bytes_per_object
        size = objects * per_object
        if job.max_bytes_per_domain != UNLIMITED:
            size = min(size, job.max_bytes_per_domain)
        total += size
    return total


def summarise(engine: Engine, harvest: HarvestToGenerate, candidates: Candidates, jobs: list[PackedJob],
              options: GenerationOptions, attribute_names: tuple[str, ...]) -> dict[str, Any]:
    """The preview as JSON-able figures (the module's docstring)."""
    sample: dict[int, list[int]] = {number: list(job.members[:SAMPLE_CONFIGURATIONS])
                                    for number, job in enumerate(jobs[:SAMPLED_JOBS])}
    with engine.connect() as conn:
        domains = DomainRepository(conn).names_by_id(
            candidates.domain[index] for members in sample.values() for index in members)
    described = []
    params = options.rules.expectation
    for number, job in enumerate(jobs):
        attributes = dict(zip(attribute_names, job.attributes, strict=False))
        described.append({
            "job": number + 1, "template": job.template_name, "crawl_attributes": as_json(attributes),
            "configurations": len(job),
            "sample": [f"{domains.get(candidates.domain[index], '?')}/"
                       f"{candidates.names[candidates.name[index]]}" for index in sample.get(number, [])],
            "max_objects_per_domain": job.max_objects_per_domain,
            "max_bytes_per_domain": job.max_bytes_per_domain, "max_running_time": job.max_running_time,
            "expected_objects": job.expected_total,
            "expected_bytes": expected_bytes(candidates, job, params),
        })
    return {
        "harvest": harvest.name, "type": "snapshot" if harvest.snapshot else "selective",
        "run": harvest.numevents + 1, "configurations": len(candidates), "jobs": described,
        "expected_objects": sum(job["expected_objects"] for job in described),
        "expected_bytes": sum(job["expected_bytes"] for job in described),
    }


def preview_summary(engine: Engine, harvest: str | int, options: GenerationOptions,
                    now: datetime | None = None) -> dict[str, Any]:
    """The preview of the next run of ``harvest`` (name or id), summarised."""
    hd, candidates, jobs = preview(engine, harvest, options, now)
    with engine.connect() as conn:
        names = attribute_names(conn)
    return summarise(engine, hd, candidates, jobs, options, names)


def make_waiting_previews(engine: Engine, options: GenerationOptions, now: datetime) -> list[str]:
    """Make every preview asked for and not made yet, each stored with the request it answers; returns
    the names of the harvests previewed. A preview that fails is stored with its error, so the page says
    why instead of waiting for ever."""
    with engine.connect() as conn:
        waiting = RunRequestRepository(conn).waiting_previews()
    made = []
    for request in waiting:
        with engine.connect() as conn:
            name = load_harvest(conn, request.harvest_id).name
        try:
            summary, error = preview_summary(engine, request.harvest_id, options, now), None
        except HarvestSuiteError as exc:
            summary, error = None, str(exc)
            log.warning("the preview of harvest %r asked for at %s failed: %s", name,
                        utc_text(request.requested_at), exc)
        with write_transaction(engine) as conn:
            RunRequestRepository(conn).record_preview(request, now, summary, error)
        made.append(name)
    return made
