"""pywb's working directory over the archive store: its config.yaml, collections and WARC path index.

pywb 2.9.1 cannot glob the indexes of a fixed collection (``collections:`` entries must name one existing
directory, listed without recursion), but it globs the ``index_paths`` of its automatic collections at every
query. So every collection is a directory under ``collections/`` with the same depth below it::

    collections/all/jobs                  -> <store root>          (every stored job)
    collections/harvest-<id>/jobs/<id>    -> <store root>/<id>     (the jobs of one harvest definition)

and ``index_paths: jobs/*/*/cdxj`` reaches each job's stored ``cdxj/<warc>.cdxj`` (harvestdef/archive.py)
in both. A job stored while pywb runs is therefore found by its next query. The CDXJ lines name their WARC
by base name; ``warc-paths.txt``, a sorted ``<name>\\t<path>`` file pywb reads at every lookup, resolves it
in the store. ``sync`` keeps both current: a new harvest's collection and a new job's WARCs appear within one
sync interval, without restarting pywb. Nothing in the store is written or moved.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from harvestdef.files import write_atomically

CONFIG_FILE = "config.yaml"
# the Content-Security-Policy of every replayed page (pywb's replay mode mp_)
REPLAY_CSP = "default-src 'unsafe-eval' 'unsafe-inline' 'self' data: blob: mediastream:; form-action 'self'"
COLLECTIONS_DIR = "collections"
PATH_INDEX = "warc-paths.txt"
ALL_COLLECTION = "all"
# Below each collection's directory: jobs/<harvest_id>/<job_id>/cdxj/*.cdxj
INDEX_PATHS = "jobs/*/*/cdxj"
WARC_PATTERNS = ("*/*/*.warc.gz", "*/*/*.warc")


def harvest_collection(harvest_id: int) -> str:
    """The name of the collection of one harvest definition's jobs."""
    return f"harvest-{harvest_id}"


@dataclass(frozen=True)
class SyncResult:
    """What one ``sync`` changed: collections made and whether the path index was rewritten."""

    new_collections: tuple[str, ...]
    warcs: int
    path_index_changed: bool


class ReplayLayout:
    """pywb's working directory ``work_dir`` over the archive store at ``store_root``."""

    def __init__(self, store_root: Path, work_dir: Path) -> None:
        # pywb runs with work_dir as its cwd; absolute paths keep the symlinks valid from anywhere.
        self.store_root = Path(store_root).absolute()
        self.work_dir = Path(work_dir).absolute()

    @property
    def collections_dir(self) -> Path:
        return self.work_dir / COLLECTIONS_DIR

    @property
    def path_index(self) -> Path:
        return self.work_dir / PATH_INDEX

    def write_config(self) -> Path:
        """Write config.yaml (pywb reads it once, at its start); returns its path."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        text = (
            "# Written by `harvestsuite replay run` at every start: edits here are lost.\n"
            f"collections_root: {_yaml_string(str(self.collections_dir))}\n"
            f"index_paths: {_yaml_string(INDEX_PATHS)}\n"
            # A file:// URL is taken as it is, not joined under each collection; pywb sees an existing
            # file there and reads it as a path index at every lookup.
            f"archive_paths: {_yaml_string(self.path_index.as_uri())}\n"
            "enable_auto_colls: true\n"
            "framed_replay: true\n"
            "enable_memento: true\n"
            # A replayed page loads from the replay service alone: pywb's default policy, without the
            # ws: and wss: it allows to anywhere, so a page's script cannot reach the live web or the
            # services beside the reader's browser (loopback, the intranet) while it is replayed.
            f"csp-header: {_yaml_string(REPLAY_CSP)}\n"
        )
        path = self.work_dir / CONFIG_FILE
        write_atomically(path, text.encode("utf-8"))
        return path

    def sync(self) -> SyncResult:
        """Bring the collections and the path index up to date with the store; idempotent."""
        self.collections_dir.mkdir(parents=True, exist_ok=True)
        made = []
        if _link(self.collections_dir / ALL_COLLECTION / "jobs", self.store_root):
            made.append(ALL_COLLECTION)
        for harvest_id in self._harvest_ids():
            name = harvest_collection(harvest_id)
            if _link(self.collections_dir / name / "jobs" / str(harvest_id), self.store_root / str(harvest_id)):
                made.append(name)
        lines = self._path_index_lines()
        text = "".join(lines).encode("utf-8")
        changed = not self.path_index.is_file() or self.path_index.read_bytes() != text
        if changed:
            write_atomically(self.path_index, text)
        return SyncResult(tuple(made), len(lines), changed)

    def _harvest_ids(self) -> list[int]:
        if not self.store_root.is_dir():
            return []
        return sorted(int(entry.name) for entry in os.scandir(self.store_root)
                      if entry.name.isdigit() and entry.is_dir())

    def _path_index_lines(self) -> list[str]:
        if not self.store_root.is_dir():
            return []
        lines = {f"{path.name}\t{path}\n" for pattern in WARC_PATTERNS for path in self.store_root.glob(pattern)
                 if path.parts[-3].isdigit() and path.parts[-2].isdigit()}
        # pywb finds a name by binary search over the file's bytes.
        return sorted(lines, key=lambda line: line.encode("utf-8"))


def _link(link: Path, target: Path) -> bool:
    """Make ``link`` a symlink to ``target`` unless it is one already; whether it was made."""
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return False
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(target, target_is_directory=True)
    return True


def _yaml_string(value: str) -> str:
    """A double-quoted YAML scalar; JSON's escapes are YAML's."""
    return json.dumps(value)
