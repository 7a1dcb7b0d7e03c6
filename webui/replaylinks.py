"""Links to the replay service (pywb), made in one place for every page that shows a captured URL.

The links point at the replay service's own origin (``harvestsuite.replay.url``), never at the web UI's:
replayed pages run the archived sites' scripts, which must not run with the UI's cookies. Pages open them
in a new tab with ``rel="noopener"``. With no replay URL set every function answers None and pages show no
link. pywb's URL forms: ``<replay>/<collection>/<14-digit timestamp>/<url>`` (the capture nearest that
time) and ``<replay>/<collection>/*/<url>`` (its calendar of captures).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flask import Flask

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


def crawl_log_capture_link(replay_url: str, line: str) -> str | None:
    """The replay of a crawl.log line's URL at its own fetch time, for a 2xx line; None for any other.

    Heritrix's fields: 0 the log time, 1 the fetch status, 3 the URL, 8 the fetch start
    (``yyyyMMddHHmmssSSS+duration``), which is the capture's WARC-Date; the log time stands in without it.
    """
    fields = line.split()
    if len(fields) < 4 or not fields[1].isdigit() or not 200 <= int(fields[1]) < 300:
        return None
    moment = fields[8].split("+", 1)[0] if len(fields) > 8 and fields[8][:14].isdigit() else fields[0]
    return capture_link(replay_url, fields[3], moment)


def init_app(app: Flask, replay_url: str) -> None:
    """Give templates ``capture_link``, ``calendar_link`` and ``crawl_log_capture_link`` bound to the
    replay URL, so a template never sees the setting and an empty one means no link."""
    app.jinja_env.globals.update(
        capture_link=lambda url, moment, collection=ALL_COLLECTION: capture_link(replay_url, url, moment,
                                                                                collection),
        calendar_link=lambda url, collection=ALL_COLLECTION: calendar_link(replay_url, url, collection),
        crawl_log_capture_link=lambda line: crawl_log_capture_link(replay_url, line),
    )
