"""Domains: creation with their default configuration and seed list, lookup and search by name, comments,
aliases and the domain's crawler traps.

A domain is the aggregate its configurations and seed lists belong to, as in NetarchiveSuite, where the
GUI edits a domain with its configurations and seed lists as one object under the domain's ``edition``.
So every change to a domain's configurations or seed lists takes the domain edition the editor read and
moves it on (``bump_domain_edition``); two curators editing the same domain cannot overwrite each other.

Names are stored in Unicode, lower case (``københavn.dk``); lookups accept the Unicode or the punycode
form. A domain is deleted only while nothing refers to it: no harvest history, no job, no harvest
definition, no alias (``delete``); otherwise it can be deactivated (``domains.isactive``, a HarvestSuite
addition): snapshot harvests then leave it out, and it keeps its history.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Select, and_, delete, exists, func, insert, or_, select, update

from harvestdef.crawlattributes import CONFIGURATION_TREE
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.domainnames import (
    default_seeds,
    domain_of_typed,
    normalize_domain_name,
    to_unicode,
)
from harvestdef.errors import (
    DomainNameError,
    LineRefusal,
    NotFoundError,
    RefusedLinesError,
    ValidationError,
)
from harvestdef.model.definitions import AliasInfo, Domain, ExtendedFieldType
from harvestdef.patterns import bounded_wildcard_search
from harvestdef.phrases import N_, Phrase, phrase
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    stale_edition,
    translate_errors,
    update_with_edition,
)
from harvestdef.repositories.definitioncounts import add_tld_counts
from harvestdef.seeds import numbered_lines, seed_of_line
from harvestdef.settings import Settings
from harvestdef.traps import parse_stored_traps, traps_text, validate_trap_expressions

# Rows fetched per round trip when streaming domains (server-side cursor on PostgreSQL).
STREAM_BATCH = 1000

_alias_target = s.domains.alias("alias_target")


@dataclass(frozen=True)
class DomainDefaults:
    """What a new domain gets, as NetarchiveSuite's Domain.getDefaultDomain: its configuration, seed list,
    template and limits."""

    config_name: str = "defaultconfig"
    seedlist_name: str = "defaultseeds"
    template_name: str = "default_orderxml"
    maxbytes: int = 1_000_000_000
    maxobjects: int = -1
    maxrate: int = 100
    alias_timeout: timedelta = timedelta(days=365)

    @classmethod
    def from_settings(cls, settings: Settings) -> DomainDefaults:
        d = settings.domain
        return cls(config_name=d.defaultConfig, seedlist_name=d.defaultSeedlist,
                   template_name=d.defaultOrderxml, maxbytes=d.defaultMaxbytes, maxobjects=d.defaultMaxobjects,
                   maxrate=d.defaultMaxrate, alias_timeout=timedelta(seconds=d.aliasTimeout))


def lookup_name(name: str) -> str:
    """The stored form of a domain name given in Unicode or punycode (DomainNameError if invalid)."""
    return normalize_domain_name(name)


def _domain_select() -> Select[Any]:
    return select(s.domains, _alias_target.c.name.label("alias_name")).outerjoin(
        _alias_target, s.domains.c.alias == _alias_target.c.domain_id)


def _to_domain(row: Any) -> Domain:
    # NetarchiveSuite's DomainDBDAO writes defaultconfig = -1 until the domain's configurations exist
    defaultconfig = row.defaultconfig if row.defaultconfig is not None and row.defaultconfig >= 0 else None
    return Domain(
        domain_id=row.domain_id, name=row.name, comments=row.comments or "", defaultconfig_id=defaultconfig,
        crawlertraps=parse_stored_traps(row.crawlertraps), edition=row.edition, alias_of_id=row.alias,
        alias_of=row.alias_name, lastaliasupdate=row.lastaliasupdate)


def wildcard_to_like(pattern: str) -> str:
    """A curator's ``*`` pattern as a LIKE pattern (escape ``\\``); punycode labels become Unicode."""
    labels = []
    for label in pattern.strip().lower().split("."):
        if "*" not in label and label.startswith("xn--"):
            # not valid punycode: search for the text as typed
            with suppress(DomainNameError):
                label = to_unicode(label)
        labels.append(label)
    text = ".".join(labels)
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


