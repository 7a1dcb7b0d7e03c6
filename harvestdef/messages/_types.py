"""The message types and the records they carry (docs/messages.md, The message types).

Each class is a frozen dataclass; its field annotations are the schema that the codec checks on both
encode and decode, so a field added here is validated without more code. Checks that a field's type cannot
express (which statuses a CrawlStatus may carry, for example) live in ``__post_init__`` and raise
MessageError with the field's path. Inside bodies, times are ISO-8601 strings only where a field says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from harvestdef.messages._base import Message, MessageError, shown
from harvestdef.model.status import JobStatus, StopReason

# --- DoOneCrawl --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AliasRecord:
    """A domain of the job that is an alias of another one (written as an alias record in the metadata WARC)."""

    domain: str
    alias_of: str
    last_change: str  # ISO-8601 time the alias was last confirmed


@dataclass(frozen=True, slots=True)
class DeduplicationSource:
    """An earlier job whose stored partitions hold the captures of some of the job's domains."""

    harvest_id: int
    job_id: int


@dataclass(frozen=True, slots=True)
class PreHarvestMetadata:
    """What the controller writes into the metadata WARC besides its own files (docs/harvester.md,
    Post-processing), and where the job's deduplication index comes from.

    ``deduplication_sources`` (schema 1.6), newest first: the controller builds the job's index from their
    partitions of the job's own domains (harvestdef.dedup.jobindex). ``deduplication_index`` is the one
    index file of a whole run that schedulers before 1.6 built, still sent for runs made ready so.
    """

    aliases: list[AliasRecord]
    deduplication_job_ids: list[int] | None  # None = deduplication is off for this job
    deduplication_index: str | None = None  # archive-store relative path of a run's index file
    deduplication_sources: list[DeduplicationSource] | None = None


#: NetarchiveSuite's PersistentJobData version, written as harvestInfo.version in harvestInfo.xml and the warcinfo map.
HARVEST_INFO_VERSION = "0.6"


@dataclass(frozen=True, slots=True)
class HarvestInfo:
    """What harvestInfo.xml says beyond the rest of a DoOneCrawl, as job generation fixed it.

    Job generation writes these values once, into the warcinfo map of the job's crawl template (so every
    WARC of the job repeats them); the dispatcher reads them back from there, and the harvester writes
    them into harvestInfo.xml as they are, so the file and the WARCs agree.
    """

    version: str  # harvestInfo.version
    job_submit_date: str  # harvestInfo.jobSubmitDate: ISO-8601, when job generation created the job


@dataclass(frozen=True, slots=True)
class DoOneCrawl(Message):
    """Scheduler -> the job queue of the job's harvest channel, when the dispatcher submits a NEW job.

    A controller serving that channel takes it, claims ``attempt_id`` (ClaimRequest) and acknowledges it
    only after the job is persisted in its job directory. Limits use NetarchiveSuite's -1 = unlimited.

    ``harvest_name``, ``harvest_comments``, ``audience`` and ``schedule_name`` are the values job
    generation fixed in the template's warcinfo map, with ``harvest_info``; a job whose template holds no
    such map has nothing fixed, and then carries the harvest's values at dispatch and no ``harvest_info``.
    A scheduler from before ``harvest_info`` never sends it either (messages still queued at an upgrade):
    the harvester then writes harvestInfo.xml as it did, see harvester.jobdir.harvest_info_xml.
    """

    job_id: int
    attempt_id: str
    harvest_id: int
    harvest_name: str
    harvest_comments: str
    audience: str
    schedule_name: str
    channel: str
    snapshot: bool
    max_objects_per_domain: int  # -1 = unlimited
    max_bytes_per_domain: int  # -1 = unlimited
    max_running_time: int  # seconds; 0 = no time limit
    template_name: str
    template: str  # the fully edited crawler-beans.cxml
    seeds: list[str]
    domain_configurations: dict[str, str]  # domain name -> configuration name
    harvest_num: int
    archive_file_prefix: str
    metadata: PreHarvestMetadata
    harvest_info: HarvestInfo | None = None


