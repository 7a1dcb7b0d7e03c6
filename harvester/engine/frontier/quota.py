"""The quota enforcer: each queue's group budget of fetch successes and bytes (Heritrix's QuotaEnforcer).

It owns the group counters: a success counts 2xx responses (and DNS lookups, which Heritrix counts with
status 1), bytes count the content size of every fetch. The URI that finds its group over budget ends -5003
with the quota's annotation, and the frontier retires the queue with it: the queue's other URIs wait there
and are not fetched (Heritrix's forceRetire, its default and NetarchiveSuite's templates' setting). With
``counts_prerequisites`` off (PrerequisiteIgnoringQuotaEnforcer), DNS and robots.txt fetches neither count
nor are blocked.

The budgets can change while the crawl runs: the whole job's (``set_rules``, the bean properties
``quotaenforcer.groupMaxFetchSuccesses`` and ``groupMaxAllKb``) and a domain's (``set_domain_budget``, which
a real Heritrix gets as a sheet overlay on the domain's SURT prefix). A lowered budget blocks from the
group's next URI on; a raised one brings a queue it had retired back (Heritrix's reconsiderRetiredQueues).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harvester.engine.chain import QUOTA_BLOCKED, Curi, Outcome
from harvester.engine.frontier.frontier import Frontier
from harvester.engine.frontier.queuepolicy import is_queue_of_domain

if TYPE_CHECKING:
    from harvester.engine.config import CrawlConfig

QUOTA_ANNOTATION_PREFIX = "Q:"
MAX_FETCH_SUCCESSES_ANNOTATION = "Q:groupMaxFetchSuccesses"
MAX_ALL_KB_ANNOTATION = "Q:groupMaxAllKb"


@dataclass(frozen=True)
class QuotaRules:
    max_fetch_successes: int      # -1 = unlimited
    max_all_kb: int               # -1 = unlimited
    counts_prerequisites: bool

    @classmethod
    def from_config(cls, config: CrawlConfig) -> QuotaRules:
        return cls(config.group_max_fetch_successes, config.group_max_all_kb, config.quota_counts_prerequisites)


@dataclass(frozen=True)
class DomainBudget:
    """A domain's own group budgets; None leaves that one to the job's rules (-1 = unlimited)."""

    max_fetch_successes: int | None = None
    max_all_kb: int | None = None


class QuotaEnforcer:
    """Blocks a URI whose group is over budget, and counts what each group fetched.

    ``rules`` and the domain budgets are read afresh for every decision, so a change (made on the crawl's
    loop) applies from the next URI on; the counters stay."""

    def __init__(self, rules: QuotaRules, frontier: Frontier) -> None:
        self.rules = rules
        self.frontier = frontier
        self._counts: dict[str, tuple[int, int]] = {}      # queue key -> (fetch successes, bytes)
        self.domain_budgets: dict[str, DomainBudget] = {}  # domain (punycode) -> its budgets
        self._limits: dict[str, tuple[int, int]] = {}      # queue key -> its limits, while budgets stay

    async def process(self, curi: Curi) -> Outcome | None:
        if curi.uri.is_prerequisite:
            return None
        reason = self.reason_to_block(curi.queue.key)
        if reason:
            return curi.fail(QUOTA_BLOCKED, [reason])
        return None

    def limits(self, key: str) -> tuple[int, int]:
        """The group's (max fetch successes, max KB): the most specific domain budget that covers the queue,
        else the job's rules."""
        found = self._limits.get(key)
        if found is None:
            max_successes, max_kb = self.rules.max_fetch_successes, self.rules.max_all_kb
            covering = [domain for domain in self.domain_budgets if is_queue_of_domain(key, domain)]
            for domain in sorted(covering, key=len):   # a subdomain's budget overrides its domain's
                budget = self.domain_budgets[domain]
                if budget.max_fetch_successes is not None:
                    max_successes = budget.max_fetch_successes
                if budget.max_all_kb is not None:
                    max_kb = budget.max_all_kb
            found = self._limits[key] = (max_successes, max_kb)
        return found

    def over_budget(self, key: str) -> str | None:
        """The quota's annotation when the group has used up a budget, else None."""
        max_successes, max_kb = self.limits(key)
        successes, all_bytes = self._counts.get(key, (0, 0))
        if max_successes >= 0 and successes >= max_successes:
            return MAX_FETCH_SUCCESSES_ANNOTATION
        if max_kb >= 0 and all_bytes >= max_kb * 1024:
            return MAX_ALL_KB_ANNOTATION
        return None

    def reason_to_block(self, key: str) -> str | None:
        """The quota annotation when the group is over budget (the queue is retired with it), else None."""
        reason = self.over_budget(key)
        if reason is not None:
            self.frontier.retire(key, reason)
        return reason

    def count(self, key: str, is_success: bool, content_size: int, is_prerequisite: bool) -> None:
        """Count one fetch of the group; a prerequisite only when the rules count prerequisites."""
        if is_prerequisite and not self.rules.counts_prerequisites:
            return
        successes, all_bytes = self._counts.get(key, (0, 0))
        self._counts[key] = (successes + (1 if is_success else 0), all_bytes + content_size)

    # -- live changes ---------------------------------------------------------------------------------
    def set_rules(self, rules: QuotaRules) -> int:
        """The whole job's budgets from now on; returns how many retired queues came back."""
        self.rules = rules
        return self._budgets_changed()

    def set_budget_property(self, max_fetch_successes: int | None = None, max_all_kb: int | None = None) -> int:
        """One of the job's budgets (None: as it was); returns how many retired queues came back."""
        rules = self.rules
        if max_fetch_successes is not None:
            rules = replace(rules, max_fetch_successes=max_fetch_successes)
        if max_all_kb is not None:
            rules = replace(rules, max_all_kb=max_all_kb)
        return self.set_rules(rules)

    def set_domain_budget(self, domain: str, budget: DomainBudget) -> int:
        """``domain``'s budgets from now on; returns how many retired queues came back."""
        self.domain_budgets[domain] = budget
        return self._budgets_changed()

    def reconsider_retired(self) -> int:
        """Bring back every queue retired by its quota whose group is within its budgets now (Heritrix's
        reconsiderRetiredQueues); returns how many came back."""
        returned = 0
        for key, queue in list(self.frontier.queues.items()):
            reason = queue.retired_reason
            if reason and reason.startswith(QUOTA_ANNOTATION_PREFIX) and self.over_budget(key) is None:
                self.frontier.retire(key, None)
                returned += 1
        return returned

    def _budgets_changed(self) -> int:
        self._limits.clear()
        return self.reconsider_retired()

    # -- checkpoints ----------------------------------------------------------------------------------
    def counts(self, key: str) -> tuple[int, int]:
        """The group's (fetch successes, bytes)."""
        return self._counts.get(key, (0, 0))

    def restore(self, key: str, successes: int, all_bytes: int) -> None:
        self._counts[key] = (successes, all_bytes)
