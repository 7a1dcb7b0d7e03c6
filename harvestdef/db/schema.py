"""The harvest database schema (SQLAlchemy Core).

Tables and columns are NetarchiveSuite's (its 8.1 PostgreSQL script; docs/database.md, Conventions kept from
NetarchiveSuite), so that a site can move its data over and an archivist's SQL keeps working: lower-case
unquoted identifiers, -1 = unlimited for bytes and objects, 0 = unlimited for running time, JobStatus and
StopReason ordinals as integers.
HarvestSuite's additions are new tables (audit_log, users, the scheduler's tables at the end) and new
columns, each marked "ours" below.

Column types are NetarchiveSuite's or wider, never narrower, and no column of NetarchiveSuite's is NOT NULL
here where it is nullable there, so every row NetarchiveSuite writes (and a data-only pg_dump of its
database) fits. Its surrogate keys draw from sequences with its names (``domains_id_seq``, not
SQLAlchemy's ``domains_domain_id_seq``; NETARCHIVESUITE_SEQUENCES) and its indexes exist by its names.

NetarchiveSuite assigns harvestdefinitions.harvest_id and jobs.job_id in code, so the columns have no
autoincrement here either. Job ids come from the database all the same: the sequence jobs_job_id_seq on
PostgreSQL, max(job_id)+1 inside a write-locked transaction on SQLite (harvestdef/repositories/jobs.py).
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    PrimaryKeyConstraint,
    Sequence,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
    text,
)

from harvestdef.db.types import Id, IntBoolean, UTCDateTime

metadata = MetaData()

# NetarchiveSuite's PostgreSQL sequences, by table: (key column, sequence). A data-only dump of its
# database calls setval() on these names, and its own code inserts through their column defaults.
NETARCHIVESUITE_SEQUENCES: dict[str, tuple[str, str]] = {
    "ordertemplates": ("template_id", "ordertemplates_id_seq"),
    "domains": ("domain_id", "domains_id_seq"),
    "configurations": ("config_id", "configurations_id_seq"),
    "seedlists": ("seedlist_id", "seedlists_id_seq"),
    "passwords": ("password_id", "passwords_id_seq"),
    "ownerinfo": ("ownerinfo_id", "ownerinfo_id_seq"),
    "historyinfo": ("historyinfo_id", "historyinfo_id_seq"),
    "harvestchannel": ("id", "harvestchannel_id_seq"),
    "schedules": ("schedule_id", "schedules_id_seq"),
    "global_crawler_trap_lists": ("global_crawler_trap_list_id", "global_crawler_trap_list_id_seq"),
    "global_crawler_trap_expressions": ("id", "global_crawler_trap_expressions_id_seq"),
    "extendedfieldtype": ("extendedfieldtype_id", "extendedfieldtype_id_seq"),
    "extendedfield": ("extendedfield_id", "extendedfield_id_seq"),
    "extendedfieldvalue": ("extendedfieldvalue_id", "extendedfieldvalue_id_seq"),
    "eav_attribute": ("id", "eav_attribute_seq"),
}


def _key(table: str) -> Column:
    """The surrogate key of a NetarchiveSuite table, drawn from its sequence on PostgreSQL (a rowid on SQLite)."""
    column, sequence = NETARCHIVESUITE_SEQUENCES[table]
    return Column(column, Id, Sequence(sequence), primary_key=True, autoincrement=True)

# Per-table schema versions of NetarchiveSuite 8.1 (its HarvesterDatabaseTables), written into schemaversions.
SCHEMA_VERSIONS: dict[str, int] = {
    "domains": 3, "configurations": 5, "seedlists": 1, "passwords": 1, "ownerinfo": 1, "historyinfo": 2,
    "config_passwords": 1, "config_seedlists": 1, "harvestdefinitions": 4, "partialharvests": 2,
    "fullharvests": 5, "harvest_configs": 1, "schedules": 1, "ordertemplates": 2, "jobs": 10,
    "job_configs": 1, "global_crawler_trap_lists": 1, "global_crawler_trap_expressions": 1,
    "runningjobshistory": 3, "runningjobsmonitor": 3, "frontierreportmonitor": 1, "extendedfield": 2,
    "extendedfieldvalue": 2, "extendedfieldtype": 1, "harvestchannel": 1, "eav_type_attribute": 1,
    "eav_attribute": 1,
}

schemaversions = Table(
    "schemaversions", metadata,
    Column("tablename", String(100), primary_key=True),
    Column("version", Integer, nullable=False),
)

# ---------------------------------------------------------------- templates
ordertemplates = Table(
    "ordertemplates", metadata,
    _key("ordertemplates"),
    Column("name", String(300), nullable=False, unique=True),
    Column("orderxml", Text, nullable=False),
    Column("isactive", Boolean, nullable=False, server_default=text("true")),
    # ours: optimistic locking and a description shown in the UI and the warcinfo record
    Column("edition", BigInteger, nullable=False, server_default=text("1")),
    Column("description", Text),
    Column("lastupdated", UTCDateTime),
)

# ---------------------------------------------------------------- domains area
domains = Table(
    "domains", metadata,
    _key("domains"),
    Column("name", String(300), nullable=False, unique=True),
    Column("comments", String(30000)),
    # The configuration used in snapshot harvests. NULL (HarvestSuite) or -1 (NetarchiveSuite's
    # DomainDBDAO) while a domain is being created, before its first configuration exists; the check is
    # deferred to commit so NetarchiveSuite's insert-then-update of a new domain passes.
    Column("defaultconfig", BigInteger, ForeignKey("configurations.config_id", use_alter=True,
                                                   name="domains_defaultconfig_fkey", deferrable=True,
                                                   initially="DEFERRED")),
    Column("crawlertraps", Text),
    Column("edition", BigInteger, nullable=False, server_default=text("1")),
    Column("alias", BigInteger, ForeignKey("domains.domain_id")),
    Column("lastaliasupdate", UTCDateTime),
    # HarvestSuite addition: an inactive domain is left out of snapshot harvests and keeps its history.
    Column("isactive", Boolean, nullable=False, server_default=text("true")),
)
Index("domainnameid", domains.c.name)
Index("aliasindex", domains.c.alias)

# A domain search looks for text anywhere in the name (``*abc*``), the comments or the crawler traps:
# LIKE/ILIKE '%abc%', which no B-tree answers. On PostgreSQL these pg_trgm GIN indexes do, reading the
# rows that contain the pattern's trigrams instead of all 2,000,000 domains. They are DDL rather than
# Index objects because SQLite has no such index and Alembic's comparison cannot leave a dialect's index
# out of one database only; compare_options() leaves them out by name.
DOMAIN_TRIGRAM_INDEXES = {"domainnametrgm": "name", "domaincommentstrgm": "comments",
                          "domaincrawlertrapstrgm": "crawlertraps"}
# pg_trgm exists once per database, in the schema it was created in: often an "extensions" schema off
# the search_path (so in the tests, whose schemas share one database). So the operator class is named
# with the extension's schema, whatever the search_path; the extension is created (in the first schema
# of the search_path) only where the database has none. IF NOT EXISTS: a database whose domains table the
# Alembic chain created gets the indexes from migration 0009 with the same statement.
_DOMAIN_TRIGRAM_DDL = "\n".join([
    "DO $trgm$",
    "DECLARE",
    "    opclass text;",
    "BEGIN",
    "    CREATE EXTENSION IF NOT EXISTS pg_trgm;",
    "    SELECT quote_ident(n.nspname) || '.gin_trgm_ops' INTO opclass",
    "        FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';",
    *(f"    EXECUTE 'CREATE INDEX IF NOT EXISTS {index} ON domains USING gin ({column} ' || opclass || ')';"
      for index, column in DOMAIN_TRIGRAM_INDEXES.items()),
    "END",
    "$trgm$",
])
event.listen(domains, "after_create", DDL(_DOMAIN_TRIGRAM_DDL).execute_if(dialect="postgresql"))


def compare_options() -> dict[str, object]:
    """Options for Alembic's comparison of a database with ``metadata`` (migrations/env.py and the tests):
    column types compared, the PostgreSQL-only trigram indexes left out."""
    return {"compare_type": True, "include_object": _is_compared}


def _is_compared(_object: object, name: str | None, type_: str, _reflected: bool, _compare_to: object) -> bool:
    return not (type_ == "index" and name in DOMAIN_TRIGRAM_INDEXES)

configurations = Table(
    "configurations", metadata,
    _key("configurations"),
    Column("name", String(300), nullable=False),
    Column("comments", String(30000)),
    Column("domain_id", BigInteger, ForeignKey("domains.domain_id"), nullable=False),
    Column("template_id", BigInteger, ForeignKey("ordertemplates.template_id"), nullable=False),
    Column("maxobjects", BigInteger, nullable=False, server_default=text("-1")),
    Column("maxrate", Integer),
    Column("overridelimits", Integer),
    Column("maxbytes", BigInteger, nullable=False, server_default=text("-1")),
    # ours: a configuration name is unique within its domain
    UniqueConstraint("domain_id", "name", name="configurations_domain_name_key"),
)
Index("configurationname", configurations.c.name)
Index("configurationmaxbytes", configurations.c.maxbytes)
Index("configdomain", configurations.c.domain_id)

seedlists = Table(
    "seedlists", metadata,
    _key("seedlists"),
    Column("name", String(300), nullable=False),
    Column("comments", String(30000)),
    Column("domain_id", BigInteger, ForeignKey("domains.domain_id"), nullable=False),
    Column("seeds", Text, nullable=False),
    UniqueConstraint("domain_id", "name", name="seedlists_domain_name_key"),
)
Index("seedlistname", seedlists.c.name)
Index("seedlistdomain", seedlists.c.domain_id)

config_seedlists = Table(
    "config_seedlists", metadata,
    Column("config_id", BigInteger, ForeignKey("configurations.config_id"), nullable=False),
    Column("seedlist_id", BigInteger, ForeignKey("seedlists.seedlist_id"), nullable=False),
    PrimaryKeyConstraint("config_id", "seedlist_id"),
)
# ours: whether a seed list is used is a lookup by seed list (harvestdef/repositories/definitioncounts.py)
Index("config_seedlists_seedlist", config_seedlists.c.seedlist_id)

passwords = Table(
    "passwords", metadata,
    _key("passwords"),
    Column("name", String(300), nullable=False),
    Column("comments", String(30000)),
    Column("domain_id", BigInteger, ForeignKey("domains.domain_id"), nullable=False),
    Column("url", String(300), nullable=False),
    Column("realm", String(300), nullable=False),
    Column("username", String(20), nullable=False),
    Column("password", String(40), nullable=False),
    UniqueConstraint("domain_id", "name", name="passwords_domain_name_key"),
)
Index("passwordname", passwords.c.name)
Index("passworddomain", passwords.c.domain_id)

config_passwords = Table(
    "config_passwords", metadata,
    Column("config_id", BigInteger, ForeignKey("configurations.config_id"), nullable=False),
    Column("password_id", BigInteger, ForeignKey("passwords.password_id"), nullable=False),
    PrimaryKeyConstraint("config_id", "password_id"),
)

ownerinfo = Table(
    "ownerinfo", metadata,
    _key("ownerinfo"),
    Column("domain_id", BigInteger, ForeignKey("domains.domain_id"), nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Column("info", String(1000), nullable=False),
)
Index("ownerinfodomain", ownerinfo.c.domain_id)

# One row per domain configuration per job: the figures the next snapshot step and selective run use.
historyinfo = Table(
    "historyinfo", metadata,
    _key("historyinfo"),
    Column("stopreason", Integer, nullable=False),
    Column("objectcount", BigInteger, nullable=False),
    Column("bytecount", BigInteger, nullable=False),
    Column("config_id", BigInteger, nullable=False),
    Column("harvest_id", BigInteger, nullable=False),
    Column("job_id", BigInteger),
    Column("harvest_time", UTCDateTime, nullable=False),
    # ours: what deduplication made of objectcount/bytecount (new payloads, and revisits of earlier ones);
    # NULL where the figures came from elsewhere (NetarchiveSuite's own rows)
    Column("novel_objects", BigInteger),
    Column("novel_bytes", BigInteger),
    Column("duplicate_objects", BigInteger),
    Column("duplicate_bytes", BigInteger),
)
Index("historyinfoharvest", historyinfo.c.harvest_id)
Index("historyinfoconfigharvest", historyinfo.c.config_id, historyinfo.c.harvest_id)
Index("historyinfojobharvest", historyinfo.c.job_id, historyinfo.c.harvest_id)
Index("historyinfoharvestconfig", historyinfo.c.harvest_id, historyinfo.c.config_id)
Index("historyinfoconfig", historyinfo.c.config_id)
Index("historyinfojob", historyinfo.c.job_id)

# ---------------------------------------------------------------- harvest channels
harvestchannel = Table(
    "harvestchannel", metadata,
    _key("harvestchannel"),
    Column("name", String(300), nullable=False, unique=True),
    Column("issnapshot", Boolean, nullable=False),
    Column("isdefault", Boolean, nullable=False),
    Column("comments", String(30000)),
)
Index("harvestchannelnameid", harvestchannel.c.name)

# ---------------------------------------------------------------- schedules
schedules = Table(
    "schedules", metadata,
    _key("schedules"),
    Column("name", String(300), nullable=False, unique=True),
    Column("comments", String(30000)),
    Column("startdate", UTCDateTime),
    Column("enddate", UTCDateTime),
    Column("maxrepeats", BigInteger),
    Column("timeunit", Integer, nullable=False),
    Column("numtimeunits", BigInteger, nullable=False),
    Column("anytime", Boolean, nullable=False),
    Column("onminute", Integer),
    Column("onhour", Integer),
    Column("ondayofweek", Integer),
    Column("ondayofmonth", Integer),
    Column("edition", BigInteger, nullable=False, server_default=text("1")),
)

# ---------------------------------------------------------------- harvest definitions
harvestdefinitions = Table(
    "harvestdefinitions", metadata,
    Column("harvest_id", BigInteger, primary_key=True, autoincrement=False),
    Column("name", String(300), nullable=False, unique=True),
    Column("comments", String(30000)),
    Column("numevents", Integer, nullable=False, server_default=text("0")),
    Column("submitted", UTCDateTime, nullable=False),
    Column("isactive", Boolean, nullable=False),
    Column("edition", BigInteger, nullable=False, server_default=text("1")),
    Column("channel_id", BigInteger, ForeignKey("harvestchannel.id")),
    Column("audience", String(100)),
)
Index("harvestdefinitionssubmitdate", harvestdefinitions.c.submitted)

fullharvests = Table(
    "fullharvests", metadata,
    Column("harvest_id", BigInteger, ForeignKey("harvestdefinitions.harvest_id"), primary_key=True,
           autoincrement=False),
    Column("maxobjects", BigInteger, nullable=False, server_default=text("-1")),
    Column("previoushd", BigInteger, ForeignKey("harvestdefinitions.harvest_id")),
    Column("maxbytes", BigInteger, nullable=False, server_default=text("-1")),
    Column("maxjobrunningtime", BigInteger, nullable=False, server_default=text("0")),
    Column("isindexready", Boolean, nullable=False, server_default=text("false")),
)

partialharvests = Table(
    "partialharvests", metadata,
    Column("harvest_id", BigInteger, ForeignKey("harvestdefinitions.harvest_id"), primary_key=True,
           autoincrement=False),
    Column("schedule_id", BigInteger, ForeignKey("schedules.schedule_id"), nullable=False),
    Column("nextdate", UTCDateTime),
    # harvest-level crawler traps, newline-separated (NetarchiveSuite partialharvests v2, NAS-2887)
    Column("crawlertraps", Text),
    # ours: made by "New event harvest" (NetarchiveSuite keeps event harvests as selective ones)
    Column("isevent", Boolean, nullable=False, server_default=text("false")),
)
Index("partialharvestsnextdate", partialharvests.c.nextdate)

harvest_configs = Table(
    "harvest_configs", metadata,
    Column("harvest_id", BigInteger, ForeignKey("harvestdefinitions.harvest_id"), nullable=False),
    Column("config_id", BigInteger, ForeignKey("configurations.config_id"), nullable=False),
    PrimaryKeyConstraint("harvest_id", "config_id"),
)
# ours: whether a configuration is used is a lookup by configuration (harvestdef/repositories/definitioncounts.py)
Index("harvest_configs_config", harvest_configs.c.config_id)

# ---------------------------------------------------------------- jobs
jobs = Table(
    "jobs", metadata,
    Column("job_id", BigInteger, primary_key=True, autoincrement=False),
    Column("harvest_id", BigInteger, ForeignKey("harvestdefinitions.harvest_id"), nullable=False),
    Column("status", Integer, nullable=False),
    Column("channel", String(300), nullable=False),
    Column("snapshot", Boolean, nullable=False),
    Column("forcemaxbytes", BigInteger, nullable=False, server_default=text("-1")),
    Column("forcemaxcount", BigInteger),
    Column("forcemaxrunningtime", BigInteger),
    Column("orderxml", String(300), nullable=False),
    Column("orderxmldoc", Text, nullable=False),
    Column("seedlist", Text, nullable=False),
    Column("harvest_num", Integer, nullable=False),
    Column("harvest_errors", String(300)),
    Column("harvest_error_details", String(10000)),
    Column("upload_errors", String(300)),
    Column("upload_error_details", String(10000)),
    Column("startdate", UTCDateTime),
    Column("enddate", UTCDateTime),
    Column("submitteddate", UTCDateTime),
    Column("creationdate", UTCDateTime),
    Column("resubmitted_as_job", BigInteger),
    Column("num_configs", Integer, nullable=False, server_default=text("0")),
    Column("edition", BigInteger, nullable=False, server_default=text("1")),
    Column("continuationof", BigInteger),
    Column("harvestname_prefix", String(100)),
    # ours: the attempt the scheduler granted to one controller (exactly-once claims), the controller
    # that holds it, and the mark of a controller that went silent while the job was STARTED
    Column("attempt_id", String(64)),
    Column("controller", String(300)),
    Column("interrupted", Boolean, nullable=False, server_default=text("false")),
    # ours: the sum of expected objects the job generator packed into the job
    Column("expected_objects", BigInteger),
    # ours: when the attempt was granted to `controller`
    Column("claimed_at", UTCDateTime),
    # ours: FAILED only because the archive store could not take the job's files; its controller keeps
    # them and reports the job again once they are stored (JobTransitionReason.STORED_AFTER_STORE_OUTAGE)
    Column("store_failed", Boolean, nullable=False, server_default=text("false")),
)
Index("jobstatus", jobs.c.status)
# ours: the dispatcher's oldest NEW job of a channel is the first entry of one range (migration 0008)
Index("jobchannelstatus", jobs.c.channel, jobs.c.status, jobs.c.job_id)
# ours: job ids on PostgreSQL (a standalone sequence, so the column stays as NetarchiveSuite defines it)
jobs_job_id_seq = Sequence("jobs_job_id_seq", metadata=metadata, start=1)
Index("jobharvestid", jobs.c.harvest_id)
# ours: the job list of one harvest controller, newest first (migration 0025)
Index("jobcontroller", jobs.c.controller, jobs.c.job_id)

job_configs = Table(
    "job_configs", metadata,
    Column("job_id", BigInteger, ForeignKey("jobs.job_id"), nullable=False),
    Column("config_id", BigInteger, nullable=False),
    PrimaryKeyConstraint("job_id", "config_id"),
)
Index("jobconfigjob", job_configs.c.job_id)
# the jobs that harvested a configuration: which earlier jobs hold a domain's captures (scheduler/dedupsources.py)
Index("jobconfigconfig", job_configs.c.config_id, job_configs.c.job_id)

# ---------------------------------------------------------------- global crawler traps
global_crawler_trap_lists = Table(
    "global_crawler_trap_lists", metadata,
    _key("global_crawler_trap_lists"),
    Column("name", String(300), nullable=False, unique=True),
    Column("description", String(30000)),
    Column("isactive", Boolean, nullable=False),
)
Index("gctlistsid", global_crawler_trap_lists.c.global_crawler_trap_list_id)

global_crawler_trap_expressions = Table(
    "global_crawler_trap_expressions", metadata,
    _key("global_crawler_trap_expressions"),
    Column("crawler_trap_list_id", BigInteger,
           ForeignKey("global_crawler_trap_lists.global_crawler_trap_list_id"), nullable=False),
    Column("trap_expression", String(1000)),
)
Index("gctexprid", global_crawler_trap_expressions.c.id)
Index("gctexprlistid", global_crawler_trap_expressions.c.crawler_trap_list_id)

# ---------------------------------------------------------------- monitoring
# NUMERIC where NetarchiveSuite has numeric: a double or an integer would round its values.
_monitor_columns = (
    ("hosturl", String(300)), ("progress", Numeric(asdecimal=False)),
    ("queuedfilescount", BigInteger), ("totalqueuescount", BigInteger), ("activequeuescount", BigInteger),
    ("retiredqueuescount", BigInteger), ("exhaustedqueuescount", BigInteger),
    ("elapsedseconds", BigInteger), ("alertscount", BigInteger), ("downloadedfilescount", BigInteger),
    ("currentprocessedkbpersec", Integer), ("processedkbpersec", Integer),
    ("currentprocesseddocspersec", Numeric(asdecimal=False)), ("processeddocspersec", Numeric(asdecimal=False)),
    ("activetoecount", Integer), ("status", Integer), ("tstamp", UTCDateTime),
)


def _monitor_table(name: str, extra: tuple[Column, ...], key: tuple[str, ...]) -> Table:
    columns = [Column("jobid", BigInteger, nullable=False), Column("harvestname", String(300), nullable=False)]
    for column_name, column_type in _monitor_columns:
        columns.append(Column(column_name, column_type, nullable=column_name not in key))
    return Table(name, metadata, *columns, *extra, PrimaryKeyConstraint(*key))


runningjobshistory = _monitor_table(
    "runningjobshistory", (Column("totalbyteswritten", BigInteger, server_default=text("0")),),
    ("jobid", "harvestname", "elapsedseconds", "tstamp"))
Index("runningjobshistorycrawljobid", runningjobshistory.c.jobid)
Index("runningjobshistorycrawltime", runningjobshistory.c.elapsedseconds)
Index("runningjobshistoryharvestname", runningjobshistory.c.harvestname)

runningjobsmonitor = _monitor_table(
    "runningjobsmonitor", (Column("totalbyteswritten", BigInteger, server_default=text("0")),
                           # ours: the crawler's newest crawl.log lines, newest first, joined by newlines
                           # (CrawlProgress.crawl_log_tail; a crawl.log line has no newline of its own),
                           # and whether hosturl is a real Heritrix 3 console an operator can open
                           Column("crawllogtail", Text),
                           Column("isheritrixconsole", Boolean, nullable=False, server_default=text("false")),
                           # ours: the crawl.log lines the controller has read so far and their count per
                           # fetch status, a JSON object (CrawlTally)
                           Column("crawlloglines", BigInteger),
                           Column("statuscounts", Text)),
    ("jobid", "harvestname"))
Index("runningjobsmonitorjobid", runningjobsmonitor.c.jobid)
Index("runningjobsmonitorharvestname", runningjobsmonitor.c.harvestname)

frontierreportmonitor = Table(
    "frontierreportmonitor", metadata,
    Column("jobid", BigInteger, nullable=False),
    Column("filterid", String(200), nullable=False),
    Column("tstamp", UTCDateTime, nullable=False),
    Column("domainname", String(300), nullable=False),
    Column("currentsize", BigInteger, nullable=False),
    Column("totalenqueues", BigInteger, nullable=False),
    Column("sessionbalance", BigInteger, nullable=False),
    Column("lastcost", Numeric(asdecimal=False), nullable=False),
    Column("averagecost", Numeric(asdecimal=False), nullable=False),
    Column("lastdequeuetime", String(100), nullable=False),
    Column("waketime", String(100), nullable=False),
    Column("totalspend", BigInteger, nullable=False),
    Column("totalbudget", BigInteger, nullable=False),
    Column("errorcount", BigInteger, nullable=False),
    Column("lastpeekuri", String(1000), nullable=False),
    Column("lastqueueduri", String(1000), nullable=False),
    UniqueConstraint("jobid", "filterid", "domainname", name="pkfrontierreportlines"),
)

# ---------------------------------------------------------------- extended fields
extendedfieldtype = Table(
    "extendedfieldtype", metadata,
    _key("extendedfieldtype"),
    Column("name", String(50), nullable=False),
)

extendedfield = Table(
    "extendedfield", metadata,
    _key("extendedfield"),
    Column("extendedfieldtype_id", BigInteger, ForeignKey("extendedfieldtype.extendedfieldtype_id"),
           nullable=False),
    Column("name", String(50), nullable=False),
    Column("format", String(50)),
    Column("defaultvalue", String(50)),
    Column("options", String(1000)),
    Column("datatype", Integer, nullable=False),
    # integers in NetarchiveSuite (0 or 1), bool in Python
    Column("mandatory", IntBoolean, nullable=False),
    Column("sequencenr", Integer),
    # NetarchiveSuite extendedfield v2
    Column("maxlen", Integer),
    Column("historize", IntBoolean, server_default=text("0")),
)

extendedfieldvalue = Table(
    "extendedfieldvalue", metadata,
    _key("extendedfieldvalue"),
    Column("extendedfield_id", BigInteger, ForeignKey("extendedfield.extendedfield_id"), nullable=False),
    Column("instance_id", BigInteger, nullable=False),
    Column("content", String(30000), nullable=False),
)

# ---------------------------------------------------------------- EAV crawl attributes
eav_type_attribute = Table(
    "eav_type_attribute", metadata,
    Column("tree_id", Integer, nullable=False),
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(96), nullable=False),
    Column("class_namespace", String(96), nullable=False),
    Column("class_name", String(96), nullable=False),
    Column("datatype", Integer, nullable=False),
    Column("viewtype", Integer, nullable=False),
    Column("def_int", Integer),
    Column("def_datetime", UTCDateTime),
    Column("def_varchar", String(8000)),
    Column("def_text", Text),
)
# NetarchiveSuite's unique index; its primary key is (tree_id, id), ours id alone, which implies it
Index("eav_type_attribute_idx", eav_type_attribute.c.tree_id, eav_type_attribute.c.id, unique=True)

eav_attribute = Table(
    "eav_attribute", metadata,
    Column("tree_id", Integer, nullable=False),
    _key("eav_attribute"),
    Column("entity_id", Integer, nullable=False),
    Column("type_id", Integer, nullable=False),
    Column("val_int", Integer),
    Column("val_datetime", UTCDateTime),
    Column("val_varchar", String(8000)),
    Column("val_text", Text),
)
Index("eav_attribute_idx", eav_attribute.c.tree_id, eav_attribute.c.entity_id)

# NetarchiveSuite's inserts leave the key out and rely on the column default, as do COPY and psql loads;
# SQLAlchemy's own inserts call nextval() on the Sequence itself.
for _table_name, (_column, _sequence) in NETARCHIVESUITE_SEQUENCES.items():
    for _statement in (f"ALTER TABLE {_table_name} ALTER COLUMN {_column} SET DEFAULT nextval('{_sequence}'::regclass)",
                       f"ALTER SEQUENCE {_sequence} OWNED BY {_table_name}.{_column}"):
        event.listen(metadata.tables[_table_name], "after_create", DDL(_statement).execute_if(dialect="postgresql"))

# ---------------------------------------------------------------- ours
users = Table(
    "users", metadata,
    Column("user_id", Id, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("fullname", String(300)),
    Column("email", String(300)),
    # curator, operator, archivist or admin
    Column("role", String(30), nullable=False),
    Column("password_hash", String(300)),
    Column("isactive", Boolean, nullable=False, server_default=text("true")),
    Column("created", UTCDateTime, nullable=False),
    Column("edition", BigInteger, nullable=False, server_default=text("1")),
    # ours: a session cookie carries the generation it was issued in; logout and a password change raise
    # it, which ends every session of the user in every client at once (webui/auth.py)
    Column("session_generation", BigInteger, nullable=False, server_default=text("0")),
)

# Every change to a definition or a job: who, when, what, before and after (JSON text).
audit_log = Table(
    "audit_log", metadata,
    Column("audit_id", Id, primary_key=True, autoincrement=True),
    Column("changed_at", UTCDateTime, nullable=False),
    Column("actor", String(100), nullable=False),
    Column("tablename", String(100), nullable=False),
    Column("row_key", String(300), nullable=False),
    Column("action", String(20), nullable=False),  # insert, update, delete
    Column("before", Text),
    Column("after", Text),
)
Index("audit_log_row", audit_log.c.tablename, audit_log.c.row_key)
Index("audit_log_changed_at", audit_log.c.changed_at)

# ---------------------------------------------------------------- ours: the running system
# The single scheduler allowed to act on this database (SQLite; PostgreSQL uses an advisory lock).
scheduler_lock = Table(
    "scheduler_lock", metadata,
    Column("name", String(100), primary_key=True),
    Column("holder", String(300), nullable=False),
    Column("acquired_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
)

# Whether the leading scheduler can hear the controllers' heartbeats (harvestdef/model/controllers.py,
# Hearing): one row, written by the leader as its broker connection goes and comes back, so the web UI judges
# a controller's silence as the scheduler does.
scheduler_hearing = Table(
    "scheduler_hearing", metadata,
    Column("name", String(100), primary_key=True),
    Column("holder", String(300), nullable=False),
    Column("deaf_since", UTCDateTime),  # its broker connection down since then; NULL: connected
    Column("hearing_since", UTCDateTime),  # connected again since then, after an outage; NULL: no outage
    Column("changed_at", UTCDateTime, nullable=False),
)

# Why a harvest definition is waiting, was deactivated or failed to generate, for the UI and API.
harvest_state = Table(
    "harvest_state", metadata,
    Column("harvest_id", BigInteger, ForeignKey("harvestdefinitions.harvest_id"), primary_key=True),
    # waiting, generating, generated, deactivated
    Column("state", String(30), nullable=False),
    Column("reason", String(2000), nullable=False),
    Column("changed_at", UTCDateTime, nullable=False),
    # the reason's phrase as JSON ({"code", "values"}, harvestdef/harvestreasons.py), which a page says in its
    # language; null for a reason stored without one
    Column("reason_phrase", Text),
)

# A run asked for outside the schedule ("run now"): the next tick generates it, then deletes the row in
# the run's own transaction, so one request makes one run.
harvest_run_requests = Table(
    "harvest_run_requests", metadata,
    Column("harvest_id", BigInteger, ForeignKey("harvestdefinitions.harvest_id"), primary_key=True,
           autoincrement=False),
    Column("requested_at", UTCDateTime, nullable=False),
    Column("requested_by", String(100), nullable=False),
)

# The job-generation preview of a harvest's next run, asked for by the web UI and made by the scheduler's
# tick (job generation is the scheduler's): jobs, configurations per job, expected objects and bytes.
harvest_previews = Table(
    "harvest_previews", metadata,
    Column("harvest_id", BigInteger, ForeignKey("harvestdefinitions.harvest_id"), primary_key=True,
           autoincrement=False),
    Column("requested_at", UTCDateTime, nullable=False),
    Column("requested_by", String(100), nullable=False),
    Column("computed_at", UTCDateTime),  # NULL while the request waits for a tick
    Column("preview", Text),  # JSON, see scheduler.previews
    Column("error", String(2000)),
)

# Harvest controllers: their registration and their latest heartbeat.
harvesters = Table(
    "harvesters", metadata,
    Column("controller_id", String(100), primary_key=True),
    Column("host", String(300), nullable=False),
    Column("channels", String(2000), nullable=False),  # comma-separated, in order of preference
    Column("accepted", Boolean, nullable=False),
    Column("refusal_reason", String(2000)),
    Column("registered_at", UTCDateTime),
    Column("pid", Integer),
    Column("version", String(100)),
    Column("free_disk_bytes", BigInteger),
    Column("load_average", Float),
    Column("memory_rss_bytes", BigInteger),
    Column("paused", Boolean, nullable=False, server_default=text("false")),
    Column("pause_reason", String(2000)),
    Column("current_job_id", BigInteger),
    Column("current_attempt_id", String(64)),
    Column("current_job_state", String(100)),
    Column("last_heartbeat", UTCDateTime),
    # the seconds between this controller's heartbeats, as its latest heartbeat stated them (NULL: not stated);
    # the scheduler counts it lost after lostAfterHeartbeats of them
    Column("heartbeat_interval", Float),
    # the bytes the controller keeps free in its serverDir (minSpaceLeft), as its latest heartbeat stated
    # them (NULL: not stated); below it, a running crawl's page says its disk is short
    Column("min_space_left", BigInteger),
    Column("last_ready", UTCDateTime),
    # the job released for this controller's latest ready message, so one idle controller releases one job
    Column("released_job_id", BigInteger),
    Column("released_at", UTCDateTime),
)

# Messages that failed validation or could not be handled, with the reason (from the dead-letter queue).
dead_letters = Table(
    "dead_letters", metadata,
    Column("dead_letter_id", Id, primary_key=True, autoincrement=True),
    Column("received_at", UTCDateTime, nullable=False),
    Column("queue", String(300), nullable=False),
    Column("reason", String(2000), nullable=False),
    Column("job_id", BigInteger),
    Column("body", Text, nullable=False),
)

# What happened to a job's crawl beside its status: checkpoints and resumes, as its controller reported
# them (message JobEvent). One row per event; a repeated message matches its row and adds none.
job_events = Table(
    "job_events", metadata,
    Column("event_id", Id, primary_key=True, autoincrement=True),
    Column("job_id", BigInteger, nullable=False),
    Column("attempt_id", String(64), nullable=False),
    Column("controller_id", String(100), nullable=False),
    Column("kind", String(30), nullable=False),  # the kinds of repositories/jobevents.py
    Column("checkpoint", String(300), nullable=False),
    Column("happened_at", UTCDateTime, nullable=False),
    Column("received_at", UTCDateTime, nullable=False),
    UniqueConstraint("job_id", "kind", "checkpoint", "happened_at", name="job_events_once"),
)
Index("job_events_job", job_events.c.job_id, job_events.c.happened_at)

# ours: a running job's domains as its crawl.log counts them so far (CrawlTally), by the final domain
# report's rules; the rows go when the job ends, as runningjobsmonitor's do.
running_domain_counts = Table(
    "running_domain_counts", metadata,
    Column("jobid", BigInteger, nullable=False),
    Column("domain", String(300), nullable=False),
    Column("objects", BigInteger, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("tstamp", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("jobid", "domain"),
)

# Live changes to a running job (docs/scheduler.md, Live changes): control actions and changes, versioned per
# job in the order operators made them. The web UI writes a row pending; the scheduler sends it to the
# controller that holds the job's claim (``sent_at``: its last sending); the controller's answer settles
# it applied or refused, with the reason and the attempt that applied it.
job_changes = Table(
    "job_changes", metadata,
    Column("job_id", BigInteger, nullable=False),
    Column("version", Integer, nullable=False),
    Column("kind", String(30), nullable=False),  # the kinds of repositories/jobchanges.py
    Column("payload", Text, nullable=False),  # a JSON object
    Column("author", String(100), nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Column("state", String(10), nullable=False),  # pending, applied, refused
    Column("reason", String(2000), nullable=False, server_default=""),
    Column("applied", UTCDateTime),  # when the controller applied or refused it
    Column("attempt_id", String(64), nullable=False, server_default=""),  # the attempt that applied it
    Column("sent_at", UTCDateTime),
    PrimaryKeyConstraint("job_id", "version"),
)
# the scheduler's sending looks up pending changes only
Index("job_changes_state", job_changes.c.state, job_changes.c.job_id, job_changes.c.version)

# Per harvest run (harvest_num): totals of the final reports, kept up to date at status intake.
harvest_run_summary = Table(
    "harvest_run_summary", metadata,
    Column("harvest_id", BigInteger, nullable=False),
    Column("harvest_num", Integer, nullable=False),
    Column("jobs_done", Integer, nullable=False, server_default=text("0")),
    Column("jobs_failed", Integer, nullable=False, server_default=text("0")),
    Column("configurations", BigInteger, nullable=False, server_default=text("0")),
    Column("objects", BigInteger, nullable=False, server_default=text("0")),
    Column("bytes", BigInteger, nullable=False, server_default=text("0")),
    Column("novel_objects", BigInteger, nullable=False, server_default=text("0")),
    Column("novel_bytes", BigInteger, nullable=False, server_default=text("0")),
    Column("duplicate_objects", BigInteger, nullable=False, server_default=text("0")),
    Column("duplicate_bytes", BigInteger, nullable=False, server_default=text("0")),
    # configurations per StopReason, by name in lower case
    *(Column(f"stop_{name}", BigInteger, nullable=False, server_default=text("0"))
      for name in ("download_complete", "object_limit", "size_limit", "config_size_limit",
                   "download_unfinished", "config_object_limit", "time_limit")),
    Column("updated_at", UTCDateTime, nullable=False),
    # configurations that got nothing (a row in harvest_findings)
    Column("nothing_harvested", BigInteger, nullable=False, server_default=text("0")),
    PrimaryKeyConstraint("harvest_id", "harvest_num"),
)

# historyinfo's companion: one row per historyinfo row whose configuration got nothing from its job (no
# object, or every seed failed; harvester/postprocess/domainreport.py says how), with the reason from
# crawl.log in English (for the API) and in parts (for a page in another language). A historyinfo row
# without one got something. Keyed by historyinfo_id, with the row's job,
# configuration and run beside it so a job's, a domain's and a run's findings are each one index range.
harvest_findings = Table(
    "harvest_findings", metadata,
    Column("historyinfo_id", BigInteger, primary_key=True, autoincrement=False),
    Column("job_id", BigInteger),
    Column("config_id", BigInteger, nullable=False),
    Column("harvest_id", BigInteger, nullable=False),
    Column("harvest_num", Integer),  # NULL for history of no known job
    Column("reason", String(2000), nullable=False),  # "DNS lookup failed (-6) for http://dead.example/"
    Column("fetch_status", Integer),  # the crawl.log status the reason names; NULL when no seed was logged
    Column("seed", Text),  # the seed the reason names
    # how many more of the domain's seeds failed; NULL when the reason names no seed, or its controller
    # did not say (message schema before 1.7)
    Column("other_seeds_failed", Integer),
)
Index("harvest_findings_run", harvest_findings.c.harvest_id, harvest_findings.c.harvest_num)
Index("harvest_findings_job", harvest_findings.c.job_id)

# A job's QA report in numbers (harvester/postprocess/qa.py), from its final CrawlStatus; the report itself
# is in the job's metadata WARC. Keyed by job, with its run beside it so a run's sums are one index range.
job_qa_summaries = Table(
    "job_qa_summaries", metadata,
    Column("job_id", BigInteger, primary_key=True, autoincrement=False),
    Column("harvest_id", BigInteger, nullable=False),
    Column("harvest_num", Integer, nullable=False),
    Column("seeds_total", BigInteger, nullable=False),
    Column("seeds_not_captured", BigInteger, nullable=False),
    Column("pages_with_missing_resources", BigInteger, nullable=False),
    Column("missing_resources", BigInteger, nullable=False),
    Column("tstamp", UTCDateTime, nullable=False),
)
Index("job_qa_summaries_run", job_qa_summaries.c.harvest_id, job_qa_summaries.c.harvest_num)

# ours: how a job's crawl ended when that was asked for and no error (CrawlStatus.crawl_end): an operator's
# stop or fail (``author``, the job change ``change_version``), or a budget of the whole crawl reached
# (``budget_limit``: its objects, bytes or seconds). One row per job, written with its final status; a job
# that ended by itself or for a reason among its harvest errors has none.
job_ends = Table(
    "job_ends", metadata,
    Column("job_id", BigInteger, primary_key=True, autoincrement=False),
    Column("cause", String(30), nullable=False),  # harvestdef.messages.CRAWL_END_CAUSES
    Column("author", String(100), nullable=False, server_default=""),
    Column("change_version", Integer),
    Column("budget_limit", BigInteger),
    Column("ended_at", UTCDateTime, nullable=False),
)

# The seed thumbnails the QA worker makes after a job (scheduler/thumbnails.py): per job whether its pass is
# over ("MADE", or "SKIPPED" with the note saying why none could be made), and per seed the stored image's
# name in the job's directory of the archive store, or the note why it has none. The run beside the job
# makes "the same seed in the previous run" one index range.
job_thumbnails = Table(
    "job_thumbnails", metadata,
    Column("job_id", BigInteger, primary_key=True, autoincrement=False),
    Column("harvest_id", BigInteger, nullable=False),
    Column("harvest_num", Integer, nullable=False),
    Column("state", String(16), nullable=False),  # ThumbnailState's name
    Column("note", Text),
    Column("tstamp", UTCDateTime, nullable=False),
)
seed_thumbnails = Table(
    "seed_thumbnails", metadata,
    Column("job_id", BigInteger, primary_key=True, autoincrement=False),
    Column("seed_key", String(40), primary_key=True),  # sha1 of the seed, hex: seeds are long URLs
    Column("seed", Text, nullable=False),
    Column("harvest_id", BigInteger, nullable=False),
    Column("harvest_num", Integer, nullable=False),
    Column("name", String(200)),  # thumbnails/<seed_key>.png in the job's directory; NULL: none made
    Column("capture_time", String(14)),  # the replayed capture's 14-digit timestamp
    Column("note", Text),
    Column("tstamp", UTCDateTime, nullable=False),
)
Index("seed_thumbnails_run", seed_thumbnails.c.harvest_id, seed_thumbnails.c.harvest_num, seed_thumbnails.c.seed_key)

# Per domain configuration: its newest historyinfo row and its best one by the rule of the expected-size
# estimate (most objects, older on ties, nothing older than the newest complete harvest).
config_history_summary = Table(
    "config_history_summary", metadata,
    Column("config_id", BigInteger, primary_key=True),
    Column("latest_historyinfo_id", BigInteger, nullable=False),
    Column("latest_harvest_id", BigInteger, nullable=False),
    Column("latest_job_id", BigInteger),
    Column("latest_harvest_time", UTCDateTime, nullable=False),
    Column("latest_stopreason", Integer, nullable=False),
    Column("latest_objectcount", BigInteger, nullable=False),
    Column("latest_bytecount", BigInteger, nullable=False),
    Column("best_historyinfo_id", BigInteger, nullable=False),
    Column("best_stopreason", Integer, nullable=False),
    Column("best_objectcount", BigInteger, nullable=False),
    Column("best_bytecount", BigInteger, nullable=False),
)
# A harvest's configurations by their latest bytes (migration 0006). The statistics page does not read it:
# it ranks a run's largest domains from that run's own historyinfo rows (webui/api/history.py).
Index("config_history_summary_harvest_bytes", config_history_summary.c.latest_harvest_id,
      config_history_summary.c.latest_bytecount.desc())

# The deduplication index of each harvest run that schedulers before migration 0028 built: one
# index of every job before the run. The NEW jobs of a run with a ready row still go with that index
# (scheduler/dedupsources.py); later runs have their jobs' rows in job_dedup_sources instead.
harvest_run_dedup_index = Table(
    "harvest_run_dedup_index", metadata,
    Column("harvest_id", BigInteger, nullable=False),
    Column("harvest_num", Integer, nullable=False),
    # the jobs the run deduplicates against, ascending, comma-separated; empty: none (no index)
    Column("job_ids", Text, nullable=False),
    Column("ready", Boolean, nullable=False, server_default=text("false")),
    Column("index_path", String(300)),  # relative to the archive store's root; NULL while not built or not needed
    Column("missing_job_ids", Text),  # requested jobs without stored dedup entries, left out of the index
    Column("entries", BigInteger),
    Column("failures", Integer, nullable=False, server_default=text("0")),  # failed builds since the last success
    Column("error", String(2000)),  # why the last build failed
    Column("changed_at", UTCDateTime, nullable=False),
    # why the index was refused: too few of its jobs' entries could be read (satisfactorythresholdpercentage)
    Column("refusal", String(2000)),
    PrimaryKeyConstraint("harvest_id", "harvest_num"),
)

# Which earlier jobs hold the captures of each job's domains, and whether the job may be dispatched (migration
# 0028), written by the scheduler (scheduler/dedupsources.py): a NEW job goes once its row is ready.
job_dedup_sources = Table(
    "job_dedup_sources", metadata,
    Column("job_id", BigInteger, ForeignKey("jobs.job_id"), primary_key=True),
    Column("ready", Boolean, nullable=False, server_default=text("false")),
    # "harvest_id/job_id" of each source, newest first, comma-separated; empty: no domain was harvested before
    Column("sources", Text, nullable=False),
    Column("domains", Integer, nullable=False),       # the job's domains
    Column("with_history", Integer, nullable=False),  # of those, the domains an earlier job of its chain harvested
    Column("covered", Integer, nullable=False),       # of those, the domains whose earlier captures are stored
    Column("missing_job_ids", Text),  # ended jobs without stored entries that left a domain uncovered
    # why the job is held: too few of its domains' earlier captures are stored (satisfactorythresholdpercentage)
    Column("refusal", String(2000)),
    Column("changed_at", UTCDateTime, nullable=False),
    Column("refusal_phrase", Text),  # the refusal's phrase as JSON, as harvest_state.reason_phrase
)

# API tokens of web UI users (Authorization: Bearer ...); only a SHA-256 of each token is kept.
api_tokens = Table(
    "api_tokens", metadata,
    Column("token_id", Id, primary_key=True, autoincrement=True),
    Column("user_id", Id, ForeignKey("users.user_id"), nullable=False),
    Column("token_sha256", String(64), nullable=False, unique=True),
    Column("created", UTCDateTime, nullable=False),
    Column("last_used", UTCDateTime),
    Column("revoked", Boolean, nullable=False, server_default=text("false")),
    # what its user named it (a script, a machine), to tell the tokens apart; empty for tokens of before 0026
    Column("label", String(100), nullable=False, server_default=text("''")),
)

# Failed logins in a row, per user name (kind "user") and per client address (kind "address"), and until
# when the next attempt of that name or address is refused (harvestdef/repositories/logins.py). In the
# database, not in memory, so that every web UI process and thread counts the same failures.
login_failures = Table(
    "login_failures", metadata,
    Column("kind", String(10), nullable=False),
    Column("login_key", String(300), nullable=False),
    Column("failures", Integer, nullable=False),
    Column("last_failure", UTCDateTime, nullable=False),
    Column("wait_until", UTCDateTime),
    PrimaryKeyConstraint("kind", "login_key"),
)
Index("login_failures_last_failure", login_failures.c.last_failure)

# Domains per top-level domain (the "Domains per TLD" overview), kept in the transaction that creates or
# deletes domains (harvestdef/repositories/definitioncounts.py), so the overview reads a few thousand rows
# instead of grouping 2,000,000 names. IP-address domains count under one pseudo-TLD.
domain_tld_counts = Table(
    "domain_tld_counts", metadata,
    Column("tld", String(300), primary_key=True),
    Column("domains", BigInteger, nullable=False),
)

# The configurations and seed lists nothing uses (for the web UI's overviews), kept in the transaction that
# changes a domain's configurations, seed lists or default, or a harvest's configurations: the overviews
# page through these by key instead of testing every configuration of 2,000,000 domains.
unused_configurations = Table(
    "unused_configurations", metadata,
    Column("config_id", BigInteger, primary_key=True, autoincrement=False),
    Column("domain_id", BigInteger, nullable=False),
)
Index("unused_configurations_domain", unused_configurations.c.domain_id)
unused_seedlists = Table(
    "unused_seedlists", metadata,
    Column("seedlist_id", BigInteger, primary_key=True, autoincrement=False),
    Column("domain_id", BigInteger, nullable=False),
)
Index("unused_seedlists_domain", unused_seedlists.c.domain_id)

# ours: webhooks an admin defines (harvestdef/model/webhooks.py). ``events`` is the event names it wants,
# comma-separated; ``secret`` signs its deliveries and so is kept as given (pages and the API show a hint).
webhooks = Table(
    "webhooks", metadata,
    Column("webhook_id", Id, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("url", String(2000), nullable=False),
    Column("events", String(300), nullable=False),
    Column("secret", String(200), nullable=False),
    Column("isactive", Boolean, nullable=False, server_default=text("true")),
    Column("created", UTCDateTime, nullable=False),
    Column("edition", BigInteger, nullable=False, server_default=text("1")),
)

# ours: one event for one webhook, written in the transaction of what it announces, and how its sending went
# (the leading scheduler sends it: scheduler/webhooks.py). ``event_key`` names the event's occurrence, so a
# repeat of it (a message handled twice) adds no second delivery; ``document`` is the event's JSON.
webhook_deliveries = Table(
    "webhook_deliveries", metadata,
    Column("delivery_id", Id, primary_key=True, autoincrement=True),
    Column("webhook_id", BigInteger, nullable=False),
    Column("event", String(30), nullable=False),
    Column("event_key", String(300), nullable=False),
    Column("url", String(2000), nullable=False),
    Column("document", Text, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Column("state", String(10), nullable=False),  # pending, delivered, failed
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("next_attempt_at", UTCDateTime),  # NULL once delivered or failed
    Column("last_attempt_at", UTCDateTime),
    Column("last_status", Integer),  # the receiver's HTTP status; NULL when it gave none
    Column("last_error", String(2000)),
    UniqueConstraint("webhook_id", "event_key", name="webhook_deliveries_once"),
)
# the sender looks up pending deliveries that are due; the log pages by webhook, newest first
Index("webhook_deliveries_due", webhook_deliveries.c.state, webhook_deliveries.c.next_attempt_at)
Index("webhook_deliveries_webhook", webhook_deliveries.c.webhook_id, webhook_deliveries.c.delivery_id)
