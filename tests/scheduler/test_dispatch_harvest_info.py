"""Harvest info is fixed at job generation: the DoOneCrawl carries what the job's template says in its
warcinfo map, even after the harvest is renamed, and the harvester writes exactly that into harvestInfo.xml."""

from __future__ import annotations

import json
from datetime import timedelta

from lxml import etree
from sqlalchemy import update

from harvestdef.crawltemplate import warcinfo_items
from harvestdef.db import schema as s
from harvestdef.messages import DoOneCrawl, HarvestInfo, decode, encode
from harvestdef.repositories.jobs import JobRepository, allocate_job_ids, new_job_row
from harvester.jobdir import HARVEST_INFO, JobDirectory
from scheduler.dispatch import build_do_one_crawl
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from tests.scheduler.factories import T0, make_domain, make_selective

NOW = T0 + timedelta(days=3, hours=5)


def harvest_info_fields(path) -> dict[str, str]:
    root = etree.parse(str(path / HARVEST_INFO)).getroot()
    return {child.tag: child.text or "" for child in root if isinstance(child.tag, str)}


def generated_job(engine):
    with engine.begin() as conn:
        _, config = make_domain(conn, "kb.dk")
        make_selective(conn, 3, "news", [config], audience="researchers")
        conn.execute(update(s.harvestdefinitions).where(s.harvestdefinitions.c.harvest_id == 3)
                     .values(comments="before the election"))
    (job_id,) = generate_jobs(engine, "news", GenerationOptions(), NOW).job_ids
    return job_id


def test_a_rename_after_generation_changes_nothing_the_job_says(engine, tmp_path):
    job_id = generated_job(engine)
    with engine.begin() as conn:
        conn.execute(update(s.harvestdefinitions).where(s.harvestdefinitions.c.harvest_id == 3)
                     .values(name="news renamed", comments="after the election", audience="everyone"))
        job = JobRepository(conn).get(job_id)
        message = build_do_one_crawl(conn, job, "attempt-1", deduplication_enabled=True)
    items = warcinfo_items(job.orderxmldoc)
    assert items is not None
    assert (message.harvest_name, message.harvest_comments, message.audience, message.schedule_name) == (
        "news", "before the election", "researchers", "Once_a_day")
    assert message.harvest_info == HarvestInfo(version="0.6", job_submit_date=NOW.isoformat())
    assert items["harvestInfo.jobSubmitDate"] == NOW.isoformat()
    assert items["harvestInfo.origHarvestDefinitionName"] == "news"

    written = harvest_info_fields(JobDirectory.create(tmp_path / "server", message).path)
    assert written == {
        "version": "0.6", "jobId": str(job_id), "harvestNum": "1", "origHarvestDefinitionID": "3",
        "maxBytesPerDomain": str(job.forcemaxbytes), "maxObjectsPerDomain": str(job.forcemaxcount),
        "orderXMLName": "default_orderxml", "origHarvestDefinitionName": "news",
        "origHarvestDefinitionComments": "before the election", "scheduleName": "Once_a_day",
        "harvestFilenamePrefix": f"{job_id}-3", "jobSubmitDate": NOW.isoformat(), "performer": "",
        "audience": "researchers", "channel": "FOCUSED", "snapshot": "false", "attemptId": "attempt-1",
    }
    # every value harvestInfo.xml shares with the WARCs' warcinfo is the same
    for key in ("version", "jobId", "harvestNum", "origHarvestDefinitionID", "origHarvestDefinitionName",
                "origHarvestDefinitionComments", "scheduleName", "harvestFilenamePrefix", "jobSubmitDate",
                "audience", "channel"):
        assert written[key] == items[f"harvestInfo.{key}"], key


