"""Why a harvest waits, runs no more, was generated or was deactivated, said in the page's language.

Every such reason is a phrase of harvestdef/harvestreasons.py. The scheduler stores it in English beside its
phrase's JSON (harvest_state.reason and reason_phrase, job_dedup_sources.refusal and refusal_phrase), and the
API answers both; a page says the phrase by its code. A reason stored without a phrase (a row written
before phrases were stored, or by another program) is shown as the English it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask_babel import gettext as _

from harvestdef.harvestreasons import TEMPLATES, from_stored
from harvestdef.phrases import Phrase
from webui.phrasing import say_from


def reason(phrase: Phrase | Mapping[str, Any] | str | None, english: str | None = "") -> str:
    """A reason in the page's language: ``phrase`` as a Phrase, its JSON, or that JSON as stored (text);
    ``english`` where there is none, or it is of another book."""
    said = phrase.json() if isinstance(phrase, Phrase) else from_stored(phrase) if isinstance(phrase, str) else phrase
    return say_from(TEMPLATES, said, english or "")


def state_name(state: str | None) -> str:
    """A harvest's state (scheduler.readiness: waiting, generating, ...) in the page's language."""
    names = {"waiting": _("waiting"), "generating": _("generating"), "generated": _("generated"),
             "deactivated": _("deactivated"), "finished": _("finished")}
    return "" if state is None else names.get(state, state)
