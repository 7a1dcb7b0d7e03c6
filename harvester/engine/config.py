"""crawler-beans.cxml -> CrawlConfig: everything one crawl needs, resolved and typed.

Beans are recognised by role (their class's short name), so NetarchiveSuite's own classes
(PrerequisiteIgnoringQuotaEnforcer, DomainnameQueueAssignmentPolicy, NASSurtPrefixedDecideRule,
NasWARCProcessor, DeDuplicator, ContentSizeAnnotationPostProcessor) are read like Heritrix's. HONOURED lists
exactly which properties have an effect (docs/engine.md repeats it); any other property of those beans, and
any unknown bean class, becomes one line in ``CrawlConfig.warnings`` for job.log. This module reads files
only: the cxml and the seeds file it names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from harvestdef.errors import PatternError, ValidationError
from harvestdef.patterns import BacktrackingPattern, compile_crawl_pattern, compile_pattern
from harvestdef.seeds import seed_lines
from harvester.engine.beans import Bean, BeanError, BeanSet, Ref, parse_beans
from harvester.engine.fetching.credentials import FormCredential, HttpCredential
from harvester.heritrix3.layout import SEEDS, WARCS_DIR

# The time budget of one match of a scope regex that only a backtracking matcher can run (lookaround,
# backreferences: harvestdef.patterns.BacktrackingPattern). Such a trap takes microseconds on an ordinary
# URL; a URL on which it backtracks catastrophically costs this much, and a REJECT rule then rejects it.
BACKTRACKING_MATCH_SECONDS = 0.05

# Heritrix 3 defaults for every honoured property (docs/engine.md, Honoured beans and properties).
HONOURED: dict[str, dict[str, object]] = {
    "CrawlMetadata": {"jobName": "", "description": "", "operator": "", "operatorFrom": "",
                      "operatorContactUrl": "", "organization": "", "audience": "",
                      "robotsPolicyName": "obey",
                      "userAgentTemplate": "Mozilla/5.0 (compatible; heritrix/3.4.0 +@OPERATOR_CONTACT_URL@)"},
    "TextSeedModule": {"textSource": None, "sourceTagSeeds": False},
    "CrawlController": {"maxToeThreads": 25, "pauseAtStart": True},
    "CrawlLimitEnforcer": {"maxBytesDownload": 0, "maxDocumentsDownload": 0, "maxTimeSeconds": 0},
    "QuotaEnforcer": {"groupMaxFetchSuccesses": -1, "groupMaxAllKb": -1, "forceRetire": False},
    "FetchHTTP": {"timeoutSeconds": 1200, "soTimeoutMs": 20000, "maxLengthBytes": 0, "sendConnectionClose": True,
                  "useHTTP11": False, "acceptCompression": False, "sendReferer": True,
                  "acceptHeaders": ["Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"],
                  "userAgentProvider": None, "ignoreCookies": False, "cookieStore": None, "credentialStore": None},
    "DispositionProcessor": {"delayFactor": 5.0, "minDelayMs": 3000, "maxDelayMs": 30000,
                             "respectCrawlDelayUpToSeconds": 300},
    "BdbFrontier": {"maxRetries": 30, "retryDelaySeconds": 900},
    "QueueAssignmentPolicy": {"parallelQueues": 1},
    "WARCWriterProcessor": {"prefix": "IAH", "maxFileSizeBytes": 1_000_000_000, "compress": True,
                            "storePaths": None, "metadataItems": None, "enabled": True},
    "DeDuplicator": {"indexLocation": "", "enabled": True, "matchingMethod": "DIGEST",
                     "mimeFilter": "^text/.*", "filterMode": "BLACKLIST"},
    "StatisticsTracker": {"intervalSeconds": 20},
    "CheckpointService": {"checkpointIntervalMinutes": -1},
    "ActionDirectory": {"delaySeconds": 30, "initialDelaySeconds": 10},
    "CookieStore": {},
    "CredentialStore": {"credentials": None},
    "HttpAuthenticationCredential": {"domain": "", "realm": "Realm", "login": "login", "password": "password"},
    "HtmlFormCredential": {"domain": "", "loginUri": "", "formItems": None, "httpMethod": "POST"},
    "ExtractorJS": {"enabled": True, "strict": False, "maximumCandidateLength": -1,
                    "rejectRelativeMatchingRegexList": None},
    "ExtractorSitemap": {"enabled": True, "urlPattern": None, "enableLenientExtraction": False},
    "ExtractorRobotsTxt": {"enabled": True},
}
# NetarchiveSuite classes and Heritrix variants that play one of the roles above.
ROLE_OF_CLASS = {
    "CrawlMetadata": "CrawlMetadata", "NasCrawlMetadata": "CrawlMetadata",
    "TextSeedModule": "TextSeedModule",
    "CrawlController": "CrawlController",
    "CrawlLimitEnforcer": "CrawlLimitEnforcer",
    "QuotaEnforcer": "QuotaEnforcer", "PrerequisiteIgnoringQuotaEnforcer": "QuotaEnforcer",
    "FetchHTTP": "FetchHTTP",
    "DispositionProcessor": "DispositionProcessor",
    "BdbFrontier": "BdbFrontier",
    "DomainnameQueueAssignmentPolicy": "QueueAssignmentPolicy",
    "SeedUriDomainnameQueueAssignmentPolicy": "QueueAssignmentPolicy",
    "SurtAuthorityQueueAssignmentPolicy": "QueueAssignmentPolicy",
    "HostnameQueueAssignmentPolicy": "QueueAssignmentPolicy",
    "WARCWriterProcessor": "WARCWriterProcessor", "NasWARCProcessor": "WARCWriterProcessor",
    "WARCWriterChainProcessor": "WARCWriterProcessor",
    "DeDuplicator": "DeDuplicator",
    "StatisticsTracker": "StatisticsTracker",
    "CheckpointService": "CheckpointService",
    "ActionDirectory": "ActionDirectory",
    "BdbCookieStore": "CookieStore", "SimpleCookieStore": "CookieStore",
    "CredentialStore": "CredentialStore",
    "HttpAuthenticationCredential": "HttpAuthenticationCredential", "Rfc2617Credential": "HttpAuthenticationCredential",
    "HtmlFormCredential": "HtmlFormCredential",
    "ExtractorJS": "ExtractorJS", "IcelandicExtractorJS": "ExtractorJS", "ConfigurableExtractorJS": "ExtractorJS",
    "ExtractorSitemap": "ExtractorSitemap",
    "ExtractorRobotsTxt": "ExtractorRobotsTxt",
}
SCOPE_RULES = {
    "RejectDecideRule", "AcceptDecideRule", "SurtPrefixedDecideRule", "NASSurtPrefixedDecideRule",
    "TooManyHopsDecideRule", "TransclusionDecideRule", "MatchesListRegexDecideRule", "MatchesRegexDecideRule",
    "PathologicalPathDecideRule", "TooManyPathSegmentsDecideRule", "PrerequisiteAcceptDecideRule",
    "SchemeNotInSetDecideRule",
}
# Recognised beans whose work this engine does its own way; their properties have no effect.
INFRASTRUCTURE = {
    "PropertyOverrideConfigurer", "DecideRuleSequence", "CandidateScoper", "FrontierPreparer", "CandidateChain",
    "FetchChain", "DispositionChain", "Preselector", "PreconditionEnforcer", "FetchDNS", "ExtractorHTTP",
    "ExtractorHTML", "ExtractorCSS", "CandidatesProcessor", "BdbModule",
    "BdbUriUniqFilter", "CrawlerLoggerModule", "SheetOverlaysManager", "ConfigPathConfigurer",
    "BdbServerCache", "UnitCostAssignmentPolicy", "CostUriPrecedencePolicy",
    "RulesCanonicalizationPolicy", "ContentSizeAnnotationPostProcessor", "ConfigFile", "ConfigString",
}


class ConfigError(ValidationError):
    """What is wrong with a crawl configuration; for XML errors with line and column."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column


