"""Deduplication between harvests (docs/architecture.md, Deduplication; docs/scheduler.md, Deduplication).

Each job's captures are stored as an entries file beside its WARCs (``entries``), in domain order with a
directory of its domains (``partitions``); a job's own index is built from the partitions of its domains
in the jobs before it (``jobindex``) by its harvest controller, and read by the crawl engine, which writes
revisit records for payloads it finds there (``index``).
"""

from harvestdef.dedup.entries import DedupEntry, entries_name, read_entries, read_entry_fields, write_entries
from harvestdef.dedup.index import DedupIndex, DedupIndexWriter

__all__ = ["DedupEntry", "DedupIndex", "DedupIndexWriter", "entries_name", "read_entries", "read_entry_fields",
           "write_entries"]
