"""Which domain configurations a harvest yields, by NetarchiveSuite's rules (below), streamed from the
harvest database.

One query per run yields every configuration with its best history row (the row that
scheduler.jobgen.expectation.best_history, NetarchiveSuite's DomainHistory.getBestHarvestInfoExpectation,
picks), read from config_history_summary, which status intake keeps beside historyinfo: one row per
configuration, however many harvests the archive has run. Only when the summary lacks the newest historyinfo
row (history loaded by other means and not yet summarised) does the query yield all of each configuration's
history rows (same domain, same configuration name, newest first) for ``select_candidates`` to fold, with the
same result. Both queries also yield the configuration's seed lists (a row per seed list) and its domain's
traps, so the jobs are written from what this pass read (``MemberSeeds``) and nothing is read back. Each
configuration becomes a compact ``Candidates`` row and its seed lists one ``MemberSeeds`` entry; the summary
query's rows are taken in a batch at a time, column by column, and added once ``ordering`` has sorted them,
the history query's one by one as they are folded.

Rules (each a WHERE clause below):
* selective and event harvests: the rows of harvest_configs;
* first snapshot: every active domain's default configuration, minus domains that are non-expired aliases;
* continuation snapshot: the configuration of each historyinfo row of the previous step (its newest row per
  configuration), unless it stopped DOWNLOAD_COMPLETE or DOWNLOAD_UNFINISHED, or stopped on
  CONFIG_SIZE_LIMIT / CONFIG_OBJECT_LIMIT while the configuration's limit is still no higher than what was
  harvested then (-1 counts as infinite), or its domain is now a non-expired alias or inactive (a curator
  deactivated it: HarvestSuite's domains.isactive; selective harvests still take it). A historyinfo row
  whose configuration row is gone cannot be followed (historyinfo names no domain); the repositories refuse
  to delete a configuration that history refers to, so this only happens with data imported from elsewhere;
* always: a configuration needs an active seed (a seed-list line non-empty after trimming and not starting
  with '#', NAS-2506; the summary query yields only the seed lists that hold one, the history query says
  per seed list whether it does), and with excludeDomainsWithZeroBudget
  a byte and object limit other than 0.

Candidates are added ordered by domain name, then configuration name (code-point order on both
databases), which is the packing's tie-break.

It queries the schema directly: a streamed read of millions of rows shaped for the planner, which no
row-at-a-time repository method could be.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import Connection, DateTime, and_, bindparam, func, not_, or_, select
from sqlalchemy.sql import ColumnElement, Select

from harvestdef.crawlattributes import CONFIGURATION_TREE, SNAPSHOT_TREE
from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql
from harvestdef.model.status import StopReason
from harvestdef.seeds import has_seed, has_seed_sql, register_sqlite_functions
from scheduler.jobgen.expectation import NO_HISTORY
from scheduler.jobgen.memberseeds import MemberSeeds
from scheduler.jobgen.ordering import ArrivingRows
from scheduler.jobgen.packing import Candidates, HarvestLimits, PackingRules
from scheduler.jobgen.streaming import stream_batches, stream_rows

log = logging.getLogger(__name__)

CRAWL_ATTRIBUTE_TREE = CONFIGURATION_TREE
SNAPSHOT_ATTRIBUTE_TREE = SNAPSHOT_TREE
# NAS-2506's "active seed" is harvestdef.seeds' seed line, offered here under NetarchiveSuite's name.
has_active_seed = has_seed


@dataclass(frozen=True)
class HarvestSource:
    """What selection needs to know about the harvest definition being generated."""

    harvest_id: int
    snapshot: bool
    previous_harvest_id: int | None = None


def _seedlist_columns(conn: Connection) -> tuple[ColumnElement[str], ColumnElement[bool]]:
    """The seed list's text and whether it holds a seed (harvestdef.seeds' rule, evaluated by the database)."""
    sl = s.seedlists
    postgresql = is_postgresql(conn.engine)
    if not postgresql:
        register_sqlite_functions(conn.connection.driver_connection)
    return sl.c.seeds, has_seed_sql(sl.c.seeds, postgresql)


def _not_current_alias(now: datetime, alias_timeout: int) -> ColumnElement[bool]:
    d = s.domains
    # Naive UTC, as stored, with a plain DateTime type: the PostgreSQL stream sends binds without
    # SQLAlchemy's type processing, so the value must already be what the column holds.
    cutoff = (now - timedelta(seconds=alias_timeout)).astimezone(UTC).replace(tzinfo=None)
    return not_(and_(d.c.alias.is_not(None), d.c.lastaliasupdate.is_not(None),
                     d.c.lastaliasupdate > bindparam("alias_cutoff", cutoff, type_=DateTime())))


def _above(limit: ColumnElement[int], harvested: ColumnElement[int]) -> ColumnElement[bool]:
    """The configuration's limit is now higher than what was harvested (-1 = infinite)."""
    return or_(limit == -1, limit > harvested)


