"""A network of Linux network namespaces, one per simulated host, joined by links to one switch.

Each host is a namespace ``<tag>-<host>`` with loopback and ``eth0``, the end of a veth pair whose
other end is a port of the bridge in the switch namespace ``<tag>-sw``. An uplink veth joins the
bridge to the machine's own namespace, so a person (or a test) on the machine reaches every host's
address, and nothing outside the machine does: the addresses are a private /24 that no route of the
machine already covers, chosen under a lock so that networks made at once by several processes never share
one.

A link is cut by setting its switch port down (packets just stop: no reset, no ICMP, as when a cable
or a switch dies). It is made lossy by iptables (the statistic match) dropping the share given of the
packets the host receives, in its own namespace, and of those it sends, in every other host's namespace
as they arrive: a packet dropped where it is received is lost silently, as on a wire, where one dropped
on its way out would fail the send (EPERM) instead. It is slowed by tc's netem on both its
ends, each direction taking the delay given; a kernel built without netem (sch_netem) cannot delay a veth
link, and ``shape`` says so. A host added ``wired`` has two TAP devices instead of the veth pair, its
``eth0`` and its switch port, with a wire in user space between them (harvestdef.cluster.wire) that holds
each frame the delay given, on any kernel. Every namespace's /etc/netns/NAME/hosts (which ``ip netns exec`` mounts over
/etc/hosts) names every host, so processes use host names.

What a network made is written to a state file under ``STATE_DIR``, with the pid of the process that
made it: ``remove_stale`` removes the namespaces and links of a network whose maker is dead (a test
run killed by a timeout, say), and ``Network.close`` removes its own after killing every process still
running inside its namespaces.

Needs root, iproute2 (``ip``, ``tc``), iptables and util-linux's ``unshare``.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import logging
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harvestdef.cluster.wire import set_delay
from harvestdef.errors import HarvestSuiteError

log = logging.getLogger(__name__)

STATE_DIR = Path("/run/harvestsuite-cluster")
NETNS_ETC = Path("/etc/netns")
SWITCH = "sw"
# Subnets tried for a network, each a 10.x.y.0/24, from a random start: the first that no route of the
# machine covers and no other network has claimed in STATE_DIR is taken (_free_subnet).
_SUBNET_RANGE = range(64, 128)
_COMMAND_TIMEOUT = 30.0


class NetworkError(HarvestSuiteError):
    """A namespace, link or address could not be made or changed; the message names which and why."""


@dataclass(frozen=True)
class Host:
    """One simulated machine: its name in the network, its namespace and its address."""
    name: str
    namespace: str
    address: str
    port: str   # its link's port on the switch, which ``cut`` sets down


def require_root() -> str | None:
    """Why a network cannot be made here, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [tool for tool in ("ip", "tc", "iptables", "unshare") if shutil.which(tool) is None]
    if missing:
        return f"the simulated network needs {' and '.join(missing)} (iproute2, iptables)"
    return None


