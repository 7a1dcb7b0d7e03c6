"""A crawl template's credential values in Debian's chromium, served by ``harvestsuite webui run``: an admin
uploads a template with a password, form items and a cookie through the templates page; an archivist's
download of it and the job page's template show them masked, an admin's show them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.model.status import JobStatus
from harvestdef.templatesecrets import MASK
from tests.harvestdef.test_template_secrets import SECRET_TEMPLATE, SECRETS
from tests.webui.browser import ServedWebui, log_in, screenshot
from tests.webui.test_jobs import seed

pytestmark = pytest.mark.timeout(300)


def new_page(browser: Any, webui: ServedWebui) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=webui.url, accept_downloads=True)
    context.set_default_timeout(15_000)
    return context.new_page()


def shown_template(page: Any) -> str:
    page.goto("/status/jobs/1")
    page.get_by_text("Show the template").click()
    shown = page.locator("details pre.crawl-log").first
    shown.wait_for(state="visible")
    return shown.inner_text()


def downloaded_template(page: Any, tmp_path: Path, who: str) -> str:
    page.goto("/definitions/templates")
    with page.expect_download() as download:
        page.locator("tr", has_text="members").get_by_role("link", name="Download").click()
    path = tmp_path / f"{who}.cxml"
    download.value.save_as(path)
    return path.read_text(encoding="utf-8")


def test_an_archivist_sees_credential_values_masked_and_an_admin_sees_them(browser, tmp_path):
    with ServedWebui(tmp_path, users=("admin", "archivist")) as webui:
        admin = new_page(browser, webui)
        log_in(admin, webui.url, "admin")
        admin.goto("/definitions/templates")
        admin.get_by_label("Name").fill("members")
        admin.get_by_label("or the XML").fill(SECRET_TEMPLATE)
        admin.get_by_role("button", name="Upload").click()
        admin.wait_for_load_state()
        assert "Template members uploaded." in admin.locator(".flash").first.inner_text()

        engine = open_engine(f"sqlite:///{tmp_path / 'harvest.db'}")
        try:
            seed(engine, [JobStatus.DONE])
            with engine.begin() as conn:
                conn.execute(update(s.jobs).where(s.jobs.c.job_id == 1).values(orderxmldoc=SECRET_TEMPLATE))
        finally:
            engine.dispose()

        archivist = new_page(browser, webui)
        log_in(archivist, webui.url, "archivist")
        for text in (downloaded_template(archivist, tmp_path, "archivist"), shown_template(archivist)):
            assert MASK in text and "www.site.dk/login" in text
            assert not [secret for secret in SECRETS if secret in text], text
        screenshot(archivist, tmp_path, "job-template-masked")

        assert downloaded_template(admin, tmp_path, "admin") == SECRET_TEMPLATE
        whole = shown_template(admin)
        assert all(secret in whole for secret in SECRETS) and MASK not in whole
