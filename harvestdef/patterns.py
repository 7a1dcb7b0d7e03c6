"""Regular expressions a person gives (crawler traps, the crawl-log search, scope rules of a crawl template):
read in Java's dialect, translated into RE2's, compiled by RE2.

Why RE2: Python's ``re`` backtracks, so ``(.|.)*X`` or ``(a+)+$`` takes exponential time on a line of a few
dozen characters, and one such pattern froze a whole web UI or crawl engine. RE2 (PyPI ``google-re2``)
matches in time linear in the text, whatever the pattern, so a pattern that compiles here can be run on
untrusted text without a time bound per match.

Why Java's dialect: Heritrix's MatchesListRegexDecideRule compiles crawler traps with java.util.regex, and
NetarchiveSuite's pages took Java regexes; the traps archives move over are written in it. ``to_re2``
(harvestdef/javaregex.py) walks the pattern once and

- translates what RE2 can express: ``\\Q...\\E`` quoting; ``\\uXXXX``, ``\\0oct``, ``\\cX``, ``\\e``
  escapes; ``\\p{Lower}``-style POSIX classes, ``\\p{IsL}``/``\\p{gc=Lu}`` categories and
  ``\\p{IsLatin}``/``\\p{sc=Latin}`` scripts; ``\\h``, ``\\v``, ``\\R``; ``\\Z`` (as ``\\z``: URLs and crawl-log
  lines hold no line terminator); possessive quantifiers (``*+``) and atomic groups (``(?>...)``), as
  the greedy forms; named groups ``(?<name>...)``; nested classes (``[a-c[x-z]]``, a union); the
  embedded flags ``i m s`` (kept), ``d u`` (RE2 behaves so already) and ``x`` (whitespace and ``#``
  comments dropped here);
- refuses, naming the construct and its column, what RE2 cannot express: lookahead and lookbehind,
  backreferences, class intersection (``&&``), a negated class inside a class, Unicode blocks
  (``\\p{InGreek}``), binary and ``java...`` properties, the ``U`` flag, ``\\G``, ``\\X``, ``\\N{...}``,
  ``\\b{g}``; and what Java itself refuses (an unknown escape, a ``{`` that is no repetition, unclosed
  groups and classes).

The one difference left: a possessive quantifier or atomic group that gave up a match in Java (``a*+a``
never matches there) matches here; traps use them to spare Java's backtracker, which RE2 does not need.
docs/engine.md lists all of this for curators.

compile_pattern is for what a person gives now (traps on saving, the crawl-log search): RE2 or refused.
compile_crawl_pattern is for the crawl engine, which must also run the templates archives already have:
a pattern refused only for lookaround or backreferences runs in a BacktrackingPattern (the ``regex``
module, Java's meaning) with a time budget per match. bounded_wildcard_search bounds the ``*`` searches
that become SQL LIKE patterns. This module knows nothing of where a pattern came from; its callers name
the field and the line.
"""

from __future__ import annotations

import re

import re2
import regex

from harvestdef.errors import PatternError
from harvestdef.javaregex import split_leading_lookahead, to_backtracking, to_re2

__all__ = ["BacktrackingPattern", "CompiledPattern", "CrawlPatterns", "LookaheadPattern", "PatternError",
           "bounded_wildcard_search", "compile_crawl_pattern", "compile_pattern", "to_re2"]

CompiledPattern = re2._Regexp
# A search with * wildcards (the domain search: SQL LIKE): a domain name has at most 253 characters, and
# NetarchiveSuite's searches (kultur*, *.gov.uk, *calendar*) use two or three wildcards.
MAX_WILDCARD_SEARCH_LENGTH = 256
MAX_WILDCARDS = 8
# RE2's own bound on the memory of one compiled pattern (its default is 8 MiB); a pattern above it is
# refused when compiled ("pattern too large"), never when run.
MAX_PATTERN_MEMORY = 8 << 20

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern on stderr; we raise instead
_OPTIONS.max_mem = MAX_PATTERN_MEMORY
# The trap lists of a crawl, compiled as one alternation: more memory, as many patterns share it.
_ALTERNATION_OPTIONS = re2.Options()
_ALTERNATION_OPTIONS.log_errors = False
_ALTERNATION_OPTIONS.never_capture = True
_ALTERNATION_OPTIONS.max_mem = 8 * MAX_PATTERN_MEMORY
# The lookaheads of a job's domain traps, as one RE2 set. Its matcher has no slower fallback: with too little
# memory for even a few states it answers "no match" (and RE2 logs "DFA out of memory", hence log_errors),
# so it gets as much memory as an alternation, which holds hundreds of such URL patterns many times over.
_SET_OPTIONS = re2.Options()
_SET_OPTIONS.never_capture = True
_SET_OPTIONS.max_mem = 8 * MAX_PATTERN_MEMORY


