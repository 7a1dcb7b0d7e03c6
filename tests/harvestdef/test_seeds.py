"""The seed-line rule (harvestdef.seeds): the Python form and the SQL form agree, on SQLite and PostgreSQL; and
the seed rule: what a seed may be, how it is stored, and how each refused line is named."""

from __future__ import annotations

import sys

import pytest
from sqlalchemy import literal, select

from harvestdef import seeds
from harvestdef.db.engine import is_postgresql, open_engine
from harvestdef.seeds import (
    check_event_seeds,
    check_seed_list,
    has_seed,
    has_seed_sql,
    register_sqlite_functions,
    seed_lines,
    seed_of_line,
)

CASES = [
    "", "http://kb.dk", "  http://kb.dk \n", "# comment\n\n   \nhttp://kb.dk", "# only\n   # indented comment\n\n  ",
    "\r\n\r\nkb.dk\r\n", "#a\u2028kb.dk", "#a\u0085 kb.dk", "\u00a0#x\n\u3000 ", "\u00a0kb.dk", "a\x1fb\nc",
    "x\x0by", "#x\x0c#y", "\x1c\x1d\x1e#", "\t#\tx\n", "kb.dk\n#", "#kb.dk http://x", "æøå.dk\n#ø",
]


@pytest.mark.parametrize("text", CASES)
def test_seed_lines_follow_splitlines_and_strip(text: str) -> None:
    expected = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert seed_lines(text) == expected
    assert has_seed(text) is bool(expected)


def test_seed_of_line() -> None:
    assert seed_of_line("  http://kb.dk\t") == "http://kb.dk"
    assert seed_of_line("  # http://kb.dk") is None
    assert seed_of_line(" \u3000 ") is None


def test_the_database_applies_the_same_rule(database_url: str) -> None:
    engine = open_engine(database_url)
    try:
        with engine.connect() as conn:
            postgresql = is_postgresql(engine)
            if not postgresql:
                register_sqlite_functions(conn.connection.driver_connection)
            for text in CASES:
                in_database = conn.scalar(select(has_seed_sql(literal(text), postgresql)))
                assert bool(in_database) is has_seed(text), repr(text)
    finally:
        engine.dispose()


# ------------------------------------------------------------------ what a seed may be (check_seed_list)
@pytest.mark.parametrize(("line", "stored"), [
    ("http://kb.dk/", "http://kb.dk/"),
    ("www.kb.dk/nyheder", "http://www.kb.dk/nyheder"),  # no scheme: http://, as NetarchiveSuite and Heritrix add
    ("kb.dk:8080", "http://kb.dk:8080"),  # a host and a port, not a scheme
    ("HTTPS://WWW.KB.DK/Sti?Q=1#top", "https://www.kb.dk/Sti?Q=1#top"),  # scheme and host in lower case only
    ("http://user:secret@kb.dk/", "http://user:secret@kb.dk/"),
    ("http://kb.dk.:080/", "http://kb.dk:80/"),
    ("  http://deep.sub.kb.dk/  ", "http://deep.sub.kb.dk/"),
])
def test_accepted_seeds_are_stored_as_the_crawler_uses_them(line: str, stored: str) -> None:
    checked = check_seed_list("kb.dk", line)
    assert checked.refusals == () and checked.seeds == (stored,)


def test_idn_and_ip_seeds_belong_to_their_domain_in_either_form() -> None:
    checked = check_seed_list("københavn.dk", ["http://www.København.dk/ø", "https://xn--kbenhavn-54a.dk/"])
    assert checked.seeds == ("http://www.xn--kbenhavn-54a.dk/ø", "https://xn--kbenhavn-54a.dk/")
    assert check_seed_list("10.1.2.3", "http://10.1.2.3:8080/").seeds == ("http://10.1.2.3:8080/",)
    assert check_seed_list("::1", "http://[::1]/").seeds == ("http://[::1]/",)
    [refusal] = check_seed_list("10.1.2.3", "http://10.1.2.4/").refusals
    assert refusal.reason == "belongs to domain 10.1.2.4, not 10.1.2.3"


def test_refusals_name_every_line_as_given_and_duplicates_are_kept_once() -> None:
    text = "\ufeffhttp://kb.dk/\n\n# comment\nhttp://kb.dk/\nhttp://dr.dk/\n//kb.dk/x\n"
    checked = check_seed_list("kb.dk", text)
    assert checked.seeds == ("http://kb.dk/",)
    assert [(r.line, r.text, r.reason) for r in checked.refusals] == [
        (5, "http://dr.dk/", "belongs to domain dr.dk, not kb.dk"),
        (6, "//kb.dk/x", "not a URL: it starts with // and has no scheme (write http:// or https://)")]
    # a list's items are its lines: a line break inside one is refused with the item's number
    [refusal] = check_seed_list("kb.dk", ["http://kb.dk/", "http://kb.dk/a\nhttp://kb.dk/b"]).refusals
    assert (refusal.line, refusal.text) == (2, "http://kb.dk/a\\nhttp://kb.dk/b")
    assert "control character \\n" in refusal.reason


def test_event_seeds_group_by_domain_and_skip_netarchivesuites_comment_lines() -> None:
    checked = check_event_seeds("http://www.dr.dk/\n// NetarchiveSuite's comment\nkb.dk/a\nhttps://nyheder.dr.dk/")
    assert checked.refusals == ()
    assert checked.by_domain == {"dr.dk": ("http://www.dr.dk/", "https://nyheder.dr.dk/"), "kb.dk": ("http://kb.dk/a",)}


def test_valid_seed_regex_applies_to_the_line_as_written() -> None:
    checked = check_seed_list("kb.dk", "https://kb.dk/\nhttp://kb.dk/", valid_seed_regex=r"^https://.*$")
    assert checked.seeds == ("https://kb.dk/",)
    assert [r.line for r in checked.refusals] == [2] and "validSeedRegex" in checked.refusals[0].reason


def test_a_very_long_line_is_shown_cut_with_its_length() -> None:
    line = "http://kb.dk/" + "x" * 5000
    [refusal] = check_seed_list("kb.dk", line).refusals
    assert refusal.text.endswith(f"… ({len(line)} characters)") and len(refusal.text) < 150


def test_no_whitespace_lies_above_the_bound_the_scan_stops_at():
    beyond = [hex(code) for code in range(seeds.WHITESPACE_BOUND + 1, sys.maxunicode + 1) if chr(code).isspace()]
    assert beyond == []
    assert "\u3000" in seeds.WHITESPACE and "\u2028" in seeds.LINE_BREAKS
