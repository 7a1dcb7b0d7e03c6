"""The queues of Heritrix 3's FrontierSummaryReport as typed lines, and NetarchiveSuite's
TopTotalEnqueuesFilter over them (docs/messages.md, CrawlProgress and FrontierReport: controller →
`<env>.monitor`).

The report (WorkQueueFrontier.reportTo) lists queues by category (LONGEST, IN-PROCESS, READY, SNOOZED,
INACTIVE, RETIRED), each queue as the block WorkQueue.reportTo writes::

    READY#0:
    Queue kaarefc.dk (p3)
      4 items
       wakes in: 1s250ms                     (only while the queue is snoozed)
        last enqueued: http://www.kaarefc.dk/avatar.png
          last peeked: http://www.kaarefc.dk/
       total expended: 6 (total budget: -1)
       active balance: 2994
       last(avg) cost: 1(1)
       totalScheduled fetchSuccesses fetchFailures ... lastSuccessTime     (FetchStats legend)
       6 6 0 0 6 0 133404 133404 2 2016-12-05T10:11:12.296Z
       SimplePrecedenceProvider
       3

The block carries neither WorkQueue's enqueueCount, errorCount nor lastDequeueTime (only its one-line
form does, which NetarchiveSuite's parser reads). Here FetchStats' totalScheduled, the URIs scheduled
into the queue, stands for total enqueues, and fetchFailures for the error count; the dequeue time is
left empty. The FetchStats columns are read by their legend, so a Heritrix without lastSuccessTime
(3.2 and older) parses too.

Parsing never raises: a block that does not read as a queue is skipped and counted, so a report from a
crawler version we have not seen costs lines, never the crawl.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# NetarchiveSuite's filter: its id is the class's simple name (AbstractFrontierReportFilter.getFilterId),
# and its size the default of MaxSizeFrontierReportExtract, which NetarchiveSuite's settings keep (their
# frontier.filter.args is empty, so the size argument falls back to DEFAULT_SIZE).
TOP_TOTAL_ENQUEUES_FILTER = "TopTotalEnqueuesFilter"
TOP_TOTAL_ENQUEUES_SIZE = 200
# NetarchiveSuite's other two filters (FrontierReportMessage): the queues retired (over their budget or
# quota) and the queues exhausted (no URI left) among those the report lists, at most as many.
RETIRED_QUEUES_FILTER = "RetiredQueuesFilter"
EXHAUSTED_QUEUES_FILTER = "ExhaustedQueuesFilter"
RETIRED = "RETIRED"  # the report's category of a retired queue
UNLIMITED_BUDGET = -1  # Heritrix's totalBudget for "no budget" (NetarchiveSuite's HERITRIX_MAXOBJECTS_INFINITY)

_QUEUE = re.compile(r"^Queue (?P<name>\S(?:.*\S)?) \(p(?P<precedence>-?\d+)\)$")
_ITEMS = re.compile(r"^(?P<items>-?\d+) items?$")
_EXPENDED = re.compile(r"^total expended: (?P<spend>-?\d+) \(total budget: (?P<budget>-?\d+)\)$")
_COST = re.compile(r"^last\(avg\) cost: (?P<last>-?\d+)\((?P<average>[^)]*)\)$")
_LEGEND_START = "totalScheduled"
_CATEGORY = re.compile(r"(?P<category>[A-Z][\w-]*)#\d+:")


@dataclass(frozen=True)
class QueueLine:
    """One queue of the frontier, in the terms of a frontierreportmonitor row."""

    queue_name: str
    current_size: int
    total_enqueues: int
    session_balance: int
    last_cost: int
    average_cost: float
    last_dequeue_time: str
    wake_time: str
    total_spend: int
    total_budget: int
    error_count: int
    last_peek_uri: str
    last_queued_uri: str
    category: str = ""  # the report's category the block was listed under first (READY, RETIRED, ...)

    @property
    def is_retired(self) -> bool:
        """Listed as RETIRED, or its spend has reached its budget."""
        return self.category == RETIRED or 0 <= self.total_budget <= self.total_spend

    @property
    def is_active(self) -> bool:
        """Neither exhausted nor retired, as TopTotalEnqueuesFilter tells them: URIs left, a positive
        session balance, and budget left."""
        return self.current_size > 0 and self.session_balance > 0 and not self.is_retired


@dataclass(frozen=True)
class FrontierQueues:
    """The queues of one report, each once, and the blocks that could not be read."""

    queues: tuple[QueueLine, ...]
    skipped: int = 0
    first_problem: str = ""


def _block_lines(text: str) -> list[tuple[str, list[str]]]:
    """Every queue block's lines (stripped), from its ``Queue`` line up to the blank line that ends it, with
    the category label it is listed under ("" before the first label).

    A block also ends where the next one, a category label, an "...and N more" line or a section heading
    starts, so a report cut off or written differently cannot run one block into the next."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    category = ""
    for raw in text.splitlines():
        line = raw.strip()
        label = _CATEGORY.fullmatch(line)
        if label is not None:
            category, current = label["category"], None
        elif line.startswith("Queue "):
            current = [line]
            blocks.append((category, current))
        elif current is not None:
            if not line or line.startswith(("-----=====", "...and ")):
                current = None
            else:
                current.append(line)
    return blocks


