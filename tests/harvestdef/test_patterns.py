"""User-given patterns (harvestdef/patterns.py): Java's dialect translated into RE2's, what is refused with
the construct and its column, and RE2's linear time on the patterns that freeze a backtracking matcher.

The expected matches were checked against java.util.regex.Pattern (``matches()``) of OpenJDK 17."""

from __future__ import annotations

import pytest

from harvestdef.errors import PatternError
from harvestdef.patterns import (
    BacktrackingPattern,
    CompiledPattern,
    CrawlPatterns,
    LookaheadPattern,
    bounded_wildcard_search,
    compile_crawl_pattern,
    compile_pattern,
    to_re2,
)
from scheduler.jobgen.building import domain_scoped_trap

LINE_TERMINATORS = r"[^\n\r\x{85}\x{2028}\x{2029}]"  # what Java's . leaves out


@pytest.mark.parametrize("java, re2_form", [
    (r"abc", "abc"),
    (r".*/trap/.*", f"{LINE_TERMINATORS}*/trap/{LINE_TERMINATORS}*"),
    (r"(?s).", "(?s)."),
    (r"(?d).", "."),                                    # UNIX_LINES: RE2's own rule for .
    (r"a++b", "a+b"),                                   # possessive: RE2 never backtracks
    (r"a{2,3}+", "a{2,3}"),
    (r"a*?b", "a*?b"),                                  # lazy: kept
    (r"(?>ab)c", "(?:ab)c"),                            # atomic group
    (r"\Qa.b*\E+", r"a\.b\*+"),
    (r"[a-c[x-z]]", "[a-cx-z]"),                        # nested class: a union
    (r"[[:alpha:]]", "[:alpha:]"),                      # Java reads the characters : a l p h
    (r"\p{Lower}\P{Digit}", "[[:lower:]][^[:digit:]]"),
    (r"[\p{Alpha}_]", "[[:alpha:]_]"),
    (r"\p{IsLatin}\p{sc=Greek}\p{IsLu}\p{gc=Nd}\pL", r"\p{Latin}\p{Greek}\p{Lu}\p{Nd}\p{L}"),
    (r"(?<year>\d{4})", r"(?P<year>\d{4})"),
    (r"(?i)ABC(?-i:d)", "(?i)ABC(?-i:d)"),
    (r"(?iu)x(?d-s:y)", "(?i)x(?-s:y)"),                # u and d: RE2's behaviour already
    (r"(?x) a b  # a comment", "ab"),
    (r"(?x:a [b c])d e", "(?:a[bc])d e"),                   # comments mode ends with its group
    (r"\u00e6\uD83D\uDE00\x41\x{1F600}\0101\cA\e", "æ😀A😀A\\x{1}\\x{1b}"),
    (r"\s\S", r"[\x{9}-\x{d}\x{20}][^\x{9}-\x{d}\x{20}]"),  # Java's \s includes \x0B, RE2's does not
    (r"[\S]", r"[\x{0}-\x{8}\x{e}-\x{1f}\x{21}-\x{10ffff}]"),
    (r"a\Z", r"a\z"),
    (r"[]a]", r"[\]a]"),
    (r"[0-9_-[\.]]", r"[0-9_\-.]"),                   # from NetarchiveSuite's default template
    (r"\{\}}]", r"\{\}\}\]"),
])
def test_java_constructs_are_translated(java, re2_form):
    assert to_re2(java) == re2_form
    compile_pattern(java)


@pytest.mark.parametrize("java, matching, not_matching", [
    (r".*/trap/.*", ["http://kb.dk/trap/x"], ["http://kb.dk/trapx", "http://kb.dk/trap/\u2028"]),
    (r"\Qa.b\E", ["a.b"], ["axb"]),
    (r"[a-c[x-z]]", ["b", "y"], ["d", "["]),
    (r"[a-zA-Z0-9_-[\.]]", ["_", "-", ".", "Z"], ["[", "]", "`"]),
    (r"[[:alpha:]]", [":", "a"], ["b"]),
    (r"[^]a]", ["b"], ["]", "a"]),
    (r"\p{Lower}+", ["abc"], ["aBc", "æ"]),
    (r"\p{IsLatin}+", ["æAb"], ["Ω"]),
    (r"\s", [" ", "\x0b"], ["a"]),
    (r"\h", ["\xa0", "\t"], ["\n"]),
    (r"\R", ["\r\n", "\u2028"], ["a"]),
    (r"(?x)[a b]", ["a", "b"], [" "]),
    (r"\uD83D\uDE00", ["😀"], ["😀x", "x"]),
])
def test_translations_match_what_java_matches(java, matching, not_matching):
    compiled = compile_pattern(java)
    assert all(compiled.fullmatch(text) for text in matching)
    assert not any(compiled.fullmatch(text) for text in not_matching)


