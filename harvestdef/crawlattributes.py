"""Crawl attributes: max hops, obey or ignore robots.txt, extract JavaScript.

They are NetarchiveSuite's EAV attributes, kept where it keeps them so that a database taken over from it,
or handed back, reads the same: eav_type_attribute names the attribute types of a tree, eav_attribute holds
one value per (tree, entity, type) in ``val_int``. Two trees (NetarchiveSuite's ``EAV.SNAPSHOT_TREE_ID`` and
``EAV.DOMAIN_TREE_ID``):

* tree 2, a domain configuration's attributes (entity = config_id). NetarchiveSuite writes every type of
  the tree whenever a configuration is saved (a number missing from the form is the type's default, a
  box missing is 0); so do we. A configuration without a row for a type has the type's default.
* tree 1, a snapshot harvest's attributes (entity = harvest_id). Here a type without a row means "each
  configuration's own value"; a row overrides the value of every configuration the snapshot harvests.

Job generation fills ``%{MAX_HOPS}``, ``%{HONOR_ROBOTS_DOT_TXT}`` (obey/ignore) and ``%{EXTRACT_JAVASCRIPT}``
(true/false) from them, and never puts configurations with different values in one job.

This module holds the names and the rules for values; it never touches the database
(harvestdef/repositories/crawlattributes.py reads and writes the rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harvestdef.errors import FieldError
from harvestdef.phrases import N_, Phrase, phrase

SNAPSHOT_TREE = 1
CONFIGURATION_TREE = 2

MAX_HOPS = "MAX_HOPS"
HONOR_ROBOTS_DOT_TXT = "HONOR_ROBOTS_DOT_TXT"
EXTRACT_JAVASCRIPT = "EXTRACT_JAVASCRIPT"

# The most link hops from a seed a crawl may follow. Heritrix takes any int, but beyond a few hundred a
# crawl follows every link of a site to its end; a number above this is a typing mistake.
MAX_HOPS_LIMIT = 1000


@dataclass(frozen=True)
class AttributeKind:
    """One crawl attribute: the EAV type's name, the API's field, NetarchiveSuite's viewtype (1: a number,
    5 and 6: a check box) and the type's default value."""

    name: str
    field: str
    viewtype: int
    default: int

    @property
    def is_boolean(self) -> bool:
        return self.viewtype in (5, 6)


# In NetarchiveSuite's order (its eav_type_attribute ids 1, 2, 3), with its defaults.
ATTRIBUTES: tuple[AttributeKind, ...] = (
    AttributeKind(MAX_HOPS, "max_hops", 1, 20),
    AttributeKind(HONOR_ROBOTS_DOT_TXT, "honor_robots_dot_txt", 6, 0),
    AttributeKind(EXTRACT_JAVASCRIPT, "extract_javascript", 5, 1),
)
BY_NAME = {kind.name: kind for kind in ATTRIBUTES}
BY_FIELD = {kind.field: kind for kind in ATTRIBUTES}


def check_value(kind: AttributeKind, value: Any, field: str | None = None) -> int:
    """The stored form (``val_int``) of ``value``: max hops a whole number from 0 to MAX_HOPS_LIMIT, the
    others true or false. FieldError naming ``field`` (default: the attribute's own) otherwise."""
    where = field or kind.field
    if kind.is_boolean:
        if not isinstance(value, bool):
            raise FieldError(where, phrase(N_("must be true or false, not %(value)s"), value=repr(value)))
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(where, _hops(repr(value)))
    if not 0 <= value <= MAX_HOPS_LIMIT:
        raise FieldError(where, phrase(N_("must be from 0 to %(limit)s link hops, not %(value)s"),
                                       limit=MAX_HOPS_LIMIT, value=value))
    return value


def _hops(value: str) -> Phrase:
    return phrase(N_("must be a whole number from 0 to %(limit)s, not %(value)s"), limit=MAX_HOPS_LIMIT, value=value)


def check_values(values: Mapping[str, Any], prefix: str = "crawl_attributes", allow_none: bool = False
                 ) -> dict[str, int | None]:
    """The API's ``{"max_hops", "honor_robots_dot_txt", "extract_javascript"}`` (any of them) as stored values
    by EAV type name; with ``allow_none`` a null value means "no value of its own" (a snapshot's)."""
    if not isinstance(values, Mapping):
        raise FieldError(prefix, "must be an object with max_hops, honor_robots_dot_txt and/or extract_javascript")
    unknown = sorted(set(values) - set(BY_FIELD))
    if unknown:
        raise FieldError(f"{prefix}.{unknown[0]}", "is not a crawl attribute (max_hops, honor_robots_dot_txt, "
                                                   "extract_javascript)")
    checked: dict[str, int | None] = {}
    for field, value in values.items():
        kind = BY_FIELD[field]
        if value is None and allow_none:
            checked[kind.name] = None
        else:
            checked[kind.name] = check_value(kind, value, f"{prefix}.{field}")
    return checked


def form_values(form: Mapping[str, str], allow_none: bool = False) -> dict[str, int | None]:
    """The crawl-attribute fields of a page's form: ``max_hops`` (digits), ``honor_robots_dot_txt`` ("obey"
    or "ignore") and ``extract_javascript`` ("true" or "false"; a check box sends "1" or nothing). With
    ``allow_none`` an empty field means "each configuration's own"; without, an absent box is false and an
    absent number the default, as NetarchiveSuite's forms do."""
    checked: dict[str, int | None] = {}
    for kind in ATTRIBUTES:
        text = (form.get(kind.field) or "").strip()
        if not text:
            if allow_none:
                checked[kind.name] = None
            else:
                checked[kind.name] = 0 if kind.is_boolean else kind.default
            continue
        if kind.is_boolean:
            words = {"obey": True, "ignore": False, "true": True, "false": False, "1": True, "0": False}
            if text.lower() not in words:
                if kind.name == HONOR_ROBOTS_DOT_TXT:
                    raise FieldError(kind.field, phrase(N_("must be obey or ignore, not %(value)s"),
                                                        value=repr(text[:40])))
                raise FieldError(kind.field, phrase(N_("must be true or false, not %(value)s"), value=repr(text[:40])))
            checked[kind.name] = int(words[text.lower()])
        else:
            if not text.isdigit() or not text.isascii():
                raise FieldError(kind.field, _hops(repr(text[:40])))
            checked[kind.name] = check_value(kind, int(text))
    return checked


def as_json(values: Mapping[str, int | None]) -> dict[str, Any]:
    """Stored values by type name as the API shows them: booleans as true/false, a missing one as null."""
    shown: dict[str, Any] = {}
    for kind in ATTRIBUTES:
        value = values.get(kind.name)
        shown[kind.field] = None if value is None else (bool(value) if kind.is_boolean else value)
    return shown


def template_text(name: str, value: int) -> str:
    """The text that replaces ``%{NAME}`` in a crawl template: robots policy obey/ignore, JavaScript
    extraction true/false, max hops its number."""
    if name == HONOR_ROBOTS_DOT_TXT:
        return "obey" if value else "ignore"
    if name == EXTRACT_JAVASCRIPT:
        return "true" if value else "false"
    return str(value)
