"""The API's phrases (webui/api/phrases.py) in the page's language: what a change does
(webui/api/changelist.py), why a control action cannot be taken (webui/api/jobcontrol.py), what holds a
running crawl back (webui/api/live.py) and why a job has no QA report (webui/qa.py).

The job page says each phrase with the ``phrase`` filter when it is drawn, and hands static/live.js every
template in its language (``phrase_templates``), so an update says them alike; the JSON stays English.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask
from flask_babel import gettext

from webui import qa
from webui.api import changelist, jobcontrol, live
from webui.phrasing import say_from

_BOOKS = (changelist.PHRASES, jobcontrol.PHRASES, live.PHRASES, qa.PHRASES)
# code -> English template (the catalogue's msgid); no code is in two books
TEMPLATES: Mapping[str, str] = {code: template for book in _BOOKS for code, template in book.items()}
assert len(TEMPLATES) == sum(map(len, _BOOKS)), "a phrase code is in two books"


def say(phrase: Mapping[str, Any] | None, english: str = "") -> str:
    """A phrase's JSON ({"code", "values"}) in the page's language; ``english`` where there is no phrase or its
    code is unknown (an answer of another version)."""
    return say_from(TEMPLATES, phrase, english)


def phrase_templates() -> dict[str, str]:
    """Every phrase's template in the page's language, by code, for static/live.js."""
    return {code: gettext(template) for code, template in TEMPLATES.items()}


def init_app(app: Flask) -> None:
    app.jinja_env.filters["phrase"] = say
    app.jinja_env.globals["phrase_templates"] = phrase_templates
