"""A phrase's JSON ({"code", "values"}, harvestdef/phrases.py) said in the page's language with a book of
templates (code -> English template, the catalogue's msgid): the API's phrases (webui/live_words.py) and the
reasons of a harvest's state (webui/harvest_reasons.py) are said alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask_babel import gettext


def say_from(templates: Mapping[str, str], phrase: Mapping[str, Any] | None, english: str = "") -> str:
    """``phrase`` in the page's language; ``english`` where there is no phrase or ``templates`` does not know
    its code (an answer of another version)."""
    if not phrase or phrase.get("code") not in templates:
        return english
    values = {name: _said(templates, value) for name, value in phrase.get("values", {}).items()}
    return gettext(templates[phrase["code"]]) % values


def _said(templates: Mapping[str, str], value: Any) -> Any:
    """A phrase's value in the page's language: a nested phrase said, a list of them said and joined."""
    if isinstance(value, list):
        return ", ".join(str(_said(templates, part)) for part in value)
    return say_from(templates, value, str(value)) if isinstance(value, Mapping) else value
