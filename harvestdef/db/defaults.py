"""The rows a new harvest database starts with: NetarchiveSuite's default schedules, harvest channels,
extended field types and crawl attribute types.

Each function inserts what is missing and leaves existing rows alone, so ``db init`` can run again on
a database a site has already changed. Schedules and channels are the site's once it has any: a database
taken over from NetarchiveSuite keeps its ``Once a day`` schedules and LOWPRIORITY/HIGHPRIORITY channels
as the defaults, without HarvestSuite's beside them. The BROWSER channel (never a default) goes beside
HarvestSuite's FOCUSED channel, in a database made by HarvestSuite before it existed too.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

from sqlalchemy import Connection, func, insert, select

from harvestdef.crawlattributes import ATTRIBUTES, CONFIGURATION_TREE, SNAPSHOT_TREE
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.settings import PROJECT_ROOT

# templates/*.cxml is where the default crawl templates are kept. A wheel carries them as the package data of
# this package (pyproject.toml maps templates/ onto it); a source checkout, an editable install included,
# has no such package and reads templates/ itself.
TEMPLATES_PACKAGE = "harvestdef.crawl_templates"

# name, timeunit (1 HOURLY 2 DAILY 3 WEEKLY 4 MONTHLY 5 MINUTE), numtimeunits, maxrepeats, comment
DEFAULT_SCHEDULES: list[tuple[str, int, int, int | None, str]] = [
    ("Once_a_day", 2, 1, None, "Runs once a day, at any time"),
    ("Once_a_month", 4, 1, None, "Runs once a month, at any time"),
    ("Once_a_week", 3, 1, None, "Runs once a week, at any time"),
    ("Once_an_hour", 1, 1, None, "Runs once an hour, at any time"),
    ("Once", 1, 1, 1, "Runs once, as soon as possible"),
]

# name, issnapshot, isdefault, comment
DEFAULT_CHANNELS: list[tuple[str, bool, bool, str]] = [
    ("SNAPSHOT", True, True, "Channel for snapshot harvests (NetarchiveSuite's LOWPRIORITY queue)"),
    ("FOCUSED", False, True, "Channel for selective and event harvests (NetarchiveSuite's HIGHPRIORITY queue)"),
]
BROWSER_CHANNEL = ("BROWSER", False, False, "Channel for selective harvests of sites that need a browser: served by "
                                            "controllers whose harvestsuite.harvester.crawler is browser "
                                            "(docs/browser.md)")

EXTENDED_FIELD_TYPES: list[tuple[int, str]] = [(1, "domains"), (2, "harvestdefinitions")]

# EAV crawl attribute types (harvestdef.crawlattributes) in both of NetarchiveSuite's trees:
# tree 2 a configuration's values, filling %{MAX_HOPS}, %{HONOR_ROBOTS_DOT_TXT} and %{EXTRACT_JAVASCRIPT};
# tree 1 a snapshot harvest's. NetarchiveSuite loads the type's class by class_namespace + class_name.
EAV_CLASS_NAMESPACE = "dk.netarkivet.harvester.datamodel.eav"
EAV_CLASS_NAME = "ContentAttrType_Generic"


def insert_schema_versions(conn: Connection) -> None:
    present = set(conn.scalars(select(s.schemaversions.c.tablename)))
    rows = [{"tablename": t, "version": v} for t, v in s.SCHEMA_VERSIONS.items() if t not in present]
    if rows:
        conn.execute(insert(s.schemaversions), rows)


def insert_default_schedules(conn: Connection) -> None:
    """HarvestSuite's schedules, on a database without any schedule."""
    if conn.scalar(select(func.count()).select_from(s.schedules)):
        return
    for name, unit, count, repeats, comment in DEFAULT_SCHEDULES:
        conn.execute(insert(s.schedules).values(
            name=name, comments=comment, timeunit=unit, numtimeunits=count, anytime=True,
            maxrepeats=repeats, edition=1))