@dataclass(frozen=True)
class ScopeRule:
    """One DecideRule of the scope sequence; harvester/engine/frontier/scope.py evaluates them in order."""
    kind: str                       # the rule's class short name
    decision: str = "ACCEPT"        # ACCEPT or REJECT for predicated rules
    number: int = 0                 # maxHops, maxTransHops, maxRepetitions or maxPathDepth
    second_number: int = 0          # maxSpeculativeHops
    patterns: tuple[str, ...] = ()  # regexes (Java's dialect, checked by harvestdef.patterns), SURT prefixes or schemes
    seeds_as_prefixes: bool = False
    whole_domain: bool = False      # NASSurtPrefixedDecideRule: seeds widen to their registered domain


@dataclass(frozen=True)
class CrawlConfig:
    job_name: str
    seeds: tuple[str, ...]
    user_agent: str
    operator_from: str
    robots_policy: str                       # obey, robotsTxtOnly or ignore
    source_tag_seeds: bool
    scope_rules: tuple[ScopeRule, ...]
    max_toe_threads: int
    pause_at_start: bool
    max_bytes_download: int                  # 0 = unlimited
    max_documents_download: int
    max_time_seconds: int
    group_max_fetch_successes: int           # -1 = unlimited
    group_max_all_kb: int
    quota_counts_prerequisites: bool         # False for NetarchiveSuite's PrerequisiteIgnoringQuotaEnforcer
    queue_by_domain: bool                    # DomainnameQueueAssignmentPolicy and friends
    queue_policy: str                        # the queue assignment policy's class short name
    parallel_queues: int
    delay_factor: float
    min_delay_ms: int
    max_delay_ms: int
    respect_crawl_delay_up_to_seconds: int
    timeout_seconds: float
    so_timeout_ms: int
    max_length_bytes: int                    # 0 = unlimited
    send_connection_close: bool
    use_http11: bool                         # False: HTTP/1.0 requests, so no chunked responses (Heritrix)
    accept_compression: bool                 # Accept-Encoding: gzip,deflate
    send_referer: bool
    accept_headers: tuple[tuple[str, str], ...]
    max_retries: int
    retry_delay_seconds: float
    warc_enabled: bool
    warc_prefix: str
    warc_max_file_size_bytes: int
    warc_compress: bool
    warc_store_paths: tuple[str, ...]
    warcinfo_items: tuple[tuple[str, str], ...]
    crawl_metadata: tuple[tuple[str, str], ...]  # warcinfo fields from CrawlMetadata, in Heritrix's order
    dedup_enabled: bool                      # a DeDuplicator bean: revisits from the index and within the job
    dedup_index: Path | None
    dedup_by_url: bool
    dedup_mime_filter: str
    dedup_mime_filter_is_blacklist: bool
    content_size_annotation: bool
    stats_interval_seconds: float
    checkpoint_interval_minutes: int
    warnings: tuple[str, ...] = field(default=())
    action_delay_seconds: float = 30.0          # ActionDirectory: between scans of action/
    action_initial_delay_seconds: float = 10.0  # ActionDirectory: from the launch's start to the first scan
    cookies_enabled: bool = False               # a cookie store bean, and FetchHTTP.ignoreCookies off
    http_credentials: tuple[HttpCredential, ...] = ()  # the credential store's HttpAuthenticationCredentials
    form_credentials: tuple[FormCredential, ...] = ()  # ... and its HtmlFormCredentials
    js_files: bool = False                      # ExtractorJS, enabled: script files are read for links
    js_inline: bool = False                     # ExtractorJS there and ExtractorHTML.extractJavascript: in-page
    js_strict: bool = False                     # IcelandicExtractorJS / ConfigurableExtractorJS: strict
    js_max_candidate_length: int = -1           # ... maximumCandidateLength
    js_reject_relative: tuple[str, ...] = ()    # ... rejectRelativeMatchingRegexList (Java's dialect)
    sitemaps: bool = False                      # ExtractorSitemap, enabled
    sitemap_url_pattern: str = ""               # ExtractorSitemap.urlPattern (Java's dialect)
    sitemap_lenient: bool = False               # ExtractorSitemap.enableLenientExtraction
    robots_sitemaps: bool = False               # ExtractorRobotsTxt, enabled: robots.txt's Sitemap lines
    # PreconditionEnforcer.ipValidityDurationSeconds: a host's lookup is made again once it is this old (0:
    # never), and its new addresses are put to the destination policy again
    ip_validity_seconds: int = 21600

    def warc_directory(self, launch_dir: Path) -> Path:
        """Where the WARC writer writes: the first of storePaths, a relative one under ``launch_dir``."""
        directory = Path(self.warc_store_paths[0])
        return directory if directory.is_absolute() else launch_dir / directory