def like_prefix(like: str) -> str:
    """The literal text a LIKE pattern (escape ``\\``) starts with, up to its first wildcard."""
    prefix: list[str] = []
    escaped = False
    for char in like:
        if escaped:
            prefix.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "%_":
            break
        else:
            prefix.append(char)
    return "".join(prefix)


# What a domain search looks in: the name (with * wildcards), the crawler traps or the comments (text).
SEARCH_FIELDS = ("name", "crawlertraps", "comments")


@dataclass(frozen=True)
class DomainsCreated:
    """What ``create_many`` did: the domains it created, those that existed already (both by stored name,
    each once), and a note for every line that was taken as another name (``www.kb.dk was taken as kb.dk``)."""

    created: list[str]
    existing: list[str]
    notes: list[str]


@dataclass(frozen=True)
class ListedDomain:
    """A domain of a search result, with whether it is active (domains.isactive)."""

    domain: Domain
    is_active: bool


def bump_domain_edition(conn: Connection, actor: str, domain_id: int, expected_edition: int) -> int:
    """Move a domain to its next edition because one of its configurations or seed lists changed.

    Raises StaleEditionError if the domain is no longer at ``expected_edition``. Returns the new edition.
    """
    row = update_with_edition(conn, actor, s.domains, "domain_id", domain_id, expected_edition, {}, "domain")
    return int(row["edition"])


