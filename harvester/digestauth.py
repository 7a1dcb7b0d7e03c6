"""HTTP Digest authentication's shared arithmetic (RFC 7616, MD5, qop="auth"; RFC 2069 form without qop).

Both halves of the Heritrix 3 REST API use it: the engine's server (``harvester.engine.rest.digest``) to check an
``Authorization`` header, and the client (``harvester.heritrix``) to answer a ``WWW-Authenticate``
challenge. Keeping the header grammar and the response computation here means the two cannot drift apart:
a client that computes the response one way and a server that checks it another would pass their own tests
and fail together.

This module holds pure functions only: no nonces, no secrets, no clock, no sockets. Only MD5 is computed,
since that is what Heritrix 3 offers and what its clients send.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["authorization_header", "digest_response", "md5_hex", "parse_auth_params"]

# key="quoted value" or key=token, comma separated (RFC 7616 §3.4 auth-param).
_AUTH_PARAM = re.compile(r'\s*([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))\s*,?')
_QUOTED_PAIR = re.compile(r"\\(.)")


def md5_hex(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def digest_response(*, user: str, realm: str, password: str, method: str, uri: str, nonce: str,
                    nc: str | None = None, cnonce: str | None = None, qop: str | None = None) -> str:
    """The ``response`` value a client must send (RFC 7616 §3.4.1; RFC 2069 form when qop is absent)."""
    ha1 = md5_hex(f"{user}:{realm}:{password}")
    ha2 = md5_hex(f"{method}:{uri}")
    if qop:
        return md5_hex(f"{ha1}:{nonce}:{nc}:{cnonce}:{qop}:{ha2}")
    return md5_hex(f"{ha1}:{nonce}:{ha2}")


def parse_auth_params(header_value: str) -> tuple[str, dict[str, str]]:
    """Split ``Digest k1="v1", k2=v2`` into the scheme and its parameters (keys lower case, quotes undone)."""
    scheme, _, rest = header_value.strip().partition(" ")
    params: dict[str, str] = {}
    for match in _AUTH_PARAM.finditer(rest):
        key, quoted, token = match.groups()
        params[key.lower()] = _QUOTED_PAIR.sub(r"\1", quoted) if quoted is not None else token
    return scheme, params


def authorization_header(*, user: str, realm: str, password: str, method: str, uri: str, nonce: str,
                         algorithm: str = "MD5", qop: str | None = None, nc: str | None = None,
                         cnonce: str | None = None, opaque: str | None = None) -> str:
    """The ``Authorization`` header value answering a challenge (RFC 7616 §3.4).

    ``nc`` and ``cnonce`` are needed when ``qop`` is given; ``opaque`` is echoed back unchanged, as the RFC
    requires of whatever the server sent.
    """
    response = digest_response(user=user, realm=realm, password=password, method=method, uri=uri,
                               nonce=nonce, nc=nc, cnonce=cnonce, qop=qop)
    header = (f'Digest username="{user}", realm="{realm}", nonce="{nonce}", uri="{uri}", '
              f'algorithm={algorithm}, response="{response}"')
    if qop:
        header += f', qop={qop}, nc={nc}, cnonce="{cnonce}"'
    if opaque is not None:
        header += f', opaque="{opaque}"'
    return header
