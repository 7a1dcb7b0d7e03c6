"""Links to the replay service (pywb), made in one place for every page that shows a captured URL.

The links point at the replay service's own origin (``harvestsuite.replay.url``), never at the web UI's:
replayed pages run the archived sites' scripts, which must not run with the UI's cookies. Pages open them
in a new tab with ``rel="noopener"``. With no replay URL set every function answers None and pages show no
link. pywb's URL forms: ``<replay>/<collection>/<14-digit timestamp>/<url>`` (the capture nearest that
time) and ``<replay>/<collection>/*/<url>`` (its calendar of captures).
"""

from __future__ import annotations

from datetime import UTC, datetime

ALL_COLLECTION = "all"


def timestamp14(moment: datetime | str | None) -> str | None:
    """pywb's 14-digit UTC timestamp of ``moment`` (a datetime, naive = UTC, or any text with its digits)."""
    if moment is None:
        return None
    if isinstance(moment, datetime):
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC)
        return moment.strftime("%Y%m%d%H%M%S")
    digits = "".join(character for character in moment if character.isdigit())[:14]
    return digits.ljust(14, "0") if len(digits) >= 4 else None


def capture_link(replay_url: str, url: str, moment: datetime | str | None,
                 collection: str = ALL_COLLECTION) -> str | None:
    """The replay of ``url`` as captured nearest ``moment``; None without a replay URL or a time."""
    stamp = timestamp14(moment)
    if not replay_url or not url or stamp is None:
        return None
    return f"{replay_url.rstrip('/')}/{collection}/{stamp}/{url}"


def calendar_link(replay_url: str, url: str, collection: str = ALL_COLLECTION) -> str | None:
    """pywb's calendar of every capture of ``url``; None without a replay URL."""
    if not replay_url or not url:
        return None
    return f"{replay_url.rstrip('/')}/{collection}/*/{url}"
