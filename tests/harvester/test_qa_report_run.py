"""The QA report of a real run (scheduler, controller, bundled engine, RabbitMQ, the local test site; see
conftest.py): a seed that answers 404, a seed robots.txt forbids, a page whose image the scope refuses (on
a host outside the job, with a pathological path) and whose style sheet errors. Each is in the report with
its reason, and nothing more; the report is a record of the metadata WARC, served by the API and shown on
the job page."""

from __future__ import annotations

import re
import subprocess

from warcio.archiveiterator import ArchiveIterator

from harvestdef.model.status import JobStatus
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import load_settings
from harvester.postprocess.qa import QaReport
from tests.harvester.conftest import OUR_TEMPLATE, fast_politeness
from tests.harvester.test_postprocess_metadata import WARCIO
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app


def test_a_runs_qa_report_names_each_loss_with_its_reason_and_nothing_more(harvesting):
    # obeying robots.txt, as NetarchiveSuite's HONOR_ROBOTS_DOT_TXT attribute set to 1 makes the template do
    h = harvesting(fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8")).replace("%{HONOR_ROBOTS_DOT_TXT}",
                                                                                      "obey"))
    page, missing, forbidden = (h.seed("www.kulturarv.dk", "/qa/page.html"), h.seed("www.kulturarv.dk", "/missing/1"),
                                h.seed("www.kulturarv.dk", "/private/secret.html"))
    harvest_id = h.selective_harvest("qa", {"kulturarv.dk": [page, missing, forbidden]})
    h.start_scheduler()
    h.start_controller()
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.DONE, job

    (metadata,) = list(h.archive.glob(f"**/{job.job_id}-metadata-1.warc.gz"))
    with open(metadata, "rb") as stream:
        (text,) = [record.content_stream().read() for record in ArchiveIterator(stream)
                   if "/crawl/reports/qa-report?" in (record.rec_headers.get_header("WARC-Target-URI") or "")]
    assert subprocess.run([str(WARCIO), "check", str(metadata)], capture_output=True).returncode == 0
    report = QaReport.from_json(text)

    seeds = {seed.seed: seed for seed in report.seeds}
    assert set(seeds) == {page, missing, forbidden}
    assert seeds[page].captured and seeds[page].final_status == 200
    assert not seeds[missing].captured and seeds[missing].final_status == 404 and "404" in seeds[missing].reason
    assert not seeds[forbidden].captured and seeds[forbidden].status == -9998 and "robots" in seeds[forbidden].reason
    assert (report.seeds_total, report.seeds_not_captured) == (3, 2)

    missing_by_reason = {group.reason: {resource.url: resource for resource in group.resources}
                         for group in report.missing if group.resources}
    image = h.seed("www.bibliotek.no", "/img/x/x/x/x/x/5.png")
    style = h.seed("www.kulturarv.dk", "/qa/broken.css")
    assert set(missing_by_reason) == {"out_of_scope", "http_error"}, missing_by_reason
    assert list(missing_by_reason["out_of_scope"]) == [image]
    assert list(missing_by_reason["http_error"]) == [style]
    assert missing_by_reason["http_error"][style].status == 500
    assert missing_by_reason["out_of_scope"][image].pages == [page] == missing_by_reason["http_error"][style].pages
    assert (report.missing_resources, report.pages_with_missing_resources) == (2, 1)

    # the API and the job page read it from the archive store
    with h.engine.begin() as conn:
        UserRepository(conn).create("archivist", "archivist", password=PASSWORD)
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(h.archive)})
    client = create_app(settings, h.engine, {"TESTING": True}).test_client()
    assert client.post("/login", data={"name": "archivist", "password": PASSWORD,
                                       "csrf_token": csrf_of(client)}).status_code == 302
    answer = client.get(f"/api/v1/jobs/{job.job_id}/qa")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.get_json()["report"]["seeds_not_captured"] == 2
    page_text = re.sub(r"\s+", " ", client.get(f"/status/jobs/{job.job_id}").get_data(as_text=True))
    assert "Quality" in page_text and "broken.css" in page_text and "robots" in page_text
