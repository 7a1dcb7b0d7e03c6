"""The example files of deploy/ load and agree with each other: the settings every role needs, the systemd
units that run them, and the RabbitMQ settings they rely on. test_deployment.py starts the roles from the
same files."""

from __future__ import annotations

import configparser
import glob
import re
import tomllib
import urllib.parse
from pathlib import Path

import pytest

from harvestdef.queues import node_urls
from harvestdef.settings import Settings, load_settings
from tests.e2e.conftest import DEPLOY

UNITS = DEPLOY / "systemd"
ROLES = ("scheduler", "harvester", "webui")


def role_settings(role: str) -> Settings:
    return load_settings(DEPLOY / f"{role}.toml", environ={})


def unit(name: str) -> configparser.SectionProxy:
    # systemd allows a key twice (EnvironmentFile=); every value is kept, joined by newlines
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",),
                                       dict_type=_MultiDict)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(UNITS / name, encoding="utf-8")
    return parser["Service"]


class _MultiDict(dict):
    def __setitem__(self, key: str, value: object) -> None:
        if isinstance(value, list) and key in self:
            self[key].extend(value)
        else:
            super().__setitem__(key, value)


def seconds(value: str) -> int:
    return int(value.removesuffix("s"))


def rabbitmq_conf() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (DEPLOY / "rabbitmq.conf").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def test_every_role_shares_the_broker_the_queue_prefix_and_the_archive_store():
    settings = {role: role_settings(role) for role in ROLES}
    assert {s.queue.url for s in settings.values()} == {settings["scheduler"].queue.url}
    assert settings["scheduler"].queue.url.startswith("amqp://")
    assert len({s.queue.environmentName for s in settings.values()}) == 1
    assert len({s.archive.root for s in settings.values()}) == 1
    assert Path(settings["scheduler"].archive.root).is_absolute()


def test_only_the_scheduler_and_the_web_ui_name_the_harvest_database():
    scheduler, webui = role_settings("scheduler"), role_settings("webui")
    assert scheduler.database.url.startswith("postgresql+psycopg://")
    assert webui.database.url == scheduler.database.url
    with open(DEPLOY / "harvester.toml", "rb") as handle:
        harvester = tomllib.load(handle)
    assert "database" not in harvester.get("harvestsuite", {})
    assert "PGPASSFILE" not in (UNITS / "harvestsuite-harvester@.service").read_text(encoding="utf-8")


def test_the_intervals_agree_between_the_roles():
    scheduler, harvester, webui = (role_settings(role) for role in ROLES)
    # a controller counts as lost only after several missed heartbeats, and its job is resubmitted later still
    assert scheduler.scheduler.lostAfterHeartbeats >= 5
    lost_after = harvester.harvester.heartbeatInterval * scheduler.scheduler.lostAfterHeartbeats
    assert scheduler.scheduler.resubmitLostAfter > lost_after
    # the System page and the job page judge controllers as the scheduler does
    assert webui.scheduler.lostAfterHeartbeats == scheduler.scheduler.lostAfterHeartbeats
    assert webui.scheduler.resubmitLostAfter == scheduler.scheduler.resubmitLostAfter
    assert webui.harvester.heartbeatInterval == harvester.harvester.heartbeatInterval
    assert harvester.harvester.shutdownAction == "checkpoint"
    assert harvester.crawler.port == 0, "controllers sharing a host need the engine on any free port"
    assert harvester.harvester.channels[0] == "FOCUSED"


def test_the_qa_worker_pictures_through_the_replay_service_the_web_ui_links_to():
    scheduler, webui = role_settings("scheduler"), role_settings("webui")
    assert scheduler.replay.url == webui.replay.url != ""
    # the replay service has found a job's WARCs before the worker asks it for the job's captures
    assert scheduler.qa.thumbnailDelayMs >= webui.replay.syncIntervalMs


