"""crawler-beans.cxml -> CrawlConfig: the three real templates, PropertyOverrideConfigurer paths, unknown
beans logged, malformed XML refused with its position, and the --hosts file."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from harvestdef.dedup import DedupIndexWriter
from harvester.engine.config import ConfigError, load_crawl_config
from harvester.engine.crawl import CrawlController
from harvester.engine.fetching.hostsfile import HostsFileError, load_hosts_file
from tests.engine.site import TestSite

ROOT = Path(__file__).resolve().parent.parent.parent

NAS_VALUES = {
    "MAX_TIME_SECONDS_PLACEHOLDER": "30", "FRONTIER_QUEUE_TOTAL_BUDGET_PLACEHOLDER": "-1",
    "CRAWLERTRAPS_PLACEHOLDER": "<value>.*/trap/.*</value>", "MAX_HOPS": "20", "HONOR_ROBOTS_DOT_TXT": "obey",
    "QUOTA_ENFORCER_GROUP_MAX_FETCH_SUCCES_PLACEHOLDER": "-1", "QUOTA_ENFORCER_MAX_BYTES_PLACEHOLDER": "-1",
    "EXTRACT_JAVASCRIPT": "true", "DEDUPLICATION_ENABLED_PLACEHOLDER": "true",
    "DEDUPLICATION_INDEX_LOCATION_PLACEHOLDER": "dedup.sqlite",
    # What NetarchiveSuite's H3HeritrixTemplate.setWarcArchiveformat inserts.
    "ARCHIVER_PROCESSOR_BEAN_PLACEHOLDER": (
        '<bean id="warcWriter" class="dk.netarkivet.harvester.harvesting.NasWARCProcessor">'
        '<property name="prefix" value="42-7-20260101"/><property name="metadataItems"><map>'
        '<entry key="harvestInfo.version" value="0.6"/><entry key="harvestInfo.jobId" value="42"/></map>'
        '</property></bean>'),
    "ARCHIVER_BEAN_REFERENCE_PLACEHOLDER": '<ref bean="warcWriter"/>',
}


def fill_nas_template(text: str) -> str:
    """Fill NetarchiveSuite's %{...} placeholders with plain values (unknown ones become empty)."""
    return re.sub(r"%\{(\w+)\}", lambda match: NAS_VALUES.get(match.group(1), ""), text)


