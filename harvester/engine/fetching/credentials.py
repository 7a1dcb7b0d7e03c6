"""Credentials of the template's credential store, as Heritrix uses them.

HttpAuthenticationCredential (also read under Heritrix's older class name, Rfc2617Credential): HTTP Basic or
Digest authentication for one server (``domain``: the server's name, ``host`` or ``host:port``, https
without a port being ``host:443``, as Heritrix's CrawlServer names it) and one ``realm`` (empty: any realm).
Heritrix does not offer it before being asked: a 401 whose challenge names the realm is answered once with
the credential (Digest preferred to Basic, as FetchHTTP.chooseAuthScheme does), and once that worked the
credential is the server's and sent with each of its later requests (Digest with the server's last nonce and
a growing nonce count, answered afresh when the server calls the nonce stale). A credential that fails is
not offered to that server again.

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
    """A credential that worked on a server, for the paths at or below ``scope`` (RFC 7617's protection
    space: the directory of the URI it worked for): what the server's next requests there send."""

    credential: HttpCredential
    scheme: str                                     # "basic" or "digest"
    challenge: dict[str, str]
    scope: str = "/"
    nonce_count: int = 0

    @property
    def realm(self) -> str:
        return self.challenge.get("realm", "")


def _directory(target: str) -> str:
    path = target.split("?", 1)[0]
    return path[:path.rfind("/") + 1] or "/"


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
    """Answers servers' 401 challenges with the store's HttpAuthenticationCredentials, and sends a credential
    that worked with the server's later requests at or below where it worked (one server may have several
    realms in different directories)."""

    def __init__(self, credentials: Iterable[HttpCredential]) -> None:
        self.by_server: dict[str, list[HttpCredential]] = {}
        for credential in credentials:
            self.by_server.setdefault(credential.domain.lower(), []).append(credential)
        self._sessions: dict[str, list[_Session]] = {}
        self._pending: dict[str, _Session] = {}     # server -> the answer of a 401 whose outcome is not known
        self._failed: set[tuple[str, str]] = set()   # (server, credential name)

    def covers(self, server: str) -> bool:
        return server in self.by_server

    def _session_for(self, server: str, target: str) -> _Session | None:
        path = target.split("?", 1)[0]
        covering = [session for session in self._sessions.get(server, ()) if path.startswith(session.scope)]
        return max(covering, key=lambda session: len(session.scope)) if covering else None

    def authorization(self, server: str, method: str, target: str) -> str | None:
        """The Authorization a request sends without being asked: the credential that worked there."""
        session = self._session_for(server, target)
        return _answer(session, method, target) if session is not None else None

    def answer(self, server: str, method: str, target: str, challenge_values: Iterable[str]) -> str | None:
        """The Authorization answering a 401's challenges, or None when there is nothing (more) to answer with.
        A credential sent unasked that the server refused for its realm (not for a stale nonce) has failed,
        and is not offered to the server again (FetchHTTP.handle401)."""
        challenges = challenges_of(challenge_values)
        sent = self._session_for(server, target)
        for scheme in ("digest", "basic"):
            params = challenges.get(scheme)
            if params is None or not params.get("realm"):
                continue
            if scheme == "digest" and (not params.get("nonce") or params.get("algorithm", "MD5").upper() != "MD5"):
                continue  # MD5 only (harvester.digestauth); MD5-sess and SHA-256 are not offered
            if sent is not None and sent.realm == params["realm"] and sent.scheme == scheme:
                self._sessions[server].remove(sent)
                if params.get("stale", "").lower() != "true":
                    self._failed.add((server, sent.credential.name))
            credential = self._credential_for(server, params["realm"])
            if credential is not None:
                session = self._pending[server] = _Session(credential, scheme, params, _directory(target))
                return _answer(session, method, target)
        return None

    def outcome(self, server: str, status: int) -> None:
        """After the answer of a 401: refused again, the credential failed; else it is the server's there."""
        session = self._pending.pop(server, None)
        if session is None:
            return
        if status == 401:
            self._failed.add((server, session.credential.name))
            return
        kept = [other for other in self._sessions.get(server, ())
                if not (other.scope == session.scope and other.realm == session.realm)]
        self._sessions[server] = [*kept, session]

    def _credential_for(self, server: str, realm: str) -> HttpCredential | None:
        for credential in self.by_server.get(server, ()):
            if (server, credential.name) in self._failed:
                continue
            if not credential.realm or credential.realm == realm:
                return credential
        return None

    # -- checkpoints ----------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"sessions": {server: [{"credential": session.credential.name, "scheme": session.scheme,
                                       "challenge": session.challenge, "scope": session.scope,
                                       "nonce_count": session.nonce_count} for session in sessions]
                             for server, sessions in self._sessions.items()},
                "failed": sorted([list(pair) for pair in self._failed])}

    def restore(self, saved: dict) -> None:
        """Put back what ``to_json`` gave, for the credentials the template still has."""
        by_name = {credential.name: credential for group in self.by_server.values() for credential in group}
        self._sessions = {}
        for server, entries in (saved.get("sessions") or {}).items():
            for entry in entries:
                credential = by_name.get(entry.get("credential"))
                if credential is not None:
                    self._sessions.setdefault(server, []).append(_Session(
                        credential, str(entry["scheme"]), dict(entry["challenge"]), str(entry.get("scope", "/")),
                        int(entry.get("nonce_count", 0))))
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
