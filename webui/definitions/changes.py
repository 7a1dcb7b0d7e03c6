"""The change history of a definition page: the audit log's rows of the definition itself and of its
extended-field values, newest first (design.md: every change shows on the page of what changed)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sqlalchemy import Connection

from harvestdef.model.definitions import AuditEntry, ExtendedFieldType
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.extendedfields import ExtendedFieldRepository


def definition_changes(conn: Connection, rows: Sequence[tuple[str, object]], field_type: ExtendedFieldType,
                       instance_id: int) -> list[AuditEntry]:
    """The changes of the audited rows ``(table, key)`` and of the instance's extended-field values, each
    value change named by its field (the audit trail keys values by their own id)."""
    audit = AuditRepository(conn)
    # a change to a configuration, seed list or extended field moves the owner's edition only: that row
    # says nothing the change's own row does not
    changes = [change for table, key in rows for change in audit.changes_of(table, key)
               if not is_edition_only(change)]
    repository = ExtendedFieldRepository(conn)
    names = {f.field_id: f.name for f in repository.fields_of(field_type)}
    for value_id in repository.value_ids_of(field_type, instance_id):
        for entry in audit.changes_of("extendedfieldvalue", value_id):
            row = entry.after or entry.before or {}
            label = f"{entry.action} extended field {names.get(row.get('extendedfield_id'), '?')}"
            changes.append(dataclasses.replace(
                entry, action=label, before={"value": entry.before["content"]} if entry.before else None,
                after={"value": entry.after["content"]} if entry.after else None))
    return sorted(changes, key=lambda c: (c.changed_at, c.audit_id), reverse=True)


def is_edition_only(change: AuditEntry) -> bool:
    if change.action != "update" or not change.before or not change.after:
        return False
    return {key for key in change.after if change.before.get(key) != change.after[key]} <= {"edition"}
