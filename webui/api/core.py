"""The ``/api/v1`` blueprint and what its views share: JSON bodies, keyset paging, editions.

Lists are ``{"items": [...], "next": CURSOR|null}``: the cursor is the last item's sort key, opaque to
clients (``?after=CURSOR``), so a page is one index range scan, never OFFSET or a count over millions of
rows.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from flask import Blueprint, request

from harvestdef.errors import FieldError, HarvestSuiteError, NotFoundError
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.domains import SEARCH_FIELDS
from harvestdef.validation import INT64, check_text, to_utc
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query
from webui.context import settings

blueprint = Blueprint("api", __name__, url_prefix="/api/v1")

_T = TypeVar("_T")
MAX_LIMIT = 1000
LIMIT = QueryParameter("limit", "integer", f"items per page, 1 to {MAX_LIMIT} (default: the pageSize setting)")
AFTER = QueryParameter("after", "string", "the previous page's cursor (its \"next\"): the page after it")
PAGED = (LIMIT, AFTER)
SEARCH_QUERY = QueryParameter("q", "string", "domain names to find: * matches any text (kultur*, *.gov.uk); in "
                                             "crawler traps or comments, text they contain")
SEARCH_FIELD = QueryParameter("field", "string", "where q is searched (default: name)", enum=SEARCH_FIELDS)


def body() -> dict[str, Any]:
    """The request's JSON object, or an invalid error saying what is wrong with it."""
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        raise ApiError("invalid", "the request body must be a JSON object (Content-Type: application/json)")
    return data


def field(data: dict[str, Any], name: str, kind: type | tuple[type, ...], required: bool = True,
          default: Any = None) -> Any:
    """``data[name]`` checked against ``kind``; an invalid error naming the field otherwise."""
    if name not in data or data[name] is None:
        if required:
            raise ApiError("invalid", f"{name} is required", name)
        return default
    value = data[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise ApiError("invalid", f"{name} must be {' or '.join(k.__name__ for k in kinds)}, not a boolean", name)
    if not isinstance(value, kinds):
        raise ApiError("invalid", f"{name} must be {' or '.join(k.__name__ for k in kinds)}, "
                                  f"not {type(value).__name__}", name)
    return value


def parse_time(text: str | None, name: str, end_of_day: bool = False) -> datetime | None:
    """An ISO 8601 date or time as an aware UTC datetime (UTC when it has no zone); None for no text. A bare
    date means its first moment, or with ``end_of_day`` its last, so ``until=2026-03-06`` includes that day.
    An invalid error naming ``name`` otherwise."""
    if text is None or not text.strip():
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ApiError("invalid", f"{name} must be an ISO 8601 time such as 2026-12-01T02:00:00Z (UTC when it "
                                  f"has no zone), not {text[:60]!r}", name,
                       phrase=phrase(N_("must be an ISO 8601 time such as 2026-12-01T02:00:00Z (UTC when it has no "
                                        "zone), not %(value)s"), value=repr(text[:60]))) from None
    if end_of_day and len(text.strip()) == len("2026-03-06"):
        value += timedelta(days=1, microseconds=-1)
    return to_utc(value, name)


def edition(data: dict[str, Any]) -> int:
    """The edition a PATCH was based on (required: a stale one is refused with 409)."""
    return field(data, "edition", int)


def encode_cursor(key: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key), default=str).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> list[Any] | None:
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        key = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after") from None
    if not isinstance(key, list) or not all(_is_cursor_value(value) for value in key):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    return key


def _is_cursor_value(value: Any) -> bool:
    """Whether ``value`` can be part of a cursor this API gave out: a name or a 64-bit id."""
    if isinstance(value, str):
        try:
            check_text(value, "after")
        except FieldError:
            return False
        return True
    return isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]


def limit() -> int:
    """``?limit=`` (default: the pageSize setting), 1 to MAX_LIMIT."""
    text = query("limit")
    if text is None:
        return settings().webui.pageSize
    try:
        value = int(text)
    except ValueError:
        raise ApiError("invalid", f"limit must be a whole number, not {text!r}", "limit") from None
    if not 1 <= value <= MAX_LIMIT:
        raise ApiError("invalid", f"limit must be between 1 and {MAX_LIMIT}", "limit")
    return value


def page(rows: Sequence[_T], size: int, key: Callable[[_T], Sequence[Any]],
         render: Callable[[_T], dict[str, Any]]) -> dict[str, Any]:
    """A page from ``rows``, which the caller fetched with ``size + 1`` as its LIMIT."""
    items = [render(row) for row in rows[:size]]
    following = encode_cursor(key(rows[size - 1])) if len(rows) > size else None
    return {"items": items, "next": following}


def jsonable(value: Any) -> Any:
    """Times as ISO 8601 UTC, enums (statuses, stop reasons) by name."""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, Enum):
        return value.name
    return value


@contextmanager
def input_named(name: str, *errors: type[HarvestSuiteError]) -> Iterator[None]:
    """An error of ``errors`` (default: NotFoundError) inside is the request's fault: 400 naming the field
    that carried it (a name that refers to nothing, a crawler trap that cannot be used)."""
    caught = errors or (NotFoundError,)
    try:
        yield
    except caught as exc:
        raise ApiError("invalid", str(exc), name, phrase=exc.phrase) from exc


def name_after() -> str | None:
    """The name of ``?after=`` in lists keyed by name (schedules, templates, harvests)."""
    key = decode_cursor(query("after"))
    if key is None:
        return None
    if len(key) != 1 or not isinstance(key[0], str):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    return key[0]
