"""Users of the web UI: name, role (curator, operator, archivist, admin) and a password hash.

Passwords are hashed with scrypt from the standard library (hashlib.scrypt) with a random salt per user;
the stored text is ``scrypt$n$r$p$salt$hash`` (salt and hash base64), so the parameters can be raised later
without breaking older hashes. The plain password is never stored or logged, and the audit trail records
only that the hash changed.

Logging in costs one scrypt whether the name is a user's or not (an unknown, inactive or password-less
user's attempt is checked against a stand-in hash of the same cost), so the time of an answer does not tell
which names exist.

Sessions: every user has a session generation (``users.session_generation``). The web UI's session cookie
carries the generation it was issued in and is accepted only while the user's is the same; ``end_sessions``
(logout) and ``set_password`` raise it, which ends every session of the user, in every client, at once.
API tokens are separate credentials and are not ended by either: see ``set_password``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, or_, select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.errors import FieldError, NotFoundError, ValidationError
from harvestdef.model.definitions import Role, User
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    stale_edition,
    translate_errors,
)

# scrypt cost: n=2**14, r=8, p=1 (16 MiB, tens of milliseconds), the parameters RFC 7914 and OWASP give.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
MIN_PASSWORD_LENGTH = 8
REDACTED = "(hash changed)"
TOKEN_PREFIX = "hs_"
# how exactly an API token's last use is kept (see user_for_token)
LAST_USED_PRECISION = timedelta(minutes=1)
MAX_TOKEN_LABEL_LENGTH = 100  # api_tokens.label


@dataclass(frozen=True)
class ApiToken:
    """What is kept of an API token: never the token itself, only its digest (not shown)."""

    token_id: int
    user: str
    created: datetime
    last_used: datetime | None
    revoked: bool
    label: str = ""


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationError(phrase(N_("a password needs at least %(limit)s characters"), limit=MIN_PASSWORD_LENGTH))
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


@cache
def _stand_in_hash() -> str:
    """A hash of a random password, made once, with the cost of every stored one: what an unknown, inactive
    or password-less user's login is checked against, so it takes as long as a known user's."""
    return hash_password(secrets.token_urlsafe(24))


def check_token_label(label: str) -> str:
    """An API token's label as kept: stripped, at most MAX_TOKEN_LABEL_LENGTH characters, on one line."""
    label = label.strip()
    if len(label) > MAX_TOKEN_LABEL_LENGTH:
        raise FieldError("label", phrase(N_("has %(length)s characters; a token's label may have at most %(limit)s"),
                                         length=len(label), limit=MAX_TOKEN_LABEL_LENGTH))
    if any(ord(char) < 32 or ord(char) == 127 for char in label):
        raise FieldError("label", phrase(N_("holds a line break or another control character; a token's label is "
                                            "one line")))
    return label


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

    def create(self, name: str, role: str | Role, password: str | None = None, fullname: str = "",
               email: str = "") -> User:
        """A new user; ConflictError if the name is taken. Without a password the user cannot log in yet."""
        name = name.strip()
        if not name:
            raise ValidationError(phrase(N_("a user needs a name")))
        checked_role = check_role(role)
        password_hash = hash_password(password) if password is not None else None
        with translate_errors("user", name):
            user_id = self.conn.execute(insert(s.users).values(
                name=name, fullname=fullname, email=email, role=checked_role.value, password_hash=password_hash,
                isactive=True, created=self.clock(), edition=1)).inserted_primary_key[0]
        record_audit(self.conn, self.actor, "users", user_id, "insert", None,
                     _redacted(fetch_row(self.conn, s.users, "user_id", user_id)))
        return self.get(name)

    def create_token(self, name: str, label: str = "") -> str:
        """A new API token of the user, named ``label`` (check_token_label): returned once, kept only as its
        SHA-256."""
        return self._insert_token(name, label)[0]

    def create_labelled_token(self, name: str, label: str) -> tuple[str, ApiToken]:
        """A new API token of the user with a label that is not empty, as the pages and the API make one:
        the token (shown once) and what is kept of it."""
        if not label.strip():
            raise FieldError("label", phrase(N_("is empty; name the token after the script or machine that will use "
                                                "it")))
        token, token_id = self._insert_token(name, label)
        return token, self.token(token_id)

    def _insert_token(self, name: str, label: str) -> tuple[str, int]:
        user = self.get(name)
        label = check_token_label(label)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token_id = self.conn.execute(insert(s.api_tokens).values(
            user_id=user.user_id, token_sha256=_token_digest(token), created=self.clock(),
            label=label)).inserted_primary_key[0]
        record_audit(self.conn, self.actor, "api_tokens", user.user_id, "insert", None,
                     {"user": user.name, "label": label, "token": "(new token)"})
        return token, int(token_id)

    def user_for_token(self, token: str) -> User | None:
        """The active user an unrevoked API token belongs to, its use recorded now; None for any other token.
        The web UI reads with ``token_owner`` and records the uses later, in the background."""
        owner = self.token_owner(token)
        if owner is None:
            return None
        user, token_id = owner
        self.record_token_uses({token_id: self.clock()})
        return user

    def token_owner(self, token: str) -> tuple[User, int] | None:
        """The active user an unrevoked API token belongs to and the token's id; None for any other token.
        Reads only: a read with a token writes nothing."""
        t, u = s.api_tokens, s.users
        row = self.conn.execute(select(u, t.c.token_id).join(t, t.c.user_id == u.c.user_id).where(
            t.c.token_sha256 == _token_digest(token), t.c.revoked.is_(False), u.c.isactive.is_(True))).first()
        return None if row is None else (_to_user(row), row.token_id)

    def record_token_uses(self, uses: Mapping[int, datetime]) -> int:
        """Record when each token (by id) was used last; returns how many rows changed.

        ``last_used`` is kept to the minute (``LAST_USED_PRECISION``): a use within a minute of the one
        recorded changes nothing, so a script's burst of calls is one write, not one per call."""
        if not uses:
            return 0
        t = s.api_tokens
        statement = update(t).where(t.c.token_id == bindparam("b_token_id"), or_(
            t.c.last_used.is_(None), t.c.last_used <= bindparam("b_since"))).values(last_used=bindparam("b_when"))
        changed = 0
        for token_id, when in sorted(uses.items()):
            changed += self.conn.execute(statement, {"b_token_id": token_id, "b_when": when,
                                                     "b_since": when - LAST_USED_PRECISION}).rowcount
        return changed

    def authenticate(self, name: str, password: str) -> User | None:
        """The user if the name and password match and the user is active; else None.

        Every call computes exactly one password hash, also for a name nobody has (module docstring)."""
        row = self.conn.execute(select(s.users).where(s.users.c.name == name.strip())).first()
        stored = row.password_hash if row is not None and row.password_hash else None
        matches = verify_password(password, stored or _stand_in_hash())
        if row is None or stored is None or not row.isactive or not matches:
            return None
        return _to_user(row)

    def session_generation(self, name: str) -> int:
        """The generation a session cookie of ``name`` issued now carries."""
        generation = self.conn.scalar(select(s.users.c.session_generation).where(s.users.c.name == name.strip()))
        if generation is None:
            raise NotFoundError("user", name)
        return int(generation)

    def session_user(self, name: str, generation: object) -> User | None:
        """The active user ``name`` if its sessions are still at ``generation``; None if they were ended."""
        row = self.conn.execute(select(s.users).where(s.users.c.name == name.strip())).first()
        if row is None or not row.isactive or row.session_generation != generation:
            return None
        return _to_user(row)

    def end_sessions(self, name: str) -> int:
        """End every session of ``name`` (logout): raises its session generation; returns the new one."""
        u = s.users
        changed = self.conn.execute(update(u).where(u.c.name == name.strip()).values(
            session_generation=u.c.session_generation + 1)).rowcount
        if changed != 1:
            raise NotFoundError("user", name)
        return self.session_generation(name)

    def _update(self, name: str, expected_edition: int, values: dict[str, Any]) -> User:
        current = self.get(name)
        # update_with_edition audits the full row; the hash itself stays out of the audit trail.
        before = _redacted(fetch_row(self.conn, s.users, "user_id", current.user_id))
        changed = self.conn.execute(
            s.users.update().where(s.users.c.user_id == current.user_id, s.users.c.edition == expected_edition)
            .values(**values, edition=expected_edition + 1)).rowcount
        if changed != 1:
            raise stale_edition(self.conn, self.actor, "users", current.user_id, "user", expected_edition,
                                fetch_row(self.conn, s.users, "user_id", current.user_id))
        record_audit(self.conn, self.actor, "users", current.user_id, "update", before,
                     _redacted(fetch_row(self.conn, s.users, "user_id", current.user_id)))
        return self.get(name)

    def set_password(self, name: str, password: str, expected_edition: int) -> User:
        """A new password; every session of the user ends (a session taken over must not outlive it).

        The user's API tokens stay valid, so the scripts that hold them go on working. A user makes tokens
        in a logged-in session (the web UI's API tokens page, or the API called with the session's cookie:
        never with a token, so a leaked token cannot make more of itself) or with ``harvestsuite users
        token`` on a host with the database; after a password leaked, the user's tokens page shows every
        token with its label and last use, and each is revoked on its own (``api_tokens.revoked``).
        Deactivating the user refuses its sessions and tokens alike.
        """
        return self._update(name, expected_edition, {"password_hash": hash_password(password),
                                                     "session_generation": s.users.c.session_generation + 1})

    def set_role(self, name: str, role: str | Role, expected_edition: int) -> User:
        return self._update(name, expected_edition, {"role": check_role(role).value})

    def set_active(self, name: str, active: bool, expected_edition: int) -> User:
        """Deactivate or reactivate the user. A deactivated user's sessions are refused from its next request
        and its API tokens at the latest harvestsuite.webui.tokenCacheSeconds later; reactivated, its
        tokens work again (revoke one to end it for good)."""
        return self._update(name, expected_edition, {"isactive": active})

    def list_users(self) -> list[User]:
        """Every user, by name (a site has tens of them, not millions)."""
        return [_to_user(row) for row in self.conn.execute(select(s.users).order_by(s.users.c.name))]

    def token_counts(self) -> dict[str, int]:
        """Each user's number of unrevoked API tokens, by name; users with none are left out."""
        t, u = s.api_tokens, s.users
        rows = self.conn.execute(select(u.c.name, func.count(t.c.token_id)).join(t, t.c.user_id == u.c.user_id)
                                 .where(t.c.revoked.is_(False)).group_by(u.c.name))
        return {name: count for name, count in rows}

    def tokens(self, name: str) -> list[ApiToken]:
        """The user's API tokens, revoked ones too, newest first; their secrets are not kept, only ids."""
        user = self.get(name)
        t = s.api_tokens
        rows = self.conn.execute(select(t.c.token_id, t.c.created, t.c.last_used, t.c.revoked, t.c.label)
                                 .where(t.c.user_id == user.user_id).order_by(t.c.token_id.desc()))
        return [ApiToken(token_id=row.token_id, user=user.name, created=row.created, last_used=row.last_used,
                         revoked=row.revoked, label=row.label) for row in rows]

    def token(self, token_id: int) -> ApiToken:
        t, u = s.api_tokens, s.users
        row = self.conn.execute(select(t.c.token_id, u.c.name, t.c.created, t.c.last_used, t.c.revoked, t.c.label)
                                .join(u, u.c.user_id == t.c.user_id).where(t.c.token_id == token_id)).first()
        if row is None:
            raise NotFoundError("API token", token_id)
        return ApiToken(token_id=row.token_id, user=row.name, created=row.created, last_used=row.last_used,
                        revoked=row.revoked, label=row.label)

    def revoke_token(self, token_id: int) -> ApiToken:
        """Revoke one API token for good: refused from then on (at the latest tokenCacheSeconds later, by a
        web UI that cached it). Revoking a revoked token changes nothing."""
        before = self.token(token_id)
        if not before.revoked:
            self.conn.execute(update(s.api_tokens).where(s.api_tokens.c.token_id == token_id).values(revoked=True))
            record_audit(self.conn, self.actor, "api_tokens", token_id, "update",
                         {"user": before.user, "revoked": False}, {"user": before.user, "revoked": True})
        return self.token(token_id)