def _from_clause(conn: Connection, source: HarvestSource, now: datetime, alias_timeout: int) -> Select:
    c, d = s.configurations, s.domains
    # The configuration's name as the sort compares it, so the sort carries it once; the template by id
    # (select_candidates names it), which keeps the sorted rows narrow.
    columns = (c.c.config_id, c.c.domain_id, _tie_break(conn)[1].label("name"), c.c.template_id,
               c.c.maxobjects, c.c.maxbytes)
    if not source.snapshot:
        hc = s.harvest_configs
        return (select(*columns).select_from(hc.join(c, c.c.config_id == hc.c.config_id)
                                             .join(d, d.c.domain_id == c.c.domain_id))
                .where(hc.c.harvest_id == source.harvest_id))
    if source.previous_harvest_id is None:
        return (select(*columns).select_from(d.join(c, c.c.config_id == d.c.defaultconfig))
                .where(d.c.isactive, _not_current_alias(now, alias_timeout)))
    h = s.historyinfo
    # The newest row of each configuration in one pass over the previous step's rows only (its index
    # range): joining a max() back to historyinfo by id would scan every row of every earlier harvest.
    newest_first = func.row_number().over(partition_by=h.c.config_id, order_by=h.c.historyinfo_id.desc())
    previous = (select(h.c.config_id, h.c.stopreason, h.c.objectcount, h.c.bytecount,
                       newest_first.label("newest_first"))
                .where(h.c.harvest_id == source.previous_harvest_id).subquery("previous"))
    stop = previous.c.stopreason
    return (select(*columns)
            .select_from(previous.join(c, c.c.config_id == previous.c.config_id)
                         .join(d, d.c.domain_id == c.c.domain_id))
            .where(previous.c.newest_first == 1,
                   stop.not_in([StopReason.DOWNLOAD_COMPLETE, StopReason.DOWNLOAD_UNFINISHED]),
                   or_(stop != StopReason.CONFIG_SIZE_LIMIT, _above(c.c.maxbytes, previous.c.bytecount)),
                   or_(stop != StopReason.CONFIG_OBJECT_LIMIT, _above(c.c.maxobjects, previous.c.objectcount)),
                   d.c.isactive, _not_current_alias(now, alias_timeout)))


def summary_is_current(conn: Connection) -> bool:
    """True if config_history_summary has folded in the newest historyinfo row.

    Status intake writes historyinfo and the summary in one transaction, and ``harvestsuite db
    rebuild-summaries`` recomputes it for history written by other means; history written by other means
    and not yet summarised (an import, a test's rows) leaves the newest row out, and the run then reads
    historyinfo itself. Two primary-key lookups, whatever the size of the history.
    """
    h, chs = s.historyinfo, s.config_history_summary
    newest = conn.execute(select(h.c.historyinfo_id, h.c.config_id).order_by(h.c.historyinfo_id.desc())
                          .limit(1)).first()
    if newest is None:
        return True
    latest = conn.scalar(select(chs.c.latest_historyinfo_id).where(chs.c.config_id == newest.config_id))
    return latest == newest.historyinfo_id


