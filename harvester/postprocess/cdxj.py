"""A sorted CDXJ index of one WARC file, as pywb reads it, made by the cdxj-indexer package.

The options are the ones pywb's own ``wb-manager`` indexes with (sorted, POST request bodies appended to
the URL key), and the ``filename`` field is the WARC's base name, so the index works for a pywb
collection that holds the WARC beside it. cdxj-indexer sorts in memory up to 32 MiB and merges sorted
temporary files beyond that. The index is written under a temporary name and renamed when complete, so
a reader never sees half an index.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from cdxj_indexer.main import CDXJIndexer

from harvestdef.files import replacing


class _CountingWriter:
    """The text file the indexer writes to, counting the lines that reach it."""

    def __init__(self, out: TextIO):
        self.out = out
        self.lines = 0

    def write(self, text: str) -> None:
        self.lines += text.count("\n")
        self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


def write_cdxj(warc_path: Path, out_path: Path) -> int:
    """Index ``warc_path`` into ``out_path`` (sorted CDXJ); returns the number of lines written."""
    warc_path, out_path = Path(warc_path), Path(out_path)
    if not warc_path.is_file():
        raise FileNotFoundError(f"WARC file {warc_path} does not exist; no CDXJ index made")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(warc_path, "rb") as warc, replacing(out_path, "w", encoding="utf-8", newline="\n") as out:
        counter = _CountingWriter(out)
        CDXJIndexer(output=counter, inputs=[warc], sort=True, post_append=True,
                    filename=warc_path.name).process_all()
    return counter.lines
