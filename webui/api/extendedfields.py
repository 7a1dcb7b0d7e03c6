"""API routes: the extended-field values of a domain or a harvest definition (NetarchiveSuite's
extendedfieldvalue, fields of type domains or harvestdefinition).

The values belong to their domain or harvest definition as its other columns do, so a change takes its
``edition`` and moves it on: two curators editing one definition cannot overwrite each other. Every field
is checked before any is written (one transaction), and each changed value is audited by the repository.
The reading and writing functions are shared with the domain and harvest pages (webui/definitions/).

The schema is imported only to name the table whose row carries the fields, so the repository moves
that row's edition on; the values are read and written by ExtendedFieldRepository.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table

from harvestdef.db import schema as s
from harvestdef.errors import ValidationError
from harvestdef.model.definitions import ExtendedFieldType
from harvestdef.repositories.base import fetch_row, stale_edition, update_with_edition
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.extendedfields import ExtendedFieldRepository
from harvestdef.repositories.harvests import HarvestRepository
from webui.api.core import blueprint, body, edition, field
from webui.api.errors import ApiError
from webui.auth import CURATE, READ, require
from webui.context import actor, database


def fields_json(conn: Connection, field_type: ExtendedFieldType, instance_id: int) -> list[dict[str, Any]]:
    """Every extended field of the type with its definition and the domain's or harvest's value."""
    repository = ExtendedFieldRepository(conn)
    values = repository.values_of(field_type, instance_id)
    return [{"name": f.name, "datatype": f.datatype.name, "mandatory": f.mandatory, "options": list(f.options),
             "maxlen": f.maxlen, "value": values[f.name]} for f in repository.fields_of(field_type)]


def _set_fields(conn: Connection, field_type: ExtendedFieldType, owner: tuple[Table, str, int], what: str,
                name: str, edition_now: int, expected_edition: int, values: dict[str, str]) -> list[str]:
    """Set the named fields of the definition ``owner`` (its table, key column and key); the names whose
    value changed. The owner's edition moves on only when something changed, and a stale one is refused
    either way (StaleEditionError, 409); a refused value is an invalid error (400) naming ``values``."""
    table, key_column, key = owner
    if edition_now != expected_edition:
        raise stale_edition(conn, actor(), table.name, key, what, expected_edition,
                            fetch_row(conn, table, key_column, key))
    try:
        changed = ExtendedFieldRepository(conn, actor()).set_values(field_type, key, values)
    except ValidationError as exc:
        raise ApiError("invalid", str(exc), "values", phrase=exc.phrase) from exc
    if changed:
        update_with_edition(conn, actor(), table, key_column, key, expected_edition, {}, what)
    return changed


def domain_fields(conn: Connection, name: str) -> dict[str, Any]:
    """The domain's edition and every domain extended field with its definition and the domain's value."""
    domain = DomainRepository(conn).get(name)
    return {"domain": domain.name, "edition": domain.edition,
            "fields": fields_json(conn, ExtendedFieldType.DOMAINS, domain.domain_id)}


def harvest_fields(conn: Connection, name: str) -> dict[str, Any]:
    """The harvest definition's edition and every harvestdefinition extended field with its value."""
    harvest = HarvestRepository(conn).get(name)
    return {"harvest": harvest.name, "edition": harvest.edition,
            "fields": fields_json(conn, ExtendedFieldType.HARVESTDEFINITIONS, harvest.harvest_id)}


def set_harvest_fields(conn: Connection, name: str, expected_edition: int, values: dict[str, str]) -> list[str]:
    """Set the named fields of the harvest definition (``_set_fields``)."""
    harvest = HarvestRepository(conn).get(name)
    return _set_fields(conn, ExtendedFieldType.HARVESTDEFINITIONS,
                       (s.harvestdefinitions, "harvest_id", harvest.harvest_id), "harvest definition", harvest.name,
                       harvest.edition, expected_edition, values)


def set_domain_fields(conn: Connection, name: str, expected_edition: int, values: dict[str, str]) -> list[str]:
    """Set the named fields of the domain (``_set_fields``)."""
    domain = DomainRepository(conn).get(name)
    return _set_fields(conn, ExtendedFieldType.DOMAINS, (s.domains, "domain_id", domain.domain_id), "domain",
                       domain.name, domain.edition, expected_edition, values)


@blueprint.get("/domains/<name>/extendedfields")
@require(READ)
def get_domain_fields(name: str) -> Any:
    """The domain's extended fields: each with its datatype, options and the domain's value."""
    with database().connect() as conn:
        return domain_fields(conn, name)


@blueprint.patch("/domains/<name>/extendedfields")
@require(CURATE)
def patch_domain_fields(name: str) -> Any:
    """Set extended-field values: ``{"edition", "values": {"field name": "value", ...}}``, all or nothing."""
    expected, values = _patch_body()
    with database().begin() as conn:
        set_domain_fields(conn, name, expected, values)
        return domain_fields(conn, name)


@blueprint.get("/harvests/<name>/extendedfields")
@require(READ)
def get_harvest_fields(name: str) -> Any:
    """The harvest definition's extended fields: each with its datatype, options and the harvest's value."""
    with database().connect() as conn:
        return harvest_fields(conn, name)


@blueprint.patch("/harvests/<name>/extendedfields")
@require(CURATE)
def patch_harvest_fields(name: str) -> Any:
    """Set extended-field values: ``{"edition", "values": {"field name": "value", ...}}``, all or nothing."""
    expected, values = _patch_body()
    with database().begin() as conn:
        set_harvest_fields(conn, name, expected, values)
        return harvest_fields(conn, name)


def _patch_body() -> tuple[int, dict[str, str]]:
    """The edition and the values of a PATCH of extended fields, each value checked to be a string."""
    data = body()
    expected = edition(data)
    values = field(data, "values", dict)
    for key, value in values.items():
        if not isinstance(value, str):
            raise ApiError("invalid", f"the value of extended field {key!r} must be a string, "
                                      f"not {type(value).__name__}", "values")
    return expected, values
