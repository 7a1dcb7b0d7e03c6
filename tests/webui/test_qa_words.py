"""The QA words of the pages: webui/qa.py knows every crawl.log status word the harvester writes, and says
why a configuration got nothing (the domain report's sentence, kept in harvest_findings) in Danish, keeping
URLs and figures."""

from __future__ import annotations

import pytest
from flask import Flask

from harvester.postprocess import crawllog
from webui import qa


def test_the_pages_know_every_status_word_the_harvester_writes():
    assert qa.FETCH_STATUS_WORDS == crawllog.FETCH_STATUS_WORDS


@pytest.fixture
def danish(app: Flask):
    with app.test_request_context(headers={"Accept-Language": "da"}):
        yield


@pytest.mark.usefixtures("danish")
def test_why_a_configuration_got_nothing_is_said_in_danish():
    seed = "http://www.dead.invalid/"
    dead = f"{crawllog.describe_fetch_status(-6)} for {seed}"  # harvester/postprocess/domainreport.py's words
    assert qa.nothing_harvested(dead) == f"DNS-opslag fejlede (-6) for {seed}"
    assert qa.nothing_harvested(f"{dead} (and 1 other seed failed)") == \
        f"DNS-opslag fejlede (-6) for {seed} (og 1 andet seed fejlede)"
    assert qa.nothing_harvested(f"{dead} (and 2 other seeds failed)") == \
        f"DNS-opslag fejlede (-6) for {seed} (og 2 andre seeds fejlede)"
    assert qa.nothing_harvested("no object harvested: no seed of the domain is in crawl.log") == \
        "intet objekt høstet: intet seed fra domænet er i crawl.log"
    assert qa.nothing_harvested(f"{crawllog.describe_fetch_status(404)} for {seed}") == f"HTTP 404 for {seed}"
    # words not known here are shown as they were
    assert qa.nothing_harvested("lost in the fog (-12) for x") == "lost in the fog (-12) for x"