@pytest.mark.parametrize("java, construct, column", [
    (r"a(?=b)", "lookahead '(?='", 2),
    (r"(?<!a)b", "lookbehind '(?<!'", 1),
    (r"(a)\1", r"backreference \1", 4),
    (r"(?<n>a)\k<n>", r"backreference \k", 8),
    (r"[a-z&&[^e]]", "class intersection '&&'", 5),
    (r"[a[^b]]", "a negated class inside a class", 3),
    (r"\p{InGreek}", r"'\p{InGreek}'", 1),
    (r"\p{javaLowerCase}", r"'\p{javaLowerCase}'", 1),
    (r"x\p{IsAlphabetic}", r"'\p{IsAlphabetic}'", 2),
    (r"(?U)\w", "flag (?U)", 1),
    (r"\Ga", r"'\G'", 1),
    (r"a\X", r"'\X'", 2),
    (r"\N{LATIN SMALL LETTER A}", r"'\N'", 1),
    (r"\b{g}", r"'\b{g}'", 1),
    (r"\y", r"'\y'", 1),
    (r"ab\E", r"'\E'", 3),
    (r"a{", "'{'", 2),
    (r"a{,3}", "'{'", 2),
    (r"(ab", "'('", 1),
    (r"ab)", "')'", 3),
    (r"[ab", "'['", 1),
    (r"[z-a]", "range z-a", 2),
    (r"(?P<n>x)", "'(?P'", 1),
    (r"\uD83Dx", r"'\ud83d'", 1),
])
def test_what_re2_cannot_express_is_refused_naming_construct_and_column(java, construct, column):
    with pytest.raises(PatternError) as caught:
        compile_pattern(java)
    assert caught.value.column == column
    assert caught.value.reason.startswith(f"{construct} at column {column}: "), caught.value.reason
    assert repr(java) in str(caught.value)


def test_re2_refusals_and_the_length_bound_name_the_reason():
    with pytest.raises(PatternError, match="no argument for repetition operator"):
        compile_pattern("*.pdf")
    with pytest.raises(PatternError, match="invalid repetition size"):
        compile_pattern("a{1001}")
    with pytest.raises(PatternError, match="201 characters long \\(at most 200\\)"):
        compile_pattern("a" * 201, max_length=200)
    compile_pattern("a" * 200, max_length=200)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("java", [r"(.|.)*X", r"(a+)+$", r"(a|aa)+b", r"(\w+\s?)*!"])
def test_catastrophic_patterns_run_in_linear_time(java):
    # Linear time is RE2's guarantee for any pattern it compiled: what this checks is that the pattern is
    # compiled by RE2, not by a backtracking matcher, and that the search over the text returns (Python's
    # backtracking re takes minutes on 30 characters of it; the timeout mark stops a hang).
    compiled = compile_pattern(java)
    assert isinstance(compiled, CompiledPattern)
    assert compiled.search("a" * 5000 + "?") is None


@pytest.mark.timeout(60)
def test_a_crawl_pattern_needing_backreferences_runs_with_a_time_budget():
    # NetarchiveSuite's default template: a path segment of 3+ characters four times
    trap = r"^[^?]*(/[^/]{3,}(?=/))[^?]*\1(?=/)[^?]*\1(?=/)[^?]*\1(?=/|$).*"
    with pytest.raises(PatternError, match="lookahead"):
        compile_pattern(trap)
    compiled = compile_crawl_pattern(trap, 0.05)
    assert isinstance(compiled, BacktrackingPattern)
    assert compiled.fullmatch("http://kb.dk/abc/x/abc/y/abc/z/abc/q")
    assert not compiled.fullmatch("http://kb.dk/abc/x/abc/y/abc/q")
    assert isinstance(compile_crawl_pattern(".*/trap/.*", 0.05), type(compile_pattern("x")))
    with pytest.raises(PatternError, match="class intersection"):
        compile_crawl_pattern("[a-z&&[^e]]", 0.05)
    catastrophic = compile_crawl_pattern(r"(a|aa)+(?=b)b", 0.05)
    assert isinstance(catastrophic, BacktrackingPattern)
    # Without its budget the matcher would backtrack through every way of splitting the 40 a's (exponential
    # in the length) and then say "no match"; the budget makes it raise instead, which is what the engine's
    # scope rules act on (a REJECT rule rejects). The timeout mark stops a budget that is not kept.
    with pytest.raises(TimeoutError):
        catastrophic.fullmatch("a" * 40)


