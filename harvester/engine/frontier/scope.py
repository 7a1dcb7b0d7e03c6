"""Scope: the DecideRuleSequence of the crawl configuration, evaluated like Heritrix (last decision wins),
and the URL forms it works on (canonical URL, SURT).

A decision depends on the URL, its hop path (the letters L, E, R, X, P of its discovery path) and the
seeds. ``decide`` also says whether the hop count alone made a URL out of scope, because such a URL may
come back in scope when a shorter path to it is found (harvester/engine/frontier/frontier.py keeps those).

Operators' reject rules (``add_reject_rule``, from a running crawl's script) come after the template's
rules, as a MatchesListRegexDecideRule with decision REJECT appended to the sequence would: a URL one of
them fully matches is rejected, whatever the rules before said. ``rejects_now`` asks them alone, for URIs
queued before a rule came (harvester/engine/frontier/preselector.py).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urljoin, urlsplit, urlunsplit

from harvestdef.domainnames import registered_domain, to_punycode
from harvestdef.errors import DomainNameError
from harvestdef.patterns import CrawlPatterns, compile_crawl_pattern
from harvester.engine.config import BACKTRACKING_MATCH_SECONDS, ScopeRule

_DEFAULT_PORTS = {"http": 80, "https": 443}


@lru_cache(maxsize=65536)
def _netloc(scheme: str, netloc: str) -> str | None:
    """Normalised authority (punycode host, default port dropped); cached: a crawl sees few hosts."""
    try:
        parts = urlsplit(f"{scheme}://{netloc}/")
        hostname = parts.hostname or ""
        # an IPv6 literal keeps its brackets (RFC 3986 §3.2.2): without them the URL no longer parses
        host = f"[{ipaddress.IPv6Address(hostname)}]" if ":" in hostname else to_punycode(hostname)
        port = parts.port
    except (ValueError, DomainNameError):
        return None
    if not host:
        return None
    return host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"


# A link that is a plain absolute path ("/a/b.html?q"): no "//" authority, no dot segment ("/." rules out
# "/./" and "/../", conservatively also "/.x"), no white space or control character (which urlsplit strips
# or removes), none of the characters canonical_url rewrites.
_PLAIN_ABSOLUTE_PATH = re.compile(r"/(?!/)[^\x00-\x20\x7f]*")


@lru_cache(maxsize=1024)
def _origin(base: str) -> str | None:
    """``scheme://authority`` of canonical_url(anything, base), None if no URL relative to ``base`` is
    http(s); cached: a page's links share its base."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        return None
    netloc = _netloc(parts.scheme, parts.netloc.rsplit("@", 1)[-1])
    return None if netloc is None else f"{parts.scheme}://{netloc}"


def canonical_url(url: str, base: str | None = None) -> str | None:
    """Absolute, fragment-free URL with a punycode lower-case host; None if it is not http(s).

    Most links of a page are plain absolute paths: for them the result is the base's canonical origin and
    the path, without the fragment and an empty query, which is what urljoin and urlsplit give (the
    general way below), for a fraction of the work."""
    if base is not None:
        stripped = url.strip()
        if "/." not in stripped and _PLAIN_ABSOLUTE_PATH.fullmatch(stripped):
            origin = _origin(base)
            if origin is None:
                return None
            path, _, query = stripped.partition("#")[0].partition("?")
            return f"{origin}{path}?{query}" if query else origin + path
    try:
        if base is not None:
            url = urljoin(base, url.strip())
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.netloc:
        return None
    netloc = _netloc(scheme, parts.netloc.rsplit("@", 1)[-1])
    if netloc is None:
        return None
    path = parts.path or "/"
    return urlunsplit((scheme, netloc, path.replace(" ", "%20"), parts.query, ""))


