"""Column types shared by the schema: ids that are rowids on SQLite, timestamps stored as naive UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer
from sqlalchemy.types import TypeDecorator

# A BigInteger primary key on SQLite is not a rowid alias (inserts then fail with NOT NULL), so ids are
# INTEGER there and BIGINT everywhere else.
Id = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored as naive UTC (NetarchiveSuite's ``timestamp`` columns), aware UTC in Python.

    Binding a naive datetime is refused: every time in HarvestSuite's code carries its zone, so a local
    time can never be stored by mistake.
    """

    impl = DateTime(timezone=False)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r} given for a UTC column; attach a time zone")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC)


class IntBoolean(TypeDecorator[bool]):
    """A flag stored as an integer, 0 or 1 (NetarchiveSuite's ``extendedfield.mandatory`` and
    ``historize``), a bool in Python.

    NetarchiveSuite declares these columns ``int``, so its rows (and a dump of them) hold integers; a
    BOOLEAN column would reject them. Any non-zero integer reads as true, as it does in NetarchiveSuite.
    """

    impl = Integer
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> int | None:
        return None if value is None else int(bool(value))

    def process_result_value(self, value: Any, dialect: Any) -> bool | None:
        return None if value is None else bool(value)


def utcnow() -> datetime:
    """Now, aware, in UTC, truncated to microseconds that every database keeps."""
    return datetime.now(UTC)
