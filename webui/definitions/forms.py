"""What the definitions forms share: turning a form into an API request body, and showing a form again
with its error when the input is refused (what was typed and the refusal beside its field: webui/formfields.py).

A form and a JSON call go through the same checks (webui/api/), so these helpers only translate between
form fields and request bodies and between errors and flashed messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import flash, request

from harvestdef.errors import HarvestSuiteError
from harvestdef.phrases import N_, phrase
from harvestdef.validation import check_integer
from webui.api.errors import ApiError, is_client_error, translate
from webui.formfields import refuse
from webui.refusal_words import words

FORM_INTEGERS = ("numtimeunits", "onminute", "onhour", "ondayofweek", "ondayofmonth", "maxrepeats",
                 "max_objects", "max_bytes", "max_running_time", "edition")


def attempt(action: Callable[[], Any], page: Callable[[], Any]) -> Any:
    """Run ``action`` (one transaction); on bad input show ``page`` again with what was typed, the error at
    the top and beside the field it names, status 400/409. An error that is not the input's (the database
    failed) goes on to the app's error boundary: a 500."""
    try:
        return action()
    except (ApiError, HarvestSuiteError) as error:
        if not is_client_error(error):
            raise
        return show_refused(error, page)


def show_refused(error: Exception, page: Callable[[], Any]) -> tuple[Any, int]:
    """``page()`` again for input the client can fix: ``error`` flashed at the top and kept beside the field
    it names, what was typed still in the form, both in the page's language (webui/refusal_words.py); with
    the error's status (400, 404, 409)."""
    translated = translate(error)
    beside, summary = words(translated)
    flash(summary, "error")
    refuse(translated.field, beside)
    return page(), translated.status


def form_integer(name: str, text: str) -> int:
    """A form field that must be a whole number (digits, an optional sign): ``1e23`` or ``2.0`` is refused
    naming the field, as is one outside 64 bits (the column's own width is checked where it is written)."""
    stripped = text.strip()
    if not stripped.lstrip("+-").isdigit() or not stripped.isascii() or len(stripped) > 25:
        raise ApiError("invalid", f"{name} must be a whole number, not {text[:40]!r}", name,
                       phrase=phrase(N_("must be a whole number, not %(text)s"), text=repr(text[:40])))
    return check_integer(int(stripped), name)


def form_edition() -> int:
    """The edition the form was read at (its hidden ``edition`` field): required, as the API requires it, so a
    form sent without it is refused naming it rather than taken as a stale edition or applied blindly."""
    text = request.form.get("edition", "").strip()
    if not text:
        raise ApiError("invalid", "edition is required: the form was sent without the edition it was read at; "
                                  "reload the page and make the change again", "edition",
                       phrase=phrase(N_("is required: the form was sent without the edition it was read at; reload "
                                        "the page and make the change again")))
    return form_integer("edition", text)


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
            data[name] = form_integer(name, value)
        else:
            data[name] = value
    return data