# --- CrawlStatus -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NothingHarvested:
    """The finding that a domain configuration got nothing from a job: no object at all, or every seed of
    it in crawl.log failed (not fetched, or answered with an HTTP error).

    ``reason`` says it in English with the crawl.log code of the most telling seed outcome ("DNS lookup
    failed (-6) for http://dead.example/ (and 2 other seeds failed)"), or is one of FIXED_FINDINGS when no
    seed of the domain is in crawl.log; ``fetch_status`` is that code (an HTTP status for a seed that was
    answered; None for a fixed finding), ``seed`` that seed and ``other_seeds_failed`` (schema 1.7) how many
    more of the domain's seeds failed, so a page can say the reason in its own language from the parts.
    """

    reason: str
    fetch_status: int | None = None
    seed: str | None = None
    other_seeds_failed: int | None = None


#: The findings that name no seed, word for word (a page translates them by these words).
NO_SEED_IN_CRAWL_LOG = "no object harvested: no seed of the domain is in crawl.log"
NO_OBJECT = "no object harvested"
NOT_IN_REPORT = "no object harvested: the domain is not in the job's report"
RECORDED_BEFORE_REASONS = "no object harvested (recorded before reasons were kept)"
FIXED_FINDINGS = (NO_SEED_IN_CRAWL_LOG, NO_OBJECT, NOT_IN_REPORT, RECORDED_BEFORE_REASONS)


@dataclass(frozen=True, slots=True)
class QaSummary:
    """A job's QA report in four numbers (harvester/postprocess/qa.py has the rules): its seeds, those not
    captured, the captured pages that miss embedded resources, and those resources. The full report is in
    the job's metadata WARC."""

    seeds_total: int
    seeds_not_captured: int
    pages_with_missing_resources: int
    missing_resources: int


@dataclass(frozen=True, slots=True)
class DomainStats:
    """One domain's figures in a job (NetarchiveSuite's DomainStats); becomes a historyinfo row at the scheduler.

    ``nothing_harvested`` (schema 1.1) is the finding that the configuration got nothing, None when it
    got something; a controller speaking 1.0 sends none, and the scheduler then flags a row with no
    object itself.
    """

    domain: str
    configuration: str
    objects: int
    bytes: int
    novel_objects: int
    novel_bytes: int
    duplicate_objects: int
    duplicate_bytes: int
    stop_reason: StopReason
    nothing_harvested: NothingHarvested | None = None


@dataclass(frozen=True, slots=True)
class DomainReport:
    """The per-domain report of a finished job; ``default_stop_reason`` comes from progress-statistics.log."""

    default_stop_reason: StopReason
    domains: list[DomainStats]


#: The only statuses a controller reports (as in NetarchiveSuite's CrawlStatusMessage): the rest are the
#: scheduler's to set.
CRAWL_STATUS_REPORTED: tuple[JobStatus, ...] = (JobStatus.STARTED, JobStatus.DONE, JobStatus.FAILED)

#: The most characters of CrawlStatus.harvest_errors and .upload_errors the scheduler keeps: the size of
#: NetarchiveSuite's jobs.harvest_errors and jobs.upload_errors columns (VARCHAR(300)).
ERROR_SUMMARY_LIMIT = 300
#: The most characters of CrawlStatus.harvest_error_details and .upload_error_details the scheduler keeps:
#: the size of jobs.harvest_error_details and jobs.upload_error_details (VARCHAR(10000)).
ERROR_DETAILS_LIMIT = 10_000


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters; a cut text ends with "…", so a reader sees it was cut."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class HandledChange:
    """A live change the controller handled during the crawl, as it answered it (LiveChangeResult)."""

    version: int
    state: str  # one of LIVE_CHANGE_RESULTS
    reason: str
    happened_at: str  # ISO-8601 with a UTC offset


#: CrawlEnd.cause values: an operator's stop or fail (a control action), then the budgets of the whole
#: crawl, as Heritrix ends it (CrawlLimitEnforcer's maxDocumentsDownload, maxBytesDownload and
#: maxTimeSeconds) or the controller does at the job's max running time.
OPERATOR_END_CAUSES: tuple[str, ...] = ("stop", "fail")
BUDGET_END_CAUSES: tuple[str, ...] = ("max_objects", "max_bytes", "max_running_time")
CRAWL_END_CAUSES: tuple[str, ...] = OPERATOR_END_CAUSES + BUDGET_END_CAUSES


