"""What a curator defines, as frozen values: domains, their configurations and seed lists, crawl templates,
harvest channels, harvest definitions (selective/event and snapshot), global crawler traps, extended
fields and users.

These are plain values read from the harvest database by the repositories (harvestdef.repositories); they
never touch the database themselves. Names follow NetarchiveSuite's harvest database (docs/database.md,
Conventions kept from NetarchiveSuite): -1 means unlimited for bytes and objects, 0 means no limit for a
job's running time. ``edition`` is the optimistic-locking counter an editor hands back with a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import IntEnum, StrEnum

from harvestdef.phrases import Phrase

UNLIMITED = -1


@dataclass(frozen=True)
class AliasInfo:
    """Domain ``domain`` has the same content as ``alias_of``; confirmed last at ``last_change``.

    An alias expires ``timeout`` after its last confirmation (setting harvester.aliases.timeout, one year by
    default); expired aliases are harvested again in snapshot harvests.
    """

    domain: str
    alias_of: str
    last_change: datetime

    def is_expired(self, now: datetime, timeout: timedelta) -> bool:
        return now >= self.last_change + timeout


@dataclass(frozen=True)
class Domain:
    domain_id: int
    name: str  # Unicode, lower case
    comments: str
    defaultconfig_id: int | None
    crawlertraps: tuple[str, ...]
    edition: int
    alias_of_id: int | None = None
    alias_of: str | None = None
    lastaliasupdate: datetime | None = None

    def alias_info(self) -> AliasInfo | None:
        if self.alias_of is None or self.lastaliasupdate is None:
            return None
        return AliasInfo(self.name, self.alias_of, self.lastaliasupdate)

    def is_alias(self) -> bool:
        return self.alias_of_id is not None


@dataclass(frozen=True)
class DomainConfiguration:
    """A domain's harvest configuration: a template, seed lists and limits (NetarchiveSuite's configurations table)."""

    config_id: int
    name: str
    comments: str
    domain_id: int
    domain_name: str
    template_id: int
    template_name: str
    maxobjects: int
    maxbytes: int
    maxrate: int | None
    seedlist_ids: tuple[int, ...] = ()
    is_default: bool = False


@dataclass(frozen=True)
class SeedList:
    seedlist_id: int
    name: str
    comments: str
    domain_id: int
    seeds: tuple[str, ...]

    @property
    def seeds_text(self) -> str:
        return "\n".join(self.seeds)


@dataclass(frozen=True)
class CrawlTemplate:
    """A Heritrix 3 crawler-beans .cxml with NetarchiveSuite's %{...} placeholders (ordertemplates)."""

    template_id: int
    name: str
    orderxml: str = field(repr=False)
    isactive: bool
    edition: int
    description: str = ""
    lastupdated: datetime | None = None


@dataclass(frozen=True)
class HarvestChannel:
    channel_id: int
    name: str  # upper case, matches ^\w+$
    issnapshot: bool
    isdefault: bool
    comments: str


class HarvestKind(StrEnum):
    SELECTIVE = "selective"  # partialharvests: selective and event harvests are the same type
    SNAPSHOT = "snapshot"  # fullharvests


@dataclass(frozen=True, kw_only=True)
class HarvestDefinition:
    harvest_id: int
    name: str
    comments: str
    numevents: int
    submitted: datetime
    isactive: bool
    edition: int
    channel_id: int | None
    audience: str | None

    @property
    def kind(self) -> HarvestKind:
        raise TypeError("a HarvestDefinition is either a SelectiveHarvest or a SnapshotHarvest")

    def is_snapshot(self) -> bool:
        return self.kind is HarvestKind.SNAPSHOT


