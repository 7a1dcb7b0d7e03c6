"""Processes on the cluster's hosts, and the two servers every installation needs: PostgreSQL and RabbitMQ.

Each server is the machine's own Debian package started afresh on its host, with its data in the
cluster's directory: PostgreSQL 15 (``initdb``, then ``postgres`` as the postgres user, listening on its
host's address with trust for the cluster's subnet) and RabbitMQ (its node named after its host, epmd and
the listener on its host's address, the guest user allowed over the network). Neither touches the
machine's own servers, their ports or their files.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harvestdef.cluster.network import Network, NetworkError

POSTGRESQL_BIN = Path("/usr/lib/postgresql/15/bin")
RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")
POSTGRESQL_PORT = 5432
AMQP_PORT = 5672


class HostProcess:
    """A process started on a host (``ip netns exec``), its output in ``log``."""

    def __init__(self, network: Network, host: str, name: str, argv: Sequence[str], log: Path,
                 environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
        self.host = host
        self.name = name
        self.log = log
        self.expected_exit = False
        with open(log, "ab") as out:
            self.process = subprocess.Popen(network.command(host, argv), stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, cwd=cwd,
                                            env=dict(environ) if environ is not None else None)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def has_died(self) -> bool:
        return self.process.poll() is not None and not self.expected_exit

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 60) -> str:
        kept = [line for line in self.text().splitlines() if "harvestdef.settings: setting " not in line]
        return "\n".join(kept[-lines:])

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, then SIGKILL after ``timeout``; the exit status."""
        self.expected_exit = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL: the process dies as with its machine."""
        self.expected_exit = True
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def wait_until(what: str, probe: Callable[[], bool], timeout: float,
               alive: Callable[[], bool] = lambda: True, interval: float = 0.2) -> None:
    """Poll ``probe`` until true; NetworkError naming ``what`` after ``timeout`` or when ``alive`` fails."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        if not alive():
            raise NetworkError(f"{what}: the process exited first")
        time.sleep(interval)
    raise NetworkError(f"{what}: not within {timeout:.0f} s")


def listening(address: str, port: int, timeout: float = 1.0) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=timeout):
        return True
    return False


