"""Credentials of the template's credential store, as Heritrix uses them.

HttpAuthenticationCredential (formerly Rfc2617Credential): HTTP Basic or Digest authentication for one
server (``domain``: the server's name, ``host`` or ``host:port``, https without a port being ``host:443``,
as Heritrix's CrawlServer names it) and one ``realm`` (empty: any realm). Heritrix does not offer it before
being asked: a 401 whose challenge names the realm is answered once with the credential (Digest preferred
to Basic, as FetchHTTP.chooseAuthScheme does), and once that worked the credential is the server's and sent
with each of its later requests (Digest with the server's last nonce and a growing nonce count, answered
afresh when the server calls the nonce stale). A credential that fails is not offered to that server again.

HtmlFormCredential: a login form of one server (``domain`` as above), posted once before the server's other
URIs (``loginUri``, its ``formItems`` form-encoded as UTF-8; Heritrix always POSTs, whatever ``httpMethod``
says). The session cookie its answer sets is what logs the crawl in, so it needs the cookie store. The
prerequisites step (prerequisites.py, FormLoginPrerequisite) posts it; this module holds the credentials and
the Basic and Digest arithmetic (harvester.digestauth) and does no I/O.
"""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from harvester.digestauth import authorization_header, parse_auth_params

_CHALLENGE_START = re.compile(r"(?:^|,)\s*(basic|digest|negotiate|ntlm|bearer)\b", re.IGNORECASE)


def server_name(url: str) -> str:
    """Heritrix's CrawlServer key of a URL: its authority (lower case), ``:443`` added to https without a port."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is None:
        return f"{host}:443" if parts.scheme == "https" else host
    if parts.scheme == "http" and port == 80:
        return host
    return f"{host}:{port}"


@dataclass(frozen=True)
class HttpCredential:
    """An HttpAuthenticationCredential bean (its name in the credential store beside, for messages)."""

    name: str
    domain: str
    realm: str
    login: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class FormCredential:
    """An HtmlFormCredential bean; ``login_uri`` canonical."""

    name: str
    domain: str
    login_uri: str
    form_items: tuple[tuple[str, str], ...] = field(repr=False)

    def body(self) -> bytes:
        return urlencode(self.form_items).encode("utf-8")


@dataclass
class _Session:
    """A server whose credential worked: what its next request sends."""

    credential: HttpCredential
    scheme: str                                     # "basic" or "digest"
    challenge: dict[str, str]
    nonce_count: int = 0


def challenges_of(values: Iterable[str]) -> dict[str, dict[str, str]]:
    """The challenges of WWW-Authenticate header values, by scheme (lower case): ``{"digest": {...}}``."""
    found: dict[str, dict[str, str]] = {}
    for value in values:
        starts = [match.start(1) for match in _CHALLENGE_START.finditer(value)]
        for start, end in zip(starts, [*starts[1:], len(value)], strict=True):
            scheme, params = parse_auth_params(value[start:end].rstrip(", "))
            found.setdefault(scheme.lower(), params)
    return found


class HttpAuthentication:
    """Answers servers' 401 challenges with the store's HttpAuthenticationCredentials."""

    def __init__(self, credentials: Iterable[HttpCredential]) -> None:
        self.by_server: dict[str, list[HttpCredential]] = {}
        for credential in credentials:
            self.by_server.setdefault(credential.domain.lower(), []).append(credential)
        self._sessions: dict[str, _Session] = {}
        self._failed: set[tuple[str, str]] = set()   # (server, credential name)

    def covers(self, server: str) -> bool:
        return server in self.by_server

    def authorization(self, server: str, method: str, target: str) -> str | None:
        """The Authorization a request to ``server`` sends without being asked: the credential that worked."""
        session = self._sessions.get(server)
        return _answer(session, method, target) if session is not None else None

    def answer(self, server: str, method: str, target: str, challenge_values: Iterable[str]) -> str | None:
        """The Authorization answering a 401's challenges, or None when there is nothing to answer with."""
        challenges = challenges_of(challenge_values)
        for scheme in ("digest", "basic"):
            params = challenges.get(scheme)
            if params is None or not params.get("realm"):
                continue
            if scheme == "digest" and (not params.get("nonce") or params.get("algorithm", "MD5").upper() != "MD5"):
                continue  # MD5 only (harvester.digestauth); MD5-sess and SHA-256 are not offered
            credential = self._credential_for(server, params["realm"])
            if credential is not None:
                session = _Session(credential, scheme, params)
                self._sessions[server] = session
                return _answer(session, method, target)
        return None

    def outcome(self, server: str, status: int) -> None:
        """After an authenticated request: a 401 means the credential failed, and it is not offered again."""
        session = self._sessions.get(server)
        if session is not None and status == 401:
            del self._sessions[server]
            if session.challenge.get("stale", "").lower() != "true":
                self._failed.add((server, session.credential.name))

    def _credential_for(self, server: str, realm: str) -> HttpCredential | None:
        for credential in self.by_server.get(server, ()):
            if (server, credential.name) in self._failed:
                continue
            if not credential.realm or credential.realm == realm:
                return credential
        return None

    # -- checkpoints ----------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"sessions": {server: {"credential": session.credential.name, "scheme": session.scheme,
                                      "challenge": session.challenge, "nonce_count": session.nonce_count}
                             for server, session in self._sessions.items()},
                "failed": sorted([list(pair) for pair in self._failed])}

    def restore(self, saved: dict) -> None:
        """Put back what ``to_json`` gave, for the credentials the template still has."""
        by_name = {credential.name: credential for group in self.by_server.values() for credential in group}
        self._sessions = {}
        for server, entry in (saved.get("sessions") or {}).items():
            credential = by_name.get(entry.get("credential"))
            if credential is not None:
                self._sessions[server] = _Session(credential, str(entry["scheme"]), dict(entry["challenge"]),
                                                  int(entry.get("nonce_count", 0)))
        self._failed = {(str(server), str(name)) for server, name in saved.get("failed") or []}


def _answer(session: _Session, method: str, target: str) -> str:
    credential = session.credential
    if session.scheme == "basic":
        token = base64.b64encode(f"{credential.login}:{credential.password}".encode()).decode("ascii")
        return f"Basic {token}"
    challenge = session.challenge
    session.nonce_count += 1
    qop = None
    offered = [option.strip().lower() for option in challenge.get("qop", "").split(",") if option.strip()]
    if "auth" in offered:
        qop = "auth"
    return authorization_header(user=credential.login, realm=challenge["realm"], password=credential.password,
                                method=method, uri=target, nonce=challenge["nonce"], qop=qop,
                                nc=f"{session.nonce_count:08x}" if qop else None,
                                cnonce=secrets.token_hex(8) if qop else None, opaque=challenge.get("opaque"))
