"""What every repository shares: the audit trail, optimistic locking on ``edition``, error translation.

Every change to a definition or a job is written to audit_log in the same transaction as the change:
who, when, which row, and the row before and after as JSON. An update names the edition the editor
read; if the row has moved on, nothing is written and StaleEditionError says so (never a silent
overwrite).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, Table, insert, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from harvestdef.db import schema as s
from harvestdef.db.availability import unavailability
from harvestdef.db.types import utcnow
from harvestdef.db.uniqueness import UniqueViolation, sentence_phrase, unique_violation
from harvestdef.errors import ConflictError, DatabaseError, StaleEditionError
from harvestdef.templatesecrets import masked_template
from harvestdef.times import utc_text

SYSTEM_ACTOR = "system"


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def row_json(row: Mapping[str, Any] | None) -> str | None:
    if row is None:
        return None
    return json.dumps({k: _jsonable(v) for k, v in row.items()}, ensure_ascii=False, sort_keys=True)


# Columns that hold a crawl template: audited with its credential values masked, since the audit log is kept
# forever and read by whoever reads the database, while the table itself keeps the values the crawler needs.
TEMPLATE_COLUMNS = {"ordertemplates": ("orderxml",)}


def audited_json(table: str, row: Mapping[str, Any] | None) -> str | None:
    """A row of ``table`` as the audit log stores it (row_json), crawl templates masked (TEMPLATE_COLUMNS)."""
    columns = [column for column in TEMPLATE_COLUMNS.get(table, ()) if row and isinstance(row.get(column), str)]
    if row is not None and columns:
        row = {**row, **{column: masked_template(row[column]) for column in columns}}
    return row_json(row)


def record_audit(conn: Connection, actor: str, table: str, key: object, action: str,
                 before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> None:
    """Append one audit_log row; ``action`` is insert, update or delete."""
    conn.execute(insert(s.audit_log).values(
        changed_at=utcnow(), actor=actor, tablename=table, row_key=str(key), action=action,
        before=audited_json(table, before), after=audited_json(table, after)))


def fetch_row(conn: Connection, table: Table, key_column: str, key: object) -> dict[str, Any] | None:
    row = conn.execute(select(table).where(table.c[key_column] == key)).mappings().first()
    return dict(row) if row is not None else None


def update_with_edition(conn: Connection, actor: str, table: Table, key_column: str, key: object,
                        expected_edition: int, values: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """Update one row if it is still at ``expected_edition``; bump the edition, audit, return the new row.

    Raises StaleEditionError (naming the kind, key and both editions) if somebody else changed or
    deleted the row meanwhile.
    """
    before = fetch_row(conn, table, key_column, key)
    changed = conn.execute(
        update(table)
        .where(table.c[key_column] == key, table.c.edition == expected_edition)
        .values(**values, edition=expected_edition + 1)
    ).rowcount
    if changed != 1:
        raise stale_edition(conn, actor, table.name, key, kind, expected_edition, before)
    after = fetch_row(conn, table, key_column, key)
    record_audit(conn, actor, table.name, key, "update", before, after)
    assert after is not None
    return after


def stale_edition(conn: Connection, actor: str, table: str, key: object, kind: str, expected_edition: int,
                  row: Mapping[str, Any] | None) -> StaleEditionError:
    """The StaleEditionError of ``actor``'s change of row ``key`` of ``table`` (``row``: as it is now, None
    if deleted) at ``expected_edition``: named by the row's name where it has one, and saying who made the
    newer edition and when, from the row's last audit entry."""
    a = s.audit_log
    last = conn.execute(select(a.c.actor, a.c.changed_at).where(a.c.tablename == table, a.c.row_key == str(key))
                        .order_by(a.c.audit_id.desc()).limit(1)).first()
    name = row.get("name") if row is not None else None
    return StaleEditionError(kind, key, expected_edition, None if row is None else row["edition"],
                             name=name if isinstance(name, str) else None,
                             changed_by=None if last is None else last.actor,
                             changed_at=None if last is None else utc_text(last.changed_at), actor=actor)


@contextmanager
def database_errors(what: str) -> Iterator[None]:
    """Any SQLAlchemy error inside becomes DatabaseError naming ``what``, its cause chained: the boundary of
    code that opens its own transactions around the repositories (the scheduler's), so that code catches
    our errors only."""
    try:
        yield
    except SQLAlchemyError as exc:
        # a database that does not answer for now (busy, gone) stays told as such: it is tried again
        unavailable = unavailability(exc)
        if unavailable is not None:
            raise type(unavailable)(f"{what}: {unavailable}") from exc
        raise DatabaseError(f"{what}: {exc}") from exc


@contextmanager
def translate_errors(kind: str, key: object, scope: str | None = None) -> Iterator[None]:
    """Turn SQLAlchemy errors into ours: a unique-key violation becomes ConflictError, whose message says
    which name is taken where (harvestdef.db.uniqueness). ``key`` is the row's name where it has one (within
    ``scope``: the name of the domain it is unique within, which the database knows only by its id)."""
    try:
        yield
    except IntegrityError as exc:
        violation = unique_violation(exc)
        if violation is not None and violation.value is None and violation.key.column == "name":
            # SQLite's error has neither the values nor named parameters: the name is the key given here
            violation = UniqueViolation(violation.key, {**violation.values, "name": key})
        if violation is not None:
            raise ConflictError(kind, key, sentence=sentence_phrase(violation, scope),
                                field=violation.key.field) from exc
        raise ConflictError(kind, key, str(exc.orig).splitlines()[0] if exc.orig else "") from exc
    except SQLAlchemyError as exc:
        raise DatabaseError(f"{kind} {key!r}: {exc}") from exc
