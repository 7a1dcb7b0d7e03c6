"""What a route answers, declared beside the route: ``@answers(SCHEMA)`` puts the JSON Schema of its success
answer where ``/api/v1/openapi.json`` (webui/api/openapi.py) finds it, as ``@takes`` does its query
parameters; tests/webui/test_api_fuzz.py checks every answer against it.

The helpers build the schemas the routes share: an object and its required fields, a page of items with
its cursor (webui/api/core.py), a list of items without one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

STRING: dict[str, Any] = {"type": "string"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
INTEGER: dict[str, Any] = {"type": "integer"}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
TIME: dict[str, Any] = {"type": "string", "description": "ISO 8601, UTC (Z)"}
PHRASE: dict[str, Any] = {"type": ["object", "null"],
                          "description": "the same words as {code, values}, for a page in another language; null "
                                         "where they were stored without"}


def nullable(schema: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    """``schema`` or null (``description`` says what null means)."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    made = {**schema, "type": [*kinds, "null"]}
    if description:
        made["description"] = description
    return made


def described(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {**schema, "description": description}


def shape(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """An object with these properties, of which ``required`` are always there (none: all of them)."""
    return {"type": "object", "properties": properties, "required": list(required or properties)}


def page_of(item: dict[str, Any], **more: dict[str, Any]) -> dict[str, Any]:
    """A page of items and the cursor of the next (null on the last page), with ``more`` fields beside."""
    return shape({"items": {"type": "array", "items": item},
                  "next": nullable(STRING, "the cursor of the next page: pass it as ?after=; null on the last"),
                  **more})


def list_of(item: dict[str, Any]) -> dict[str, Any]:
    """All the items in one answer: lists that stay short (channels, trap lists, users)."""
    return shape({"items": {"type": "array", "items": item}})


def answers(schema: dict[str, Any]) -> Callable[[_F], _F]:
    """Declare the JSON Schema of a route's success answer (put it right under the route decorator)."""
    def declare(view: _F) -> _F:
        view.answer_schema = schema  # type: ignore[attr-defined]
        return view
    return declare


def answer_schema(view: Any) -> dict[str, Any] | None:
    return getattr(view, "answer_schema", None)
