"""The crawl threads: Heritrix's ToeThreads, as asyncio tasks on the crawl's event loop.

Each thread takes a URI from the frontier when one of its queues is ready, hands it to the processor chain
(harvester/engine/chain.py) and gives the queue back at the time the chain names. While the crawl is
paused, or no queue is ready, a thread waits on one shared wake-up event (or until the next queue's ready
time) rather than polling. An error in one URI is that URI's alone: it goes to runtime-errors.log and
alerts.log, the URI is done, and the crawl goes on.

When to stop is the crawl controller's (``is_stopping``), and so is what is checked between two URIs
(``after_uri``: a pause that the last busy thread completes, a crawl limit reached).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from harvester.engine.chain import Curi, ProcessorChain
from harvester.engine.frontier.frontier import Frontier
from harvester.engine.reporting.launchlogs import CrawlLogs, iso_now


class CrawlThreads:
    """The launch's crawl threads. ``busy`` counts those with a URI in the chain (the status's busyThreads);
    while ``paused`` is set no thread takes a URI. Used on the crawl's loop only (``busy`` is read from
    other threads, one int)."""

    def __init__(self, frontier: Frontier, is_stopping: Callable[[], bool], after_uri: Callable[[], None]) -> None:
        self.frontier = frontier
        self.is_stopping = is_stopping
        self.after_uri = after_uri
        self.busy = 0
        self.paused = False
        self._wakeup = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    def wake(self) -> None:
        """Have waiting threads look again: a URI was queued, the crawl unpaused or is stopping."""
        self._wakeup.set()

    def start(self, count: int, chain: ProcessorChain, logs: CrawlLogs) -> None:
        """Start ``count`` threads, numbered from 1 as crawl.log's thread column numbers them."""
        self._tasks = [asyncio.create_task(self._run(number + 1, chain, logs)) for number in range(count)]

    async def stop(self, grace: float) -> None:
        """Let the threads end their URIs for up to ``grace`` seconds, then cancel those still busy."""
        _, pending = await asyncio.wait(self._tasks, timeout=grace if grace > 0 else 0.01)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def wait_idle(self) -> None:
        """Return once no thread has a URI in the chain (with ``paused`` set, none takes another)."""
        while self.busy:
            await asyncio.sleep(0.01)

    async def _run(self, number: int, chain: ProcessorChain, logs: CrawlLogs) -> None:
        frontier, wakeup, is_stopping, after_uri = self.frontier, self._wakeup, self.is_stopping, self.after_uri
        while not is_stopping():
            if self.paused:
                wakeup.clear()
                await wakeup.wait()
                continue
            taken = frontier.next_ready(time.monotonic())
            if taken is None or isinstance(taken, float):
                wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wakeup.wait(), timeout=taken if taken else 0.5)
                continue
            queue, uri = taken
            self.busy += 1
            ready_at = time.monotonic()
            try:
                ready_at = await chain.process(Curi.taken(uri, queue, number))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one bad URI must not end the crawl: log it where Heritrix does
                logs.write("runtime-errors.log", f"{iso_now()} {uri.url} {exc!r}")
                logs.alert("SEVERE", f"{uri.url} {exc!r}")
                frontier.mark_done(uri)
            finally:
                self.busy -= 1
            if ready_at is not None:
                frontier.release(queue, ready_at)
            wakeup.set()
            after_uri()
