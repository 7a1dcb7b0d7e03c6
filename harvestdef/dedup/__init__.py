"""Deduplication between harvests: the index of earlier captures keyed by payload digest (design.md
§Deduplication). The scheduler builds it; the crawl engine reads it and writes revisit records."""

from harvestdef.dedup.index import DedupEntry, DedupIndex, DedupIndexWriter

__all__ = ["DedupEntry", "DedupIndex", "DedupIndexWriter"]
