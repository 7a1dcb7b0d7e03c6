"""Run inside a network namespace the test made (tests/engine/test_destinations.py): a crawl of a name the
system resolver answers from /etc/hosts, which the namespace's own file replaces, and which the harvested
site rewrites while it is crawled, from a public address to loopback. Not a test module: a program.

    python -m tests.engine.rebind_crawl HOSTS_FILE PUBLIC_ADDRESS JOB_DIR

It serves the site on PUBLIC_ADDRESS:8080 (an address on the namespace's own dummy interface) and an
"internal service" on 127.0.0.1:8080 that counts connections, crawls ``http://rebind.test:8080/`` with
no --hosts file (the system resolver decides) under the destination policy, and prints one JSON object:
every crawl.log line's status by URI, and the connections the internal service was given.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from harvester.engine.config import load_crawl_config
from harvester.engine.crawl import CrawlController
from tests.engine.conftest import write_job
from tests.engine.test_destinations import CountingServer

NAME = "rebind.test"
# The name's lookup is valid for a second; the page's politeness delay is longer, so the next URI of the
# host comes after the lookup expired and the name is resolved again.
PRECONDITIONS = """
  <bean id="preconditions" class="org.archive.crawler.prefetch.PreconditionEnforcer">
   <property name="ipValidityDurationSeconds" value="1"/>
  </bean>
"""


class RebindingSite(CountingServer):
    """The harvested site: serving its page moves its name to loopback in the namespace's hosts file."""

    def __init__(self, address: str, hosts_file: Path) -> None:
        self.hosts_file = hosts_file
        super().__init__({"/": (200, '<html><a href="/next">next</a></html>', []),
                          "/next": (200, "the second page", [])}, address=(address, 8080))

    def answered(self, target: str) -> None:
        if target == "/":
            # written in place: the namespace's /etc/hosts is a bind mount of this very file
            with open(self.hosts_file, "r+", encoding="utf-8") as handle:
                handle.truncate(0)
                handle.write(f"127.0.0.1 localhost\n127.0.0.1 {NAME}\n")


def main(hosts_file: str, public_address: str, job_dir: str) -> None:
    internal = CountingServer(address=("127.0.0.1", 8080))
    site = RebindingSite(public_address, Path(hosts_file))
    seed = f"http://{NAME}:8080/"
    cxml = write_job(Path(job_dir), [seed], replace={
        "</beans>": PRECONDITIONS + "</beans>",
        '<property name="minDelayMs" value="0"/>': '<property name="minDelayMs" value="2000"/>',
        '<property name="maxDelayMs" value="0"/>': '<property name="maxDelayMs" value="2000"/>'})
    launch_dir = Path(job_dir) / "20260101000000"
    launch_dir.mkdir(parents=True)
    controller = CrawlController(load_crawl_config(cxml, Path(job_dir)), Path(job_dir), launch_dir, {},
                                 logging.getLogger("rebind"))
    controller.start()
    finished = controller.join(60)
    lines = [line.split() for line in (launch_dir / "logs" / "crawl.log").read_text().splitlines() if line]
    print(json.dumps({"finished": finished, "statuses": [[fields[3], fields[1]] for fields in lines],
                      "annotations": {fields[3]: fields[11] for fields in lines if len(fields) > 11},
                      "internal_connections": internal.connections, "site_targets": site.targets}))
    sys.stdout.flush()


if __name__ == "__main__":
    main(*sys.argv[1:4])
