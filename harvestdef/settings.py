"""Settings: every default in one place, loaded once into frozen values.

Keys follow NetarchiveSuite's setting paths without the leading ``settings.``, for
example ``[harvester.scheduler.jobGen.config] maxTotalSize = 8000000``; settings of HarvestSuite's own
live under ``[harvestsuite.…]``. Values are read in the order defaults < TOML file < environment <
command line. An environment variable ``HARVESTSUITE__SECTION__KEY`` (sections joined by ``__``, matched
without regard to case) overrides the file.

An unknown key or a value of the wrong type stops start-up with an error naming the key, where it came
from and the type expected. A setting with a fixed set of values is typed as a ``Literal`` of them, and a
value outside the set stops start-up the same way, naming the allowed values: a misspelt naming convention
must not quietly name every WARC file the other way. Components never read settings themselves: a
``from_settings()`` classmethod picks the values it needs and passes plain arguments to ``__init__``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import tomllib
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_type_hints

from harvestdef.destinations import DestinationPolicy
from harvestdef.errors import SettingsError, ValidationError

log = logging.getLogger(__name__)

ENV_PREFIX = "HARVESTSUITE__"
CONFIG_ENV = "HARVESTSUITE_CONFIG"
PROJECT_ROOT = Path(__file__).resolve().parent.parent

# The settings that take one of a fixed set of values; the components that act on them import these types.
JobGeneratorClass = Literal["DefaultJobGenerator", "FixedDomainConfigurationCountJobGenerator"]
NamingConvention = Literal["LegacyNamingConvention", "CollectionPrefixNamingConvention"]
ShutdownAction = Literal["checkpoint", "finish"]
MetadataFileNameFormat = Literal["default", "prefix"]
CrawlerKind = Literal["engine", "browser"]


# Keys that were settings once and are no more, with what replaced them: an old settings file stops start-up
# with this, not with "unknown setting", so whoever upgrades learns what to write instead.
REPLACED_SETTINGS: dict[str, str] = {
    "harvestsuite.scheduler.controllersilencetimeout": (
        "harvestsuite.scheduler.controllerSilenceTimeout (seconds) is replaced by "
        "harvestsuite.scheduler.lostAfterHeartbeats, a count of the controller's heartbeat intervals (each "
        "heartbeat states its controller's interval, so controllers with different intervals are judged "
        "alike), and harvestsuite.scheduler.resubmitLostAfter; for the old behaviour write lostAfterHeartbeats "
        "= controllerSilenceTimeout / harvestsuite.harvester.heartbeatInterval (300 / 30 = 10) and "
        "resubmitLostAfter = 0"),
    "harvestsuite.crawler.useragent": (
        "harvestsuite.crawler.userAgent was never applied: the user agent is the crawl template's "
        "(metadata.userAgentTemplate, with operatorContactUrl filled in), as in Heritrix; remove the line"),
    "harvestsuite.scheduler.dedupindexbuilders": (
        "harvestsuite.scheduler.dedupIndexBuilders is no longer read: the scheduler builds no deduplication "
        "index; each harvest controller builds its job's own from the partitions of the job's domains; "
        "remove the line"),
}


def _unknown(dotted: str, where: str) -> SettingsError:
    replaced = REPLACED_SETTINGS.get(dotted.lower())
    if replaced is not None:
        return SettingsError(f"setting {dotted} {where} is no longer read: {replaced}")
    return SettingsError(f"unknown setting {dotted} {where}")


def setting(key: str, default: Any, doc: str) -> Any:
    """A dataclass field bound to the settings key ``key`` (a dotted path)."""
    return field(default=default, metadata={"key": key, "doc": doc})


@dataclass(frozen=True)
class DatabaseSettings:
    url: str = setting(
        "harvestsuite.database.url", "sqlite:///harvestsuite.db",
        "SQLAlchemy URL of the harvest database: a SQLite file (default, in the working directory) or "
        "postgresql+psycopg://user@host/dbname",
    )
    echo: bool = setting("harvestsuite.database.echo", False, "log every SQL statement")
    importLockTimeout: int = setting(
        "harvestsuite.database.importLockTimeout", 30,
        "seconds a domain import on SQLite waits for the write lock before each of its batches (other writers "
        "hold it for moments); past it the import stops, keeping the batches it committed",
    )
    lockTimeout: int = setting(
        "harvestsuite.database.lockTimeout", 30,
        "seconds a statement waits for a lock another writer holds (SQLite's busy timeout, PostgreSQL's "
        "lock_timeout) before it fails: the web UI then answers 503 saying the database is busy, the scheduler "
        "logs it and tries again",
    )
    nextJobId: int = setting(
        "harvester.datamodel.domain.nextJobId", 0,
        "lowest id of the next job (used after a database restore); 0 = just max(job_id)+1",
    )

    def __post_init__(self) -> None:
        if self.lockTimeout < 1:
            raise SettingsError(f"harvestsuite.database.lockTimeout: seconds, at least 1, got {self.lockTimeout}")


@dataclass(frozen=True)
class DomainSettings:
    """Defaults for new domains and configurations, and when an alias expires."""

    defaultMaxbytes: int = setting("harvester.datamodel.domain.defaultMaxbytes", 1_000_000_000,
                                   "byte limit of a new configuration (-1 = unlimited)")
    defaultMaxobjects: int = setting("harvester.datamodel.domain.defaultMaxobjects", -1,
                                     "object limit of a new configuration (-1 = unlimited)")
    defaultMaxrate: int = setting("harvester.datamodel.domain.defaultMaxrate", 100,
                                  "requests per minute of a new configuration (stored, as in NetarchiveSuite)")
    defaultConfig: str = setting("harvester.datamodel.domain.defaultConfig", "defaultconfig",
                                 "name of a new domain's configuration")
    defaultSeedlist: str = setting("harvester.datamodel.domain.defaultSeedlist", "defaultseeds",
                                   "name of a new domain's seed list")
    defaultOrderxml: str = setting("harvester.datamodel.domain.defaultOrderxml", "default_orderxml",
                                   "crawl template of a new configuration")
    validSeedRegex: str = setting("harvester.datamodel.domain.validSeedRegex", r"^.*$",
                                  "regular expression every seed must match")
    aliasTimeout: int = setting("harvester.aliases.timeout", 31_536_000,
                                "seconds after its last confirmation that an alias expires")


@dataclass(frozen=True)
class JobGenSettings:
    """Job generation (docs/jobgen.md)."""

    generatorClass: JobGeneratorClass = setting(
        "harvester.scheduler.jobGen.class", "DefaultJobGenerator",
        "DefaultJobGenerator (packs by expected size) or FixedDomainConfigurationCountJobGenerator (a fixed "
        "number of configurations per job)")
    domainConfigSubsetSize: int = setting("harvester.scheduler.jobGen.domainConfigSubsetSize", 10_000,
                                          "configurations written per batch (the sort itself is global)")
    maxTimeToCompleteJob: int = setting("harvester.scheduler.jobGen.maxTimeToCompleteJob", 0,
                                        "max seconds per job of a new snapshot harvest created without one (0 = none)")
    objectLimitIsSetByQuotaEnforcer: bool = setting(
        "harvester.scheduler.jobGen.objectLimitIsSetByQuotaEnforcer", True,
        "put the per-domain object budget in the QuotaEnforcer (else in the frontier's queue budget)")
    useAlternateSnapshotJobgenerationMethod: bool = setting(
        "harvester.scheduler.jobGen.useAlternateSnapshotJobgenerationMethod", False,
        "accepted for compatibility; continuation steps are always computed in one streamed query")
    splitByObjectLimit: bool = setting("harvester.scheduler.jobGen.config.splitByObjectLimit", False,
                                       "jobs are made compatible by object limit instead of byte limit")
    maxRelativeSizeDifference: int = setting("harvester.scheduler.jobGen.config.maxRelativeSizeDifference",
                                             100, "max ratio of largest to smallest expectation in a job")
    minAbsoluteSizeDifference: int = setting("harvester.scheduler.jobGen.config.minAbsoluteSizeDifference",
                                             2000, "expectation differences up to this are ignored")
    maxTotalSize: int = setting("harvester.scheduler.jobGen.config.maxTotalSize", 8_000_000,
                                "max sum of expected objects per job")
    errorFactorPrevResult: int = setting("harvester.scheduler.jobGen.config.errorFactorPrevResult", 10,
                                         "divisor when the previous harvest completed")
    errorFactorBestGuess: int = setting("harvester.scheduler.jobGen.config.errorFactorBestGuess", 2,
                                        "documented by NetarchiveSuite but unused there; the /2 is fixed")
    expectedAverageBytesPerObject: int = setting(
        "harvester.scheduler.jobGen.config.expectedAverageBytesPerObject", 38_000,
        "bytes per object assumed without trustworthy history")
    maxDomainSize: int = setting("harvester.scheduler.jobGen.config.maxDomainSize", 5000,
                                 "objects expected of a domain without history or limits")
    fixedDomainCountSnapshot: int = setting("harvester.scheduler.jobGen.config.fixedDomainCountSnapshot",
                                            10_000, "max configurations per snapshot job (<= 0: no cap)")
    fixedDomainCountFocused: int = setting("harvester.scheduler.jobGen.config.fixedDomainCountFocused", 0,
                                           "configurations per selective job (Fixed… generator only)")
    excludeDomainsWithZeroBudget: bool = setting(
        "harvester.scheduler.jobGen.config.excludeDomainsWithZeroBudget", False,
        "drop configurations with a 0 byte or 0 object limit")
    postponeUnregisteredChannel: bool = setting(
        "harvester.scheduler.jobGen.config.postponeUnregisteredChannel", True,
        "generate no selective jobs for a channel no harvester serves")
    deduplicationEnabled: bool = setting("harvester.deduplication.enabled", True,
                                         "jobs are built with the DeDuplicator switched on")
    namingConvention: NamingConvention = setting(
        "harvestsuite.jobgen.namingConvention", "LegacyNamingConvention",
        "LegacyNamingConvention (<job>-<harvest>) or CollectionPrefixNamingConvention "
        "(<collection>-<job>-<harvest>)")
    collectionName: str = setting("harvester.harvesting.heritrix.archiveNaming.collectionName", "netarkivet",
                                  "prefix of CollectionPrefixNamingConvention")

    def __post_init__(self) -> None:
        # the expectation divides by both (scheduler/jobgen/expectation.py)
        for key, value in (("errorFactorPrevResult", self.errorFactorPrevResult),
                           ("expectedAverageBytesPerObject", self.expectedAverageBytesPerObject)):
            if value < 1:
                raise SettingsError(f"harvester.scheduler.jobGen.config.{key}: 1 or more, got {value}")


@dataclass(frozen=True)
class SchedulerSettings:
    jobgenerationperiod: int = setting("harvester.scheduler.jobgenerationperiod", 60, "seconds between ticks")
    jobtimeouttime: int = setting("harvester.scheduler.jobtimeouttime", 604_800,
                                  "STARTED jobs older than this many seconds become FAILED")
    limitSubmittedJobsInQueue: bool = setting("harvester.scheduler.limitSubmittedJobsInQueue", False,
                                              "throttle jobs waiting per channel")
    submittedJobsInQueueLimit: int = setting("harvester.scheduler.submittedJobsInQueueLimit", 1,
                                             "max jobs waiting per channel when throttled")
    timezone: str = setting("harvestsuite.scheduler.timezone", "",
                            "zone schedules are evaluated in (IANA name); empty = the system's zone")
    lostAfterHeartbeats: int = setting(
        "harvestsuite.scheduler.lostAfterHeartbeats", 10,
        "heartbeat intervals without a heartbeat after which a controller counts as lost and its STARTED job "
        "is marked interrupted; each controller's own interval, which its heartbeats state (at least 2)")
    resubmitLostAfter: int = setting(
        "harvestsuite.scheduler.resubmitLostAfter", 3600,
        "seconds since the last heartbeat of a lost controller after which its job is resubmitted, so the "
        "harvest is not stuck (its old attempt is never granted again); 0 = never resubmitted automatically")
    readyMaxAge: int = setting("harvestsuite.scheduler.readyMaxAge", 120,
                               "ready messages older than this many seconds release no job (sent before an "
                               "outage)")
    claimGraceTime: int = setting("harvestsuite.scheduler.claimGraceTime", 120,
                                  "seconds a job granted to a controller may stay unstarted while that "
                                  "controller reports other work or none, before it is resubmitted; also the "
                                  "seconds after a STARTED job's start and its controller's registration "
                                  "before heartbeats naming other work or none have it resubmitted")
    leaderLeaseTime: int = setting("harvestsuite.scheduler.leaderLeaseTime", 60,
                                   "seconds the leader's lock stays valid without renewal: a leader whose "
                                   "database does not answer keeps leading this long after its last renewal, "
                                   "then steps down and waits to lead again; another scheduler takes over a "
                                   "SQLite lock row this long after its holder's last renewal")
    leaderRenewInterval: int = setting("harvestsuite.scheduler.leaderRenewInterval", 0,
                                       "seconds between the leader's renewals of its lock, less than "
                                       "harvestsuite.scheduler.leaderLeaseTime, so that renewals which fail while "
                                       "the database does not answer are tried again within the lease; 0 = a "
                                       "quarter of the lease (at least 1 s)")
    historySampleRate: int = setting("harvester.monitor.historySampleRate", 300,
                                     "seconds between the runningjobshistory samples of one job kept for its "
                                     "whole crawl, once older than harvestsuite.scheduler.recentHistoryWindow")
    recentHistoryWindow: int = setting(
        "harvestsuite.scheduler.recentHistoryWindow", 900,
        "seconds for which every progress report of a running job (one each crawlLoopWaitTime) stays a "
        "runningjobshistory sample, so its progress chart fills from the crawl's first seconds; older samples "
        "are thinned to one each historySampleRate, and a job's history to that once it ends; 0 = only those")
    satisfactorythresholdpercentage: int = setting(
        "harvester.indexserver.satisfactorythresholdpercentage", 70,
        "a job goes only when the earlier captures of at least this percentage of its domains harvested "
        "before are stored; below, it waits and says why (0-100)")
    intakeThreads: int = setting("harvestsuite.scheduler.intakeThreads", 4,
                                 "threads per process that take messages from the scheduler's queue")
    intakeProcesses: int = setting("harvestsuite.scheduler.intakeProcesses", 1,
                                   "processes that take messages from the scheduler's queue, the scheduler's "
                                   "own included (more use more cores; on a host whose broker and database "
                                   "share two cores, one costs the least CPU per job)")
    liveChangeInterval: int = setting(
        "harvestsuite.scheduler.liveChangeInterval", 2,
        "seconds between the leading scheduler's sendings of pending live changes and control actions (pause, "
        "stop, ...) to the controllers of running jobs: how soon an operator's change reaches the crawl")
    liveChangeResendAfter: int = setting(
        "harvestsuite.scheduler.liveChangeResendAfter", 60,
        "seconds after which a live change its controller has not answered is sent again (the controller "
        "answers a repeat as it answered the first)")

    def __post_init__(self) -> None:
        if self.leaderLeaseTime < 2:
            raise SettingsError(f"harvestsuite.scheduler.leaderLeaseTime: seconds, at least 2 (one renewal "
                                f"within it), got {self.leaderLeaseTime}")
        if self.leaderRenewInterval != 0 and not 1 <= self.leaderRenewInterval < self.leaderLeaseTime:
            raise SettingsError(f"harvestsuite.scheduler.leaderRenewInterval: seconds, 0 (a quarter of the lease) "
                                f"or at least 1 and less than harvestsuite.scheduler.leaderLeaseTime "
                                f"({self.leaderLeaseTime}), got {self.leaderRenewInterval}")
        if self.historySampleRate < 1:
            raise SettingsError(f"harvester.monitor.historySampleRate: seconds, at least 1, got "
                                f"{self.historySampleRate}")
        if self.recentHistoryWindow < 0:
            raise SettingsError(f"harvestsuite.scheduler.recentHistoryWindow: seconds, 0 (samples each "
                                f"historySampleRate only) or more, got {self.recentHistoryWindow}")
        if self.lostAfterHeartbeats < 2:
            # one missed heartbeat is a delay, not a loss: a slow broker or a busy host misses one now and then
            raise SettingsError("harvestsuite.scheduler.lostAfterHeartbeats: at least 2 heartbeat intervals, got "
                                f"{self.lostAfterHeartbeats}")
        if self.resubmitLostAfter < 0:
            raise SettingsError("harvestsuite.scheduler.resubmitLostAfter: seconds, 0 (never) or more, got "
                                f"{self.resubmitLostAfter}")
        for key, seconds in (("liveChangeInterval", self.liveChangeInterval),
                             ("liveChangeResendAfter", self.liveChangeResendAfter)):
            if seconds < 1:
                raise SettingsError(f"harvestsuite.scheduler.{key}: seconds, 1 or more, got {seconds}")
        if not 0 <= self.satisfactorythresholdpercentage <= 100:
            raise SettingsError("harvester.indexserver.satisfactorythresholdpercentage: a percentage from 0 to "
                                f"100, got {self.satisfactorythresholdpercentage}")


@dataclass(frozen=True)
class LiveChangeSettings:
    """Bounds of operators' live changes to running jobs (harvestdef/livechanges.py, the job-changes table)
    and of the politeness a crawl may be given, by a live change or a crawl template."""

    maxPending: int = setting(
        "harvestsuite.liveChanges.maxPending", 200,
        "live changes (reject rules, budgets, added URIs, ...) one job may have pending at once; past it a new "
        "one is refused (429) until its controller has applied some. Control actions (pause, stop, ...) are "
        "never held back by it")
    applyBatch: int = setting(
        "harvestsuite.liveChanges.applyBatch", 500,
        "live changes a harvest controller takes from its control queue and applies in one round (one script "
        "to the crawler); control actions among them are carried out first")
    drainWaitMs: int = setting(
        "harvestsuite.liveChanges.drainWaitMs", 20,
        "milliseconds a harvest controller waits for the next message of its control queue while it collects a "
        "round of changes (the broker hands a subscription a few at a time); a round ends when none comes in it")
    pageSize: int = setting(
        "harvestsuite.liveChanges.pageSize", 100,
        "changes of a job per page of GET /api/v1/jobs/{id}/changes, of the live view and of the job page "
        "(the newest); older ones are paged")
    minDelayFactor: float = setting(
        "harvestsuite.liveChanges.minDelayFactor", 0.1,
        "the least politeness delayFactor (disposition.delayFactor) a live change or a crawl template may give "
        "a crawl: a queue rests this many times its last fetch's duration")
    minDelayMs: int = setting(
        "harvestsuite.liveChanges.minDelayMs", 10,
        "the least politeness minDelayMs (disposition.minDelayMs) a live change or a crawl template may give")
    minMaxDelayMs: int = setting(
        "harvestsuite.liveChanges.minMaxDelayMs", 10,
        "the least politeness maxDelayMs (disposition.maxDelayMs) a live change or a crawl template may give")
    maxPerHost: int = setting(
        "harvestsuite.liveChanges.maxPerHost", 10,
        "the most URIs of one host fetched at once (queueAssignmentPolicy.parallelQueues) a live change or a "
        "crawl template may give")

    def __post_init__(self) -> None:
        for key, value in (("maxPending", self.maxPending), ("applyBatch", self.applyBatch),
                           ("pageSize", self.pageSize), ("maxPerHost", self.maxPerHost)):
            if value < 1:
                raise SettingsError(f"harvestsuite.liveChanges.{key}: 1 or more, got {value}")
        if self.drainWaitMs < 0:
            raise SettingsError(f"harvestsuite.liveChanges.drainWaitMs: 0 or more, got {self.drainWaitMs}")
        for key, value in (("minDelayFactor", self.minDelayFactor), ("minDelayMs", self.minDelayMs),
                           ("minMaxDelayMs", self.minMaxDelayMs)):
            if value < 0:
                raise SettingsError(f"harvestsuite.liveChanges.{key}: 0 or more, got {value}")



@dataclass(frozen=True)
class HarvesterSettings:
    """Harvest controller and its Heritrix polling (docs/harvester.md, Settings)."""

    channels: tuple[str, ...] = setting(
        "harvester.harvesting.channel", ("FOCUSED",),
        "harvest channels this controller serves, selective first (TOML array; comma-separated in the "
        "environment or --set)")
    serverDir: str = setting("harvester.harvesting.serverdir", "server",
                             "job directories live here; one per controller, never shared")
    oldjobsDir: str = setting("harvester.harvesting.oldjobsDir", "oldjobs",
                              "finished job directories (relative paths are inside serverDir)")
    minSpaceLeft: int = setting("harvester.harvesting.minSpaceLeft", 400_000_000,
                                "bytes that must be free in serverDir to take a job; below it the controller "
                                "pauses until space is back")
    crawlLoopWaitTime: int = setting("harvester.harvesting.heritrix.crawlLoopWaitTime", 20,
                                     "seconds between status polls (each sends a CrawlProgress message)")
    inactivityTimeout: int = setting("harvester.harvesting.heritrix.inactivityTimeout", 1800,
                                     "stop a crawl with no active queues for this many seconds")
    noresponseTimeout: int = setting("harvester.harvesting.heritrix.noresponseTimeout", 1800,
                                     "stop a crawl that received no new bytes for this many seconds")
    frontierReportWaitTime: int = setting(
        "harvester.harvesting.frontier.frontierReportWaitTime", 600,
        "seconds between the frontier reports a controller sends while its crawl runs (the crawler's "
        "FrontierSummaryReport through NetarchiveSuite's TopTotalEnqueuesFilter: the 200 active queues with "
        "the most enqueues, stored in frontierreportmonitor); 0 sends none")
    sendReadyDelay: int = setting("harvester.harvesting.sendReadyDelay", 30,
                                  "seconds between ready messages of an idle controller that is not paused")
    heartbeatInterval: int = setting("harvestsuite.harvester.heartbeatInterval", 30,
                                     "seconds between heartbeats; each heartbeat states it, and the scheduler "
                                     "counts a controller lost after lostAfterHeartbeats of them (a controller "
                                     "that states none is judged by the scheduler's own value of this setting)")
    statusPollRetries: int = setting("harvestsuite.harvester.statusPollRetries", 5,
                                     "failed status polls in a row, each retried after crawlLoopWaitTime, before "
                                     "the crawler counts as gone")
    statusPollTimeout: int = setting("harvestsuite.harvester.statusPollTimeout", 30,
                                     "seconds one request to the crawler may take before it counts as failed")
    engineStartTimeout: int = setting("harvestsuite.harvester.engineStartTimeout", 60,
                                      "seconds to wait for the crawler to answer, to build and to launch a job")
    shutdownAction: ShutdownAction = setting(
        "harvestsuite.harvester.shutdownAction", "checkpoint",
        "what SIGTERM does to a running crawl: checkpoint (resumed at the next start if the scheduler grants the "
        "job again) or finish (stopped, post-processed and reported)")
    uploadRetries: int = setting("harvestsuite.harvester.uploadRetries", 5,
                                 "passes over a job's files while the archive store fails, before the job is "
                                 "reported FAILED and its upload left to the retries between jobs")
    uploadRetryDelay: int = setting("harvestsuite.harvester.uploadRetryDelay", 2,
                                    "seconds before the second pass of a job's upload; doubles each pass")
    uploadRetryMaxDelay: int = setting("harvestsuite.harvester.uploadRetryMaxDelay", 60,
                                       "the longest wait between two passes of a job's upload, in seconds")
    leftoverUploadInterval: int = setting("harvestsuite.harvester.leftoverUploadInterval", 300,
                                          "seconds between tries, while idle or between jobs, to store the files "
                                          "of jobs the archive store could not take")
    metadataFileNameFormat: MetadataFileNameFormat = setting(
        "harvester.harvesting.metadata.metadataFileNameFormat", "default",
        "default: <job>-metadata-1.warc.gz; prefix: <collectionName>-<job>-<harvest>-metadata-1.warc.gz")
    crawler: CrawlerKind = setting(
        "harvestsuite.harvester.crawler", "engine",
        "the crawler this controller starts for its jobs: engine (the bundled engine's HTTP fetcher) or browser "
        "(the same engine loading each page in headless Chromium through its recording proxy, docs/browser.md); "
        "a controller of the BROWSER channel sets browser")
    heritrixUrl: str = setting("harvestsuite.harvester.heritrixUrl", "",
                               "REST URL of an external Heritrix 3 engine; empty = run the bundled engine")
    heritrixUser: str = setting("harvester.harvesting.heritrix.adminName", "admin", "REST API user")
    heritrixPassword: str = setting("harvester.harvesting.heritrix.adminPassword", "admin",
                                    "REST API password")
    organization: str = setting("common.organization", "netarkivet.dk",
                                "organisation in metadata:// URLs")
    controllerId: str = setting("harvestsuite.harvester.controllerId", "",
                                "stable id of this harvest controller; empty = derived from the host name and "
                                "serverDir at first start and kept in serverDir/controller-id")


@dataclass(frozen=True)
class CrawlerSettings:
    """The bundled crawl engine."""

    hostsFile: str = setting("harvestsuite.crawler.hostsFile", "",
                             "name-to-address file that overrides DNS for the engine (tests, demo)")
    port: int = setting("harvester.harvesting.heritrix.guiPort", 0,
                        "HTTPS port of the bundled engine's REST API; 0 = any free port (the controller reads the "
                        "URL the engine prints), so several controllers share a host without clashing")
    bind: str = setting("harvestsuite.crawler.bind", "127.0.0.1", "address the bundled engine listens on")
    sitemapMaxUrls: int = setting("harvestsuite.crawler.sitemapMaxUrls", 50_000,
                                  "URLs the bundled engine takes from one sitemap at most (sitemaps.org's bound)")
    sitemapMaxBytes: int = setting("harvestsuite.crawler.sitemapMaxBytes", 52_428_800,
                                   "bytes of one sitemap the bundled engine reads at most, decompressed "
                                   "(sitemaps.org's 50 MiB)")
    responseHeaderMaxBytes: int = setting(
        "harvestsuite.crawler.responseHeaderMaxBytes", 65_536,
        "bytes of a response's status line and header block (interim 1xx responses included) the bundled engine "
        "keeps at most; a longer block is cut there, the rest not read, and the capture is annotated headerTrunc "
        "(so no record exceeds FetchHTTP's maxLengthBytes plus this)")
    responseHeaderMaxLines: int = setting(
        "harvestsuite.crawler.responseHeaderMaxLines", 100,
        "header lines of one response the bundled engine keeps at most; past them the header block is cut as "
        "past responseHeaderMaxBytes")
    extractionMaxBytes: int = setting(
        "harvestsuite.crawler.extractionMaxBytes", 16_777_216,
        "bytes of one document the bundled engine's link extractors read at most, decoded; the rest is left "
        "unread and the cut written to nonfatal-errors.log")
    extractionMaxSeconds: int = setting(
        "harvestsuite.crawler.extractionMaxSeconds", 5,
        "seconds the bundled engine's link extraction may spend on one document; past them it stops with the "
        "links found so far and the cut is written to nonfatal-errors.log")
    browserExecutable: str = setting("harvestsuite.crawler.browser.executable", "/usr/bin/chromium",
                                     "the Chromium the browser crawler drives (Debian's package)")
    browserPagesPerMinutePerHost: int = setting(
        "harvestsuite.crawler.browser.pagesPerMinutePerHost", 30,
        "pages the browser crawler loads from one host (one queue) per minute at most, besides the template's "
        "politeness; 0 = no such limit")
    browserPageTimeLimit: int = setting(
        "harvestsuite.crawler.browser.pageTimeLimit", 30,
        "seconds one page may take in the browser, loading, scrolling and settling; past it the page is tried "
        "once more, then ends with its reason")
    browserSettleTime: int = setting(
        "harvestsuite.crawler.browser.settleTime", 3,
        "seconds, at most, a loaded and scrolled page waits for its network to go quiet (within pageTimeLimit)")
    browserMemoryLimit: int = setting(
        "harvestsuite.crawler.browser.memoryLimit", 1_500_000_000,
        "bytes of memory (resident, all its processes) the browser may use; past it the browser is restarted "
        "and the page tried once more, then it ends with its reason")

    def __post_init__(self) -> None:
        for key, value in (("responseHeaderMaxBytes", self.responseHeaderMaxBytes),
                           ("responseHeaderMaxLines", self.responseHeaderMaxLines),
                           ("extractionMaxBytes", self.extractionMaxBytes),
                           ("extractionMaxSeconds", self.extractionMaxSeconds)):
            if value <= 0:
                raise SettingsError(f"harvestsuite.crawler.{key}: more than 0, got {value}")
        if self.browserPagesPerMinutePerHost < 0:
            raise SettingsError("harvestsuite.crawler.browser.pagesPerMinutePerHost: 0 (no limit) or more, got "
                                f"{self.browserPagesPerMinutePerHost}")
        for key, seconds in (("pageTimeLimit", self.browserPageTimeLimit), ("settleTime", self.browserSettleTime)):
            if seconds <= 0:
                raise SettingsError(f"harvestsuite.crawler.browser.{key}: seconds, more than 0, got {seconds}")
        if self.browserMemoryLimit <= 0:
            raise SettingsError("harvestsuite.crawler.browser.memoryLimit: bytes, more than 0, got "
                                f"{self.browserMemoryLimit}")


@dataclass(frozen=True)
class QueueSettings:
    url: str = setting("harvestsuite.queue.url", "sqlite:///queue.db",
                       "amqp://guest:guest@127.0.0.1:5672/%2F for RabbitMQ (a cluster: its nodes' URLs with ';' "
                       "between them); sqlite:///FILE for the embedded queue")
    type: str = setting("harvestsuite.queue.type", "classic",
                        "RabbitMQ: classic, or quorum for queues replicated on a cluster's nodes")
    environmentName: str = setting("common.environmentName", "DEV", "prefix of every queue name")
    heartbeat: int = setting("harvestsuite.queue.heartbeat", 60, "AMQP heartbeat seconds")
    publishTimeout: int = setting("harvestsuite.queue.publishTimeout", 60,
                                  "seconds a publish waits for the broker's confirm, reconnecting meanwhile")
    reconnectMaxDelay: int = setting("harvestsuite.queue.reconnectMaxDelay", 30,
                                     "longest pause between reconnection attempts (backoff doubles up to it)")
    leaseTimeout: int = setting("harvestsuite.queue.leaseTimeout", 1800,
                                "embedded queue: seconds an unacknowledged message stays with its consumer "
                                "(RabbitMQ's consumer_timeout)")
    pollInterval: int = setting("harvestsuite.queue.pollInterval", 100,
                                "embedded queue: milliseconds between looks at an empty queue")
    prefetch: int = setting("harvestsuite.queue.prefetch", 50,
                            "messages a subscription may hold unacknowledged (job queues always take one)")

    def __post_init__(self) -> None:
        if self.type not in ("classic", "quorum"):
            raise SettingsError(f"harvestsuite.queue.type: classic or quorum, got {self.type!r}")


@dataclass(frozen=True)
class NetworkSettings:
    """The destination policy (harvestdef/destinations.py) of everything the harvesting side connects to."""

    allowDestinations: tuple[str, ...] = setting(
        "harvestsuite.network.allowDestinations", (),
        "networks (10.20.0.0/16, fd00::/8) and host names (intranet.example.org, *.example.org) that harvesting, "
        "its browser and webhook deliveries may connect to although they are not public: loopback, link-local, "
        "private, shared, multicast and reserved addresses are refused otherwise; the names of "
        "harvestsuite.crawler.hostsFile are always allowed")

    def __post_init__(self) -> None:
        try:
            DestinationPolicy.from_entries(self.allowDestinations)
        except ValidationError as exc:
            raise SettingsError(str(exc)) from exc

    def policy(self, hosts: Mapping[str, str] | None = None) -> DestinationPolicy:
        """The destination policy of these settings, also allowing the names of the hosts file ``hosts``."""
        return DestinationPolicy.from_entries(self.allowDestinations, hosts)


@dataclass(frozen=True)
class NotificationSettings:
    """Notifications of failed jobs, deactivated harvests, lost and refused harvesters: always logged,
    e-mailed when a mail server and a receiver are set, and sent to the webhooks that want them."""

    mailServer: str = setting("common.mail.server", "", "SMTP host for notifications; empty = log only")
    receiver: str = setting("common.notifications.receiver", "", "e-mail address notifications go to")
    sender: str = setting("common.notifications.sender", "harvestsuite@localhost", "From: of notifications")
    webuiUrl: str = setting("harvestsuite.notifications.webuiUrl", "",
                            "the web UI's address as the receivers of notifications reach it, e.g. "
                            "https://harvest.example.org: the links in webhook deliveries start with it; empty = "
                            "the links are paths (/status/jobs/45)")
    webhookSendIntervalMs: int = setting("harvestsuite.webhooks.sendIntervalMs", 1000,
                                         "milliseconds between the leading scheduler's looks for webhook "
                                         "deliveries that are due")
    webhookTimeout: int = setting("harvestsuite.webhooks.timeout", 10,
                                  "seconds one webhook attempt may take in all (looking the name up, connecting, TLS, "
                                  "sending, the answer's status line and headers, the excerpt of its body), however "
                                  "slowly the resolver or the receiver answers, before it counts as failed")
    webhookAnswerHeaderLimit: int = setting("harvestsuite.webhooks.answerHeaderLimit", 16_384,
                                            "bytes of a receiver's status line and headers read at most; a longer "
                                            "header block is a failed attempt")
    webhookAnswerExcerpt: int = setting("harvestsuite.webhooks.answerExcerpt", 200,
                                        "characters of a failed answer's plain-text or JSON body kept in the "
                                        "delivery log (other bodies are named by their type only)")
    webhookShutdownGraceMs: int = setting("harvestsuite.webhooks.shutdownGraceMs", 2000,
                                          "milliseconds the scheduler's shutdown gives the webhook attempts it "
                                          "interrupts to put their deliveries back (pending, not counted); one "
                                          "still busy then is tried again once its lease has run out")
    webhookRetryDelayMs: int = setting("harvestsuite.webhooks.retryDelayMs", 30_000,
                                       "milliseconds before a failed webhook delivery is tried again; doubles "
                                       "with each further failure")
    webhookRetryMaxDelayMs: int = setting("harvestsuite.webhooks.retryMaxDelayMs", 3_600_000,
                                          "the longest wait between two attempts of a webhook delivery, in "
                                          "milliseconds")
    webhookMaxAttempts: int = setting("harvestsuite.webhooks.maxAttempts", 8,
                                      "attempts of a webhook delivery before it counts as failed (with its last "
                                      "error in the delivery log)")

    def __post_init__(self) -> None:
        for key, value, least in (("harvestsuite.webhooks.sendIntervalMs", self.webhookSendIntervalMs, 10),
                                  ("harvestsuite.webhooks.timeout", self.webhookTimeout, 1),
                                  ("harvestsuite.webhooks.answerHeaderLimit", self.webhookAnswerHeaderLimit, 256),
                                  ("harvestsuite.webhooks.answerExcerpt", self.webhookAnswerExcerpt, 0),
                                  ("harvestsuite.webhooks.shutdownGraceMs", self.webhookShutdownGraceMs, 0),
                                  ("harvestsuite.webhooks.retryDelayMs", self.webhookRetryDelayMs, 1),
                                  ("harvestsuite.webhooks.maxAttempts", self.webhookMaxAttempts, 1)):
            if value < least:
                raise SettingsError(f"{key}: {least} or more, got {value}")
        if self.webhookAnswerExcerpt > 1000:  # the log keeps a line, not a receiver's page
            raise SettingsError(f"harvestsuite.webhooks.answerExcerpt: at most 1000, got {self.webhookAnswerExcerpt}")
        if self.webhookRetryMaxDelayMs < self.webhookRetryDelayMs:
            raise SettingsError(f"harvestsuite.webhooks.retryMaxDelayMs: at least retryDelayMs "
                                f"({self.webhookRetryDelayMs}), got {self.webhookRetryMaxDelayMs}")
        if self.webuiUrl and not self.webuiUrl.lower().startswith(("http://", "https://")):
            raise SettingsError(f"harvestsuite.notifications.webuiUrl: an http:// or https:// address, got "
                                f"{self.webuiUrl!r}")


@dataclass(frozen=True)
class WebuiSettings:
    secretKey: str = setting("harvestsuite.webui.secretKey", "",
                             "key that signs session cookies; empty = a random key per start (everybody logs in "
                             "again after a restart)")
    sessionLifetime: int = setting("harvestsuite.webui.sessionLifetime", 28_800,
                                   "seconds a login lasts without activity")
    secureCookies: bool = setting("harvestsuite.webui.secureCookies", False,
                                  "send the session cookie over HTTPS only (true behind a TLS reverse proxy)")
    pageSize: int = setting("harvestsuite.webui.pageSize", 50, "rows per page of a list")
    livePollIntervalMs: int = setting("harvestsuite.webui.livePollIntervalMs", 5000,
                                      "milliseconds between the updates a running job's page and the running "
                                      "jobs page fetch while they are open")
    qaChangeThreshold: int = setting("harvestsuite.webui.qaChangeThreshold", 50,
                                     "percent by which a domain's objects or bytes in a job may rise or fall "
                                     "against the same harvest's previous run before the job's QA flags it")
    host: str = setting("harvestsuite.webui.host", "127.0.0.1", "address the web UI listens on")
    port: int = setting("harvestsuite.webui.port", 8080, "port the web UI listens on")
    threads: int = setting("harvestsuite.webui.threads", 16, "requests the web UI serves at once")
    crawlLogSearchTimeoutMs: int = setting("harvestsuite.webui.crawlLogSearchTimeoutMs", 20_000,
                                           "milliseconds a crawl-log search (the job page's, or a page of "
                                           "the API's) reads before it answers with what it found so far")
    crawlLogSearchWorkers: int = setting("harvestsuite.webui.crawlLogSearchWorkers", 2,
                                         "crawl-log searches run at once (each on a thread of its own)")
    crawlLogSearchQueue: int = setting("harvestsuite.webui.crawlLogSearchQueue", 4,
                                       "crawl-log searches that may wait for a worker; more are refused as busy")
    fileViewLines: int = setting("harvestsuite.webui.fileViewLines", 100,
                                 "lines of a job's text file (crawl.log, a report, a CDXJ index) a page of the "
                                 "file viewer shows unless it asks for another number")
    fileViewMaxLines: int = setting("harvestsuite.webui.fileViewMaxLines", 2000,
                                    "the most lines one page of the file viewer may ask for (each line is cut at "
                                    "64 KiB)")
    tokenCacheSeconds: int = setting("harvestsuite.webui.tokenCacheSeconds", 10,
                                     "seconds an API token found valid is trusted without asking the database "
                                     "again (a revoked token is refused at the latest this long after; 0 = "
                                     "ask on every request)")
    tokenUseInterval: int = setting("harvestsuite.webui.tokenUseInterval", 10,
                                    "seconds between the writes of the API tokens' last use, which requests "
                                    "only note (a read with a token writes nothing on its way)")
    loginFailuresPerUser: int = setting("harvestsuite.webui.loginFailuresPerUser", 5,
                                        "failed logins in a row of one user name after which each further "
                                        "attempt of that name must wait (harvestsuite.webui.loginDelay)")
    loginFailuresPerAddress: int = setting("harvestsuite.webui.loginFailuresPerAddress", 20,
                                           "failed logins in a row from one client address after which each "
                                           "further attempt from it must wait")
    loginDelay: int = setting("harvestsuite.webui.loginDelay", 2,
                              "seconds the first throttled login must wait; each further failure doubles it")
    loginDelayMax: int = setting("harvestsuite.webui.loginDelayMax", 900,
                                 "the longest wait after failed logins, in seconds")
    loginFailureMemory: int = setting("harvestsuite.webui.loginFailureMemory", 3600,
                                      "seconds after its last failed login when a user name's or an address's "
                                      "failures are forgotten")

    def __post_init__(self) -> None:
        if self.tokenUseInterval < 1:
            raise SettingsError(f"harvestsuite.webui.tokenUseInterval: seconds, at least 1, got "
                                f"{self.tokenUseInterval}")


@dataclass(frozen=True)
class ArchiveSettings:
    root: str = setting("harvestsuite.archive.root", "archive", "root directory of the archive store")


@dataclass(frozen=True)
class ReplaySettings:
    url: str = setting("harvestsuite.replay.url", "",
                       "public address of the replay service (pywb) that the web UI links to, e.g. "
                       "https://replay.example.org; empty: no replay links")
    bind: str = setting("harvestsuite.replay.bind", "127.0.0.1", "address `harvestsuite replay run` listens on")
    port: int = setting("harvestsuite.replay.port", 8090, "port `harvestsuite replay run` listens on")
    workDir: str = setting("harvestsuite.replay.workDir", "replay",
                           "pywb's working directory (config.yaml, collections over the archive store, WARC "
                           "path index), written by `harvestsuite replay run`")
    pywbVenv: str = setting("harvestsuite.replay.pywbVenv", ".venv-pywb",
                            "virtual environment holding pywb (built by `harvestsuite replay install` and "
                            "scripts/setup.sh)")
    syncIntervalMs: int = setting("harvestsuite.replay.syncIntervalMs", 5000,
                                  "how often the replay service looks for new harvests and WARCs in the archive "
                                  "store, in milliseconds")


@dataclass(frozen=True)
class QaSettings:
    """The QA worker (`harvestsuite qa thumbnails run`): thumbnails of each DONE job's seeds as replayed."""

    chromium: str = setting("harvestsuite.qa.chromium", "/usr/bin/chromium",
                            "the Chromium the QA worker drives headless through Playwright to make seed "
                            "thumbnails; missing: jobs get a note instead of thumbnails")
    thumbnailIntervalMs: int = setting("harvestsuite.qa.thumbnailIntervalMs", 30_000,
                                       "milliseconds between the QA worker's passes over the DONE jobs")
    thumbnailDelayMs: int = setting("harvestsuite.qa.thumbnailDelayMs", 10_000,
                                    "milliseconds after a job ends before its thumbnails are made, so that the "
                                    "replay service has found its files (at least harvestsuite.replay."
                                    "syncIntervalMs)")
    pageTimeoutMs: int = setting("harvestsuite.qa.pageTimeoutMs", 20_000,
                                 "milliseconds a seed's replay may take to load before it gets a note instead of "
                                 "a thumbnail")
    thumbnailWidth: int = setting("harvestsuite.qa.thumbnailWidth", 320,
                                  "width in pixels of a thumbnail of the 1280 x 800 viewport")
    maxSeedsPerJob: int = setting("harvestsuite.qa.maxSeedsPerJob", 100,
                                  "seeds of a job that get a thumbnail, in the job's seed order; -1 = all")
    jobsPerPass: int = setting("harvestsuite.qa.jobsPerPass", 20,
                               "jobs the QA worker takes per pass, newest first")


