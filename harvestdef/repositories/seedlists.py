"""Seed lists of a domain: creation and update, with every seed checked before it is stored.

Every line goes through harvestdef.seeds' rule (``check_seed_list``): an http(s) URL of the list's own
domain, matching the site's ``validSeedRegex``. One refused line refuses the whole list:
RefusedLinesError names every refused line with its number and the reason, and nothing is written.
Accepted seeds are stored one per line as the crawler will use them (``http://`` added where the line had
no scheme, the host in punycode); blank and comment lines and duplicates are dropped. A list holds at
most 8 MiB, as in NetarchiveSuite. A change to a seed list is a change to its domain: it takes the domain
edition the editor read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, func, insert, or_, select

from harvestdef.db import schema as s
from harvestdef.destinations import DestinationPolicy
from harvestdef.errors import NotFoundError, RefusedLinesError, ValidationError
from harvestdef.model.definitions import SeedList
from harvestdef.phrases import N_, Phrase, phrase
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    translate_errors,
)
from harvestdef.repositories.definitioncounts import recheck_unused
from harvestdef.repositories.domains import DomainRepository, bump_domain_edition
from harvestdef.seeds import ANY_SEED, check_seed_list
from harvestdef.settings import Settings
from harvestdef.validation import check_name

MAX_SEEDLIST_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class UnusedSeedList:
    """A seed list that no configuration uses, so no harvest reads it."""

    seedlist_id: int
    domain: str
    name: str


@dataclass(frozen=True)
class ConfigurationSeeds:
    """A configuration of a harvest, by domain and name, with its seed lists (an event harvest's seeds)."""

    domain: str
    configuration: str
    seedlists: tuple[SeedList, ...]


def _seed_list(domain: str, name: str) -> Phrase:
    return phrase(N_("seed list %(domain)s/%(name)s"), domain=domain, name=name)


def checked_seeds(domain: str, seeds: str | Iterable[str], valid_seed_regex: str = ANY_SEED,
                  field: str | None = "seeds", what: str | Phrase | None = None,
                  destinations: DestinationPolicy | None = None) -> tuple[str, ...]:
    """The seeds of a seed list of ``domain`` as they are stored; RefusedLinesError names every refused
    line (``what`` names the input in the message, ``field`` the request field), ValidationError if the
    list is over 8 MiB. ``destinations``: the policy seeds' hosts pass before resolution (None: not asked)."""
    checked = check_seed_list(domain, seeds, valid_seed_regex, destinations)
    if checked.refusals:
        raise RefusedLinesError(what or phrase(N_("seeds of %(domain)s"), domain=domain), checked.refusals, field)
    size = len("\n".join(checked.seeds).encode("utf-8"))
    if size > MAX_SEEDLIST_BYTES:
        raise ValidationError(f"the seed list is {size} bytes; a seed list holds at most {MAX_SEEDLIST_BYTES}")
    return checked.seeds


def _to_seedlist(row: Any) -> SeedList:
    return SeedList(seedlist_id=row.seedlist_id, name=row.name, comments=row.comments or "",
                    domain_id=row.domain_id, seeds=tuple(line for line in row.seeds.splitlines() if line))


class SeedListRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR, valid_seed_regex: str = ANY_SEED,
                 destinations: DestinationPolicy | None = None) -> None:
        self.conn = conn
        self.actor = actor
        self.valid_seed_regex = valid_seed_regex
        # the destination policy a saved seed's host passes before resolution (None: not asked)
        self.destinations = destinations
        self.domains = DomainRepository(conn, actor)

    @classmethod
    def from_settings(cls, conn: Connection, settings: Settings, actor: str = SYSTEM_ACTOR) -> SeedListRepository:
        return cls(conn, actor, settings.domain.validSeedRegex, settings.network.policy())

    def get(self, domain: str, name: str) -> SeedList:
        domain_id = self.domains.get(domain).domain_id
        row = self.conn.execute(select(s.seedlists).where(
            s.seedlists.c.domain_id == domain_id, s.seedlists.c.name == name)).first()
        if row is None:
            raise NotFoundError("seed list", f"{domain}/{name}")
        return _to_seedlist(row)

    def get_by_id(self, seedlist_id: int) -> SeedList:
        row = self.conn.execute(select(s.seedlists).where(s.seedlists.c.seedlist_id == seedlist_id)).first()
        if row is None:
            raise NotFoundError("seed list", seedlist_id)
        return _to_seedlist(row)

    def unused(self, after: int | None, size: int) -> list[UnusedSeedList]:
        """Up to ``size`` seed lists no configuration uses, after the id ``after``, oldest first (a keyset
        page on the primary key of unused_seedlists, which the writers keep)."""
        u, sl, d = s.unused_seedlists, s.seedlists, s.domains
        stmt = (select(sl.c.seedlist_id, d.c.name.label("domain"), sl.c.name)
                .select_from(u).join(sl, sl.c.seedlist_id == u.c.seedlist_id)
                .join(d, d.c.domain_id == sl.c.domain_id).order_by(u.c.seedlist_id).limit(size))
        if after is not None:
            stmt = stmt.where(u.c.seedlist_id > after)
        return [UnusedSeedList(row.seedlist_id, row.domain, row.name) for row in self.conn.execute(stmt)]

    def count_unused(self) -> int:
        """How many seed lists nothing uses: a count of unused_seedlists' keys, not of all seed lists."""
        return self.conn.scalar(select(func.count()).select_from(s.unused_seedlists)) or 0

    def of_harvest(self, harvest_id: int, after: tuple[str, str] | None, size: int) -> list[ConfigurationSeeds]:
        """The seeds of a selective or event harvest: up to ``size`` of its configurations by domain and name,
        after (domain, configuration) ``after``, each with its seed lists by name. Two queries: a keyset page
        of harvest_configs, and the seed lists of that page."""
        hc, c, d = s.harvest_configs, s.configurations, s.domains
        stmt = (select(c.c.config_id, d.c.name.label("domain"), c.c.name.label("configuration"))
                .select_from(hc).join(c, c.c.config_id == hc.c.config_id).join(d, d.c.domain_id == c.c.domain_id)
                .where(hc.c.harvest_id == harvest_id).order_by(d.c.name, c.c.name).limit(size))
        if after is not None:
            domain, configuration = after
            stmt = stmt.where(or_(d.c.name > domain, and_(d.c.name == domain, c.c.name > configuration)))
        configurations = self.conn.execute(stmt).all()
        lists: dict[int, list[SeedList]] = {row.config_id: [] for row in configurations}
        if lists:
            cs, sl = s.config_seedlists, s.seedlists
            rows = self.conn.execute(select(cs.c.config_id, sl).join(sl, sl.c.seedlist_id == cs.c.seedlist_id)
                                     .where(cs.c.config_id.in_(list(lists))).order_by(sl.c.name))
            for row in rows:
                lists[row.config_id].append(_to_seedlist(row))
        return [ConfigurationSeeds(row.domain, row.configuration, tuple(lists[row.config_id]))
                for row in configurations]

    def list_for_domain(self, domain: str) -> list[SeedList]:
        domain_id = self.domains.get(domain).domain_id
        rows = self.conn.execute(select(s.seedlists).where(s.seedlists.c.domain_id == domain_id)
                                 .order_by(s.seedlists.c.name))
        return [_to_seedlist(row) for row in rows]

    def create(self, domain: str, name: str, seeds: str | Iterable[str], domain_edition: int,
               comments: str = "") -> SeedList:
        """A new seed list of ``domain``; ConflictError if the domain has one of that name."""
        owner = self.domains.get(domain)
        name = check_name(name, "seed list", s.seedlists.c.name)
        normalized = checked_seeds(owner.name, seeds, self.valid_seed_regex, what=_seed_list(owner.name, name),
                                   destinations=self.destinations)
        bump_domain_edition(self.conn, self.actor, owner.domain_id, domain_edition)
        with translate_errors("seed list", name.strip(), owner.name):
            seedlist_id = self.conn.execute(insert(s.seedlists).values(
                name=name.strip(), comments=comments, domain_id=owner.domain_id,
                seeds="\n".join(normalized))).inserted_primary_key[0]
        record_audit(self.conn, self.actor, "seedlists", seedlist_id, "insert", None,
                     fetch_row(self.conn, s.seedlists, "seedlist_id", seedlist_id))
        recheck_unused(self.conn, [owner.domain_id])
        return self.get_by_id(seedlist_id)

    def update(self, domain: str, name: str, domain_edition: int, seeds: str | Iterable[str] | None = None,
               comments: str | None = None) -> SeedList:
        """Replace the seeds and/or the comments of a seed list."""
        current = self.get(domain, name)
        values: dict[str, Any] = {}
        if seeds is not None:
            owner = self.domains.get(domain).name
            values["seeds"] = "\n".join(checked_seeds(owner, seeds, self.valid_seed_regex,
                                                      what=_seed_list(owner, current.name),
                                                      destinations=self.destinations))
        if comments is not None:
            values["comments"] = comments
        bump_domain_edition(self.conn, self.actor, current.domain_id, domain_edition)
        before = fetch_row(self.conn, s.seedlists, "seedlist_id", current.seedlist_id)
        if values:
            self.conn.execute(s.seedlists.update().where(
                s.seedlists.c.seedlist_id == current.seedlist_id).values(**values))
        after = fetch_row(self.conn, s.seedlists, "seedlist_id", current.seedlist_id)
        record_audit(self.conn, self.actor, "seedlists", current.seedlist_id, "update", before, after)
        return self.get_by_id(current.seedlist_id)