@pytest.mark.parametrize("name, role, command", [
    ("harvestsuite-scheduler.service", "scheduler", "scheduler run"),
    ("harvestsuite-harvester@.service", "harvester", "harvester run"),
    ("harvestsuite-webui.service", "webui", "webui run"),
    ("harvestsuite-replay.service", "webui", "replay run"),
    ("harvestsuite-qa.service", "scheduler", "qa thumbnails run"),
])
def test_each_unit_runs_its_role_with_its_settings_and_stops_it_with_sigterm(name, role, command):
    service = unit(name)
    assert f"--config /etc/harvestsuite/{role}.toml" in service["ExecStart"]
    assert command in service["ExecStart"]
    assert service["KillSignal"] == "SIGTERM" and service["KillMode"] == "mixed"
    assert service["Restart"] == "on-failure"
    assert service["NoNewPrivileges"] == "yes" and service["ProtectSystem"] == "strict"
    assert service["User"] == "harvestsuite"
    # the settings the unit sets through its environment are settings HarvestSuite knows
    environment = dict(line.split("=", 1) for line in service.get("Environment", "").split("\n") if line)
    load_settings(DEPLOY / f"{role}.toml", environ=environment)


def test_a_harvester_instance_has_its_own_server_dir_and_channels_and_time_to_checkpoint():
    service = unit("harvestsuite-harvester@.service")
    environment = dict(line.split("=", 1) for line in service["Environment"].split("\n") if line)
    assert environment["HARVESTSUITE__HARVESTER__HARVESTING__SERVERDIR"].endswith("/%i")
    assert "/etc/harvestsuite/harvester-%i.env" in service["EnvironmentFile"].split("\n")
    settings = load_settings(DEPLOY / "harvester.toml", environ={
        **{key: value.replace("%i", "snapshot1") for key, value in environment.items()},
        "HARVESTSUITE__HARVESTER__HARVESTING__CHANNEL": "SNAPSHOT"})
    assert settings.harvester.serverDir.endswith("/snapshot1") and settings.harvester.channels == ("SNAPSHOT",)
    assert seconds(service["TimeoutStopSec"]) >= 600
    assert seconds(service["TimeoutStopSec"]) > seconds(unit("harvestsuite-webui.service")["TimeoutStopSec"])


def test_rabbitmq_keeps_job_messages_and_connections_as_the_system_expects():
    conf = rabbitmq_conf()
    # a job message is acknowledged after the job directory and its deduplication index are set up
    assert int(conf["consumer_timeout"]) >= 30 * 60 * 1000
    for role in ROLES:
        assert role_settings(role).queue.heartbeat <= int(conf["heartbeat"])
    schemas = glob.glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins/rabbit-*/priv/schema/rabbit.schema")
    if schemas:
        # every key is one the installed broker knows; an unknown key stops RabbitMQ from starting
        schema = Path(schemas[0]).read_text(encoding="utf-8")
        known = [re.escape(m).replace(r"\$user", r"[^.\"]+") for m in re.findall(r'\{mapping, "([^"]+)"', schema)]
        pattern = re.compile("|".join(f"(?:{k})" for k in known))
        assert [key for key in conf if not pattern.fullmatch(key)] == []


def test_the_broker_cluster_has_three_nodes_the_roles_can_be_given_with_quorum_queues():
    lines = [line.split("=", 1) for line in (DEPLOY / "rabbitmq-cluster.conf").read_text(encoding="utf-8")
             .splitlines() if line.strip() and not line.lstrip().startswith("#")]
    conf = {key.strip(): value.strip() for key, value in lines}
    assert conf["cluster_formation.peer_discovery_backend"] == "classic_config"
    nodes = [value for key, value in conf.items() if key.startswith("cluster_formation.classic_config.nodes.")]
    assert len(nodes) == 3 and all(node.startswith("rabbit@") for node in nodes)
    assert conf["cluster_partition_handling"] == "pause_minority"
    assert not set(conf) & set(rabbitmq_conf()), "the cluster file adds to rabbitmq.conf, it does not repeat it"
    # the roles' settings as the README gives them for the cluster: one URL per node, quorum queues
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    url = re.search(r"HARVESTSUITE__HARVESTSUITE__QUEUE__URL=(amqp://\S+;\S+)", readme).group(1)
    for role in ROLES:
        settings = load_settings(DEPLOY / f"{role}.toml", environ={
            "HARVESTSUITE__HARVESTSUITE__QUEUE__URL": url, "HARVESTSUITE__HARVESTSUITE__QUEUE__TYPE": "quorum"})
        assert settings.queue.type == "quorum"
        assert [urllib.parse.urlsplit(node).hostname for node in node_urls(settings.queue.url)] == [
            node.partition("@")[2] for node in nodes]
        assert role_settings(role).queue.type == "classic"