@dataclass(frozen=True, slots=True)
class CrawlEnd:
    """Why a crawl ended before its frontier ran dry, when that was asked for and no error (schema 1.5).

    ``cause`` is one of CRAWL_END_CAUSES. An operator's stop or fail names the ``user`` who asked and the
    job change (``change``, its version) the controller carried out; a budget names its ``limit`` (objects,
    bytes or seconds; 0 when the controller could not tell). ``at`` is when the controller ended the crawl,
    ISO-8601 with a UTC offset.
    """

    cause: str
    at: str
    user: str = ""
    change: int = 0
    limit: int = 0

    def __post_init__(self) -> None:
        if self.cause not in CRAWL_END_CAUSES:
            raise MessageError("cause", f"expected one of {', '.join(CRAWL_END_CAUSES)}, got {shown(self.cause)}")
        _check_time("at", self.at)
        if self.cause in OPERATOR_END_CAUSES and (not self.user or self.change < 1):
            raise MessageError("user", f"an operator's {self.cause} names its user and its change (from 1 on)")

    @property
    def is_operator_end(self) -> bool:
        return self.cause in OPERATOR_END_CAUSES


@dataclass(frozen=True, slots=True)
class CrawlStatus(Message):
    """Harvest controller -> scheduler's status queue: STARTED once the granted job is persisted, then DONE
    or FAILED after post-processing (also for a leftover job found at start-up).

    DONE carries the domain report; FAILED carries it when anything was harvested; on STARTED it is ignored.
    The error fields list every failed step, one per line, with details in the ``*_details`` fields.

    ``store_outage`` (schema 1.1) on FAILED: the crawl and its post-processing went well, only the archive
    store could not take the files; the controller keeps them and reports again. On DONE: that second
    report, sent once every file is stored, which may turn the FAILED job DONE.

    ``qa_summary`` (a 1.4 addition; older readers ignore it) on DONE or FAILED: the job's QA report in
    numbers, None when post-processing could not make one.

    ``live_changes`` (1.4) on DONE or FAILED: every live change the controller handled, as it answered
    each. The scheduler settles any still pending from them before it refuses the rest, so an answer that
    reaches it after the job's end (a stop's, say) is not lost to that end.

    ``crawl_end`` (1.5) on DONE or FAILED: the crawl was ended as asked, by an operator's stop or fail or at
    one of its budgets; None when it ended by itself or for a reason among the errors. Such an end is never
    among ``harvest_errors``. A controller from before 1.5 sends none and names an operator's stop or fail
    in its harvest errors instead (harvestdef.livechanges.end_description), which the scheduler reads as
    this field.
    """

    job_id: int
    attempt_id: str
    controller_id: str
    status: JobStatus
    domain_report: DomainReport | None = None
    harvest_errors: str = ""
    harvest_error_details: str = ""
    upload_errors: str = ""
    upload_error_details: str = ""
    store_outage: bool = False
    qa_summary: QaSummary | None = None
    live_changes: list[HandledChange] = field(default_factory=list)
    crawl_end: CrawlEnd | None = None

    def __post_init__(self) -> None:
        for number, change in enumerate(self.live_changes):
            if change.state not in ("applied", "refused"):
                raise MessageError(f"live_changes[{number}].state",
                                   f"expected applied or refused, got {shown(change.state)}")
        if self.status not in CRAWL_STATUS_REPORTED:
            name = getattr(self.status, "name", repr(self.status))
            raise MessageError("status", f"a CrawlStatus reports STARTED, DONE or FAILED, not {name}")
        if self.status == JobStatus.DONE and self.domain_report is None:
            raise MessageError("domain_report", "required when status is DONE")


# --- Monitoring --------------------------------------------------------------------------------------------

#: The bounds of CrawlProgress.crawl_log_tail: Heritrix's crawlLogTail has 10 lines; a crawl.log line is a
#: URL, a discovery path and a referrer, so a line past 2000 characters is cut (``clip``) by the sender.
CRAWL_LOG_TAIL_LINES = 50
CRAWL_LOG_LINE_LENGTH = 2000