class DomainRepository:
    """Reads and writes domains; the caller owns the transaction of ``conn``."""

    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR, defaults: DomainDefaults | None = None,
                 ) -> None:
        self.conn = conn
        self.actor = actor
        self.defaults = defaults or DomainDefaults()

    @classmethod
    def from_settings(cls, conn: Connection, settings: Settings, actor: str = SYSTEM_ACTOR) -> DomainRepository:
        return cls(conn, actor, DomainDefaults.from_settings(settings))

    # ------------------------------------------------------------ reading
    def get(self, name: str) -> Domain:
        """The domain named ``name`` (Unicode or punycode); NotFoundError if there is none."""
        stored = lookup_name(name)
        row = self.conn.execute(_domain_select().where(s.domains.c.name == stored)).first()
        if row is None:
            raise NotFoundError("domain", stored)
        return _to_domain(row)

    def get_by_id(self, domain_id: int) -> Domain:
        row = self.conn.execute(_domain_select().where(s.domains.c.domain_id == domain_id)).first()
        if row is None:
            raise NotFoundError("domain", domain_id)
        return _to_domain(row)

    def names_by_id(self, domain_ids: Iterable[int]) -> dict[int, str]:
        """The names of these domains (a few hundred at most: one IN list), by id."""
        ids = sorted(set(domain_ids))
        if not ids:
            return {}
        return dict(self.conn.execute(select(s.domains.c.domain_id, s.domains.c.name)
                                      .where(s.domains.c.domain_id.in_(ids))).all())

    def exists(self, name: str) -> bool:
        stored = lookup_name(name)
        return self.conn.scalar(select(s.domains.c.domain_id).where(s.domains.c.name == stored)) is not None

    def count(self) -> int:
        return self.conn.scalar(select(func.count()).select_from(s.domains)) or 0

    def search_page(self, pattern: str, after: str | None, size: int, field: str = "name") -> list[ListedDomain]:
        """Up to ``size`` domains after the name ``after``, by name, matching ``pattern`` in ``field``.

        A keyset page: one range scan of the unique name index, never OFFSET. A name pattern with a
        literal start (``abc*``) is also an indexed prefix range; one without wildcards is an exact lookup
        (Unicode or punycode). Crawler traps and comments are searched for the text anywhere in them.
        Text anywhere (``*abc*``, comments, crawler traps) has no B-tree to use; on PostgreSQL the pg_trgm
        indexes (schema.DOMAIN_TRIGRAM_INDEXES) answer it from the matching rows. A pattern needs three
        literal characters in a row for that, so ``*ab*`` still reads the whole table.

        The pattern is bounded (harvestdef.patterns.bounded_wildcard_search): PatternError if it is too
        long or has too many wildcards.
        """
        pattern = bounded_wildcard_search(pattern)
        d = s.domains
        stmt = _domain_select().add_columns(d.c.isactive)
        if field == "name":
            stmt = stmt.where(*self._name_clauses(pattern))
        elif field in SEARCH_FIELDS:
            text = pattern.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            # ilike: case-insensitive on both databases (SQLite's LIKE is, PostgreSQL's is not)
            stmt = stmt.where(d.c[field].ilike(f"%{text.replace('*', '%')}%", escape="\\"))
        else:
            raise ValidationError(f"a domain search looks in one of {', '.join(SEARCH_FIELDS)}, not {field!r}")
        if after is not None:
            stmt = stmt.where(d.c.name > after)
        rows = self.conn.execute(stmt.order_by(d.c.name).limit(size)).all()
        return [ListedDomain(_to_domain(row), bool(row.isactive)) for row in rows]

    def _name_clauses(self, pattern: str) -> list[Any]:
        d = s.domains
        if not pattern.strip() or pattern.strip() == "*":
            return []
        if "*" not in pattern:
            with suppress(DomainNameError):
                return [d.c.name == lookup_name(pattern)]
        like = wildcard_to_like(pattern)
        clauses: list[Any] = [d.c.name.like(like, escape="\\")]
        prefix = like_prefix(like)
        if prefix:
            # a B-tree range: LIKE alone is no index search on SQLite (case-insensitive), and PostgreSQL's
            # trigram index would also return every name containing the prefix, to be filtered and sorted
            following = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            clauses += [d.c.name >= prefix, d.c.name < following]
        return clauses

    def is_active(self, name: str) -> bool:
        """Whether the domain takes part in snapshot harvests (NotFoundError if there is none)."""
        active = self.conn.scalar(select(s.domains.c.isactive).where(s.domains.c.name == lookup_name(name)))
        if active is None:
            raise NotFoundError("domain", lookup_name(name))
        return bool(active)

    # ------------------------------------------------------------ creating
    def create(self, name: str, comments: str = "") -> Domain:
        """A new domain with its default configuration and seed list (as NetarchiveSuite's Domain.getDefaultDomain).

        The name is normalised (invalid names raise DomainNameError with the reason); the default seeds
        are written in punycode; ConflictError if the domain exists already.
        """
        stored = normalize_domain_name(name)
        template_id = self.conn.scalar(select(s.ordertemplates.c.template_id).where(
            s.ordertemplates.c.name == self.defaults.template_name))
        if template_id is None:
            raise NotFoundError("template", self.defaults.template_name)
        with translate_errors("domain", stored):
            domain_id = self.conn.execute(insert(s.domains).values(
                name=stored, comments=comments, crawlertraps="", edition=1)).inserted_primary_key[0]
            seedlist_id = self.conn.execute(insert(s.seedlists).values(
                name=self.defaults.seedlist_name, comments="", domain_id=domain_id,
                seeds="\n".join(default_seeds(stored)))).inserted_primary_key[0]
            config_id = self.conn.execute(insert(s.configurations).values(
                name=self.defaults.config_name, comments="", domain_id=domain_id, template_id=template_id,
                maxobjects=self.defaults.maxobjects, maxbytes=self.defaults.maxbytes,
                maxrate=self.defaults.maxrate)).inserted_primary_key[0]
            self.conn.execute(insert(s.config_seedlists).values(config_id=config_id, seedlist_id=seedlist_id))
            self.conn.execute(update(s.domains).where(s.domains.c.domain_id == domain_id).values(
                defaultconfig=config_id))
        add_tld_counts(self.conn, select(s.domains.c.name).where(s.domains.c.domain_id == domain_id), 1)
        for table, key_column, key in ((s.domains, "domain_id", domain_id),
                                       (s.seedlists, "seedlist_id", seedlist_id),
                                       (s.configurations, "config_id", config_id)):
            record_audit(self.conn, self.actor, table.name, key, "insert", None,
                         fetch_row(self.conn, table, key_column, key))
        return self.get_by_id(domain_id)

    def get_or_create(self, name: str) -> tuple[Domain, bool]:
        """The domain, and whether it was created now."""
        stored = normalize_domain_name(name)
        row = self.conn.execute(_domain_select().where(s.domains.c.name == stored)).first()
        if row is not None:
            return _to_domain(row), False
        return self.create(stored), True

    def create_many(self, lines: str | Iterable[str], what: str | Phrase | None = None,
                    field: str | None = "names") -> DomainsCreated:
        """Create the domains that ``lines`` name (a text, or one line per item): all of them or none.

        Each line is a domain name, a host or a URL (harvestdef.domainnames.domain_of_typed): it becomes
        its registered domain, with a note when that is not what was typed. Blank and ``#`` lines are
        skipped. If any line is refused, RefusedLinesError names every refused line (number, line,
        reason) and nothing is created.
        """
        typed: list[tuple[str, str | None]] = []
        refusals: list[LineRefusal] = []
        for number, line in numbered_lines(lines):
            name = seed_of_line(line)
            if name is None:
                continue
            try:
                result = domain_of_typed(name)
            except DomainNameError as exc:
                refusals.append(LineRefusal.of(number, name, exc.reason_phrase))
                continue
            typed.append((result.domain, result.note))
        if refusals:
            raise RefusedLinesError(what or phrase(N_("domain names")), refusals, field)
        created: list[str] = []
        existing: list[str] = []
        notes: list[str] = []
        for name, note in typed:
            if note is not None:
                notes.append(note)
            if name in created or name in existing:
                continue
            _, is_new = self.get_or_create(name)
            (created if is_new else existing).append(name)
        return DomainsCreated(created, existing, notes)

    # ------------------------------------------------------------ editing
    def _update(self, domain: str, expected_edition: int, values: dict[str, Any]) -> Domain:
        current = self.get(domain)
        update_with_edition(self.conn, self.actor, s.domains, "domain_id", current.domain_id, expected_edition,
                            values, "domain")
        return self.get_by_id(current.domain_id)

    def set_crawler_traps(self, domain: str, traps: str, expected_edition: int) -> Domain:
        """Replace the domain's crawler traps; each line must compile (CrawlerTrapError names the line)."""
        expressions = validate_trap_expressions(traps)
        return self._update(domain, expected_edition, {"crawlertraps": traps_text(expressions)})

    def edit(self, domain: str, expected_edition: int, *, comments: str | None = None,
             crawlertraps: str | None = None, alias_of: str | None = None, clear_alias: bool = False,
             active: bool | None = None, now: datetime | None = None) -> Domain:
        """Change what is given (None = keep) as one update: one edition, one audit row, all or nothing.

        ``alias_of`` makes the domain an alias of that domain, confirmed at ``now`` (default: the present
        time); naming the present alias target confirms (renews) the alias, so it expires a full timeout
        from ``now``. ``clear_alias`` makes it a domain of its own again. The crawler traps must each
        compile (CrawlerTrapError names the line); an alias is refused as ``_alias_values`` says.
        """
        current = self.get(domain)
        values: dict[str, Any] = {}
        if comments is not None:
            values["comments"] = comments
        if crawlertraps is not None:
            values["crawlertraps"] = traps_text(validate_trap_expressions(crawlertraps))
        if clear_alias:
            values.update(alias=None, lastaliasupdate=None)
        elif alias_of is not None:
            values.update(self._alias_values(current, alias_of, now))
        if active is not None:
            values["isactive"] = active
        return self._update(current.name, expected_edition, values)

    def set_active(self, domain: str, active: bool, expected_edition: int) -> Domain:
        """Activate or deactivate a domain: an inactive one is left out of snapshot harvests."""
        return self._update(domain, expected_edition, {"isactive": active})

    def has_history(self, domain: str) -> bool:
        """Whether harvest history refers to one of the domain's configurations (an indexed lookup)."""
        configs = select(s.configurations.c.config_id).where(
            s.configurations.c.domain_id == self.get(domain).domain_id)
        return bool(self.conn.scalar(select(exists().where(s.historyinfo.c.config_id.in_(configs)))))

    def references(self, domain: str) -> list[str]:
        """What refers to the domain and so keeps it from being deleted (empty: it can be deleted).

        job_configs and harvest_configs have no index on config_id alone, so this reads them through:
        for deletion, not for every page view (``has_history`` is the cheap check).
        """
        current = self.get(domain)
        configs = select(s.configurations.c.config_id).where(s.configurations.c.domain_id == current.domain_id)
        found = []
        for table, what in ((s.historyinfo, "harvest history"), (s.job_configs, "jobs"),
                            (s.harvest_configs, "harvest definitions")):
            if self.conn.scalar(select(exists().where(table.c.config_id.in_(configs)))):
                found.append(what)
        if self.aliases_of(current.name):
            found.append("aliases of it")
        return found

    def delete(self, domain: str, expected_edition: int) -> None:
        """Delete a domain with its configurations and seed lists, if nothing refers to it.

        ValidationError names what refers to it (harvest history above all: that domain stays, and can be
        deactivated instead); StaleEditionError if it changed since ``expected_edition`` was read.
        """
        current = self.get(domain)
        found = self.references(current.name)
        if found:
            raise ValidationError(f"domain {current.name!r} cannot be deleted: {', '.join(found)} refer to it; "
                                  f"deactivate it instead")
        key = current.domain_id
        d, c, sl = s.domains, s.configurations, s.seedlists
        before = fetch_row(self.conn, d, "domain_id", key)
        if before is None or before["edition"] != expected_edition:
            raise stale_edition(self.conn, self.actor, "domains", key, "domain", expected_edition, before)
        add_tld_counts(self.conn, select(d.c.name).where(d.c.domain_id == key), -1)
        for unused in (s.unused_configurations, s.unused_seedlists):
            self.conn.execute(delete(unused).where(unused.c.domain_id == key))
        self.conn.execute(update(d).where(d.c.domain_id == key).values(defaultconfig=None))
        configs = select(c.c.config_id).where(c.c.domain_id == key)
        for table, column in ((s.config_seedlists, s.config_seedlists.c.config_id),
                              (s.config_passwords, s.config_passwords.c.config_id)):
            self.conn.execute(delete(table).where(column.in_(configs)))
        # the configurations' crawl attributes (EAV tree 2), which a later configuration could inherit by id
        self.conn.execute(delete(s.eav_attribute).where(s.eav_attribute.c.tree_id == CONFIGURATION_TREE,
                                                        s.eav_attribute.c.entity_id.in_(configs)))
        for table, key_column in ((c, "config_id"), (sl, "seedlist_id")):
            for row in self.conn.execute(select(table).where(table.c.domain_id == key)).mappings().all():
                record_audit(self.conn, self.actor, table.name, row[key_column], "delete", dict(row), None)
            self.conn.execute(delete(table).where(table.c.domain_id == key))
        for table in (s.passwords, s.ownerinfo):
            self.conn.execute(delete(table).where(table.c.domain_id == key))
        domain_fields = select(s.extendedfield.c.extendedfield_id).where(
            s.extendedfield.c.extendedfieldtype_id == int(ExtendedFieldType.DOMAINS))
        self.conn.execute(delete(s.extendedfieldvalue).where(
            s.extendedfieldvalue.c.instance_id == key, s.extendedfieldvalue.c.extendedfield_id.in_(domain_fields)))
        self.conn.execute(delete(d).where(d.c.domain_id == key))
        record_audit(self.conn, self.actor, d.name, key, "delete", before, None)

    # ------------------------------------------------------------ aliases
    def _alias_values(self, current: Domain, alias_of: str, now: datetime | None) -> dict[str, Any]:
        """The columns that make ``current`` an alias of ``alias_of``.

        Refused: an alias of a domain that does not exist, of itself, of a domain that is itself an alias,
        and making a domain an alias while other domains are aliases of it (aliases never chain, so one
        lookup resolves them); each refusal names the field ``alias``.
        """
        try:
            return self._checked_alias_values(current, alias_of, now)
        except (ValidationError, NotFoundError) as error:
            error.field = "alias"
            raise

    def _checked_alias_values(self, current: Domain, alias_of: str, now: datetime | None) -> dict[str, Any]:
        target = self.get(alias_of)
        if target.domain_id == current.domain_id:
            raise ValidationError(phrase(N_("domain %(name)s cannot be an alias of itself"), name=repr(current.name)))
        if target.is_alias():
            raise ValidationError(phrase(
                N_("domain %(name)s cannot be an alias of %(target)s: %(target)s is itself an alias of %(alias_of)s"),
                name=repr(current.name), target=repr(target.name), alias_of=repr(target.alias_of)))
        aliased_by = self.aliases_of(current.name)
        if aliased_by:
            if len(aliased_by) == 1:
                raise ValidationError(phrase(N_("domain %(name)s cannot become an alias: %(aliases)s is an alias of "
                                                "it"), name=repr(current.name), aliases=aliased_by[0]))
            raise ValidationError(phrase(N_("domain %(name)s cannot become an alias: %(aliases)s are aliases of it"),
                                         name=repr(current.name), aliases=", ".join(aliased_by[:5])))
        return {"alias": target.domain_id, "lastaliasupdate": now or utcnow()}

    def is_alias_expired(self, domain: Domain, now: datetime) -> bool:
        info = domain.alias_info()
        return info is not None and info.is_expired(now, self.defaults.alias_timeout)

    def aliases_of(self, domain: str) -> list[str]:
        """Names of the domains that are aliases of ``domain``."""
        target = lookup_name(domain)
        return list(self.conn.scalars(
            select(s.domains.c.name).join(_alias_target, s.domains.c.alias == _alias_target.c.domain_id)
            .where(_alias_target.c.name == target).order_by(s.domains.c.name)))

    def alias_summary(self, now: datetime, after: tuple[str, str] | None = None,
                      limit: int | None = None) -> Iterator[tuple[AliasInfo, bool]]:
        """Every alias with whether it has expired at ``now`` (the GUI's "Alias summary"), streamed, by the
        domain it is an alias of, then by its own name; ``after`` (that pair) and ``limit`` make a page."""
        stmt = (select(s.domains.c.name, _alias_target.c.name.label("alias_name"), s.domains.c.lastaliasupdate)
                .join(_alias_target, s.domains.c.alias == _alias_target.c.domain_id)
                .order_by(_alias_target.c.name, s.domains.c.name))
        if after is not None:
            stmt = stmt.where(or_(_alias_target.c.name > after[0],
                                  and_(_alias_target.c.name == after[0], s.domains.c.name > after[1])))
        if limit is not None:
            stmt = stmt.limit(limit)
        for row in self.conn.execute(stmt.execution_options(yield_per=STREAM_BATCH)):
            info = AliasInfo(row.name, row.alias_name, row.lastaliasupdate)
            yield info, info.is_expired(now, self.defaults.alias_timeout)

    def alias_timeout(self) -> timedelta:
        """How long an alias holds after its last confirmation (harvester.aliases.timeout)."""
        return self.defaults.alias_timeout

    # ------------------------------------------------------------ statistics
    def tld_counts(self, after: str | None = None, limit: int | None = None) -> list[tuple[str, int]]:
        """Domains per top-level domain, by TLD (the GUI's "Domains per TLD"); ``after``/``limit`` page it.

        Domains named by an IP address count under IP_ADDRESS_TLD. Read from domain_tld_counts, which the
        writers of domains keep (harvestdef/repositories/definitioncounts.py): a key range, not a pass
        over the names.
        """
        t = s.domain_tld_counts
        stmt = select(t.c.tld, t.c.domains).order_by(t.c.tld)
        if after is not None:
            stmt = stmt.where(t.c.tld > after)
        if limit is not None:
            stmt = stmt.limit(limit)
        return [(row.tld, int(row.domains)) for row in self.conn.execute(stmt)]
