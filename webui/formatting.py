"""Jinja filters that make figures readable: thousands separators, -1 as "unlimited", sizes in bytes,
times in one format."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Flask

from harvestdef.times import duration_text, utc_text

_UNITS = ("bytes", "KB", "MB", "GB", "TB", "PB")


def count(value: Any) -> str:
    """1234567 -> "1,234,567"; -1 (NetarchiveSuite's unlimited) -> "unlimited"; None -> ""."""
    if value is None or value == "":
        return ""
    if isinstance(value, int | float) and value == -1:
        return "unlimited"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


def size(value: Any) -> str:
    """A byte count in the largest unit that keeps it ≥ 1 (decimal units, as disks are sold): 1.5 GB."""
    if value is None or value == "":
        return ""
    if value == -1:
        return "unlimited"
    amount = float(value)
    for unit in _UNITS:
        if abs(amount) < 1000 or unit == _UNITS[-1]:
            return f"{int(amount):,} {unit}" if unit == "bytes" else f"{amount:,.1f} {unit}"
        amount /= 1000
    raise AssertionError("unreachable")


def when(value: Any) -> str:
    """A time as "2026-11-23 04:01:55 UTC" (stored in UTC, shown in UTC, one format everywhere); None -> ""."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    if isinstance(value, datetime):
        return utc_text(value)
    return str(value)


def duration(value: Any) -> str:
    """Seconds as "45 s", "4 min", "2 h 5 min"; None -> ""."""
    return "" if value is None else duration_text(float(value))


def init_app(app: Flask) -> None:
    app.jinja_env.filters.update(count=count, size=size, when=when, duration=duration)
