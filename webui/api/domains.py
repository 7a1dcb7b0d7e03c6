"""API routes: domains, their seed lists and their configurations (``/api/v1/domains...``).

Domains are named in the path in Unicode or punycode. Every write is all or nothing: one transaction, and a
PATCH names the ``edition`` it was based on (409 if the domain has moved on). Seeds and domain names are
checked line by line (harvestdef.seeds, harvestdef.domainnames): a request with a refused line is answered
400 with every refused line listed (webui/api/refusals.py) and stores nothing. A change to a seed list or a
configuration is a change to its domain, so those writes take the domain's edition too.
"""

from __future__ import annotations

from typing import Any

from harvestdef.crawlattributes import as_json, check_values
from harvestdef.domainnames import to_punycode
from harvestdef.errors import CrawlerTrapError, PatternError
from harvestdef.model.definitions import Domain, DomainConfiguration, SeedList
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.crawlattributes import CrawlAttributeRepository, CrawlAttributes
from harvestdef.repositories.domains import DomainRepository, ListedDomain
from harvestdef.repositories.seedlists import SeedListRepository
from webui.api import refusals  # noqa: F401 - its handler answers RefusedLinesError with the lines
from webui.api.core import (
    PAGED,
    SEARCH_FIELD,
    SEARCH_QUERY,
    blueprint,
    body,
    decode_cursor,
    edition,
    field,
    input_named,
    jsonable,
    limit,
    page,
)
from webui.api.errors import ApiError
from webui.api.parameters import query, takes
from webui.auth import CURATE, READ, require
from webui.context import actor, database, settings

# Names one POST /domains may carry; longer lists go through the file upload of the create page.
MAX_NAMES = 10_000


def domain_json(domain: Domain, is_active: bool) -> dict[str, Any]:
    return {"name": domain.name,
            "punycode": to_punycode(domain.name),
            "comments": domain.comments, "crawler_traps": list(domain.crawlertraps), "alias": domain.alias_of,
            "alias_confirmed": jsonable(domain.lastaliasupdate), "active": is_active, "edition": domain.edition}


def seedlist_json(seedlist: SeedList) -> dict[str, Any]:
    return {"name": seedlist.name, "comments": seedlist.comments, "seeds": list(seedlist.seeds)}


def configuration_json(configuration: DomainConfiguration, seedlist_names: dict[int, str],
                       attributes: CrawlAttributes) -> dict[str, Any]:
    return {"name": configuration.name, "comments": configuration.comments,
            "template": configuration.template_name,
            "seedlists": [seedlist_names[i] for i in configuration.seedlist_ids if i in seedlist_names],
            "max_objects": configuration.maxobjects, "max_bytes": configuration.maxbytes,
            "max_rate": configuration.maxrate, "default": configuration.is_default,
            "crawl_attributes": as_json(attributes.values())}


def _attributes_of(data: dict[str, Any]) -> dict[str, int] | None:
    """The request's ``crawl_attributes`` (any of max_hops, honor_robots_dot_txt, extract_javascript) as stored
    values, or None if it has none."""
    if data.get("crawl_attributes") is None:
        return None
    return {name: value for name, value in check_values(data["crawl_attributes"]).items() if value is not None}


def _repository(conn: Any) -> DomainRepository:
    return DomainRepository.from_settings(conn, settings(), actor())


def _listed(item: ListedDomain) -> dict[str, Any]:
    return domain_json(item.domain, item.is_active)


@blueprint.route("/domains", methods=["GET"])
@takes(SEARCH_QUERY, SEARCH_FIELD, *PAGED)
@require(READ)
def list_domains() -> Any:
    """Domains by name: ``?q=`` a name with * wildcards, ``?field=`` name, crawlertraps or comments."""
    where = query("field", "name") or "name"
    cursor = decode_cursor(query("after"))
    after = str(cursor[0]) if cursor else None
    size = limit()
    with database().connect() as conn, input_named("q", PatternError):
        rows = _repository(conn).search_page(query("q", "") or "", after, size + 1, where)
    return page(rows, size, lambda item: [item.domain.name], _listed)


