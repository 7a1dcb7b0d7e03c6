"""What the demo harvests: a crawl template, domains of the demo site, and four ready harvest definitions.

- a selective harvest of two domains on a five-minute schedule (its second run deduplicates against the
  first);
- an event harvest, made from seeds as curators do for an event;
- a snapshot harvest of every domain in two steps: the first stops each domain at a few dozen objects,
  the second continues exactly the domains the first stopped on that limit. The second step is created
  inactive; ``activate_continuation`` activates it once the first is finished, as a curator would.

Everything is written in one transaction through the repositories, so it is audited like a curator's
work and a demo interrupted while setting up starts clean the next time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, select

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.demo.site import HOSTS, DemoHost
from harvestdef.errors import NotFoundError
from harvestdef.model.status import JobStatus
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.schedules import ScheduleRepository
from harvestdef.repositories.seedlists import SeedListRepository
from harvestdef.repositories.templates import TemplateRepository
from harvestdef.repositories.users import UserRepository
from harvestdef.schedules import Schedule, TimeUnit
from harvestdef.settings import Settings

ACTOR = "demo"
TEMPLATE = "demo_orderxml"
BASE_TEMPLATE = "default_orderxml"
SCHEDULE = "Every_5_minutes"
SELECTIVE = "News and local history"
EVENT = "Folkemødet 2026"
SNAPSHOT_STEP_1 = "Snapshot 2026 step 1"
SNAPSHOT_STEP_2 = "Snapshot 2026 step 2"
STEP_1_MAX_OBJECTS = 40
SELECTIVE_HOSTS = ("www.nordposten.dk", "www.byhistorie.dk")
EVENT_HOSTS = ("www.folkemoedet-demo.dk", "www.havbrug.org")
TRAPS = {"strandvejen.dk": r".*/kalender/.*"}
ADMIN = "admin"

# The demo site is on loopback: politeness of milliseconds instead of seconds, so a crawl of a few hundred
# objects takes seconds and still shows in the web UI while it runs.
POLITENESS = {
    r"disposition\.minDelayMs=\d+": "disposition.minDelayMs=40",
    r"disposition\.maxDelayMs=\d+": "disposition.maxDelayMs=200",
    r"disposition\.delayFactor=[\d.]+": "disposition.delayFactor=1.0",
    r"frontier\.retryDelaySeconds=\d+": "frontier.retryDelaySeconds=2",
    r"fetchHttp\.soTimeoutMs=\d+": "fetchHttp.soTimeoutMs=5000",
    r"fetchHttp\.timeoutSeconds=\d+": "fetchHttp.timeoutSeconds=10",
}


def demo_template(orderxml: str) -> str:
    """``orderxml`` with the demo's politeness; every setting it changes must be there to change."""
    for pattern, value in POLITENESS.items():
        orderxml, count = re.subn(pattern, value, orderxml)
        if not count:
            raise ValueError(f"the {BASE_TEMPLATE} template has no line matching {pattern!r}")
    return orderxml


@dataclass(frozen=True)
class Created:
    """What ``create_definitions`` made (empty names when everything was there already)."""

    harvests: tuple[str, ...]
    domains: tuple[str, ...]


def seed_of(host: DemoHost, site_port: int, path: str = "/") -> str:
    return f"http://{host.name}:{site_port}{path}"


def _host(name: str) -> DemoHost:
    return next(host for host in HOSTS if host.name == name)


def definitions_exist(engine: Engine) -> bool:
    with engine.connect() as conn:
        return conn.scalar(select(s.harvestdefinitions.c.harvest_id)
                           .where(s.harvestdefinitions.c.name == SELECTIVE)) is not None