@dataclass(frozen=True)
class MetricsSettings:
    """Each role's /metrics endpoint in Prometheus' text format (harvestdef/metrics.py, docs/metrics.md)."""

    bind: str = setting("harvestsuite.metrics.bind", "127.0.0.1",
                        "address every role's /metrics endpoint listens on (0.0.0.0 for a Prometheus on another "
                        "host)")
    schedulerPort: int = setting("harvestsuite.metrics.schedulerPort", 0,
                                 "port of the scheduler's /metrics endpoint; 0 = none")
    harvesterPort: int = setting("harvestsuite.metrics.harvesterPort", 0,
                                 "port of a harvest controller's /metrics endpoint; 0 = none (each controller of a "
                                 "host needs a port of its own)")
    webuiPort: int = setting("harvestsuite.metrics.webuiPort", 0,
                             "port of the web UI's /metrics endpoint (its request times by route); 0 = none")
    schedulerTargets: tuple[str, ...] = setting(
        "harvestsuite.metrics.schedulerTargets", (),
        "addresses of scheduler /metrics endpoints (http://sched1.example.org:9101/metrics) that the System page "
        "of the web UI reads and shows the figures of; empty = the page shows none (TOML array; comma-separated "
        "in the environment or --set)")
    scrapeTimeoutMs: int = setting("harvestsuite.metrics.scrapeTimeoutMs", 2000,
                                   "milliseconds the System page waits for each of schedulerTargets before it "
                                   "shows that target as unreachable")

    def __post_init__(self) -> None:
        for key, port in (("schedulerPort", self.schedulerPort), ("harvesterPort", self.harvesterPort),
                          ("webuiPort", self.webuiPort)):
            if not 0 <= port <= 65535:
                raise SettingsError(f"harvestsuite.metrics.{key}: a port from 1 to 65535, or 0 (no endpoint), "
                                    f"got {port}")
        for target in self.schedulerTargets:
            if not target.lower().startswith(("http://", "https://")):
                raise SettingsError(f"harvestsuite.metrics.schedulerTargets: http:// or https:// addresses, got "
                                    f"{target!r}")
        if self.scrapeTimeoutMs < 1:
            raise SettingsError(f"harvestsuite.metrics.scrapeTimeoutMs: 1 or more, got {self.scrapeTimeoutMs}")


