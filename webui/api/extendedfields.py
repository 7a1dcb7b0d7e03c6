"""API routes: a domain's extended-field values (reference §1.9, NetarchiveSuite's extendedfieldvalue).

The values belong to the domain as its configurations and seed lists do, so a change takes the domain's
``edition`` and moves it on: two curators editing one domain cannot overwrite each other. Every field is
checked before any is written (one transaction), and each changed value is audited by the repository.
The reading and writing functions are shared with the domain page (webui/definitions/domains.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from harvestdef.errors import StaleEditionError, ValidationError
from harvestdef.model.definitions import ExtendedFieldType
from harvestdef.repositories.domains import DomainRepository, bump_domain_edition
from harvestdef.repositories.extendedfields import ExtendedFieldRepository
from webui.api.core import blueprint, body, edition, field
from webui.api.errors import ApiError
from webui.auth import CURATE, READ, require
from webui.context import actor, database


def domain_fields(conn: Connection, name: str) -> dict[str, Any]:
    """The domain's edition and every domain extended field with its definition and the domain's value."""
    domain = DomainRepository(conn).get(name)
    repository = ExtendedFieldRepository(conn)
    values = repository.values_of(ExtendedFieldType.DOMAINS, domain.domain_id)
    return {"domain": domain.name, "edition": domain.edition, "fields": [
        {"name": f.name, "datatype": f.datatype.name, "mandatory": f.mandatory, "options": list(f.options),
         "maxlen": f.maxlen, "value": values[f.name]} for f in repository.fields_of(ExtendedFieldType.DOMAINS)]}


def set_domain_fields(conn: Connection, name: str, expected_edition: int, values: dict[str, str]) -> list[str]:
    """Set the named fields of the domain; the names whose value changed. The edition moves on only when
    something changed, and a stale one is refused either way (StaleEditionError, 409)."""
    domain = DomainRepository(conn).get(name)
    if domain.edition != expected_edition:
        raise StaleEditionError("domain", domain.name, expected_edition, domain.edition)
    try:
        changed = ExtendedFieldRepository(conn, actor()).set_values(ExtendedFieldType.DOMAINS, domain.domain_id,
                                                                    values)
    except ValidationError as exc:
        raise ApiError("invalid", str(exc), "values") from exc
    if changed:
        bump_domain_edition(conn, actor(), domain.domain_id, expected_edition)
    return changed


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
    data = body()
    expected = edition(data)
    values = field(data, "values", dict)
    for key, value in values.items():
        if not isinstance(value, str):
            raise ApiError("invalid", f"the value of extended field {key!r} must be a string, "
                                      f"not {type(value).__name__}", "values")
    with database().begin() as conn:
        set_domain_fields(conn, name, expected, values)
        return domain_fields(conn, name)
