"""Fixtures of the crawl-engine tests: the local test web site (tests/engine/site.py) and a crawl runner
that drives CrawlController on the small test template (tests/engine/data/small-crawler-beans.cxml)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.engine.config import load_crawl_config
from harvester.engine.crawl import CrawlController
from harvester.engine.fetching.bounds import ResponseBounds
from tests.engine.site import TestSite


@pytest.fixture
def test_site() -> Iterator[TestSite]:
    """A fresh test site on a free loopback port: ``.port``, ``.hosts`` (name -> "127.0.0.1", punycode
    names) and ``write_hosts_file(path)``. The stall resource stalls 30 s; a crawl must time it out."""
    with TestSite() as site:
        yield site


SMALL_TEMPLATE = Path(__file__).parent / "data" / "small-crawler-beans.cxml"


@dataclass
class CrawlRun:
    """A finished (or still running) crawl of the test template, with its outputs at hand."""
    controller: CrawlController
    job_dir: Path
    launch_dir: Path

    @property
    def logs(self) -> Path:
        return self.launch_dir / "logs"

    def crawl_log(self) -> list[list[str]]:
        return [line.split() for line in (self.logs / "crawl.log").read_text().splitlines() if line.strip()]

    def lines_for(self, url: str) -> list[list[str]]:
        return [fields for fields in self.crawl_log() if fields[3] == url]

    def warc_records(self) -> list:
        """(record type, target URI, headers, raw block bytes) of every record in every WARC file."""
        records = []
        for path in sorted((self.launch_dir / "warcs").glob("*.warc*")):
            with open(path, "rb") as handle:
                for record in ArchiveIterator(handle, no_record_parse=True):
                    records.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI"),
                                    record.rec_headers, record.raw_stream.read()))
        return records


def stop_controllers(controllers: list[CrawlController]) -> None:
    """Terminate the crawls a test left running, each given 30 s to close its files."""
    for controller in controllers:
        if not controller.join(0):
            controller.terminate()
            controller.join(30)


def write_job(job_dir: Path, seeds: list[str], overrides: dict[str, object] | None = None,
              replace: dict[str, str] | None = None) -> Path:
    """A job directory with the test template, extra PropertyOverrideConfigurer lines and the seeds."""
    job_dir.mkdir(parents=True, exist_ok=True)
    text = SMALL_TEMPLATE.read_text(encoding="utf-8")
    extra = "\n".join(f"{key}={value}" for key, value in (overrides or {}).items())
    text = text.replace("crawlController.maxToeThreads=4", "crawlController.maxToeThreads=4\n" + extra)
    for old, new in (replace or {}).items():
        text = text.replace(old, new)
    (job_dir / "crawler-beans.cxml").write_text(text, encoding="utf-8")
    (job_dir / "seeds.txt").write_text("\n".join(seeds) + "\n", encoding="utf-8")
    return job_dir / "crawler-beans.cxml"


@pytest.fixture
def crawl(tmp_path: Path, test_site: TestSite):
    """Run a crawl of the test site: ``crawl(seeds, overrides=..., replace=..., wait=True, bounds=...)``."""
    controllers: list[CrawlController] = []

    def run(seeds: list[str], overrides: dict[str, object] | None = None, replace: dict[str, str] | None = None,
            wait: bool = True, job_name: str = "job", checkpoint: Path | None = None,
            launch: str = "20260101000000", bounds: ResponseBounds | None = None) -> CrawlRun:
        job_dir = tmp_path / job_name
        cxml = write_job(job_dir, seeds, overrides, replace) if not (job_dir / "crawler-beans.cxml").exists() \
            else job_dir / "crawler-beans.cxml"
        launch_dir = job_dir / launch
        launch_dir.mkdir(parents=True, exist_ok=True)
        config = load_crawl_config(cxml, job_dir)
        controller = CrawlController(config, job_dir, launch_dir, test_site.hosts, logging.getLogger("test.job"),
                                     checkpoint=checkpoint, bounds=bounds)
        controllers.append(controller)
        controller.start()
        if wait:
            assert controller.join(60), "crawl did not finish within 60 s"
        return CrawlRun(controller, job_dir, launch_dir)

    yield run
    stop_controllers(controllers)
