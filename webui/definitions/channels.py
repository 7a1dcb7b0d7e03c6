"""Pages of the definitions section: harvest channels and the harvest -> channel mapping, which decides
the queue each harvest's jobs go to; only admins change them. The API reads the same
(webui/api/channels.py).
"""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _

from harvestdef.repositories.channels import ChannelRepository
from harvestdef.repositories.harvests import HarvestRepository
from webui.auth import ADMIN, READ, require
from webui.context import actor, database
from webui.definitions import blueprint
from webui.definitions.forms import attempt, form_data, form_edition


def _channels_page() -> str:
    with database().connect() as conn:
        channels = ChannelRepository(conn)
        return render_template("definitions/channels.html", channels=channels.all_channels(),
                               mapping=channels.mapping())


@blueprint.route("/channels", methods=["GET", "POST"])
@require(READ)
def channels() -> Any:
    if request.method == "GET":
        return _channels_page()
    return _create_channel()


@require(ADMIN)
def _create_channel() -> Any:
    def create() -> Any:
        with database().begin() as conn:
            created = ChannelRepository(conn, actor()).create(
                request.form.get("name", ""), request.form.get("snapshot") == "1",
                request.form.get("comments", ""), request.form.get("default") == "1")
        flash(_("Harvest channel %(name)s created.", name=created.name))
        return redirect(url_for("definitions.channels"))
    return attempt(create, _channels_page)


@blueprint.post("/channels/mapping")
@require(ADMIN)
def channel_mapping() -> Any:
    """Send a harvest definition's jobs to a channel (empty: the default channel of its kind)."""
    def change() -> Any:
        data = form_data(("harvest", "channel", "edition"))
        with database().begin() as conn:
            target = HarvestRepository(conn).get(data.get("harvest", ""))
            channel = ChannelRepository(conn, actor()).map_harvest(target.harvest_id, data.get("channel"),
                                                                    form_edition())
        flash(_("Harvest %(name)s now goes to channel %(channel)s.", name=target.name, channel=channel.name))
        return redirect(url_for("definitions.channels"))
    return attempt(change, _channels_page)
