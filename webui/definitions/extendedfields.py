"""Pages of the definitions section: the definitions of extended fields on domains and harvest
definitions (NetarchiveSuite's extendedfield); only admins define or delete them. Values are edited on the
domain page.
"""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _

from harvestdef.model.definitions import ExtendedFieldDatatype, ExtendedFieldType
from harvestdef.repositories.extendedfields import ExtendedFieldRepository
from webui.api.errors import ApiError
from webui.auth import ADMIN, READ, require
from webui.context import actor, database
from webui.definitions import blueprint
from webui.definitions.forms import attempt, form_data


def _extended_fields_page() -> str:
    with database().connect() as conn:
        repository = ExtendedFieldRepository(conn)
        fields = {kind: repository.fields_of(kind) for kind in ExtendedFieldType}
    return render_template("definitions/extended_fields.html", fields=fields, datatypes=list(ExtendedFieldDatatype),
                           kinds=list(ExtendedFieldType))


@blueprint.route("/extendedfields", methods=["GET", "POST"])
@require(READ)
def extended_fields() -> Any:
    if request.method == "GET":
        return _extended_fields_page()
    return _define_extended_field()


def _enum_choice(enum: Any, name: str) -> Any:
    value = request.form.get(name, "")
    try:
        return enum[value]
    except KeyError:
        raise ApiError("invalid", f"{name} must be one of {', '.join(e.name for e in enum)}, not {value!r}",
                       name) from None


@require(ADMIN)
def _define_extended_field() -> Any:
    def define() -> Any:
        data = form_data(("sequencenr", "maxlen"))
        with database().begin() as conn:
            created = ExtendedFieldRepository(conn, actor()).define(
                _enum_choice(ExtendedFieldType, "field_type"), request.form.get("name", ""),
                _enum_choice(ExtendedFieldDatatype, "datatype"), mandatory=request.form.get("mandatory") == "1",
                defaultvalue=request.form.get("defaultvalue", ""),
                options=tuple(o.strip() for o in request.form.get("options", "").splitlines() if o.strip()),
                format=request.form.get("format", ""), sequencenr=data.get("sequencenr"), maxlen=data.get("maxlen"))
        flash(_("Extended field %(name)s defined.", name=created.name))
        return redirect(url_for("definitions.extended_fields"))
    return attempt(define, _extended_fields_page)


@blueprint.post("/extendedfields/<int:field_id>/delete")
@require(ADMIN)
def delete_extended_field(field_id: int) -> Any:
    with database().begin() as conn:
        ExtendedFieldRepository(conn, actor()).delete(field_id)
    return redirect(url_for("definitions.extended_fields"))
