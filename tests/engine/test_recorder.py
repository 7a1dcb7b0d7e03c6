"""The recorder's deduplication rules on their own; the records it writes are checked by the crawl tests
(test_crawl_dedup.py, test_crawl_records.py)."""

from __future__ import annotations

import pytest

from harvester.engine.warcwriting.recorder import DedupRules


@pytest.mark.parametrize(("mime", "is_blacklist", "expected"), [
    ("text/html", True, False),           # the default: ^text/.* blacklisted, so text is never a revisit
    ("image/png", True, True),
    ("text/html", False, True),
    ("image/png", False, False),
])
def test_mime_filter_black_or_whitelists(mime: str, is_blacklist: bool, expected: bool) -> None:
    rules = DedupRules(is_enabled=True, is_by_url=False, mime_filter="^text/.*", is_mime_filter_blacklist=is_blacklist)
    assert rules.is_mime_eligible(mime) is expected


def test_only_a_whole_2xx_capture_is_deduplicated() -> None:
    rules = DedupRules(is_enabled=True, is_by_url=True, mime_filter="^text/.*", is_mime_filter_blacklist=True)
    assert rules.applies_to(200, "image/png", [])
    assert not rules.applies_to(404, "image/png", [])
    assert not rules.applies_to(200, "image/png", ["2t"])
    assert not rules.applies_to(200, "image/png", ["lenTrunc"])
    assert not DedupRules(False, True, "^text/.*", True).applies_to(200, "image/png", [])
