"""A sentence said in English that a page says in its own language: a code naming its English template and
the values that fill it, each a figure, a name, a time, another phrase or a list of phrases (said joined by
", ").

The English templates are the web UI's catalogue's msgids (webui/translations/): they are marked with
``N_``, which pybabel extract reads (babel.cfg) and which does nothing at run time. harvestdef never
translates: its errors carry a phrase beside their English message (``ValidationError.phrase``), and the
web UI's pages say it in their language, while the JSON API answers the English.

A template's placeholders are ``%(name)s``; a literal per cent sign is written ``%%``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union


def N_(text: str) -> str:  # noqa: N802 - gettext's name for a string marked for the catalogue, not translated here
    """``text``, marked for the catalogue (README.md, Languages)."""
    return text


Value = Union[str, int, float, "Phrase", list["Phrase"]]


@dataclass(frozen=True)
class Phrase:
    """One sentence: ``code`` names its template in ``templates`` (English, with %(name)s placeholders)."""

    code: str
    templates: Mapping[str, str] = field(repr=False, compare=False)
    values: Mapping[str, Value] = field(default_factory=dict)

    @property
    def template(self) -> str:
        """The English template, the catalogue's msgid."""
        return self.templates[self.code]

    def english(self) -> str:
        return self.template % {name: _english(value) for name, value in self.values.items()}

    def json(self) -> dict[str, Any]:
        return {"code": self.code, "values": {name: _json(value) for name, value in self.values.items()}}

    def __str__(self) -> str:
        return self.english()


def _english(value: Value) -> Any:
    if isinstance(value, list):
        return ", ".join(part.english() for part in value)
    return value.english() if isinstance(value, Phrase) else value


def _json(value: Value) -> Any:
    if isinstance(value, list):
        return [part.json() for part in value]
    return value.json() if isinstance(value, Phrase) else value


def phrasebook(templates: Mapping[str, str]) -> Callable[..., Phrase]:
    """A maker of the phrases of ``templates``: ``say(code, **values)``."""
    def say(code: str, **values: Value) -> Phrase:
        if code not in templates:
            raise KeyError(f"no template {code!r}")
        return Phrase(code, templates, values)
    return say


def phrase(template: str, **values: Value) -> Phrase:
    """A phrase whose code is its own English template: a sentence said where it is raised, not looked up
    by code in a book (the errors of harvestdef and of the API's views). Mark ``template`` with ``N_``."""
    return Phrase(template, {template: template}, values)


def english(text: str | Phrase) -> str:
    """``text`` in English: a phrase said, a plain string as it is."""
    return text.english() if isinstance(text, Phrase) else text
