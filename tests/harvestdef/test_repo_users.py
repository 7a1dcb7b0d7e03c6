"""Users: roles, scrypt password hashes (never plain text), editions, the audit trail. Both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.errors import ConflictError, FieldError, StaleEditionError, ValidationError
from harvestdef.model.definitions import Role
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.users import UserRepository, verify_password
from tests.harvestdef.factories import make_user


def test_create_stores_a_salted_hash_and_authenticates(engine):
    with engine.begin() as conn:
        alice = make_user(conn, "alice", "Curator", password="correct horse battery")
        make_user(conn, "bob", "operator", password="correct horse battery")
        hashes = dict(conn.execute(select(s.users.c.name, s.users.c.password_hash)).all())
        repository = UserRepository(conn)
        assert repository.authenticate("alice", "correct horse battery") == alice
        assert repository.authenticate("alice", "wrong password") is None
        assert repository.authenticate("nobody", "correct horse battery") is None
    assert alice.role is Role.CURATOR
    assert all("correct horse" not in h and h.startswith("scrypt$") for h in hashes.values())
    assert hashes["alice"] != hashes["bob"]  # a salt per user
    assert verify_password("correct horse battery", hashes["alice"])


@pytest.mark.parametrize("role", ["root", "", "viewer"])
def test_unknown_roles_are_refused(engine, role):
    with engine.begin() as conn, pytest.raises(ValidationError, match="curator, operator, archivist, admin"):
        UserRepository(conn).create("carol", role, "long enough pw")


def test_short_password_and_duplicate_name_are_refused(engine):
    with engine.begin() as conn:
        with pytest.raises(ValidationError, match="at least 8"):
            UserRepository(conn).create("carol", "admin", "short")
        make_user(conn, "carol")
    with engine.begin() as conn, pytest.raises(ConflictError, match="carol"):
        make_user(conn, "carol")


def test_password_role_and_deactivation_with_editions_and_audit(engine):
    with engine.begin() as conn:
        user = make_user(conn, "dave")
        repository = UserRepository(conn, "admin")
        user = repository.set_password("dave", "a new passphrase", user.edition)
        user = repository.set_role("dave", "archivist", user.edition)
        assert repository.authenticate("dave", "a new passphrase") == user
        user = repository.set_active("dave", False, user.edition)
        assert repository.authenticate("dave", "a new passphrase") is None
        changes = AuditRepository(conn).changes_of("users", user.user_id)
    assert user.role is Role.ARCHIVIST and not user.isactive and user.edition == 4
    assert [c.actor for c in changes] == ["admin"] * 3 + ["system"]
    assert all("scrypt" not in str(c.before) + str(c.after) for c in changes)
    with engine.begin() as conn, pytest.raises(StaleEditionError, match="user dave was changed"):
        UserRepository(conn).set_role("dave", "admin", 3)
    with engine.connect() as conn:
        assert UserRepository(conn).get("dave") == user


def test_a_token_records_its_last_use_to_the_minute(engine):
    """A script's reads must not each become a write: last_used moves once a minute at most."""
    start = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)
    with engine.begin() as conn:
        UserRepository(conn).create("bot", "operator", password="long enough")
        token = UserRepository(conn).create_token("bot")

    def use(at: datetime) -> datetime:
        with engine.begin() as conn:
            assert UserRepository(conn, clock=lambda: at).user_for_token(token).name == "bot"
            return conn.scalar(select(s.api_tokens.c.last_used))

    assert use(start) == start
    assert use(start + timedelta(seconds=59)) == start
    assert use(start + timedelta(seconds=60)) == start + timedelta(seconds=60)
    with engine.begin() as conn:
        assert UserRepository(conn).user_for_token(token + "x") is None


def test_a_token_keeps_its_label_and_a_label_of_many_lines_or_too_long_is_refused(engine):
    with engine.begin() as conn:
        users = UserRepository(conn)
        users.create("bot", "operator", password="long enough")
        unnamed = users.create_token("bot")
        secret, made = users.create_labelled_token("bot", "  nightly export  ")
        assert secret.startswith("hs_") and secret != unnamed
        assert made.label == "nightly export" and made.user == "bot" and not made.revoked
        assert users.token_owner(secret)[1] == made.token_id
        with pytest.raises(FieldError, match="label: is empty"):
            users.create_labelled_token("bot", "   ")
        with pytest.raises(FieldError, match="label: has 101 characters; a token's label may have at most 100"):
            users.create_token("bot", "x" * 101)
        with pytest.raises(FieldError, match="label: holds a line break"):
            users.create_token("bot", "one\ntwo")
        assert [(token.label, token.token_id) for token in users.tokens("bot")] == [
            ("nightly export", made.token_id), ("", made.token_id - 1)]
        audited = conn.execute(select(s.audit_log.c.after).where(
            s.audit_log.c.tablename == "api_tokens", s.audit_log.c.action == "insert")
            .order_by(s.audit_log.c.audit_id)).scalars().all()
    assert len(audited) == 2 and "nightly export" in audited[1] and secret not in "".join(audited)
