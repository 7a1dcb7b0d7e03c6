"""The running crawl's crawl.log counted as it grows (harvester/livetally.py): only complete lines, each once,
by the domain report's rules, over every launch of the job."""

from __future__ import annotations

import dataclasses

from harvestdef.messages import DomainCount
from harvester.jobdir import JobDirectory
from harvester.livetally import LiveTally
from tests.harvester.test_finish_killed_launch import JOB

SEED = "http://www.kulturarv.dk/"


def line(status: int, url: str, size: int = 100, path: str = "L", seed: str = SEED) -> str:
    return (f"2026-11-26T10:00:00.000Z {status:>5} {size:>10} {url} {path} {SEED} text/html #001 "
            f"20261126100000000+12 sha1:ABC {seed} content-size:{size}\n")


def test_only_complete_new_lines_are_counted_and_each_once(tmp_path):
    job = dataclasses.replace(JOB, domain_configurations={"kulturarv.dk": "defaultconfig", "bibliotek.no": "x"})
    jobdir = JobDirectory.create(tmp_path / "server", job)
    log_dir = jobdir.path / "20261126100000" / "logs"
    log_dir.mkdir(parents=True)
    crawl_log = log_dir / "crawl.log"
    tally = LiveTally(jobdir)
    tally.update()
    assert (tally.lines, tally.changed_domains()) == (0, [])

    first = line(200, SEED, path="-") + line(1, "dns:www.kulturarv.dk", size=50, path="P")
    partial = line(404, SEED + "gone")
    crawl_log.write_text(first + partial[:30], encoding="utf-8")
    tally.update()
    assert tally.lines == 2 and dict(tally.status_counts) == {"200": 1, "1": 1}
    assert tally.changed_domains() == [DomainCount("kulturarv.dk", 2, 150)]
    assert tally.changed_domains() == []  # nothing changed since

    with crawl_log.open("a", encoding="utf-8") as handle:
        handle.write(partial[30:] + line(-6, "http://www.bibliotek.no/", size=0, path="-",
                                         seed="http://www.bibliotek.no/") + "a line of too few fields\n")
    tally.update()
    assert tally.lines == 4 and dict(tally.status_counts) == {"200": 1, "1": 1, "404": 1, "-6": 1}
    # bibliotek.no is there from its failed seed on, with nothing harvested
    assert tally.changed_domains() == [DomainCount("kulturarv.dk", 3, 250), DomainCount("bibliotek.no", 0, 0)]

    second_launch = jobdir.path / "20261126110000" / "logs"
    second_launch.mkdir(parents=True)
    (second_launch / "crawl.log").write_text(line(200, "http://www.bibliotek.no/", size=7,
                                                  seed="http://www.bibliotek.no/"), encoding="utf-8")
    tally.update()
    tally.update()
    assert tally.lines == 5
    assert tally.changed_domains() == [DomainCount("bibliotek.no", 1, 7)]
