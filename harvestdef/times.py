"""Times as people read them in HarvestSuite: UTC, to the second, one format everywhere (pages, API reasons,
harvest states, log lines)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_text(instant: datetime) -> str:
    """``instant`` as "2026-11-23 04:01:55 UTC"; a naive datetime is taken as UTC, as the database stores it."""
    if instant.tzinfo is not None:
        instant = instant.astimezone(UTC)
    return f"{instant:%Y-%m-%d %H:%M:%S} UTC"
