"""What an operator's change to a running job may say: the payload of each kind, checked and normalised
before it is stored as a job change (harvestdef/repositories/jobchanges.py).

``validate_change(kind, body, job_domains)`` returns the payload to store, or raises a FieldError (a
ValidationError) naming the field and what is wrong with it; the caller stores nothing then. The rules:

- control actions (pause, resume, checkpoint, stop, fail): ``{}``, with an optional ``reason`` of at most
  MAX_REASON_LENGTH characters on one line;
- reject and unreject ``{regex, domain?}``, delete_queued ``{regex}``: a regular expression of 1 to
  MAX_REGEX_LENGTH characters without control characters, in Java's syntax as Heritrix reads it, which
  must compile as crawler traps must (harvestdef/patterns.py: translated by harvestdef/javaregex.py and run
  by RE2, so lookaround and backreferences are refused and a rule cannot make the crawler backtrack);
- budget ``{domain, max_objects?, max_bytes?}``: at least one limit, each a whole number from -1 on
  (NetarchiveSuite's -1 = unlimited);
- add_uris ``{uris}``: 1 to MAX_ADDED_URIS URIs, each by the seed rule (harvestdef/seeds.py: an http or
  https URL, ``http://`` added to a line without a scheme, stored as the crawler uses it) and on one of the
  job's domains or a subdomain of one, and, with the site's destination policy given, not on a host it
  refuses before resolution (an IP literal of a loopback or private network, ``localhost``:
  harvestdef/destinations.py); the error names the index (``uris[3]``); a URI given twice is kept once;
- politeness ``{delay_factor?, min_delay_ms?, max_delay_ms?, max_per_host?}``: at least one; the names of
  Heritrix's politeness settings (delayFactor, minDelayMs, maxDelayMs) and the most URIs fetched from one
  host at once; none below the site's floor nor max_per_host above its ceiling (harvestdef/politeness.py,
  the settings harvestsuite.liveChanges.minDelayFactor, minDelayMs, minMaxDelayMs and maxPerHost).

A ``domain`` is given in Unicode or punycode and must be one of ``job_domains`` (the job's domains as the
harvest database stores them, Unicode for an IDN); it is stored in that form, the form of DoOneCrawl's
domain_configurations. A field no kind has, a number given as text or a boolean, and a JSON null for a
required field are refused; null for an optional field is as if it were left out.

This module checks values only: it never reads or writes the database, and it does not judge whether the
job's state allows a change now (the web UI does, from the crawler's reported state).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping
from typing import Any

from harvestdef.destinations import DestinationPolicy
from harvestdef.domainnames import http_url, is_ip_address, normalize_domain_name, to_unicode
from harvestdef.errors import DomainNameError, FieldError, PatternError, UrlError, shown
from harvestdef.patterns import compile_pattern
from harvestdef.phrases import N_, Phrase, phrase
from harvestdef.politeness import PolitenessBounds
from harvestdef.seeds import ANY_SEED, check_seed
from harvestdef.validation import INT64

# A job change's states (harvestdef/repositories/jobchanges.py keeps the changes)
PENDING, APPLIED, REFUSED = "pending", "applied", "refused"
STATES = (PENDING, APPLIED, REFUSED)
# The only moves of a change's state: a pending change is settled once, and stays so.
TRANSITIONS: Mapping[str, frozenset[str]] = {PENDING: frozenset({APPLIED, REFUSED}),
                                             APPLIED: frozenset(), REFUSED: frozenset()}

# kinds: control actions, then live changes (the API's words, docs/scheduler.md, Live changes)
PAUSE, RESUME, CHECKPOINT, STOP, FAIL = "pause", "resume", "checkpoint", "stop", "fail"
CONTROL_ACTIONS = (PAUSE, RESUME, CHECKPOINT, STOP, FAIL)
REJECT, UNREJECT, BUDGET, DELETE_QUEUED, ADD_URIS, POLITENESS = (
    "reject", "unreject", "budget", "delete_queued", "add_uris", "politeness")
CHANGE_KINDS = (REJECT, UNREJECT, BUDGET, DELETE_QUEUED, ADD_URIS, POLITENESS)
KINDS = CONTROL_ACTIONS + CHANGE_KINDS

__all__ = ["FIELDS", "MAX_ADDED_URIS", "MAX_DELAY_FACTOR", "MAX_DELAY_MS", "MAX_PER_HOST", "MAX_REASON_LENGTH",
           "MAX_REGEX_LENGTH", "UNLIMITED", "end_description", "read_end_description", "validate_change"]

MAX_REASON_LENGTH = 500
# global_crawler_trap_expressions.trap_expression is varchar(1000): a rule is as long as a trap may be
MAX_REGEX_LENGTH = 1000
MAX_ADDED_URIS = 1000
MAX_DELAY_FACTOR = 100
MAX_DELAY_MS = 3_600_000  # an hour between two fetches from one host
MAX_PER_HOST = 100
UNLIMITED = -1
# How many of the job's domains a refusal of a domain names (a snapshot job has thousands).
_NAMED_DOMAINS = 5

# The fields each kind takes, in the order an error lists them.
FIELDS: Mapping[str, tuple[str, ...]] = {
    **{action: ("reason",) for action in CONTROL_ACTIONS},
    REJECT: ("regex", "domain"), UNREJECT: ("regex", "domain"),
    BUDGET: ("domain", "max_objects", "max_bytes"),
    DELETE_QUEUED: ("regex",),
    ADD_URIS: ("uris",),
    POLITENESS: ("delay_factor", "min_delay_ms", "max_delay_ms", "max_per_host"),
}
# Characters no rule or reason may hold: every Cc (C0, DEL, C1) and the line and paragraph separators.
_CONTROL_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})


def end_description(kind: str, author: str, version: int) -> str:
    """The words of an operator's stop or fail (change ``version`` by ``author``): what the harvest controller
    logs when it ends the crawl, and what controllers before message schema 1.5 reported among the job's
    harvest errors instead of CrawlStatus.crawl_end (``read_end_description`` reads them back)."""
    if kind == "fail":
        return f"the crawl was ended as failed by {author} (change {version})"
    return f"the crawl was stopped by {author} (change {version})"


_END_DESCRIPTION = re.compile(r"the crawl was (stopped|ended as failed) by (.+) \(change ([1-9][0-9]{0,9})\)")


def read_end_description(text: str) -> tuple[str, str, int] | None:
    """(kind, author, version) of an operator's stop or fail in ``end_description``'s words, or None when
    ``text`` is not such words."""
    found = _END_DESCRIPTION.fullmatch(text)
    if found is None:
        return None
    return ("stop" if found[1] == "stopped" else "fail"), found[2], int(found[3])


def validate_change(kind: str, body: Mapping[str, Any], job_domains: Collection[str], *,
                    valid_seed_regex: str = ANY_SEED,
                    politeness_bounds: PolitenessBounds | None = None,
                    destinations: DestinationPolicy | None = None) -> dict[str, Any]:
    """The payload to store for a change of ``kind`` to a job of ``job_domains``, from the request's
    ``body`` (which may repeat the kind as ``kind``); FieldError naming the field otherwise.
    ``valid_seed_regex``: the site's harvester.datamodel.domain.validSeedRegex, which added URIs match;
    ``politeness_bounds``: the site's floors of politeness (harvestsuite.liveChanges.*), which a politeness
    change must keep to; ``destinations``: the destination policy their hosts pass before resolution (None:
    not asked)."""
    if kind not in KINDS:
        raise FieldError("kind", f"unknown kind of change {shown(str(kind))!r}; one of {', '.join(KINDS)}")
    given = dict(body)
    if "kind" in given and given.pop("kind") != kind:
        raise FieldError("kind", f"says another kind than the {kind} change it was sent as")
    _refuse_unknown(kind, given)
    values = {name: value for name, value in given.items() if value is not None}
    if kind in CONTROL_ACTIONS:
        return _control(values)
    payload = _CHECKS[kind](values, job_domains, valid_seed_regex)
    if kind == POLITENESS and politeness_bounds is not None:
        politeness_bounds.check_change(payload)
    if kind == ADD_URIS and destinations is not None:
        _refuse_destinations(values["uris"], destinations)
    return payload


def _refuse_destinations(uris: list[str], destinations: DestinationPolicy) -> None:
    """Refuse an added URI (already a valid seed) whose host the policy refuses before resolution: an IP
    literal of a loopback or private network, ``localhost``; the crawler checks other names on their
    addresses."""
    for index, uri in enumerate(uris):
        reason = destinations.refusal_before_resolution(http_url(uri.strip()).host)
        if reason is not None:
            raise FieldError(f"uris[{index}]", phrase(N_("'%(uri)s': %(reason)s"), uri=shown(uri.strip()),
                                                      reason=reason))


def _refuse_unknown(kind: str, given: Mapping[str, Any]) -> None:
    allowed = FIELDS[kind]
    unknown = sorted(name for name in given if name not in allowed)
    if not unknown:
        return
    others = ""
    if len(unknown) > 1:
        others = f", nor {'is' if len(unknown) == 2 else 'are'} {', '.join(shown(name) for name in unknown[1:])}"
    takes = f"it takes {', '.join(allowed)}" if allowed else "it takes no fields"
    raise FieldError(shown(unknown[0]), f"is not a field of a {kind} change{others}; {takes}")


# ---------------------------------------------------------------- the kinds
def _control(values: dict[str, Any]) -> dict[str, Any]:
    if "reason" not in values:
        return {}
    reason = _one_line(values["reason"], "reason").strip()
    if len(reason) > MAX_REASON_LENGTH:
        raise FieldError("reason", phrase(N_("must be at most %(limit)s characters, not %(length)s"),
                                          limit=MAX_REASON_LENGTH, length=len(reason)))
    return {"reason": reason} if reason else {}


def _rule(values: dict[str, Any], job_domains: Collection[str], _: str) -> dict[str, Any]:
    """reject and unreject: a regex, and the domain it is confined to."""
    payload = {"regex": _regex(values)}
    if "domain" in values:
        payload["domain"] = _job_domain(values["domain"], job_domains)
    return payload


def _delete_queued(values: dict[str, Any], _: Collection[str], __: str) -> dict[str, Any]:
    return {"regex": _regex(values)}


def _budget(values: dict[str, Any], job_domains: Collection[str], _: str) -> dict[str, Any]:
    if "domain" not in values:
        raise FieldError("domain", phrase(N_("is required: a budget is set for one of the job's domains")))
    payload: dict[str, Any] = {"domain": _job_domain(values["domain"], job_domains)}
    limits = [name for name in ("max_objects", "max_bytes") if name in values]
    if not limits:
        raise FieldError("max_objects", phrase(N_("give max_objects or max_bytes (or both); -1 is unlimited")))
    for name in limits:
        payload[name] = _integer(values[name], name, UNLIMITED, INT64[1], "-1 (unlimited)")
    return payload


def _add_uris(values: dict[str, Any], job_domains: Collection[str], valid_seed_regex: str) -> dict[str, Any]:
    uris = values.get("uris")
    if uris is None:
        raise FieldError("uris", phrase(N_("is required: a list of the URIs to add")))
    if not isinstance(uris, list):
        raise FieldError("uris", f"must be a list of URIs, not {_describe(uris)}")
    if not 1 <= len(uris) <= MAX_ADDED_URIS:
        raise FieldError("uris", phrase(N_("must hold 1 to %(limit)s URIs, not %(count)s"), limit=MAX_ADDED_URIS,
                                        count=len(uris)))
    kept: dict[str, None] = {}
    for index, uri in enumerate(uris):
        field = f"uris[{index}]"
        if not isinstance(uri, str):
            raise FieldError(field, f"must be a URI, not {_describe(uri)}")
        try:
            url, _ = check_seed(uri.strip(), None, valid_seed_regex)
            host = to_unicode(http_url(url).host)
        except (UrlError, DomainNameError) as exc:
            raise FieldError(field, _refusal_of(uri.strip(), exc.reason_phrase)) from None
        if _domain_of_host(host, job_domains) is None:
            raise FieldError(field, phrase(N_("'%(uri)s' is on %(host)s, which is in none of the job's domains "
                                              "%(domains)s"), uri=shown(uri.strip()), host=host,
                                           domains=_some_domains(job_domains)))
        kept.setdefault(url, None)
    return {"uris": list(kept)}


def _politeness(values: dict[str, Any], _: Collection[str], __: str) -> dict[str, Any]:
    if not values:
        raise FieldError("delay_factor", phrase(N_("give at least one of %(fields)s"),
                                                fields=", ".join(FIELDS[POLITENESS])))
    payload: dict[str, Any] = {}
    if "delay_factor" in values:
        factor = values["delay_factor"]
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not math.isfinite(factor):
            raise FieldError("delay_factor", phrase(N_("must be a number, not %(value)s"), value=_describe(factor)))
        if not 0 <= factor <= MAX_DELAY_FACTOR:
            raise FieldError("delay_factor", _between(0, MAX_DELAY_FACTOR, factor))
        payload["delay_factor"] = float(factor)
    for name in ("min_delay_ms", "max_delay_ms"):
        if name in values:
            payload[name] = _integer(values[name], name, 0, MAX_DELAY_MS)
    if payload.get("min_delay_ms", 0) > payload.get("max_delay_ms", MAX_DELAY_MS):
        raise FieldError("min_delay_ms", phrase(N_("must not be more than max_delay_ms (%(low)s > %(high)s)"),
                                                low=payload["min_delay_ms"], high=payload["max_delay_ms"]))
    if "max_per_host" in values:
        payload["max_per_host"] = _integer(values["max_per_host"], "max_per_host", 1, MAX_PER_HOST)
    return payload


_CHECKS: Mapping[str, Callable[[dict[str, Any], Collection[str], str], dict[str, Any]]] = {
    REJECT: _rule, UNREJECT: _rule, BUDGET: _budget, DELETE_QUEUED: _delete_queued, ADD_URIS: _add_uris,
    POLITENESS: _politeness,
}


# ---------------------------------------------------------------- the values
def _one_line(value: Any, field: str) -> str:
    """Text without control characters or line breaks."""
    if not isinstance(value, str):
        raise FieldError(field, phrase(N_("must be text, not %(value)s"), value=_describe(value)))
    bad = sorted({char for char in value if unicodedata.category(char) in _CONTROL_CATEGORIES})
    if bad:
        raise FieldError(field, phrase(N_("must not contain control characters or line breaks: it has %(shown)s"),
                                       shown=", ".join(f"U+{ord(char):04X}" for char in bad)))
    return value


def _regex(values: dict[str, Any]) -> str:
    if "regex" not in values:
        raise FieldError("regex", phrase(N_("is required: a regular expression in Java's syntax, as Heritrix reads "
                                            "it")))
    regex = _one_line(values["regex"], "regex").strip()
    if not 1 <= len(regex) <= MAX_REGEX_LENGTH:
        raise FieldError("regex", phrase(N_("must be 1 to %(limit)s characters, not %(length)s"),
                                         limit=MAX_REGEX_LENGTH, length=len(regex)))
    try:
        compile_pattern(regex)
    except PatternError as exc:
        # the construct and RE2's reason stay as they are: quoted, not translated
        raise FieldError("regex", phrase(N_("is not a regular expression the crawler can run: %(reason)s"),
                                         reason=exc.reason)) from None
    return regex


def _job_domain(value: Any, job_domains: Collection[str]) -> str:
    """The job's own name of the domain ``value`` gives (in Unicode or punycode)."""
    if not isinstance(value, str):
        raise FieldError("domain", phrase(N_("must be a domain name, not %(value)s"), value=_describe(value)))
    try:
        name = normalize_domain_name(value)
    except DomainNameError as exc:
        raise FieldError("domain", exc.phrase or str(exc)) from None
    if name not in job_domains:
        raise FieldError("domain", phrase(N_("%(name)s is not one of the job's domains %(domains)s"), name=name,
                                          domains=_some_domains(job_domains)))
    return name


