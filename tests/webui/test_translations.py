"""The catalogues of webui/translations: every marked string has a Danish translation, the template (.pot) holds
exactly what the templates and views mark, and the compiled .mo that the pages read is the .po compiled; so a
new string without its translation fails here, with the command that fixes it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from babel.messages.frontend import CommandLineInterface
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from webui.language import LANGUAGES, TRANSLATIONS

ROOT = Path(__file__).resolve().parents[2]
POT = TRANSLATIONS / "messages.pot"
TRANSLATED = sorted(code for code in LANGUAGES if code != "en")


def catalogue(path: Path, locale: str | None = None):
    with path.open("rb") as source:
        return read_po(source, locale=locale)


def msgids(catalog) -> set:
    return {message.id for message in catalog if message.id}


def test_the_template_holds_every_marked_string_of_the_pages(tmp_path):
    extracted = tmp_path / "messages.pot"
    CommandLineInterface().run(["pybabel", "-q", "extract", "-F", str(ROOT / "babel.cfg"), "-k", "lazy_gettext",
                                "-o", str(extracted), str(ROOT)])
    fresh, committed = msgids(catalogue(extracted)), msgids(catalogue(POT))
    assert len(fresh) > 400, "the extraction found almost nothing: is babel.cfg read from the checkout?"
    assert fresh == committed, (
        "webui/translations/messages.pot is out of date; run the extract and update commands of README.md "
        f"(Languages). New: {sorted(map(str, fresh - committed))}; gone: {sorted(map(str, committed - fresh))}")


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_string_has_a_translation_with_the_same_placeholders(language):
    translations = catalogue(TRANSLATIONS / language / "LC_MESSAGES" / "messages.po", language)
    assert not translations.fuzzy, "the catalogue's header is marked fuzzy: gettext would skip the whole file"
    wanted = msgids(catalogue(POT))
    assert wanted - msgids(translations) == set(), "messages of the template missing from the catalogue"
    untranslated, fuzzy = [], []
    for message in translations:
        if not message.id or message.id not in wanted:
            continue
        forms = message.string if isinstance(message.string, tuple) else (message.string,)
        if not all(forms):
            untranslated.append(message.id)
        if message.fuzzy:
            fuzzy.append(message.id)
    assert not untranslated, f"{language}: no translation of {untranslated}"
    assert not fuzzy, f"{language}: fuzzy (unchecked) translations of {fuzzy}"
    # a translation with other %(name)s placeholders than its English would fail when the page is drawn
    problems = [(message.id, [str(error) for error in errors]) for message, errors in translations.check()]
    assert not problems, problems


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_compiled_catalogue_is_the_catalogue(language):
    directory = TRANSLATIONS / language / "LC_MESSAGES"
    compiled = io.BytesIO()
    write_mo(compiled, catalogue(directory / "messages.po", language))
    assert (directory / "messages.mo").read_bytes() == compiled.getvalue(), (
        f"{directory / 'messages.mo'} is not {directory / 'messages.po'} compiled: run "
        "`.venv/bin/pybabel compile -d webui/translations`")
