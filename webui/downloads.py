"""The Content-Disposition of every download the web UI sends (RFC 6266 with RFC 8187's ``filename*``).

A name may hold any character but the control characters (harvestdef/validation.py): a template named
``skabelon-模板`` cannot go into a header as it is (HTTP headers are Latin-1, and Werkzeug refuses to
encode the rest: a 500). So the header carries the name twice: ``filename=`` an ASCII fallback for old
clients (every other character, and the quote, backslash, slash and controls, as ``_``), and
``filename*=UTF-8''...`` the name itself, percent-encoded, which every current browser prefers.
"""

from __future__ import annotations

from urllib.parse import quote

# RFC 8187 attr-char besides letters and digits: what may stand unencoded in filename*
_ATTR_CHARACTERS = "!#$&+-.^_`|~"


def ascii_fallback(filename: str) -> str:
    """``filename`` with every character that is not printable ASCII, or is ``"``, ``\\`` or ``/``, as ``_``."""
    return "".join(ch if " " <= ch <= "~" and ch not in '"\\/' else "_" for ch in filename)


def content_disposition(filename: str) -> str:
    """``attachment; filename="fallback"; filename*=UTF-8''percent-encoded`` for ``filename``."""
    encoded = quote(filename.encode("utf-8", "surrogatepass"), safe=_ATTR_CHARACTERS)
    return f"attachment; filename=\"{ascii_fallback(filename)}\"; filename*=UTF-8''{encoded}"


def attachment(filename: str) -> dict[str, str]:
    """The headers of a download named ``filename``."""
    return {"Content-Disposition": content_disposition(filename)}
