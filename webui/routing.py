"""How the web UI's URLs address what they name, and what a request's address, query and form may carry.

- Names in paths (``/templates/<name>``, ``/schedules/<name>/...``) are read by NameConverter, the
  default converter of every rule: a name is everything between the rule's prefix and its suffix, so a
  name stored before names were refused '/' (harvestdef/validation.py) is still addressed, shown and
  downloaded; ``url_for`` writes such a name with its slashes as they are.
- ``<int:...>`` ids are whole numbers within 64 bits (BoundedIntegerConverter): a 23-digit job id finds
  no job (404) instead of overflowing SQLite's integers.
- A rule matches its path with or without a trailing slash (``strict_slashes`` off).
- ``refuse_unstorable_text`` refuses, naming the parameter, a path segment, query parameter or form field
  that holds a NUL character, which no database can look up or store as text.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, request
from werkzeug.routing import IntegerConverter, PathConverter

from harvestdef.validation import INT64, check_text


class NameConverter(PathConverter):
    """A name of one or more path segments (a stored name may hold '/'); never empty."""


class BoundedIntegerConverter(IntegerConverter):
    """A non-negative id that fits a 64-bit column: larger ones do not match the rule (404)."""

    def __init__(self, map: Any, fixed_digits: int = 0, min: int | None = None, max: int | None = None,
                 signed: bool = False) -> None:
        super().__init__(map, fixed_digits, min, INT64[1] if max is None else max, signed)


def refuse_unstorable_text() -> None:
    for name, value in (request.view_args or {}).items():
        if isinstance(value, str):
            check_text(value, name)
    for name, value in request.args.items(multi=True):
        check_text(value, name)
    if request.method in ("POST", "PUT", "PATCH") and request.mimetype in ("application/x-www-form-urlencoded",
                                                                          "multipart/form-data"):
        for name, value in request.form.items(multi=True):
            check_text(value, name)


def init_app(app: Flask) -> None:
    """Install the converters: before any blueprint adds its rules, which take them when they are added.
    The check of a request's text is installed apart, after authentication (webui/__init__.py)."""
    # A trailing slash, typed or trimmed, finds the same page: /definitions/harvests/ is the harvest list, as
    # /history and /status are their sections' pages, where Werkzeug's strict rule answered a bare 404.
    app.url_map.strict_slashes = False
    app.url_map.converters["default"] = NameConverter
    app.url_map.converters["string"] = NameConverter
    app.url_map.converters["int"] = BoundedIntegerConverter
