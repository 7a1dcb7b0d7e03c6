"""Small factories for curator definitions, one per model row, for any test that needs a database with
domains, configurations, templates or harvest definitions in it.

Each takes an open connection (the caller owns the transaction) and makes unique names unless given
one, so tests can call them freely. They go through the real repositories, so every row they make has
passed the same validation and audit trail as a curator's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from sqlalchemy import Connection, select

from harvestdef.db import schema as s
from harvestdef.model.definitions import (
    CrawlTemplate,
    Domain,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    SelectiveHarvest,
    SnapshotHarvest,
    User,
)
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.domains import DomainDefaults, DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.seedlists import SeedListRepository
from harvestdef.repositories.templates import TemplateRepository
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository
from harvestdef.repositories.users import UserRepository

_numbers = itertools.count(1)

# The smallest crawler-beans file that is a well-formed Heritrix 3 template.
SMALL_TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans">
  <bean id="simpleOverrides" class="org.springframework.beans.factory.config.PropertyOverrideConfigurer">
    <property name="properties"><value>metadata.jobName=%{JOB_NAME}</value></property>
  </bean>
</beans>
"""


def unique(prefix: str) -> str:
    return f"{prefix}{next(_numbers)}"


def make_template(conn: Connection, name: str | None = None, orderxml: str = SMALL_TEMPLATE,
                  active: bool = True) -> CrawlTemplate:
    return TemplateRepository(conn).create(name or unique("template"), orderxml, active=active)


def ensure_default_template(conn: Connection, defaults: DomainDefaults | None = None) -> CrawlTemplate:
    """The template new domains get (loaded by db init from templates/; made here if a site removed it)."""
    name = (defaults or DomainDefaults()).template_name
    if conn.scalar(select(s.ordertemplates.c.template_id).where(s.ordertemplates.c.name == name)) is None:
        return make_template(conn, name)
    return TemplateRepository(conn).get(name)


def make_domain(conn: Connection, name: str | None = None, defaults: DomainDefaults | None = None) -> Domain:
    ensure_default_template(conn, defaults)
    return DomainRepository(conn, defaults=defaults).create(name or unique("example-") + ".dk")


def make_configuration(conn: Connection, domain: str | None = None, name: str | None = None,
                       template: str | None = None, seeds: Iterable[str] | None = None, maxbytes: int = -1,
                       maxobjects: int = -1) -> DomainConfiguration:
    """A configuration with its own seed list (named like the configuration) on a new or given domain."""
    owner = DomainRepository(conn).get(domain) if domain else make_domain(conn)
    name = name or unique("config")
    seedlist = SeedListRepository(conn).create(owner.name, name, list(seeds or [f"http://{owner.name}/"]),
                                               owner.edition)
    return ConfigurationRepository(conn).create(
        owner.name, name, template or ensure_default_template(conn).name, [seedlist.seedlist_id],
        owner.edition + 1, maxbytes=maxbytes, maxobjects=maxobjects)


def make_selective_harvest(conn: Connection, name: str | None = None, schedule: str = "Once_a_day",
                           domains: Iterable[str] = (), active: bool = False) -> SelectiveHarvest:
    """A selective harvest with the default configurations of ``domains`` (created when missing)."""
    repository = HarvestRepository(conn)
    harvest = repository.create_selective(name or unique("selective"), schedule, active=active)
    names = [DomainRepository(conn).get_or_create(d)[0].name for d in domains]
    if names:
        harvest = repository.add_configurations(harvest.name, [(d, None) for d in names], harvest.edition)
    return harvest


def make_snapshot_harvest(conn: Connection, name: str | None = None, maxbytes: int = 10_000_000,
                          maxobjects: int = -1, previous: str | None = None, active: bool = False) -> SnapshotHarvest:
    return HarvestRepository(conn).create_snapshot(name or unique("snapshot"), maxbytes=maxbytes,
                                                   maxobjects=maxobjects, previous=previous, active=active)


def make_user(conn: Connection, name: str | None = None, role: str = "curator",
              password: str = "correct horse battery") -> User:
    return UserRepository(conn).create(name or unique("user"), role, password)


def make_trap_list(conn: Connection, name: str | None = None, expressions: Iterable[str] = (r".*/calendar/.*",),
                   active: bool = True) -> GlobalCrawlerTrapList:
    return GlobalCrawlerTrapRepository(conn).create(name or unique("traps"), list(expressions), active=active)
