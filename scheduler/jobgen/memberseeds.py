"""The seed lists and domain traps of a run's configurations, kept from selection until their jobs are written.

Selection reads each configuration's seed lists in the same sorted pass as the configuration itself, so
writing the jobs reads nothing back: a national snapshot's seed lists are read once, in the order the jobs
need them (a job's members in domain-name order are its candidates in index order). Each candidate's text
is kept as the string the database returned, in a list indexed like Candidates, so a job's seed list is one
join over its members; traps are few and kept per candidate in a dict.
"""

from __future__ import annotations

from collections.abc import Iterable


class MemberSeeds:
    """Each candidate's seed lists, joined by newlines (seed lines are lines, so the seeds are the same as
    list by list), and the stored traps of the candidates whose domain has any; indexed like Candidates."""

    def __init__(self) -> None:
        self._texts: list[str] = []
        self.traps: dict[int, tuple[str, str]] = {}  # candidate index -> (domain name, stored traps)

    def __len__(self) -> int:
        return len(self._texts)

    def add(self, seedlists: str, domain: str, traps: str | None) -> None:
        """The next candidate's seed lists (joined by newlines) and its domain's stored traps."""
        if traps:
            self.traps[len(self._texts)] = (domain, traps)
        self._texts.append(seedlists)

    def extend(self, seedlists: list[str], traps: dict[int, tuple[str, str]]) -> None:
        """The next candidates' seed lists, in order, and the (domain name, stored traps) of those whose domain
        has any, by candidate index."""
        self._texts.extend(seedlists)
        self.traps.update(traps)

    def text(self, indexes: Iterable[int]) -> str:
        """The seed lists of the candidates ``indexes``, in that order, joined by newlines."""
        return "\n".join(map(self._texts.__getitem__, indexes))
