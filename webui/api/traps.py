"""API routes: global crawler traps, the lists of regular expressions every job's crawl template gets while
they are active, as the traps page (webui/definitions/traps.py) shows them, through the same
GlobalCrawlerTrapRepository reads. Read only: curators change them on that page.
"""

from __future__ import annotations

from typing import Any

from harvestdef.model.definitions import GlobalCrawlerTrapList
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository
from webui.api.core import blueprint
from webui.api.shapes import BOOLEAN, COUNT, STRING, answers, list_of, shape
from webui.auth import READ, require
from webui.context import database

_TRAP_LIST = {"name": STRING, "description": STRING, "active": BOOLEAN, "expression_count": COUNT}
TRAP_LIST = shape(_TRAP_LIST)
TRAP_LIST_WITH_EXPRESSIONS = shape({**_TRAP_LIST, "expressions": {
    "type": "array", "items": STRING, "description": "regular expressions (Java's syntax), one per URL pattern"}})


def trap_list_json(trap_list: GlobalCrawlerTrapList, expressions: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {"name": trap_list.name, "description": trap_list.description,
                              "active": trap_list.isactive, "expression_count": len(trap_list.expressions)}
    if expressions:
        record["expressions"] = list(trap_list.expressions)
    return record


@blueprint.get("/traps")
@answers(list_of(TRAP_LIST))
@require(READ)
def list_traps() -> Any:
    """Global crawler trap lists by name: description, active or not, and how many expressions each holds."""
    with database().connect() as conn:
        lists = GlobalCrawlerTrapRepository(conn).all_lists()
    return {"items": [trap_list_json(trap_list) for trap_list in lists]}


@blueprint.get("/traps/<name>")
@answers(TRAP_LIST_WITH_EXPRESSIONS)
@require(READ)
def get_traps(name: str) -> Any:
    """One global crawler trap list with its expressions, one regular expression each, as its download has them."""
    with database().connect() as conn:
        trap_list = GlobalCrawlerTrapRepository(conn).get(name)
    return trap_list_json(trap_list, expressions=True)