#: CrawlProgress.status values in NetarchiveSuite's order (CrawlProgressMessage.CrawlStatus): the index is
#: what runningjobsmonitor.status stores.
CRAWL_PROGRESS_STATUSES: tuple[str, ...] = (
    "PRE_CRAWL", "CRAWLER_ACTIVE", "CRAWLER_EMPTY", "CRAWLER_PAUSING", "CRAWLER_PAUSED", "CRAWLING_FINISHED",
)


@dataclass(frozen=True, slots=True)
class CrawlProgress(Message):
    """Harvest controller -> monitor queue, every crawl-loop turn (NetarchiveSuite's CrawlProgressMessage);
    the fields are the runningjobsmonitor columns. Its status is PRE_CRAWL while the crawler has no
    controller state yet (the job built, not launched).
    """

    job_id: int
    attempt_id: str
    harvest_id: int
    controller_id: str
    host_url: str  # the crawler's job console URL
    status: str  # one of CRAWL_PROGRESS_STATUSES
    crawler_state: str  # Heritrix's crawlControllerState, free text (RUNNING, EMPTY, ...)
    progress: float  # percent of discovered URIs downloaded
    queued_files: int
    total_queues: int
    active_queues: int
    retired_queues: int
    exhausted_queues: int
    elapsed_seconds: int
    alert_count: int
    downloaded_files: int
    discovered_files: int
    current_processed_kb_per_sec: int
    processed_kb_per_sec: int
    current_processed_docs_per_sec: float
    processed_docs_per_sec: float
    active_toe_count: int
    total_bytes_written: int
    frontier_short_report: str = ""
    # 1.3: the crawler's newest crawl.log lines, newest first (Heritrix's crawlLogTail), at most
    # CRAWL_LOG_TAIL_LINES of at most CRAWL_LOG_LINE_LENGTH characters: a progress message goes out at every
    # crawl-loop turn, so its size stays bounded whatever URLs the crawl meets.
    crawl_log_tail: list[str] = field(default_factory=list)
    # 1.3: host_url is the job page of a real Heritrix 3's web console, which an operator can open; the
    # bundled engine serves only the REST API subset the controller uses, so its URL is not one.
    is_heritrix_console: bool = False

    def __post_init__(self) -> None:
        if self.status not in CRAWL_PROGRESS_STATUSES:
            raise MessageError(
                "status", f"expected one of {', '.join(CRAWL_PROGRESS_STATUSES)}, got {shown(self.status)}")
        if len(self.crawl_log_tail) > CRAWL_LOG_TAIL_LINES:
            raise MessageError("crawl_log_tail", f"{len(self.crawl_log_tail)} lines (at most {CRAWL_LOG_TAIL_LINES})")
        for number, line in enumerate(self.crawl_log_tail):
            if len(line) > CRAWL_LOG_LINE_LENGTH:
                raise MessageError(f"crawl_log_tail[{number}]",
                                   f"{len(line)} characters long (at most {CRAWL_LOG_LINE_LENGTH})")


@dataclass(frozen=True, slots=True)
class FrontierLine:
    """One queue of the crawler's frontier report (a frontierreportmonitor row)."""

    domain_name: str
    current_size: int
    total_enqueues: int
    session_balance: int
    last_cost: int
    average_cost: float  # Heritrix prints it as a double: total expended over URIs charged
    last_dequeue_time: str
    wake_time: str
    total_spend: int
    total_budget: int
    error_count: int
    last_peek_uri: str
    last_queued_uri: str


@dataclass(frozen=True, slots=True)
class FrontierReport(Message):
    """Harvest controller -> monitor queue, now and then while crawling (NetarchiveSuite's
    FrontierReportMessage): the top queues as chosen by ``filter_id`` (e.g. TopTotalEnqueuesFilter)."""

    job_id: int
    attempt_id: str
    controller_id: str
    filter_id: str
    lines: list[FrontierLine]


@dataclass(frozen=True, slots=True)
class DomainCount:
    """One domain of the job as its crawl.log counts it so far (the domain report's rules)."""

    domain: str
    objects: int
    bytes: int


