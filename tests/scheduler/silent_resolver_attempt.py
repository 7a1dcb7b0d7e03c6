"""Run inside a test's network namespace whose resolv.conf names 127.0.0.1: a DNS server there that takes
every question and answers none, then one webhook attempt to a name only DNS could resolve. Prints the
attempt's error and how long it took, as JSON.

    python -m tests.scheduler.silent_resolver_attempt DEADLINE_SECONDS
"""

from __future__ import annotations

import json
import socket
import sys
import time

from harvestdef.destinations import PUBLIC_ONLY
from scheduler.webhookattempt import Attempt, AttemptLimits

NAME = "receiver.silent-dns.test"


def main() -> None:
    deadline = float(sys.argv[1])
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 53))  # questions arrive and wait here, unanswered, until the process ends
    started = time.monotonic()
    outcome = Attempt(f"http://{NAME}/hook", b"{}", {"Content-Type": "application/json"},
                      AttemptLimits(deadline), PUBLIC_ONLY).run()
    print(json.dumps({"error": outcome.error, "seconds": time.monotonic() - started}))
    silent.close()


if __name__ == "__main__":
    main()
