"""A whole installation spread over simulated machines: each role on a host of its own, a network between.

The hosts (harvestdef.cluster.network) are:

* ``broker``: RabbitMQ; or, with ``brokers=3``, ``broker1`` … ``broker3``: the nodes of one RabbitMQ
  cluster (joined as an operator joins them), every queue a quorum queue, every role given all nodes;
* ``db``: PostgreSQL, reached by the schedulers and the web UI over its link;
* ``sched1``, ``sched2``: a scheduler each, one leading (the PostgreSQL advisory lock), one standing by;
* ``ui``: the web UI and JSON API, on port ``UI_PORT`` of its address, reachable from the machine;
  its System page shows both schedulers' figures, read from their /metrics over the network;
* ``web``: the sites the crawls harvest (harvestdef.cluster.site), named in the crawlers' hosts file;
* ``harv1`` … ``harvN``: a harvest controller each, with its own server directory and crawl engine; with
  ``wired_harvesters`` their links are wires in user space (harvestdef.cluster.wire), which can be delayed
  on a kernel without netem.

Every scheduler, controller and the web UI serves its /metrics (docs/metrics.md) on port ``METRICS_PORT``
of its host's address (``metrics_url``), which the machine reaches over the host's link, as a Prometheus
server would.

The archive store is one directory of the machine, which every host sees, as harvesters see a shared
mount. Every role is the real ``harvestsuite`` command, started with ``ip netns exec`` and given its
settings as ``HARVESTSUITE__…`` variables and ``--set``, as a site's unit files do. Intervals are sized
for watching and testing (``SCHEDULER_SETS`` and the others below); ``sets`` overrides any of them.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from harvestdef.cluster.network import Network, NetworkError
from harvestdef.cluster.services import HostProcess, PostgreSQLServer, RabbitMQNode, listening, wait_until
from harvestdef.cluster.site import hosts_file_lines

log = logging.getLogger(__name__)

UI_PORT = 8080
METRICS_PORT = 9100  # each host's own: every role is alone on its host
SITE_PORT = 80
DATABASE = "harvestsuite"
ADMIN = "cluster-admin"
START_TIMEOUT = 120.0
_T = TypeVar("_T")

# Every role: a lost peer is found by the AMQP heartbeat within 3 × 5 s; reconnections retry each second.
COMMON_SETS: dict[str, object] = {
    "harvestsuite.queue.heartbeat": 5,
    "harvestsuite.queue.reconnectMaxDelay": 1,
    "common.mail.server": "",
    # inside its namespace, all addresses are the host's own
    "harvestsuite.metrics.bind": "0.0.0.0",
    "harvestsuite.metrics.schedulerPort": METRICS_PORT,
    "harvestsuite.metrics.harvesterPort": METRICS_PORT,
    "harvestsuite.metrics.webuiPort": METRICS_PORT,
}
# A controller is lost after 10 of its 1 s heartbeats, its job resubmitted 60 s after its last one, a lease
# of the leader's lock lasts 10 s.
SCHEDULER_SETS: dict[str, object] = {
    "harvester.scheduler.jobgenerationperiod": 1,
    "harvestsuite.scheduler.lostAfterHeartbeats": 10,
    "harvestsuite.scheduler.resubmitLostAfter": 60,
    # longer than a controller waits for its claim to be answered (30 s), which a change of leader may delay
    "harvestsuite.scheduler.claimGraceTime": 40,
    "harvestsuite.scheduler.leaderLeaseTime": 10,
    "harvestsuite.scheduler.intakeProcesses": 1,
}
HARVESTER_SETS: dict[str, object] = {
    "harvester.harvesting.channel": "FOCUSED,SNAPSHOT",
    "harvester.harvesting.minSpaceLeft": 1_000_000,
    "harvester.harvesting.sendReadyDelay": 1,
    "harvester.harvesting.heritrix.crawlLoopWaitTime": 1,
    "harvester.harvesting.heritrix.inactivityTimeout": 60,
    "harvester.harvesting.heritrix.noresponseTimeout": 60,
    "harvestsuite.harvester.heartbeatInterval": 1,
    "harvestsuite.harvester.uploadRetryDelay": 1,
}
WEBUI_SETS: dict[str, object] = {
    "harvestsuite.scheduler.lostAfterHeartbeats": 10,
}


def settings_variable(key: str) -> str:
    """The ``HARVESTSUITE__…`` variable that overrides the dotted settings ``key``."""
    return "HARVESTSUITE__" + key.replace(".", "__").upper()


class ApiError(RuntimeError):
    """The JSON API answered with another status than the one expected."""


class Cluster:
    """The installation on its hosts; ``start`` brings it up, ``close`` removes every trace of it."""

    def __init__(self, directory: Path, harvesters: int = 3, sites: int = 300, site_delay: float = 0.0,
                 sets: Mapping[str, object] | None = None, tag: str | None = None, brokers: int = 1,
                 wired_harvesters: bool = False) -> None:
        if harvesters < 1 or sites < 1:
            raise ValueError(f"a cluster needs a harvester and a site, not {harvesters} and {sites}")
        if brokers not in (1, 3, 5):
            raise ValueError(f"a broker is one node or a cluster of 3 or 5 (a majority must outlive a node), "
                             f"not {brokers}")
        self.broker_hosts = ["broker"] if brokers == 1 else [f"broker{number}" for number in range(1, brokers + 1)]
        self.wired_harvesters = wired_harvesters
        self.directory = Path(directory)
        self.harvester_hosts = [f"harv{number}" for number in range(1, harvesters + 1)]
        self.scheduler_hosts = ["sched1", "sched2"]
        self.sites = sites
        self.site_delay = site_delay
        self.overrides = dict(sets or {})
        self.tag = tag
        self.environment = "CL" + secrets.token_hex(4).upper()
        self.archive = self.directory / "archive"
        self.logs = self.directory / "logs"
        self.network: Network | None = None
        self.postgresql: PostgreSQLServer | None = None
        self.brokers: list[RabbitMQNode] = []
        self.processes: dict[str, HostProcess] = {}
        self.token = ""
        self.password = secrets.token_urlsafe(12)

    # ------------------------------------------------------------------ bringing it up
    def start(self, progress: Callable[[str], None] = lambda _: None) -> Cluster:
        """Make the network, start the servers, initialise the database, start every role; wait until the
        web UI answers and every controller has registered."""
        try:
            self._start(progress)
        except BaseException:
            self.close()
            raise
        return self

    def _start(self, progress: Callable[[str], None]) -> None:
        for directory in (self.archive, self.logs, self.directory / "harvesters"):
            directory.mkdir(parents=True, exist_ok=True)
        self.network = Network(self.tag)
        for host in (*self.broker_hosts, "db", *self.scheduler_hosts, "ui", "web", *self.harvester_hosts):
            self.network.add_host(host, wired=self.wired_harvesters and host in self.harvester_hosts)
        progress(f"network {self.network.tag}: {len(self.network.hosts)} hosts on {self.network.subnet}")
        self.postgresql = PostgreSQLServer(self.network, "db")
        cookie = secrets.token_hex(16)  # one Erlang cookie: the nodes of a cluster must share it
        self.brokers = [RabbitMQNode(self.network, host, self.directory / f"rabbitmq-{host}", cookie)
                        for host in self.broker_hosts]
        with ThreadPoolExecutor(len(self.brokers)) as starting:  # each node takes seconds to boot
            started = [starting.submit(node.start) for node in self.brokers]
            self.postgresql.start()
            self.postgresql.create_database(DATABASE)
            progress(f"PostgreSQL on db ({self.postgresql.address})")
            self.start_site()
            for future in started:
                future.result()
        first, *others = self.brokers
        for node in others:
            node.join(first)
        if others:
            nodes = sorted(node.node for node in self.brokers)
            self.wait_for("the broker cluster", lambda: first.running_nodes() == nodes, START_TIMEOUT)
        progress(f"RabbitMQ on {', '.join(f'{node.host} ({node.address})' for node in self.brokers)}")
        self.hosts_file = self.directory / "crawler-hosts"
        self.hosts_file.write_text("".join(hosts_file_lines(self.sites, self.network.address("web"))),
                                   encoding="utf-8")
        self.command("sched1", "db", "init")
        self.command("ui", "users", "add", ADMIN, "--role", "admin", stdin=self.password + "\n")
        self.token = self.command("ui", "users", "token", ADMIN).strip()
        for host in self.scheduler_hosts:
            self.start_scheduler(host)
        self.start_webui()
        for host in self.harvester_hosts:
            self.start_harvester(host)
        self.wait_for("the web UI", lambda: self.call("GET", "/openapi.json")[0] == 200, START_TIMEOUT)
        self.wait_for(f"{len(self.harvester_hosts)} registered harvest controllers",
                      lambda: len(self.live_controllers()) == len(self.harvester_hosts), START_TIMEOUT)
        progress(f"{len(self.harvester_hosts)} harvest controllers registered; web UI at {self.ui_url}")

    # ------------------------------------------------------------------ settings and commands
    def _environ(self, role: str) -> dict[str, str]:
        assert self.brokers and self.postgresql is not None
        inherited = {name: value for name, value in os.environ.items() if not name.upper().startswith("HARVESTSUITE")}
        values: dict[str, object] = {
            **COMMON_SETS,
            "common.environmentName": self.environment,
            "harvestsuite.queue.url": self.queue_url,
            "harvestsuite.queue.type": "quorum" if len(self.brokers) > 1 else "classic",
            "harvestsuite.archive.root": str(self.archive),
        }
        if role != "harvester":  # harvester hosts never get the database
            values["harvestsuite.database.url"] = self.postgresql.url(DATABASE)
        if role == "webui":
            values["harvestsuite.metrics.schedulerTargets"] = ",".join(
                self.metrics_url(host) for host in self.scheduler_hosts)
        values.update({"scheduler": SCHEDULER_SETS, "harvester": HARVESTER_SETS, "webui": WEBUI_SETS}.get(role, {}))
        values.update(self.overrides)
        return {**inherited, "PYTHONUNBUFFERED": "1",
                **{settings_variable(key): str(value) for key, value in values.items()}}

    @staticmethod
    def _harvestsuite() -> list[str]:
        return [sys.executable, "-m", "harvestdef"]

    def command(self, host: str, *args: str, stdin: str | None = None, role: str = "webui") -> str:
        """A one-off ``harvestsuite ARGS`` on ``host``; its output. NetworkError when it fails."""
        assert self.network is not None
        result = subprocess.run(self.network.command(host, [*self._harvestsuite(), *args]), input=stdin,
                                capture_output=True, text=True, env=self._environ(role), cwd=self.logs,
                                timeout=180)
        if result.returncode:
            raise NetworkError(f"harvestsuite {' '.join(args)} on {host} exited {result.returncode}:\n"
                               f"{result.stdout}\n{result.stderr}")
        return result.stdout

    def start_role(self, name: str, host: str, role: str, args: list[str],
                   extra: Mapping[str, object] | None = None) -> HostProcess:
        """Start ``harvestsuite -v ARGS`` as ``name`` on ``host`` with ``role``'s settings and ``extra``."""
        assert self.network is not None
        environ = self._environ(role)
        environ.update({settings_variable(key): str(value) for key, value in (extra or {}).items()})
        process = HostProcess(self.network, host, name, [*self._harvestsuite(), "-v", *args],
                              self.logs / f"{name}.log", environ=environ, cwd=self.logs)
        self.processes[name] = process
        return process

    def start_scheduler(self, host: str) -> HostProcess:
        return self.start_role(f"scheduler-{host}", host, "scheduler", ["scheduler", "run"])

    def start_webui(self) -> HostProcess:
        assert self.network is not None
        return self.start_role("webui", "ui", "webui", ["webui", "run", "--host", self.network.address("ui"),
                                                         "--port", str(UI_PORT)])

    def server_dir(self, host: str) -> Path:
        return self.directory / "harvesters" / host

    def start_harvester(self, host: str) -> HostProcess:
        return self.start_role(f"harvester-{host}", host, "harvester", ["harvester", "run"], {
            "harvester.harvesting.serverdir": self.server_dir(host),
            "harvestsuite.crawler.hostsFile": self.hosts_file,
            "harvester.harvesting.heritrix.adminPassword": secrets.token_hex(8)})

    @property
    def queue_url(self) -> str:
        """``harvestsuite.queue.url`` of every role: the broker's URL, or every node's with ';' between."""
        return ";".join(node.url for node in self.brokers)

    def broker_node(self, host: str) -> RabbitMQNode:
        (node,) = [node for node in self.brokers if node.host == host]
        return node

    def kill_host(self, host: str) -> None:
        """Every process on ``host`` killed at once (SIGKILL), as when the machine dies; its files stay, as
        a disk that survives; ``start_harvester`` starts its controller again, ``broker_node(host).restart``
        a broker node."""
        assert self.network is not None
        processes = [*self.processes.values(), *(node.process for node in self.brokers if node.process)]
        for process in processes:
            if process.host == host:
                process.expected_exit = True
        self.network.kill_host(host)
        for process in processes:
            if process.host == host:
                process.process.wait(timeout=30)

    def start_site(self) -> HostProcess:
        assert self.network is not None
        address = self.network.address("web")
        process = HostProcess(self.network, "web", "site",
                              [sys.executable, "-m", "harvestdef.cluster.site", "--bind", address, "--port",
                               str(SITE_PORT), "--sites", str(self.sites), "--delay", str(self.site_delay)],
                              self.logs / "site.log", cwd=self.logs)
        self.processes["site"] = process
        wait_until("the web host's sites", lambda: listening(address, SITE_PORT), 30, process.alive)
        return process

    def settings_value(self, key: str) -> object:
        """The value of setting ``key`` the cluster gives its roles (its own sets, then the overrides)."""
        values: dict[str, object] = {**COMMON_SETS, **SCHEDULER_SETS, **HARVESTER_SETS, **WEBUI_SETS}
        values.update(self.overrides)
        return values[key]

    def controller_id(self, host: str) -> str:
        """The id ``host``'s controller registered under (its server directory's controller-id file)."""
        path = self.server_dir(host) / "controller-id"
        return path.read_text(encoding="utf-8").strip() if path.exists() else ""

    # ------------------------------------------------------------------ the JSON API
    @property
    def ui_url(self) -> str:
        assert self.network is not None
        return f"http://{self.network.address('ui')}:{UI_PORT}"

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.ui_url}/api/v1{path}", data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def api(self, method: str, path: str, body: dict[str, Any] | None = None, expect: int = 200) -> Any:
        status, answer = self.call(method, path, body)
        if status != expect:
            raise ApiError(f"{method} {path}: {status} (expected {expect}): {answer}")
        return answer

    def live_controllers(self) -> list[dict[str, Any]]:
        return [h for h in self.api("GET", "/harvesters")["items"] if h["accepted"] and not h["is_lost"]]

    def metrics_url(self, host: str) -> str:
        """The /metrics address of the role on ``host``."""
        assert self.network is not None
        return f"http://{self.network.address(host)}:{METRICS_PORT}/metrics"

    def page(self, path: str) -> str:
        """A page of the web UI, as the admin sees it (its API token)."""
        request = urllib.request.Request(f"{self.ui_url}{path}", headers={
            "Authorization": f"Bearer {self.token}", "Accept": "text/html"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read().decode("utf-8")

    def site_requests(self, since: dict[str, dict[str, int]] | None = None) -> dict[str, dict[str, int]]:
        """How often the web host served each URL, by the address of the host that asked; with ``since``
        (an earlier answer), only the requests made after it, so that a test's count leaves out what the
        tests before it on the same cluster fetched from the same sites."""
        assert self.network is not None
        with urllib.request.urlopen(f"http://{self.network.address('web')}:{SITE_PORT}/_requests",
                                    timeout=10) as response:
            served: dict[str, dict[str, int]] = json.loads(response.read())
        if not since:
            return served
        later = {url: {client: n - since.get(url, {}).get(client, 0) for client, n in by.items()}
                 for url, by in served.items()}
        return {url: kept for url, by in later.items() if (kept := {c: n for c, n in by.items() if n > 0})}

    # ------------------------------------------------------------------ waiting and reading
    def wait_for(self, what: str, probe: Callable[[], _T | None], timeout: float, interval: float = 0.5) -> _T:
        """``probe()``'s first true answer, polled while no process has died; NetworkError with the logs
        after ``timeout``."""
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            died = [process for process in self.processes.values() if process.has_died()]
            if died:
                raise NetworkError(f"{died[0].name} exited with {died[0].process.returncode} while waiting for "
                                   f"{what}\n{self.log_tails()}")
            try:
                answer = probe()
            except (OSError, ApiError, ValueError) as exc:
                last_error, answer = exc, None
            if answer:
                return answer
            time.sleep(interval)
        raise NetworkError(f"no {what} within {timeout:.0f} s (last error: {last_error})\n{self.log_tails()}")

    def log_tails(self, lines: int = 60) -> str:
        return "\n".join(f"----- {name} on {process.host} ({process.log}) -----\n{process.tail(lines)}"
                         for name, process in self.processes.items())

    # ------------------------------------------------------------------ taking it down
    def close(self) -> None:
        """Stop the roles (harvesters first, so their last reports reach a scheduler), then the servers, then
        remove the network and every process left in it."""
        order = sorted(self.processes.values(),
                       key=lambda p: (not p.name.startswith("harvester"), p.name == "site", p.name))
        for process in order:
            if process.alive():
                process.stop(timeout=30)
        for server in (*self.brokers, self.postgresql):
            if server is not None:
                server.stop()
        if self.network is not None:
            self.network.close()
            self.network = None

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ADMIN", "ApiError", "Cluster", "HARVESTER_SETS", "SCHEDULER_SETS", "UI_PORT", "settings_variable"]
