"""Seed lists of a domain: creation and update, with every seed checked before it is stored.

Seeds are normalised to one per line: what harvestdef.seeds counts as a seed line, stripped; blank and
comment lines and duplicates are dropped. Each must match the site's ``validSeedRegex`` as a whole
(Java's ``matches()``, which NetarchiveSuite uses) and name a host;
IDN hosts are accepted and kept as the curator wrote them. A list holds at most 8 MiB (reference §1.1).
A change to a seed list is a change to its domain: it takes the domain edition the editor read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, insert, select

from harvestdef.db import schema as s
from harvestdef.domainnames import host_of_url
from harvestdef.errors import DomainNameError, NotFoundError, ValidationError
from harvestdef.model.definitions import SeedList
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    translate_errors,
)
from harvestdef.repositories.definitioncounts import recheck_unused
from harvestdef.repositories.domains import DomainRepository, bump_domain_edition
from harvestdef.seeds import seed_of_line
from harvestdef.settings import Settings
from harvestdef.validation import check_name

MAX_SEEDLIST_BYTES = 8 * 1024 * 1024
# How many bad seeds one error message lists; the rest are counted.
MAX_REPORTED_SEEDS = 10


@dataclass(frozen=True)
class UnusedSeedList:
    """A seed list that no configuration uses, so no harvest reads it."""

    seedlist_id: int
    domain: str
    name: str


def normalize_seeds(seeds: str | Iterable[str], valid_seed_regex: str = r"^.*$") -> tuple[str, ...]:
    """The seed lines (harvestdef.seeds), stripped, without duplicates; ValidationError lists bad ones."""
    lines = seeds.splitlines() if isinstance(seeds, str) else [line for item in seeds for line in
                                                               str(item).splitlines()]
    pattern = re.compile(valid_seed_regex)
    kept: dict[str, None] = {}
    bad: list[str] = []
    for number, raw in enumerate(lines, start=1):
        seed = seed_of_line(raw)
        if seed is None:
            continue
        if not pattern.fullmatch(seed):
            bad.append(f"line {number}: {seed!r} does not match {valid_seed_regex!r}")
            continue
        try:
            host_of_url(seed)
        except DomainNameError as exc:
            bad.append(f"line {number}: {exc}")
            continue
        kept.setdefault(seed, None)
    if bad:
        more = f" (and {len(bad) - MAX_REPORTED_SEEDS} more)" if len(bad) > MAX_REPORTED_SEEDS else ""
        raise ValidationError(f"{len(bad)} invalid seed(s): " + "; ".join(bad[:MAX_REPORTED_SEEDS]) + more)
    size = len("\n".join(kept).encode("utf-8"))
    if size > MAX_SEEDLIST_BYTES:
        raise ValidationError(f"the seed list is {size} bytes; a seed list holds at most {MAX_SEEDLIST_BYTES}")
    return tuple(kept)


def _to_seedlist(row: Any) -> SeedList:
    return SeedList(seedlist_id=row.seedlist_id, name=row.name, comments=row.comments or "",
                    domain_id=row.domain_id, seeds=tuple(line for line in row.seeds.splitlines() if line))


class SeedListRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR, valid_seed_regex: str = r"^.*$") -> None:
        self.conn = conn
        self.actor = actor
        self.valid_seed_regex = valid_seed_regex
        self.domains = DomainRepository(conn, actor)

    @classmethod
    def from_settings(cls, conn: Connection, settings: Settings, actor: str = SYSTEM_ACTOR) -> SeedListRepository:
        return cls(conn, actor, settings.domain.validSeedRegex)

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
        normalized = normalize_seeds(seeds, self.valid_seed_regex)
        bump_domain_edition(self.conn, self.actor, owner.domain_id, domain_edition)
        with translate_errors("seed list", f"{owner.name}/{name}"):
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
            values["seeds"] = "\n".join(normalize_seeds(seeds, self.valid_seed_regex))
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
