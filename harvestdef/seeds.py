"""What counts as a seed line: the one rule every reader of a seed list follows.

A seed list is text. Its lines are what ``str.splitlines()`` yields; a line is a seed when, with leading
and trailing whitespace removed (``str.strip()``: Unicode whitespace), it is not empty and does not start
with ``#``, which marks a comment (NetarchiveSuite's "no active seeds" rule, NAS-2506). The seed is the
stripped line.

The rule is needed in Python (storing a seed list, writing a job's seed list, reading a job's seeds in the
crawl engine) and inside PostgreSQL (job generation leaves out, in its query, configurations without a
seed). Both forms come from this module: ``HAS_SEED_PATTERN`` is built from the same two character sets
that ``str.splitlines`` and ``str.strip`` use, written so that Python's ``re`` and PostgreSQL's regular
expressions read it alike, and tests check it against ``seed_lines`` in both.

This module only knows where seeds are; it does not check them (validSeedRegex, host names: see
harvestdef.repositories.seedlists) nor change them (IDN forms: the job builder).
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the crawl engine reads seeds too, and has no use for SQLAlchemy
    from sqlalchemy.sql import ColumnElement

COMMENT = "#"
# The characters str.strip() removes and those str.splitlines() breaks at (a subset of the first).
WHITESPACE = "".join(chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace())
LINE_BREAKS = "".join(char for char in WHITESPACE if len(f"a{char}b".splitlines()) == 2)


def _class(chars: str) -> str:
    """Characters as \\uXXXX escapes, which Python's re and PostgreSQL's AREs both read in brackets."""
    return "".join(f"\\u{ord(char):04x}" for char in chars)


# Some line holds, after nothing but whitespace, a character that is neither whitespace nor '#'. The
# whitespace run may cross line breaks: the last break in it starts the seed's own line.
HAS_SEED_PATTERN = f"(?:^|[{_class(LINE_BREAKS)}])[{_class(WHITESPACE)}]*[^{_class(WHITESPACE)}{COMMENT}]"
_HAS_SEED = re.compile(HAS_SEED_PATTERN)
# Text that holds none of these splits into its seeds with str.split(): every whitespace character left
# is a line break, so the tokens are exactly the stripped, non-empty lines, and none is a comment.
_NOT_PLAIN = re.compile(f"[{_class(''.join(sorted(set(WHITESPACE) - set(LINE_BREAKS))))}{COMMENT}]")


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
    if text.isascii() and _NOT_PLAIN.search(text) is None:
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
