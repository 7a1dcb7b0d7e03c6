"""The message contracts between the scheduler, the harvest controllers and the monitor (docs/messages.md).

Wire form: UTF-8 JSON, one object per message::

    {"type": "CrawlStatus", "version": "1.1", "sent": "2025-03-01T12:00:00.000000Z", "body": {...}}

``type`` is the class name (``MESSAGE_TYPES``), ``version`` is ``SCHEMA_VERSION`` as "MAJOR.MINOR",
``sent`` the sending time in UTC and ``body`` the dataclass fields. Enums (JobStatus, StopReason) travel
by member name, never by ordinal.

Rules of the receiving side (``decode``):
* Every message is checked on receipt against the annotations of its class; a bad one raises MessageError
  naming the JSON path (``body.domain_report.domains[3].bytes: expected an integer, got "x"``), which the
  transport puts on the dead-letter queue. Decoding never raises anything else for bad bytes.
* Another major version raises MessageVersionError. A newer minor version and unknown fields, at any level,
  are accepted and ignored, so a sender may add fields before its readers know them.
* A field typed ``T | None`` or having a default may be absent.

The time a message was sent belongs to the envelope, not to the message: ``encode(message, sent_at)``
writes it (default now) and ``decode_with_time`` returns ``(message, sent_at)``; ``decode`` drops it.

This package does no I/O and knows no queue names: the queue transports carry the bytes.
"""

from harvestdef.messages._base import SCHEMA_VERSION, Message, MessageError, MessageVersionError
from harvestdef.messages._codec import decode, decode_with_time, encode
from harvestdef.messages._types import (
    BUDGET_END_CAUSES,
    CRAWL_END_CAUSES,
    CRAWL_LOG_LINE_LENGTH,
    CRAWL_LOG_TAIL_LINES,
    CRAWL_PROGRESS_STATUSES,
    CRAWL_STATUS_REPORTED,
    CRAWL_TALLY_DOMAINS,
    ERROR_DETAILS_LIMIT,
    ERROR_SUMMARY_LIMIT,
    FIXED_FINDINGS,
    HARVEST_INFO_VERSION,
    JOB_EVENT_KINDS,
    LIVE_CHANGE_KINDS,
    LIVE_CHANGE_RESULTS,
    MESSAGE_TYPES,
    NO_OBJECT,
    NO_SEED_IN_CRAWL_LOG,
    NOT_IN_REPORT,
    OPERATOR_END_CAUSES,
    RECORDED_BEFORE_REASONS,
    AliasRecord,
    ChannelInfo,
    ClaimAnswer,
    ClaimRequest,
    CrawlEnd,
    CrawlProgress,
    CrawlStatus,
    CrawlTally,
    DeduplicationSource,
    DomainCount,
    DomainReport,
    DomainStats,
    DoOneCrawl,
    FrontierLine,
    FrontierReport,
    HandledChange,
    HarvesterReady,
    HarvesterStatus,
    HarvestInfo,
    JobEvent,
    LiveChange,
    LiveChangeResult,
    NothingHarvested,
    PreHarvestMetadata,
    QaSummary,
    RegistrationAnswer,
    RegistrationRequest,
    clip,
)

__all__ = [
    "BUDGET_END_CAUSES",
    "CRAWL_END_CAUSES",
    "CRAWL_LOG_LINE_LENGTH",
    "CRAWL_LOG_TAIL_LINES",
    "CRAWL_PROGRESS_STATUSES",
    "CRAWL_STATUS_REPORTED",
    "CRAWL_TALLY_DOMAINS",
    "ERROR_DETAILS_LIMIT",
    "ERROR_SUMMARY_LIMIT",
    "HARVEST_INFO_VERSION",
    "MESSAGE_TYPES",
    "FIXED_FINDINGS",
    "NO_OBJECT",
    "NO_SEED_IN_CRAWL_LOG",
    "NOT_IN_REPORT",
    "OPERATOR_END_CAUSES",
    "RECORDED_BEFORE_REASONS",
    "SCHEMA_VERSION",
    "AliasRecord",
    "DeduplicationSource",
    "ChannelInfo",
    "ClaimAnswer",
    "ClaimRequest",
    "CrawlEnd",
    "CrawlProgress",
    "CrawlStatus",
    "CrawlTally",
    "DoOneCrawl",
    "DomainCount",
    "DomainReport",
    "DomainStats",
    "FrontierLine",
    "FrontierReport",
    "HarvestInfo",
    "HarvesterReady",
    "HandledChange",
    "HarvesterStatus",
    "JOB_EVENT_KINDS",
    "LIVE_CHANGE_KINDS",
    "LIVE_CHANGE_RESULTS",
    "JobEvent",
    "LiveChange",
    "LiveChangeResult",
    "Message",
    "MessageError",
    "MessageVersionError",
    "NothingHarvested",
    "QaSummary",
    "PreHarvestMetadata",
    "RegistrationAnswer",
    "RegistrationRequest",
    "clip",
    "decode",
    "decode_with_time",
    "encode",
]
