"""The audit trail: one row's changes newest first, and a batch of rows written together. Both databases."""

from __future__ import annotations

from sqlalchemy import event, select

from harvestdef.db import schema as s
from harvestdef.repositories.audit import AuditBatch, AuditRepository
from harvestdef.repositories.domains import DomainRepository
from tests.harvestdef.factories import make_domain


def test_changes_of_one_row_newest_first_with_before_and_after(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        repository = DomainRepository(conn, "alice")
        domain = repository.edit("kb.dk", domain.edition, comments="one")
        DomainRepository(conn, "bob").edit("kb.dk", domain.edition, comments="two")
        changes = AuditRepository(conn).changes_of("domains", domain.domain_id)
    assert [(c.actor, c.action) for c in changes] == [("bob", "update"), ("alice", "update"), ("system", "insert")]
    assert (changes[0].before["comments"], changes[0].after["comments"]) == ("one", "two")
    assert changes[0].after["edition"] == 3 and changes[2].before is None


def test_a_batch_of_audit_rows_is_one_insert_per_500_rows_in_order(engine):
    """AuditBatch.flush writes many VALUES per statement, each sent to the driver as one statement with the
    values of its rows (SQLAlchemy's insertmanyvalues), not an executemany of one INSERT per row, and keeps
    the order the changes were recorded in."""
    batch = AuditBatch()
    for number in range(1203):
        batch.record("intake", "jobs", number, "update", {"status": 1}, {"status": 2})
    statements: list[int] = []  # the values each statement carries

    def count(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("INSERT INTO AUDIT_LOG"):
            statements.append(len(parameters))

    event.listen(engine, "before_cursor_execute", count)
    try:
        with engine.begin() as conn:
            assert batch.flush(conn) == 1203 and batch.flush(conn) == 0
            keys = list(conn.scalars(select(s.audit_log.c.row_key).where(s.audit_log.c.actor == "intake")
                                     .order_by(s.audit_log.c.audit_id)))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert statements == [500 * 7, 500 * 7, 203 * 7]  # seven columns a row
    assert keys == [str(number) for number in range(1203)]
