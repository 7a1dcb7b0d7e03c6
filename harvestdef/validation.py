"""What every value from outside must satisfy before it is stored or looked up: one set of rules, the same
on SQLite and PostgreSQL.

PostgreSQL refuses a 301-character name in a varchar(300), a NUL byte in any text, and 2**63 in a bigint;
SQLite stores the first, and fails on the others with errors of its own. So the limits are read here from
the schema itself (``Table.c.name.type.length``, the integer width of the column's type) and checked in
code before a statement runs, whatever the database: a database built on SQLite can always move to
PostgreSQL, and a client learns which field is wrong instead of getting a database's message.

The rules:

- text: no NUL, no lone surrogate (neither can be stored as UTF-8), at most the column's length;
- integers: within the column's type (Integer: 32 bits, BigInteger: 64 bits), never a float or a boolean;
- times: within the years 1 to 9999 once converted to UTC (``to_utc``);
- names (of templates, trap lists, schedules, harvests, configurations, seed lists, extended fields):
  ``check_name``: not empty, no control characters (C0, C1, DEL, line and paragraph separators, the
  bidirectional overrides), and no ``/`` where the name is part of the URLs that address it (all but
  extended fields, which are addressed by id), so a name can be shown on one line, sent in a download's
  ``filename*`` and addressed as one segment of a URL path. Names stored before this rule keep working:
  the web UI addresses a name by everything after its path's prefix (webui/routing.py).

Every refusal is a FieldError (a ValidationError) naming the field. This module checks values and never
touches a database; ``guard_writes`` (harvestdef/db/guard.py) applies ``check_column_value`` to every
value an engine writes.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Integer, String

from harvestdef.errors import FieldError, kind_words
from harvestdef.phrases import N_, Phrase, phrase

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
# Nesting deeper than this is never a request of ours (the deepest body, a harvest's configurations, is 3);
# a parser that recurses would overflow Python's stack on a few thousand.
MAX_JSON_DEPTH = 32

# Characters a name must not contain: every Cc (C0, DEL, C1), the line and paragraph separators, and the
# bidirectional embeddings, overrides and isolates that make a name read differently from what it is.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def check_text(value: str, field: str) -> str:
    """``value`` if it can be stored as text at all (no NUL, no lone surrogate); FieldError otherwise."""
    if "\x00" in value:
        raise FieldError(field, phrase(N_("must not contain a NUL character (\\u0000)")))
    if _has_lone_surrogate(value):
        raise FieldError(field, phrase(N_("must not contain a lone UTF-16 surrogate (it is not a character)")))
    return value


def _has_lone_surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def column_length(column: Column[Any]) -> int | None:
    """The most characters ``column`` holds (its varchar length), or None for text without a limit."""
    if isinstance(column.type, String):
        return column.type.length
    return None


def integer_range(column_type: Any) -> tuple[int, int]:
    """The smallest and largest value of an integer column type (64 bits unless it is a 32-bit Integer)."""
    if isinstance(column_type, BigInteger):
        return INT64
    if isinstance(column_type, Integer):
        return INT32
    return INT64


def check_integer(value: Any, field: str, column: Column[Any] | None = None) -> int:
    """``value`` if it is a whole number that fits ``column`` (64 bits without one); FieldError otherwise.
    A float (1e23, 2.0) is refused: JSON's numbers and a form's digits are both asked for as integers."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(field, phrase(N_("must be a whole number, not %(value)s"), value=_describe(value)))
    low, high = integer_range(column.type) if column is not None else INT64
    if not low <= value <= high:
        raise FieldError(field, _between(low, high, value))
    return value


def check_length(value: str, field: str, column: Column[Any]) -> str:
    """``value`` if it fits ``column`` (its varchar length); FieldError otherwise."""
    limit = column_length(column)
    if limit is not None and len(value) > limit:
        raise FieldError(field, _at_most(limit, len(value)))
    return value


def check_column_value(value: Any, field: str, column_type: Any) -> None:
    """Check one value bound for a column of ``column_type``: text (NUL, surrogates, length) and integers
    (the type's width). Other values (times, booleans, None) are the database driver's to check."""
    if isinstance(value, str):
        check_text(value, field)
        length = getattr(column_type, "length", None) if isinstance(column_type, String) else None
        if length is not None and len(value) > length:
            raise FieldError(field, _at_most(length, len(value)))
    elif isinstance(value, int) and not isinstance(value, bool) and isinstance(column_type, Integer):
        low, high = integer_range(column_type)
        if not low <= value <= high:
            raise FieldError(field, _between(low, high, value))


def to_utc(value: datetime, field: str) -> datetime:
    """``value`` as an aware UTC time (a time without zone is taken as UTC); FieldError if that falls
    outside the years 1 to 9999, as 0001-01-01T00:00+05:00 does."""
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        raise FieldError(field, phrase(N_("%(time)s is outside the years 1 to 9999 in UTC"),
                                       time=value.isoformat())) from None


def is_name_character(character: str, in_path: bool = True) -> bool:
    """Whether a name may hold ``character`` (with ``in_path``: a name that addresses a URL path)."""
    return not (unicodedata.category(character) in ("Cc", "Cs", "Zl", "Zp") or character in _BIDI_CONTROLS
                or (in_path and character == "/"))


def check_name(value: str, what: str, column: Column[Any], field: str = "name", in_path: bool = True) -> str:
    """``value`` without surrounding blanks, if it is a usable name of a ``what`` (a template, a schedule...):
    not empty, no control character, within the column's length, and with ``in_path`` (the name is a
    segment of the URLs that address it) no ``/``. FieldError otherwise."""
    name = check_text(value, field).strip()
    if not name:
        raise FieldError(field, phrase(N_("a %(what)s needs a name"), what=kind_words(what)))
    bad = sorted({character for character in name if not is_name_character(character, in_path)})
    if bad:
        shown = ", ".join("'/'" if character == "/" else f"U+{ord(character):04X}" for character in bad)
        if in_path:
            raise FieldError(field, phrase(N_("a %(what)s's name must not contain control characters or '/': it has "
                                              "%(shown)s"), what=kind_words(what), shown=shown))
        raise FieldError(field, phrase(N_("a %(what)s's name must not contain control characters: it has %(shown)s"),
                                       what=kind_words(what), shown=shown))
    return check_length(name, field, column)


def _between(low: int, high: int, value: int) -> Phrase:
    return phrase(N_("must be between %(low)s and %(high)s, not %(value)s"), low=low, high=high, value=value)


def _at_most(limit: int, length: int) -> Phrase:
    return phrase(N_("must be at most %(limit)s characters, not %(length)s"), limit=limit, length=length)


def _describe(value: Any) -> str | Phrase:
    if isinstance(value, bool):
        return phrase(N_("a boolean"))
    if isinstance(value, float):
        return phrase(N_("the number %(number)s"), number=repr(value))
    if isinstance(value, str):
        return phrase(N_("the text %(text)s"), text=repr(value[:40]))
    return type(value).__name__
