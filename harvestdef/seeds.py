"""What counts as a seed line, and what a seed may be: the rules every reader and every writer of seeds follow.

A seed list is text. Its lines are what ``str.splitlines()`` yields; a line is a seed when, with leading
and trailing whitespace removed (``str.strip()``: Unicode whitespace), it is not empty and does not start
with ``#``, which marks a comment (NetarchiveSuite's "no active seeds" rule, NAS-2506). The seed is the
stripped line.

The rule is needed in Python (storing a seed list, writing a job's seed list, reading a job's seeds in the
crawl engine) and inside PostgreSQL (job generation leaves out, in its query, configurations without a
seed). Both forms come from this module: ``HAS_SEED_PATTERN`` is built from the same two character sets
that ``str.splitlines`` and ``str.strip`` use, written so that Python's ``re`` and PostgreSQL's regular
expressions read it alike, and tests check it against ``seed_lines`` in both.

What a seed may be (``check_seed_list``, ``check_event_seeds``) is the one rule every entry point of seeds
applies (the seed-list page and API, event seeds, configurations choosing seed lists):

* an http or https URL (harvestdef.domainnames.http_url): a line without a scheme gets ``http://``, as
  NetarchiveSuite's event harvest (PartialHarvest.processSeed) and Heritrix's seed reader add it; any other
  scheme (``ftp://``, ``mailto:``), whitespace, control characters, no host, a bad port, a host that is no
  host name, and lines over 2083 characters are refused;
* of the seed list's own domain or one of its subdomains (an IP address is its own domain, an IDN is the
  same domain in Unicode or punycode); an event harvest's seeds each make their own domain's seed list;
* matching the site's ``validSeedRegex`` as a whole (NetarchiveSuite's SeedList.isAcceptableURL), applied
  to the line as written;
* with a destination policy given (harvestdef/destinations.py, as the entry points give the site's): not on
  a host it refuses before resolution: an IP literal of a loopback, private, link-local... network, or
  ``localhost``, unless harvestsuite.network.allowDestinations allows it. The crawler checks every other
  name again on its addresses.

An accepted seed is stored as the crawler will use it (HttpUrl.url: the scheme added, scheme and host in
lower case, the host in punycode); a seed given twice is kept once. Every refused line comes back with its
number, the line as given (errors.shown) and the reason in words, so a caller refuses the whole request
at once and stores nothing. Event seeds also skip lines starting with ``//``, which NetarchiveSuite's
event harvest form reads as comments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from harvestdef.destinations import DestinationPolicy
from harvestdef.domainnames import http_url, registered_domain
from harvestdef.errors import DomainNameError, LineRefusal, UrlError
from harvestdef.phrases import N_, phrase

if TYPE_CHECKING:  # the crawl engine reads seeds too, and has no use for SQLAlchemy
    from sqlalchemy.sql import ColumnElement

COMMENT = "#"
# NetarchiveSuite's event harvest form also skips lines starting with this (PartialHarvest.processSeed).
EVENT_COMMENT = "//"
# validSeedRegex's default: every line (NetarchiveSuite's harvester.datamodel.domain.validSeedRegex).
ANY_SEED = r"^.*$"
# The characters str.strip() removes and those str.splitlines() breaks at (a subset of the first). No
# whitespace lies above U+3000 (IDEOGRAPHIC SPACE), so the scan stops there instead of reading all of
# Unicode at every import (tests/harvestdef/test_seeds.py checks the bound against the whole range).
WHITESPACE_BOUND = 0x3000
WHITESPACE = "".join(chr(code) for code in range(WHITESPACE_BOUND + 1) if chr(code).isspace())
LINE_BREAKS = "".join(char for char in WHITESPACE if len(f"a{char}b".splitlines()) == 2)


def _class(chars: str) -> str:
    """Characters as \\uXXXX escapes, which Python's re and PostgreSQL's AREs both read in brackets."""
    return "".join(f"\\u{ord(char):04x}" for char in chars)


# Some line holds, after nothing but whitespace, a character that is neither whitespace nor '#'. The
# whitespace run may cross line breaks: the last break in it starts the seed's own line.
HAS_SEED_PATTERN = f"(?:^|[{_class(LINE_BREAKS)}])[{_class(WHITESPACE)}]*[^{_class(WHITESPACE)}{COMMENT}]"
_HAS_SEED = re.compile(HAS_SEED_PATTERN)
# ASCII text that holds none of these (whitespace other than line breaks, and '#') splits into its seeds
# with str.split(): every whitespace character left is a line break, so the tokens are exactly the stripped,
# non-empty lines, and none is a comment. Each is looked for with str's `in`, at memory speed: a job's seed
# list is megabytes.
_NOT_PLAIN_ASCII = tuple(sorted(char for char in set(WHITESPACE) - set(LINE_BREAKS) | {COMMENT} if char.isascii()))


def seed_of_line(line: str) -> str | None:
    """The seed a line holds (the line stripped), or None for a blank or comment line."""
    seed = line.strip()
    if not seed or seed.startswith(COMMENT):
        return None
    return seed


def seed_lines(text: str | None) -> list[str]:
    """The seeds of a seed list's text, in order, duplicates kept."""
    if not text:
        return []
    if text.isascii() and not any(char in text for char in _NOT_PLAIN_ASCII):
        # the usual stored list (one plain URL a line): the same answer as the loop below, several times faster
        return text.split()
    seeds = []
    for line in text.splitlines():
        seed = seed_of_line(line)
        if seed is not None:
            seeds.append(seed)
    return seeds