def _chown(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


class PostgreSQLServer:
    """PostgreSQL 15 on ``host``; ``url(database)`` for SQLAlchemy.

    Its cluster is a directory of its own in the system's temporary directory, owned by the postgres user,
    which must reach it (the cluster's own directory may be private to root); ``stop`` removes it."""

    def __init__(self, network: Network, host: str) -> None:
        self.network = network
        self.host = host
        self.address = network.address(host)
        self.directory = Path(tempfile.mkdtemp(prefix=f"harvestsuite-cluster-{network.tag}-postgresql-"))
        self.process: HostProcess | None = None

    def start(self, timeout: float = 60.0) -> None:
        if not (POSTGRESQL_BIN / "postgres").is_file():
            raise NetworkError(f"PostgreSQL 15 is not installed ({POSTGRESQL_BIN / 'postgres'} is missing)")
        _chown(self.directory, "postgres")
        data = self.directory / "data"
        if not data.exists():
            result = subprocess.run(["runuser", "-u", "postgres", "--", str(POSTGRESQL_BIN / "initdb"), "-D",
                                     str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
                                    capture_output=True, text=True, timeout=120, cwd=self.directory)
            if result.returncode:
                raise NetworkError(f"initdb of {data} exited {result.returncode}: {result.stderr.strip()}")
            with open(data / "pg_hba.conf", "a", encoding="utf-8") as hba:
                hba.write(f"host all all {self.network.subnet} trust\n")
        self.process = HostProcess(
            self.network, self.host, "postgresql",
            ["runuser", "-u", "postgres", "--", str(POSTGRESQL_BIN / "postgres"), "-D", str(data),
             "-c", f"listen_addresses={self.address}", "-c", f"port={POSTGRESQL_PORT}",
             "-c", f"unix_socket_directories={self.directory}", "-c", "max_connections=200"],
            self.directory / "postgresql.log", cwd=self.directory)
        # listening is not accepting: a server still starting up refuses connections (pg_isready says when)
        wait_until(f"PostgreSQL on {self.host}", self._accepts, timeout, self.process.alive)

    def _accepts(self) -> bool:
        return listening(self.address, POSTGRESQL_PORT) and subprocess.run(
            [str(POSTGRESQL_BIN / "pg_isready"), "-q", "-h", str(self.directory), "-p", str(POSTGRESQL_PORT)],
            timeout=30).returncode == 0

    def create_database(self, name: str) -> None:
        result = subprocess.run(["runuser", "-u", "postgres", "--", str(POSTGRESQL_BIN / "createdb"), "-h",
                                 str(self.directory), "-p", str(POSTGRESQL_PORT), name],
                                capture_output=True, text=True, timeout=60, cwd=self.directory)
        if result.returncode:
            raise NetworkError(f"createdb {name} exited {result.returncode}: {result.stderr.strip()}")

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://postgres@{self.address}:{POSTGRESQL_PORT}/{database}"

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(timeout=30)
        shutil.rmtree(self.directory, ignore_errors=True)


class RabbitMQNode:
    """A RabbitMQ node on ``host``, named ``rabbit@<host>``, its files in ``directory``."""

    def __init__(self, network: Network, host: str, directory: Path, cookie: str) -> None:
        self.network = network
        self.host = host
        self.address = network.address(host)
        self.directory = directory
        self.cookie = cookie
        self.node = f"rabbit@{host}"
        self.process: HostProcess | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{self.address}:{AMQP_PORT}/%2F"

    def environ(self) -> dict[str, str]:
        home = self.directory / "home"
        return {
            "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "HOME": str(home),
            # the machine's /etc/rabbitmq/rabbitmq-env.conf ties epmd and the node to 127.0.0.1: not read here
            "RABBITMQ_CONF_ENV_FILE": str(self.directory / "rabbitmq-env.conf"),
            "RABBITMQ_NODENAME": self.node,
            "ERL_EPMD_ADDRESS": self.address,
            "RABBITMQ_MNESIA_BASE": str(self.directory / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.directory / "log"),
            "RABBITMQ_CONFIG_FILE": str(self.directory / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.directory / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(self.directory / "rabbitmq.pid"),
        }

    def start(self, timeout: float = 90.0) -> None:
        if not (RABBITMQ_BIN / "rabbitmq-server").is_file():
            raise NetworkError(f"RabbitMQ is not installed ({RABBITMQ_BIN / 'rabbitmq-server'} is missing)")
        home = self.directory / "home"
        for directory in (home, self.directory / "mnesia", self.directory / "log"):
            directory.mkdir(parents=True, exist_ok=True)
        cookie = home / ".erlang.cookie"
        if not cookie.exists():
            cookie.write_text(self.cookie, encoding="ascii")
            cookie.chmod(0o400)
        (self.directory / "rabbitmq-env.conf").write_text(f"NODENAME={self.node}\n", encoding="utf-8")
        (self.directory / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = {self.address}:{AMQP_PORT}\n"
            "loopback_users = none\n"
            # the disk-free alarm would stop publishers on a machine whose disk a benchmark filled
            "disk_free_limit.absolute = 50MB\n"
            # as deploy/rabbitmq-cluster.conf: a node cut off from the majority stops serving (no effect on
            # a single node)
            "cluster_partition_handling = pause_minority\n"
            # a node unreachable for 10 s (Erlang's default: 60 s) is down, so a partition shows in a test's
            # time
            "net_ticktime = 10\n", encoding="utf-8")
        (self.directory / "enabled_plugins").write_text("[].\n", encoding="utf-8")
        self.process = HostProcess(self.network, self.host, f"rabbitmq-{self.host}",
                                   [str(RABBITMQ_BIN / "rabbitmq-server")], self.directory / "rabbitmq.log",
                                   environ=self.environ(), cwd=self.directory)
        wait_until(f"RabbitMQ on {self.host}", lambda: listening(self.address, AMQP_PORT), timeout,
                   self.process.alive)

    def ctl(self, *args: str, timeout: float = 60.0) -> str:
        """``rabbitmqctl -n NODE ARGS`` run on the node's host; its output."""
        result = subprocess.run(self.network.command(self.host, [str(RABBITMQ_BIN / "rabbitmqctl"), "-n",
                                                                 self.node, *args]),
                                capture_output=True, text=True, timeout=timeout, env=self.environ(),
                                cwd=self.directory)
        if result.returncode:
            raise NetworkError(f"rabbitmqctl {' '.join(args)} on {self.host} exited {result.returncode}: "
                               f"{(result.stderr or result.stdout).strip()}")
        return result.stdout

    def join(self, first: RabbitMQNode, timeout: float = 90.0) -> None:
        """Join the cluster of node ``first`` (a fresh node: what it held is dropped), as an operator does
        with ``rabbitmqctl join_cluster``."""
        self.ctl("stop_app", timeout=timeout)
        self.ctl("join_cluster", first.node, timeout=timeout)
        self.ctl("start_app", timeout=timeout)

    def running_nodes(self) -> list[str]:
        """The nodes of its cluster that run, by this node's account."""
        status = json.loads(self.ctl("cluster_status", "--formatter", "json"))
        return sorted(status.get("running_nodes", []))

    def queue_leaders(self) -> dict[str, str]:
        """Queue name → the node that leads it (a quorum queue) or holds it (a classic one)."""
        leaders = {}
        for line in self.ctl("list_queues", "name", "leader", "--no-table-headers", "--silent").splitlines():
            name, _, leader = line.partition("\t")
            if leader:
                leaders[name] = leader.strip()
        return leaders

    def restart(self, timeout: float = 90.0) -> None:
        """Start the node again after it was killed or stopped, with the files it had: it rejoins its
        cluster and its durable queues and persistent messages are back."""
        self.start(timeout)

    def stop(self) -> None:
        # epmd outlives the node and serves its restart; it dies with the namespace (Network.close)
        if self.process is not None:
            self.process.stop(timeout=30)
