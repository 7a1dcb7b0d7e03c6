"""Pages of the definitions section that look across all definitions, as NetarchiveSuite's have them: the
alias summary with expired aliases marked, domains per TLD, and the configurations and seed lists nothing
uses.

Each page shows one keyset page of what the API serves (webui/api/summaries.py reads both), with a link
to the next page.
"""

from __future__ import annotations

from typing import Any

from flask import render_template, request

from webui.api.core import MAX_LIMIT
from webui.api.summaries import (
    alias_page,
    tld_page,
    unused_configuration_page,
    unused_counts,
    unused_seedlist_page,
)
from webui.auth import READ, require
from webui.context import database, settings
from webui.definitions import blueprint


@blueprint.get("/aliases")
@require(READ)
def aliases() -> Any:
    """Every alias with when it was confirmed and when it expires; expired ones are marked."""
    with database().connect() as conn:
        listed = alias_page(conn, request.args.get("after"), settings().webui.pageSize)
    return render_template("definitions/aliases.html", listed=listed)


@blueprint.get("/tlds")
@require(READ)
def tlds() -> Any:
    """Domains per TLD; a few thousand TLDs exist, so one page of MAX_LIMIT shows them all in practice."""
    with database().connect() as conn:
        listed = tld_page(conn, request.args.get("after"), MAX_LIMIT)
    return render_template("definitions/tlds.html", listed=listed)


@blueprint.get("/unused/<kind>")
@require(READ)
def unused(kind: str) -> Any:
    """Configurations (``kind`` configurations) or seed lists (``seedlists``) nothing uses, with counts."""
    pages = {"configurations": unused_configuration_page, "seedlists": unused_seedlist_page}
    if kind not in pages:
        return render_template("error.html", status=404,
                               message=f"no list of unused {kind!r}: configurations or seedlists"), 404
    with database().connect() as conn:
        listed = pages[kind](conn, request.args.get("after"), settings().webui.pageSize)
        counts = unused_counts(conn)
    return render_template("definitions/unused.html", kind=kind, listed=listed, counts=counts)