def _base_query(conn: Connection, source: HarvestSource, rules: PackingRules, now: datetime,
                alias_timeout: int) -> Select:
    """The run's configurations, a row per seed list of each (a configuration without a seed list has no
    seed)."""
    c, cs, sl = s.configurations, s.config_seedlists, s.seedlists
    query = _from_clause(conn, source, now, alias_timeout)
    query = query.join(cs, cs.c.config_id == c.c.config_id).join(sl, sl.c.seedlist_id == cs.c.seedlist_id)
    if rules.exclude_domains_with_zero_budget:
        query = query.where(c.c.maxbytes != 0, c.c.maxobjects != 0)
    return query


def _tie_break(conn: Connection) -> tuple[ColumnElement[str], ColumnElement[str]]:
    domain_name, config_name = s.domains.c.name, s.configurations.c.name
    if is_postgresql(conn.engine):
        # code-point order, as SQLite's BINARY collation and Python compare, whatever the database's locale
        domain_name, config_name = domain_name.collate("C"), config_name.collate("C")
    return domain_name, config_name


def summary_query(conn: Connection, source: HarvestSource, rules: PackingRules, now: datetime,
                  alias_timeout: int) -> Select:
    """The configurations of the run with their best history row from config_history_summary (0, 0,
    NO_HISTORY without history), their domain's name and traps, and a row per seed list that holds a seed
    (its id and text), in no order (``ordering`` sorts them). A configuration none of whose seed lists holds
    a seed has no row; the lists without a seed add no seed to a job, so leaving them out changes no job."""
    chs, d, sl = s.config_history_summary, s.domains, s.seedlists
    seeds, holds_seed = _seedlist_columns(conn)
    query = _base_query(conn, source, rules, now, alias_timeout).where(holds_seed)
    query = query.outerjoin(chs, chs.c.config_id == s.configurations.c.config_id)
    return query.add_columns(func.coalesce(chs.c.best_objectcount, 0), func.coalesce(chs.c.best_bytecount, 0),
                             func.coalesce(chs.c.best_stopreason, NO_HISTORY), sl.c.seedlist_id, d.c.name,
                             d.c.crawlertraps, seeds)


def candidate_query(conn: Connection, source: HarvestSource, rules: PackingRules, now: datetime,
                    alias_timeout: int) -> Select:
    """The configurations of the run joined with their history, ordered for folding and for tie-breaks:
    ``summary_query``'s columns, the seed list's id before its text, and for each seed list of a
    configuration all its history rows, newest first."""
    c, d, sl = s.configurations, s.domains, s.seedlists
    query = _base_query(conn, source, rules, now, alias_timeout)
    h, hc = s.historyinfo, c.alias("history_config")
    history = (select(hc.c.domain_id, hc.c.name, h.c.objectcount, h.c.bytecount, h.c.stopreason,
                      h.c.harvest_time, h.c.harvest_id, h.c.historyinfo_id)
               .select_from(h.join(hc, hc.c.config_id == h.c.config_id)).subquery("history"))
    query = query.outerjoin(history, and_(history.c.domain_id == c.c.domain_id, history.c.name == c.c.name))
    query = query.add_columns(history.c.objectcount, history.c.bytecount, history.c.stopreason,
                              _tie_break(conn)[0].label("domain_name"), d.c.crawlertraps, sl.c.seedlist_id,
                              *_seedlist_columns(conn))
    return query.order_by(*_tie_break(conn), sl.c.seedlist_id, history.c.harvest_time.desc(),
                          history.c.harvest_id.desc(), history.c.historyinfo_id.desc())


