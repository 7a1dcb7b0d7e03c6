"""API routes: crawl templates (``/api/v1/templates``), Heritrix 3 crawler-beans documents by name.

Only admins upload or change a template, and only admins read its credential values: every other role gets
the XML with them masked (webui.auth.readable_template). A document that is not well-formed XML is refused with its line
and column on the ``cxml`` field (``template_input``, shared with the template pages in
webui/definitions/crawltemplates.py), and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask import Response

from harvestdef.errors import TemplateError
from harvestdef.model.definitions import CrawlTemplate
from harvestdef.politeness import PolitenessBounds
from harvestdef.repositories.templates import TemplateRepository
from webui.api.core import PAGED, blueprint, body, edition, field, jsonable, limit, name_after, page
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query, takes
from webui.auth import ADMIN, READ, readable_template, require
from webui.context import actor, database, settings
from webui.downloads import attachment


def template_json(template: CrawlTemplate, with_cxml: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {"name": template.name, "description": template.description,
                              "active": template.isactive, "lastupdated": jsonable(template.lastupdated),
                              "edition": template.edition}
    if with_cxml:
        record["cxml"] = readable_template(template.orderxml)
    return record


@contextmanager
def template_input() -> Iterator[None]:
    """A template that is not well-formed: 400 on the cxml field, its line and column in the message."""
    try:
        yield
    except TemplateError as exc:
        raise ApiError("invalid", str(exc), "cxml", phrase=exc.phrase) from exc


@blueprint.get("/templates")
@takes(*PAGED)
@require(READ)
def list_templates() -> Any:
    """Crawl templates by name (without their XML)."""
    size = limit()
    with database().connect() as conn:
        rows = TemplateRepository(conn).page(name_after(), size + 1)
    return page(rows, size, lambda row: [row.name], template_json)


@blueprint.post("/templates")
@require(ADMIN)
def create_template() -> Any:
    """Upload a crawl template ``{"name", "cxml"}``; refused with line and column unless well-formed XML."""
    data = body()
    name, cxml = field(data, "name", str), field(data, "cxml", str)
    description = field(data, "description", str, required=False, default="")
    active = field(data, "active", bool, required=False, default=True)
    with template_input(), database().begin() as conn:
        politeness = PolitenessBounds.from_settings(settings().livechanges)
        created = TemplateRepository(conn, actor()).create(name, cxml, description, active, politeness=politeness)
    return template_json(created, with_cxml=True), 201


@blueprint.get("/templates/<name>")
@takes(QueryParameter("format", "string", "cxml: the template's XML alone, as a download", enum=("cxml",)))
@require(READ)
def get_template(name: str) -> Any:
    """One crawl template with its XML (``?format=cxml``: the XML alone, as a download); its credential values
    (passwords, form items, cookie values) masked for every role but admin."""
    with database().connect() as conn:
        template = TemplateRepository(conn).get(name)
    if query("format") == "cxml":
        return Response(readable_template(template.orderxml), mimetype="application/xml",
                        headers=attachment(f"{template.name}.cxml"))
    return template_json(template, with_cxml=True)


@blueprint.patch("/templates/<name>")
@require(ADMIN)
def update_template(name: str) -> Any:
    """Replace a template's XML or description, or (de)activate it; 409 if ``edition`` is stale."""
    data = body()
    expected = edition(data)
    cxml = field(data, "cxml", str, required=False)
    description = field(data, "description", str, required=False)
    active = field(data, "active", bool, required=False)
    with template_input(), database().begin() as conn:
        templates = TemplateRepository(conn, actor())
        template = templates.get(name)
        if cxml is not None or description is not None:
            # a new XML keeps to the site's politeness floors; a description alone leaves the XML as it is
            politeness = PolitenessBounds.from_settings(settings().livechanges) if cxml is not None else None
            template = templates.replace(name, template.orderxml if cxml is None else cxml, expected, description,
                                         politeness=politeness)
            expected = template.edition
        if active is not None and active != template.isactive:
            template = (templates.activate if active else templates.deactivate)(name, expected)
        elif template.edition != expected:
            template = templates.replace(name, template.orderxml, expected)  # checks the edition
    return template_json(template, with_cxml=True)
