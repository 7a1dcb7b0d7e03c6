"""When each API token was used last, recorded in the background, so that a read writes nothing.

Recording ``last_used`` on the request path would make every GET with a token a write transaction: under
a writer that holds the database (a SQLite import, a long job generation) a read-only call would wait for
the lock and answer 500. So a request only notes the use here, in memory (``note``); a thread of its own
writes the uses noted since its last look every ``harvestsuite.webui.tokenUseInterval`` seconds, all in
one transaction. A database that does not answer costs nothing but a later write: the uses are kept and
written at the next look that succeeds (said once in the log, and once when it works again). What the
thread has not written yet when the web UI stops is written by ``close``; a web UI killed loses at most
one interval of them, which ``last_used`` (kept to the minute) tolerates.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import Engine

from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import DatabaseError
from harvestdef.repositories.base import database_errors
from harvestdef.repositories.users import UserRepository

log = logging.getLogger(__name__)


class TokenUseRecorder:
    """Notes the uses of API tokens and writes them every ``interval`` seconds on a thread started at the
    first use."""

    def __init__(self, engine: Engine, interval: float, clock: Callable[[], datetime] = utcnow) -> None:
        if interval <= 0:
            raise ValueError(f"harvestsuite.webui.tokenUseInterval must be more than 0, not {interval}")
        self.engine = engine
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._pending: dict[int, datetime] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._failing = False

    def note(self, token_id: int) -> None:
        """Token ``token_id`` was used now; written at the next look of the thread."""
        when = self.clock()
        with self._lock:
            if self._pending.get(token_id, when) <= when:
                self._pending[token_id] = when
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="token-uses", daemon=True)
                self._thread.start()

    def flush(self) -> bool:
        """Write the uses noted so far; False (they are kept for the next try) if the database failed."""
        with self._lock:
            uses, self._pending = self._pending, {}
        if not uses:
            return True
        try:
            with database_errors("recording the API tokens' last use"), write_transaction(self.engine) as conn:
                UserRepository(conn).record_token_uses(uses)
        except DatabaseError as exc:
            with self._lock:
                for token_id, when in uses.items():  # a use noted meanwhile is the later one
                    if self._pending.get(token_id, when) <= when:
                        self._pending[token_id] = when
            if not self._failing:
                log.warning("the API tokens' last use could not be recorded (%s); kept, and tried again every "
                            "%g s", exc, self.interval)
            self._failing = True
            return False
        if self._failing:
            log.warning("the API tokens' last use is recorded again")
            self._failing = False
        return True

    def close(self) -> None:
        """Stop the thread and write what it had not written yet (if the database answers)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join()
        self.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()
