"""Throttling failed logins, per user name and per client address (the web UI asks before every login).

After ``failures_per_user`` failed logins in a row of one user name, or ``failures_per_address`` from one
client address, every further attempt of that name or from that address must wait: ``delay`` seconds
after the failure that reached the limit, doubling with each further failure, up to ``max_delay``. An
attempt made during the wait is refused without its password being checked (the web UI answers 429 with
Retry-After), so guessing slows to a crawl while a person who mistyped is barely held up.

A successful login forgets its user name's failures, not its address's: a guesser who owns one account must
not reset the count of guesses at the others by logging in to it. A count is forgotten ``memory`` seconds
after its last failure.

The counts live in the harvest database (``login_failures``), not in memory, because a deployment may run
several web UI processes with many threads each, and all of them must count the same failures. Two
attempts at the same moment may both be let through before either failure is written; the wait still grows
with every failure written.

Throttling by name also holds up the name's owner for as long as the wait (at most ``max_delay``): the
price of a throttle that a guesser changing addresses cannot escape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import upsert
from harvestdef.db.types import utcnow
from harvestdef.settings import WebuiSettings

USER, ADDRESS = "user", "address"
# login_failures.login_key's length: a longer name is counted by its first 300 characters
MAX_KEY_LENGTH = 300
UNKNOWN_ADDRESS = "unknown"


@dataclass(frozen=True)
class LoginPolicy:
    """How many failures are free, and how long the waits after them are (seconds)."""

    failures_per_user: int = 5
    failures_per_address: int = 20
    delay: float = 2
    max_delay: float = 900
    memory: float = 3600

    @classmethod
    def from_settings(cls, settings: WebuiSettings) -> LoginPolicy:
        return cls(settings.loginFailuresPerUser, settings.loginFailuresPerAddress, settings.loginDelay,
                   settings.loginDelayMax, settings.loginFailureMemory)

    def wait_after(self, kind: str, failures: int) -> float:
        """Seconds the next attempt must wait after ``failures`` failures in a row of a name or an address."""
        allowed = self.failures_per_user if kind == USER else self.failures_per_address
        if failures < allowed:
            return 0.0
        return min(self.delay * 2 ** min(failures - allowed, 32), self.max_delay)


@dataclass(frozen=True)
class FailureCounts:
    """The failures in a row of the name and of the address after one more, and the wait that follows."""

    user_failures: int
    address_failures: int
    wait: float


def _keys(name: str, address: str | None) -> tuple[tuple[str, str], tuple[str, str]]:
    return (USER, name.strip()[:MAX_KEY_LENGTH]), (ADDRESS, (address or UNKNOWN_ADDRESS)[:MAX_KEY_LENGTH])


class LoginThrottle:
    """The failed-login counts of the harvest database, on the caller's connection and transaction.

    ``record_failure`` and ``record_success`` write: on SQLite, call them in a write transaction
    (harvestdef.db.engine.write_transaction), since they read what they then change.
    """

    def __init__(self, conn: Connection, policy: LoginPolicy, clock: Callable[[], datetime] = utcnow) -> None:
        self.conn = conn
        self.policy = policy
        self.clock = clock

    def wait_for(self, name: str, address: str | None) -> float:
        """Seconds until a login of ``name`` from ``address`` may be tried; 0.0 if it may be tried now."""
        now = self.clock()
        t = s.login_failures
        waits = [0.0]
        for kind, key in _keys(name, address):
            row = self.conn.execute(select(t.c.wait_until, t.c.last_failure).where(
                t.c.kind == kind, t.c.login_key == key)).first()
            if row is None or row.wait_until is None or self._is_forgotten(row.last_failure, now):
                continue
            waits.append((row.wait_until - now).total_seconds())
        return max(waits)

    def record_failure(self, name: str, address: str | None) -> FailureCounts:
        """Count one failed login of ``name`` from ``address``; returns the counts and the wait that follows."""
        now = self.clock()
        t = s.login_failures
        self.conn.execute(delete(t).where(t.c.last_failure < now - timedelta(seconds=self.policy.memory)))
        counts: dict[str, int] = {}
        waits = []
        for kind, key in _keys(name, address):
            upsert(self.conn, t, ("kind", "login_key"),
                   [{"kind": kind, "login_key": key, "failures": 1, "last_failure": now, "wait_until": None}],
                   lambda excluded: {"failures": t.c.failures + 1, "last_failure": excluded.last_failure})
            failures = self.conn.scalar(select(t.c.failures).where(t.c.kind == kind, t.c.login_key == key)) or 0
            wait = self.policy.wait_after(kind, failures)
            if wait:
                self.conn.execute(update(t).where(t.c.kind == kind, t.c.login_key == key).values(
                    wait_until=now + timedelta(seconds=wait)))
            counts[kind] = failures
            waits.append(wait)
        return FailureCounts(counts[USER], counts[ADDRESS], max(waits))

    def has_failures(self, name: str) -> bool:
        """Whether failures of ``name`` are counted (so that a success has something to forget)."""
        (kind, key), _ = _keys(name, None)
        t = s.login_failures
        return self.conn.scalar(select(t.c.failures).where(t.c.kind == kind, t.c.login_key == key)) is not None

    def record_success(self, name: str) -> None:
        """Forget the failures of ``name`` (not of the address: see the module docstring)."""
        (kind, key), _ = _keys(name, None)
        t = s.login_failures
        self.conn.execute(delete(t).where(t.c.kind == kind, t.c.login_key == key))

    def _is_forgotten(self, last_failure: datetime, now: datetime) -> bool:
        return now - last_failure > timedelta(seconds=self.policy.memory)
