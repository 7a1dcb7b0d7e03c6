"""A sentence the API says in English that a page says in its own language: a code naming its English template
and the values that fill it, each a figure, a name, a time, another phrase or a list of phrases (said joined
by ", ").

The JSON API stays English (it is read by programs), so it answers the sentence in English and, beside it,
the phrase ({"code", "values"}), from which the job page (webui/live_words.py) and its script
(static/live.js) say it in the page's language. The English templates are the catalogue's msgids: they
are marked with ``N_``, which pybabel extract reads (babel.cfg) and which does nothing at run time.
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

    def english(self) -> str:
        return self.templates[self.code] % {name: _english(value) for name, value in self.values.items()}

    def json(self) -> dict[str, Any]:
        return {"code": self.code, "values": {name: _json(value) for name, value in self.values.items()}}


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
