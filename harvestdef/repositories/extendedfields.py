"""Extended fields, as NetarchiveSuite has them: curator-defined metadata fields on domains (type 1) and on harvest
definitions (type 2), and their values per domain or harvest definition.

A value is checked against its field before it is stored: a mandatory field needs content, a BOOLEAN is
``true`` or ``false``, a NUMBER parses as a number, a TIMESTAMP/JSCALENDAR as an ISO date, a SELECT is
one of the field's options (stored comma-separated), and STRING/NOTE respect ``maxlen``. A field's name is
unique within its type.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, exists, insert, select, update

from harvestdef.db import schema as s
from harvestdef.errors import ConflictError, NotFoundError, ValidationError
from harvestdef.model.definitions import (
    ExtendedField,
    ExtendedFieldDatatype,
    ExtendedFieldType,
    ExtendedFieldValue,
)
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.base import SYSTEM_ACTOR, fetch_row, record_audit, translate_errors
from harvestdef.validation import check_name

MAX_CONTENT = 30000  # extendedfieldvalue.content is varchar(30000)
_fields = s.extendedfield
_values = s.extendedfieldvalue
_INSTANCE_TABLES = {
    ExtendedFieldType.DOMAINS: (s.domains, "domain_id", "domain"),
    ExtendedFieldType.HARVESTDEFINITIONS: (s.harvestdefinitions, "harvest_id", "harvest definition"),
}


def _to_field(row: Any) -> ExtendedField:
    return ExtendedField(
        field_id=row.extendedfield_id, field_type=ExtendedFieldType(row.extendedfieldtype_id), name=row.name,
        # NetarchiveSuite leaves format, defaultvalue and options NULL where a field has none
        datatype=ExtendedFieldDatatype(row.datatype), mandatory=bool(row.mandatory),
        defaultvalue=row.defaultvalue or "",
        options=tuple(o.strip() for o in (row.options or "").split(",") if o.strip()), format=row.format or "",
        sequencenr=row.sequencenr, maxlen=row.maxlen)


def check_content(field: ExtendedField, content: str) -> str:
    """``content`` if it is a valid value of ``field``; ValidationError naming the field otherwise (its
    ``field`` is ``values.NAME``, as the API's body holds the value)."""
    try:
        return _checked_content(field, content)
    except ValidationError as error:
        error.field = f"values.{field.name}"
        raise


def _checked_content(field: ExtendedField, content: str) -> str:
    text = content.strip()
    if not text:
        if field.mandatory:
            raise ValidationError(phrase(N_("extended field %(name)s is mandatory"), name=repr(field.name)))
        return text
    kind = field.datatype
    if kind is ExtendedFieldDatatype.BOOLEAN and text.lower() not in ("true", "false"):
        raise ValidationError(phrase(N_("extended field %(name)s is true or false, not %(value)s"),
                                     name=repr(field.name), value=repr(text)))
    if kind is ExtendedFieldDatatype.NUMBER:
        try:
            float(text)
        except ValueError:
            raise ValidationError(phrase(N_("extended field %(name)s is a number, not %(value)s"),
                                         name=repr(field.name), value=repr(text))) from None
    if kind in (ExtendedFieldDatatype.TIMESTAMP, ExtendedFieldDatatype.JSCALENDAR):
        try:
            datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(phrase(N_("extended field %(name)s is a date (ISO 8601, e.g. 2026-01-31T12:00), "
                                            "not %(value)s"), name=repr(field.name), value=repr(text))) from None
    if kind is ExtendedFieldDatatype.SELECT and text not in field.options:
        raise ValidationError(phrase(N_("extended field %(name)s is one of %(options)s; not %(value)s"),
                                     name=repr(field.name), options=", ".join(field.options), value=repr(text)))
    limit = min(field.maxlen or MAX_CONTENT, MAX_CONTENT)
    if len(text) > limit:
        raise ValidationError(phrase(N_("extended field %(name)s holds at most %(limit)s characters, not "
                                        "%(length)s"), name=repr(field.name), limit=limit, length=len(text)))
    return text


class ExtendedFieldRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR) -> None:
        self.conn = conn
        self.actor = actor

    def get(self, field_id: int) -> ExtendedField:
        row = self.conn.execute(select(_fields).where(_fields.c.extendedfield_id == field_id)).first()
        if row is None:
            raise NotFoundError("extended field", field_id)
        return _to_field(row)

    def fields_of(self, field_type: ExtendedFieldType) -> list[ExtendedField]:
        rows = self.conn.execute(select(_fields).where(_fields.c.extendedfieldtype_id == int(field_type))
                                 .order_by(_fields.c.sequencenr, _fields.c.name))
        return [_to_field(row) for row in rows]

    def define(self, field_type: ExtendedFieldType, name: str, datatype: ExtendedFieldDatatype, *,
               mandatory: bool = False, defaultvalue: str = "", options: tuple[str, ...] = (), format: str = "",
               sequencenr: int | None = None, maxlen: int | None = None) -> ExtendedField:
        """A new field; ConflictError if its type has a field of that name."""
        name = check_name(name, "extended field", s.extendedfield.c.name, in_path=False)
        if datatype is ExtendedFieldDatatype.SELECT and not options:
            raise ValidationError(phrase(N_("extended field %(name)s is a SELECT and needs options"), name=repr(name)))
        if any("," in option for option in options):
            raise ValidationError(phrase(N_("extended field %(name)s: options cannot contain commas"), name=repr(name)))
        if self.conn.scalar(select(exists().where(_fields.c.extendedfieldtype_id == int(field_type),
                                                  _fields.c.name == name))):
            raise ConflictError("extended field", f"{field_type.name.lower()}/{name}")
        with translate_errors("extended field", name):
            field_id = self.conn.execute(insert(_fields).values(
                extendedfieldtype_id=int(field_type), name=name, format=format, defaultvalue=defaultvalue,
                options=",".join(options), datatype=int(datatype), mandatory=mandatory, sequencenr=sequencenr,
                maxlen=maxlen, historize=False)).inserted_primary_key[0]
        field = self.get(field_id)
        if defaultvalue:
            check_content(field, defaultvalue)
        record_audit(self.conn, self.actor, _fields.name, field_id, "insert", None,
                     fetch_row(self.conn, _fields, "extendedfield_id", field_id))
        return field

    def delete(self, field_id: int) -> None:
        """Delete a field with all its values."""
        before = fetch_row(self.conn, _fields, "extendedfield_id", field_id)
        if before is None:
            raise NotFoundError("extended field", field_id)
        self.conn.execute(delete(_values).where(_values.c.extendedfield_id == field_id))
        self.conn.execute(delete(_fields).where(_fields.c.extendedfield_id == field_id))
        record_audit(self.conn, self.actor, _fields.name, field_id, "delete", before, None)

    def set_value(self, field_id: int, instance_id: int, content: str) -> ExtendedFieldValue:
        """Set the field's value for one domain or harvest definition (its id)."""
        field = self.get(field_id)
        table, key, kind = _INSTANCE_TABLES[field.field_type]
        if not self.conn.scalar(select(exists().where(table.c[key] == instance_id))):
            raise NotFoundError(kind, instance_id)
        text = check_content(field, content)
        row = self.conn.execute(select(_values).where(_values.c.extendedfield_id == field_id,
                                                      _values.c.instance_id == instance_id)).first()
        if row is None:
            value_id = self.conn.execute(insert(_values).values(
                extendedfield_id=field_id, instance_id=instance_id, content=text)).inserted_primary_key[0]
            before = None
        else:
            value_id = row.extendedfieldvalue_id
            before = dict(row._mapping)
            self.conn.execute(update(_values).where(_values.c.extendedfieldvalue_id == value_id).values(content=text))
        record_audit(self.conn, self.actor, _values.name, value_id, "insert" if before is None else "update",
                     before, fetch_row(self.conn, _values, "extendedfieldvalue_id", value_id))
        return ExtendedFieldValue(value_id, field_id, instance_id, text)

    def set_values(self, field_type: ExtendedFieldType, instance_id: int, values: Mapping[str, str]) -> list[str]:
        """Set fields of the type by name for one domain or harvest definition; returns the names whose value
        changed. Every value is checked before any is written, and an unchanged one is not written (nor
        audited), so saving a whole form records only what the curator changed.

        :raise ValidationError: a name that is no field of the type, or a value its field refuses.
        """
        fields = {field.name: field for field in self.fields_of(field_type)}
        unknown = [name for name in values if name not in fields]
        if unknown:
            raise ValidationError(f"no {field_type.name.lower()} extended field named {unknown[0]!r}; "
                                  f"the fields are {', '.join(fields) or 'none'}")
        checked = {name: check_content(fields[name], content) for name, content in values.items()}
        current = self.values_of(field_type, instance_id)
        changed = [name for name, text in checked.items() if text != current[name]]
        for name in changed:
            self.set_value(fields[name].field_id, instance_id, checked[name])
        return changed

    def value_ids_of(self, field_type: ExtendedFieldType, instance_id: int) -> list[int]:
        """The ids of the values stored for one domain or harvest definition (their audit trail's keys)."""
        return list(self.conn.scalars(
            select(_values.c.extendedfieldvalue_id)
            .join(_fields, _fields.c.extendedfield_id == _values.c.extendedfield_id)
            .where(_values.c.instance_id == instance_id, _fields.c.extendedfieldtype_id == int(field_type))
            .order_by(_values.c.extendedfieldvalue_id)))

    def values_of(self, field_type: ExtendedFieldType, instance_id: int) -> dict[str, str]:
        """Every field of the type by name, with the instance's value or else the field's default."""
        stored = dict(self.conn.execute(
            select(_values.c.extendedfield_id, _values.c.content).where(_values.c.instance_id == instance_id)).all())
        return {field.name: stored.get(field.field_id, field.defaultvalue) for field in self.fields_of(field_type)}
