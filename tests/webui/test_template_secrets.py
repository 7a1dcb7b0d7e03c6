"""A crawl template's credential values (passwords, form items, cookie values) are read by admins only, on
SQLite and PostgreSQL: every other role reads them masked in the templates API, its download and the
templates page's download, in a job's template (API and job page), and in the copy of the template in a
metadata WARC written before post-processing masked it (its record viewed, read through the API and
downloaded); such a WARC is downloaded whole by admins only. The database keeps the real values: the
crawler needs them."""

from __future__ import annotations

import gzip
import html
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path

import pytest
from sqlalchemy import Engine, update
from warcio.warcwriter import WARCWriter

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.repositories.templates import TemplateRepository
from harvestdef.templatesecrets import MASK
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from tests.harvestdef.test_template_secrets import SECRET_TEMPLATE, SECRETS
from tests.webui.conftest import database_with_users
from tests.webui.test_jobs import seed

pytestmark = pytest.mark.database("users")

NOT_ADMINS = ("curator", "operator", "archivist")
BEANS_URI = "metadata://netarkivet.dk/crawl/setup/crawler-beans.cxml?heritrixVersion=3.4.0&harvestid=1&jobid=1"
INFO = MetadataInfo(job_id=1, harvest_id=1, harvest_num=1, organization="netarkivet.dk", heritrix_version="3.4.0",
                    software_version="test", hostname="h", ip="127.0.0.1")


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    yield from database_with_users(database_url)


def assert_masked(text: str) -> None:
    assert MASK in text, text[:400]
    for secret in SECRETS:
        assert secret not in text, secret


def assert_whole(text: str) -> None:
    for secret in SECRETS:
        assert secret in text, secret


def test_the_templates_api_and_downloads_mask_credentials_for_all_but_admins(api, login, webui_engine):
    created = api("admin", "post", "/api/v1/templates", json={"name": "members", "cxml": SECRET_TEMPLATE})
    assert created.status_code == 201
    assert created.json["cxml"] == SECRET_TEMPLATE
    for role in NOT_ADMINS:
        answer = api(role, "get", "/api/v1/templates/members")
        assert answer.status_code == 200
        assert_masked(answer.json["cxml"])
        assert "www.site.dk/login" in answer.json["cxml"], "where the crawl logs in stays readable"
        assert_masked(api(role, "get", "/api/v1/templates/members?format=cxml").get_data(as_text=True))
        assert_masked(login(role).get("/definitions/templates/members/download").get_data(as_text=True))
    assert api("admin", "get", "/api/v1/templates/members").json["cxml"] == SECRET_TEMPLATE
    assert api("admin", "get", "/api/v1/templates/members?format=cxml").get_data(as_text=True) == SECRET_TEMPLATE
    assert login("admin").get("/definitions/templates/members/download").get_data(as_text=True) == SECRET_TEMPLATE
    with webui_engine.connect() as conn:
        assert TemplateRepository(conn).get("members").orderxml == SECRET_TEMPLATE, "the crawler needs them"


def test_a_jobs_template_is_masked_in_the_api_and_on_the_job_page(api, login, webui_engine):
    seed(webui_engine, [JobStatus.DONE])
    with webui_engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 1).values(orderxmldoc=SECRET_TEMPLATE))
    for role in NOT_ADMINS:
        assert_masked(api(role, "get", "/api/v1/jobs/1").json["template"]["document"])
        page = login(role).get("/status/jobs/1").get_data(as_text=True)
        assert "[masked]" in page
        for secret in SECRETS:
            assert secret not in page, secret
    assert api("admin", "get", "/api/v1/jobs/1").json["template"]["document"] == SECRET_TEMPLATE
    assert "s3cret-basic" in login("admin").get("/status/jobs/1").get_data(as_text=True)


def old_metadata_warc(path: Path) -> None:
    """A metadata WARC as post-processing wrote it before masking: the template copy with its values."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        writer.write_record(writer.create_warc_record(BEANS_URI, "resource", payload=BytesIO(
            SECRET_TEMPLATE.encode("utf-8")), warc_content_type="text/plain"))


def test_a_metadata_warcs_template_copy_is_masked_and_an_unmasked_warc_is_downloaded_by_admins_only(
        api, login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    old = tmp_path / "archive" / "1" / "1" / "1-metadata-1.warc.gz"
    old_metadata_warc(old)
    view = "/status/jobs/1/view/1-metadata-1.warc.gz?record=setup/crawler-beans.cxml"
    for role in NOT_ADMINS:
        client = login(role)
        lines = api(role, "get", "/api/v1/jobs/1/lines/1-metadata-1.warc.gz?record=setup/crawler-beans.cxml"
                                 "&lines=1000").json["lines"]
        assert_masked("\n".join(line["text"] for line in lines))
        assert_masked(client.get(view).get_data(as_text=True))
        assert_masked(client.get(view + "&download=1").get_data(as_text=True))
        whole = client.get("/status/jobs/1/files/1-metadata-1.warc.gz")
        assert whole.status_code == 403
        assert "only admins download it whole" in whole.get_data(as_text=True)
    admin = login("admin")
    assert admin.get(view + "&download=1").get_data(as_text=True) == SECRET_TEMPLATE
    assert "s3cret-basic" in admin.get(view).get_data(as_text=True)
    whole = admin.get("/status/jobs/1/files/1-metadata-1.warc.gz")
    assert whole.status_code == 200 and "s3cret-basic" in gzip.decompress(whole.get_data()).decode()

    # a metadata WARC written now holds the masked copy only: anyone who reads jobs downloads it
    beans = tmp_path / "crawler-beans.cxml"
    beans.write_text(SECRET_TEMPLATE, encoding="utf-8")
    new = tmp_path / "archive" / "1" / "2" / "2-metadata-1.warc.gz"
    write_metadata_warc(new, INFO, [beans], [], [], [])
    downloaded = login("archivist").get("/status/jobs/2/files/2-metadata-1.warc.gz")
    assert downloaded.status_code == 200
    assert_masked(gzip.decompress(downloaded.get_data()).decode())


def test_the_crawl_warcs_of_a_job_that_logged_in_are_downloaded_whole_by_admins_only(login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    with webui_engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 1).values(orderxmldoc=SECRET_TEMPLATE))
    # what the crawl recorded of its login: the form's POST body, as every crawler records what it sent
    for job_id in (1, 2):
        warc = tmp_path / "archive" / "1" / str(job_id) / f"{job_id}-1-20260101000000-00000-h.warc.gz"
        warc.parent.mkdir(parents=True, exist_ok=True)
        with warc.open("wb") as out:
            writer = WARCWriter(out, gzip=True)
            writer.write_record(writer.create_warc_record(
                "http://members.example.org/login", "request",
                payload=BytesIO(b"POST /login HTTP/1.1\r\nHost: members.example.org\r\n\r\npassword=s3cret-form")))
    for role in NOT_ADMINS:
        refused = login(role).get("/status/jobs/1/files/1-1-20260101000000-00000-h.warc.gz")
        assert refused.status_code == 403, role
        assert "only admins download the crawl's WARCs whole" in html.unescape(refused.get_data(as_text=True))
        # a job whose template holds no credential values: its WARCs are anybody's who reads jobs
        assert login(role).get("/status/jobs/2/files/2-1-20260101000000-00000-h.warc.gz").status_code == 200
    whole = login("admin").get("/status/jobs/1/files/1-1-20260101000000-00000-h.warc.gz")
    assert whole.status_code == 200 and b"s3cret-form" in gzip.decompress(whole.get_data())
