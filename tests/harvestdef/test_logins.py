"""The failed-login counts (harvestdef/repositories/logins.py) on both databases, with a clock of the test's:
free failures, waits that double up to the cap, a success that forgets its name only, counts forgotten
after a quiet while; and the session generation that logout and a password change raise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.repositories.logins import LoginPolicy, LoginThrottle
from harvestdef.repositories.users import UserRepository
from tests.harvestdef.factories import make_user

POLICY = LoginPolicy(failures_per_user=2, failures_per_address=3, delay=10, max_delay=40, memory=600)


def test_waits_grow_per_name_and_per_address_and_a_success_forgets_the_name_only(engine):
    now = [datetime(2026, 11, 25, 12, 0, tzinfo=UTC)]

    def throttle(conn):
        return LoginThrottle(conn, POLICY, clock=lambda: now[0])

    with write_transaction(engine) as conn:
        first = throttle(conn).record_failure("alice", "10.0.0.1")
        assert (first.user_failures, first.address_failures, first.wait) == (1, 1, 0.0)
        assert throttle(conn).wait_for("alice", "10.0.0.9") == 0.0
        second = throttle(conn).record_failure("alice", "10.0.0.2")
        assert (second.user_failures, second.address_failures, second.wait) == (2, 1, 10.0)
        assert throttle(conn).wait_for("alice", "10.0.0.9") == 10.0  # the name, from any address
        assert throttle(conn).wait_for("bob", "10.0.0.2") == 0.0
        # each further failure doubles the wait, up to the cap
        waits = [throttle(conn).record_failure("alice", "10.0.0.2").wait for _ in range(4)]
        assert waits == [20.0, 40.0, 40.0, 40.0]
        assert throttle(conn).wait_for("bob", "10.0.0.2") == 40.0  # the address reached its own limit
    now[0] += timedelta(seconds=15)
    with write_transaction(engine) as conn:
        assert throttle(conn).wait_for("alice", "10.0.0.7") == 25.0
        throttle(conn).record_success("alice")
        assert throttle(conn).wait_for("alice", "10.0.0.7") == 0.0
        assert throttle(conn).wait_for("carol", "10.0.0.2") == 25.0  # the address's failures stay
    # after a quiet while the address is forgotten too, and its row is deleted at the next failure
    now[0] += timedelta(seconds=POLICY.memory + 1)
    with write_transaction(engine) as conn:
        assert throttle(conn).wait_for("carol", "10.0.0.2") == 0.0
        fresh = throttle(conn).record_failure("carol", "10.0.0.3")
        assert (fresh.user_failures, fresh.address_failures) == (1, 1)
        assert conn.scalar(select(func.count()).select_from(s.login_failures)) == 2


def test_a_name_longer_than_the_key_and_no_address_are_counted(engine):
    with write_transaction(engine) as conn:
        throttle = LoginThrottle(conn, POLICY)
        for _ in range(2):
            counts = throttle.record_failure("x" * 1000, None)
        assert counts.user_failures == 2 and throttle.wait_for("x" * 1000, None) > 0


def test_logout_and_a_password_change_raise_the_session_generation(engine):
    with engine.begin() as conn:
        user = make_user(conn, "alice")
        users = UserRepository(conn)
        generation = users.session_generation("alice")
        assert users.session_user("alice", generation) == user
        assert users.end_sessions("alice") == generation + 1
        assert users.session_user("alice", generation) is None
        assert users.session_user("alice", generation + 1) == user
        users.set_password("alice", "another long password", user.edition)
        assert users.session_generation("alice") == generation + 2
        assert users.session_user("alice", generation + 1) is None
        assert users.session_user("alice", "forged") is None
