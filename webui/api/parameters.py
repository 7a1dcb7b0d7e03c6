"""The query parameters of the API's routes: declared once per route, read only through that declaration.

A route lists what it takes with ``@takes(LIMIT, AFTER, ...)``; ``/api/v1/openapi.json`` describes each
one from that list (name, type, required, description), and the views read them with ``query(name)``,
which refuses a name its route did not declare, a value outside the parameter's ``enum``, and for an
integer parameter a value that is not a whole number within 64 bits. So a
parameter cannot be read without being described: the API's modules never touch ``request.args``
themselves (tests/webui/test_openapi.py checks both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from flask import current_app, request

from harvestdef.validation import INT64
from webui.api.errors import ApiError

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class QueryParameter:
    name: str
    type: str  # a JSON Schema type: "string" or "integer"
    description: str
    required: bool = False
    enum: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        """This parameter as an OpenAPI 3.1 parameter object."""
        schema: dict[str, Any] = {"type": self.type}
        if self.enum:
            schema["enum"] = list(self.enum)
        return {"name": self.name, "in": "query", "required": self.required, "description": self.description,
                "schema": schema}


class UndeclaredQueryParameter(RuntimeError):
    """A view read a query parameter its route does not declare: a programming error, never the client's."""


def takes(*parameters: QueryParameter) -> Callable[[_F], _F]:
    """Declare the query parameters of a route (put it right under the route decorator)."""
    names = [parameter.name for parameter in parameters]
    if len(set(names)) != len(names):
        raise ValueError(f"query parameters declared twice: {names}")

    def declare(view: _F) -> _F:
        view.query_parameters = tuple(parameters)  # type: ignore[attr-defined]
        return view
    return declare


def declared(view: Any) -> tuple[QueryParameter, ...]:
    return getattr(view, "query_parameters", ())


def query(name: str, default: str | None = None) -> str | None:
    """The query parameter ``name`` of this request (``default`` when absent); the route must declare it.
    A value outside a declared ``enum``, or an integer parameter's value that is not a whole number within
    64 bits, is the client's error (400, naming the parameter)."""
    view = current_app.view_functions.get(request.endpoint or "")
    parameter = next((p for p in declared(view) if p.name == name), None)
    if parameter is None:
        raise UndeclaredQueryParameter(f"{request.endpoint} reads the query parameter {name!r}, which its route "
                                       f"does not declare with @takes")
    value = request.args.get(name, default)
    if parameter.type == "integer" and value is not None and value.strip():
        _check_integer(name, value)
    if parameter.enum and value is not None and value not in parameter.enum:
        raise ApiError("invalid", f"{name} must be one of {', '.join(parameter.enum)}, not {value!r}", name)
    return value


def _check_integer(name: str, text: str) -> None:
    """An integer parameter's text: a whole number within 64 bits, or an invalid error naming it."""
    stripped = text.strip()
    if not (stripped.isascii() and stripped.lstrip("+-").isdigit()) or len(stripped) > 25 \
            or not INT64[0] <= int(stripped) <= INT64[1]:
        raise ApiError("invalid", f"{name} must be a whole number between {INT64[0]} and {INT64[1]}, "
                                  f"not {text[:40]!r}", name)