@dataclass(frozen=True, kw_only=True)
class SelectiveHarvest(HarvestDefinition):
    """A selective or event harvest (partialharvests): chosen configurations on a schedule."""

    schedule_id: int
    schedule_name: str
    nextdate: datetime | None
    crawlertraps: tuple[str, ...] = ()
    isevent: bool = False  # made by "New event harvest"; the same kind of harvest as a selective one

    @property
    def kind(self) -> HarvestKind:
        return HarvestKind.SELECTIVE

    @property
    def title(self) -> str:
        """What a page calls it: "Event harvest" or "Selective harvest"."""
        return "Event harvest" if self.isevent else "Selective harvest"


@dataclass(frozen=True, kw_only=True)
class SnapshotHarvest(HarvestDefinition):
    """A snapshot ("broad") harvest of every domain's default configuration (fullharvests)."""

    maxobjects: int
    maxbytes: int
    maxjobrunningtime: int  # seconds per job, 0 = no limit
    previoushd: int | None
    isindexready: bool

    @property
    def kind(self) -> HarvestKind:
        return HarvestKind.SNAPSHOT

    @property
    def title(self) -> str:
        return "Snapshot harvest"


class RunOutlook(StrEnum):
    """Whether a harvest definition runs (again), as its pages, the API and "Why harvests wait" show it."""

    ACTIVE = "active"  # active, with a run to come
    FINISHED = "finished"  # active and has run, but its schedule has run its course (a snapshot runs once)
    CANNOT_RUN = "cannot run"  # active, has never run, and never will as it is defined now
    INACTIVE = "inactive"


@dataclass(frozen=True)
class HarvestOutlook:
    """A harvest definition's RunOutlook, why (for FINISHED and CANNOT_RUN: ``reason`` in English,
    ``reason_phrase`` the same as a phrase of harvestdef/harvestreasons.py), and its last run."""

    outlook: RunOutlook
    reason: str = ""
    last_run: int = 0  # numevents: the number of the last run, 0 if none
    last_run_at: datetime | None = None  # when the last run's jobs were made
    reason_phrase: Phrase | None = None


@dataclass(frozen=True)
class HarvestConfigEntry:
    """One configuration included in a selective harvest (harvest_configs), with its domain."""

    harvest_id: int
    config_id: int
    domain_name: str
    config_name: str


@dataclass(frozen=True)
class GlobalCrawlerTrapList:
    list_id: int
    name: str
    description: str
    isactive: bool
    expressions: tuple[str, ...]


class ExtendedFieldType(IntEnum):
    """extendedfieldtype ids, NetarchiveSuite's (docs/database.md, Conventions kept from NetarchiveSuite)."""

    DOMAINS = 1
    HARVESTDEFINITIONS = 2


class ExtendedFieldDatatype(IntEnum):
    STRING = 1
    BOOLEAN = 2
    NUMBER = 3
    TIMESTAMP = 4
    NOTE = 5
    SELECT = 6
    JSCALENDAR = 7


@dataclass(frozen=True)
class ExtendedField:
    """A curator-defined metadata field shown on domain or harvest-definition pages."""

    field_id: int
    field_type: ExtendedFieldType
    name: str
    datatype: ExtendedFieldDatatype
    mandatory: bool
    defaultvalue: str = ""
    options: tuple[str, ...] = ()
    format: str = ""
    sequencenr: int | None = None
    maxlen: int | None = None


@dataclass(frozen=True)
class ExtendedFieldValue:
    value_id: int
    field_id: int
    instance_id: int  # a domain_id or a harvest_id, by the field's type
    content: str


class Role(StrEnum):
    CURATOR = "curator"
    OPERATOR = "operator"
    ARCHIVIST = "archivist"
    ADMIN = "admin"


@dataclass(frozen=True)
class User:
    user_id: int
    name: str
    fullname: str
    email: str
    role: Role
    isactive: bool
    created: datetime
    edition: int


@dataclass(frozen=True)
class AuditEntry:
    """One change of one row: who, when, what, and the row before and after."""

    audit_id: int
    changed_at: datetime
    actor: str
    tablename: str
    row_key: str
    action: str  # insert, update, delete
    before: dict[str, object] | None
    after: dict[str, object] | None
