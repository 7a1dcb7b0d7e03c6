"""A host's link as a wire in user space, for kernels without netem: it carries every Ethernet frame
between two TAP devices, the host's ``eth0`` in its namespace and its port on the switch's bridge, and
holds each frame the delay asked for, in each direction.

``harvestdef.cluster.network`` makes the two devices (``ip tuntap``) and starts this module in the switch's
namespace; it enters the host's namespace only to open the host's device (a TAP device is found by name
in the namespace of the thread that opens it). The delay is set through a Unix socket, one JSON line
``{"delay_ms": 200}`` answered by ``ok`` once the wire holds frames that long (``set_delay``), so another
process (``harvestsuite cluster shape``) can slow a running link and know it is slowed.
Frames keep their order; what the kernel hands a TAP device is already checksummed and cut to the MTU, so
the frames need no care. A wire that dies takes its link down with it, as a cable pulled out.

    python -m harvestdef.cluster.wire --host-netns NS --host-device eth0 --switch-device p-harv1 \\
        --control /run/harvestsuite-cluster/TAG-harv1.wire
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import fcntl
import json
import os
import select
import socket
import struct
import sys
import time
from pathlib import Path

_TUNSETIFF = 0x400454CA
_IFF_TAP = 0x0002
_IFF_NO_PI = 0x1000
_CLONE_NEWNET = 0x40000000
_FRAME = 65536
# Frames waiting in one direction at most; beyond, a frame is dropped, as a switch's buffer overflows.
_MAX_WAITING = 50_000


def enter_namespace(path: str) -> None:
    """Move this thread into the network namespace ``path`` (/run/netns/NAME)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, _CLONE_NEWNET) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"entering network namespace {path}: {os.strerror(error)}")
    finally:
        os.close(fd)


def open_tap(name: str) -> int:
    """The file descriptor of TAP device ``name`` in this thread's namespace, non-blocking."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    os.set_blocking(fd, False)
    return fd


def set_delay(control: Path, delay_ms: float, timeout: float = 10.0) -> None:
    """Have the wire listening on ``control`` hold each frame ``delay_ms``; returns once it does.

    :raise OSError: no wire listens there, or it did not answer within ``timeout``.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        client.connect(str(control))
        client.sendall(json.dumps({"delay_ms": delay_ms}).encode() + b"\n")
        answer = client.makefile("rb").readline().strip()
    if answer != b"ok":
        raise OSError(f"the wire at {control} answered {answer!r} to a delay of {delay_ms} ms")


def _answer(listener: socket.socket) -> float | None:
    """The delay (seconds) asked for by the next client of ``listener``, acknowledged; None if unreadable."""
    client, _ = listener.accept()
    with client:
        client.settimeout(5)
        try:
            delay = max(0.0, float(json.loads(client.makefile("rb").readline())["delay_ms"]) / 1000)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            with contextlib.suppress(OSError):
                client.sendall(f"refused: {exc}\n".encode())
            return None
        with contextlib.suppress(OSError):
            client.sendall(b"ok\n")
        return delay


def carry(host: int, switch: int, listener: socket.socket) -> None:
    """Carry frames both ways until killed, each held the delay last asked for through ``listener``."""
    waiting: dict[int, collections.deque[tuple[float, bytes]]] = {host: collections.deque(),
                                                                  switch: collections.deque()}
    other = {host: switch, switch: host}
    delay = 0.0
    while True:
        now = time.monotonic()
        for out, frames in waiting.items():
            while frames and frames[0][0] <= now:
                _write(out, frames.popleft()[1])
        heads = [frames[0][0] for frames in waiting.values() if frames]
        timeout = max(0.0, min(heads) - now) if heads else None
        readable, _, _ = select.select([host, switch, listener], [], [], timeout)
        if listener in readable:
            asked = _answer(listener)
            delay = delay if asked is None else asked
        for fd in readable:
            if fd is listener:
                continue
            frames = waiting[other[fd]]
            for _ in range(256):  # a burst at a time, so the other direction is not starved
                try:
                    frame = os.read(fd, _FRAME)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:  # the device went down (the link is cut): nothing to read now
                    break
                if not delay and not frames:
                    _write(other[fd], frame)
                elif len(frames) < _MAX_WAITING:
                    frames.append((time.monotonic() + delay, frame))


def _write(fd: int, frame: bytes) -> None:
    # a device that is down or full drops the frame, as a wire with nothing at its end
    with contextlib.suppress(OSError):
        os.write(fd, frame)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host-netns", required=True, help="the host's namespace, /run/netns/NAME or NAME")
    parser.add_argument("--host-device", default="eth0")
    parser.add_argument("--switch-device", required=True, help="the host's port on the bridge, in this namespace")
    parser.add_argument("--control", type=Path, required=True, help="the Unix socket to listen on for the delay")
    arguments = parser.parse_args(argv)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)  # the switch's, where this process was started
    namespace = arguments.host_netns if "/" in arguments.host_netns else f"/run/netns/{arguments.host_netns}"
    try:
        enter_namespace(namespace)
        host = open_tap(arguments.host_device)
        if ctypes.CDLL(None, use_errno=True).setns(home, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "returning to the switch's namespace")
    finally:
        os.close(home)
    switch = open_tap(arguments.switch_device)
    arguments.control.unlink(missing_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(arguments.control))
        listener.listen(8)
        print("ready", flush=True)
        try:
            carry(host, switch, listener)
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
