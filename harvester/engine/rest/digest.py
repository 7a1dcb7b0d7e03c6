"""HTTP Digest authentication of the engine's REST API (RFC 7616, MD5, qop="auth"), as Heritrix 3 does it.

The server side only: it makes challenges and checks ``Authorization`` headers; the header grammar and
the response computation it shares with the client live in ``harvester.digestauth``. Nonces are stateless (a
timestamp signed with a per-process secret), so they need no table and expire after ``nonce_lifetime``
seconds; an expired nonce with otherwise correct credentials is answered with ``stale=true``, so a client
retries without asking its user again. After a failed attempt, the next check waits until
``failure_penalty`` seconds after that failure, with one lock for all clients (Heritrix's
``RateLimitGuard``), which makes guessing the password slow.

This module knows nothing about HTTP servers or sockets.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from harvester.digestauth import digest_response, parse_auth_params


@dataclass(frozen=True)
class AuthOutcome:
    """The result of checking one request: accepted, or rejected (``stale`` if only the nonce expired)."""

    is_accepted: bool
    is_stale: bool = False
    reason: str = ""


class DigestAuthenticator:
    """Checks Digest credentials against one user, as Heritrix's single-user guard does.

    ``clock`` and ``sleep`` are injectable so tests need not wait for real time to pass.
    """

    def __init__(self, user: str, password: str, realm: str = "Authentication Required",
                 nonce_lifetime: float = 300.0, failure_penalty: float = 6.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.user = user
        self.realm = realm
        self.nonce_lifetime = nonce_lifetime
        self.failure_penalty = failure_penalty
        self._password = password
        self._secret = secrets.token_bytes(32)
        self._clock = clock
        self._sleep = sleep
        self._penalty_lock = threading.Lock()
        self._last_failure: float | None = None

    def make_nonce(self) -> str:
        stamp = f"{self._clock():.6f}"
        signature = hmac.new(self._secret, stamp.encode(), hashlib.sha256).hexdigest()[:32]
        return base64.urlsafe_b64encode(f"{stamp}:{signature}".encode()).decode().rstrip("=")

    def challenge(self, stale: bool = False) -> str:
        """The ``WWW-Authenticate`` header value of a 401 answer."""
        value = (f'Digest realm="{self.realm}", qop="auth", algorithm=MD5, nonce="{self.make_nonce()}", '
                 f'opaque="{hashlib.md5(self._secret).hexdigest()}"')
        return value + (", stale=true" if stale else "")

    def _nonce_age(self, nonce: str) -> float | None:
        """Seconds since the nonce was made, or None if we did not make it."""
        try:
            padded = nonce + "=" * (-len(nonce) % 4)
            stamp, _, signature = base64.urlsafe_b64decode(padded.encode()).decode().partition(":")
            expected = hmac.new(self._secret, stamp.encode(), hashlib.sha256).hexdigest()[:32]
            if not hmac.compare_digest(signature, expected):
                return None
            return self._clock() - float(stamp)
        except (ValueError, UnicodeDecodeError):
            return None

    def check(self, method: str, authorization: str | None) -> AuthOutcome:
        """Check one request's ``Authorization`` header; a missing header is not counted as a failure."""
        if not authorization:
            return AuthOutcome(False, reason="no credentials")
        self._wait_out_penalty()
        outcome = self._verify(method, authorization)
        if not outcome.is_accepted and not outcome.is_stale:
            with self._penalty_lock:
                self._last_failure = self._clock()
        return outcome

    def _wait_out_penalty(self) -> None:
        # One lock for every client: a failure slows down the next attempt whoever makes it (Heritrix's rule).
        with self._penalty_lock:
            if self._last_failure is None:
                return
            remaining = self._last_failure + self.failure_penalty - self._clock()
            if remaining > 0:
                self._sleep(remaining)

    def _verify(self, method: str, authorization: str) -> AuthOutcome:
        scheme, params = parse_auth_params(authorization)
        if scheme.lower() != "digest":
            return AuthOutcome(False, reason=f"scheme {scheme!r} is not Digest")
        missing = [key for key in ("username", "realm", "nonce", "uri", "response") if key not in params]
        if missing:
            return AuthOutcome(False, reason=f"missing {', '.join(missing)}")
        if params["username"] != self.user or params["realm"] != self.realm:
            return AuthOutcome(False, reason="unknown user or realm")
        algorithm = params.get("algorithm", "MD5")
        if algorithm.upper() != "MD5":
            return AuthOutcome(False, reason=f"algorithm {algorithm} not supported")
        qop = params.get("qop")
        if qop is not None and qop != "auth":
            return AuthOutcome(False, reason=f"qop {qop} not supported")
        if qop and not ("nc" in params and "cnonce" in params):
            return AuthOutcome(False, reason="qop=auth needs nc and cnonce")
        expected = digest_response(user=self.user, realm=self.realm, password=self._password, method=method,
                                   uri=params["uri"], nonce=params["nonce"], nc=params.get("nc"),
                                   cnonce=params.get("cnonce"), qop=qop)
        if not hmac.compare_digest(expected, params["response"].lower()):
            return AuthOutcome(False, reason="wrong credentials")
        age = self._nonce_age(params["nonce"])
        if age is None:
            return AuthOutcome(False, reason="nonce not issued by this engine")
        if age > self.nonce_lifetime:
            return AuthOutcome(False, is_stale=True, reason="nonce expired")
        return AuthOutcome(True)
