"""The summary query's rows, which arrive in whatever order the database joins them, put into tie-break order.

Selection's summary query has no ORDER BY: sorting millions of wide rows (each with its seed lists) made
PostgreSQL spill most of them to disk before sending the first, while the client waited. Unsorted, rows
stream from the first moment and the client takes them in as they come, while the server makes the next
(``streaming``). Here they are kept column-wise in arrival order and sorted once at the end, into
the order the candidates need (domain name, configuration name, seed list id; code-point order, as
PostgreSQL's "C" collation and SQLite compare): numpy sorts a 16-byte prefix of each domain name's UTF-8
bytes, and the rare runs of rows whose prefixes are equal (a domain with several seed lists or
configurations, names that share 16 bytes) are sorted by the whole key. A configuration's rows, one per seed
list, then lie together and are folded into one, their seed lists joined by newlines.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Sequence

import numpy as np

from scheduler.jobgen.memberseeds import MemberSeeds
from scheduler.jobgen.packing import COLUMNS as CANDIDATE_COLUMNS
from scheduler.jobgen.packing import Candidates

PREFIX_BYTES = 16
_PREFIX = f"S{PREFIX_BYTES}"
_CHUNK = 100_000  # candidates' seed lists are put in order this many at a time
# The integer columns of a row: Candidates' own (groups and names numbered by the Candidates they go to),
# then the seed list's id.
COLUMNS = (*CANDIDATE_COLUMNS, "seedlist_id")


def _new_columns() -> dict[str, array]:
    return {name: array("b" if name == "best_stop" else "q") for name in COLUMNS}


class ArrivingRows:
    """Configurations with one of their seed lists each, in arrival order, until ``into`` sorts them."""

    def __init__(self) -> None:
        # each column grows in one buffer (batch after batch), which numpy then reads without a copy
        self._columns = _new_columns()
        self._prefixes: list[np.ndarray] = []
        # every domain name, UTF-8, one after the other: row i's is _names[_name_ends[i - 1]:_name_ends[i]]
        self._names = bytearray()
        self._name_ends = array("q")
        self._texts: list[str] = []
        self._traps: dict[int, tuple[str, str]] = {}  # arrival position -> (domain name, stored traps)

    def __len__(self) -> int:
        return len(self._texts)

    def add(self, columns: dict[str, np.ndarray], domain_names: Sequence[str], traps: Sequence[str | None],
            texts: Sequence[str | None]) -> None:
        """A batch of rows: the integer ``COLUMNS`` as numpy arrays, and the domain's name, its stored traps and
        the seed list's text, all of one length."""
        first = len(self._texts)
        for name, column in self._columns.items():
            column.frombytes(np.asarray(columns[name], dtype=np.dtype(column.typecode)).tobytes())
        start, joined = len(self._names), "".join(domain_names)
        if joined.isascii():
            encoded: Sequence[str | bytes] = domain_names
            self._names += joined.encode("ascii")
        else:
            encoded = [name.encode() for name in domain_names]
            self._names += b"".join(encoded)
        self._name_ends.extend(itertools.islice(itertools.accumulate(map(len, encoded), initial=start), 1, None))
        # numpy cuts each name to the prefix (UTF-8 bytes; NUL-padded, and NUL sorts before any character)
        self._prefixes.append(np.array(encoded, dtype=_PREFIX))
        self._texts.extend([text or "" for text in texts] if None in texts else texts)
        if any(traps):
            for offset, stored in enumerate(traps):
                if stored:
                    self._traps[first + offset] = (domain_names[offset], stored)

    def into(self, candidates: Candidates, seeds: MemberSeeds | None) -> None:
        """Sort the rows, fold each configuration's into one, and add them to ``candidates`` and ``seeds``."""
        if not self._texts:
            return
        order = self._order(candidates)
        config_ids = self._column("config_id")[order]
        repeated = np.flatnonzero(config_ids[1:] == config_ids[:-1]) + 1
        del config_ids
        if repeated.size:
            # a configuration's further seed lists join its first row's
            texts, previous, kept = self._texts, -2, 0
            for position in repeated.tolist():
                if position != previous + 1:
                    kept = int(order[position - 1])
                texts[kept] = f"{texts[kept]}\n{texts[int(order[position])]}"
                previous = position
            order = np.delete(order, repeated)
        first = len(candidates)

        def sorted_column(name: str) -> np.ndarray:
            values = self._column(name)[order]
            del self._columns[name]  # the arrival column goes as soon as its sorted copy is made
            return values

        candidates.extend_by_column(sorted_column)
        if seeds is not None:
            index_of = np.full(len(self._texts), -1, dtype=np.int64)
            index_of[order] = np.arange(first, first + len(order))
            traps = {int(index_of[position]): trap for position, trap in self._traps.items()
                     if index_of[position] >= 0}
            del index_of
            in_order: list[str] = []
            for start in range(0, len(order), _CHUNK):
                in_order.extend(map(self._texts.__getitem__, order[start:start + _CHUNK].tolist()))
            seeds.extend(in_order, traps)
        self._columns = _new_columns()
        self._texts, self._traps, self._names, self._name_ends = [], {}, bytearray(), array("q")

    def _column(self, name: str) -> np.ndarray:
        """The whole arrival column, as numpy reads it (no copy)."""
        column = self._columns[name]
        return np.frombuffer(column, dtype=np.dtype(column.typecode))

    def _order(self, candidates: Candidates) -> np.ndarray:
        """Arrival positions in tie-break order."""
        prefixes = np.concatenate(self._prefixes)
        self._prefixes = []
        halves = prefixes.view(">u8").reshape(-1, 2)
        order = np.lexsort((halves[:, 1], halves[:, 0]))
        sorted_halves = halves[order]
        tied = np.flatnonzero((sorted_halves[1:] == sorted_halves[:-1]).all(axis=1))
        del sorted_halves, halves, prefixes
        if tied.size:
            # runs of equal prefixes: sort each by the whole key
            names, seedlist_ids = self._column("name"), self._column("seedlist_id")
            domains, ends = self._names, self._name_ends

            def key(position: int) -> tuple[str, str, int]:
                domain = domains[ends[position - 1] if position else 0:ends[position]].decode()
                return domain, candidates.names[names[position]], int(seedlist_ids[position])

            starts = tied[np.r_[True, tied[1:] != tied[:-1] + 1]]
            run_ends = tied[np.r_[tied[1:] != tied[:-1] + 1, True]] + 2
            for start, end in zip(starts.tolist(), run_ends.tolist(), strict=True):
                order[start:end] = sorted(order[start:end].tolist(), key=key)
        return order
