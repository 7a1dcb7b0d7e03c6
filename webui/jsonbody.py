"""The JSON the web UI reads: bounded in nesting before it is parsed, and checked after.

Flask's JSON parser recurses once per ``[`` or ``{``: 5,000 of them exhaust Python's stack, a
RecursionError deep inside the parser. So ``JsonBodyProvider.loads`` counts the nesting of the raw text
first and refuses more than MAX_JSON_DEPTH levels; then it walks the parsed value and refuses what no
column can hold, naming the top-level field and the JSON path: text with a NUL or a lone surrogate, and
integers outside 64 bits. A column's own limits (varchar length, 32-bit integers) are checked where the
value is written (harvestdef/db/guard.py).
"""

from __future__ import annotations

import re
from typing import Any

from flask.json.provider import DefaultJSONProvider

from harvestdef.errors import FieldError
from harvestdef.validation import INT64, MAX_JSON_DEPTH, check_text

# strings (skipped whole, escapes included) and the brackets outside them
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def check_nesting(text: str | bytes) -> None:
    """FieldError unless ``text`` nests arrays and objects at most MAX_JSON_DEPTH deep."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = 0
    for match in _TOKENS.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise FieldError("body", f"arrays and objects nest at most {MAX_JSON_DEPTH} deep")
        elif token in (b"]", b"}"):
            depth -= 1


def check_value(value: Any, path: str, field: str) -> None:
    """Refuse text and numbers in ``value`` that cannot be stored, naming ``field`` and the JSON ``path``."""
    if isinstance(value, str):
        try:
            check_text(value, field)
        except FieldError as exc:
            raise FieldError(field, f"{path} {exc.problem}") from None
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if not INT64[0] <= value <= INT64[1]:
            raise FieldError(field, f"{path} must be between {INT64[0]} and {INT64[1]}, not {value}")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_value(key, path, field)
            check_value(item, f"{path}.{key}", field)
    elif isinstance(value, list):
        for number, item in enumerate(value):
            check_value(item, f"{path}[{number}]", field)


class JsonBodyProvider(DefaultJSONProvider):
    """Flask's JSON provider whose ``loads`` bounds nesting and checks the values (module docstring)."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        check_nesting(s)
        value = super().loads(s, **kwargs)
        if isinstance(value, dict):
            for key, item in value.items():
                check_value(key, "a field name", "body")
                check_value(item, str(key), str(key))
        else:
            check_value(value, "body", "body")
        return value
