"""Reading the audit trail (what changed in one row, newest first, and the names of the rows its ids refer
to), and ``AuditBatch``, which writes the rows of many changes of one transaction together.

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
from harvestdef.repositories.base import audited_json

_log = s.audit_log

_d, _c = s.domains, s.configurations
# What an audited id refers to, by kind: the table, its key column, and the name a person knows it by.
# A configuration is named with its domain ("nordposten.dk/defaultconfig"), as the harvest page's forms take it.
_NAMES = {
    "domain": (_d, _d.c.domain_id, _d.c.name),
    "configuration": (_c.join(_d, _d.c.domain_id == _c.c.domain_id), _c.c.config_id, _d.c.name + "/" + _c.c.name),
    "template": (s.ordertemplates, s.ordertemplates.c.template_id, s.ordertemplates.c.name),
    "channel": (s.harvestchannel, s.harvestchannel.c.id, s.harvestchannel.c.name),
    "schedule": (s.schedules, s.schedules.c.schedule_id, s.schedules.c.name),
    "harvest": (s.harvestdefinitions, s.harvestdefinitions.c.harvest_id, s.harvestdefinitions.c.name),
    "seedlist": (s.seedlists, s.seedlists.c.seedlist_id, s.seedlists.c.name),
    "extendedfield": (s.extendedfield, s.extendedfield.c.extendedfield_id, s.extendedfield.c.name),
}
REFERENCE_KINDS = tuple(_NAMES)


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

    def names_of(self, references: Mapping[str, set[int]]) -> dict[tuple[str, int], str]:
        """The names of the rows the trail's ids refer to, ``{(kind, id): name}`` for kinds of
        REFERENCE_KINDS: one query per kind. An id whose row is gone has no entry."""
        names: dict[tuple[str, int], str] = {}
        for kind, ids in references.items():
            if not ids:
                continue
            source, key, name = _NAMES[kind]
            for row in self.conn.execute(select(key, name).select_from(source).where(key.in_(sorted(ids)))):
                names[(kind, row[0])] = row[1]
        return names


# Built once, so SQLAlchemy compiles each once: a transaction's audit rows cost their execution only.
_INSERT = insert(_log)
_INSERT_MANY = insert(_log).returning(_log.c.audit_id).execution_options(insertmanyvalues_page_size=500)


class AuditBatch:
    """The audit rows of one transaction, written together by ``flush``.

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
                          "action": action, "before": audited_json(table, before),
                          "after": audited_json(table, after)})

    def flush(self, conn: Connection) -> int:
        """Insert the rows recorded so far; returns how many."""
        count = len(self.rows)
        if count == 1:
            conn.execute(_INSERT, self.rows[0])
        elif count:
            # Many VALUES per statement, not an executemany (which the drivers send as one INSERT per row),
            # 500 rows at most so SQLite's limit on bound parameters is never reached. SQLAlchemy builds
            # them from the one statement, compiled once ("insertmanyvalues", used with RETURNING), where
            # insert().values(rows) would be compiled anew for every transaction.
            conn.execute(_INSERT_MANY, self.rows)
        self.rows = []
        return count