class BacktrackingPattern:
    """A Java pattern only a backtracking matcher can run (lookaround, backreferences), in the ``regex``
    module with a time budget per match: ``fullmatch`` raises TimeoutError when the budget runs out, so
    ``(.|.)*(?=X)`` costs its budget per text, never a frozen process. The caller decides what a timeout
    means; harvester/engine/frontier/scope.py lets a REJECT rule reject."""

    def __init__(self, pattern: str, seconds: float) -> None:
        self.pattern = pattern
        self.seconds = seconds
        translated = to_backtracking(pattern)
        try:
            self._compiled = regex.compile(translated, regex.VERSION1)
        except regex.error as exc:
            raise PatternError(pattern, f"{exc} (in the backtracking matcher)", None, "regex") from exc

    def fullmatch(self, text: str) -> regex.Match[str] | None:
        # concurrent: the GIL is released while it matches, so the process's other threads go on
        return self._compiled.fullmatch(text, timeout=self.seconds, concurrent=True)


class LookaheadPattern:
    """``(?=A)B`` or ``(?!A)B`` matched against a whole text by two RE2 patterns: A at the start of the
    text (or, negative, not) and B over all of it. Harvest jobs write each domain's crawler trap R as
    ``(?=<a URL of the domain>)(?:R)``, so a trap RE2 runs stays in RE2 (linear time) inside a job."""

    def __init__(self, pattern: str, is_negative: bool, condition: str, rest: str) -> None:
        self.pattern = pattern
        self.is_negative = is_negative
        self.condition = condition
        self.rest_re2 = to_re2(rest)
        self._condition = compile_pattern(condition)
        self._rest = compile_pattern(rest)

    def holds_for(self, text: str) -> bool:
        """Whether the lookahead lets ``text`` through (A matches at its start, or for (?!, does not)."""
        return (self._condition.match(text) is None) == self.is_negative

    def fullmatch(self, text: str) -> bool:
        return self.holds_for(text) and self._rest.fullmatch(text) is not None


def compile_crawl_pattern(pattern: str, backtracking_seconds: float
                          ) -> CompiledPattern | LookaheadPattern | BacktrackingPattern:
    """A pattern of a crawl configuration: RE2 where it can run it (compile_pattern), or a leading lookahead
    and the rest as two RE2 patterns (LookaheadPattern); a pattern RE2 refuses only for lookaround or
    backreferences, which Heritrix's Java matcher runs and real templates use (NetarchiveSuite's default
    template's repeated-path-segment traps), in a BacktrackingPattern with ``backtracking_seconds`` per
    match. Anything else: PatternError, as compile_pattern raises it."""
    try:
        return compile_pattern(pattern)
    except PatternError as refused:
        try:
            split = split_leading_lookahead(pattern)
            if split is not None:
                try:
                    return LookaheadPattern(pattern, *split)
                except PatternError:
                    pass   # a part RE2 cannot run either: the whole goes to the backtracking matcher
            return BacktrackingPattern(pattern, backtracking_seconds)
        except PatternError:
            raise refused from None


def _alternation(re2_forms: list[str]) -> CompiledPattern | None:
    """Patterns (RE2's syntax) as one; None when RE2's memory bound does not hold them together."""
    try:
        # each alternative in a group of its own, so that its embedded flags end with it; no captures, so
        # that two traps may name a group alike
        return re2.compile("|".join(f"(?:{form})" for form in re2_forms), _ALTERNATION_OPTIONS)
    except re2.error:
        return None


