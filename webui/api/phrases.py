"""The API's phrases: a sentence the API says in English that a page says in its own language (the
Phrase of harvestdef/phrases.py, which the errors of harvestdef carry too).

The JSON API stays English (it is read by programs), so it answers the sentence in English and, beside it,
the phrase ({"code", "values"}), from which the job page (webui/live_words.py) and its script
(static/live.js) say it in the page's language. The English templates are the catalogue's msgids: they
are marked with ``N_``, which pybabel extract reads (babel.cfg) and which does nothing at run time.
"""

from __future__ import annotations

from harvestdef.phrases import N_, Phrase, Value, phrase, phrasebook

__all__ = ["N_", "Phrase", "Value", "phrase", "phrasebook"]
