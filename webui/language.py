"""The language the pages speak: English and Danish (webui/translations), chosen per browser.

The choice is a cookie, not a column of the user: it needs no migration, it works on the login page before
anyone is known, and two people sharing a login each keep their own. Without the cookie the browser's
Accept-Language picks among the shipped languages; without a match, English. Only the pages are
translated: the JSON API stays English (it is read by programs), and times keep their one UTC format
(webui/formatting.py).

A new language is a catalogue under webui/translations (README.md says how) and an entry in ``LANGUAGES``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, abort, redirect, request
from flask_babel import Babel, get_locale, gettext

from webui.auth import check_form_csrf, safe_next
from webui.context import settings

# code -> the language's name in itself, as the switch shows it; English first, the default
LANGUAGES = {"en": "English", "da": "Dansk"}
DEFAULT_LANGUAGE = "en"
COOKIE = "harvestsuite_language"
COOKIE_LIFETIME = 365 * 24 * 3600
TRANSLATIONS = Path(__file__).parent / "translations"

blueprint = Blueprint("language", __name__)


def chosen_language() -> str:
    """The remembered choice, else the browser's best shipped language, else English."""
    remembered = request.cookies.get(COOKIE)
    if remembered in LANGUAGES:
        return remembered
    return request.accept_languages.best_match(LANGUAGES.keys()) or DEFAULT_LANGUAGE


def current_language() -> str:
    return str(get_locale() or DEFAULT_LANGUAGE)


@blueprint.route("/language", methods=["POST"])
def choose() -> Any:
    """Remember the language of the form's ``language`` field and go back to the page it was sent from."""
    check_form_csrf("language")
    language = request.form.get("language", "")
    if language not in LANGUAGES:
        abort(400, gettext("language %(language)s is not one of the shipped languages (%(shipped)s)",
                           language=repr(language), shipped=", ".join(LANGUAGES)))
    response = redirect(safe_next(request.form.get("next")))
    response.set_cookie(COOKIE, language, max_age=COOKIE_LIFETIME, httponly=True, samesite="Lax",
                        secure=settings().webui.secureCookies)
    return response


def init_app(app: Flask) -> None:
    Babel(app, locale_selector=chosen_language, default_translation_directories=str(TRANSLATIONS))
    app.jinja_env.globals.update(LANGUAGES=LANGUAGES, current_language=current_language)
    app.register_blueprint(blueprint)
