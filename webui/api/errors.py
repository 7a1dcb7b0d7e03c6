"""The API's errors: ``{"error": {"code", "message", "field"}}`` with the matching 4xx status.

HarvestSuite's own errors are translated here, at the one boundary between the repositories and the API
(style.md: errors translated at one boundary).
"""

from __future__ import annotations

from typing import Any

from flask import jsonify
from werkzeug.exceptions import HTTPException

from harvestdef.errors import (
    ConflictError,
    HarvestSuiteError,
    IllegalTransitionError,
    NotFoundError,
    StaleEditionError,
    StaleJobError,
    ValidationError,
)

STATUS_OF_CODE = {"unauthorized": 401, "forbidden": 403, "not_found": 404, "invalid": 400, "conflict": 409}


class ApiError(Exception):
    """An error a view raises on purpose: ``code`` is one of STATUS_OF_CODE; ``field`` names the input."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        if code not in STATUS_OF_CODE:
            raise ValueError(f"unknown API error code {code!r}")
        self.code = code
        self.message = message
        self.field = field


def error_response(code: str, message: str, field: str | None, status: int | None = None) -> Any:
    response = jsonify({"error": {"code": code, "message": message, "field": field}})
    response.status_code = status or STATUS_OF_CODE[code]
    return response


def translate(error: Exception) -> ApiError:
    """The API error of one of ours (or of Werkzeug's HTTP errors)."""
    if isinstance(error, ApiError):
        return error
    field = getattr(error, "field", None)
    if isinstance(error, NotFoundError):
        return ApiError("not_found", str(error), field)
    if isinstance(error, ConflictError | StaleEditionError | StaleJobError | IllegalTransitionError):
        return ApiError("conflict", str(error), field)
    if isinstance(error, ValidationError):
        return ApiError("invalid", str(error), field)
    if isinstance(error, HTTPException):
        code = {401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict"}.get(error.code or 400,
                                                                                                "invalid")
        return ApiError(code, error.description or error.name)
    if isinstance(error, HarvestSuiteError):
        return ApiError("invalid", str(error), field)
    raise error
