"""The QA report's words on the job page: webui/qa_words.py knows every word the harvester writes, and says
the seeds' reasons and the missing resources' details the harvester makes in Danish, keeping URLs and figures."""

from __future__ import annotations

import pytest
from flask import Flask

from harvester.postprocess import crawllog, qa
from webui import qa_words


def test_the_pages_know_every_word_the_harvester_writes():
    assert qa_words.FETCH_STATUS_WORDS == crawllog.FETCH_STATUS_WORDS
    assert qa_words.MISSING_REASONS == qa.REASONS


@pytest.fixture
def danish(app: Flask):
    with app.test_request_context(headers={"Accept-Language": "da"}):
        yield


@pytest.mark.usefixtures("danish")
def test_seed_reasons_and_details_are_said_in_danish():
    url = "http://www.kb.dk/ny"
    said = {
        "not in crawl.log: the crawl ended before it": "ikke i crawl.log: crawlet sluttede, før det nåede dertil",
        f"redirected to {url}, which is not in crawl.log: the crawl ended before it":
            f"omdirigeret til {url}, som ikke er i crawl.log: crawlet sluttede, før det nåede dertil",
        f"{crawllog.describe_fetch_status(301)}: a redirect the crawl did not follow":
            "HTTP 301: en omdirigering, crawlet ikke fulgte",
        f"{crawllog.describe_fetch_status(-6)} after redirects, at {url}":
            f"DNS-opslag fejlede (-6) efter omdirigeringer, på {url}",
        crawllog.describe_fetch_status(-9998): "robots.txt forhindrede det (-9998)",
        crawllog.describe_fetch_status(7): "hentestatus 7",
        crawllog.describe_fetch_status(404): "HTTP 404",
    }
    assert {english: qa_words.seed_reason(english) for english in said} == said
    assert qa_words.missing_detail("not in crawl.log: not a domain of the job") == \
        "ikke i crawl.log: ikke et domæne i jobbet"
    assert qa_words.missing_detail("over quota (-5003) (Q:group-max-fetch-successes)") == \
        "over kvoten (-5003) (Q:group-max-fetch-successes)"
    assert qa_words.missing_words("http_error", "HTTP error") == "HTTP-fejl"
    # a report of another version, with words not known here, is shown as it is
    assert qa_words.missing_words("http_error", "HTTP failure") == "HTTP failure"
    assert qa_words.seed_reason("lost in the fog (-12)") == "lost in the fog (-12)"


@pytest.mark.usefixtures("danish")
def test_why_a_configuration_got_nothing_is_said_in_danish():
    seed = "http://www.dead.invalid/"
    dead = f"{crawllog.describe_fetch_status(-6)} for {seed}"  # harvester/postprocess/domainreport.py's words
    assert qa_words.nothing_harvested(dead) == f"DNS-opslag fejlede (-6) for {seed}"
    assert qa_words.nothing_harvested(f"{dead} (and 1 other seed failed)") == \
        f"DNS-opslag fejlede (-6) for {seed} (og 1 andet seed fejlede)"
    assert qa_words.nothing_harvested(f"{dead} (and 2 other seeds failed)") == \
        f"DNS-opslag fejlede (-6) for {seed} (og 2 andre seeds fejlede)"
    assert qa_words.nothing_harvested("no object harvested: no seed of the domain is in crawl.log") == \
        "intet objekt høstet: intet seed fra domænet er i crawl.log"