def crawl_attributes(conn: Connection, source: HarvestSource | None = None
                     ) -> tuple[tuple[int, ...], dict[int, tuple[int, ...]]]:
    """The default crawl attribute values (EAV tree 2, by attribute id) and each configuration's own values.

    Only configurations that set an attribute are in the map; there are few of them. A snapshot's own values
    (EAV tree 1, entity its harvest id, matched by type name: harvestdef.crawlattributes) replace the
    default and every configuration's value of their type.
    """
    ta, a = s.eav_type_attribute, s.eav_attribute
    types = conn.execute(select(ta.c.id, ta.c.def_int, ta.c.name).where(ta.c.tree_id == CRAWL_ATTRIBUTE_TREE)
                         .order_by(ta.c.id)).all()
    position = {type_id: number for number, (type_id, _, _) in enumerate(types)}
    defaults = tuple(default if default is not None else 0 for _, default, _ in types)
    own: dict[int, list[int]] = {}
    for entity_id, type_id, value in conn.execute(
            select(a.c.entity_id, a.c.type_id, a.c.val_int).where(a.c.tree_id == CRAWL_ATTRIBUTE_TREE)):
        if type_id in position and value is not None:
            own.setdefault(entity_id, list(defaults))[position[type_id]] = value
    overrides = _snapshot_attributes(conn, source, {name: number for number, (_, _, name) in enumerate(types)})
    if overrides:
        defaults = _overridden(defaults, overrides)
        return defaults, {config_id: _overridden(values, overrides) for config_id, values in own.items()}
    return defaults, {config_id: tuple(values) for config_id, values in own.items()}


def _snapshot_attributes(conn: Connection, source: HarvestSource | None, position: dict[str, int]
                         ) -> dict[int, int]:
    """A snapshot harvest's own crawl attribute values: position in the tree-2 order -> value."""
    if source is None or not source.snapshot:
        return {}
    ta, a = s.eav_type_attribute, s.eav_attribute
    rows = conn.execute(select(ta.c.name, a.c.val_int).select_from(
        a.join(ta, and_(ta.c.tree_id == a.c.tree_id, ta.c.id == a.c.type_id)))
        .where(a.c.tree_id == SNAPSHOT_ATTRIBUTE_TREE, a.c.entity_id == source.harvest_id)
        .order_by(a.c.id.desc())).all()
    # the lowest row id of a type wins, as the repository reads it (harvestdef/repositories/crawlattributes.py)
    return {position[name]: value for name, value in rows if name in position and value is not None}


def _overridden(values: tuple[int, ...] | list[int], overrides: dict[int, int]) -> tuple[int, ...]:
    return tuple(overrides.get(number, value) for number, value in enumerate(values))


def select_candidates(conn: Connection, source: HarvestSource, limits: HarvestLimits, rules: PackingRules,
                      now: datetime, alias_timeout: int, batch_size: int = 10_000,
                      seeds: MemberSeeds | None = None) -> Candidates:
    """Stream the harvest's configurations into Candidates (server-side cursor on PostgreSQL), and their seed
    lists and domain traps into ``seeds`` if given.

    A configuration's rows (one per seed list; with the history query, each with all its history rows)
    arrive together; it is a candidate if one of its seed lists holds a seed.
    """
    defaults, own_attributes = crawl_attributes(conn, source)
    template_names = dict(conn.execute(select(s.ordertemplates.c.template_id, s.ordertemplates.c.name)).all())
    candidates = Candidates(limits, rules.expectation)
    summary = summary_is_current(conn)
    if summary:
        query = summary_query(conn, source, rules, now, alias_timeout)
        arriving = ArrivingRows()
        own_ids = np.sort(np.fromiter(own_attributes, dtype=np.int64, count=len(own_attributes)))
        for rows in stream_batches(conn, query, batch_size):
            _add_batch(candidates, arriving, rows, template_names, defaults, own_attributes, own_ids)
        arriving.into(candidates, seeds)
    else:
        log.warning("harvest %s: config_history_summary lacks the newest historyinfo rows (history written by "
                    "other means; `harvestsuite db rebuild-summaries` brings it up to date); reading historyinfo",
                    source.harvest_id)
        query = candidate_query(conn, source, rules, now, alias_timeout)
        _fold_history(candidates, seeds, stream_rows(conn, query, batch_size), template_names, defaults,
                      own_attributes)
    log.info("harvest %s: %d configurations selected%s", source.harvest_id, len(candidates),
             " (history from config_history_summary)" if summary else "")
    return candidates


