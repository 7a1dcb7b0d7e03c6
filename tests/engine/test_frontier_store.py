"""The frontier in bounded memory: queues beyond their head and the already-seen set live in the SQLite
store; shortest hop path first within what a queue holds; a checkpoint copy of the store restores the same
queued URIs."""

from __future__ import annotations

import shutil
from pathlib import Path

from harvester.engine.frontier.frontier import DONE, QUEUED, CrawlUri, Frontier
from harvester.engine.frontier.urlstore import UrlStore


def take_all(frontier: Frontier) -> list[CrawlUri]:
    taken = []
    while (item := frontier.next_ready(now=1e12)) is not None and not isinstance(item, float):
        queue, uri = item
        taken.append(uri)
        frontier.mark_done(uri)
        frontier.release(queue, 0.0)
    return taken


def test_the_seen_set_outlives_its_cache(tmp_path: Path) -> None:
    store = UrlStore(tmp_path / "frontier.sqlite", cache_size=100)
    for n in range(5000):
        store.note(f"http://www.kulturarv.dk/{n}", QUEUED, "L" * (n % 5))
    assert len(store._cache) <= 100
    store.flush()
    assert store.lookup("http://www.kulturarv.dk/7") == (QUEUED, "LL")
    assert store.seen_count == 5000 and len(store._cache) <= 100


def test_a_store_opened_again_finds_what_its_file_holds(tmp_path: Path) -> None:
    store = UrlStore(tmp_path / "frontier.sqlite")
    assert store.lookup("http://www.kulturarv.dk/1") is None
    store.note("http://www.kulturarv.dk/1", DONE, "L")
    store.close()
    again = UrlStore(tmp_path / "frontier.sqlite", fresh=False)
    assert not again._cache
    assert again.lookup("http://www.kulturarv.dk/1") == (DONE, "L")
    assert again.lookup("http://www.kulturarv.dk/2") is None
    again.close()


def test_queues_spill_to_disk_and_come_back_shortest_first(tmp_path: Path) -> None:
    frontier = Frontier(UrlStore(tmp_path / "frontier.sqlite"), head_size=2)
    for n in range(50):
        frontier.schedule("kulturarv.dk", CrawlUri(f"http://www.kulturarv.dk/{n}", "L" * (1 + n % 3), "", ""))
    queue = frontier.queues["kulturarv.dk"]
    assert len(queue.heap) == 2 and queue.on_disk == 48 and queue.size == 50
    # Found by a shorter path while on disk: its row takes the shorter path.
    frontier.supersede("kulturarv.dk", CrawlUri("http://www.kulturarv.dk/44", "", "", ""))
    taken = take_all(frontier)
    assert len(taken) == 50 and len({uri.url for uri in taken}) == 50
    assert next(uri for uri in taken if uri.url.endswith("/44")).hop_path == ""
    from_disk = [len(uri.hop_path) for uri in taken[2:]]
    assert from_disk == sorted(from_disk)  # each refill is shortest first
    assert frontier.state.get("http://www.kulturarv.dk/0") == DONE and frontier.is_empty()


def test_a_checkpoint_copy_of_the_store_restores_the_queues(tmp_path: Path) -> None:
    store = UrlStore(tmp_path / "frontier.sqlite")
    frontier = Frontier(store, head_size=3)
    for n in range(20):
        frontier.schedule(f"q{n % 2}", CrawlUri(f"http://h{n % 2}.dk/{n}", "L", "", ""))
    first = take_all_one(frontier)
    frontier.spill_heads()
    store.backup(tmp_path / "copy.sqlite")
    shutil.copyfile(tmp_path / "copy.sqlite", tmp_path / "restored.sqlite")
    restored = Frontier(UrlStore(tmp_path / "restored.sqlite", fresh=False), head_size=3)
    restored.restore_queues()
    assert restored.queued_count == 19
    remaining = {uri.url for uri in take_all(restored)}
    assert len(remaining) == 19 and first.url not in remaining
    assert restored.state.get(first.url) == DONE


def take_all_one(frontier: Frontier) -> CrawlUri:
    queue, uri = frontier.next_ready(now=1e12)
    frontier.mark_done(uri)
    frontier.release(queue, 0.0)
    return uri
