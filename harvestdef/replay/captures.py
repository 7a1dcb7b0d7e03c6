"""Asking the replay service (pywb) which captures it holds of a URL, and where it replays one.

pywb answers ``<replay>/<collection>/cdx?url=<url>&output=json`` with one JSON object per line per capture
(its CDX server API: ``timestamp``, ``url``, ``status``, ``mime``, ``filename``, ...), from the same stored
CDXJ it replays from. A job's own capture of a URL is the one whose ``filename`` is one of the job's
WARCs: a harvest's collection holds every run's. ``replay_url_of`` is where pywb replays that capture, as
people see it: pywb's banner above a frame with the replayed page.

Network and HTTP failures become ReplayUnavailableError here, naming the address: the callers tell a
replay service that is down from a URL that was not captured (None).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Collection
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from harvestdef.errors import ReplayUnavailableError

# pywb's lines for one URL are a few per run of a harvest; far more is not a CDX answer.
MAX_ANSWER_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Capture:
    """One capture as pywb's CDX API lists it: its 14-digit timestamp, URL, HTTP status ("-" for a revisit
    pywb did not resolve) and the WARC file holding it."""

    timestamp: str
    url: str
    status: str
    filename: str


def _get(url: str, timeout: float) -> tuple[int, bytes]:
    parts = urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.hostname or "", parts.port, timeout=timeout)
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        response = connection.getresponse()
        return response.status, response.read(MAX_ANSWER_BYTES + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise ReplayUnavailableError(f"the replay service at {url} does not answer: {exc}") from exc
    finally:
        connection.close()


def check_answers(replay_url: str, timeout: float) -> None:
    """:raise ReplayUnavailableError: the replay service at ``replay_url`` does not answer, or with 5xx."""
    status, _ = _get(replay_url.rstrip("/") + "/", timeout)
    if status >= 500:
        raise ReplayUnavailableError(f"the replay service at {replay_url} answers HTTP {status}")


def captures_of(replay_url: str, collection: str, url: str, timeout: float) -> list[Capture]:
    """Every capture of ``url`` in ``collection``, oldest first.

    :raise ReplayUnavailableError: pywb does not answer, or not with its CDX lines.
    """
    query = urlencode({"url": url, "output": "json"})
    address = f"{replay_url.rstrip('/')}/{collection}/cdx?{query}"
    status, body = _get(address, timeout)
    if status == 404 and not body.strip():
        return []
    if status != 200 or len(body) > MAX_ANSWER_BYTES:
        raise ReplayUnavailableError(f"the replay service's CDX API at {address} answered HTTP {status} "
                                     f"with {len(body)} bytes")
    found = []
    for line in body.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            fields = json.loads(line)
        except ValueError as exc:
            raise ReplayUnavailableError(f"the replay service's CDX API at {address} answered a line that is "
                                         f"not JSON: {line[:200]!r}") from exc
        if isinstance(fields, dict) and fields.get("timestamp") and fields.get("filename"):
            found.append(Capture(str(fields["timestamp"]), str(fields.get("url", url)),
                                 str(fields.get("status", "-")), str(fields["filename"])))
    return sorted(found, key=lambda capture: capture.timestamp)


def job_capture(replay_url: str, collection: str, url: str, warc_names: Collection[str],
                timeout: float) -> Capture | None:
    """The first capture of ``url`` stored in one of ``warc_names`` (a job's WARCs); None if it has none."""
    return next((capture for capture in captures_of(replay_url, collection, url, timeout)
                 if capture.filename in warc_names), None)


def replay_url_of(replay_url: str, collection: str, timestamp: str, url: str) -> str:
    """pywb's replay of ``url`` as captured at ``timestamp`` in ``collection``."""
    return f"{replay_url.rstrip('/')}/{collection}/{timestamp}/{url}"
