"""Times as people read them in HarvestSuite: UTC, to the second, one format everywhere (pages, API reasons,
harvest states, log lines)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_text(instant: datetime) -> str:
    """``instant`` as "2026-11-23 04:01:55 UTC"; a naive datetime is taken as UTC, as the database stores it."""
    if instant.tzinfo is not None:
        instant = instant.astimezone(UTC)
    return f"{instant:%Y-%m-%d %H:%M:%S} UTC"


def duration_text(seconds: float) -> str:
    """A duration as people say it, to its two largest units: "45 s", "4 min", "2 h 5 min", "3 d 4 h"."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, _ = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"
