"""The seed lists and domain traps of a run's configurations, kept from selection until their jobs are written.

Selection reads each configuration's seed lists in the same sorted pass as the configuration itself, so
writing the jobs reads nothing back: a national snapshot's seed lists are read once, in the order the jobs
need them (a job's members in domain-name order are its candidates in index order). The texts are held as
UTF-8 in one buffer with an end offset per configuration (a few bytes over the text itself, where a Python
string per configuration would take about 50 more); traps are few and kept per domain in a dict.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable


class MemberSeeds:
    """Each candidate's seed lists, joined by newlines (seed lines are lines, so the seeds are the same as
    list by list), and the stored traps of the candidates whose domain has any; indexed like Candidates."""

    def __init__(self) -> None:
        self._text = bytearray()
        self._bounds = array("q", [0])  # candidate i's text is _text[_bounds[i]:_bounds[i + 1]]
        self.traps: dict[int, tuple[str, str]] = {}  # candidate index -> (domain name, stored traps)

    def __len__(self) -> int:
        return len(self._bounds) - 1

    def add(self, seedlists: str, domain: str, traps: str | None) -> None:
        """The next candidate's seed lists (joined by newlines) and its domain's stored traps."""
        if traps:
            self.traps[len(self._bounds) - 1] = (domain, traps)
        self._text += seedlists.encode()
        self._bounds.append(len(self._text))

    def text(self, indexes: Iterable[int]) -> str:
        """The seed lists of the candidates ``indexes``, in that order, joined by newlines."""
        text, bounds = self._text, self._bounds
        return b"\n".join([text[bounds[index]:bounds[index + 1]] for index in indexes]).decode()

    def domain_traps(self, indexes: Iterable[int]) -> list[tuple[str, str]]:
        """(domain name, stored traps) of the candidates ``indexes`` that have traps, in that order."""
        traps = self.traps
        return [traps[index] for index in indexes if index in traps]