def _run(command: Sequence[str], what: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(list(command), capture_output=True, text=True, timeout=_COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise NetworkError(f"{what}: {' '.join(command)} did not end within {_COMMAND_TIMEOUT:.0f} s") from exc
    if check and result.returncode != 0:
        raise NetworkError(f"{what}: {' '.join(command)} exited {result.returncode}: "
                           f"{(result.stderr or result.stdout).strip()}")
    return result


def _routed_networks() -> list[ipaddress.IPv4Network]:
    routes = _run(["ip", "-4", "route", "show", "table", "all"], "reading the machine's routes").stdout
    found = []
    for line in routes.splitlines():
        first = line.split()[0] if line.split() else ""
        if first in ("local", "broadcast", "unreachable", "blackhole", "prohibit"):
            first = line.split()[1]
        if first == "default":
            continue
        with contextlib.suppress(ValueError):
            found.append(ipaddress.ip_network(first, strict=False))
    return found


def _claimed_subnets() -> list[ipaddress.IPv4Network]:
    """The subnets of the networks saved in STATE_DIR: a network being made holds its subnet there before
    its uplink is addressed, when no route shows it yet."""
    claimed = []
    for path in STATE_DIR.glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            claimed.append(ipaddress.IPv4Network(json.loads(path.read_text(encoding="utf-8"))["subnet"]))
    return claimed


@contextlib.contextmanager
def _choosing_subnet() -> Iterator[None]:
    """Held while a network chooses its subnet and saves it: networks made at once by several processes
    (pytest workers) would otherwise each see the same subnet free and take it."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / "subnets.lock", "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.x.y.0/24 that no route of the machine covers and no other network has claimed; call it while
    ``_choosing_subnet``."""
    taken = _routed_networks() + _claimed_subnets()
    choices = len(_SUBNET_RANGE) * 250
    start = secrets.randbelow(choices)
    for step in range(choices):
        second, third = divmod((start + step * 7919) % choices, 250)  # 7919 is prime to the count: all visited
        subnet = ipaddress.IPv4Network(f"10.{_SUBNET_RANGE[second]}.{third + 1}.0/24")
        if not any(subnet.overlaps(other) for other in taken):
            return subnet
    raise NetworkError("no free 10.x.y.0/24 for the network: the machine routes them all")


def pids_in(namespace: str) -> list[int]:
    """The processes running in ``namespace``."""
    result = _run(["ip", "netns", "pids", namespace], f"listing the processes of {namespace}", check=False)
    return [int(word) for word in result.stdout.split() if word.isdigit()]


def kill_all(namespaces: Iterable[str], grace: float = 10.0) -> None:
    """SIGTERM every process in ``namespaces``, then SIGKILL those still there after ``grace`` seconds."""
    namespaces = list(namespaces)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = [pid for namespace in namespaces for pid in pids_in(namespace)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 5.0)
        while pids and time.monotonic() < deadline:
            pids = [pid for namespace in namespaces for pid in pids_in(namespace)]
            if pids:
                time.sleep(0.1)
        if not pids:
            return


def _remove(state: dict) -> None:
    namespaces = state.get("namespaces", [])
    kill_all(namespaces)
    for namespace in namespaces:
        _run(["ip", "netns", "del", namespace], f"removing {namespace}", check=False)
        shutil.rmtree(NETNS_ETC / namespace, ignore_errors=True)
    if state.get("uplink"):
        _run(["ip", "link", "del", state["uplink"]], f"removing {state['uplink']}", check=False)


def _remove_wire_controls(tag: str) -> None:
    for pattern in (f"{tag}-*.wire", f"{tag}-*.wire.err"):
        for control in STATE_DIR.glob(pattern):
            control.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale() -> list[str]:
    """Remove every network whose maker has died; the tags removed."""
    removed = []
    if not STATE_DIR.is_dir():
        return removed
    for path in sorted(STATE_DIR.glob("*.json")):
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if _alive(int(state.get("pid", 0))):
            continue
        log.warning("removing network %s left by process %s, which is gone", path.stem, state.get("pid"))
        _remove(state)
        _remove_wire_controls(path.stem)
        path.unlink(missing_ok=True)
        removed.append(path.stem)
    return removed


class Network:
    """The switch, the uplink and the hosts added; ``close`` removes all of it."""

    def __init__(self, tag: str | None = None) -> None:
        why = require_root()
        if why:
            raise NetworkError(why)
        remove_stale()
        self.tag = tag or "hs" + secrets.token_hex(2)
        if len(self.tag) > 6 or not self.tag.isalnum():
            raise NetworkError(f"network tag {self.tag!r}: at most 6 letters and digits (it prefixes link names)")
        self.switch = f"{self.tag}-{SWITCH}"
        self.uplink = f"{self.tag}up"
        self.hosts: dict[str, Host] = {}
        self._state_path = STATE_DIR / f"{self.tag}.json"
        self._namespaces: list[str] = []
        self._owner = True
        self._wires: list[subprocess.Popen[str]] = []
        with _choosing_subnet():
            self.subnet = _free_subnet()
            addresses = list(self.subnet.hosts())
            self.uplink_address = str(addresses[-1])
            self._free = iter(addresses[1:-1])
            self._save()  # the claim on the subnet, seen by every network made after
        try:
            self._add_namespace(self.switch)
            self._ip(self.switch, "link", "add", "br0", "type", "bridge")
            self._ip(self.switch, "link", "set", "br0", "up")
            _run(["ip", "link", "add", self.uplink, "type", "veth", "peer", "name", "uplink", "netns", self.switch],
                 "making the uplink")
            self._ip(self.switch, "link", "set", "uplink", "master", "br0")
            self._ip(self.switch, "link", "set", "uplink", "up")
            _run(["ip", "addr", "add", f"{self.uplink_address}/{self.subnet.prefixlen}", "dev", self.uplink],
                 "addressing the uplink")
            _run(["ip", "link", "set", self.uplink, "up"], "raising the uplink")
        except BaseException:
            self.close()
            raise

    @classmethod
    def attach(cls, tag: str) -> Network:
        """The running network ``tag`` (made by another process), to cut, restore and shape its links;
        its maker removes it."""
        path = STATE_DIR / f"{tag}.json"
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise NetworkError(f"no running network {tag!r} ({path}: {exc})") from exc
        network = cls.__new__(cls)
        network.tag = tag
        network.subnet = ipaddress.IPv4Network(state["subnet"])
        network.uplink_address = state.get("uplink_address", "")
        network.switch = f"{tag}-{SWITCH}"
        network.uplink = state["uplink"]
        network.hosts = {name: Host(name, *values) for name, values in state.get("hosts", {}).items()}
        network._state_path = path
        network._namespaces = list(state["namespaces"])
        network._owner = False
        network._wires = []
        return network

    @staticmethod
    def running() -> list[str]:
        """The tags of the networks whose makers live."""
        remove_stale()
        return sorted(path.stem for path in STATE_DIR.glob("*.json")) if STATE_DIR.is_dir() else []

    # ------------------------------------------------------------------ making
    def _save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        state = {"pid": os.getpid(), "namespaces": self._namespaces, "uplink": self.uplink,
                 "subnet": str(self.subnet), "uplink_address": self.uplink_address,
                 "hosts": {name: [host.namespace, host.address, host.port] for name, host in self.hosts.items()}}
        temporary = self._state_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(state), encoding="utf-8")
        temporary.replace(self._state_path)

    def _add_namespace(self, namespace: str) -> None:
        self._namespaces.append(namespace)
        self._save()  # before it exists, so a crash between the two still removes it
        _run(["ip", "netns", "add", namespace], f"making namespace {namespace}")
        self._ip(namespace, "link", "set", "lo", "up")

    def _ip(self, namespace: str, *args: str) -> None:
        _run(["ip", "-n", namespace, *args], f"in {namespace}")

    def add_host(self, name: str, wired: bool = False) -> Host:
        """A new host ``name`` (letters, digits; at most 12), linked to the switch and addressed. Its link
        is a veth pair, or with ``wired`` two TAP devices joined by a wire in user space
        (harvestdef.cluster.wire), which can delay it on a kernel without netem."""
        if name in self.hosts or name == SWITCH or not name.isalnum() or len(name) > 12:
            raise NetworkError(f"host name {name!r}: letters and digits, at most 12, not {SWITCH!r} nor taken")
        namespace = f"{self.tag}-{name}"
        try:
            address = str(next(self._free))
        except StopIteration:
            raise NetworkError(f"no address left in {self.subnet} for host {name}") from None
        port = f"p-{name}"
        self._add_namespace(namespace)
        if wired:
            self._ip(namespace, "tuntap", "add", "dev", "eth0", "mode", "tap")
            self._ip(self.switch, "tuntap", "add", "dev", port, "mode", "tap")
            self._start_wire(name, namespace, port)
        else:
            _run(["ip", "link", "add", "eth0", "netns", namespace, "type", "veth", "peer", "name", port,
                  "netns", self.switch], f"linking host {name}")
        self._ip(self.switch, "link", "set", port, "master", "br0")
        self._ip(self.switch, "link", "set", port, "up")
        self._ip(namespace, "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", "eth0")
        self._ip(namespace, "link", "set", "eth0", "up")
        host = Host(name, namespace, address, port)
        self.hosts[name] = host
        self._save()
        self._write_hosts_files()
        return host

    def _wire_control(self, host: str) -> Path:
        return STATE_DIR / f"{self.tag}-{host}.wire"

    def is_wired(self, host: str) -> bool:
        return self._wire_control(self._host(host).name).exists()

    def _set_wire_delay(self, host: str, delay_ms: float) -> None:
        try:
            set_delay(self._wire_control(host), delay_ms)
        except OSError as exc:
            raise NetworkError(f"delaying {host}'s link: its wire does not answer ({exc})") from exc

    def _start_wire(self, name: str, namespace: str, port: str) -> None:
        """The wire of host ``name``'s link, in the switch's namespace (so closing the network kills it);
        returns once it holds both devices."""
        control = self._wire_control(name)
        errors = control.with_name(control.name + ".err")  # what a wire that dies says, kept for its reader
        with open(errors, "wb") as error_file:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.switch, sys.executable, "-m", "harvestdef.cluster.wire",
                 "--host-netns", namespace, "--switch-device", port, "--control", str(control)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=error_file, text=True)
        self._wires.append(process)
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], _COMMAND_TIMEOUT)
        line = process.stdout.readline() if ready else ""
        process.stdout.close()
        if line.strip() != "ready":
            process.kill()
            process.wait(timeout=10)
            said = errors.read_text(encoding="utf-8", errors="replace").strip()
            raise NetworkError(f"the wire of host {name}'s link did not start: {said or 'no answer'}")

    def _write_hosts_files(self) -> None:
        lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback",
                 *(f"{host.address} {host.name}" for host in self.hosts.values())]
        for host in self.hosts.values():
            etc = NETNS_ETC / host.namespace
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text("\n".join(lines) + "\n", encoding="utf-8")
            # no name server: a lookup of a name outside the network fails at once instead of waiting
            (etc / "resolv.conf").write_text("options timeout:1 attempts:1\n", encoding="utf-8")

    # ------------------------------------------------------------------ running
    def _host(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise NetworkError(f"no host {name!r} in network {self.tag} (its hosts: "
                               f"{', '.join(sorted(self.hosts))})") from None

    def command(self, host: str, argv: Sequence[str]) -> list[str]:
        """``argv`` as run on ``host``: in its network namespace, and in a UTS namespace of its own whose
        host name is the host's, so a controller names itself after the machine it runs on."""
        entry = self._host(host)
        return ["ip", "netns", "exec", entry.namespace, "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', entry.name, *argv]

    def address(self, host: str) -> str:
        return self._host(host).address

    # ------------------------------------------------------------------ faults
    def cut(self, host: str) -> None:
        """Cut ``host``'s link: its packets stop both ways until ``restore``."""
        self._ip(self.switch, "link", "set", self._host(host).port, "down")
        log.info("cut the link of %s", host)

    def restore(self, host: str) -> None:
        """Join ``host``'s link again."""
        self._ip(self.switch, "link", "set", self._host(host).port, "up")
        log.info("restored the link of %s", host)

    def is_cut(self, host: str) -> bool:
        result = _run(["ip", "-n", self.switch, "-o", "link", "show", self._host(host).port], f"reading {host}'s port")
        return "state DOWN" in result.stdout or ",UP" not in result.stdout.split(">")[0]

    def shape(self, host: str, delay_ms: float = 0.0, loss_percent: float = 0.0) -> None:
        """Lose ``loss_percent`` of the packets ``host`` sends and of those it receives, and delay each
        direction ``delay_ms`` (netem); ``unshape`` clears both."""
        if not 0 <= loss_percent <= 100 or delay_ms < 0:
            raise NetworkError(f"shaping {host}'s link: loss {loss_percent} % must be 0 to 100, delay "
                               f"{delay_ms} ms at least 0")
        entry = self._host(host)
        self.unshape(host)
        if delay_ms and self.is_wired(host):
            self._set_wire_delay(host, delay_ms)
        elif delay_ms:
            for command in (["tc", "-n", entry.namespace, "qdisc", "add", "dev", "eth0", "root"],
                            ["tc", "-n", self.switch, "qdisc", "add", "dev", entry.port, "root"]):
                result = _run([*command, "netem", "delay", f"{delay_ms:g}ms"], f"delaying {host}'s link", check=False)
                if result.returncode:
                    if "unknown" in result.stderr.lower():
                        raise NetworkError(f"delaying {host}'s link: this kernel has no netem qdisc (sch_netem), "
                                           f"which delays packets: {result.stderr.strip()}; a host added wired "
                                           f"(Network.add_host(..., wired=True)) is delayed by its wire instead")
                    raise NetworkError(f"delaying {host}'s link: {' '.join(command)} exited {result.returncode}: "
                                       f"{result.stderr.strip()}")
        if loss_percent:
            probability = f"{loss_percent / 100:.6f}"
            for other in self.hosts.values():
                match = [] if other.name == host else ["-s", entry.address]
                self._iptables(other, "-N", self._loss_chain(host))
                self._iptables(other, "-A", self._loss_chain(host), *match, "-m", "statistic", "--mode", "random",
                               "--probability", probability, "-j", "DROP")
                self._iptables(other, "-A", "INPUT", "-j", self._loss_chain(host))
        log.info("shaped the link of %s: delay %g ms, loss %g %%", host, delay_ms, loss_percent)

    @staticmethod
    def _loss_chain(host: str) -> str:
        return f"hsloss-{host}"

    def _iptables(self, on: Host, *args: str, check: bool = True) -> None:
        _run(["ip", "netns", "exec", on.namespace, "iptables", "-w", *args], f"iptables on {on.name}", check=check)

    def unshape(self, host: str) -> None:
        """Neither delay nor loss on ``host``'s link."""
        entry = self._host(host)
        if self.is_wired(host):
            self._set_wire_delay(host, 0)
        _run(["tc", "-n", entry.namespace, "qdisc", "del", "dev", "eth0", "root"], f"unshaping {host}", check=False)
        _run(["tc", "-n", self.switch, "qdisc", "del", "dev", entry.port, "root"], f"unshaping {host}", check=False)
        chain = self._loss_chain(host)
        for other in self.hosts.values():
            self._iptables(other, "-D", "INPUT", "-j", chain, check=False)
            self._iptables(other, "-F", chain, check=False)
            self._iptables(other, "-X", chain, check=False)

    def kill_host(self, host: str, grace: float = 0.0) -> None:
        """Every process on ``host`` killed (SIGKILL at once unless ``grace``), as when a machine dies."""
        if grace:
            kill_all([self._host(host).namespace], grace)
            return
        for pid in pids_in(self._host(host).namespace):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    # ------------------------------------------------------------------ removing
    def close(self) -> None:
        """Kill every process in the namespaces, remove them, their files and the uplink (the maker's
        network only: an attached one is left to its maker)."""
        if not self._owner:
            return
        _remove({"namespaces": self._namespaces, "uplink": self.uplink})
        for wire in self._wires:  # killed with the switch's namespace: reaped here
            with contextlib.suppress(subprocess.TimeoutExpired):
                wire.wait(timeout=10)
        self._wires = []
        _remove_wire_controls(self.tag)
        self._state_path.unlink(missing_ok=True)
        self.hosts.clear()
        self._namespaces = []

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Host", "Network", "NetworkError", "kill_all", "pids_in", "remove_stale", "require_root"]
