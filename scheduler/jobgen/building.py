"""Building jobs (NetarchiveSuite's Job and AbstractJobGenerator.getNewJob): job rows, job_configs, the
combined seed list, and the crawl template with every NetarchiveSuite placeholder filled except the
deduplication index location (docs/jobgen.md, Template placeholders).

The job's harvest info (harvest name and comments, schedule, audience, jobSubmitDate = the run's creation
date, harvestInfo.version) is fixed here, once, in the warcinfo map of the filled template
(``metadata_items``). The dispatcher reads it back from there into the DoOneCrawl message, and the
harvester writes harvestInfo.xml from the message, so the file and the WARCs' warcinfo records say the
same even when the harvest is renamed between generation and dispatch.

Writing goes in three bulk steps inside the caller's transaction: the job rows (without seeds and
template), their job_configs rows (COPY on PostgreSQL, executemany on SQLite), then each job's seed list
and filled template, in batches. The seed lists and domain traps come from selection, which read them in
its one sorted pass (``memberseeds``): nothing is read back, and a job's members in index order are its
domains in name order, the order of its seed list.

Unlike NetarchiveSuite, a domain's crawler traps apply to that domain's URLs only: each trap R of domain D
becomes ``(?=https?://(?:[^/?#@]*\\.)?D(?::\\d+)?(?:[/?#].*)?$)(?:R)``, which matches (whole-URL, as
Heritrix's MatchesListRegexDecideRule does) only URLs whose host is D or a subdomain of D.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit
from xml.sax.saxutils import escape, quoteattr

import numpy as np
from sqlalchemy import Connection

from harvestdef.bulkload import constraints_set_aside, copy_integers, copy_rows, lock_tables_nowait
from harvestdef.crawlattributes import template_text
from harvestdef.crawltemplate import (
    DEDUPLICATION_INDEX_LOCATION,
    METADATA_ITEMS,
    PLACEHOLDER,
    placeholder,
    warcinfo_items,
)
from harvestdef.db.engine import is_postgresql
from harvestdef.domainnames import is_ip_address, to_punycode
from harvestdef.errors import DomainNameError, JobGenerationError
from harvestdef.messages import HARVEST_INFO_VERSION, HarvestInfo
from harvestdef.repositories.jobs import JobRepository, new_job_row
from harvestdef.seeds import seed_lines
from harvestdef.settings import NamingConvention
from harvestdef.traps import parse_stored_traps
from scheduler.jobgen.expectation import UNLIMITED
from scheduler.jobgen.memberseeds import MemberSeeds
from scheduler.jobgen.packing import Candidates, PackedJob

log = logging.getLogger(__name__)

LEGACY_NAMING: NamingConvention = "LegacyNamingConvention"
COLLECTION_PREFIX_NAMING: NamingConvention = "CollectionPrefixNamingConvention"
# From this many job_configs rows on, PostgreSQL checks their foreign keys once for the whole load.
BULK_CHECK_THRESHOLD = 50_000
JOB_CONFIG_COLUMNS = ("job_id", "config_id")


@dataclass(frozen=True)
class WarcWriterOptions:
    """Properties of the warcWriter bean (NetarchiveSuite takes them from harvester settings)."""

    compress: bool = True
    max_file_size_bytes: int = 1_000_000_000
    pool_max_active: int = 3
    write_requests: bool = True
    write_metadata: bool = True
    write_metadata_outlinks: bool = False
    skip_identical_digests: bool = False
    start_new_files_on_checkpoint: bool = True


@dataclass(frozen=True)
class RunContext:
    """Everything a run's jobs share: the harvest, its channel and traps, the naming and template options."""

    harvest_id: int
    harvest_name: str
    harvest_comments: str
    audience: str
    schedule_name: str
    harvest_num: int
    channel: str
    snapshot: bool
    global_traps: tuple[str, ...]
    harvest_traps: tuple[str, ...]
    attribute_names: tuple[str, ...]
    creation_date: datetime
    deduplication_enabled: bool = True
    object_limit_by_quota_enforcer: bool = True
    naming_convention: NamingConvention = LEGACY_NAMING
    collection_name: str = "netarkivet"
    operator: str = "HarvestSuite"
    warc_writer: WarcWriterOptions = WarcWriterOptions()

    def harvestname_prefix(self, job_id: int) -> str:
        if self.naming_convention == COLLECTION_PREFIX_NAMING:
            return f"{self.collection_name}-{job_id}-{self.harvest_id}"
        return f"{job_id}-{self.harvest_id}"