def test_a_job_whose_template_fixed_nothing_gets_the_harvest_at_dispatch_and_a_marked_file(engine, tmp_path):
    with engine.begin() as conn:
        _, config = make_domain(conn, "kb.dk")
        make_selective(conn, 3, "news", [config], audience="researchers")
        (job_id,) = allocate_job_ids(conn, 1)
        JobRepository(conn).insert([new_job_row(
            job_id=job_id, harvest_id=3, channel="FOCUSED", snapshot=False, orderxml="default_orderxml",
            harvest_num=1, creationdate=NOW, orderxmldoc="<beans/>", seedlist="http://kb.dk/")], audit=False)
        message = build_do_one_crawl(conn, JobRepository(conn).get(job_id), "attempt-1", True)
    assert message.harvest_info is None
    assert (message.harvest_name, message.harvest_comments, message.audience) == ("news", "selective", "researchers")
    path = JobDirectory.create(tmp_path / "server", message).path
    text = (path / HARVEST_INFO).read_text(encoding="utf-8")
    assert "<!-- jobSubmitDate is when the harvester wrote this file" in text
    written = harvest_info_fields(path)
    assert written["version"] == "0.6" and written["origHarvestDefinitionName"] == "news"
    assert written["jobSubmitDate"].endswith("Z") and written["jobSubmitDate"] != NOW.isoformat()


def test_a_message_from_a_scheduler_without_harvest_info_is_still_a_job(engine, tmp_path):
    job_id = generated_job(engine)
    with engine.begin() as conn:
        message = build_do_one_crawl(conn, JobRepository(conn).get(job_id), "attempt-1", True)
    document = json.loads(encode(message))
    del document["body"]["harvest_info"]
    older = decode(json.dumps(document).encode(), DoOneCrawl)
    assert isinstance(older, DoOneCrawl) and older.harvest_info is None
    assert older.harvest_name == "news"
    path = JobDirectory.create(tmp_path / "server", older).path
    assert "<!-- jobSubmitDate is when the harvester wrote this file" in (path / HARVEST_INFO).read_text("utf-8")
    assert harvest_info_fields(path)["jobId"] == str(job_id)


def test_a_restarted_job_writes_warcs_named_and_described_as_itself(engine, tmp_path):
    """A resubmitted copy keeps the harvest's fixed info but not the job's: its WARC prefix, jobId and
    submit date are its own, in the template the crawler reads and in the message it is sent."""
    from harvestdef.model.status import JobStatus
    from harvester.engine.config import load_crawl_config

    def warc_prefix(document: str, name: str) -> str:
        path = tmp_path / name
        path.mkdir()
        (path / "crawler-beans.cxml").write_text(document, encoding="utf-8")
        (path / "seeds.txt").write_text("http://kb.dk/\n", encoding="utf-8")
        return load_crawl_config(path / "crawler-beans.cxml", path).warc_prefix

    job_id = generated_job(engine)
    later = NOW + timedelta(hours=2)
    with engine.begin() as conn:
        jobs = JobRepository(conn)
        jobs.change_status(job_id, JobStatus.NEW, JobStatus.SUBMITTED, attempt_id=None,
                           values={"attempt_id": "attempt-1"})
        copy = jobs.resubmit(job_id, now=later)
        old = jobs.get(job_id)
        message = build_do_one_crawl(conn, copy, "attempt-2", deduplication_enabled=True)
    assert copy.job_id != job_id
    assert copy.harvestname_prefix == f"{copy.job_id}-3"
    items = warcinfo_items(copy.orderxmldoc)
    assert items is not None
    assert items["harvestInfo.jobId"] == str(copy.job_id)
    assert items["harvestInfo.harvestFilenamePrefix"] == f"{copy.job_id}-3"
    assert items["harvestInfo.jobSubmitDate"] == later.isoformat()
    assert items["harvestInfo.origHarvestDefinitionName"] == "news"
    assert message.archive_file_prefix == f"{copy.job_id}-3"
    assert message.harvest_info == HarvestInfo(version="0.6", job_submit_date=later.isoformat())
    # the crawler names its WARCs from the template's writer bean
    assert warc_prefix(copy.orderxmldoc, "copy") == f"{copy.job_id}-3"
    assert warc_prefix(old.orderxmldoc, "old") == f"{job_id}-3"
    assert old.status == JobStatus.RESUBMITTED
