"""API routes: the curators' overviews of the definitions: every alias with its expiry
(``/aliases``), domains per top-level domain (``/tlds``), and the configurations and seed lists that
nothing uses (``/unused``, ``/unused/configurations``, ``/unused/seedlists``).

Each list is a keyset page read by the repositories (harvestdef.repositories.domains, .configurations,
.seedlists), so over 2,000,000 domains a page is one bounded query and nothing is held here but the page.
The functions that read a page are shared with the definitions pages (webui/definitions/summaries.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from harvestdef.db.types import utcnow
from harvestdef.model.definitions import AliasInfo
from harvestdef.repositories.configurations import ConfigurationRepository, UnusedConfiguration
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.seedlists import SeedListRepository, UnusedSeedList
from webui.api.core import PAGED, blueprint, decode_cursor, encode_cursor, jsonable, limit
from webui.api.errors import ApiError
from webui.api.parameters import query, takes
from webui.auth import READ, require
from webui.context import database, settings


def cursor_of(text: str | None, *kinds: type) -> list[Any] | None:
    """The key of ``?after=``, checked to be ``kinds`` in order; an invalid error naming ``after`` if not."""
    key = decode_cursor(text)
    if key is None:
        return None
    if len(key) != len(kinds) or not all(isinstance(value, kind) and not isinstance(value, bool)
                                         for value, kind in zip(key, kinds, strict=True)):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    return key


def listing(items: list[dict[str, Any]], size: int, key: list[Any] | None) -> dict[str, Any]:
    """The API's list shape from a page fetched with ``size + 1`` rows; ``key`` is the last shown row's."""
    return {"items": items[:size], "next": encode_cursor(key) if len(items) > size and key else None}


# ---------------------------------------------------------------- aliases
def alias_page(conn: Connection, after: str | None, size: int, now: datetime | None = None) -> dict[str, Any]:
    """Up to ``size`` aliases after the cursor, by the domain they are aliases of, with their expiry."""
    key = cursor_of(after, str, str)
    repository = DomainRepository.from_settings(conn, settings())
    timeout = repository.alias_timeout()
    rows = list(repository.alias_summary(now or utcnow(), tuple(key) if key else None, size + 1))  # type: ignore[arg-type]
    items = [alias_json(info, expired, info.last_change + timeout) for info, expired in rows]
    last = rows[size - 1][0] if len(rows) > size else None
    return listing(items, size, [last.alias_of, last.domain] if last else None)


def alias_json(info: AliasInfo, expired: bool, expires: datetime) -> dict[str, Any]:
    return {"domain": info.domain, "alias_of": info.alias_of, "confirmed": jsonable(info.last_change),
            "expires": jsonable(expires), "expired": expired}


# ---------------------------------------------------------------- domains per TLD
def tld_page(conn: Connection, after: str | None, size: int) -> dict[str, Any]:
    key = cursor_of(after, str)
    rows = DomainRepository(conn).tld_counts(key[0] if key else None, size + 1)
    items = [{"tld": tld, "domains": count} for tld, count in rows]
    return listing(items, size, [rows[size - 1][0]] if len(rows) > size else None)


# ---------------------------------------------------------------- unused configurations and seed lists
def unused_configuration_page(conn: Connection, after: str | None, size: int) -> dict[str, Any]:
    key = cursor_of(after, int)
    rows = ConfigurationRepository(conn).unused(key[0] if key else None, size + 1)
    return listing([unused_configuration_json(row) for row in rows], size,
                   [rows[size - 1].config_id] if len(rows) > size else None)


def unused_configuration_json(row: UnusedConfiguration) -> dict[str, Any]:
    return {"domain": row.domain, "configuration": row.name, "template": row.template_name}


def unused_seedlist_page(conn: Connection, after: str | None, size: int) -> dict[str, Any]:
    key = cursor_of(after, int)
    rows = SeedListRepository(conn).unused(key[0] if key else None, size + 1)
    return listing([unused_seedlist_json(row) for row in rows], size,
                   [rows[size - 1].seedlist_id] if len(rows) > size else None)


def unused_seedlist_json(row: UnusedSeedList) -> dict[str, Any]:
    return {"domain": row.domain, "seedlist": row.name}


def unused_counts(conn: Connection) -> dict[str, int]:
    """How many configurations and seed lists nothing uses: one counting pass of each in the database."""
    return {"configurations": ConfigurationRepository(conn).count_unused(),
            "seedlists": SeedListRepository(conn).count_unused()}


# ---------------------------------------------------------------- routes
@blueprint.get("/aliases")
@takes(*PAGED)
@require(READ)
def list_aliases() -> Any:
    """Every alias (domain, alias_of, confirmed, expires, expired), by the domain it is an alias of."""
    size = limit()
    with database().connect() as conn:
        return alias_page(conn, query("after"), size)


@blueprint.get("/tlds")
@takes(*PAGED)
@require(READ)
def list_tlds() -> Any:
    """Domains per top-level domain ({"tld", "domains"}), by TLD; IP-address domains count apart."""
    size = limit()
    with database().connect() as conn:
        return tld_page(conn, query("after"), size)


@blueprint.get("/unused")
@require(READ)
def count_unused() -> Any:
    """How many configurations and seed lists nothing uses."""
    with database().connect() as conn:
        return unused_counts(conn)


@blueprint.get("/unused/configurations")
@takes(*PAGED)
@require(READ)
def list_unused_configurations() -> Any:
    """Configurations no harvest definition uses and that are not their domain's default, oldest first."""
    size = limit()
    with database().connect() as conn:
        return unused_configuration_page(conn, query("after"), size)


@blueprint.get("/unused/seedlists")
@takes(*PAGED)
@require(READ)
def list_unused_seedlists() -> Any:
    """Seed lists no configuration uses, oldest first."""
    size = limit()
    with database().connect() as conn:
        return unused_seedlist_page(conn, query("after"), size)
