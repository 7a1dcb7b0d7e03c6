"""The change history of a definition page: the audit log's rows of the definition itself and of its
extended-field values, newest first, so that every change shows on the page of what changed; and the same
rows in words for the page (``changes_in_words``, the template global of definitions/domains_changes.html).

Only the pages read these words, so they go through gettext (webui/language.py): a Danish page says "ændret"
and "Maks. objekter". Stored values (names, seeds, comments) stay as they were written.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from flask_babel import gettext, lazy_gettext
from sqlalchemy import Connection

from harvestdef.crawlattributes import ATTRIBUTES
from harvestdef.model.definitions import AuditEntry, ExtendedFieldType
from harvestdef.repositories.audit import REFERENCE_KINDS, AuditRepository
from harvestdef.repositories.extendedfields import ExtendedFieldRepository
from harvestdef.times import utc_text
from harvestdef.words import spaced
from webui.context import database
from webui.definitions import blueprint
from webui.formatting import count, instant, size


def definition_changes(conn: Connection, rows: Sequence[tuple[str, object]], field_type: ExtendedFieldType,
                       instance_id: int) -> list[AuditEntry]:
    """The changes of the audited rows ``(table, key)`` and of the instance's extended-field values, each
    value change named by its field (the audit trail keys values by their own id)."""
    audit = AuditRepository(conn)
    # a change to a configuration, seed list or extended field moves the owner's edition only: that row
    # says nothing the change's own row does not
    changes = [change for table, key in rows for change in audit.changes_of(table, key)
               if not is_edition_only(change)]
    repository = ExtendedFieldRepository(conn)
    names = {f.field_id: f.name for f in repository.fields_of(field_type)}
    for value_id in repository.value_ids_of(field_type, instance_id):
        for entry in audit.changes_of("extendedfieldvalue", value_id):
            row = entry.after or entry.before or {}
            label = str(EXTENDED_FIELD_ACTIONS[entry.action]) % {"name": names.get(row.get("extendedfield_id"), "?")}
            changes.append(dataclasses.replace(
                entry, action=label, before={"value": entry.before["content"]} if entry.before else None,
                after={"value": entry.after["content"]} if entry.after else None))
    return sorted(changes, key=lambda c: (c.changed_at, c.audit_id), reverse=True)


def is_edition_only(change: AuditEntry) -> bool:
    if change.action != "update" or not change.before or not change.after:
        return False
    return {key for key in change.after if change.before.get(key) != change.after[key]} <= {"edition"}


# ---------------------------------------------------------------- the change history in words
@dataclass(frozen=True)
class FieldChange:
    """One field of a change as a person reads it: its label, and the value before and after in words
    (``before`` None for a row made, ``after`` None for a row removed). A list of lines (seeds, crawler
    traps) changed in place has ``added`` and ``removed`` lines instead."""

    label: str
    before: str | None
    after: str | None
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChangeInWords:
    changed_at: datetime
    actor: str
    action: str
    fields: tuple[FieldChange, ...]


ACTIONS = {"insert": lazy_gettext("created"), "update": lazy_gettext("changed"), "delete": lazy_gettext("removed")}
# A value of an extended field, named by its field; the English keeps the audit trail's own action words.
EXTENDED_FIELD_ACTIONS = {"insert": lazy_gettext("insert extended field %(name)s"),
                          "update": lazy_gettext("update extended field %(name)s"),
                          "delete": lazy_gettext("delete extended field %(name)s")}
# Columns nobody reads: the optimistic-locking counter, and keys that name the row the page is about.
HIDDEN = {"edition", "instance_id", "extendedfieldvalue_id"}
# and the row a page is about, where a row of another table names it
HIDDEN_IN = {"harvest_configs": {"harvest_id"}, "configurations": {"domain_id"}, "seedlists": {"domain_id"}}
# Columns that hold the id of another row, by the kind of row (harvestdef.repositories.audit.REFERENCE_KINDS),
# and what an empty one means.
REFERENCES = {"domain_id": "domain", "alias": "domain", "defaultconfig": "configuration", "config_id": "configuration",
              "template_id": "template", "channel_id": "channel", "schedule_id": "schedule", "harvest_id": "harvest",
              "previoushd": "harvest", "seedlist_id": "seedlist", "extendedfield_id": "extendedfield"}
# Columns that hold a list of such ids (the audit row of a configuration lists its seed lists).
LIST_REFERENCES = {"seedlists": "seedlist"}
# The kind of row each audited table holds, to know a row's own key when it shows.
TABLE_KINDS = {"domains": "domain", "configurations": "configuration", "seedlists": "seedlist",
               "harvestdefinitions": "harvest", "partialharvests": "harvest", "fullharvests": "harvest",
               "ordertemplates": "template", "harvestchannel": "channel", "schedules": "schedule"}
EMPTY_REFERENCE = {
    "channel_id": lazy_gettext("the default channel of its kind"), "alias": lazy_gettext("none (not an alias)"),
    "previoushd": lazy_gettext("none (the first step)"),
}
LABELS = {
    "name": lazy_gettext("Name"), "comments": lazy_gettext("Comments"), "audience": lazy_gettext("Audience"),
    "isactive": lazy_gettext("Active"), "numevents": lazy_gettext("Runs"), "isevent": lazy_gettext("Event harvest"),
    "MAX_HOPS": lazy_gettext("Max hops"), "HONOR_ROBOTS_DOT_TXT": lazy_gettext("Obey robots.txt"),
    "EXTRACT_JAVASCRIPT": lazy_gettext("Extract links from JavaScript"),
    "submitted": lazy_gettext("Created"), "nextdate": lazy_gettext("Next run"),
    "crawlertraps": lazy_gettext("Crawler traps"), "channel_id": lazy_gettext("Channel"),
    "schedule_id": lazy_gettext("Schedule"), "maxobjects": lazy_gettext("Max objects"),
    "maxbytes": lazy_gettext("Max bytes"), "maxjobrunningtime": lazy_gettext("Max seconds per job"),
    "previoushd": lazy_gettext("Continues"), "isindexready": lazy_gettext("Deduplication index ready"),
    "template_id": lazy_gettext("Crawl template"), "domain_id": lazy_gettext("Domain"),
    "defaultconfig": lazy_gettext("Default configuration"), "alias": lazy_gettext("Alias of"),
    "lastaliasupdate": lazy_gettext("Alias confirmed"), "maxrate": lazy_gettext("Max requests per minute"),
    "overridelimits": lazy_gettext("Overrides the harvest's limits"), "seeds": lazy_gettext("Seeds"),
    "config_id": lazy_gettext("Configuration"), "seedlist_id": lazy_gettext("Seed list"),
    "seedlists": lazy_gettext("Seed lists"), "harvest_id": lazy_gettext("Harvest"), "value": lazy_gettext("Value"),
    "content": lazy_gettext("Value"),
}
# What a reference to a row that is gone says, by the kind of row.
SINCE_DELETED = {
    "domain": lazy_gettext("a domain since deleted"), "configuration": lazy_gettext("a configuration since deleted"),
    "template": lazy_gettext("a template since deleted"), "channel": lazy_gettext("a channel since deleted"),
    "schedule": lazy_gettext("a schedule since deleted"), "harvest": lazy_gettext("a harvest since deleted"),
    "seedlist": lazy_gettext("a seed list since deleted"),
    "extendedfield": lazy_gettext("an extended field since deleted"),
}
SIZES = {"maxbytes"}
# Crawl attributes stored as 1 or 0 (NetarchiveSuite's check boxes), which read yes or no.
YES_OR_NO = {kind.name for kind in ATTRIBUTES if kind.is_boolean}
_ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d")


def changes_in_words(changes: Sequence[AuditEntry]) -> list[ChangeInWords]:
    """The audit rows of a change history as a person reads them: names of templates, channels, schedules,
    domains and configurations instead of their ids, times in the one format, yes and no, "unlimited", and
    for an update only the fields that changed, before → after. A change that moved nothing a person sees
    (the edition alone) is left out."""
    references: dict[str, set[int]] = {kind: set() for kind in REFERENCE_KINDS}
    for change in changes:
        for side in (change.before, change.after):
            for key, value in (side or {}).items():
                if key in REFERENCES and isinstance(value, int):
                    references[REFERENCES[key]].add(value)
                elif key in LIST_REFERENCES and isinstance(value, list):
                    references[LIST_REFERENCES[key]].update(item for item in value if isinstance(item, int))
    with database().connect() as conn:
        names = AuditRepository(conn).names_of(references)
    worded = (_in_words(change, names) for change in changes)
    return [change for change in worded if change.fields]


def _in_words(change: AuditEntry, names: dict[tuple[str, int], str]) -> ChangeInWords:
    hidden = HIDDEN | HIDDEN_IN.get(change.tablename, set())
    before, after = change.before or {}, change.after or {}
    fields = []
    for key in sorted(set(before) | set(after), key=lambda key: _label(key).lower()):
        old, new = before.get(key), after.get(key)
        own_key = REFERENCES.get(key) == TABLE_KINDS.get(change.tablename)
        if key in hidden or ((key == "id" or key.endswith("_id")) and key not in REFERENCES) or (
                own_key and str(new if change.after is not None else old) == change.row_key):
            continue  # bookkeeping, or the row's own key: the page is about that row
        if change.before is not None and change.after is not None:  # an update: what changed
            if old == new:
                continue
            if _is_lines(old) or _is_lines(new):
                fields.append(_lines_change(key, old or "", new or ""))
            elif key not in before or key not in after:  # a writer that audits only what it changed
                fields.append(FieldChange(_label(key), None, _value(key, new if key in after else old, names)))
            else:
                fields.append(FieldChange(_label(key), _value(key, old, names), _value(key, new, names)))
        else:  # a row made or removed: what it held
            value = new if change.after is not None else old
            if value is None or value == "":
                continue
            if _is_lines(value):
                fields.append(_lines_change(key, old or "", new or ""))
                continue
            shown = _value(key, value, names)
            fields.append(FieldChange(_label(key), shown if change.after is None else None,
                                      shown if change.after is not None else None))
    return ChangeInWords(change.changed_at, change.actor, str(ACTIONS.get(change.action, change.action)),
                         tuple(fields))


def _label(key: str) -> str:
    label = LABELS.get(key)
    return str(label) if label is not None else key.replace("_", " ").capitalize()


def _value(key: str, value: object, names: dict[tuple[str, int], str]) -> str:
    if key in REFERENCES:
        if value is None:
            return str(EMPTY_REFERENCE.get(key) or gettext("none"))
        name = names.get((REFERENCES[key], value)) if isinstance(value, int) else None
        if name is None:
            return str(SINCE_DELETED[REFERENCES[key]])
        return spaced(name) if REFERENCES[key] == "schedule" else name
    if key in LIST_REFERENCES and isinstance(value, list):
        kind = LIST_REFERENCES[key]
        return ", ".join(names.get((kind, item), str(SINCE_DELETED[kind])) for item in value) or gettext("none")
    if value is None:
        return gettext("none")
    if isinstance(value, bool) or (key in YES_OR_NO and value in (0, 1)):
        return gettext("yes") if value else gettext("no")
    if isinstance(value, int):
        return size(value) if key in SIZES else count(value)
    if isinstance(value, str) and _ISO_TIME.match(value):
        moment = instant(value)
        return utc_text(moment) if moment is not None else value
    if value == "":
        return gettext("empty")
    return str(value)


def _is_lines(value: object) -> bool:
    return isinstance(value, str) and "\n" in value.strip()


def _lines_change(key: str, old: str, new: str) -> FieldChange:
    """A list of lines changed: the lines added and removed, in their order, not both lists whole."""
    old_lines = [line for line in old.splitlines() if line.strip()]
    new_lines = [line for line in new.splitlines() if line.strip()]
    kept_old, kept_new = set(old_lines), set(new_lines)
    return FieldChange(_label(key), None, None, added=tuple(line for line in new_lines if line not in kept_old),
                       removed=tuple(line for line in old_lines if line not in kept_new))


@blueprint.context_processor
def _change_history() -> dict[str, object]:
    return {"changes_in_words": changes_in_words}
