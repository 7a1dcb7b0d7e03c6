"""Harvest channels: the queues harvest definitions are sent to (docs/messages.md, Queues).

A channel's name matches ``^\\w+$`` and is stored upper case (it becomes part of a queue name). There is
exactly one default channel for snapshot harvests and one for selective harvests: making a channel the
default of its kind takes the mark from the previous one in the same transaction. A harvest definition
maps to a channel through harvestdefinitions.channel_id; NULL means the default channel of its kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, exists, insert, select, update

from harvestdef.db import schema as s
from harvestdef.errors import NotFoundError, ValidationError
from harvestdef.model.definitions import HarvestChannel, HarvestKind
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    translate_errors,
    update_with_edition,
)

CHANNEL_NAME = re.compile(r"^\w+$", re.ASCII)


@dataclass(frozen=True)
class ChannelMapping:
    """Where one harvest definition's jobs go: ``channel``, its own or (``is_default``) its kind's default."""

    harvest_id: int
    harvest: str
    kind: HarvestKind
    edition: int  # the harvest definition's: a change of its channel names it
    channel: str
    is_default: bool


def _to_channel(row: Any) -> HarvestChannel:
    return HarvestChannel(channel_id=row.id, name=row.name, issnapshot=row.issnapshot, isdefault=row.isdefault,
                          comments=row.comments or "")


def check_channel_name(name: str) -> str:
    """The stored form of a channel name (upper case); ValidationError unless it matches ^\\w+$."""
    stripped = name.strip()
    if not CHANNEL_NAME.match(stripped):
        raise ValidationError(phrase(N_("channel name %(name)s must be letters, digits and underscores only "
                                        "(^\\w+$)"), name=repr(name)))
    return stripped.upper()


class ChannelRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR) -> None:
        self.conn = conn
        self.actor = actor

    def get(self, name: str) -> HarvestChannel:
        row = self.conn.execute(select(s.harvestchannel).where(
            s.harvestchannel.c.name == name.strip().upper())).first()
        if row is None:
            raise NotFoundError("harvest channel", name)
        return _to_channel(row)

    def get_by_id(self, channel_id: int) -> HarvestChannel:
        row = self.conn.execute(select(s.harvestchannel).where(s.harvestchannel.c.id == channel_id)).first()
        if row is None:
            raise NotFoundError("harvest channel", channel_id)
        return _to_channel(row)

    def all_channels(self) -> list[HarvestChannel]:
        rows = self.conn.execute(select(s.harvestchannel).order_by(
            s.harvestchannel.c.issnapshot.desc(), s.harvestchannel.c.name))
        return [_to_channel(row) for row in rows]

    def default_channel(self, snapshot: bool) -> HarvestChannel:
        row = self.conn.execute(select(s.harvestchannel).where(
            s.harvestchannel.c.issnapshot.is_(snapshot), s.harvestchannel.c.isdefault.is_(True))).first()
        if row is None:
            raise NotFoundError("default harvest channel", "snapshot" if snapshot else "selective")
        return _to_channel(row)

    def create(self, name: str, snapshot: bool = False, comments: str = "", default: bool = False
               ) -> HarvestChannel:
        """A new channel; ConflictError if the name exists. ``default`` takes the mark from its kind's default."""
        stored = check_channel_name(name)
        with translate_errors("harvest channel", stored):
            channel_id = self.conn.execute(insert(s.harvestchannel).values(
                name=stored, issnapshot=snapshot, isdefault=False, comments=comments)).inserted_primary_key[0]
        record_audit(self.conn, self.actor, "harvestchannel", channel_id, "insert", None,
                     fetch_row(self.conn, s.harvestchannel, "id", channel_id))
        if default:
            return self.set_default(stored)
        return self.get_by_id(channel_id)

    def set_default(self, name: str) -> HarvestChannel:
        """Make the channel the default of its kind; the previous default of that kind loses the mark."""
        channel = self.get(name)
        previous = self.conn.execute(select(s.harvestchannel).where(
            s.harvestchannel.c.issnapshot.is_(channel.issnapshot), s.harvestchannel.c.isdefault.is_(True),
            s.harvestchannel.c.id != channel.channel_id)).all()
        for row in previous:
            self._set_isdefault(row.id, False)
        if not channel.isdefault:
            self._set_isdefault(channel.channel_id, True)
        return self.get_by_id(channel.channel_id)

    def _set_isdefault(self, channel_id: int, isdefault: bool) -> None:
        before = fetch_row(self.conn, s.harvestchannel, "id", channel_id)
        self.conn.execute(update(s.harvestchannel).where(s.harvestchannel.c.id == channel_id).values(
            isdefault=isdefault))
        record_audit(self.conn, self.actor, "harvestchannel", channel_id, "update", before,
                     fetch_row(self.conn, s.harvestchannel, "id", channel_id))

    def map_harvest(self, harvest_id: int, channel: str | None, expected_edition: int) -> HarvestChannel:
        """Send a harvest definition's jobs to ``channel`` (None: the default of its kind).

        A snapshot harvest goes to a snapshot channel and a selective one to a selective channel.
        """
        is_snapshot = self.conn.scalar(select(exists().where(s.fullharvests.c.harvest_id == harvest_id)))
        if self.conn.scalar(select(s.harvestdefinitions.c.harvest_id).where(
                s.harvestdefinitions.c.harvest_id == harvest_id)) is None:
            raise NotFoundError("harvest definition", harvest_id)
        if channel is None:
            target = self.default_channel(bool(is_snapshot))
            channel_id = None
        else:
            target = self.get(channel)
            if target.issnapshot != bool(is_snapshot):
                kind = "snapshot" if is_snapshot else "selective"
                raise ValidationError(
                    f"harvest definition {harvest_id} is a {kind} harvest; channel {target.name} is for "
                    f"{'snapshot' if target.issnapshot else 'selective'} harvests")
            channel_id = target.channel_id
        update_with_edition(self.conn, self.actor, s.harvestdefinitions, "harvest_id", harvest_id,
                            expected_edition, {"channel_id": channel_id}, "harvest definition")
        return target

    def channel_of(self, harvest_id: int) -> HarvestChannel:
        """The channel a harvest definition's jobs go to: its own, or the default of its kind."""
        channel_id = self.conn.scalar(select(s.harvestdefinitions.c.channel_id).where(
            s.harvestdefinitions.c.harvest_id == harvest_id))
        if channel_id is not None:
            return self.get_by_id(channel_id)
        is_snapshot = self.conn.scalar(select(exists().where(s.fullharvests.c.harvest_id == harvest_id)))
        return self.default_channel(bool(is_snapshot))

    def mapping(self, after: str | None = None, size: int | None = None) -> list[ChannelMapping]:
        """The channel of every harvest definition by name (all, or ``size`` after the name ``after``), in one
        query: channel_of for a page of harvests."""
        hd, ch = s.harvestdefinitions, s.harvestchannel
        is_snapshot = s.fullharvests.c.harvest_id.is_not(None)
        stmt = (select(hd.c.harvest_id, hd.c.name, hd.c.edition, is_snapshot.label("issnapshot"),
                       ch.c.name.label("channel"))
                .select_from(hd.outerjoin(s.fullharvests, s.fullharvests.c.harvest_id == hd.c.harvest_id)
                             .outerjoin(ch, ch.c.id == hd.c.channel_id))
                .order_by(hd.c.name))
        if after is not None:
            stmt = stmt.where(hd.c.name > after)
        if size is not None:
            stmt = stmt.limit(size)
        defaults: dict[bool, str] = {}
        mapped = []
        for row in self.conn.execute(stmt).all():
            snapshot = bool(row.issnapshot)
            if row.channel is None and snapshot not in defaults:
                defaults[snapshot] = self.default_channel(snapshot).name
            mapped.append(ChannelMapping(
                row.harvest_id, row.name, HarvestKind.SNAPSHOT if snapshot else HarvestKind.SELECTIVE, row.edition,
                row.channel if row.channel is not None else defaults[snapshot], row.channel is None))
        return mapped