#: At most this many domains in one CrawlTally; the rest go in the next ones.
CRAWL_TALLY_DOMAINS = 5000


@dataclass(frozen=True, slots=True)
class CrawlTally(Message):
    """Harvest controller -> monitor queue, with each progress report while crawling (schema 1.4): what the
    crawl's crawl.log says so far, read by the controller as it grows. ``status_counts``: lines per fetch
    status code (as text: "200", "-6", "1"), all of them so far; ``domains``: the job's domains whose counts
    changed since the previous tally, with their counts so far (objects and bytes as the final domain
    report counts them), at most CRAWL_TALLY_DOMAINS; ``lines``: the crawl.log lines read so far."""

    job_id: int
    attempt_id: str
    controller_id: str
    lines: int
    status_counts: dict[str, int]
    domains: list[DomainCount]

    def __post_init__(self) -> None:
        if len(self.domains) > CRAWL_TALLY_DOMAINS:
            raise MessageError("domains", f"{len(self.domains)} domains (at most {CRAWL_TALLY_DOMAINS})")


# --- Controllers and the scheduler -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HarvesterReady(Message):
    """Idle, unpaused harvest controller -> scheduler, when it becomes idle and then now and then while it
    stays so: it can take a job from ``channels`` (in its order of preference)."""

    controller_id: str
    host: str
    channels: list[str]


@dataclass(frozen=True, slots=True)
class HarvesterStatus(Message):
    """Harvest controller -> scheduler, at a steady interval, busy or not: what operators see of the
    controller and what the scheduler's supervision uses to tell it is alive."""

    controller_id: str
    host: str
    pid: int
    version: str
    channels: list[str]
    free_disk_bytes: int
    load_average: float
    memory_rss_bytes: int
    paused: bool
    pause_reason: str = ""
    current_job_id: int | None = None
    current_attempt_id: str | None = None
    current_job_state: str = ""  # e.g. "crawling", "post-processing", "idle"
    # Seconds until the next heartbeat (1.2): the scheduler counts this controller lost after
    # lostAfterHeartbeats of them. 0: not stated (a 1.1 controller), judged by the scheduler's own setting.
    heartbeat_interval: float = 0.0
    # Bytes the controller keeps free in its serverDir (minSpaceLeft, 1.4): below it the controller takes no
    # job, and the job page says the running crawl's disk is short. 0: not stated (an older controller).
    min_space_left: int = 0


@dataclass(frozen=True, slots=True)
class ClaimRequest(Message):
    """Harvest controller -> scheduler, after taking a DoOneCrawl and before persisting it (and again with
    ``resume`` when a checkpointed crawl wants to go on after a restart). The attempt is granted to one
    controller only; the answer goes to ``reply_queue``."""

    job_id: int
    attempt_id: str
    controller_id: str
    reply_queue: str
    resume: bool = False


@dataclass(frozen=True, slots=True)
class ClaimAnswer(Message):
    """Scheduler -> the claiming controller's ``reply_queue``: whether it may run the attempt. A refusal
    says why in ``reason``; a grant names in ``control_queue`` the controller's durable queue for live
    changes."""

    job_id: int
    attempt_id: str
    controller_id: str
    granted: bool
    reason: str = ""
    control_queue: str = ""


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    """A harvest channel as the scheduler knows it."""

    name: str
    snapshot: bool


@dataclass(frozen=True, slots=True)
class RegistrationRequest(Message):
    """Harvest controller -> scheduler, at start-up before it listens to any job queue: the channels it is
    configured to serve (NetarchiveSuite's HarvesterRegistrationRequest)."""

    controller_id: str
    host: str
    channels: list[str]
    reply_queue: str


@dataclass(frozen=True, slots=True)
class RegistrationAnswer(Message):
    """Scheduler -> the registering controller's reply queue. Accepted: ``channels`` describes each of them.
    Refused: ``reason`` names every unknown channel, and the controller stops."""

    controller_id: str
    accepted: bool
    channels: list[ChannelInfo]
    reason: str = ""


#: JobEvent.kind values.
JOB_EVENT_KINDS: tuple[str, ...] = ("checkpoint", "resume")


