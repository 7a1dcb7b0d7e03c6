"""The seed-line rule (harvestdef.seeds): the Python form and the SQL form agree, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import literal, select

from harvestdef.db.engine import is_postgresql, open_engine
from harvestdef.seeds import has_seed, has_seed_sql, register_sqlite_functions, seed_lines, seed_of_line

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
