"""Which unique key the database refused a row for, and the sentence for people that says so.

SQLite names the columns in its message ("UNIQUE constraint failed: seedlists.domain_id, seedlists.name"),
PostgreSQL its SQLSTATE 23505 with the table and, in the detail, the columns and values ("Key (domain_id,
name)=(6, news) already exists."). ``unique_violation`` reads either into the UniqueKey of UNIQUE_KEYS and
the values the refused row had (from the statement's parameters, else the detail), and ``sentence`` says
it as "a seed list named news already exists on domain kb.dk", naming the field a request gave it in.

UNIQUE_KEYS holds every unique key of a table that a page or the API writes; tests/webui check that
none is missing. It only reads errors: the boundaries that translate them
(harvestdef.repositories.base.translate_errors, webui/api/errors.py) call it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError

from harvestdef.errors import causes, kind_words
from harvestdef.phrases import N_, Phrase, phrase

_UNIQUE_SQLSTATE = "23505"
_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: (.+)$")
_POSTGRES_DETAIL = re.compile(r"Key \((.+)\)=\((.*)\) already exists")


@dataclass(frozen=True)
class UniqueKey:
    """A unique key of ``table`` over ``columns``: the rows are ``what`` ("seed list"), the request field
    that gives the key's value is ``field`` (its column ``column``), and ``scope`` names what the key is
    unique within ("domain": a name unique per domain), or is None."""

    table: str
    columns: tuple[str, ...]
    what: str
    field: str | None
    column: str | None
    scope: str | None = None


UNIQUE_KEYS: tuple[UniqueKey, ...] = (
    UniqueKey("domains", ("name",), "domain", "name", "name"),
    UniqueKey("configurations", ("domain_id", "name"), "configuration", "name", "name", "domain"),
    UniqueKey("seedlists", ("domain_id", "name"), "seed list", "name", "name", "domain"),
    UniqueKey("passwords", ("domain_id", "name"), "password", "name", "name", "domain"),
    UniqueKey("ordertemplates", ("name",), "crawl template", "name", "name"),
    UniqueKey("harvestchannel", ("name",), "harvest channel", "name", "name"),
    UniqueKey("schedules", ("name",), "schedule", "name", "name"),
    UniqueKey("harvestdefinitions", ("name",), "harvest definition", "name", "name"),
    # ids drawn as max + 1 (NetarchiveSuite's way): two creations at one moment draw the same
    UniqueKey("harvestdefinitions", ("harvest_id",), "harvest definition", None, "harvest_id"),
    UniqueKey("global_crawler_trap_lists", ("name",), "global crawler trap list", "name", "name"),
    UniqueKey("users", ("name",), "user", "name", "name"),
    UniqueKey("webhooks", ("name",), "webhook", "name", "name"),
    UniqueKey("harvest_configs", ("harvest_id", "config_id"), "configuration of the harvest", "configurations",
              None),
    UniqueKey("harvest_run_requests", ("harvest_id",), "run asked for", None, None),
    UniqueKey("harvest_previews", ("harvest_id",), "preview asked for", None, None),
)
_BY_COLUMNS = {(key.table, frozenset(key.columns)): key for key in UNIQUE_KEYS}


@dataclass(frozen=True)
class UniqueViolation:
    """A row refused by ``key``, and the values the refused row had in its columns (those known)."""

    key: UniqueKey
    values: Mapping[str, Any]

    @property
    def value(self) -> Any:
        """The value of the key's own column (its name), or None if the error does not say it."""
        return self.values.get(self.key.column) if self.key.column else None


def unique_violation(error: BaseException) -> UniqueViolation | None:
    """The unique key ``error`` (or an error it was raised from) is the refusal of, or None."""
    for current in causes(error):
        if isinstance(current, IntegrityError):
            return _of_integrity_error(current)
    return None


def _of_integrity_error(error: IntegrityError) -> UniqueViolation | None:
    original = error.orig
    params = error.params if isinstance(error.params, Mapping) else {}
    if isinstance(original, sqlite3.IntegrityError):
        match = _SQLITE_UNIQUE.search(str(original).splitlines()[0] if str(original) else "")
        if match is None:
            return None
        qualified = [part.strip().split(".", 1) for part in match.group(1).split(",")]
        if not qualified or any(len(part) != 2 for part in qualified):
            return None
        table = qualified[0][0]
        columns = tuple(column for _table, column in qualified)
        detail_values: dict[str, Any] = {}
    elif getattr(original, "sqlstate", None) == _UNIQUE_SQLSTATE:
        diag = getattr(original, "diag", None)
        table = getattr(diag, "table_name", None) or ""
        match = _POSTGRES_DETAIL.search(getattr(diag, "message_detail", None) or "")
        if match is None:
            return None
        columns = tuple(column.strip() for column in match.group(1).split(","))
        values = [value.strip() for value in match.group(2).split(",")]
        # a value holding ", " splits wrongly: then only the statement's parameters are believed
        detail_values = dict(zip(columns, values, strict=True)) if len(values) == len(columns) else {}
    else:
        return None
    key = _BY_COLUMNS.get((table, frozenset(columns)))
    if key is None:
        key = UniqueKey(table, columns, f"row of {table}", None, None)
    known = {**detail_values, **{column: params[column] for column in columns if column in params}}
    return UniqueViolation(key, known)


def sentence(violation: UniqueViolation, scope_name: str | None = None) -> str:
    """What the refusal means, for people: "a seed list named news already exists on domain kb.dk"
    (``scope_name``: the domain's name, which the error itself knows only by its id)."""
    return sentence_phrase(violation, scope_name).english()


def sentence_phrase(violation: UniqueViolation, scope_name: str | None = None) -> Phrase:
    """``sentence`` as a phrase, which a page says in its language."""
    key, value = violation.key, violation.value
    what = kind_words(key.what)
    if key.column == "harvest_id" and key.table == "harvestdefinitions":
        if value is None:
            return phrase(N_("another harvest definition was created at the same moment and took the same id; "
                             "send the request again"))
        return phrase(N_("another harvest definition was created at the same moment and took id %(id)s; send the "
                         "request again"), id=value)
    if key.column is None:
        if key.table == "harvest_configs":
            return phrase(N_("the configuration is in the harvest already: another request added it at the same "
                             "moment"))
        if key.table == "harvest_run_requests":
            return phrase(N_("a run asked for of this harvest already exists: another request asked at the same "
                             "moment"))
        if key.table == "harvest_previews":
            return phrase(N_("a preview asked for of this harvest already exists: another request asked at the "
                             "same moment"))
        return phrase(N_("a %(what)s with these values of (%(columns)s) already exists"), what=what,
                      columns=", ".join(key.columns))
    if value is None:
        named = phrase(N_("a %(what)s of that %(column)s"), what=what, column=key.column)
    else:
        named = phrase(N_("a %(what)s named %(value)s"), what=what, value=str(value))
    if key.scope is None:
        return phrase(N_("%(named)s already exists"), named=named)
    if scope_name:
        return phrase(N_("%(named)s already exists on %(scope)s %(scope_name)s"), named=named,
                      scope=kind_words(key.scope), scope_name=scope_name)
    return phrase(N_("%(named)s already exists on its %(scope)s"), named=named, scope=kind_words(key.scope))
