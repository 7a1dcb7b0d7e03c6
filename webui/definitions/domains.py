"""Pages of the definitions section: the section's landing page, and domains with their configurations and
seed lists (NetarchiveSuite's Find domains, Create domain, and the domain, configuration and seed-list pages).

Every write is one transaction; an error (a bad name, a stale edition, a refused deletion) rolls it back
and is flashed on the page it came from. Refused seeds or domain names show the form again with what was
typed in it and every refused line listed (webui/definitions/refused.py), status 400. Only curators and
admins see the forms, and the views refuse the others (``require(CURATE)``).

Every read and write goes through the repositories.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import Connection

from harvestdef.bulkimport import DomainImporter, TakenLine
from harvestdef.crawlattributes import ATTRIBUTES, CONFIGURATION_TREE, form_values
from harvestdef.db.types import utcnow
from harvestdef.errors import CrawlerTrapError, HarvestSuiteError, RefusedLinesError, shown
from harvestdef.model.definitions import ExtendedFieldType
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.crawlattributes import AUDIT_TABLE as ATTRIBUTES_AUDIT_TABLE
from harvestdef.repositories.crawlattributes import CrawlAttributeRepository, audit_key
from harvestdef.repositories.domains import SEARCH_FIELDS, DomainRepository
from harvestdef.repositories.seedlists import SeedListRepository
from harvestdef.repositories.templates import TemplateRepository
from harvestdef.traps import validate_trap_expressions
from webui.api.core import PAGED, SEARCH_FIELD, SEARCH_QUERY, decode_cursor, encode_cursor, limit
from webui.api.errors import ApiError, is_client_error, translate
from webui.api.extendedfields import domain_fields, set_domain_fields
from webui.api.parameters import takes
from webui.auth import CURATE, READ, require
from webui.context import actor, database, settings
from webui.definitions import blueprint
from webui.definitions.changes import definition_changes
from webui.definitions.forms import form_edition, form_integer, show_refused
from webui.definitions.refused import show_refusals
from webui.formfields import refuse
from webui.refusal_words import label, say, words

# Lines of an uploaded file taken as their registered domain that the page shows; the rest are counted.
MAX_SHOWN_NOTES = 100


def _domains(conn: Connection) -> DomainRepository:
    return DomainRepository.from_settings(conn, settings(), actor())


def _write(change: Callable[[Connection], Any], done: str, back: str, page: Callable[[], Any] | None = None) -> Any:
    """Run ``change`` in one transaction; flash ``done`` and go to ``back``. Refused input (nothing stored)
    shows ``page`` again with what was typed, the error beside its field and refused lines listed; without
    a ``page``, the error is flashed on ``back``."""
    try:
        with database().begin() as conn:
            change(conn)
    except RefusedLinesError as exc:
        if page is None:
            raise
        return show_refusals(exc, page)
    except (ApiError, HarvestSuiteError) as exc:
        if page is not None and is_client_error(exc):
            return show_refused(exc, page)
        flash(words(translate(exc))[1], "error")
    else:
        flash(done)
    return redirect(back)


def _edition() -> int:
    return form_edition()  # required: a form without it is refused naming it, never applied blindly


def _limit(name: str) -> int:
    """A limit of the form (-1 when empty: unlimited); a whole number, else refused naming the field."""
    text = request.form.get(name, "").strip()
    return form_integer(name, text) if text else -1


@blueprint.route("/")
@require(READ)
def index() -> Any:
    # no domain count here: counting millions of rows on every visit is what the lists avoid too
    return render_template("definitions/index.html")


@blueprint.route("/domains")
@takes(SEARCH_QUERY, SEARCH_FIELD, *PAGED)  # the page shares the API's limit(), which reads through them
@require(READ)
def domains() -> Any:
    query, where = request.args.get("q", "").strip(), request.args.get("field", "name")
    cursor = decode_cursor(request.args.get("after"))
    size = limit()
    rows = []
    if query or request.args.get("after") or "q" in request.args:
        with database().connect() as conn:
            rows = _domains(conn).search_page(query, str(cursor[0]) if cursor else None, size + 1, where)
    following = encode_cursor([rows[size - 1].domain.name]) if len(rows) > size else None
    return render_template("definitions/domains.html", rows=rows[:size], query=query, where=where, size=size,
                           fields=SEARCH_FIELDS, following=following, searched="q" in request.args)


@blueprint.route("/domains/new", methods=["GET"])
@require(READ)
def domains_new() -> Any:
    return render_template("definitions/domains_new.html", result=None)


@blueprint.route("/domains/new", methods=["POST"])
@require(CURATE)
def domains_create() -> Any:
    """One name, a list or a file: each line a name, host or URL, taken as its registered domain (with a
    note); a refused line refuses them all."""
    def page() -> str:
        return render_template("definitions/domains_new.html", result=None)

    upload = request.files.get("file")
    if upload is not None and upload.filename:
        try:
            imported = _import_file(upload)
        except RefusedLinesError as exc:
            return show_refusals(exc, page)
        return render_template("definitions/domains_new.html", result=None, imported=imported)
    name, names = request.form.get("name", "").strip(), request.form.get("names", "")
    lines = [name, *names.splitlines()] if name and names.strip() else name or names
    what = (phrase(N_("domain names (line 1 is the single name)")) if name and names.strip()
            else phrase(N_("domain names")))
    try:
        with database().begin() as conn:
            made = _domains(conn).create_many(lines, what, "name" if name and not names.strip() else "names")
    except RefusedLinesError as exc:
        return show_refusals(exc, page)
    except HarvestSuiteError as exc:
        if not is_client_error(exc):
            raise
        return show_refused(exc, page)
    if not made.created and not made.existing:
        flash(_("Give a domain name, a list of names or a file."), "error")
        return page(), 400
    return render_template("definitions/domains_new.html", result=made)


def _import_file(upload: Any) -> dict[str, Any]:
    """An uploaded file of names, imported as ``harvestsuite domains import`` does (up to millions):
    checked whole first, so a refused line stores nothing (RefusedLinesError)."""
    notes: list[TakenLine] = []
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "domains.txt"  # never the client's name: it could be "..", or hold a NUL
        upload.save(path)
        importer = DomainImporter.from_settings(database(), settings(), actor=actor(), parse_workers=0,
                                                on_note=lambda note: notes.append(note)
                                                if len(notes) < MAX_SHOWN_NOTES else None)
        # named by the upload's own name: the temporary path means nothing to the curator
        try:
            counts = importer.run(path, source_name=upload.filename)
        except RefusedLinesError as exc:
            raise RefusedLinesError(phrase(N_("file %(name)s"), name=shown(upload.filename or "")), exc.refusals,
                                    "file", exc.total) from exc
    return {"counts": counts, "notes": notes, "more_notes": counts.taken_as_domain - len(notes)}


@blueprint.route("/domains/<name>")
@require(READ)
def domain(name: str) -> Any:
    with database().connect() as conn:
        repository = _domains(conn)
        current = repository.get(name)
        page = {"domain": current, "is_active": repository.is_active(name),
                "is_alias_expired": repository.is_alias_expired(current, utcnow()),
                "configurations": ConfigurationRepository(conn).list_for_domain(name),
                "seedlists": SeedListRepository(conn).list_for_domain(name),
                "has_history": repository.has_history(name),
                "extended_fields": domain_fields(conn, name)["fields"],
                "changes": definition_changes(conn, [("domains", current.domain_id)], ExtendedFieldType.DOMAINS,
                                              current.domain_id)}
    page["seedlist_names"] = {seedlist.seedlist_id: seedlist.name for seedlist in page["seedlists"]}
    return render_template("definitions/domains_view.html", **page)


@blueprint.route("/domains/<name>/extendedfields", methods=["POST"])
@require(CURATE)
def domain_extended_fields(name: str) -> Any:
    """Save the domain's extended-field values from the form's ``field:NAME`` inputs."""
    values = {key[len("field:"):]: value for key, value in request.form.items() if key.startswith("field:")}
    return _write(lambda conn: set_domain_fields(conn, name, _edition(), values), "Extended fields saved.",
                  url_for("definitions.domain", name=name), lambda: domain(name))


@blueprint.route("/domains/<name>", methods=["POST"])
@require(CURATE)
def domain_update(name: str) -> Any:
    form = request.form
    alias = form.get("alias", "").strip()
    try:
        validate_trap_expressions(form.get("crawlertraps", ""))
    except CrawlerTrapError as exc:
        # refused before anything is written: the page again, saying which line and why
        problem = say(exc.phrase) if exc.phrase is not None else str(exc)
        flash(f"{label('crawlertraps')}: {problem}", "error")
        refuse("crawlertraps", problem)
        return domain(name), 400

    def change(conn: Connection) -> None:
        repository = _domains(conn)
        # saving the form keeps the alias as it was confirmed; only the renew button confirms it again
        unchanged = alias == (repository.get(name).alias_of or "") and form.get("renew") != "1"
        repository.edit(name, _edition(), comments=form.get("comments"), crawlertraps=form.get("crawlertraps"),
                        alias_of=None if unchanged else alias or None,
                        clear_alias="alias" in form and not alias and not unchanged)
    return _write(change, "Domain saved.", url_for("definitions.domain", name=name), lambda: domain(name))


@blueprint.route("/domains/<name>/active", methods=["POST"])
@require(CURATE)
def domain_active(name: str) -> Any:
    active = request.form.get("active") == "1"
    return _write(lambda conn: _domains(conn).set_active(name, active, _edition()),
                  "Domain activated." if active else "Domain deactivated: snapshot harvests leave it out.",
                  url_for("definitions.domain", name=name))


@blueprint.route("/domains/<name>/delete", methods=["POST"])
@require(CURATE)
def domain_delete(name: str) -> Any:
    try:
        with database().begin() as conn:
            _domains(conn).delete(name, _edition())
    except (ApiError, HarvestSuiteError) as exc:
        flash(words(translate(exc))[1], "error")
        return redirect(url_for("definitions.domain", name=name))
    flash(_("Domain %(name)s deleted.", name=name))
    return redirect(url_for("definitions.domains"))


def _templates(conn: Connection) -> list[str]:
    return TemplateRepository(conn).names(active_only=True)


def _configuration_page(name: str, config: str | None) -> Any:
    with database().connect() as conn:
        current = _domains(conn).get(name)
        page = {"domain": current, "templates": _templates(conn),
                "seedlists": SeedListRepository(conn).list_for_domain(name),
                "configuration": ConfigurationRepository(conn).get(name, config) if config else None,
                "attribute_kinds": ATTRIBUTES, "attributes": {kind.name: kind.default for kind in ATTRIBUTES}}
        if config:
            config_id = page["configuration"].config_id
            page["attributes"] = CrawlAttributeRepository(conn).of_configuration(config_id).values()
            audit = AuditRepository(conn)
            page["changes"] = sorted(
                [*audit.changes_of("configurations", config_id),
                 *audit.changes_of(ATTRIBUTES_AUDIT_TABLE, audit_key(CONFIGURATION_TREE, config_id))],
                key=lambda change: (change.changed_at, change.audit_id), reverse=True)
    return render_template("definitions/domains_configuration.html", **page)


@blueprint.route("/domains/<name>/configurations/<config>")
@require(READ)
def configuration(name: str, config: str) -> Any:
    return _configuration_page(name, config)


@blueprint.route("/domains/<name>/new-configuration")
@require(READ)
def configuration_new(name: str) -> Any:
    return _configuration_page(name, None)


@blueprint.route("/domains/<name>/new-configuration", methods=["POST"])
@require(CURATE)
def configuration_create(name: str) -> Any:
    form = request.form
    new = form.get("name", "").strip()

    def change(conn: Connection) -> None:
        attributes = _form_attributes()
        ConfigurationRepository.from_settings(conn, settings(), actor()).create(
            name, new, form.get("template", ""), form.getlist("seedlists"), _edition(),
            maxobjects=_limit("max_objects"), maxbytes=_limit("max_bytes"), comments=form.get("comments", ""),
            crawl_attributes=attributes)
    return _write(change, f"Configuration {new} created.", url_for("definitions.domain", name=name),
                  lambda: _configuration_page(name, None))


@blueprint.route("/domains/<name>/configurations/<config>", methods=["POST"])
@require(CURATE)
def configuration_update(name: str, config: str) -> Any:
    form = request.form

    def change(conn: Connection) -> None:
        attributes = _form_attributes()
        configurations = ConfigurationRepository.from_settings(conn, settings(), actor())
        updated = configurations.update(
            name, config, _edition(), template=form.get("template"), seedlists=form.getlist("seedlists"),
            maxobjects=_limit("max_objects"), maxbytes=_limit("max_bytes"), comments=form.get("comments"))
        CrawlAttributeRepository(conn, actor()).set_configuration(updated.config_id, attributes)
        if form.get("default") == "1":
            configurations.set_default(name, config, _edition() + 1)
    return _write(change, f"Configuration {config} saved.",
                  url_for("definitions.configuration", name=name, config=config),
                  lambda: _configuration_page(name, config))


def _form_attributes() -> dict[str, int]:
    """The configuration form's crawl attributes (harvestdef.crawlattributes.form_values): a box not ticked is
    false and an empty number the default, as NetarchiveSuite's form saves them."""
    return {name: value for name, value in form_values(request.form).items() if value is not None}


