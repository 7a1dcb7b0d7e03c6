"""Crawl templates (ordertemplates): create, replace, read, list, activate, deactivate, delete.

Every template is checked to be well-formed XML before it is stored (harvestdef.crawltemplate), so a bad
upload is refused with its line and column instead of failing every job built from it. Inactive
templates stay usable by the configurations that have them but are hidden from selection. A template
that configurations use cannot be deleted.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, func, insert, select

from harvestdef.crawltemplate import check_orderxml
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.errors import NotFoundError, ValidationError
from harvestdef.model.definitions import CrawlTemplate
from harvestdef.politeness import PolitenessBounds
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    stale_edition,
    translate_errors,
    update_with_edition,
)
from harvestdef.validation import check_name


def _to_template(row: Any) -> CrawlTemplate:
    return CrawlTemplate(template_id=row.template_id, name=row.name, orderxml=row.orderxml, isactive=row.isactive,
                         edition=row.edition, description=row.description or "", lastupdated=row.lastupdated)


class TemplateRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR) -> None:
        self.conn = conn
        self.actor = actor

    def get(self, name: str) -> CrawlTemplate:
        row = self.conn.execute(select(s.ordertemplates).where(s.ordertemplates.c.name == name)).first()
        if row is None:
            raise NotFoundError("template", name)
        return _to_template(row)

    def get_by_id(self, template_id: int) -> CrawlTemplate:
        row = self.conn.execute(select(s.ordertemplates).where(
            s.ordertemplates.c.template_id == template_id)).first()
        if row is None:
            raise NotFoundError("template", template_id)
        return _to_template(row)

    def names(self, active_only: bool = False) -> list[str]:
        stmt = select(s.ordertemplates.c.name).order_by(s.ordertemplates.c.name)
        if active_only:
            stmt = stmt.where(s.ordertemplates.c.isactive.is_(True))
        return list(self.conn.scalars(stmt))

    def page(self, after: str | None, size: int) -> list[CrawlTemplate]:
        """Up to ``size`` templates by name, those after the name ``after`` (keyset paging)."""
        stmt = select(s.ordertemplates).order_by(s.ordertemplates.c.name).limit(size)
        if after is not None:
            stmt = stmt.where(s.ordertemplates.c.name > after)
        return [_to_template(row) for row in self.conn.execute(stmt)]

    def create(self, name: str, orderxml: str, description: str = "", active: bool = True,
               politeness: PolitenessBounds | None = None) -> CrawlTemplate:
        """A new template; TemplateError (line, column) if not well-formed or, with ``politeness``, if it gives
        a politeness value out of those bounds; ConflictError if the name exists."""
        name = check_name(name, "template", s.ordertemplates.c.name)
        check_orderxml(orderxml, f"template {name!r}", politeness)
        with translate_errors("template", name):
            template_id = self.conn.execute(insert(s.ordertemplates).values(
                name=name, orderxml=orderxml, isactive=active, edition=1, description=description,
                lastupdated=utcnow())).inserted_primary_key[0]
        record_audit(self.conn, self.actor, "ordertemplates", template_id, "insert", None,
                     fetch_row(self.conn, s.ordertemplates, "template_id", template_id))
        return self.get_by_id(template_id)

    def _update(self, name: str, expected_edition: int, values: dict[str, Any]) -> CrawlTemplate:
        current = self.get(name)
        update_with_edition(self.conn, self.actor, s.ordertemplates, "template_id", current.template_id,
                            expected_edition, {**values, "lastupdated": utcnow()}, "template")
        return self.get_by_id(current.template_id)

    def replace(self, name: str, orderxml: str, expected_edition: int, description: str | None = None,
                politeness: PolitenessBounds | None = None) -> CrawlTemplate:
        """Replace a template's XML (checked first, as ``create`` checks it); configurations using it pick it
        up at the next job."""
        check_orderxml(orderxml, f"template {name!r}", politeness)
        values: dict[str, Any] = {"orderxml": orderxml}
        if description is not None:
            values["description"] = description
        return self._update(name, expected_edition, values)

    def activate(self, name: str, expected_edition: int) -> CrawlTemplate:
        return self._update(name, expected_edition, {"isactive": True})

    def deactivate(self, name: str, expected_edition: int) -> CrawlTemplate:
        return self._update(name, expected_edition, {"isactive": False})

    def users_of(self, name: str) -> int:
        """How many configurations use the template."""
        current = self.get(name)
        return self.conn.scalar(select(func.count()).select_from(s.configurations).where(
            s.configurations.c.template_id == current.template_id)) or 0

    def delete(self, name: str, expected_edition: int) -> None:
        """Delete a template no configuration uses (ValidationError says how many use it)."""
        current = self.get(name)
        used_by = self.users_of(name)
        if used_by:
            example = self.conn.execute(
                select(s.domains.c.name, s.configurations.c.name.label("config"))
                .join(s.domains, s.configurations.c.domain_id == s.domains.c.domain_id)
                .where(s.configurations.c.template_id == current.template_id).limit(1)).one()
            raise ValidationError(
                f"template {name!r} is used by {used_by} configuration(s), for example "
                f"{example.name}/{example.config}; it cannot be deleted (deactivate it to hide it)")
        before = fetch_row(self.conn, s.ordertemplates, "template_id", current.template_id)
        if current.edition != expected_edition:
            raise stale_edition(self.conn, self.actor, "ordertemplates", current.template_id, "template",
                                expected_edition, before)
        deleted = self.conn.execute(delete(s.ordertemplates).where(
            s.ordertemplates.c.template_id == current.template_id,
            s.ordertemplates.c.edition == expected_edition)).rowcount
        if deleted != 1:
            raise stale_edition(self.conn, self.actor, "ordertemplates", current.template_id, "template",
                                expected_edition, None)
        record_audit(self.conn, self.actor, "ordertemplates", current.template_id, "delete", before, None)
