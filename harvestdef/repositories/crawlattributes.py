"""Crawl attributes of domain configurations and snapshot harvests, in NetarchiveSuite's EAV tables.

The rules are harvestdef.crawlattributes'. Rows are written as NetarchiveSuite's EAV DAO writes them: the
types of a tree come from eav_type_attribute (looked up by tree and name, never by a fixed id, because a
database taken over from NetarchiveSuite numbers them its own way); a value is the row of (tree, entity,
type), updated in place when there is one (the lowest id, should an import have left two) and inserted
otherwise, in ``val_int``, the id from the column's sequence. A snapshot's value set back to "each
configuration's own" deletes its row, which NetarchiveSuite reads as the type's default, as we do for a
configuration.

Every change is audited as one row per entity: table ``eav_attribute``, key ``TREE:ENTITY``, before and
after the entity's values by type name, so a configuration's or a harvest's page shows it in its history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update

from harvestdef.crawlattributes import ATTRIBUTES, BY_NAME, CONFIGURATION_TREE, SNAPSHOT_TREE
from harvestdef.db import schema as s
from harvestdef.errors import ValidationError
from harvestdef.repositories.base import SYSTEM_ACTOR, record_audit

AUDIT_TABLE = "eav_attribute"


def audit_key(tree: int, entity_id: int) -> str:
    """The audit_log row key of an entity's crawl attributes."""
    return f"{tree}:{entity_id}"


@dataclass(frozen=True)
class CrawlAttributes:
    """One entity's crawl attributes by type name: ``own`` the values it has rows for, ``defaults`` the
    types' defaults. ``value(name)`` is what applies: its own, else the default."""

    own: Mapping[str, int]
    defaults: Mapping[str, int]

    def value(self, name: str) -> int:
        return self.own.get(name, self.defaults.get(name, BY_NAME[name].default))

    def values(self) -> dict[str, int]:
        return {kind.name: self.value(kind.name) for kind in ATTRIBUTES}


class CrawlAttributeRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR) -> None:
        self.conn = conn
        self.actor = actor

    def _types(self, tree: int) -> dict[str, tuple[int, int]]:
        """The tree's types we know, by name: (type id, default)."""
        ta = s.eav_type_attribute
        rows = self.conn.execute(select(ta.c.name, ta.c.id, ta.c.def_int).where(ta.c.tree_id == tree))
        return {name: (type_id, BY_NAME[name].default if default is None else default)
                for name, type_id, default in rows if name in BY_NAME}

    def _rows(self, tree: int, entity_id: int, types: Mapping[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        """The entity's rows by type name: (row id, val_int), the lowest id of a type if there are two."""
        a = s.eav_attribute
        name_of = {type_id: name for name, (type_id, _) in types.items()}
        found: dict[str, tuple[int, int]] = {}
        for row_id, type_id, value in self.conn.execute(
                select(a.c.id, a.c.type_id, a.c.val_int).where(a.c.tree_id == tree, a.c.entity_id == entity_id)
                .order_by(a.c.id)):
            name = name_of.get(type_id)
            if name is not None and name not in found and value is not None:
                found[name] = (row_id, value)
        return found

    def of(self, tree: int, entity_id: int) -> CrawlAttributes:
        types = self._types(tree)
        rows = self._rows(tree, entity_id, types)
        return CrawlAttributes({name: value for name, (_, value) in rows.items()},
                               {name: default for name, (_, default) in types.items()})

    def of_configuration(self, config_id: int) -> CrawlAttributes:
        return self.of(CONFIGURATION_TREE, config_id)

    def of_snapshot(self, harvest_id: int) -> CrawlAttributes:
        return self.of(SNAPSHOT_TREE, harvest_id)

    def set(self, tree: int, entity_id: int, values: Mapping[str, int | None], audited: bool = True
            ) -> CrawlAttributes:
        """Write ``values`` (checked stored values by type name; None deletes the entity's own value) for
        the entity; types not named are left as they are. Audited when anything changed, unless ``audited``
        is false: the entity's own creation records the values it was made with."""
        types = self._types(tree)
        missing = sorted(set(values) - set(types))
        if missing:
            raise ValidationError(
                f"the harvest database has no crawl attribute type {missing[0]} in EAV tree {tree}; "
                "`harvestsuite db init` adds the missing types")
        a = s.eav_attribute
        rows = self._rows(tree, entity_id, types)
        before = {name: value for name, (_, value) in rows.items()}
        for name, value in values.items():
            present = rows.get(name)
            if value is None:
                if present is not None:
                    self.conn.execute(delete(a).where(a.c.tree_id == tree, a.c.entity_id == entity_id,
                                                      a.c.type_id == types[name][0]))
            elif present is None:
                self.conn.execute(insert(a).values(tree_id=tree, entity_id=entity_id, type_id=types[name][0],
                                                   val_int=value))
            elif present[1] != value:
                self.conn.execute(update(a).where(a.c.id == present[0]).values(val_int=value))
        after = self.of(tree, entity_id)
        if audited and dict(after.own) != before:
            record_audit(self.conn, self.actor, AUDIT_TABLE, audit_key(tree, entity_id),
                         "update" if before else "insert", before or None, dict(after.own))
        return after

    def set_configuration(self, config_id: int, values: Mapping[str, int], audited: bool = True
                          ) -> CrawlAttributes:
        """NetarchiveSuite's way for a configuration: every type of the tree gets a row; a type not in
        ``values`` keeps the value that applies now (its own, else the default)."""
        current = self.of(CONFIGURATION_TREE, config_id)
        complete: dict[str, int | None] = {name: values.get(name, current.value(name))
                                           for name in self._types(CONFIGURATION_TREE)}
        return self.set(CONFIGURATION_TREE, config_id, complete, audited)

    def set_snapshot(self, harvest_id: int, values: Mapping[str, int | None]) -> CrawlAttributes:
        return self.set(SNAPSHOT_TREE, harvest_id, values)

    def delete_entity(self, tree: int, entity_id: int) -> None:
        """Delete an entity's values with the entity (a configuration or harvest that goes away)."""
        a = s.eav_attribute
        before = self.of(tree, entity_id).own
        if not before:
            return
        self.conn.execute(delete(a).where(a.c.tree_id == tree, a.c.entity_id == entity_id))
        record_audit(self.conn, self.actor, AUDIT_TABLE, audit_key(tree, entity_id), "delete", dict(before), None)