def create_definitions(engine: Engine, settings: Settings, site_port: int, now: datetime | None = None) -> Created:
    """Create the demo's template, schedule, domains and harvests, unless they exist; all or nothing."""
    if definitions_exist(engine):
        return Created((), ())
    now = now or utcnow()
    with write_transaction(engine) as conn:
        templates = TemplateRepository(conn, ACTOR)
        if TEMPLATE not in templates.names():
            templates.create(TEMPLATE, demo_template(templates.get(BASE_TEMPLATE).orderxml),
                             "default_orderxml with millisecond politeness, for the demo site on loopback")
        schedules = ScheduleRepository(conn, ACTOR)
        if SCHEDULE not in {schedule.name for schedule in schedules.list()}:
            schedules.create(Schedule(SCHEDULE, TimeUnit.MINUTE, 5, comments="the demo's selective harvest"))
        domains = _create_domains(conn, settings, site_port)
        harvests = HarvestRepository.from_settings(conn, settings, ACTOR)
        selective = harvests.create_selective(
            SELECTIVE, SCHEDULE, nextdate=now, active=True,
            comments="Two domains every five minutes; from the second run on, unchanged photos are revisits")
        harvests.add_configurations(SELECTIVE, [(_host(name).domain, None) for name in SELECTIVE_HOSTS],
                                    selective.edition)
        event = harvests.create_selective(EVENT, "Once", nextdate=now, active=True, event=True,
                                          comments="An event harvest: seeds turned into configurations")
        harvests.add_seeds(EVENT, [seed_of(_host(name), site_port) for name in EVENT_HOSTS], TEMPLATE,
                           event.edition, maxobjects=200)
        harvests.create_snapshot(
            SNAPSHOT_STEP_1, maxobjects=STEP_1_MAX_OBJECTS, active=True,
            comments=f"Every domain, at most {STEP_1_MAX_OBJECTS} objects each")
        harvests.create_snapshot(
            SNAPSHOT_STEP_2, previous=SNAPSHOT_STEP_1, active=False,
            comments="Continues the domains step 1 stopped on its object limit; activated when step 1 is done")
    return Created((SELECTIVE, EVENT, SNAPSHOT_STEP_1, SNAPSHOT_STEP_2), domains)


def _create_domains(conn: Connection, settings: Settings, site_port: int) -> tuple[str, ...]:
    """Each demo host's domain with its default configuration on the demo template, seeded on the site."""
    domains = DomainRepository.from_settings(conn, settings, ACTOR)
    seedlists = SeedListRepository.from_settings(conn, settings, ACTOR)
    made = []
    for host in HOSTS:
        domain, _created = domains.get_or_create(host.domain)
        seedlists.update(domain.name, settings.domain.defaultSeedlist, domain.edition,
                         seeds=[seed_of(host, site_port)])
        domain = domains.get(domain.name)
        if host.domain in TRAPS:
            domains.set_crawler_traps(domain.name, TRAPS[host.domain], domain.edition)
        made.append(domain.name)
    return tuple(made)


def ensure_admin(engine: Engine, password: str) -> bool:
    """The demo's admin user with ``password``; False when it existed already (its password is kept)."""
    with write_transaction(engine) as conn:
        users = UserRepository(conn, ACTOR)
        if users.find(ADMIN) is not None:
            return False
        users.create(ADMIN, "admin", password, fullname="Demo administrator")
        return True


def step_1_finished(conn: Connection, step_1_id: int) -> bool:
    statuses = {JobStatus(value) for value in conn.scalars(
        select(s.jobs.c.status).where(s.jobs.c.harvest_id == step_1_id).distinct())}
    return bool(statuses) and not statuses & {JobStatus.NEW, JobStatus.SUBMITTED, JobStatus.STARTED}


def activate_continuation(engine: Engine) -> str | None:
    """Activate snapshot step 2 once step 1's jobs are all finished; returns step 2's name when it did."""
    with write_transaction(engine) as conn:
        harvests = HarvestRepository(conn, ACTOR)
        try:
            step_1, step_2 = harvests.get_snapshot(SNAPSHOT_STEP_1), harvests.get_snapshot(SNAPSHOT_STEP_2)
        except NotFoundError:  # a curator renamed or deleted them: nothing for the demo to do
            return None
        if step_2.isactive or step_2.numevents or not step_1_finished(conn, step_1.harvest_id):
            return None
        harvests.activate(SNAPSHOT_STEP_2, step_2.edition)
        return SNAPSHOT_STEP_2