@dataclass(frozen=True)
class TemplateInfo:
    name: str
    document: str  # the template's crawler-beans.cxml, placeholders unfilled
    description: str
    lastupdated: datetime | None


def domain_scoped_trap(domain: str, trap: str) -> str:
    """Trap ``trap`` of ``domain`` as a regex that only matches URLs on the domain or its subdomains."""
    return f"{domain_scope(domain)}(?:{trap})"


def domain_scope(domain: str) -> str:
    """The look-ahead that ``domain_scoped_trap`` puts before each trap of ``domain``."""
    host = re.escape(to_punycode(domain) if not is_ip_address(domain) else domain)
    return rf"(?=https?://(?:[^/?#@]*\.)?{host}(?::\d+)?(?:[/?#].*)?$)"


def seeds_of(seedlist_texts: Iterable[str | None]) -> Iterator[str]:
    """The seeds of seed lists (harvestdef.seeds' rule); an IDN seed is followed by its punycode form."""
    for seedlist in seedlist_texts:
        yield from _job_seeds(seedlist)


def _job_seeds(seedlist: str | None) -> list[str]:
    seeds = seed_lines(seedlist)
    if seedlist is None or seedlist.isascii():
        return seeds
    with_ascii_forms = []
    for seed in seeds:
        with_ascii_forms.append(seed)
        if not seed.isascii():
            ascii_seed = _punycode_seed(seed)
            if ascii_seed is not None and ascii_seed != seed:
                with_ascii_forms.append(ascii_seed)
    return with_ascii_forms


def _punycode_seed(seed: str) -> str | None:
    has_scheme = "://" in seed
    try:
        parts = urlsplit(seed if has_scheme else "http://" + seed)
        host = parts.hostname
        if host is None or host.isascii():
            return None
        netloc = parts.netloc.replace(parts.netloc.rsplit("@", 1)[-1].split(":")[0], to_punycode(host), 1)
    except (ValueError, DomainNameError):
        return None
    text = urlunsplit(parts._replace(netloc=netloc))
    return text if has_scheme else text[len("http://"):]