class CrawlPatterns:
    """The regexes of one scope rule (a trap list of hundreds), matched together: those RE2 runs as one
    alternation, a single pass over the URL whatever their number (NetarchiveSuite's 511 traps: 0.05 ms a
    URL, where one RE2 call each took 1 ms and Python's re 0.2 ms); the traps of one domain in a job (one
    lookahead, harvestdef.patterns.LookaheadPattern) likewise behind their one lookahead; the others as
    BacktrackingPatterns.

    PatternError as compile_crawl_pattern raises it, for the first pattern that cannot be run.
    """

    def __init__(self, patterns: tuple[str, ...], backtracking_seconds: float) -> None:
        compiled = [compile_crawl_pattern(pattern, backtracking_seconds) for pattern in patterns]
        self.backtracking = tuple(c for c in compiled if isinstance(c, BacktrackingPattern))
        plain = [(pattern, each) for pattern, each in zip(patterns, compiled, strict=True)
                 if not isinstance(each, BacktrackingPattern | LookaheadPattern)]
        self._each: list[CompiledPattern | LookaheadPattern] = []   # those RE2 would not hold together
        self._together = _alternation([to_re2(pattern) for pattern, _ in plain]) if plain else None
        if plain and self._together is None:
            self._each += [each for _, each in plain]
        by_condition: dict[tuple[bool, str], list[LookaheadPattern]] = {}
        for each in compiled:
            if isinstance(each, LookaheadPattern):
                by_condition.setdefault((each.is_negative, each.condition), []).append(each)
        # the positive lookaheads in one RE2 set: one pass over the URL says which domains' traps to try
        self._conditions: re2.Set | None = None
        self._rests: list[CompiledPattern] = []   # by the condition's index in the set
        for (is_negative, condition), group in by_condition.items():
            rests = _alternation([each.rest_re2 for each in group])
            if is_negative or rests is None:
                self._each += group
                continue
            if self._conditions is None:
                self._conditions = re2.Set.MatchSet(_SET_OPTIONS)
            self._conditions.Add(to_re2(condition))
            self._rests.append(rests)
        if self._conditions is not None:
            self._conditions.Compile()

    def fullmatch_any(self, text: str) -> bool | None:
        """True if a pattern matches all of ``text``; None if none does but a BacktrackingPattern ran out of
        its time budget (the caller decides what that means); False otherwise."""
        if self._together is not None and self._together.fullmatch(text) is not None:
            return True
        if self._conditions is not None:
            for index in self._conditions.Match(text) or ():
                if self._rests[index].fullmatch(text) is not None:
                    return True
        if any(each.fullmatch(text) for each in self._each):
            return True
        timed_out = False
        for pattern in self.backtracking:
            try:
                if pattern.fullmatch(text) is not None:
                    return True
            except TimeoutError:
                timed_out = True
        return None if timed_out else False


def bounded_wildcard_search(text: str, max_length: int = MAX_WILDCARD_SEARCH_LENGTH,
                            max_wildcards: int = MAX_WILDCARDS) -> str:
    """``text``, a search with ``*`` wildcards that becomes an SQL LIKE pattern, with each run of ``*`` as one.

    Raises PatternError when it is longer than ``max_length`` characters or has more than ``max_wildcards``
    wildcards: the cost of a LIKE grows with both, on every row a search reads.
    """
    collapsed = re.sub(r"\*{2,}", "*", text)
    if len(collapsed) > max_length:
        raise PatternError(text, f"{len(collapsed)} characters long (at most {max_length})", None, "length")
    if collapsed.count("*") > max_wildcards:
        raise PatternError(text, f"{collapsed.count('*')} wildcards * (at most {max_wildcards})", None, "wildcards")
    return collapsed


def compile_pattern(pattern: str, max_length: int | None = None) -> CompiledPattern:
    """``pattern`` (Java's dialect) compiled by RE2: linear-time matching whatever it says.

    Raises PatternError when it is longer than ``max_length`` characters, uses a construct RE2 cannot
    express (naming it and its column), or when RE2 refuses the translation (with RE2's reason).
    """
    if max_length is not None and len(pattern) > max_length:
        raise PatternError(pattern, f"{len(pattern)} characters long (at most {max_length})", None, "length")
    translated = to_re2(pattern)
    try:
        return re2.compile(translated, _OPTIONS)
    except re2.error as exc:
        # RE2's reasons name the operator or the part of the pattern ("missing ): ..."), never a column
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(pattern, reason, None, "RE2") from exc
