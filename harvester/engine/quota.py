"""The quota enforcer: each queue's group budget of fetch successes and bytes (Heritrix's QuotaEnforcer).

It owns the group counters: a success counts 2xx responses (and DNS lookups, which Heritrix counts with
status 1), bytes count the content size of every fetch. A URI of a group over budget ends -5003 with the
quota's annotation, and the frontier marks the queue retired with it, for its report. With
``counts_prerequisites`` off (PrerequisiteIgnoringQuotaEnforcer), DNS and robots.txt fetches neither count
nor are blocked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvester.engine.chain import QUOTA_BLOCKED, Curi, Outcome
from harvester.engine.frontier import Frontier

if TYPE_CHECKING:
    from harvester.engine.config import CrawlConfig


@dataclass(frozen=True)
class QuotaRules:
    max_fetch_successes: int      # -1 = unlimited
    max_all_kb: int               # -1 = unlimited
    counts_prerequisites: bool

    @classmethod
    def from_config(cls, config: CrawlConfig) -> QuotaRules:
        return cls(config.group_max_fetch_successes, config.group_max_all_kb, config.quota_counts_prerequisites)


class QuotaEnforcer:
    """Blocks a URI whose group is over budget, and counts what each group fetched.

    ``rules`` is one frozen value read once per decision, so rules put in its place (on the crawl's loop)
    apply from the next URI on; the counters stay."""

    def __init__(self, rules: QuotaRules, frontier: Frontier) -> None:
        self.rules = rules
        self.frontier = frontier
        self._counts: dict[str, tuple[int, int]] = {}      # queue key -> (fetch successes, bytes)

    async def process(self, curi: Curi) -> Outcome | None:
        if curi.uri.is_prerequisite:
            return None
        reason = self.reason_to_block(curi.queue.key)
        if reason:
            return curi.fail(QUOTA_BLOCKED, [reason])
        return None

    def reason_to_block(self, key: str) -> str | None:
        """The quota annotation when the group is over budget (the queue is retired with it), else None."""
        rules = self.rules
        successes, all_bytes = self._counts.get(key, (0, 0))
        if rules.max_fetch_successes >= 0 and successes >= rules.max_fetch_successes:
            self.frontier.retire(key, "Q:groupMaxFetchSuccesses")
        elif rules.max_all_kb >= 0 and all_bytes >= rules.max_all_kb * 1024:
            self.frontier.retire(key, "Q:groupMaxAllKb")
        return self.frontier.retired_reason(key)

    def count(self, key: str, is_success: bool, content_size: int, is_prerequisite: bool) -> None:
        """Count one fetch of the group; a prerequisite only when the rules count prerequisites."""
        if is_prerequisite and not self.rules.counts_prerequisites:
            return
        successes, all_bytes = self._counts.get(key, (0, 0))
        self._counts[key] = (successes + (1 if is_success else 0), all_bytes + content_size)

    # -- checkpoints ----------------------------------------------------------------------------------
    def counts(self, key: str) -> tuple[int, int]:
        """The group's (fetch successes, bytes)."""
        return self._counts.get(key, (0, 0))

    def restore(self, key: str, successes: int, all_bytes: int) -> None:
        self._counts[key] = (successes, all_bytes)
