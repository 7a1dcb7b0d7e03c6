"""API tokens recently found valid, so a script's burst of calls does not ask the database on every call.

Looking a token up costs a connection, a query and a commit per request: a third of a list call's cost
under 16 clients. A token found valid is trusted for ``harvestsuite.webui.tokenCacheSeconds`` (0: never
cached); a token revoked or a user deactivated meanwhile (in the pages, the API, ``harvestsuite users``,
SQL) is refused at the latest that long after. Unknown tokens are never cached, so a new token works at
once. Only a SHA-256 of each token is kept, as in the database.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable

from harvestdef.model.definitions import User

MAX_ENTRIES = 10_000  # more distinct tokens than this in one period empties the cache instead of growing it


class TokenCache:
    def __init__(self, seconds: int, clock: Callable[[], float] = time.monotonic) -> None:
        if seconds < 0:
            raise ValueError(f"harvestsuite.webui.tokenCacheSeconds must be 0 or more, not {seconds}")
        self.seconds = seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._users: dict[bytes, tuple[tuple[User, int], float]] = {}

    def user_for(self, token: str, lookup: Callable[[str], tuple[User, int] | None]) -> tuple[User, int] | None:
        """The user of ``token`` and the token's id: from the cache while fresh, else from ``lookup``
        (None: refused)."""
        if self.seconds == 0:
            return lookup(token)
        key = hashlib.sha256(token.encode()).digest()
        now = self.clock()
        with self._lock:
            cached = self._users.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        user = lookup(token)
        with self._lock:
            if user is None:
                self._users.pop(key, None)
            else:
                if len(self._users) >= MAX_ENTRIES:
                    self._users.clear()
                self._users[key] = (user, now + self.seconds)
        return user