# summary_query's columns, by name: the integer ones (ordering.COLUMNS but group, which comes from the template
# id) and the texts
_INTEGERS = {"config_id": 0, "domain": 1, "template_id": 3, "max_objects": 4, "max_bytes": 5, "best_objects": 6,
             "best_bytes": 7, "best_stop": 8, "seedlist_id": 9}
_NAME, _DOMAIN_NAME, _TRAPS, _TEXT = (operator.itemgetter(position) for position in (2, 10, 11, 12))


def _add_batch(candidates: Candidates, arriving: ArrivingRows, rows: list[tuple], template_names: dict[int, str],
               defaults: tuple[int, ...], own_attributes: dict[int, tuple[int, ...]],
               own_ids: np.ndarray) -> None:
    """Take in a batch of the summary query's rows column by column: a national snapshot has millions.
    ``own_ids`` are the ids of ``own_attributes``, sorted."""
    count = len(rows)
    columns = {name: np.fromiter(map(operator.itemgetter(position), rows), count=count,
                                 dtype=np.int8 if name == "best_stop" else np.int64)
               for name, position in _INTEGERS.items()}
    template_ids = columns.pop("template_id")
    groups = np.empty(count, dtype=np.int64)
    for template_id in set(template_ids.tolist()):  # a run has a few templates
        groups[template_ids == template_id] = candidates.group_number(template_names[template_id], defaults)
    if own_ids.size:
        # the few configurations with crawl attributes of their own form groups of their own; own_ids is
        # sorted, so a binary search finds them
        config_ids = columns["config_id"]
        found = own_ids[np.minimum(np.searchsorted(own_ids, config_ids), own_ids.size - 1)] == config_ids
        for position in np.flatnonzero(found).tolist():
            groups[position] = candidates.group_number(template_names[int(template_ids[position])],
                                                       own_attributes[int(config_ids[position])])
    columns["group"] = groups
    columns["name"] = np.array(candidates.name_numbers(list(map(_NAME, rows))), dtype=np.int64)
    arriving.add(columns, list(map(_DOMAIN_NAME, rows)), list(map(_TRAPS, rows)), list(map(_TEXT, rows)))


def _fold_history(candidates: Candidates, seeds: MemberSeeds | None, rows: Iterator[tuple],
                  template_names: dict[int, str], defaults: tuple[int, ...],
                  own_attributes: dict[int, tuple[int, ...]]) -> None:
    """Add the configurations of ``candidate_query``'s rows, each folding its history rows on the fly with the
    rule of ``expectation.best_history`` (most objects, older row on ties, stop after the first complete
    row), written out here because it runs once per history row."""
    add = candidates.add_flat
    keep = seeds.add if seeds is not None else None
    complete = int(StopReason.DOWNLOAD_COMPLETE)
    first: tuple | None = None  # the current configuration's first row
    config_id = seedlist_id = None
    seedlists: list[str] = []
    active = settled = False
    best_objects = best_bytes = 0
    best_stop = NO_HISTORY

    def add_current() -> None:
        add(config_id, first[1], template_names[first[3]], own_attributes.get(config_id, defaults), first[2],
            first[4], first[5], best_objects, best_bytes, best_stop)
        if keep is not None:
            keep("\n".join(seedlists), first[9], first[10])

    # config_id … max_bytes, history objects, bytes, stop, domain name, traps, seed list id, seeds, has a seed
    for row in rows:
        if row[0] != config_id:
            if active:
                add_current()
            first, config_id = row, row[0]
            # only the seed lists that hold a seed, as the summary query yields them
            seedlist_id, active = row[11], bool(row[13])
            seedlists = [row[12]] if active else []
            best_objects, best_bytes, best_stop, settled = 0, 0, NO_HISTORY, False
        elif row[11] != seedlist_id:
            # the next seed list of the configuration repeats its history, already folded
            seedlist_id = row[11]
            if row[13]:
                seedlists.append(row[12])
                active = True
            settled = True
        stop = row[8]
        if stop is None or settled:
            continue
        if best_stop == NO_HISTORY or row[6] >= best_objects:
            best_objects, best_bytes, best_stop = row[6], row[7], stop
        settled = stop == complete
    if active:
        add_current()
