"""Python's cyclic garbage collector as the engine's process runs it, set once at start.

A crawl allocates and frees several thousand container objects per URI (tuples, lists, dicts of headers,
links and records), nearly all freed by reference counting the moment they are done with, and almost none
of them in a cycle. With the interpreter's default threshold (a young collection every 700 net
allocations) the collector runs every few links and moves whatever is in flight at that moment (a page's
links, a fetch's buffers) into the older generations, which the full collections then walk again and
again: 3 % of the engine's CPU on bench/crawl.py. A young collection every YOUNG_THRESHOLD allocations
still finds a cycle within a fraction of a page's work; what the engine holds from start-up (modules,
classes, compiled patterns) is frozen, so no full collection walks it.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 25_000


def tune_collector() -> None:
    """Freeze what exists now (call once start-up is done) and collect young objects less often."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