def _domain_of_host(host: str, job_domains: Collection[str]) -> str | None:
    """The job's domain ``host`` (Unicode) is, or is a subdomain of; one set lookup per label, so a snapshot
    job's thousands of domains cost no more than a few."""
    if is_ip_address(host):
        return host if host in job_domains else None
    labels = host.split(".")
    for start in range(len(labels)):
        candidate = ".".join(labels[start:])
        if candidate in job_domains:
            return candidate
    return None


def _integer(value: Any, field: str, low: int, high: int, low_text: str | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(field, phrase(N_("must be a whole number, not %(value)s"), value=_describe(value)))
    if not low <= value <= high:
        if high == INT64[1]:
            least = phrase(N_("-1 (unlimited)")) if low_text == "-1 (unlimited)" else str(low_text or low)
            raise FieldError(field, phrase(N_("must be %(low)s or more, not %(value)s"), low=least, value=value))
        raise FieldError(field, _between(low, high, value))
    return value


def _between(low: float, high: float, value: float) -> Phrase:
    return phrase(N_("must be between %(low)s and %(high)s, not %(value)s"), low=low, high=high, value=value)


def _some_domains(job_domains: Collection[str]) -> Phrase:
    names = sorted(job_domains)
    listed = ", ".join(names[:_NAMED_DOMAINS])
    if not names:
        return phrase(N_("(it has none)"))
    if len(names) > _NAMED_DOMAINS:
        return phrase(N_("(%(listed)s and %(count)s more)"), listed=listed, count=len(names) - _NAMED_DOMAINS)
    return phrase("(%(listed)s)", listed=listed)


def _refusal_of(value: str, reason: str | Phrase) -> Phrase:
    """A refused value and the reason in one sentence: "'ftp://kb.dk' is not an http or https URL (...)"."""
    english = str(reason)
    if english.startswith("not "):
        return phrase(N_("'%(value)s' is %(reason)s"), value=shown(value), reason=reason)
    if english.split(" ", 1)[0] in ("is", "has", "contains", "does", "belongs"):
        return phrase(N_("'%(value)s' %(reason)s"), value=shown(value), reason=reason)
    return phrase(N_("'%(value)s': %(reason)s"), value=shown(value), reason=reason)


def _describe(value: Any) -> str | Phrase:
    if isinstance(value, bool):
        return phrase(N_("a boolean"))
    if isinstance(value, int | float):
        return phrase(N_("the number %(number)s"), number=repr(value))
    if isinstance(value, str):
        return phrase(N_("the text %(text)s"), text=repr(shown(value[:40])))
    if isinstance(value, list):
        return phrase(N_("a list"))
    if isinstance(value, dict):
        return phrase(N_("an object"))
    return type(value).__name__
