"""Harvest configurations of a domain: a crawl template, seed lists and limits.

Limits use NetarchiveSuite's convention, -1 = unlimited, and anything below -1 is refused. The seed lists
of a configuration must belong to its own domain, and their seeds must pass harvestdef.seeds' rule when
a configuration is created or its seed lists are chosen: a list stored before the rule held (or written
past it into the database) is refused with its bad lines named, rather than harvested as ``http://this/``.
The domain's default configuration (the one snapshot harvests use) cannot be deleted, nor can a
configuration that a harvest definition, a job or the harvest history refers to. A change to a
configuration is a change to its domain: it takes the domain edition the editor read
(see harvestdef.repositories.domains).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, exists, func, insert, select, update

from harvestdef.crawlattributes import CONFIGURATION_TREE
from harvestdef.db import schema as s
from harvestdef.errors import LineRefusal, NotFoundError, RefusedLinesError, ValidationError
from harvestdef.model.definitions import DomainConfiguration
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    translate_errors,
    update_with_edition,
)
from harvestdef.repositories.crawlattributes import CrawlAttributeRepository
from harvestdef.repositories.definitioncounts import recheck_unused
from harvestdef.repositories.domains import DomainRepository, bump_domain_edition
from harvestdef.seeds import ANY_SEED, check_seed_list
from harvestdef.settings import Settings
from harvestdef.validation import check_name

_config_select = (
    select(s.configurations, s.domains.c.name.label("domain_name"), s.domains.c.defaultconfig,
           s.ordertemplates.c.name.label("template_name"))
    .join(s.domains, s.configurations.c.domain_id == s.domains.c.domain_id)
    .join(s.ordertemplates, s.configurations.c.template_id == s.ordertemplates.c.template_id)
)


@dataclass(frozen=True)
class UnusedConfiguration:
    """A configuration no harvest definition uses and that is not its domain's default."""

    config_id: int
    domain: str
    name: str
    template_name: str


def check_limit(what: str, value: int | None) -> None:
    """-1 means unlimited; 0 and up are real limits; anything else is a mistake."""
    if value is not None and value < -1:
        error = ValidationError(f"{what} must be -1 (unlimited) or at least 0, not {value}")
        error.field = what  # a form shows it beside its field, named by its label: the phrase leaves it out
        error.phrase = phrase(N_("must be -1 (unlimited) or at least 0, not %(value)s"), value=value)
        raise error


class ConfigurationRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR, valid_seed_regex: str = ANY_SEED) -> None:
        self.conn = conn
        self.actor = actor
        self.valid_seed_regex = valid_seed_regex
        self.domains = DomainRepository(conn, actor)

    @classmethod
    def from_settings(cls, conn: Connection, settings: Settings, actor: str = SYSTEM_ACTOR
                      ) -> ConfigurationRepository:
        return cls(conn, actor, settings.domain.validSeedRegex)

    def _to_configuration(self, row: Any) -> DomainConfiguration:
        seedlist_ids = tuple(self.conn.scalars(select(s.config_seedlists.c.seedlist_id).where(
            s.config_seedlists.c.config_id == row.config_id).order_by(s.config_seedlists.c.seedlist_id)))
        return DomainConfiguration(
            config_id=row.config_id, name=row.name, comments=row.comments or "", domain_id=row.domain_id,
            domain_name=row.domain_name, template_id=row.template_id, template_name=row.template_name,
            maxobjects=row.maxobjects, maxbytes=row.maxbytes, maxrate=row.maxrate, seedlist_ids=seedlist_ids,
            is_default=row.defaultconfig == row.config_id)

    # ------------------------------------------------------------ reading
    def get(self, domain: str, name: str) -> DomainConfiguration:
        domain_id = self.domains.get(domain).domain_id
        row = self.conn.execute(_config_select.where(
            s.configurations.c.domain_id == domain_id, s.configurations.c.name == name)).first()
        if row is None:
            raise NotFoundError("configuration", f"{domain}/{name}")
        return self._to_configuration(row)

    def get_by_id(self, config_id: int) -> DomainConfiguration:
        row = self.conn.execute(_config_select.where(s.configurations.c.config_id == config_id)).first()
        if row is None:
            raise NotFoundError("configuration", config_id)
        return self._to_configuration(row)

    def list_for_domain(self, domain: str) -> list[DomainConfiguration]:
        domain_id = self.domains.get(domain).domain_id
        rows = self.conn.execute(_config_select.where(s.configurations.c.domain_id == domain_id)
                                 .order_by(s.configurations.c.name)).all()
        return [self._to_configuration(row) for row in rows]

    def unused(self, after: int | None, size: int) -> list[UnusedConfiguration]:
        """Up to ``size`` unused configurations after the id ``after``, oldest first (a keyset page on the
        primary key of unused_configurations, which the writers keep: a walk over millions of
        configurations never repeats or skips one, and never tests the used ones)."""
        u, c, d, t = s.unused_configurations, s.configurations, s.domains, s.ordertemplates
        stmt = (select(c.c.config_id, d.c.name.label("domain"), c.c.name, t.c.name.label("template"))
                .select_from(u).join(c, c.c.config_id == u.c.config_id)
                .join(d, d.c.domain_id == c.c.domain_id).join(t, t.c.template_id == c.c.template_id)
                .order_by(u.c.config_id).limit(size))
        if after is not None:
            stmt = stmt.where(u.c.config_id > after)
        return [UnusedConfiguration(row.config_id, row.domain, row.name, row.template)
                for row in self.conn.execute(stmt)]

    def count_unused(self) -> int:
        """How many configurations nothing uses: a count of unused_configurations' keys, not of all."""
        return self.conn.scalar(select(func.count()).select_from(s.unused_configurations)) or 0

    def default_of(self, domain: str) -> DomainConfiguration:
        owner = self.domains.get(domain)
        if owner.defaultconfig_id is None:
            raise NotFoundError("default configuration of domain", owner.name)
        return self.get_by_id(owner.defaultconfig_id)

    # ------------------------------------------------------------ helpers
    def _template_id(self, template: str) -> int:
        template_id = self.conn.scalar(select(s.ordertemplates.c.template_id).where(
            s.ordertemplates.c.name == template))
        if template_id is None:
            raise NotFoundError("template", template)
        return int(template_id)

    def _seedlist_ids(self, domain_id: int, domain_name: str, seedlists: Iterable[str | int]) -> list[int]:
        """Seed lists named (str) or numbered (int); each must belong to the domain. RefusedLinesError names
        every one that does not (its 1-based number in ``seedlists``, and why) before any is used."""
        ids: list[int] = []
        refusals: list[LineRefusal] = []
        for number, seedlist in enumerate(seedlists, start=1):
            column = s.seedlists.c.seedlist_id if isinstance(seedlist, int) else s.seedlists.c.name
            rows = self.conn.execute(select(s.seedlists.c.seedlist_id, s.seedlists.c.domain_id, s.domains.c.name)
                                     .join(s.domains, s.seedlists.c.domain_id == s.domains.c.domain_id)
                                     .where(column == seedlist)).all()
            own = [r for r in rows if r.domain_id == domain_id]
            if own:
                ids.append(own[0].seedlist_id)
            elif rows and isinstance(seedlist, int):
                refusals.append(LineRefusal.of(number, str(seedlist), phrase(N_(
                    "seed list %(seedlist)s belongs to domain %(domain)s, not to %(own)s: a configuration uses seed "
                    "lists of its own domain only"), seedlist=seedlist, domain=rows[0].name, own=domain_name)))
            else:
                refusals.append(LineRefusal.of(number, str(seedlist), phrase(
                    N_("domain %(domain)s has no seed list %(seedlist)s"), domain=domain_name, seedlist=seedlist)))
        if refusals:
            raise RefusedLinesError(phrase(N_("seed lists of domain %(domain)s"), domain=domain_name), refusals,
                                    "seedlists")
        for seedlist_id in ids:
            self._check_seeds(seedlist_id, domain_name)
        if not ids:
            raise ValidationError(phrase(N_("a configuration needs at least one seed list")))
        return list(dict.fromkeys(ids))

    def _check_seeds(self, seedlist_id: int, domain_name: str) -> None:
        """Refuse a seed list whose stored seeds break harvestdef.seeds' rule, naming every bad line."""
        row = self.conn.execute(select(s.seedlists.c.name, s.seedlists.c.seeds).where(
            s.seedlists.c.seedlist_id == seedlist_id)).one()
        refusals = check_seed_list(domain_name, row.seeds or "", self.valid_seed_regex).refusals
        if refusals:
            raise RefusedLinesError(phrase(N_("seed list %(domain)s/%(name)s"), domain=domain_name, name=row.name),
                                    refusals, "seedlists")

    def _set_seedlists(self, config_id: int, seedlist_ids: Sequence[int]) -> None:
        self.conn.execute(delete(s.config_seedlists).where(s.config_seedlists.c.config_id == config_id))
        self.conn.execute(insert(s.config_seedlists),
                          [{"config_id": config_id, "seedlist_id": sid} for sid in seedlist_ids])

    # ------------------------------------------------------------ writing
    def create(self, domain: str, name: str, template: str, seedlists: Iterable[str | int], domain_edition: int,
               maxobjects: int = -1, maxbytes: int = -1, maxrate: int | None = None,
               comments: str = "", crawl_attributes: Mapping[str, int] | None = None) -> DomainConfiguration:
        """A new configuration of ``domain``; ConflictError if the domain has one of that name. With
        ``crawl_attributes`` it gets every crawl attribute (NetarchiveSuite's way: a type not given has its
        default), recorded in the one audit row of its creation."""
        owner = self.domains.get(domain)
        name = check_name(name, "configuration", s.configurations.c.name)
        for what, value in (("maxobjects", maxobjects), ("maxbytes", maxbytes), ("maxrate", maxrate)):
            check_limit(what, value)
        template_id = self._template_id(template)
        seedlist_ids = self._seedlist_ids(owner.domain_id, owner.name, seedlists)
        bump_domain_edition(self.conn, self.actor, owner.domain_id, domain_edition)
        with translate_errors("configuration", name.strip(), owner.name):
            config_id = self.conn.execute(insert(s.configurations).values(
                name=name.strip(), comments=comments, domain_id=owner.domain_id, template_id=template_id,
                maxobjects=maxobjects, maxbytes=maxbytes, maxrate=maxrate)).inserted_primary_key[0]
        self._set_seedlists(config_id, seedlist_ids)
        created = self._audit_row(config_id)
        if crawl_attributes is not None and created is not None:
            # one creation, one entry in its history: the attributes' own audit would be a second "created"
            written = CrawlAttributeRepository(self.conn, self.actor).set_configuration(
                config_id, crawl_attributes, audited=False)
            created.update(written.own)
        record_audit(self.conn, self.actor, "configurations", config_id, "insert", None, created)
        recheck_unused(self.conn, [owner.domain_id])
        return self.get_by_id(config_id)

    def _audit_row(self, config_id: int) -> dict[str, Any] | None:
        row = fetch_row(self.conn, s.configurations, "config_id", config_id)
        if row is not None:
            row["seedlists"] = list(self.conn.scalars(select(s.config_seedlists.c.seedlist_id).where(
                s.config_seedlists.c.config_id == config_id).order_by(s.config_seedlists.c.seedlist_id)))
        return row

    def update(self, domain: str, name: str, domain_edition: int, *, new_name: str | None = None,
               template: str | None = None, seedlists: Iterable[str | int] | None = None,
               maxobjects: int | None = None, maxbytes: int | None = None, maxrate: int | None = None,
               comments: str | None = None) -> DomainConfiguration:
        """Change what is given (None = keep); the domain must still be at ``domain_edition``."""
        current = self.get(domain, name)
        values: dict[str, Any] = {}
        for what, value in (("maxobjects", maxobjects), ("maxbytes", maxbytes), ("maxrate", maxrate)):
            check_limit(what, value)
            if value is not None:
                values[what] = value
        if template is not None:
            values["template_id"] = self._template_id(template)
        if comments is not None:
            values["comments"] = comments
        if new_name is not None:
            values["name"] = check_name(new_name, "configuration", s.configurations.c.name)
        seedlist_ids = (None if seedlists is None
                        else self._seedlist_ids(current.domain_id, current.domain_name, seedlists))
        bump_domain_edition(self.conn, self.actor, current.domain_id, domain_edition)
        before = self._audit_row(current.config_id)
        if values:
            with translate_errors("configuration", values.get("name", name), current.domain_name):
                self.conn.execute(update(s.configurations).where(
                    s.configurations.c.config_id == current.config_id).values(**values))
        if seedlist_ids is not None:
            self._set_seedlists(current.config_id, seedlist_ids)
        record_audit(self.conn, self.actor, "configurations", current.config_id, "update", before,
                     self._audit_row(current.config_id))
        recheck_unused(self.conn, [current.domain_id])
        return self.get_by_id(current.config_id)

    def set_default(self, domain: str, name: str, domain_edition: int) -> DomainConfiguration:
        """Make ``name`` the configuration snapshot harvests use for ``domain``."""
        current = self.get(domain, name)
        update_with_edition(self.conn, self.actor, s.domains, "domain_id", current.domain_id, domain_edition,
                            {"defaultconfig": current.config_id}, "domain")
        recheck_unused(self.conn, [current.domain_id])
        return self.get_by_id(current.config_id)

    def delete(self, domain: str, name: str, domain_edition: int) -> None:
        """Delete a configuration nothing refers to; never the domain's default configuration."""
        current = self.get(domain, name)
        if current.is_default:
            raise ValidationError(
                f"configuration {current.domain_name}/{name} is the domain's default configuration; make another "
                f"one the default first")
        for table, what in ((s.harvest_configs, "a harvest definition"), (s.job_configs, "a job"),
                            (s.historyinfo, "the harvest history")):
            if self.conn.scalar(select(exists().where(table.c.config_id == current.config_id))):
                raise ValidationError(
                    f"configuration {current.domain_name}/{name} cannot be deleted: {what} refers to it")
        bump_domain_edition(self.conn, self.actor, current.domain_id, domain_edition)
        before = self._audit_row(current.config_id)
        self.conn.execute(delete(s.config_seedlists).where(s.config_seedlists.c.config_id == current.config_id))
        self.conn.execute(delete(s.config_passwords).where(s.config_passwords.c.config_id == current.config_id))
        # its crawl attributes go with it: a later configuration may get its id (SQLite reuses the highest)
        CrawlAttributeRepository(self.conn, self.actor).delete_entity(CONFIGURATION_TREE, current.config_id)
        self.conn.execute(delete(s.configurations).where(s.configurations.c.config_id == current.config_id))
        record_audit(self.conn, self.actor, "configurations", current.config_id, "delete", before, None)
        recheck_unused(self.conn, [current.domain_id])