def _seedlist_page(name: str, listname: str | None) -> Any:
    with database().connect() as conn:
        current = _domains(conn).get(name)
        seedlist = SeedListRepository(conn).get(name, listname) if listname else None
        changes = AuditRepository(conn).changes_of("seedlists", seedlist.seedlist_id) if seedlist else []
    return render_template("definitions/domains_seedlist.html", domain=current, seedlist=seedlist,
                           changes=changes)


@blueprint.route("/domains/<name>/seedlists/<listname>")
@require(READ)
def seedlist(name: str, listname: str) -> Any:
    return _seedlist_page(name, listname)


@blueprint.route("/domains/<name>/new-seedlist")
@require(READ)
def seedlist_new(name: str) -> Any:
    return _seedlist_page(name, None)


@blueprint.route("/domains/<name>/new-seedlist", methods=["POST"])
@require(CURATE)
def seedlist_create(name: str) -> Any:
    form = request.form
    new = form.get("name", "").strip()

    def change(conn: Connection) -> None:
        SeedListRepository.from_settings(conn, settings(), actor()).create(
            name, new, form.get("seeds", ""), _edition(), form.get("comments", ""))
    return _write(change, f"Seed list {new} created.", url_for("definitions.domain", name=name),
                  lambda: _seedlist_page(name, None))


@blueprint.route("/domains/<name>/seedlists/<listname>", methods=["POST"])
@require(CURATE)
def seedlist_update(name: str, listname: str) -> Any:
    form = request.form

    def change(conn: Connection) -> None:
        SeedListRepository.from_settings(conn, settings(), actor()).update(
            name, listname, _edition(), seeds=form.get("seeds"), comments=form.get("comments"))
    return _write(change, f"Seed list {listname} saved.",
                  url_for("definitions.seedlist", name=name, listname=listname),
                  lambda: _seedlist_page(name, listname))
