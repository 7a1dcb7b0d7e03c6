"""Pages of the definitions section: crawl templates, uploaded (checked to be well-formed, with line and
column otherwise), downloaded, activated and deactivated; only admins change them, and only admins download
them with their credential values (webui.auth.readable_template).
"""

from __future__ import annotations

from typing import Any

from flask import Response, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _

from harvestdef.politeness import PolitenessBounds
from harvestdef.repositories.templates import TemplateRepository
from webui.api.crawltemplates import template_input
from webui.auth import ADMIN, READ, readable_template, require
from webui.context import actor, database, settings
from webui.definitions import blueprint
from webui.definitions.forms import attempt, form_data, form_edition
from webui.downloads import attachment


def _templates_page() -> str:
    with database().connect() as conn:
        templates = TemplateRepository(conn).page(None, 10_000)
    return render_template("definitions/templates.html", templates=templates)


@blueprint.route("/templates", methods=["GET", "POST"])
@require(READ)
def templates() -> Any:
    if request.method == "GET":
        return _templates_page()
    return _upload_template()


@require(ADMIN)
def _upload_template() -> Any:
    """Upload a new template, or replace one (the form then carries the edition it replaces)."""
    def upload() -> Any:
        name = request.form.get("name", "").strip()
        uploaded = request.files.get("file")
        cxml = uploaded.read().decode("utf-8", "replace") if uploaded and uploaded.filename else \
            request.form.get("cxml", "")
        expected = form_data(("edition",)).get("edition")
        with template_input(), database().begin() as conn:
            repository = TemplateRepository(conn, actor())
            politeness = PolitenessBounds.from_settings(settings().livechanges)
            if expected is None:
                repository.create(name, cxml, request.form.get("description", ""), politeness=politeness)
            else:
                repository.replace(name, cxml, expected, politeness=politeness)
        flash(_("Template %(name)s uploaded.", name=name) if expected is None
              else _("Template %(name)s replaced.", name=name))
        return redirect(url_for("definitions.templates"))
    return attempt(upload, _templates_page)


@blueprint.get("/templates/<name>/download")
@require(READ)
def download_template(name: str) -> Any:
    with database().connect() as conn:
        template = TemplateRepository(conn).get(name)
    return Response(readable_template(template.orderxml), mimetype="application/xml",
                    headers=attachment(f"{template.name}.cxml"))


@blueprint.post("/templates/<name>/active")
@require(ADMIN)
def template_active(name: str) -> Any:
    def change() -> Any:
        expected = form_edition()
        with database().begin() as conn:
            repository = TemplateRepository(conn, actor())
            (repository.activate if request.form.get("active") == "1" else repository.deactivate)(name, expected)
        return redirect(url_for("definitions.templates"))
    return attempt(change, _templates_page)
