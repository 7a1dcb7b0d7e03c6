"""Pages of the definitions section: global crawler traps, lists of regular expressions every harvest
leaves alone; created from a form or a file, activated, deactivated and downloaded.
"""

from __future__ import annotations

from typing import Any

from flask import Response, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _

from harvestdef.errors import CrawlerTrapError
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository
from webui.api.core import input_named
from webui.auth import CURATE, READ, require
from webui.context import actor, database
from webui.definitions import blueprint
from webui.definitions.forms import attempt
from webui.downloads import attachment


def _traps_page() -> str:
    with database().connect() as conn:
        lists = GlobalCrawlerTrapRepository(conn).all_lists()
    return render_template("definitions/traps.html", lists=lists)


@blueprint.route("/traps", methods=["GET", "POST"])
@require(READ)
def global_traps() -> Any:
    if request.method == "GET":
        return _traps_page()
    return _create_traps()


@require(CURATE)
def _create_traps() -> Any:
    def create() -> Any:
        uploaded = request.files.get("file")
        expressions = uploaded.read().decode("utf-8", "replace") if uploaded and uploaded.filename else \
            request.form.get("expressions", "")
        with database().begin() as conn, input_named("expressions", CrawlerTrapError):
            created = GlobalCrawlerTrapRepository(conn, actor()).create(
                request.form.get("name", ""), expressions, request.form.get("description", ""),
                request.form.get("active") == "1")
        flash(_("Crawler trap list %(name)s created.", name=created.name))
        return redirect(url_for("definitions.global_traps"))
    return attempt(create, _traps_page)


@blueprint.post("/traps/<name>/active")
@require(CURATE)
def traps_active(name: str) -> Any:
    with database().begin() as conn:
        GlobalCrawlerTrapRepository(conn, actor()).set_active(name, request.form.get("active") == "1")
    return redirect(url_for("definitions.global_traps"))


@blueprint.get("/traps/<name>/download")
@require(READ)
def download_traps(name: str) -> Any:
    with database().connect() as conn:
        trap_list = GlobalCrawlerTrapRepository(conn).get(name)
    return Response("\n".join(trap_list.expressions) + "\n", mimetype="text/plain",
                    headers=attachment(f"{trap_list.name}.txt"))
