"""Users of the web UI: name, role (curator, operator, archivist, admin) and a password hash.

Passwords are hashed with scrypt from the standard library (hashlib.scrypt) with a random salt per user;
the stored text is ``scrypt$n$r$p$salt$hash`` (salt and hash base64), so the parameters can be raised later
without breaking older hashes. The plain password is never stored or logged, and the audit trail records
only that the hash changed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.errors import NotFoundError, StaleEditionError, ValidationError
from harvestdef.model.definitions import Role, User
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    translate_errors,
)

# scrypt cost: n=2**14, r=8, p=1 (16 MiB, tens of milliseconds), the parameters RFC 7914 and OWASP give.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
MIN_PASSWORD_LENGTH = 8
REDACTED = "(hash changed)"
TOKEN_PREFIX = "hs_"
# how exactly an API token's last use is kept (see user_for_token)
LAST_USED_PRECISION = timedelta(minutes=1)


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    encode = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${encode(salt).decode()}${encode(digest).decode()}"


def verify_password(password: str, stored: str | None) -> bool:
    """Whether ``password`` matches the stored hash (constant-time comparison)."""
    if not stored:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(password.encode("utf-8"), salt=base64.b64decode(salt), n=int(n), r=int(r),
                                p=int(p), dklen=len(expected))
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def check_role(role: str | Role) -> Role:
    try:
        return Role(str(role).strip().lower())
    except ValueError:
        raise ValidationError(
            f"role {role!r} is not one of {', '.join(r.value for r in Role)}") from None


def _to_user(row: Any) -> User:
    return User(user_id=row.user_id, name=row.name, fullname=row.fullname or "", email=row.email or "",
                role=Role(row.role), isactive=row.isactive, created=row.created, edition=row.edition)


def _redacted(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is not None and row.get("password_hash"):
        row["password_hash"] = REDACTED
    return row


class UserRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR, clock: Callable[[], datetime] = utcnow) -> None:
        self.conn = conn
        self.actor = actor
        self.clock = clock

    def get(self, name: str) -> User:
        row = self.conn.execute(select(s.users).where(s.users.c.name == name.strip())).first()
        if row is None:
            raise NotFoundError("user", name)
        return _to_user(row)

    def find(self, name: str) -> User | None:
        row = self.conn.execute(select(s.users).where(s.users.c.name == name.strip())).first()
        return _to_user(row) if row is not None else None

    def all_users(self) -> list[User]:
        return [_to_user(row) for row in self.conn.execute(select(s.users).order_by(s.users.c.name))]

    def create(self, name: str, role: str | Role, password: str | None = None, fullname: str = "",
               email: str = "") -> User:
        """A new user; ConflictError if the name is taken. Without a password the user cannot log in yet."""
        name = name.strip()
        if not name:
            raise ValidationError("a user needs a name")
        checked_role = check_role(role)
        password_hash = hash_password(password) if password is not None else None
        with translate_errors("user", name):
            user_id = self.conn.execute(insert(s.users).values(
                name=name, fullname=fullname, email=email, role=checked_role.value, password_hash=password_hash,
                isactive=True, created=self.clock(), edition=1)).inserted_primary_key[0]
        record_audit(self.conn, self.actor, "users", user_id, "insert", None,
                     _redacted(fetch_row(self.conn, s.users, "user_id", user_id)))
        return self.get(name)

    def create_token(self, name: str) -> str:
        """A new API token of the user: returned once, kept only as its SHA-256."""
        user = self.get(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.conn.execute(insert(s.api_tokens).values(user_id=user.user_id, token_sha256=_token_digest(token),
                                                      created=self.clock()))
        record_audit(self.conn, self.actor, "api_tokens", user.user_id, "insert", None,
                     {"user": user.name, "token": "(new token)"})
        return token

    def user_for_token(self, token: str) -> User | None:
        """The active user an unrevoked API token belongs to; None for any other token.

        The token's ``last_used`` is kept to the minute (``LAST_USED_PRECISION``): writing it on every call
        made each read of a script a write transaction."""
        t, u = s.api_tokens, s.users
        row = self.conn.execute(select(u, t.c.token_id, t.c.last_used).join(t, t.c.user_id == u.c.user_id).where(
            t.c.token_sha256 == _token_digest(token), t.c.revoked.is_(False), u.c.isactive.is_(True))).first()
        if row is None:
            return None
        now = self.clock()
        if row.last_used is None or now - row.last_used >= LAST_USED_PRECISION:
            self.conn.execute(update(t).where(t.c.token_id == row.token_id).values(last_used=now))
        return _to_user(row)

    def authenticate(self, name: str, password: str) -> User | None:
        """The user if the name and password match and the user is active; else None."""
        row = self.conn.execute(select(s.users).where(s.users.c.name == name.strip())).first()
        if row is None or not row.isactive or not verify_password(password, row.password_hash):
            return None
        return _to_user(row)

    def _update(self, name: str, expected_edition: int, values: dict[str, Any]) -> User:
        current = self.get(name)
        # update_with_edition audits the full row; the hash itself stays out of the audit trail.
        before = _redacted(fetch_row(self.conn, s.users, "user_id", current.user_id))
        changed = self.conn.execute(
            s.users.update().where(s.users.c.user_id == current.user_id, s.users.c.edition == expected_edition)
            .values(**values, edition=expected_edition + 1)).rowcount
        if changed != 1:
            raise StaleEditionError("user", name, expected_edition, current.edition)
        record_audit(self.conn, self.actor, "users", current.user_id, "update", before,
                     _redacted(fetch_row(self.conn, s.users, "user_id", current.user_id)))
        return self.get(name)

    def set_password(self, name: str, password: str, expected_edition: int) -> User:
        return self._update(name, expected_edition, {"password_hash": hash_password(password)})

    def set_role(self, name: str, role: str | Role, expected_edition: int) -> User:
        return self._update(name, expected_edition, {"role": check_role(role).value})

    def set_details(self, name: str, expected_edition: int, fullname: str | None = None,
                    email: str | None = None) -> User:
        values = {k: v for k, v in (("fullname", fullname), ("email", email)) if v is not None}
        return self._update(name, expected_edition, values)

    def set_active(self, name: str, active: bool, expected_edition: int) -> User:
        return self._update(name, expected_edition, {"isactive": active})