def _job(tmp_path: Path, template: Path, seeds: list[str], nas: bool) -> Path:
    text = template.read_text(encoding="utf-8")
    text = fill_nas_template(text) if nas else text
    (tmp_path / "crawler-beans.cxml").write_text(text, encoding="utf-8")
    (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n", encoding="utf-8")
    with DedupIndexWriter(tmp_path / "dedup.sqlite"):
        pass
    return tmp_path / "crawler-beans.cxml"


def test_netarchivesuite_template_is_read_by_role(tmp_path, shared_dir):
    cxml = _job(tmp_path, shared_dir / "fixtures/heritrix3/netarchivesuite-default_orderxml.cxml",
                ["http://www.kulturarv.dk/"], nas=True)
    config = load_crawl_config(cxml, tmp_path)
    assert config.seeds == ("http://www.kulturarv.dk/",)
    assert config.queue_by_domain and not config.quota_counts_prerequisites
    assert config.content_size_annotation
    assert config.warc_prefix == "42-7-20260101" and ("harvestInfo.jobId", "42") in config.warcinfo_items
    assert config.dedup_index == tmp_path / "dedup.sqlite" and config.dedup_enabled
    assert config.max_time_seconds == 30 and config.robots_policy == "obey"
    kinds = [rule.kind for rule in config.scope_rules]
    assert kinds[:3] == ["RejectDecideRule", "NASSurtPrefixedDecideRule", "TooManyHopsDecideRule"]
    assert config.scope_rules[1].whole_domain
    assert any("bean fetchFtp" in warning for warning in config.warnings)


def test_overrides_with_dotted_and_indexed_paths(tmp_path, shared_dir):
    cxml = _job(tmp_path, shared_dir / "fixtures/heritrix3/netarchivesuite-default_orderxml_withdedup.cxml",
                ["http://www.kulturarv.dk/"], nas=True)
    config = load_crawl_config(cxml, tmp_path)
    rules = {rule.kind: rule for rule in config.scope_rules}
    assert rules["TooManyHopsDecideRule"].number == 25          # scope.rules[2].maxHops=25
    assert rules["PathologicalPathDecideRule"].number == 3      # scope.rules[6].maxRepetitions=3
    assert rules["TransclusionDecideRule"].number == 5          # scope.rules[3].maxTransHops=5
    assert (config.delay_factor, config.min_delay_ms, config.max_delay_ms) == (1.0, 300, 1000)
    assert config.max_retries == 3 and config.retry_delay_seconds == 300
    assert config.robots_policy == "ignore"
    assert config.user_agent == "Mozilla/5.0 (compatible; heritrix/3.3.0 +http://netarkivet.dk/webcrawler/)"
    # The credential store's map, its beans by reference: one HTTP credential, three login forms.
    assert [(c.name, c.domain, c.realm) for c in config.http_credentials] == [
        ("licitationen", "www.licitationen.dk", "Dagbladet Licitationen")]
    assert [(c.name, c.domain, c.login_uri) for c in config.form_credentials][2] == (
        "heerfordt", "heerfordt.dk", "http://heerfordt.dk/")
    assert dict(config.form_credentials[0].form_items)["autologin"] == "y"
    assert config.cookies_enabled and config.js_inline and config.js_files
    assert not any("credential" in warning or "cookieStorage" in warning or "extractorJs" in warning
                   for warning in config.warnings)


def test_seeds_file_lines_follow_the_one_seed_rule(tmp_path):
    """Comment and blank lines are no seeds (harvestdef.seeds); a comment after the URL and a bare host name
    are read as Heritrix's TextSeedModule reads them."""
    cxml = _job(tmp_path, ROOT / "templates" / "default_orderxml.cxml",
                ["# the demo's seeds", "", "  http://www.kulturarv.dk/  ", "\thttps://bibliotek.no/ a comment",
                 "www.lille.dk", "   # indented comment"], nas=True)
    assert load_crawl_config(cxml, tmp_path).seeds == (
        "http://www.kulturarv.dk/", "https://bibliotek.no/", "http://www.lille.dk")


def test_heritrix_profile_seeds_come_from_a_nested_override(tmp_path, shared_dir):
    cxml = _job(tmp_path, shared_dir / "fixtures/heritrix3/heritrix3-profile-crawler-beans.cxml", [], nas=False)
    config = load_crawl_config(cxml, tmp_path)
    assert config.seeds == ("http://example.example/example",)   # longerOverrides: seeds.textSource.value
    assert config.warc_enabled and config.warc_prefix == "IAH" and config.delay_factor == 5.0
    assert not config.queue_by_domain


@pytest.mark.parametrize("template, nas", [
    ("netarchivesuite-default_orderxml.cxml", True),
    ("netarchivesuite-default_orderxml_withdedup.cxml", True),
    ("heritrix3-profile-crawler-beans.cxml", False),
])
def test_real_templates_build_and_run(tmp_path, shared_dir, test_site: TestSite, template, nas):
    seed = test_site.url("www.kulturarv.dk", "/hop/beyond")
    cxml = _job(tmp_path, shared_dir / "fixtures/heritrix3" / template, [seed], nas=nas)
    if not nas:
        cxml.write_text(cxml.read_text().replace("http://example.example/example", seed))
    config = load_crawl_config(cxml, tmp_path)
    assert config.seeds == (seed,)
    launch = tmp_path / "20260101000000"
    controller = CrawlController(config, tmp_path, launch, test_site.hosts, logging.getLogger("test.templates"))
    controller.start()
    # Heritrix's own profile leaves pauseAtStart at its default, true: the crawl waits for unpause.
    assert config.pause_at_start is not nas
    if config.pause_at_start:
        assert not controller.join(1) and controller.status().controller_state == "PAUSED"
        controller.unpause()
    assert controller.join(30)
    assert controller.status().exit_status == "FINISHED"
    crawl_log = (launch / "logs" / "crawl.log").read_text()
    assert " 200 " in crawl_log and seed in crawl_log
    assert list((launch / "warcs").glob("*.warc.gz"))


def test_malformed_template_is_refused_with_line_and_column(tmp_path):
    (tmp_path / "crawler-beans.cxml").write_text('<?xml version="1.0"?>\n<beans>\n  <bean id="x">\n</beans>\n')
    with pytest.raises(ConfigError) as caught:
        load_crawl_config(tmp_path / "crawler-beans.cxml", tmp_path)
    assert caught.value.line == 4 and caught.value.column is not None
    assert "not well-formed" in str(caught.value)


def test_bad_values_name_the_property(tmp_path):
    (tmp_path / "crawler-beans.cxml").write_text(
        '<beans xmlns="http://www.springframework.org/schema/beans">'
        '<bean id="crawlLimiter" class="org.archive.crawler.framework.CrawlLimitEnforcer">'
        '<property name="maxTimeSeconds" value="%{MAX_TIME_SECONDS_PLACEHOLDER}"/></bean></beans>')
    with pytest.raises(ConfigError, match="maxTimeSeconds"):
        load_crawl_config(tmp_path / "crawler-beans.cxml", tmp_path)


def test_hosts_file_keys_are_punycode(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("# test names\nwww.økologi.dk 127.0.0.1\nWWW.KB.DK  127.0.0.2  # upper case\n\n")
    assert load_hosts_file(path) == {"www.xn--kologi-9xa.dk": "127.0.0.1", "www.kb.dk": "127.0.0.2"}
    path.write_text("www.kb.dk not-an-address\n")
    with pytest.raises(HostsFileError, match=":1:"):
        load_hosts_file(path)


def test_site_hosts_file_round_trips(tmp_path, test_site):
    assert load_hosts_file(test_site.write_hosts_file(tmp_path / "hosts")) == test_site.hosts
