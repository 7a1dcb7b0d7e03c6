"""Harvest channels: names, one default per kind, mapping harvest definitions. Both databases."""

from __future__ import annotations

import pytest

from harvestdef.errors import ConflictError, NotFoundError, StaleEditionError, ValidationError
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.repositories.harvests import HarvestRepository
from tests.harvestdef.factories import make_selective_harvest, make_snapshot_harvest


def test_defaults_from_init_and_create_upper_case(engine):
    with engine.begin() as conn:
        repository = ChannelRepository(conn, "admin")
        assert repository.default_channel(snapshot=True).name == "SNAPSHOT"
        assert repository.default_channel(snapshot=False).name == "FOCUSED"
        channel = repository.create("news_daily", comments="news sites")
        assert (channel.name, channel.issnapshot, channel.isdefault) == ("NEWS_DAILY", False, False)
        assert repository.get("News_Daily") == channel
        assert [c.name for c in repository.all_channels()] == ["SNAPSHOT", "BROWSER", "FOCUSED", "NEWS_DAILY"]


@pytest.mark.parametrize("name", ["with space", "dash-ed", "", "ümlaut!"])
def test_names_must_match_word_characters(engine, name):
    with engine.begin() as conn, pytest.raises(ValidationError, match=r"\^\\w\+\$"):
        ChannelRepository(conn).create(name)


def test_duplicate_is_a_conflict(engine):
    with engine.begin() as conn, pytest.raises(ConflictError, match="FOCUSED"):
        ChannelRepository(conn).create("focused")


def test_exactly_one_default_per_kind(engine):
    with engine.begin() as conn:
        repository = ChannelRepository(conn)
        repository.create("LARGE", snapshot=True)
        repository.create("CIBLEE", default=True)
        assert repository.default_channel(snapshot=False).name == "CIBLEE"
        assert not repository.get("FOCUSED").isdefault
        repository.set_default("LARGE")
        defaults = [(c.name, c.issnapshot) for c in repository.all_channels() if c.isdefault]
    assert sorted(defaults) == [("CIBLEE", False), ("LARGE", True)]


def test_map_harvest_to_channel_of_its_kind(engine):
    with engine.begin() as conn:
        selective = make_selective_harvest(conn, "sel")
        snapshot = make_snapshot_harvest(conn, "snap")
        repository = ChannelRepository(conn)
        repository.create("NEWS")
        assert repository.channel_of(selective.harvest_id).name == "FOCUSED"
        assert repository.channel_of(snapshot.harvest_id).name == "SNAPSHOT"
        assert repository.map_harvest(selective.harvest_id, "news", selective.edition).name == "NEWS"
        assert repository.channel_of(selective.harvest_id).name == "NEWS"
        assert HarvestRepository(conn).get("sel").channel_id == repository.get("NEWS").channel_id
        with pytest.raises(ValidationError, match="snapshot harvest; channel NEWS is for selective"):
            repository.map_harvest(snapshot.harvest_id, "NEWS", snapshot.edition)
        with pytest.raises(StaleEditionError):
            repository.map_harvest(selective.harvest_id, None, selective.edition)
        repository.map_harvest(selective.harvest_id, None, selective.edition + 1)
        assert repository.channel_of(selective.harvest_id).name == "FOCUSED"
        with pytest.raises(NotFoundError):
            repository.map_harvest(999, "NEWS", 1)


def test_harvest_created_on_a_channel_of_the_wrong_kind_is_refused(engine):
    with engine.begin() as conn:
        with pytest.raises(ValidationError, match="channel SNAPSHOT is for snapshot harvests"):
            HarvestRepository(conn).create_selective("sel", "Once", channel="SNAPSHOT")
        harvest = HarvestRepository(conn).create_snapshot("snap", channel="snapshot")
        assert ChannelRepository(conn).channel_of(harvest.harvest_id).name == "SNAPSHOT"