def quota_values(job: PackedJob, object_limit_by_quota_enforcer: bool) -> dict[str, str]:
    """The per-domain budgets: objects in the quota enforcer or the frontier, bytes in KB + 1
    (docs/jobgen.md, Template placeholders)."""
    objects = str(job.max_objects_per_domain)
    kilobytes = "-1" if job.max_bytes_per_domain == UNLIMITED else str(job.max_bytes_per_domain // 1024 + 1)
    return {
        "QUOTA_ENFORCER_GROUP_MAX_FETCH_SUCCES_PLACEHOLDER": objects if object_limit_by_quota_enforcer else "-1",
        "FRONTIER_QUEUE_TOTAL_BUDGET_PLACEHOLDER": "-1" if object_limit_by_quota_enforcer else objects,
        "QUOTA_ENFORCER_MAX_BYTES_PLACEHOLDER": kilobytes,
    }


def attribute_values(names: Sequence[str], values: Sequence[int]) -> dict[str, str]:
    """EAV crawl attributes as template text (harvestdef.crawlattributes.template_text): robots policy
    obey/ignore, JavaScript extraction true/false, max hops its number."""
    return {name: template_text(name, value) for name, value in zip(names, values, strict=False)}


def metadata_items(context: RunContext, template: TemplateInfo, job_id: int, job: PackedJob,
                   prefix: str) -> str:
    """The warcinfo fields of the WARC writer (H3HeritrixTemplate.insertWarcInfoMetadata): the job's harvest
    info as it is fixed for good (harvestdef.crawltemplate.warcinfo_items reads it back)."""
    items = [
        ("harvestInfo.version", HARVEST_INFO_VERSION),
        ("harvestInfo.jobId", str(job_id)),
        ("harvestInfo.channel", context.channel),
        ("harvestInfo.harvestNum", str(context.harvest_num)),
        ("harvestInfo.origHarvestDefinitionID", str(context.harvest_id)),
        ("harvestInfo.maxBytesPerDomain", str(job.max_bytes_per_domain)),
        ("harvestInfo.maxObjectsPerDomain", str(job.max_objects_per_domain)),
        ("harvestInfo.templateName", template.name),
    ]
    if template.lastupdated is not None:
        items.append(("harvestInfo.templateLastUpdateDate", template.lastupdated.isoformat()))
    items += [
        ("harvestInfo.templateDescription", template.description),
        ("harvestInfo.origHarvestDefinitionName", context.harvest_name),
    ]
    if context.harvest_comments:
        items.append(("harvestInfo.origHarvestDefinitionComments", context.harvest_comments))
    items += [
        ("harvestInfo.scheduleName", context.schedule_name),
        ("harvestInfo.harvestFilenamePrefix", prefix),
        ("harvestInfo.jobSubmitDate", context.creation_date.isoformat()),
        ("harvestInfo.operator", context.operator),
        ("harvestInfo.audience", context.audience),
    ]
    entries = "\n".join(f"        <entry key={quoteattr(k)} value={quoteattr(v)}/>" for k, v in items)
    return f'    <property name="metadataItems">\n      <map>\n{entries}\n      </map>\n    </property>'


def fixed_harvest_info(document: str) -> tuple[dict[str, str], HarvestInfo] | None:
    """What ``metadata_items`` fixed in a job's filled template, read back for its DoOneCrawl: the harvest's
    names (the message's harvest_name, harvest_comments, audience, schedule_name) and its HarvestInfo;
    None when the template holds no warcinfo map of ours."""
    items = warcinfo_items(document)
    if items is None or "harvestInfo.jobSubmitDate" not in items:
        return None
    names = {"harvest_name": items.get("harvestInfo.origHarvestDefinitionName", ""),
             # written only when the harvest has comments, as NetarchiveSuite does
             "harvest_comments": items.get("harvestInfo.origHarvestDefinitionComments", ""),
             "audience": items.get("harvestInfo.audience", ""),
             "schedule_name": items.get("harvestInfo.scheduleName", "")}
    return names, HarvestInfo(version=items.get("harvestInfo.version", HARVEST_INFO_VERSION),
                              job_submit_date=items["harvestInfo.jobSubmitDate"])


def warc_writer_bean(options: WarcWriterOptions) -> str:
    """The archiver bean (NetarchiveSuite's NasWARCProcessor); prefix and metadata are placeholders in it."""
    def flag(value: bool) -> str:
        return "true" if value else "false"
    return (
        '<bean id="warcWriter" class="dk.netarkivet.harvester.harvesting.NasWARCProcessor">\n'
        '    <property name="template" value="${prefix}-${timestamp17}-${serialno}-${heritrix.pid}~${heritrix.hostname}~${heritrix.port}"/>\n'  # noqa: E501
        f'    <property name="compress" value="{flag(options.compress)}"/>\n'
        '    <property name="prefix" value="%{ARCHIVE_FILE_PREFIX_PLACEHOLDER}"/>\n'
        f'    <property name="maxFileSizeBytes" value="{options.max_file_size_bytes}"/>\n'
        f'    <property name="poolMaxActive" value="{options.pool_max_active}"/>\n'
        f'    <property name="writeRequests" value="{flag(options.write_requests)}"/>\n'
        f'    <property name="writeMetadata" value="{flag(options.write_metadata)}"/>\n'
        f'    <property name="writeMetadataOutlinks" value="{flag(options.write_metadata_outlinks)}"/>\n'
        f'    <property name="skipIdenticalDigests" value="{flag(options.skip_identical_digests)}"/>\n'
        f'    <property name="startNewFilesOnCheckpoint" value="{flag(options.start_new_files_on_checkpoint)}"/>\n'
        f'{placeholder(METADATA_ITEMS)}\n'
        '  </bean>'
    )


def fill_placeholders(text: str, values: dict[str, str], template_name: str) -> str:
    """Replace every %{NAME}; Umbra placeholders become empty, the dedup index location stays.

    A placeholder nobody knows is an error naming it and the template: a crawl must not start with one.
    """
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return values[name]
        if name == DEDUPLICATION_INDEX_LOCATION:
            return match.group(0)
        if name.startswith("UMBRA_"):
            return ""
        raise JobGenerationError(f"template {template_name!r} has the placeholder %{{{name}}}, "
                                 f"which job generation does not know how to fill")
    return PLACEHOLDER.sub(replace, text)


def filled_template(context: RunContext, template: TemplateInfo, job_id: int, job: PackedJob,
                    traps: Iterable[str]) -> str:
    prefix = context.harvestname_prefix(job_id)
    values = {
        "CRAWLERTRAPS_PLACEHOLDER": "\n".join(f"              <value>{escape(trap)}</value>" for trap in traps),
        "DEDUPLICATION_ENABLED_PLACEHOLDER": "true" if context.deduplication_enabled else "false",
        "ARCHIVER_BEAN_REFERENCE_PLACEHOLDER": '<ref bean="warcWriter"/>',
        "ARCHIVE_FILE_PREFIX_PLACEHOLDER": escape(prefix),
        METADATA_ITEMS: metadata_items(context, template, job_id, job, prefix),
        "MAX_TIME_SECONDS_PLACEHOLDER": str(job.max_running_time),
        **quota_values(job, context.object_limit_by_quota_enforcer),
        **attribute_values(context.attribute_names, job.attributes),
    }
    values["ARCHIVER_PROCESSOR_BEAN_PLACEHOLDER"] = fill_placeholders(
        warc_writer_bean(context.warc_writer), values, template.name)
    return fill_placeholders(template.document, values, template.name)


def _job_config_columns(job_ids: Sequence[int], jobs: Sequence[PackedJob], candidates: Candidates
                        ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The job_configs rows, a job's at a time as (job ids, configuration ids), each job's in configuration-id
    order: the primary key's order, in which PostgreSQL appends each index entry to the last leaf page instead
    of searching for its place."""
    config_ids = np.frombuffer(candidates.config_id, dtype=np.int64)
    for job_id, job in zip(job_ids, jobs, strict=True):
        if job.members:
            members = np.sort(config_ids[np.frombuffer(job.members, dtype=np.int64)])
            yield np.full(len(members), job_id, dtype=np.int64), members


def _traps_by_job(jobs: Sequence[PackedJob], seeds: MemberSeeds) -> dict[int, list[tuple[str, str]]]:
    """(domain name, stored traps) of each job's members that have traps, in member index order, by the job's
    position: one pass over the few candidates with traps instead of a lookup per member."""
    if not seeds.traps:
        return {}
    job_of = np.full(len(seeds), -1, dtype=np.int64)
    for number, job in enumerate(jobs):
        job_of[np.frombuffer(job.members, dtype=np.int64)] = number
    found: dict[int, list[tuple[str, str]]] = {}
    for index in sorted(seeds.traps):
        found.setdefault(int(job_of[index]), []).append(seeds.traps[index])
    return found


class JobWriter:
    """Writes the jobs of one run into the caller's transaction."""

    def __init__(self, conn: Connection, context: RunContext, templates: dict[str, TemplateInfo],
                 job_ids: Sequence[int], bulk_check_threshold: int = BULK_CHECK_THRESHOLD) -> None:
        self.conn = conn
        self.bulk_check_threshold = bulk_check_threshold
        self.context = context
        self.templates = templates
        self.job_ids = list(job_ids)

    def write(self, jobs: Sequence[PackedJob], candidates: Candidates, seeds: MemberSeeds) -> list[int]:
        """Write every job, with the seed lists and traps selection kept in ``seeds``; returns the job ids in
        order."""
        missing = {job.template_name for job in jobs} - set(self.templates)
        if missing:
            raise JobGenerationError(f"no crawl template named {', '.join(sorted(missing))}")
        started = time.monotonic()
        if len(self.job_ids) != len(jobs):
            raise JobGenerationError(f"{len(jobs)} jobs but {len(self.job_ids)} job ids allocated")
        job_ids = self.job_ids
        self._insert_jobs(job_ids, jobs)
        count = sum(len(job) for job in jobs)
        if not is_postgresql(self.conn.engine):
            copy_rows(self.conn, "job_configs", JOB_CONFIG_COLUMNS,
                      ((job_id, candidates.config_id[i]) for job_id, job in zip(job_ids, jobs, strict=True)
                       for i in job.members))
        elif count >= self.bulk_check_threshold and self._lock_job_tables():
            # PostgreSQL checks a foreign key row by row (20 s for a national snapshot's 2 million rows);
            # added back, they are checked in one join. The locks keep everyone else out meanwhile.
            with constraints_set_aside(self.conn, ["job_configs"], unique=False, indexes=False):
                copy_integers(self.conn, "job_configs", JOB_CONFIG_COLUMNS,
                              _job_config_columns(job_ids, jobs, candidates))
        else:
            copy_integers(self.conn, "job_configs", JOB_CONFIG_COLUMNS, _job_config_columns(job_ids, jobs, candidates))
        loaded = time.monotonic()
        self._fill_jobs(job_ids, jobs, seeds)
        log.info("harvest %s: %d job_configs rows loaded in %.1f s, seed lists and templates written in %.1f s",
                 self.context.harvest_id, count, loaded - started, time.monotonic() - loaded)
        return job_ids

    def _lock_job_tables(self) -> bool:
        """jobs and job_configs for the bulk load, if both are free now (never waiting: a transaction that
        reads job_configs and then writes jobs cannot deadlock with us, and the tick never sleeps here)."""
        if lock_tables_nowait(self.conn, [("jobs", "SHARE ROW EXCLUSIVE"), ("job_configs", "ACCESS EXCLUSIVE")]):
            return True
        log.warning("jobs/job_configs are busy; writing job_configs with row-by-row foreign-key checks")
        return False

    def _insert_jobs(self, job_ids: Sequence[int], jobs: Sequence[PackedJob]) -> None:
        context = self.context
        rows = [new_job_row(
            job_id=job_id, harvest_id=context.harvest_id, channel=context.channel, snapshot=context.snapshot,
            forcemaxbytes=job.max_bytes_per_domain, forcemaxcount=job.max_objects_per_domain,
            forcemaxrunningtime=job.max_running_time, orderxml=job.template_name, harvest_num=context.harvest_num,
            creationdate=context.creation_date, num_configs=len(job),
            harvestname_prefix=context.harvestname_prefix(job_id), expected_objects=job.expected_total,
        ) for job_id, job in zip(job_ids, jobs, strict=True)]
        # Job generation writes thousands of jobs at once; the run's own audit row on the harvest definition
        # records it, so the jobs are not audited one by one.
        JobRepository(self.conn).insert(rows, audit=False)

    def _fill_jobs(self, job_ids: Sequence[int], jobs: Sequence[PackedJob], seeds: MemberSeeds) -> None:
        """Each job's seed list and filled template, from its members' seed lists and traps as selection read
        them; a job's members in index order are in domain-name order."""
        fixed_traps = list(self.context.global_traps) + list(self.context.harvest_traps)
        traps_of_job = _traps_by_job(jobs, seeds)
        updates: list[tuple[int, str, str]] = []
        for number, (job_id, job) in enumerate(zip(job_ids, jobs, strict=True)):
            traps = dict.fromkeys(fixed_traps)
            for domain, stored in traps_of_job.get(number, ()):
                scope = domain_scope(domain)
                for trap in parse_stored_traps(stored):
                    traps.setdefault(f"{scope}(?:{trap})", None)
            template = self.templates[job.template_name]
            members = np.sort(np.frombuffer(job.members, dtype=np.int64)).tolist()
            updates.append((job_id, "\n".join(dict.fromkeys(seeds_of([seeds.text(members)]))),
                            filled_template(self.context, template, job_id, job, traps)))
            if len(updates) >= 20:
                self._write_updates(updates)
        self._write_updates(updates)

    def _write_updates(self, updates: list[tuple[int, str, str]]) -> None:
        JobRepository(self.conn).write_documents(updates)
        updates.clear()
