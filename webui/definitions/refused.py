"""Refused lines on a form's page: a form whose seeds or domain names were refused is shown again with
what was typed still in it, the summary flashed, and every refused line (number, line, reason) listed under
it by ``definitions/refused_lines.html``. The API answers the same refusals as a list (webui/api/refusals.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import flash, g

from harvestdef.errors import RefusedLinesError
from webui.formfields import refuse


def show_refusals(error: RefusedLinesError, page: Callable[[], Any]) -> tuple[Any, int]:
    """``page()`` again, status 400, with the refusals of ``error`` for its refused_lines.html to list."""
    g.refused = error
    flash(error.summary, "error")
    refuse(error.field, error.summary)
    return page(), 400
