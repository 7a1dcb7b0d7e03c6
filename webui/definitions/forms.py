"""What the definitions forms share: turning a form into an API request body, and showing a form again
with its error when the input is refused.

A form and a JSON call go through the same checks (webui/api/), so these helpers only translate between
form fields and request bodies and between errors and flashed messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import flash, request

from harvestdef.errors import HarvestSuiteError
from webui.api.errors import ApiError, translate

FORM_INTEGERS = ("numtimeunits", "onminute", "onhour", "ondayofweek", "ondayofmonth", "maxrepeats",
                 "max_objects", "max_bytes", "max_running_time", "edition")


def _message(error: Exception) -> str:
    if isinstance(error, ApiError):
        return f"{error.field}: {error.message}" if error.field else error.message
    return str(error)


def attempt(action: Callable[[], Any], page: Callable[[], Any]) -> Any:
    """Run ``action`` (one transaction); on bad input show ``page`` again with the error, status 400/409."""
    try:
        return action()
    except (ApiError, HarvestSuiteError) as error:
        translated = translate(error)
        flash(_message(error), "error")
        status = {"conflict": 409, "not_found": 404}.get(translated.code, 400)
        return page(), status


def form_data(names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The form's fields as an API body: integers where the API wants them, empty fields left out."""
    data: dict[str, Any] = {}
    for name, value in request.form.items():
        if name == "csrf_token" or (names is not None and name not in names):
            continue
        value = value.strip()
        if value == "":
            continue
        if name in FORM_INTEGERS:
            try:
                data[name] = int(value)
            except ValueError:
                raise ApiError("invalid", f"{name} must be a whole number, not {value!r}", name) from None
        else:
            data[name] = value
    return data