def _as_int(value: object, name: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {value!r}") from exc


def _as_float(value: object, name: str) -> float:
    try:
        return float(str(value).strip())
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {value!r}") from exc


def _as_bool(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", ""):
        return False
    raise ConfigError(f"{name} must be true or false, got {value!r}")


class _Reader:
    """Walks the beans once, recording what each role says and warning about the rest."""

    def __init__(self, beans: BeanSet, job_dir: Path):
        self.beans = beans
        self.job_dir = job_dir
        self.roles: dict[str, tuple[str, Bean]] = {}
        self.warnings = beans.warnings
        self.content_size_annotation = False
        self.queue_by_domain = False
        self.queue_policy = "SurtAuthorityQueueAssignmentPolicy"  # Heritrix's profile default
        self.quota_counts_prerequisites = True
        self.extractor_html: Bean | None = None
        self.preconditions: Bean | None = None
        self.credential_beans: list[Bean] = []

    def read(self) -> None:
        for bean in self.beans.beans:
            self._classify(bean, top_level=True)

    def _classify(self, bean: Bean, top_level: bool) -> None:
        short = bean.short_class
        role = ROLE_OF_CLASS.get(short)
        where = bean.bean_id or short
        if short == "ContentSizeAnnotationPostProcessor":
            self.content_size_annotation = True
        if short == "ExtractorHTML" and self.extractor_html is None:
            self.extractor_html = bean
        if short == "PreconditionEnforcer" and self.preconditions is None:
            self.preconditions = bean
        if role in ("HttpAuthenticationCredential", "HtmlFormCredential"):
            self.credential_beans.append(bean)
        if role is not None:
            if short in ("DomainnameQueueAssignmentPolicy", "SeedUriDomainnameQueueAssignmentPolicy"):
                self.queue_by_domain = True
            if role == "QueueAssignmentPolicy":
                self.queue_policy = short
            if short == "PrerequisiteIgnoringQuotaEnforcer":
                self.quota_counts_prerequisites = False
            self.roles.setdefault(role, (short, bean))
            for name in bean.properties:
                if name not in HONOURED[role]:
                    self.warnings.append(f"{where} ({short}): property {name} is not honoured, ignored")
        elif short in SCOPE_RULES or short in INFRASTRUCTURE:
            pass
        else:
            self.warnings.append(f"bean {where} ({bean.class_name}) is not known to this engine, ignored")
        # Beans nested in properties (chains, lists, maps) play roles too, e.g. the content-size processor.
        for value in bean.properties.values():
            for nested in (value if isinstance(value, list) else [value]):
                if isinstance(nested, Bean):
                    self._classify(nested, top_level=False)

    def get(self, role: str, name: str) -> object:
        entry = self.roles.get(role)
        default = HONOURED[role][name]
        if entry is None:
            return default
        value = entry[1].properties.get(name, default)
        return self.beans.resolve(value) if isinstance(value, Ref) else value


def _seeds(reader: _Reader) -> tuple[str, ...]:
    source = reader.get("TextSeedModule", "textSource")
    text = ""
    if isinstance(source, Bean):
        if source.short_class == "ConfigFile":
            path = reader.job_dir / str(source.properties.get("path", SEEDS))
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"seeds file {path} cannot be read: {exc}") from exc
        else:
            text = str(source.properties.get("value", ""))
    elif (reader.job_dir / SEEDS).is_file():
        text = (reader.job_dir / SEEDS).read_text(encoding="utf-8")
    # which lines are seeds is harvestdef's one rule; a line's first token is the URL (Heritrix's
    # TextSeedModule allows a comment after it), and a bare host name is crawled over http
    return tuple(seed.split()[0] if "://" in seed else "http://" + seed.split()[0] for seed in seed_lines(text))


def _scope_rules(reader: _Reader) -> tuple[ScopeRule, ...]:
    scope = reader.beans.by_id.get("scope")
    if scope is None:
        reader.warnings.append("no bean 'scope': only the seeds' SURT prefixes are crawled")
        return (ScopeRule("RejectDecideRule", "REJECT"), ScopeRule("SurtPrefixedDecideRule", seeds_as_prefixes=True))
    rules = []
    for item in scope.properties.get("rules", []) or []:
        bean = reader.beans.resolve(item)
        if not isinstance(bean, Bean):
            continue
        rule = _scope_rule(bean, reader.warnings)
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _scope_rule(bean: Bean, warnings: list[str]) -> ScopeRule | None:
    kind = bean.short_class
    props = bean.properties
    decision = str(props.get("decision", "ACCEPT")).strip().upper()
    if kind == "RejectDecideRule":
        return ScopeRule(kind, "REJECT")
    if kind == "AcceptDecideRule":
        return ScopeRule(kind, "ACCEPT")
    if kind in ("SurtPrefixedDecideRule", "NASSurtPrefixedDecideRule"):
        surts = []
        source = props.get("surtsSource")
        if isinstance(source, Bean) and source.short_class == "ConfigString":
            surts = [line.strip() for line in str(source.properties.get("value", "")).splitlines() if line.strip()]
        return ScopeRule(kind, decision, patterns=tuple(surts),
                         seeds_as_prefixes=_as_bool(props.get("seedsAsSurtPrefixes", True), "seedsAsSurtPrefixes"),
                         whole_domain=kind == "NASSurtPrefixedDecideRule")
    if kind == "TooManyHopsDecideRule":
        return ScopeRule(kind, "REJECT", number=_as_int(props.get("maxHops", 20), "maxHops"))
    if kind == "TransclusionDecideRule":
        return ScopeRule(kind, "ACCEPT", number=_as_int(props.get("maxTransHops", 2), "maxTransHops"),
                         second_number=_as_int(props.get("maxSpeculativeHops", 1), "maxSpeculativeHops"))
    if kind in ("MatchesListRegexDecideRule", "MatchesRegexDecideRule"):
        if kind == "MatchesRegexDecideRule":
            patterns = [str(props.get("regex", ""))]
        else:
            patterns = [str(p).strip() for p in props.get("regexList", []) or [] if str(p).strip()]
        for number, pattern in enumerate(patterns, start=1):
            _check_scope_pattern(pattern, f"{bean.bean_id or kind} ({kind}): regex {number}", warnings)
        return ScopeRule(kind, decision, patterns=tuple(patterns))
    if kind == "PathologicalPathDecideRule":
        return ScopeRule(kind, "REJECT", number=_as_int(props.get("maxRepetitions", 2), "maxRepetitions"))
    if kind == "TooManyPathSegmentsDecideRule":
        return ScopeRule(kind, "REJECT", number=_as_int(props.get("maxPathDepth", 20), "maxPathDepth"))
    if kind == "PrerequisiteAcceptDecideRule":
        return ScopeRule(kind, "ACCEPT")
    if kind == "SchemeNotInSetDecideRule":
        schemes = props.get("schemes") or ["http", "https"]
        return ScopeRule(kind, "REJECT", patterns=tuple(str(s) for s in schemes))
    warnings.append(f"scope rule {bean.class_name} is not known to this engine, ignored")
    return None


def _is_on(reader: _Reader, role: str) -> bool:
    """Whether a role's bean is there and its ``enabled`` property (default true) is on."""
    entry = reader.roles.get(role)
    if entry is None:
        return False
    short, bean = entry
    return _as_bool(reader.get(role, "enabled"), f"{bean.bean_id or short}.enabled")


def _credentials(reader: _Reader) -> tuple[tuple[HttpCredential, ...], tuple[FormCredential, ...]]:
    """The credentials of the credential store's ``credentials`` map (a credential bean outside it is
    unused, as in Heritrix). A login form whose loginUri is not an http(s) URL fails the build naming it."""
    entry = reader.roles.get("CredentialStore")
    listed = entry[1].properties.get("credentials") if entry is not None else None
    if listed is None:
        listed = {}
    if not isinstance(listed, dict):
        raise ConfigError(f"{entry[1].bean_id or 'CredentialStore'}: credentials must be a <map> of credential "
                          f"beans, got {type(listed).__name__}")
    http_credentials: list[HttpCredential] = []
    form_credentials: list[FormCredential] = []
    used: set[int] = set()
    for name, value in listed.items():
        bean = reader.beans.resolve(value)
        role = ROLE_OF_CLASS.get(bean.short_class) if isinstance(bean, Bean) else None
        if not isinstance(bean, Bean) or role not in ("HttpAuthenticationCredential", "HtmlFormCredential"):
            reader.warnings.append(f"credential {name} is not a credential bean this engine knows, ignored")
            continue
        used.add(id(bean))
        defaults = HONOURED[role]
        props = {key: reader.beans.resolve(bean.properties.get(key, default)) for key, default in defaults.items()}
        domain = str(props["domain"] or "").strip().lower()
        if not domain:
            reader.warnings.append(f"credential {name} ({bean.short_class}) has no domain: it is never used")
            continue
        if role == "HttpAuthenticationCredential":
            http_credentials.append(HttpCredential(str(name), domain, str(props["realm"] or ""),
                                                   str(props["login"] or ""), str(props["password"] or "")))
            continue
        login_uri = str(props["loginUri"] or "").strip()
        if urlsplit(login_uri).scheme.lower() not in ("http", "https") or not urlsplit(login_uri).netloc:
            raise ConfigError(f"credential {name} (HtmlFormCredential): loginUri {login_uri!r} is not an "
                              "http(s) URL")
        items = props["formItems"] or {}
        if not isinstance(items, dict):
            raise ConfigError(f"credential {name} (HtmlFormCredential): formItems must be a <map>")
        form_credentials.append(FormCredential(str(name), domain, login_uri,
                                               tuple((str(key), str(item)) for key, item in items.items())))
    for bean in reader.credential_beans:
        if id(bean) not in used:
            reader.warnings.append(f"credential bean {bean.bean_id or bean.short_class} is not in the credential "
                                   "store's credentials, unused")
    return tuple(http_credentials), tuple(form_credentials)


def _check_pattern(pattern: str, where: str) -> None:
    """A regex of the crawler-beans must run in RE2 (harvestdef.patterns): one that cannot fails the build
    naming it, rather than being skipped or run by a backtracking matcher without a time bound (which a
    pattern such as (.|.)*X freezes)."""
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        raise ConfigError(f"{where} cannot be used: {exc}") from exc


def _check_scope_pattern(pattern: str, where: str, warnings: list[str]) -> None:
    """A scope regex runs in RE2, or, needing lookaround or backreferences, in the backtracking matcher
    with BACKTRACKING_MATCH_SECONDS per URL (said in job.log); anything else fails the build naming it.
    A trap left out would crawl what it was meant to keep out."""
    try:
        compiled = compile_crawl_pattern(pattern, BACKTRACKING_MATCH_SECONDS)
    except PatternError as exc:
        raise ConfigError(f"{where} cannot be used: {exc}") from exc
    if isinstance(compiled, BacktrackingPattern):
        warnings.append(f"{where} {pattern!r} needs lookaround or backreferences, which RE2 lacks: it runs in a "
                        f"backtracking matcher with {BACKTRACKING_MATCH_SECONDS * 1000:g} ms per URL, after which "
                        f"a REJECT rule rejects the URL")


def _accept_headers(value: object, warnings: list[str]) -> tuple[tuple[str, str], ...]:
    """FetchHTTP.acceptHeaders: complete header lines ("Accept-Language: da"), as FetchHTTPRequest splits them."""
    lines = value if isinstance(value, list) else [value] if value else []
    headers = []
    for line in lines:
        name, separator, header_value = str(line).partition(":")
        if not separator or not name.strip() or not header_value.strip():
            warnings.append(f"fetchHttp (FetchHTTP): invalid accept header {line!r}, ignored")
            continue
        headers.append((name.strip(), header_value.strip()))
    return tuple(headers)


def _crawl_metadata(get, user_agent: str) -> tuple[tuple[str, str], ...]:
    """The warcinfo fields Heritrix takes from CrawlMetadata, in its order and only when not blank
    (heritrix3 modules/src/main/java/org/archive/modules/writer/BaseWARCWriterProcessor.java, getMetadata)."""
    fields = (("operator", get("CrawlMetadata", "operator")), ("publisher", get("CrawlMetadata", "organization")),
              ("audience", get("CrawlMetadata", "audience")), ("isPartOf", get("CrawlMetadata", "jobName")),
              ("description", get("CrawlMetadata", "description")),
              ("robots", str(get("CrawlMetadata", "robotsPolicyName")).lower()),
              ("http-header-user-agent", user_agent), ("http-header-from", get("CrawlMetadata", "operatorFrom")))
    return tuple((label, str(value).strip()) for label, value in fields if value and str(value).strip())


def _as_text(value: object, name: str) -> str:
    return str(value)


def _as_count(value: object, name: str) -> int:
    """A number of things of which there is at least one (threads, parallel queues)."""
    return max(1, _as_int(value, name))


@dataclass(frozen=True)
class _Property:
    """A CrawlConfig field read straight from one honoured property of one role's bean (its default from
    HONOURED), converted by ``kind``, whose error names the property."""
    field: str
    role: str
    name: str
    kind: Callable[[object, str], object]


PROPERTIES = (
    _Property("job_name", "CrawlMetadata", "jobName", _as_text),
    _Property("operator_from", "CrawlMetadata", "operatorFrom", _as_text),
    _Property("source_tag_seeds", "TextSeedModule", "sourceTagSeeds", _as_bool),
    _Property("max_toe_threads", "CrawlController", "maxToeThreads", _as_count),
    _Property("pause_at_start", "CrawlController", "pauseAtStart", _as_bool),
    _Property("max_bytes_download", "CrawlLimitEnforcer", "maxBytesDownload", _as_int),
    _Property("max_documents_download", "CrawlLimitEnforcer", "maxDocumentsDownload", _as_int),
    _Property("max_time_seconds", "CrawlLimitEnforcer", "maxTimeSeconds", _as_int),
    _Property("group_max_fetch_successes", "QuotaEnforcer", "groupMaxFetchSuccesses", _as_int),
    _Property("group_max_all_kb", "QuotaEnforcer", "groupMaxAllKb", _as_int),
    _Property("parallel_queues", "QueueAssignmentPolicy", "parallelQueues", _as_count),
    _Property("delay_factor", "DispositionProcessor", "delayFactor", _as_float),
    _Property("min_delay_ms", "DispositionProcessor", "minDelayMs", _as_int),
    _Property("max_delay_ms", "DispositionProcessor", "maxDelayMs", _as_int),
    _Property("respect_crawl_delay_up_to_seconds", "DispositionProcessor", "respectCrawlDelayUpToSeconds",
              _as_int),
    _Property("timeout_seconds", "FetchHTTP", "timeoutSeconds", _as_float),
    _Property("so_timeout_ms", "FetchHTTP", "soTimeoutMs", _as_int),
    _Property("max_length_bytes", "FetchHTTP", "maxLengthBytes", _as_int),
    _Property("send_connection_close", "FetchHTTP", "sendConnectionClose", _as_bool),
    _Property("use_http11", "FetchHTTP", "useHTTP11", _as_bool),
    _Property("accept_compression", "FetchHTTP", "acceptCompression", _as_bool),
    _Property("send_referer", "FetchHTTP", "sendReferer", _as_bool),
    _Property("max_retries", "BdbFrontier", "maxRetries", _as_int),
    _Property("retry_delay_seconds", "BdbFrontier", "retryDelaySeconds", _as_float),
    _Property("warc_prefix", "WARCWriterProcessor", "prefix", _as_text),
    _Property("warc_max_file_size_bytes", "WARCWriterProcessor", "maxFileSizeBytes", _as_int),
    _Property("warc_compress", "WARCWriterProcessor", "compress", _as_bool),
    _Property("dedup_mime_filter", "DeDuplicator", "mimeFilter", _as_text),
    _Property("stats_interval_seconds", "StatisticsTracker", "intervalSeconds", _as_float),
    _Property("checkpoint_interval_minutes", "CheckpointService", "checkpointIntervalMinutes", _as_int),
    _Property("action_delay_seconds", "ActionDirectory", "delaySeconds", _as_float),
    _Property("action_initial_delay_seconds", "ActionDirectory", "initialDelaySeconds", _as_float),
    _Property("js_max_candidate_length", "ExtractorJS", "maximumCandidateLength", _as_int),
    _Property("sitemap_lenient", "ExtractorSitemap", "enableLenientExtraction", _as_bool),
)


def _read_beans(cxml_path: Path, job_dir: Path) -> _Reader:
    try:
        data = cxml_path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{cxml_path} cannot be read: {exc}") from exc
    try:
        bean_set = BeanSet(parse_beans(data))
    except BeanError as exc:
        raise ConfigError(str(exc), exc.line, exc.column) from exc
    bean_set.apply_overrides()
    reader = _Reader(bean_set, job_dir)
    reader.read()
    return reader


def _identity(reader: _Reader) -> dict[str, object]:
    """The user agent (its template filled in), the robots policy and the warcinfo fields."""
    get = reader.get
    contact = str(get("CrawlMetadata", "operatorContactUrl"))
    user_agent = str(get("CrawlMetadata", "userAgentTemplate")).replace("@OPERATOR_CONTACT_URL@", contact)
    user_agent = user_agent.replace("@VERSION@", "3.4.0-harvestsuite")
    robots = str(get("CrawlMetadata", "robotsPolicyName")).strip()
    if robots == "classic":
        robots = "obey"
    if robots not in ("obey", "robotsTxtOnly", "ignore"):
        raise ConfigError(f"robotsPolicyName {robots!r} is not one of obey, classic, robotsTxtOnly, ignore")
    return {"user_agent": user_agent, "robots_policy": robots, "crawl_metadata": _crawl_metadata(get, user_agent)}


def _writing(reader: _Reader, job_dir: Path) -> dict[str, object]:
    """The WARC writer's and the deduplicator's switches, paths and filters."""
    get = reader.get
    deduplicating = "DeDuplicator" in reader.roles and _as_bool(get("DeDuplicator", "enabled"), "enabled")
    if "DeDuplicator" in reader.roles:
        _check_pattern(str(get("DeDuplicator", "mimeFilter")), "DeDuplicator: mimeFilter")
    location = str(get("DeDuplicator", "indexLocation")).strip()
    dedup_index = None
    if deduplicating and location:
        dedup_index = Path(location) if Path(location).is_absolute() else job_dir / location
    store_paths = get("WARCWriterProcessor", "storePaths")
    items = get("WARCWriterProcessor", "metadataItems")
    return {
        "warc_enabled": ("WARCWriterProcessor" in reader.roles
                         and _as_bool(get("WARCWriterProcessor", "enabled"), "enabled")),
        "warc_store_paths": (tuple(str(path) for path in store_paths)
                             if isinstance(store_paths, list) and store_paths else (WARCS_DIR,)),
        "warcinfo_items": tuple((str(k), str(v)) for k, v in items.items()) if isinstance(items, dict) else (),
        "dedup_enabled": deduplicating,
        "dedup_index": dedup_index,
        "dedup_by_url": str(get("DeDuplicator", "matchingMethod")).strip().upper() == "URL",
        "dedup_mime_filter_is_blacklist": str(get("DeDuplicator", "filterMode")).strip().upper() != "WHITELIST",
        "content_size_annotation": reader.content_size_annotation,
    }


def _extraction(reader: _Reader) -> dict[str, object]:
    """Which extractors beyond HTML and CSS run (script, sitemaps, robots.txt), and their patterns checked."""
    get = reader.get
    js_present = "ExtractorJS" in reader.roles
    js_bean = reader.roles["ExtractorJS"][1].bean_id if js_present else ""
    js_reject = get("ExtractorJS", "rejectRelativeMatchingRegexList") if js_present else None
    js_reject = tuple(str(p).strip() for p in js_reject if str(p).strip()) if isinstance(js_reject, list) else ()
    for number, pattern in enumerate(js_reject, start=1):
        _check_pattern("(?i)" + pattern, f"{js_bean} (ExtractorJS): rejectRelativeMatchingRegexList regex {number}")
    extract_javascript = True
    if reader.extractor_html is not None:
        extract_javascript = _as_bool(reader.extractor_html.properties.get("extractJavascript", True),
                                      f"{reader.extractor_html.bean_id or 'ExtractorHTML'}.extractJavascript")
    sitemap_pattern = str(get("ExtractorSitemap", "urlPattern") or "").strip()
    if sitemap_pattern:
        _check_pattern(sitemap_pattern, "ExtractorSitemap: urlPattern")
    return {
        "js_files": _is_on(reader, "ExtractorJS"),
        "js_inline": js_present and extract_javascript,
        "js_strict": js_present and _as_bool(get("ExtractorJS", "strict"), "strict"),
        "js_reject_relative": js_reject,
        "sitemaps": _is_on(reader, "ExtractorSitemap"),
        "sitemap_url_pattern": sitemap_pattern,
        "robots_sitemaps": _is_on(reader, "ExtractorRobotsTxt"),
    }


def load_crawl_config(cxml_path: Path, job_dir: Path) -> CrawlConfig:
    """Read a crawler-beans.cxml; relative paths in it (seeds.txt, dedup index) resolve against job_dir."""
    cxml_path, job_dir = Path(cxml_path), Path(job_dir)
    reader = _read_beans(cxml_path, job_dir)
    get = reader.get
    values: dict[str, object] = {prop.field: prop.kind(get(prop.role, prop.name), prop.name) for prop in PROPERTIES}
    values |= _identity(reader) | _writing(reader, job_dir) | _extraction(reader)
    http_credentials, form_credentials = _credentials(reader)
    ip_validity_seconds = 21600  # Heritrix's default
    if reader.preconditions is not None:
        ip_validity_seconds = _as_int(reader.preconditions.properties.get("ipValidityDurationSeconds", 21600),
                                      f"{reader.preconditions.bean_id or 'PreconditionEnforcer'}"
                                      ".ipValidityDurationSeconds")
    cookies_enabled = "CookieStore" in reader.roles and not _as_bool(get("FetchHTTP", "ignoreCookies"),
                                                                      "ignoreCookies")
    values |= {
        "seeds": _seeds(reader),
        "scope_rules": _scope_rules(reader),
        "quota_counts_prerequisites": reader.quota_counts_prerequisites,
        "queue_by_domain": reader.queue_by_domain,
        "queue_policy": reader.queue_policy,
        "accept_headers": _accept_headers(get("FetchHTTP", "acceptHeaders"), reader.warnings),
        "cookies_enabled": cookies_enabled,
        "http_credentials": http_credentials,
        "form_credentials": form_credentials,
        "ip_validity_seconds": max(0, ip_validity_seconds),
    }
    # read last: the steps above add to them
    warnings = list(dict.fromkeys(reader.warnings))
    if form_credentials and not cookies_enabled:
        warnings.append("login forms of the credential store log in with the cookie their answer sets, and there "
                        "is no cookie store bean (or fetchHttp.ignoreCookies is on): the crawl will not stay "
                        "logged in")
    if not values["warc_enabled"]:
        warnings.append("no WARC writer bean: nothing will be archived")
    return CrawlConfig(**values, warnings=tuple(warnings))  # type: ignore[arg-type]
