"""The schema's limits enforced on every value an engine writes, the same on SQLite and PostgreSQL.

``guard_writes(engine)`` checks each INSERT and UPDATE before it runs: every bound value against the type
of the column it is bound to (harvestdef/validation.py: text without NUL or lone surrogates and within
its varchar length, integers within their column's width). PostgreSQL would refuse such a value with an
error that carries the statement and its parameters; SQLite would store a 100,000-character name in a
varchar(300), and a database that holds one can no longer move to PostgreSQL. Here both refuse it, before
the database sees it, with a FieldError naming the column; the transaction then rolls back as for any
error, so nothing of the request is stored.

Every other statement (a lookup) gets its integers checked against 64 bits at least: a number beyond
that is refused (a ValidationError) instead of overflowing SQLite's driver.

The web UI guards its engine (everything it writes comes from outside); the scheduler and the importers
write what they computed or read from checked files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.sql.dml import Insert, Update

from harvestdef.errors import ValidationError
from harvestdef.validation import INT64, check_column_value

# SQLAlchemy names the bind of a column by its key, with _1, _2 in WHERE clauses and _m0, _m1 in
# multi-row VALUES: the field is the column's key.
_BIND_SUFFIX = re.compile(r"_(?:m)?\d+$")


def guard_writes(engine: Engine) -> Engine:
    """Check every INSERT and UPDATE ``engine`` runs against the schema's limits, and every statement's
    integers against 64 bits (idempotent)."""
    if not event.contains(engine, "before_execute", _check_write):
        event.listen(engine, "before_execute", _check_write)
    if not event.contains(engine, "before_cursor_execute", _check_integers):
        event.listen(engine, "before_cursor_execute", _check_integers)
    return engine


def _check_integers(_conn: Any, _cursor: Any, _statement: str, parameters: Any, _context: Any,
                    executemany: bool) -> None:
    """A number beyond 64 bits in any statement, a lookup included (a page that reads ``?after=`` as an
    integer itself), is refused before SQLite overflows on it; no column holds one, so nothing can match."""
    for row in parameters if executemany else [parameters]:
        values = row.values() if isinstance(row, Mapping) else row
        for value in values or ():
            if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
                raise ValidationError(f"a whole number of the request, {value}, is beyond 64 bits")


def _check_write(conn: Any, statement: Any, multiparams: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
                 _options: Any) -> None:
    if not isinstance(statement, Insert | Update):
        return
    compiled = statement.compile(dialect=conn.dialect)
    binds = compiled.binds
    for name, value in compiled.params.items():
        if value is not None and name in binds:
            check_column_value(value, _BIND_SUFFIX.sub("", name), binds[name].type)
    for row in [*multiparams, params]:
        for name, value in (row or {}).items():
            if value is not None and name in binds:
                check_column_value(value, name, binds[name].type)