def has_seed(text: str | None) -> bool:
    """True if the text holds at least one seed line."""
    return bool(text) and _HAS_SEED.search(text) is not None


def has_seed_sql(column: ColumnElement[str], postgresql: bool) -> ColumnElement[bool]:
    """``has_seed`` as an SQL condition on a text column.

    On PostgreSQL it is the same pattern as a regular-expression match; elsewhere the database calls
    ``has_seed`` itself, which ``register_sqlite_functions`` must have made known to the connection.
    """
    from sqlalchemy import func

    if postgresql:
        return column.regexp_match(HAS_SEED_PATTERN)
    return func.hs_has_seed(column) == 1


def register_sqlite_functions(driver_connection: object) -> None:
    """Make ``has_seed`` callable as ``hs_has_seed`` on a sqlite3 connection (SQLite has no regular
    expressions of its own)."""
    driver_connection.create_function("hs_has_seed", 1, has_seed, deterministic=True)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class SeedCheck:
    """Seed lines checked: the accepted seeds (normalised, each once, in order), grouped by their registered
    domain, and every refused line."""

    seeds: tuple[str, ...]
    by_domain: dict[str, tuple[str, ...]] = field(default_factory=dict)
    refusals: tuple[LineRefusal, ...] = ()


def numbered_lines(lines: str | Iterable[str]) -> Iterator[tuple[int, str]]:
    """(1-based number, line) of a text (its lines as ``str.splitlines`` breaks them; a leading byte-order
    mark dropped) or of a sequence whose every item is one line (a line break inside an item is a control
    character, refused with the item's number, so numbers always match the items)."""
    if isinstance(lines, str):
        yield from enumerate(lines.removeprefix("\ufeff").splitlines(), start=1)
    else:
        yield from enumerate((str(line) for line in lines), start=1)


@lru_cache(maxsize=16)
def _seed_pattern(valid_seed_regex: str) -> re.Pattern[str]:
    return re.compile(valid_seed_regex)


def check_seed(seed: str, domain: str | None, valid_seed_regex: str = ANY_SEED,
               destinations: DestinationPolicy | None = None) -> tuple[str, str]:
    """(the seed as stored, its registered domain) of one stripped seed line; ``domain``: the domain the
    seed must belong to (None: any); ``destinations``: the policy its host must pass before resolution (None:
    not asked). Raises UrlError or DomainNameError whose ``reason`` says why not."""
    url = http_url(seed)
    if destinations is not None:
        refusal = destinations.refusal_before_resolution(url.host)
        if refusal is not None:
            raise UrlError(refusal, refusal)
    seed_domain = registered_domain(url.host)
    if domain is not None and seed_domain != domain:
        said = phrase(N_("belongs to domain %(domain)s, not %(expected)s"), domain=seed_domain, expected=domain)
        raise DomainNameError(said, said)
    if valid_seed_regex != ANY_SEED and not _seed_pattern(valid_seed_regex).fullmatch(seed):
        said = phrase(N_("does not match this site's seed pattern %(pattern)s "
                         "(harvester.datamodel.domain.validSeedRegex)"), pattern=repr(valid_seed_regex))
        raise UrlError(said, said)
    return url.url, seed_domain


def _check(lines: str | Iterable[str], domain: str | None, valid_seed_regex: str,
           comments: tuple[str, ...], destinations: DestinationPolicy | None) -> SeedCheck:
    kept: dict[str, str] = {}
    refusals: list[LineRefusal] = []
    for number, line in numbered_lines(lines):
        seed = seed_of_line(line)
        if seed is None or seed.startswith(comments):
            continue
        try:
            url, seed_domain = check_seed(seed, domain, valid_seed_regex, destinations)
        except (UrlError, DomainNameError) as exc:
            refusals.append(LineRefusal.of(number, seed, exc.reason_phrase))
            continue
        kept.setdefault(url, seed_domain)
    by_domain: dict[str, list[str]] = {}
    for url, seed_domain in kept.items():
        by_domain.setdefault(seed_domain, []).append(url)
    return SeedCheck(tuple(kept), {name: tuple(seeds) for name, seeds in by_domain.items()}, tuple(refusals))


def check_seed_list(domain: str, lines: str | Iterable[str], valid_seed_regex: str = ANY_SEED,
                    destinations: DestinationPolicy | None = None) -> SeedCheck:
    """The seeds of a seed list of ``domain`` (its stored name, Unicode): every line checked by the rule in
    the module docstring; blank and ``#`` lines skipped."""
    return _check(lines, domain, valid_seed_regex, (COMMENT,), destinations)


def check_event_seeds(lines: str | Iterable[str], valid_seed_regex: str = ANY_SEED,
                      destinations: DestinationPolicy | None = None) -> SeedCheck:
    """An event harvest's seeds: each seed's own domain decides which seed list it joins (``by_domain``);
    blank, ``#`` and ``//`` lines skipped."""
    return _check(lines, None, valid_seed_regex, (COMMENT, EVENT_COMMENT), destinations)