def _field(lines: list[str], prefix: str) -> str | None:
    for line in lines:
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return None


def _average(text: str) -> float:
    # ArchiveUtils.doubleToString; "NaN" before the queue's first URI was charged (0/0).
    value = float(text)
    return value if math.isfinite(value) else 0.0


def parse_queue_block(lines: list[str], category: str = "") -> QueueLine:
    """One WorkQueue.reportTo block; ValueError naming what is missing or malformed."""
    head = _QUEUE.match(lines[0])
    if head is None:
        raise ValueError(f"not a queue heading: {lines[0][:100]!r}")
    name = head["name"]
    body = lines[1:]
    items = _ITEMS.match(body[0]) if body else None
    if items is None:
        raise ValueError(f"queue {name}: no item count")
    expended = next((m for m in map(_EXPENDED.match, body) if m), None)
    cost = next((m for m in map(_COST.match, body) if m), None)
    balance = _field(body, "active balance:")
    if expended is None or cost is None or balance is None:
        raise ValueError(f"queue {name}: no total expended, active balance or last(avg) cost line")
    legend_at = next((i for i, line in enumerate(body) if line.startswith(_LEGEND_START)), None)
    if legend_at is None or legend_at + 1 >= len(body):
        raise ValueError(f"queue {name}: no fetch statistics")
    substats = dict(zip(body[legend_at].split(), body[legend_at + 1].split(), strict=False))
    if "fetchFailures" not in substats:
        raise ValueError(f"queue {name}: fetch statistics without fetchFailures")
    return QueueLine(
        queue_name=name, current_size=int(items["items"]), total_enqueues=int(substats[_LEGEND_START]),
        session_balance=int(balance), last_cost=int(cost["last"]), average_cost=_average(cost["average"]),
        last_dequeue_time="", wake_time=_field(body, "wakes in:") or "",
        total_spend=int(expended["spend"]), total_budget=int(expended["budget"]),
        error_count=int(substats["fetchFailures"]),
        last_peek_uri=_field(body, "last peeked:") or "", last_queued_uri=_field(body, "last enqueued:") or "",
        category=category)


def parse_frontier_summary(text: str) -> FrontierQueues:
    """The queues of a FrontierSummaryReport. A queue listed twice (LONGEST and its category) is kept
    once, as first listed: both blocks were written in the same report."""
    queues: dict[str, QueueLine] = {}
    skipped = 0
    first_problem = ""
    for category, block in _block_lines(text):
        try:
            queue = parse_queue_block(block, category)
        except ValueError as exc:  # int() of a garbled figure lands here too
            skipped += 1
            first_problem = first_problem or str(exc)
            continue
        queues.setdefault(queue.queue_name, queue)
    return FrontierQueues(tuple(queues.values()), skipped, first_problem)


def top_total_enqueues(queues: tuple[QueueLine, ...] | list[QueueLine],
                       size: int = TOP_TOTAL_ENQUEUES_SIZE) -> list[QueueLine]:
    """NetarchiveSuite's TopTotalEnqueuesFilter: the ``size`` active queues with the most total enqueues,
    ties by queue name (FrontierReportLine's natural order)."""
    ranked = sorted(queues, key=lambda queue: (-queue.total_enqueues, queue.queue_name))
    return [queue for queue in ranked if queue.is_active][:size]


def retired_queues(queues: tuple[QueueLine, ...] | list[QueueLine],
                   size: int = TOP_TOTAL_ENQUEUES_SIZE) -> list[QueueLine]:
    """NetarchiveSuite's RetiredQueuesFilter: the retired queues, most URIs waiting first."""
    ranked = sorted(queues, key=lambda queue: (-queue.current_size, queue.queue_name))
    return [queue for queue in ranked if queue.is_retired][:size]


def exhausted_queues(queues: tuple[QueueLine, ...] | list[QueueLine],
                     size: int = TOP_TOTAL_ENQUEUES_SIZE) -> list[QueueLine]:
    """NetarchiveSuite's ExhaustedQueuesFilter: the listed queues with no URI left, most enqueues first.
    Heritrix's summary lists few of them (an exhausted queue leaves its categories), so this is often empty."""
    ranked = sorted(queues, key=lambda queue: (-queue.total_enqueues, queue.queue_name))
    return [queue for queue in ranked if queue.current_size == 0 and not queue.is_retired][:size]


# The filters the controller sends a report of, in NetarchiveSuite's words, each with its selection.
FRONTIER_FILTERS = ((TOP_TOTAL_ENQUEUES_FILTER, top_total_enqueues), (RETIRED_QUEUES_FILTER, retired_queues),
                    (EXHAUSTED_QUEUES_FILTER, exhausted_queues))

__all__ = ["EXHAUSTED_QUEUES_FILTER", "FRONTIER_FILTERS", "RETIRED_QUEUES_FILTER", "TOP_TOTAL_ENQUEUES_FILTER",
           "TOP_TOTAL_ENQUEUES_SIZE", "FrontierQueues", "QueueLine", "exhausted_queues", "parse_frontier_summary",
           "parse_queue_block", "retired_queues", "top_total_enqueues"]
