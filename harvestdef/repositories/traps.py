"""Global crawler trap lists (NetarchiveSuite's global_crawler_trap_lists): named lists of regular
expressions that, while active, are added to every job's crawl template.

Expressions are validated like every other crawler trap (harvestdef.traps): each must compile, blank lines
are dropped and duplicates removed. The lists have no edition column, so a change replaces the whole list
in one transaction and is audited with the expressions before and after.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from harvestdef.db import schema as s
from harvestdef.errors import NotFoundError
from harvestdef.model.definitions import GlobalCrawlerTrapList
from harvestdef.repositories.base import SYSTEM_ACTOR, fetch_row, record_audit, translate_errors
from harvestdef.traps import MAX_EXPRESSION_LENGTH, validate_trap_expressions
from harvestdef.validation import check_name

_lists = s.global_crawler_trap_lists
_expressions = s.global_crawler_trap_expressions


class GlobalCrawlerTrapRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR) -> None:
        self.conn = conn
        self.actor = actor

    def _expressions_of(self, list_id: int) -> tuple[str, ...]:
        # NetarchiveSuite's column is nullable; a NULL expression traps nothing
        return tuple(self.conn.scalars(select(_expressions.c.trap_expression).where(
            _expressions.c.crawler_trap_list_id == list_id, _expressions.c.trap_expression.is_not(None))
            .order_by(_expressions.c.id)))

    def _to_list(self, row: Any) -> GlobalCrawlerTrapList:
        return GlobalCrawlerTrapList(list_id=row.global_crawler_trap_list_id, name=row.name,
                                     description=row.description or "", isactive=row.isactive,
                                     expressions=self._expressions_of(row.global_crawler_trap_list_id))

    def _snapshot(self, list_id: int) -> dict[str, Any] | None:
        row = fetch_row(self.conn, _lists, "global_crawler_trap_list_id", list_id)
        if row is not None:
            row["expressions"] = list(self._expressions_of(list_id))
        return row

    def get(self, name: str) -> GlobalCrawlerTrapList:
        row = self.conn.execute(select(_lists).where(_lists.c.name == name)).first()
        if row is None:
            raise NotFoundError("global crawler trap list", name)
        return self._to_list(row)

    def all_lists(self) -> list[GlobalCrawlerTrapList]:
        return [self._to_list(row) for row in self.conn.execute(select(_lists).order_by(_lists.c.name)).all()]

    def _write_expressions(self, list_id: int, expressions: Iterable[str]) -> None:
        self.conn.execute(delete(_expressions).where(_expressions.c.crawler_trap_list_id == list_id))
        rows = [{"crawler_trap_list_id": list_id, "trap_expression": e} for e in expressions]
        if rows:
            self.conn.execute(insert(_expressions), rows)

    def create(self, name: str, expressions: str | Iterable[str], description: str = "",
               active: bool = False) -> GlobalCrawlerTrapList:
        """A new list; CrawlerTrapError names a line that does not compile, ConflictError a taken name."""
        name = check_name(name, "crawler trap list", _lists.c.name)
        valid = validate_trap_expressions(expressions, MAX_EXPRESSION_LENGTH)
        with translate_errors("global crawler trap list", name):
            list_id = self.conn.execute(insert(_lists).values(
                name=name, description=description, isactive=active)).inserted_primary_key[0]
        self._write_expressions(list_id, valid)
        record_audit(self.conn, self.actor, _lists.name, list_id, "insert", None, self._snapshot(list_id))
        return self.get(name)

    def update(self, name: str, *, new_name: str | None = None, expressions: str | Iterable[str] | None = None,
               description: str | None = None) -> GlobalCrawlerTrapList:
        current = self.get(name)
        values: dict[str, Any] = {}
        if new_name is not None:
            values["name"] = check_name(new_name, "crawler trap list", _lists.c.name)
        if description is not None:
            values["description"] = description
        valid = None if expressions is None else validate_trap_expressions(expressions, MAX_EXPRESSION_LENGTH)
        before = self._snapshot(current.list_id)
        if values:
            with translate_errors("global crawler trap list", values.get("name", name)):
                self.conn.execute(update(_lists).where(
                    _lists.c.global_crawler_trap_list_id == current.list_id).values(**values))
        if valid is not None:
            self._write_expressions(current.list_id, valid)
        record_audit(self.conn, self.actor, _lists.name, current.list_id, "update", before,
                     self._snapshot(current.list_id))
        return self.get(values.get("name", name))

    def set_active(self, name: str, active: bool) -> GlobalCrawlerTrapList:
        current = self.get(name)
        before = self._snapshot(current.list_id)
        self.conn.execute(update(_lists).where(_lists.c.global_crawler_trap_list_id == current.list_id).values(
            isactive=active))
        record_audit(self.conn, self.actor, _lists.name, current.list_id, "update", before,
                     self._snapshot(current.list_id))
        return self.get(name)

    def delete(self, name: str) -> None:
        current = self.get(name)
        before = self._snapshot(current.list_id)
        self.conn.execute(delete(_expressions).where(_expressions.c.crawler_trap_list_id == current.list_id))
        self.conn.execute(delete(_lists).where(_lists.c.global_crawler_trap_list_id == current.list_id))
        record_audit(self.conn, self.actor, _lists.name, current.list_id, "delete", before, None)
