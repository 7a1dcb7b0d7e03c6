"""Seed thumbnails as the web UI shows them: each seed's picture as replayed, which the QA worker made after
the job (scheduler/thumbnails.py) and stored beside the job's files, with the same seed's picture of the
harvest's previous run beside it.

The pictures are PNG files in the archive store, served from the UI's own origin with their content type
and ``nosniff``: a stored image cannot run anything there. The archived page itself is never served here;
the preview frame of the job page points at the replay service's origin (webui/replaylinks.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from harvestdef.archive import ArchiveStore
from harvestdef.repositories.thumbnails import SeedThumbnail, ThumbnailRepository, key_thumbnail_name

SEED_KEY = re.compile(r"^[0-9a-f]{40}$")
# the harvest page shows the newest run's thumbnails up to this many; each job's page shows its own
MAX_RUN_THUMBNAILS = 24


def _shown(thumbnail: SeedThumbnail | None) -> dict[str, Any] | None:
    if thumbnail is None:
        return None
    return {"job_id": thumbnail.job_id, "harvest_num": thumbnail.harvest_num, "key": thumbnail.key,
            "has_image": thumbnail.name is not None, "capture_time": thumbnail.capture_time,
            "note": thumbnail.note}


def job_thumbnails(conn: Connection, job_id: int, harvest_num: int, harvest_id: int) -> dict[str, Any]:
    """The job's thumbnail pass (``state``: None while the QA worker has not finished it, MADE or SKIPPED,
    with its ``note``) and per seed its picture or note, with the previous run's picture of the seed."""
    repository = ThumbnailRepository(conn)
    found = repository.of_job(job_id)
    previous = (repository.previous_run(harvest_id, harvest_num, [seed.seed for seed in found.seeds])
                if harvest_num > 1 and found.seeds else {})
    return {"state": found.state.value if found.state else None, "note": found.note,
            "seeds": [{"seed": seed.seed, **(_shown(seed) or {}), "previous": _shown(previous.get(seed.seed))}
                      for seed in found.seeds]}


def run_thumbnails(conn: Connection, harvest_id: int) -> tuple[int | None, list[dict[str, Any]]]:
    """The newest run of the harvest with pictures and its seeds that have one (at most MAX_RUN_THUMBNAILS),
    each with the previous run's; (None, []) before the first picture."""
    repository = ThumbnailRepository(conn)
    harvest_num = repository.newest_run(harvest_id)
    if harvest_num is None:
        return None, []
    found = repository.of_run(harvest_id, harvest_num, MAX_RUN_THUMBNAILS)
    previous = repository.previous_run(harvest_id, harvest_num, [seed.seed for seed in found]) \
        if harvest_num > 1 else {}
    return harvest_num, [{"seed": seed.seed, **(_shown(seed) or {}), "previous": _shown(previous.get(seed.seed))}
                         for seed in found]


def first_seed_capture(thumbnails: dict[str, Any], seeds: list[str]) -> str | None:
    """The capture time of the job's first seed, when the QA worker found it (for the preview frame)."""
    if not seeds:
        return None
    for seed in thumbnails["seeds"]:
        if seed["seed"] == seeds[0]:
            return seed["capture_time"]
    return None


def thumbnail_path(store: ArchiveStore, harvest_id: int, job_id: int, key: str) -> Path | None:
    """The stored picture of the seed ``key`` of a job; None for a key that is not a seed key or no file."""
    if not SEED_KEY.match(key):
        return None
    path = store.job_path(harvest_id, job_id) / key_thumbnail_name(key)
    return path if path.is_file() else None
