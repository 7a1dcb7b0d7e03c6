"""The QA words of the pages: webui/qa.py knows every crawl.log status word the harvester writes, and says
why a configuration got nothing in Danish from the parts the domain report kept in harvest_findings (status,
seed, count of the other failed seeds), keeping URLs and figures, and each fixed finding by its words."""

from __future__ import annotations

import importlib

import pytest
from flask import Flask

from harvestdef import messages
from harvestdef.messages import NothingHarvested
from harvestdef.model.status import StopReason
from harvester.postprocess import crawllogreader, domainreport
from webui import qa

findings_migration = importlib.import_module("harvestdef.db.migrations.versions.0013_harvest_findings")


def test_the_pages_know_every_status_word_the_harvester_writes():
    assert qa.FETCH_STATUS_WORDS == crawllogreader.FETCH_STATUS_WORDS


@pytest.fixture
def danish(app: Flask):
    with app.test_request_context(headers={"Accept-Language": "da"}):
        yield


def _finding(*seeds: tuple[int, str]) -> NothingHarvested:
    """What the domain report finds for a domain whose seeds ended with these crawl.log statuses."""
    counts = domainreport._Counts(StopReason.DOWNLOAD_COMPLETE)
    for status, seed in seeds:
        counts.add_seed(status, seed)
    finding = counts.nothing_harvested()
    assert finding is not None
    return finding


def _said(finding: NothingHarvested) -> str:
    return qa.nothing_harvested(finding.reason, finding.fetch_status, finding.seed, finding.other_seeds_failed)


@pytest.mark.usefixtures("danish")
def test_why_a_configuration_got_nothing_is_said_in_danish_from_its_parts():
    seed, other, third = "http://www.dead.invalid/", "http://dead.invalid/", "http://old.dead.invalid/"
    assert _said(_finding((-6, seed))) == f"DNS-opslag fejlede (-6) for {seed}"
    assert _said(_finding((-6, seed), (-6, other))) == f"DNS-opslag fejlede (-6) for {seed} (og 1 andet seed fejlede)"
    assert _said(_finding((-6, seed), (-6, other), (-6, third))) == \
        f"DNS-opslag fejlede (-6) for {seed} (og 2 andre seeds fejlede)"
    assert _said(_finding((404, seed))) == f"HTTP 404 for {seed}"
    # a seed whose reason the harvester words differently is still said from its parts, not its words
    assert _said(NothingHarvested("lost in the fog (-12) for x", -12, seed, 0)) == f"hentestatus -12 for {seed}"


@pytest.mark.usefixtures("danish")
def test_every_fixed_finding_is_said_in_danish():
    assert set(qa.FIXED_FINDINGS) == set(messages.FIXED_FINDINGS)
    assert messages.RECORDED_BEFORE_REASONS == findings_migration.EARLIER_REASON
    for reason in messages.FIXED_FINDINGS:
        said = qa.nothing_harvested(reason)
        assert said.startswith("intet objekt høstet"), (reason, said)
    assert _said(_finding()) == "intet objekt høstet: intet seed fra domænet er i crawl.log"


@pytest.mark.usefixtures("danish")
def test_a_finding_without_parts_is_shown_in_the_words_it_was_stored_in():
    # a controller speaking message schema 1.6 sends no count of the other seeds
    english = "DNS lookup failed (-6) for http://x.invalid/ (and 2 other seeds failed)"
    assert qa.nothing_harvested(english, -6, "http://x.invalid/", None) == english
    assert qa.nothing_harvested(None) == ""
