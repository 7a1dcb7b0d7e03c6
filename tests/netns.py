"""A network namespace of a test's own: ``ip netns add``, loopback up, files under /etc/netns/NAME (which
``ip netns exec`` mounts over /etc: a hosts file, a resolv.conf), and all of it removed afterwards."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

from tests.servers import in_ci


@contextlib.contextmanager
def network_namespace(name: str, etc_files: Mapping[str, str],
                      commands: Iterable[list[str]] = ()) -> Iterator[Path]:
    """Namespace ``name`` (at most 40 characters) with loopback up, ``commands`` run after (``ip -n NAME
    ...``), and ``etc_files`` (file name -> text) in its /etc/netns directory, which is yielded.

    Without root or iproute2 the test skips, saying why; with CI=true that is a failure, as for the servers
    (tests/servers.py): CI runs as root."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        message = "needs root and iproute2's ip to make a network namespace"
        if in_ci():
            pytest.fail(message + "; CI=true, so this is a failure, not a skip")
        pytest.skip(message)
    etc = Path("/etc/netns") / name
    made_parent = not etc.parent.exists()
    try:
        for command in (["ip", "netns", "add", name], ["ip", "-n", name, "link", "set", "lo", "up"], *commands):
            subprocess.run(command, check=True, capture_output=True, timeout=30)
        etc.mkdir(parents=True)
        for file_name, text in etc_files.items():
            (etc / file_name).write_text(text, encoding="utf-8")
        yield etc
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30, check=False)
        shutil.rmtree(etc, ignore_errors=True)
        if made_parent:
            with contextlib.suppress(OSError):
                etc.parent.rmdir()  # only if empty: another namespace's files stay