def surt(url: str) -> str:
    """``http://www.example.dk:8080/a/b`` -> ``http://(dk,example,www,:8080)/a/b`` (Heritrix's SURT form)."""
    parts = urlsplit(url)
    labels = ",".join(reversed((parts.hostname or "").split(".")))
    port = f":{parts.port}" if parts.port else ""
    scheme = "http" if parts.scheme == "https" else parts.scheme  # Heritrix compares https as http
    rest = parts.path + (f"?{parts.query}" if parts.query else "")
    return f"{scheme}://({labels},{port})" + rest


def seed_surt_prefix(seed: str, whole_domain: bool) -> str:
    """The SURT prefix a seed implies: its host and directory (Heritrix), or its whole registered domain
    with every subdomain (NetarchiveSuite's NASSurtPrefixedDecideRule)."""
    parts = urlsplit(seed)
    host = parts.hostname or ""
    if whole_domain:
        try:
            domain = to_punycode(registered_domain(host))
        except DomainNameError:
            # a name with no registered domain (``localhost``, an intranet's ``archive``): its own host is
            # the prefix, as Heritrix's SURT of it; the seed is still crawled (or refused by destination)
            domain = host
        return "http://(" + ",".join(reversed(domain.split("."))) + ","
    full = surt(seed)
    head, _, path = full.partition(")")
    directory = path[: path.rfind("/") + 1] if "/" in path else "/"
    return head + ")" + directory


