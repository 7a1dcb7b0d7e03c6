"""Fixtures of the crawl-engine tests: the local test web site (tests/engine/site.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine.site import TestSite


@pytest.fixture
def test_site() -> Iterator[TestSite]:
    """A fresh test site on a free loopback port: ``.port``, ``.hosts`` (name -> "127.0.0.1", punycode
    names) and ``write_hosts_file(path)``. The stall resource stalls 30 s; a crawl must time it out."""
    with TestSite() as site:
        yield site
