"""A refusal in the page's language: the words a form page shows beside the refused field and in the
summary at its top, said from the error's phrase (harvestdef/phrases.py) by the catalogue.

The JSON API answers the English message; an error of harvestdef or an ApiError of the API's views carries
beside it a phrase, which ``say`` fills in with gettext, its values (a nested phrase, a list of them)
said alike. The phrase of an error that names a field says only what is wrong with it: beside the field
that is enough, and the summary names the field by its label (FIELD_LABELS) rather than by the API's
name for it. An error without a phrase is shown in its English, as the API gives it.
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_babel import gettext, lazy_gettext

from harvestdef.errors import LineRefusal, RefusedLinesError
from harvestdef.phrases import Phrase
from webui.api.errors import ApiError

# The API's field names as the forms label them (short forms of the labels beside the fields).
FIELD_LABELS: dict[str, Any] = {
    "name": lazy_gettext("Name"), "comments": lazy_gettext("Comments"), "alias": lazy_gettext("Alias of"),
    "max_objects": lazy_gettext("Max objects"), "max_bytes": lazy_gettext("Max bytes"),
    "maxobjects": lazy_gettext("Max objects"), "maxbytes": lazy_gettext("Max bytes"),
    "max_running_time": lazy_gettext("Max seconds per job"), "template": lazy_gettext("Crawl template"),
    "template_name": lazy_gettext("Crawl template"), "schedule": lazy_gettext("Schedule"),
    "numtimeunits": lazy_gettext("Every"), "timeunit": lazy_gettext("Unit"),
    "maxrepeats": lazy_gettext("Number of harvests"), "startdate": lazy_gettext("Begin at (UTC)"),
    "enddate": lazy_gettext("End at (UTC)"), "ondayofweek": lazy_gettext("Day of week (weekly schedules)"),
    "ondayofmonth": lazy_gettext("Day of month (monthly schedules)"), "onhour": lazy_gettext("Time"),
    "onminute": lazy_gettext("Time"), "attime": lazy_gettext("Time"), "crawlertraps": lazy_gettext("Crawler traps"),
    "seedlists": lazy_gettext("Seed lists"), "seeds": lazy_gettext("Seeds"), "names": lazy_gettext("Domains"),
    "domains": lazy_gettext("Domains"), "expressions": lazy_gettext("Expressions"), "cxml": lazy_gettext("XML"),
    "url": lazy_gettext("URL"), "secret": lazy_gettext("Secret"), "channel": lazy_gettext("Channel"),
    "datatype": lazy_gettext("Type"), "defaultvalue": lazy_gettext("Default value"),
    "maxlen": lazy_gettext("Maximum length"), "options": lazy_gettext("Options"),
    "edition": lazy_gettext("Edition"), "description": lazy_gettext("Description"),
    "audience": lazy_gettext("Audience"), "events": lazy_gettext("Events"), "fullname": lazy_gettext("Full name"),
    "password": lazy_gettext("Password"), "repeated_password": lazy_gettext("Password again"),
    "role": lazy_gettext("Role"), "max_hops": lazy_gettext("Max hops"),
    "honor_robots_dot_txt": lazy_gettext("robots.txt"), "extract_javascript": lazy_gettext("JavaScript"),
    "previous": lazy_gettext("Previous harvest"), "configurations": lazy_gettext("Configurations"),
}


def say(phrase: Phrase) -> str:
    """``phrase`` in the page's language (its English where the catalogue lacks it)."""
    return gettext(phrase.template) % {name: _said(value) for name, value in phrase.values.items()}


def _said(value: Any) -> Any:
    if isinstance(value, list):
        return ", ".join(str(_said(part)) for part in value)
    return say(value) if isinstance(value, Phrase) else value


def label(field: str) -> str:
    """The form's label of the API's ``field``, else the field's name; an extended field's value
    (``values.NAME``) is called by its name."""
    if field.startswith("values."):
        return field.removeprefix("values.")
    return str(FIELD_LABELS.get(field, field))


def words(error: ApiError) -> tuple[str, str]:
    """What a page shows of a refusal: (beside the field, the summary at the top)."""
    if error.phrase is None:
        summary = error.message
        if error.field and not error.message.startswith(error.field):
            summary = f"{error.field}: {error.message}"
        return error.message, summary
    problem = say(error.phrase)
    return problem, f"{label(error.field)}: {problem}" if error.field else problem


def line_reason(refusal: LineRefusal) -> str:
    """Why a line was refused, in the page's language."""
    return say(refusal.phrase) if refusal.phrase is not None else refusal.reason


def lines_summary(error: RefusedLinesError) -> str:
    """The summary of refused lines (what, how many, nothing stored) in the page's language."""
    return say(error.summary_phrase)


def refused_what(error: RefusedLinesError) -> str:
    """What input the refused lines were of ("seeds", "domain names"), in the page's language."""
    return say(error.what_phrase) if error.what_phrase is not None else error.what


def init_app(app: Flask) -> None:
    app.jinja_env.filters.update(line_reason=line_reason, refused_what=refused_what)


def said(error: BaseException) -> str:
    """An error's words in the page's language: its phrase said, else its message as it is."""
    phrase = getattr(error, "phrase", None)
    if isinstance(phrase, Phrase):
        return say(phrase)
    return str(getattr(error, "message", error))