class Scope:
    def __init__(self, rules: Iterable[ScopeRule], seeds: Iterable[str]):
        self.rules = tuple(rules)
        seeds = tuple(seeds)
        self._prefixes: dict[int, tuple[str, ...]] = {}
        # RE2 (harvestdef.patterns): linear time per URL whatever a curator's trap says; a trap that needs
        # lookaround or backreferences has a time budget per URL instead. Any other pattern never gets here:
        # loading the crawl configuration fails on it.
        self._regexes: dict[int, CrawlPatterns] = {}
        for index, rule in enumerate(self.rules):
            if rule.kind in ("SurtPrefixedDecideRule", "NASSurtPrefixedDecideRule"):
                prefixes = set(rule.patterns)
                if rule.seeds_as_prefixes:
                    prefixes.update(seed_surt_prefix(s, rule.whole_domain) for s in seeds)
                self._prefixes[index] = tuple(sorted(prefixes))
            elif rule.kind in ("MatchesListRegexDecideRule", "MatchesRegexDecideRule"):
                self._regexes[index] = CrawlPatterns(rule.patterns, BACKTRACKING_MATCH_SECONDS)
        self.reject_rules: tuple[str, ...] = ()
        self._reject_rules: CrawlPatterns | None = None
        self._reject_rules_stale = False  # rules added with defer, not compiled yet

    def add_reject_rule(self, regex: str, *, defer: bool = False) -> bool:
        """Reject what ``regex`` (Java's dialect) fully matches from now on; False if it is a rule already.
        PatternError (and no change) for a regex that cannot be run.

        ``defer``: the rule is checked alone and listed, but the rules are compiled together only at
        ``compile_reject_rules``, so a script of hundreds of rules compiles them once, not once per rule (each
        compilation takes every rule: adding them one at a time costs the square of their number). The caller
        compiles before anything asks the rules again."""
        if regex in self.reject_rules:
            return False
        if defer:
            compile_crawl_pattern(regex, BACKTRACKING_MATCH_SECONDS)
            self.reject_rules = (*self.reject_rules, regex)
            self._reject_rules_stale = True
            return True
        compiled = CrawlPatterns((*self.reject_rules, regex), BACKTRACKING_MATCH_SECONDS)
        self.reject_rules, self._reject_rules = (*self.reject_rules, regex), compiled
        self._reject_rules_stale = False
        return True

    def compile_reject_rules(self) -> None:
        """Compile the rules added with ``defer`` (nothing to do when there are none)."""
        if self._reject_rules_stale:
            self._reject_rules = CrawlPatterns(self.reject_rules, BACKTRACKING_MATCH_SECONDS) \
                if self.reject_rules else None
            self._reject_rules_stale = False

    def remove_reject_rule(self, regex: str) -> bool:
        """Take back the reject rule ``regex``; False if there is no such rule."""
        if regex not in self.reject_rules:
            return False
        kept = tuple(rule for rule in self.reject_rules if rule != regex)
        self.reject_rules = kept
        self._reject_rules = CrawlPatterns(kept, BACKTRACKING_MATCH_SECONDS) if kept else None
        self._reject_rules_stale = False
        return True

    def rejects_now(self, url: str) -> bool:
        """Whether an operator's reject rule rejects ``url``."""
        return self._reject_rules is not None and _matches(self._reject_rules, url, "REJECT")

    def add_seed(self, seed: str) -> None:
        for index, rule in enumerate(self.rules):
            if index in self._prefixes and rule.seeds_as_prefixes:
                implied = seed_surt_prefix(seed, rule.whole_domain)
                self._prefixes[index] = tuple(sorted({*self._prefixes[index], implied}))

    def decide(self, url: str, hop_path: str) -> tuple[bool, bool]:
        """(accepted, rejected only because of too many hops)."""
        decision = None
        by_hops = False
        url_surt = None
        for index, rule in enumerate(self.rules):
            kind = rule.kind
            result = None
            if kind == "RejectDecideRule" or kind == "AcceptDecideRule":
                result = rule.decision
            elif index in self._prefixes:
                if url_surt is None:
                    url_surt = surt(url)
                if url_surt.startswith(self._prefixes[index]):
                    result = rule.decision
            elif kind == "TooManyHopsDecideRule":
                if len(hop_path) > rule.number:
                    result = "REJECT"
                    by_hops = True
            elif kind == "TransclusionDecideRule":
                if _is_transclusion(hop_path, rule.number, rule.second_number):
                    result = "ACCEPT"
            elif index in self._regexes:
                if _matches(self._regexes[index], url, rule.decision):
                    result = rule.decision
            elif kind == "PathologicalPathDecideRule":
                if _is_pathological(url, rule.number):
                    result = "REJECT"
            elif kind == "TooManyPathSegmentsDecideRule":
                if urlsplit(url).path.count("/") > rule.number:
                    result = "REJECT"
            elif kind == "PrerequisiteAcceptDecideRule":
                if hop_path.endswith("P"):
                    result = "ACCEPT"
            elif kind == "SchemeNotInSetDecideRule" and urlsplit(url).scheme not in rule.patterns:
                result = "REJECT"
            if result is not None:
                if result != decision and kind != "TooManyHopsDecideRule":
                    by_hops = False
                decision = result
        if self._reject_rules is not None and self.rejects_now(url):
            if decision != "REJECT":
                by_hops = False
            decision = "REJECT"
        accepted = decision == "ACCEPT"
        return accepted, (not accepted and by_hops)


def _matches(patterns: CrawlPatterns, url: str, decision: str) -> bool:
    matched = patterns.fullmatch_any(url)
    # None: a backtracking trap ran out of time on this URL. A REJECT rule keeps the URL out (it is what
    # made the trap backtrack), an ACCEPT rule does not let it in.
    return matched is True or (matched is None and decision == "REJECT")


def _is_transclusion(hop_path: str, max_trans_hops: int, max_speculative_hops: int) -> bool:
    """Heritrix's TransclusionDecideRule: the path ends in 1..max_trans_hops non-link hops (embeds,
    redirects, prerequisites), at most max_speculative_hops of them X."""
    tail = hop_path[len(hop_path.rstrip("ERXPI")):]
    return 0 < len(tail) <= max_trans_hops and tail.count("X") <= max_speculative_hops


def _is_pathological(url: str, max_repetitions: int) -> bool:
    segments = [s for s in urlsplit(url).path.split("/") if s]
    run = 1
    for previous, current in zip(segments, segments[1:], strict=False):
        run = run + 1 if current == previous else 1
        if run > max_repetitions:
            return True
    return False