@dataclass(frozen=True)
class DemoSettings:
    """``harvestsuite demo``'s own."""

    stopTimeout: int = setting("harvestsuite.demo.stopTimeout", 120,
                               "seconds the demo waits after Ctrl-C for its roles to stop (the harvest controller "
                               "checkpoints a running crawl) before it stops at once, as a second Ctrl-C does, "
                               "naming the roles that had not stopped")

    def __post_init__(self) -> None:
        if self.stopTimeout < 1:
            raise SettingsError(f"harvestsuite.demo.stopTimeout: seconds, at least 1, got {self.stopTimeout}")


@dataclass(frozen=True)
class Settings:
    """All settings of one process, frozen after loading."""

    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    domain: DomainSettings = field(default_factory=DomainSettings)
    jobgen: JobGenSettings = field(default_factory=JobGenSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    harvester: HarvesterSettings = field(default_factory=HarvesterSettings)
    crawler: CrawlerSettings = field(default_factory=CrawlerSettings)
    queue: QueueSettings = field(default_factory=QueueSettings)
    archive: ArchiveSettings = field(default_factory=ArchiveSettings)
    webui: WebuiSettings = field(default_factory=WebuiSettings)
    replay: ReplaySettings = field(default_factory=ReplaySettings)
    qa: QaSettings = field(default_factory=QaSettings)
    notifications: NotificationSettings = field(default_factory=NotificationSettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    livechanges: LiveChangeSettings = field(default_factory=LiveChangeSettings)
    demo: DemoSettings = field(default_factory=DemoSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)

    def effective(self) -> dict[str, Any]:
        """Every key with its effective value, for logging at start."""
        return {spec.key: getattr(getattr(self, spec.area), spec.attr) for spec in _specs().values()}


@dataclass(frozen=True)
class _Spec:
    key: str
    area: str
    attr: str
    type: Any  # a class, tuple[str, ...] (a list setting) or a Literal of the allowed values
    default: Any


def _specs() -> dict[str, _Spec]:
    """Every known key, by its lower-cased dotted path (keys match without regard to case)."""
    specs: dict[str, _Spec] = {}
    for area_field in dataclasses.fields(Settings):
        area_cls = area_field.default_factory  # type: ignore[misc]
        hints = get_type_hints(area_cls)
        for f in dataclasses.fields(area_cls):
            key = f.metadata["key"]
            specs[key.lower()] = _Spec(key, area_field.name, f.name, hints[f.name], f.default)
    return specs


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, value in table.items():
        path = f"{prefix}{name}"
        if isinstance(value, Mapping):
            yield from _flatten(value, path + ".")
        else:
            yield path, value


def _is_list(spec: _Spec) -> bool:
    return typing.get_origin(spec.type) is tuple


def _choices(spec: _Spec) -> tuple[str, ...] | None:
    """The allowed values of a setting typed as a ``Literal``, else None."""
    return typing.get_args(spec.type) if typing.get_origin(spec.type) is Literal else None


def _type_name(spec: _Spec) -> str:
    choices = _choices(spec)
    return spec.type.__name__ if choices is None else "one of " + ", ".join(choices)


def _check_choice(spec: _Spec, choices: tuple[str, ...], value: Any, preposition: str, source: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise SettingsError(f"{spec.key} {preposition} {source}: {value!r} is not an allowed value; expected one of "
                            f"{', '.join(choices)}")
    return value


def _coerce_text(spec: _Spec, text: str, source: str) -> Any:
    """Turn an environment or command-line string into the key's type, or fail naming both."""
    if _is_list(spec):
        # Lists (harvest channels) are comma-separated outside TOML.
        return tuple(item.strip() for item in text.split(",") if item.strip())
    if spec.type is bool:
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise SettingsError(f"{spec.key} from {source}: expected a boolean (true/false/1/0), got {text!r}")
    if spec.type is int:
        try:
            return int(text.strip())
        except ValueError:
            raise SettingsError(f"{spec.key} from {source}: expected an integer, got {text!r}") from None
    if spec.type is float:
        try:
            value = float(text.strip())
        except ValueError:
            raise SettingsError(f"{spec.key} from {source}: expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise SettingsError(f"{spec.key} from {source}: expected a finite number, got {text!r}")
        return value
    choices = _choices(spec)
    if choices is not None:
        return _check_choice(spec, choices, text, "from", source)
    return text


def _check_type(spec: _Spec, value: Any, source: str) -> Any:
    if _is_list(spec):
        if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            return tuple(value)
        raise SettingsError(f"{spec.key} in {source}: expected an array of strings, got "
                            f"{type(value).__name__} {value!r}")
    choices = _choices(spec)
    if choices is not None:
        return _check_choice(spec, choices, value, "in", source)
    if spec.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)  # TOML's 1 for a decimal setting
    # bool is a subclass of int: an int setting must not accept true/false silently.
    ok = isinstance(value, spec.type) and not (spec.type is int and isinstance(value, bool))
    if not ok:
        raise SettingsError(
            f"{spec.key} in {source}: expected {spec.type.__name__}, got {type(value).__name__} {value!r}"
        )
    return value


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Read settings in the order defaults < file < environment < ``overrides``.

    ``config_file`` defaults to the file named by ``HARVESTSUITE_CONFIG``; ``overrides`` maps dotted keys
    to values (command line, tests).
    """
    environ = os.environ if environ is None else environ
    specs = _specs()
    values: dict[str, Any] = {}

    path = config_file if config_file is not None else environ.get(CONFIG_ENV) or None
    if path is not None:
        source = str(path)
        try:
            with open(path, "rb") as handle:
                table = tomllib.load(handle)
        except FileNotFoundError:
            raise SettingsError(f"settings file {source} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"settings file {source} is not valid TOML: {exc}") from exc
        for dotted, value in _flatten(table):
            if dotted.startswith("settings."):
                dotted = dotted[len("settings."):]
            spec = specs.get(dotted.lower())
            if spec is None:
                raise _unknown(dotted, f"in {source}")
            values[spec.key] = _check_type(spec, value, source)

    for name, text in environ.items():
        if not name.upper().startswith(ENV_PREFIX):
            continue
        dotted = name[len(ENV_PREFIX):].replace("__", ".").lower()
        spec = specs.get(dotted)
        if spec is None:
            raise _unknown(dotted, f"in environment variable {name}")
        values[spec.key] = _coerce_text(spec, text, f"environment variable {name}")

    for dotted, value in (overrides or {}).items():
        spec = specs.get(dotted.lower())
        if spec is None:
            raise _unknown(dotted, "given as an override")
        if isinstance(value, str) and spec.type is not str and _choices(spec) is None:
            value = _coerce_text(spec, value, "an override")
        values[spec.key] = _check_type(spec, value, "an override")

    by_area: dict[str, dict[str, Any]] = {}
    for spec in specs.values():
        if spec.key in values:
            by_area.setdefault(spec.area, {})[spec.attr] = values[spec.key]
    areas = {f.name: f.default_factory(**by_area.get(f.name, {}))  # type: ignore[misc]
             for f in dataclasses.fields(Settings)}
    return Settings(**areas)


def log_effective(settings: Settings) -> None:
    """Log every effective value once at start; passwords are masked."""
    for key, value in sorted(settings.effective().items()):
        shown = "****" if "password" in key.lower() else value
        log.info("setting %s = %r", key, shown)


def describe() -> list[tuple[str, str, Any, str]]:
    """(key, type, default, doc) of every setting, for the README and `harvestsuite settings`."""
    rows = []
    for area_field in dataclasses.fields(Settings):
        area_cls = area_field.default_factory  # type: ignore[misc]
        hints = get_type_hints(area_cls)
        for f in dataclasses.fields(area_cls):
            spec = _Spec(f.metadata["key"], area_field.name, f.name, hints[f.name], f.default)
            rows.append((spec.key, _type_name(spec), f.default, f.metadata["doc"]))
    return rows