@blueprint.route("/domains", methods=["POST"])
@require(CURATE)
def create_domains() -> Any:
    """Create domains: ``{"names": [...]}`` (names, hosts or URLs: each becomes its registered domain, with a
    note); all or none: 400 with every refused line if any is refused."""
    names = field(body(), "names", list)
    if len(names) > MAX_NAMES:
        raise ApiError("invalid", f"at most {MAX_NAMES} names at a time; upload a file for more", "names")
    if not all(isinstance(name, str) for name in names):
        raise ApiError("invalid", "names must be a list of strings", "names")
    with database().begin() as conn:
        made = _repository(conn).create_many(names)
    return {"created": made.created, "existing": made.existing, "notes": made.notes}, 201 if made.created else 200


@blueprint.route("/domains/<name>", methods=["GET"])
@require(READ)
def get_domain(name: str) -> Any:
    """One domain."""
    with database().connect() as conn:
        repository = _repository(conn)
        return domain_json(repository.get(name), repository.is_active(name))


@blueprint.route("/domains/<name>", methods=["PATCH"])
@require(CURATE)
def patch_domain(name: str) -> Any:
    """Change comments, crawler_traps (a list), alias (a name, null to clear; the same name renews) or active."""
    data = body()
    expected = edition(data)
    traps = field(data, "crawler_traps", list, required=False)
    if traps is not None and not all(isinstance(trap, str) for trap in traps):
        raise ApiError("invalid", "crawler_traps must be a list of strings", "crawler_traps")
    alias = field(data, "alias", str, required=False)
    with database().begin() as conn, input_named("crawler_traps", CrawlerTrapError):
        repository = _repository(conn)
        domain = repository.edit(
            name, expected, comments=field(data, "comments", str, required=False),
            crawlertraps=None if traps is None else "\n".join(traps), alias_of=alias,
            clear_alias="alias" in data and data["alias"] is None, active=field(data, "active", bool, required=False))
        return domain_json(domain, repository.is_active(domain.name))


@blueprint.route("/domains/<name>/seedlists", methods=["GET"])
@require(READ)
def list_seedlists(name: str) -> Any:
    """The seed lists of a domain (a domain has few: one page)."""
    with database().connect() as conn:
        seedlists = SeedListRepository(conn).list_for_domain(name)
    return {"items": [seedlist_json(seedlist) for seedlist in seedlists], "next": None}


@blueprint.route("/domains/<name>/seedlists", methods=["POST"])
@require(CURATE)
def create_seedlist(name: str) -> Any:
    """A new seed list: ``{"name", "seeds": [...], "comments", "edition"}`` (edition: the domain's)."""
    data = body()
    seeds = field(data, "seeds", list)
    if not all(isinstance(seed, str) for seed in seeds):
        raise ApiError("invalid", "seeds must be a list of strings", "seeds")
    with database().begin() as conn:
        repository = SeedListRepository.from_settings(conn, settings(), actor())
        domain_edition = _domain_edition(conn, name, data)
        seedlist = repository.create(name, field(data, "name", str), seeds, domain_edition,
                                     field(data, "comments", str, required=False, default=""))
    return seedlist_json(seedlist), 201


@blueprint.route("/domains/<name>/seedlists/<listname>", methods=["PATCH"])
@require(CURATE)
def update_seedlist(name: str, listname: str) -> Any:
    """Replace a seed list's ``seeds`` (a list) and/or ``comments``; ``edition`` (the domain's) is required."""
    data = body()
    expected = edition(data)
    seeds = field(data, "seeds", list, required=False)
    if seeds is not None and not all(isinstance(seed, str) for seed in seeds):
        raise ApiError("invalid", "seeds must be a list of strings", "seeds")
    with database().begin() as conn:
        seedlist = SeedListRepository.from_settings(conn, settings(), actor()).update(
            name, listname, expected, seeds=seeds, comments=field(data, "comments", str, required=False))
    return seedlist_json(seedlist)