@dataclass(frozen=True, slots=True)
class JobEvent(Message):
    """Harvest controller -> scheduler's status queue (schema 1.1): something that happened to a job's
    crawl beside its status, for the job page. ``checkpoint``: the crawl wrote checkpoint ``checkpoint``
    (at the controller's shutdown, or asked for through the API); ``resume``: the crawl was launched again
    from checkpoint ``checkpoint``. ``happened_at`` is ISO-8601 with a UTC offset."""

    job_id: int
    attempt_id: str
    controller_id: str
    kind: str
    checkpoint: str
    happened_at: str

    def __post_init__(self) -> None:
        if self.kind not in JOB_EVENT_KINDS:
            raise MessageError("kind", f"expected one of {', '.join(JOB_EVENT_KINDS)}, got {shown(self.kind)}")
        if not self.checkpoint or len(self.checkpoint) > 300:
            raise MessageError("checkpoint", "expected a checkpoint name of 1 to 300 characters")
        try:
            when = datetime.fromisoformat(self.happened_at)
        except (TypeError, ValueError):
            when = None
        if when is None or when.utcoffset() is None:
            raise MessageError("happened_at", f"expected an ISO-8601 time with a UTC offset, got "
                                              f"{shown(self.happened_at)}")


#: LiveChange.kind values: the control actions, then the live changes (harvestdef/repositories/jobchanges.py).
LIVE_CHANGE_KINDS: tuple[str, ...] = ("pause", "resume", "checkpoint", "stop", "fail", "reject", "unreject",
                                      "budget", "delete_queued", "add_uris", "politeness")
#: LiveChangeResult.state values.
LIVE_CHANGE_RESULTS: tuple[str, ...] = ("applied", "refused")


def _check_json_object(path: str, text: str) -> None:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise MessageError(path, f"expected a JSON object, got {shown(text)}")


@dataclass(frozen=True, slots=True)
class LiveChange(Message):
    """Scheduler -> the control queue of the controller holding the job's claim (schema 1.4): one change
    of the running job, to apply in ``version`` order. Sent again until the controller answers, so a
    controller applies a version once and answers a repeated one with what it answered before.
    ``payload`` is the change's JSON object as the API took it; ``created`` is ISO-8601 with a UTC offset."""

    job_id: int
    attempt_id: str
    version: int
    kind: str
    payload: str
    author: str
    created: str

    def __post_init__(self) -> None:
        if self.kind not in LIVE_CHANGE_KINDS:
            raise MessageError("kind", f"expected one of {', '.join(LIVE_CHANGE_KINDS)}, got {shown(self.kind)}")
        if self.version < 1:
            raise MessageError("version", f"expected a version from 1 on, got {self.version}")
        _check_json_object("payload", self.payload)
        _check_time("created", self.created)


@dataclass(frozen=True, slots=True)
class LiveChangeResult(Message):
    """Harvest controller -> scheduler's status queue (schema 1.4): change ``version`` of the job was
    applied to the crawl, or refused with ``reason`` (the crawler's words). ``happened_at`` is ISO-8601
    with a UTC offset."""

    job_id: int
    attempt_id: str
    controller_id: str
    version: int
    state: str
    reason: str
    happened_at: str

    def __post_init__(self) -> None:
        if self.state not in LIVE_CHANGE_RESULTS:
            raise MessageError("state", f"expected one of {', '.join(LIVE_CHANGE_RESULTS)}, got {shown(self.state)}")
        _check_time("happened_at", self.happened_at)


def _check_time(path: str, value: str) -> None:
    try:
        when = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        when = None
    if when is None or when.utcoffset() is None:
        raise MessageError(path, f"expected an ISO-8601 time with a UTC offset, got {shown(value)}")


#: Wire name (the ``type`` of the envelope) -> message class.
MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.__name__: cls
    for cls in (
        DoOneCrawl, CrawlStatus, CrawlProgress, FrontierReport, HarvesterReady, HarvesterStatus,
        ClaimRequest, ClaimAnswer, RegistrationRequest, RegistrationAnswer, JobEvent, LiveChange,
        LiveChangeResult, CrawlTally,
    )
}
