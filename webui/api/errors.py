"""The one boundary where errors become answers: ``{"error": {"code", "message", "field"}}`` with its status.

The rule:

- what the client can fix is a 4xx naming the field where there is one: ApiError raised by a view,
  ValidationError (FieldError names its field), NotFoundError, ConflictError, StaleEditionError,
  StaleJobError, IllegalTransitionError, and Werkzeug's 4xx (unknown path, wrong method, body too large);
- a name taken is a 409 that says which name is taken where ("a seed list named news already exists on
  domain kb.dk"), naming the field, never with the database's text: a ConflictError of the repositories,
  or a unique key the database refused that no repository translated (harvestdef.db.uniqueness reads
  SQLite's and PostgreSQL's errors alike); a stale edition names the object and who changed it
  (StaleEditionError);
- a database that does not answer for now is a 503 with its sentence, which says why and to try again:
  locked by other writers past harvestsuite.database.lockTimeout (DatabaseBusyError, on SQLite and
  PostgreSQL), a server that refused or dropped the connection (DatabaseUnavailableError); a SQLAlchemy
  error that means either is told as such (harvestdef.db.availability). Nobody's fault, and no bug;
- everything else (DatabaseError, a failed queue or archive store, any exception we did not raise on
  purpose) is the server's fault: a 500 whose body says only "internal error" and an error id. The log
  gets the id with the traceback; the client never sees SQL, parameters, paths or the exception's text.

The pages (webui/definitions/, webui/status/) use the same ``translate``, so a flashed message or an error
page follows the same rule.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from flask import has_request_context, jsonify, request
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import HTTPException

from harvestdef.db.availability import unavailability
from harvestdef.db.uniqueness import sentence_phrase, unique_violation
from harvestdef.errors import (
    ConflictError,
    DatabaseBusyError,
    FieldError,
    IllegalTransitionError,
    NotFoundError,
    StaleEditionError,
    StaleJobError,
    ValidationError,
)
from harvestdef.phrases import Phrase, english

log = logging.getLogger(__name__)

STATUS_OF_CODE = {"invalid": 400, "unauthorized": 401, "forbidden": 403, "not_found": 404,
                  "method_not_allowed": 405, "conflict": 409, "too_large": 413, "unsupported_media_type": 415,
                  "too_many": 429,                   "internal": 500, "unavailable": 503}
_CODE_OF_STATUS = {status: code for code, status in STATUS_OF_CODE.items()}

# The schema's column names where the API's field has another name (a FieldError of harvestdef/db/guard.py
# names the column it was bound for).
FIELD_OF_COLUMN = {"maxobjects": "max_objects", "maxbytes": "max_bytes", "maxrate": "max_rate",
                   "maxjobrunningtime": "max_running_time", "orderxml": "cxml", "trap_expression": "expressions"}


class ApiError(Exception):
    """An error a view raises on purpose: ``code`` is one of STATUS_OF_CODE; ``field`` names the input.

    ``message`` is the English the JSON answers. ``phrase`` says the same for a page, in its language
    (harvestdef/phrases.py; webui/refusal_words.py): where ``field`` is named, it says only what is wrong,
    since a page says which field by the field's label. A message given as a phrase is both."""

    def __init__(self, code: str, message: str | Phrase, field: str | None = None, error_id: str | None = None,
                 *, phrase: Phrase | None = None) -> None:
        super().__init__(english(message))
        if code not in STATUS_OF_CODE:
            raise ValueError(f"unknown API error code {code!r}")
        self.code = code
        self.message = english(message)
        self.field = field
        self.error_id = error_id
        self.phrase = phrase or (message if isinstance(message, Phrase) else None)

    @property
    def status(self) -> int:
        return STATUS_OF_CODE[self.code]


def error_response(code: str, message: str, field: str | None, status: int | None = None,
                   error_id: str | None = None) -> Any:
    error: dict[str, Any] = {"code": code, "message": message, "field": field}
    if error_id is not None:
        error["id"] = error_id
    response = jsonify({"error": error})
    response.status_code = status or STATUS_OF_CODE[code]
    return response


def is_client_error(error: BaseException) -> bool:
    """Whether the client caused ``error`` and can fix it (a 4xx), rather than the server (a 500)."""
    if isinstance(error, ApiError):
        return error.status < 500
    if isinstance(error, HTTPException):
        return error.code is not None and error.code < 500
    return isinstance(error, ValidationError | NotFoundError | ConflictError | StaleEditionError | StaleJobError
                      | IllegalTransitionError)


def translate(error: Exception) -> ApiError:
    """The answer to ``error``: a 4xx ApiError naming the field, or, for anything the client did not cause,
    an "internal" one with an error id under which the traceback is logged here."""
    if isinstance(error, ApiError):
        return error
    unavailable = error if isinstance(error, DatabaseBusyError) else unavailability(error)
    if unavailable is not None:
        # Not the client's fault, yet no bug either: a 503 whose sentence says why and to try again.
        where = f"{request.method} {request.path}" if has_request_context() else "a request"
        log.warning("%s answered 503: %s", where, unavailable)
        return ApiError("unavailable", str(unavailable))
    violation = unique_violation(error) if isinstance(error, SQLAlchemyError) else None
    if violation is not None:
        # a unique key no repository translated (a race between two requests): still the client's to retry
        return ApiError("conflict", sentence_phrase(violation), violation.key.field)
    if not is_client_error(error):
        return internal_error(error)
    field = getattr(error, "field", None)
    if isinstance(error, FieldError):
        field = FIELD_OF_COLUMN.get(error.field, error.field)
        return ApiError("invalid", f"{field}: {error.problem}", field, phrase=error.phrase)
    said = getattr(error, "phrase", None)
    if isinstance(error, NotFoundError):
        return ApiError("not_found", str(error), field, phrase=said)
    if isinstance(error, ConflictError | StaleEditionError | StaleJobError | IllegalTransitionError):
        return ApiError("conflict", str(error), field, phrase=said)
    if isinstance(error, HTTPException):
        status = error.code or 400
        return ApiError(_CODE_OF_STATUS.get(status, "invalid"), error.description or error.name)
    return ApiError("invalid", str(error), field, phrase=said)


def internal_error(error: BaseException) -> ApiError:
    """Log ``error`` with its traceback under a new error id; the ApiError that tells the client only the id."""
    error_id = secrets.token_hex(6)
    log.error("internal error %s: %s: %s", error_id, type(error).__name__, error,
              exc_info=(type(error), error, error.__traceback__))
    return ApiError("internal", f"internal error {error_id}: the request could not be carried out; the web UI's "
                                f"log has the details under this id", None, error_id)