@blueprint.route("/domains/<name>/configurations", methods=["GET"])
@require(READ)
def list_configurations(name: str) -> Any:
    """The configurations of a domain (a domain has few: one page)."""
    with database().connect() as conn:
        configurations = ConfigurationRepository(conn).list_for_domain(name)
        names = {seedlist.seedlist_id: seedlist.name for seedlist in SeedListRepository(conn).list_for_domain(name)}
        attributes = CrawlAttributeRepository(conn)
        return {"items": [configuration_json(c, names, attributes.of_configuration(c.config_id))
                          for c in configurations], "next": None}


@blueprint.route("/domains/<name>/configurations", methods=["POST"])
@require(CURATE)
def create_configuration(name: str) -> Any:
    """A new configuration: ``{"name", "template", "seedlists": [...], "max_objects", "max_bytes",
    "crawl_attributes": {"max_hops", "honor_robots_dot_txt", "extract_javascript"}}`` (a crawl attribute not
    given: its default)."""
    data = body()
    seedlists = field(data, "seedlists", list)
    if not all(isinstance(seedlist, str) for seedlist in seedlists):
        raise ApiError("invalid", "seedlists must be a list of seed list names", "seedlists")
    attributes = _attributes_of(data)
    with database().begin() as conn:
        domain_edition = _domain_edition(conn, name, data)
        configuration = ConfigurationRepository.from_settings(conn, settings(), actor()).create(
            name, field(data, "name", str), field(data, "template", str), seedlists, domain_edition,
            maxobjects=field(data, "max_objects", int, required=False, default=-1),
            maxbytes=field(data, "max_bytes", int, required=False, default=-1),
            maxrate=field(data, "max_rate", int, required=False),
            comments=field(data, "comments", str, required=False, default=""), crawl_attributes=attributes or {})
        written = CrawlAttributeRepository(conn).of_configuration(configuration.config_id)
        names = {seedlist.seedlist_id: seedlist.name for seedlist in SeedListRepository(conn).list_for_domain(name)}
    return configuration_json(configuration, names, written), 201


@blueprint.route("/domains/<name>/configurations/<config>", methods=["PATCH"])
@require(CURATE)
def update_configuration(name: str, config: str) -> Any:
    """Change a configuration's template, seedlists, max_objects, max_bytes, max_rate, comments or
    crawl_attributes (max_hops 0-1000, honor_robots_dot_txt and extract_javascript true or false), and with
    ``"default": true`` make it the one snapshot harvests use; ``edition`` (the domain's) is required."""
    data = body()
    expected = edition(data)
    seedlists = field(data, "seedlists", list, required=False)
    if seedlists is not None and not all(isinstance(seedlist, str) for seedlist in seedlists):
        raise ApiError("invalid", "seedlists must be a list of seed list names", "seedlists")
    make_default = field(data, "default", bool, required=False, default=False)
    attributes = _attributes_of(data)
    with database().begin() as conn:
        configurations = ConfigurationRepository.from_settings(conn, settings(), actor())
        configuration = configurations.update(
            name, config, expected, template=field(data, "template", str, required=False), seedlists=seedlists,
            maxobjects=field(data, "max_objects", int, required=False),
            maxbytes=field(data, "max_bytes", int, required=False),
            maxrate=field(data, "max_rate", int, required=False),
            comments=field(data, "comments", str, required=False))
        if make_default and not configuration.is_default:
            # the update above moved the domain on by one edition
            configuration = configurations.set_default(name, config, expected + 1)
        crawl_attributes = CrawlAttributeRepository(conn, actor())
        written = (crawl_attributes.set_configuration(configuration.config_id, attributes) if attributes is not None
                   else crawl_attributes.of_configuration(configuration.config_id))
        names = {seedlist.seedlist_id: seedlist.name for seedlist in SeedListRepository(conn).list_for_domain(name)}
    return configuration_json(configuration, names, written)


def _domain_edition(conn: Any, name: str, data: dict[str, Any]) -> int:
    """The domain edition a creation was based on: ``edition`` if sent, else the domain's current one."""
    sent = field(data, "edition", int, required=False)
    return sent if sent is not None else _repository(conn).get(name).edition
