"""Deduplication between harvests (design.md §Deduplication, reference §6.4).

Each job's captures are stored as an entries file beside its WARCs (``entries``); the index of a set of
jobs is built from those files into the archive store (``build``) by the scheduler, and read by the crawl
engine, which writes revisit records for payloads it finds there (``index``).
"""

from harvestdef.dedup.build import BuiltIndex, build_index, index_relative_path
from harvestdef.dedup.entries import DedupEntry, entries_name, read_entries, read_entry_fields, write_entries
from harvestdef.dedup.index import DedupIndex, DedupIndexWriter

__all__ = ["BuiltIndex", "DedupEntry", "DedupIndex", "DedupIndexWriter", "build_index", "entries_name",
           "index_relative_path", "read_entries", "read_entry_fields", "write_entries"]