def insert_default_channels(conn: Connection) -> None:
    """SNAPSHOT and FOCUSED, each only where no default channel of its kind (snapshot or selective) exists;
    BROWSER beside FOCUSED."""
    ch = s.harvestchannel
    present = set(conn.scalars(select(ch.c.name)))
    defaults_present = set(conn.scalars(select(ch.c.issnapshot).where(ch.c.isdefault)))
    for name, snapshot, default, comment in DEFAULT_CHANNELS:
        if name not in present and snapshot not in defaults_present:
            conn.execute(insert(s.harvestchannel).values(
                name=name, issnapshot=snapshot, isdefault=default, comments=comment))
            present.add(name)
    name, snapshot, default, comment = BROWSER_CHANNEL
    if "FOCUSED" in present and name not in present:
        conn.execute(insert(s.harvestchannel).values(name=name, issnapshot=snapshot, isdefault=default,
                                                     comments=comment))


def insert_extended_field_types(conn: Connection) -> None:
    present = set(conn.scalars(select(s.extendedfieldtype.c.extendedfieldtype_id)))
    for type_id, name in EXTENDED_FIELD_TYPES:
        if type_id not in present:
            conn.execute(insert(s.extendedfieldtype).values(extendedfieldtype_id=type_id, name=name))


def insert_eav_attributes(conn: Connection) -> None:
    """The crawl attribute types each tree lacks (by name). Tree 2 takes NetarchiveSuite's ids 1-3 on a new
    database; any other type takes the next free id, as our key is the id alone where NetarchiveSuite's is
    (tree_id, id), and readers look types up by tree and name."""
    ta = s.eav_type_attribute
    for tree in (CONFIGURATION_TREE, SNAPSHOT_TREE):
        present = set(conn.scalars(select(ta.c.name).where(ta.c.tree_id == tree)))
        for number, kind in enumerate(ATTRIBUTES, start=1):
            if kind.name in present:
                continue
            taken = conn.scalar(select(func.count()).select_from(ta).where(ta.c.id == number))
            type_id = number if tree == CONFIGURATION_TREE and not taken else (
                (conn.scalar(select(func.max(ta.c.id))) or 0) + 1)
            conn.execute(insert(ta).values(
                tree_id=tree, id=type_id, name=kind.name, class_namespace=EAV_CLASS_NAMESPACE,
                class_name=EAV_CLASS_NAME, datatype=1, viewtype=kind.viewtype, def_int=kind.default))


def default_templates_dir() -> Traversable:
    """The installed package's crawl templates, or templates/ of the source checkout."""
    try:
        return files(TEMPLATES_PACKAGE)
    except ModuleNotFoundError:
        return PROJECT_ROOT / "templates"


def default_template_files(directory: Traversable | None = None) -> list[Traversable]:
    """The *.cxml files of ``directory`` (default: :func:`default_templates_dir`), sorted by name."""
    directory = default_templates_dir() if directory is None else directory
    templates = [entry for entry in directory.iterdir() if entry.name.endswith(".cxml") and entry.is_file()]
    return sorted(templates, key=lambda entry: entry.name)


def insert_default_templates(conn: Connection, directory: Traversable | None = None) -> None:
    """Load every templates/*.cxml whose name (file name without .cxml) is not in ordertemplates yet."""
    present = set(conn.scalars(select(s.ordertemplates.c.name)))
    for path in default_template_files(directory):
        name = path.name.removesuffix(".cxml")
        if name in present:
            continue
        conn.execute(insert(s.ordertemplates).values(
            name=name, orderxml=path.read_text(encoding="utf-8"), isactive=True, edition=1,
            description=f"Default crawl template from templates/{path.name}", lastupdated=utcnow()))


def insert_defaults(conn: Connection) -> None:
    insert_schema_versions(conn)
    insert_default_schedules(conn)
    insert_default_channels(conn)
    insert_extended_field_types(conn)
    insert_eav_attributes(conn)
    insert_default_templates(conn)


def count_rows(conn: Connection, table_name: str) -> int:
    return conn.scalar(select(func.count()).select_from(s.metadata.tables[table_name])) or 0
