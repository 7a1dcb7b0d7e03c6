"""A refused form shown again as it was sent: every value typed, and each refusal beside its own field.

A page that refuses a POST renders its form again in the same request (``attempt`` of
webui/definitions/forms.py), so what was typed is still ``request.form``. ``refuse`` records the refusal
under the form field it names (an ApiError's ``field``, or the form's own name for it), and the macros of
webui/templates/_fields.html ask ``typed``, ``chosen`` and ``refusal`` for each field: the value typed when
the form was refused, else the stored value the page passes as default. The flashed message stays the
summary at the top of the page.

A page whose forms share field names (the users page: each user's role and password forms, and the form
that adds a user) names the form a field belongs to by the endpoint it is sent to (``form``): a refusal of
one form then neither marks the other's fields nor fills them with what was typed into the first.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, g, request

# API field names whose form field is called otherwise: the schedule form's one time of day holds the
# schedule's hour and minute.
FORM_FIELD_OF = {"maxobjects": "max_objects", "maxbytes": "max_bytes", "template_name": "template",
                 "onhour": "attime", "onminute": "attime"}


def refuse(field: str | None, message: str) -> None:
    """Record that the form sent in this request was refused, with ``message`` beside ``field`` (if any)."""
    g.form_refused = True
    if field and field.startswith("values."):  # an extended field's value: its form field is field:NAME
        field = "field:" + field.removeprefix("values.")
    if field:
        refusals: dict[str, str] = g.setdefault("field_refusals", {})
        refusals.setdefault(FORM_FIELD_OF.get(field, field), message)


def refused(form: str | None = None) -> bool:
    """Whether this request shows a form again that it refused; with ``form`` (the endpoint a form is sent
    to), whether the refused form was that one."""
    return bool(g.get("form_refused")) and request.method == "POST" and form in (None, request.endpoint)


def refusal(name: str, form: str | None = None) -> str | None:
    """The refusal to show beside the form field ``name`` (of ``form``), if the refused form's error named it."""
    return g.get("field_refusals", {}).get(name) if refused(form) else None


def typed(name: str, default: Any = "", form: str | None = None) -> Any:
    """What was typed into ``name`` (of ``form``) when the form was refused, else ``default`` (the stored
    value)."""
    if refused(form) and name in request.form:
        return request.form[name]
    return "" if default is None else default


def typed_list(name: str, default: list[str]) -> list[str]:
    """The values chosen for ``name`` (a multiple select, checkboxes) when refused, else ``default``."""
    if refused():
        return request.form.getlist(name)
    return default


def chosen(name: str, value: str, default: bool) -> bool:
    """Whether the radio button or checkbox ``name`` of ``value`` is ticked: as sent when the form was
    refused (an unticked box is not sent at all), else ``default``."""
    if refused():
        return value in request.form.getlist(name)
    return default


def init_app(app: Flask) -> None:
    app.jinja_env.globals.update(typed=typed, typed_list=typed_list, chosen=chosen, refusal=refusal,
                                 form_refused=refused)
