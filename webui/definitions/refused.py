"""Refused lines on a form's page: a form whose seeds or domain names were refused is shown again with
what was typed still in it, the summary flashed, and every refused line (number, line, reason) listed under
it by ``definitions/refused_lines.html``, all in the page's language (webui/refusal_words.py). The API
answers the same refusals as a list (webui/api/refusals.py), in English.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import flash, g

from harvestdef.errors import RefusedLinesError
from webui.formfields import refuse
from webui.refusal_words import lines_summary


def show_refusals(error: RefusedLinesError, page: Callable[[], Any]) -> tuple[Any, int]:
    """``page()`` again, status 400, with the refusals of ``error`` for its refused_lines.html to list."""
    g.refused = error
    summary = lines_summary(error)
    flash(summary, "error")
    refuse(error.field, summary)
    return page(), 400
