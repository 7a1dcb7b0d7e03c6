"""Reading the audit trail (what changed in one row, newest first), and ``AuditBatch``, which writes the
rows of many changes of one transaction together.

The trail is written by the repositories (harvestdef.repositories.base.record_audit) in the same
transaction as each change. ``before`` and ``after`` come back as dicts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, insert, select

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.model.definitions import AuditEntry
from harvestdef.repositories.base import row_json

_log = s.audit_log


def _to_entry(row: Any) -> AuditEntry:
    return AuditEntry(audit_id=row.audit_id, changed_at=row.changed_at, actor=row.actor, tablename=row.tablename,
                      row_key=row.row_key, action=row.action,
                      before=json.loads(row.before) if row.before else None,
                      after=json.loads(row.after) if row.after else None)


class AuditRepository:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def changes_of(self, tablename: str, key: object, limit: int = 100) -> list[AuditEntry]:
        """The changes of one row (table and primary key), newest first."""
        rows = self.conn.execute(
            select(_log).where(_log.c.tablename == tablename, _log.c.row_key == str(key))
            .order_by(_log.c.changed_at.desc(), _log.c.audit_id.desc()).limit(limit))
        return [_to_entry(row) for row in rows]


_ROWS_PER_INSERT = 500  # 3,500 bound parameters: within SQLite's limit (32,766), and PostgreSQL's


class AuditBatch:
    """The audit rows of one transaction, written by ``flush`` in one multi-row INSERT.

    The scheduler's intake changes a few jobs per message and many messages per transaction; one INSERT
    per change was a round trip each. The rows are the ones ``record_audit`` writes, stamped when the
    change is made and kept in the order of the changes; the owner of the transaction must ``flush``
    before it commits, so the trail still commits with the changes or not at all.
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record(self, actor: str, table: str, key: object, action: str, before: Mapping[str, Any] | None,
               after: Mapping[str, Any] | None) -> None:
        self.rows.append({"changed_at": utcnow(), "actor": actor, "tablename": table, "row_key": str(key),
                          "action": action, "before": row_json(before), "after": row_json(after)})

    def flush(self, conn: Connection) -> int:
        """Insert the rows recorded so far; returns how many."""
        count = len(self.rows)
        # One statement of many VALUES, not an executemany (which the drivers send as one INSERT per row);
        # chunked so SQLite's limit on bound parameters is never reached.
        for start in range(0, count, _ROWS_PER_INSERT):
            conn.execute(insert(_log).values(self.rows[start:start + _ROWS_PER_INSERT]))
        self.rows = []
        return count