@pytest.mark.parametrize("java, matching, not_matching", [
    (r"(a)\1", ["aa"], ["ab"]),
    (r"(?<x>[a-c])\k<x>", ["bb"], ["bc"]),
    (r"a*+a", [], ["aa"]),                         # possessive: Java's meaning, exactly
    (r"(?>a|ab)c", ["ac"], ["abc"]),               # atomic
    (r"(?<=/)x", [], ["/x"]),                      # fullmatch: the lookbehind looks before the text
    (r".*(?<=/)x", ["/x"], ["ax"]),
    (r"\u00e6\x{1F600}\z", ["æ😀"], ["æ"]),
])
def test_the_backtracking_matcher_reads_java_as_java(java, matching, not_matching):
    compiled = BacktrackingPattern(java, 0.5)
    assert all(compiled.fullmatch(text) for text in matching)
    assert not any(compiled.fullmatch(text) for text in not_matching)


def test_a_wildcard_search_is_bounded_in_length_and_wildcards():
    assert bounded_wildcard_search("***kultur**arv*") == "*kultur*arv*"
    assert bounded_wildcard_search("*a" * 8) == "*a" * 8
    with pytest.raises(PatternError, match=r"9 wildcards \* \(at most 8\)"):
        bounded_wildcard_search("*a" * 9)
    with pytest.raises(PatternError, match=r"257 characters long \(at most 256\)"):
        bounded_wildcard_search("a" * 257)


def test_crawl_patterns_match_together_as_each_matches_alone():
    traps = (r"(?i).*/CALENDAR/.*", r".*\?sort=(?<key>\w+)", r".*[?&]sid=\w+(?<x>)", r"(a)\1.*",
             r"^[^?]*(/[^/]{3,}(?=/))[^?]*\1(?=/)[^?]*\1(?=/)[^?]*\1(?=/|$).*", r".*/(a|aa)+(?=b)b")
    together = CrawlPatterns(traps, 0.05)
    assert len(together.backtracking) == 3
    urls = ["http://kb.dk/Calendar/2026/", "http://kb.dk/list?sort=name", "http://kb.dk/x?a=1&sid=42",
            "aa://x", "http://kb.dk/abc/x/abc/y/abc/z/abc/q", "http://kb.dk/aab", "http://kb.dk/page/1",
            "http://kb.dk/calendar"]
    for url in urls:
        alone = any(compile_crawl_pattern(trap, 0.05).fullmatch(url) for trap in traps)
        assert together.fullmatch_any(url) is alone, url
    assert together.fullmatch_any("http://kb.dk/" + "a" * 40) is None  # a backtracking trap ran out of time
    with pytest.raises(PatternError, match="class intersection"):
        CrawlPatterns((".*ok.*", "[a-z&&[^e]]"), 0.05)


@pytest.mark.timeout(60)
def test_a_domain_trap_of_a_job_stays_in_re2_behind_its_lookahead():
    # what job generation writes for a trap of kb.dk (scheduler/jobgen/building.py)
    redos = domain_scoped_trap("kb.dk", "(.|.)*X")
    calendar = domain_scoped_trap("kb.dk", ".*/calendar/.*")
    other = domain_scoped_trap("dr.dk", ".*/calendar/.*")
    assert isinstance(compile_crawl_pattern(redos, 0.05), LookaheadPattern)
    negative = compile_crawl_pattern(r"(?!https?://kb\.dk/)(?:.*/x)", 0.05)
    assert isinstance(negative, LookaheadPattern)
    assert negative.fullmatch("http://dr.dk/x") and not negative.fullmatch("http://kb.dk/x")
    traps = CrawlPatterns((redos, calendar, other, ".*/cgi-bin/.*"), 0.05)
    assert traps.backtracking == ()
    assert traps.fullmatch_any("http://www.kb.dk/aX") is True
    assert traps.fullmatch_any("http://kb.dk:8080/calendar/1") is True
    assert traps.fullmatch_any("http://dr.dk/calendar/1") is True
    assert traps.fullmatch_any("http://dr.dk/aX") is False
    assert traps.fullmatch_any("http://notkb.dk/aX") is False
    assert traps.fullmatch_any("http://x.org/cgi-bin/a") is True
    # every trap in RE2 (no backtracking pattern above, so no budget to run out: False, not None), the
    # ReDoS trap included, however long the URL of its domain
    assert traps.fullmatch_any("http://www.kb.dk/" + "a" * 20_000) is False
