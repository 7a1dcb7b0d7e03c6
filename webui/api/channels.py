"""API routes: harvest channels and which channel each harvest definition's jobs go to, as the channels page
(webui/definitions/channels.py) shows them, through the same ChannelRepository reads. Read only: channels
and the mapping are changed by admins on that page.
"""

from __future__ import annotations

from typing import Any

from harvestdef.model.definitions import HarvestChannel
from harvestdef.repositories.channels import ChannelMapping, ChannelRepository
from webui.api.core import PAGED, blueprint, limit, name_after, page
from webui.api.parameters import takes
from webui.api.shapes import BOOLEAN, INTEGER, STRING, answers, described, list_of, page_of, shape
from webui.auth import READ, require
from webui.context import database

CHANNEL = shape({"name": STRING, "for": {"enum": ["snapshot", "selective"]},
                 "default": described(BOOLEAN, "the channel of its kind's harvests that are mapped to none"),
                 "comments": STRING})
MAPPING = shape({"harvest": STRING, "type": {"enum": ["selective", "snapshot"]}, "channel": STRING,
                 "by_default": described(BOOLEAN, "mapped to no channel: it goes to its type's default"),
                 "edition": described(INTEGER, "the harvest definition's edition")})


def channel_json(channel: HarvestChannel) -> dict[str, Any]:
    return {"name": channel.name, "for": "snapshot" if channel.issnapshot else "selective",
            "default": channel.isdefault, "comments": channel.comments}


def mapping_json(mapped: ChannelMapping) -> dict[str, Any]:
    return {"harvest": mapped.harvest, "type": mapped.kind.value, "channel": mapped.channel,
            "by_default": mapped.is_default, "edition": mapped.edition}


@blueprint.get("/channels")
@answers(list_of(CHANNEL))
@require(READ)
def list_channels() -> Any:
    """Harvest channels, snapshot ones first: the queue each is, the harvests it is for, the default of each kind.

    ``for`` is snapshot or selective (selective and event harvests); ``default`` marks the channel a harvest
    of that kind goes to unless it is mapped to another."""
    with database().connect() as conn:
        channels = ChannelRepository(conn).all_channels()
    return {"items": [channel_json(channel) for channel in channels]}


@blueprint.get("/channel-mapping")
@takes(*PAGED)
@answers(page_of(MAPPING))
@require(READ)
def list_channel_mapping() -> Any:
    """The channel each harvest definition's jobs go to, by harvest name.

    ``by_default``: the harvest is mapped to no channel of its own, so it goes to the default channel of its
    type; ``edition`` is the harvest definition's."""
    size = limit()
    with database().connect() as conn:
        rows = ChannelRepository(conn).mapping(name_after(), size + 1)
    return page(rows, size, lambda row: [row.harvest], mapping_json)
