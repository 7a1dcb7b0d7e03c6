"""Small row factories for job-generation tests: rows inserted with SQLAlchemy Core straight into the schema."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, insert, select, update

from harvestdef.db import schema as s

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def template_id(conn: Connection, name: str = "default_orderxml", orderxml: str | None = None) -> int:
    found = conn.scalar(select(s.ordertemplates.c.template_id).where(s.ordertemplates.c.name == name))
    if found is not None:
        return found
    return conn.execute(insert(s.ordertemplates).values(
        name=name, orderxml=orderxml or "<beans>%{CRAWLERTRAPS_PLACEHOLDER}</beans>", isactive=True)
    ).inserted_primary_key[0]


def add_config(conn: Connection, domain_id: int, name: str, *, maxbytes: int = 1_000_000_000, maxobjects: int = -1,
               template: str = "default_orderxml", seeds: str | None = None) -> int:
    domain = conn.scalar(select(s.domains.c.name).where(s.domains.c.domain_id == domain_id))
    config_id = conn.execute(insert(s.configurations).values(
        name=name, domain_id=domain_id, template_id=template_id(conn, template), maxobjects=maxobjects,
        maxbytes=maxbytes, maxrate=100)).inserted_primary_key[0]
    seed_text = seeds if seeds is not None else f"http://www.{domain}\nhttps://{domain}"
    seedlist_id = conn.execute(insert(s.seedlists).values(
        name=f"{name}-seeds", domain_id=domain_id, seeds=seed_text)).inserted_primary_key[0]
    conn.execute(insert(s.config_seedlists).values(config_id=config_id, seedlist_id=seedlist_id))
    return config_id


def make_domain(conn: Connection, name: str, *, maxbytes: int = 1_000_000_000, maxobjects: int = -1,
                template: str = "default_orderxml", seeds: str | None = None, traps: str | None = None,
                alias_of: int | None = None, lastaliasupdate: datetime | None = None) -> tuple[int, int]:
    """A domain with its default configuration "defaultconfig"; returns (domain_id, config_id)."""
    domain_id = conn.execute(insert(s.domains).values(
        name=name, crawlertraps=traps, edition=1, alias=alias_of, lastaliasupdate=lastaliasupdate)
    ).inserted_primary_key[0]
    config_id = add_config(conn, domain_id, "defaultconfig", maxbytes=maxbytes, maxobjects=maxobjects,
                           template=template, seeds=seeds)
    conn.execute(update(s.domains).where(s.domains.c.domain_id == domain_id).values(defaultconfig=config_id))
    return domain_id, config_id


def make_snapshot(conn: Connection, harvest_id: int, name: str, *, maxobjects: int = -1, maxbytes: int = -1,
                  maxjobrunningtime: int = 0, previous: int | None = None, numevents: int = 0) -> int:
    conn.execute(insert(s.harvestdefinitions).values(
        harvest_id=harvest_id, name=name, comments="", numevents=numevents, submitted=T0, isactive=True,
        edition=1))
    conn.execute(insert(s.fullharvests).values(
        harvest_id=harvest_id, maxobjects=maxobjects, maxbytes=maxbytes, maxjobrunningtime=maxjobrunningtime,
        previoushd=previous, isindexready=True))
    return harvest_id


def make_selective(conn: Connection, harvest_id: int, name: str, config_ids: list[int], *,
                   schedule: str = "Once_a_day", nextdate: datetime | None = T0, traps: str | None = None,
                   numevents: int = 0, audience: str | None = None) -> int:
    schedule_id = conn.scalar(select(s.schedules.c.schedule_id).where(s.schedules.c.name == schedule))
    conn.execute(insert(s.harvestdefinitions).values(
        harvest_id=harvest_id, name=name, comments="selective", numevents=numevents, submitted=T0, isactive=True,
        edition=1, audience=audience))
    conn.execute(insert(s.partialharvests).values(
        harvest_id=harvest_id, schedule_id=schedule_id, nextdate=nextdate, crawlertraps=traps))
    for config_id in config_ids:
        conn.execute(insert(s.harvest_configs).values(harvest_id=harvest_id, config_id=config_id))
    return harvest_id


def add_history(conn: Connection, config_id: int, harvest_id: int, objects: int, size: int, stop: int,
                when: datetime = T0, job_id: int | None = None) -> None:
    conn.execute(insert(s.historyinfo).values(
        stopreason=int(stop), objectcount=objects, bytecount=size, config_id=config_id, harvest_id=harvest_id,
        job_id=job_id, harvest_time=when))


def set_attribute(conn: Connection, config_id: int, name: str, value: int) -> None:
    type_id = conn.scalar(select(s.eav_type_attribute.c.id).where(
        s.eav_type_attribute.c.tree_id == 2, s.eav_type_attribute.c.name == name))
    conn.execute(insert(s.eav_attribute).values(tree_id=2, entity_id=config_id, type_id=type_id, val_int=value))


def add_global_traps(conn: Connection, name: str, expressions: list[str], active: bool = True) -> None:
    list_id = conn.execute(insert(s.global_crawler_trap_lists).values(
        name=name, description="", isactive=active)).inserted_primary_key[0]
    for expression in expressions:
        conn.execute(insert(s.global_crawler_trap_expressions).values(
            crawler_trap_list_id=list_id, trap_expression=expression))
