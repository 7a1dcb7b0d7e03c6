"""API route ``/api/v1/harvests/{name}/seeds``: the seeds of a selective or event harvest, configuration by
configuration, read through SeedListRepository.of_harvest.

An event harvest's seeds (``POST /api/v1/harvests/{name}/seeds``, the event harvest form) are stored as one
configuration and one seed list per domain, named after the harvest, its template and limits; a selective
harvest's configurations have the seed lists their domains give them. Either way, this lists what its jobs
would be seeded with, a keyset page of configurations at a time.
"""

from __future__ import annotations

from typing import Any

from harvestdef.errors import ValidationError
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.seedlists import ConfigurationSeeds, SeedListRepository
from webui.api.core import PAGED, blueprint, decode_cursor, input_named, limit, page
from webui.api.errors import ApiError
from webui.api.parameters import query, takes
from webui.api.shapes import STRING, answers, page_of, shape
from webui.auth import READ, require
from webui.context import database

CONFIGURATION_SEEDS = shape({
    "domain": STRING, "configuration": STRING,
    "seedlists": {"type": "array", "items": shape({"name": STRING, "seeds": {"type": "array", "items": STRING}})}})


def configuration_seeds_json(entry: ConfigurationSeeds) -> dict[str, Any]:
    return {"domain": entry.domain, "configuration": entry.configuration,
            "seedlists": [{"name": seedlist.name, "seeds": list(seedlist.seeds)} for seedlist in entry.seedlists]}


@blueprint.get("/harvests/<name>/seeds")
@takes(*PAGED)
@answers(page_of(CONFIGURATION_SEEDS))
@require(READ)
def list_harvest_seeds(name: str) -> Any:
    """The seeds of a selective or event harvest: its configurations by domain and name, each with its seed
    lists and their seeds. 400 naming ``name`` for a snapshot harvest, which harvests every domain's default
    configuration rather than seeds of its own."""
    size = limit()
    key = decode_cursor(query("after"))
    if key is not None and (len(key) != 2 or not all(isinstance(part, str) for part in key)):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    with database().connect() as conn:
        with input_named("name", ValidationError):
            harvest = HarvestRepository(conn).get_selective(name)
        rows = SeedListRepository(conn).of_harvest(harvest.harvest_id, (key[0], key[1]) if key else None, size + 1)
    return page(rows, size, lambda row: [row.domain, row.configuration], configuration_seeds_json)
