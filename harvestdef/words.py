"""Counts and names as people read them, for pages, command output and the reasons the scheduler writes:
"1 job", "12,345 jobs"; a stored name such as ``Every_5_minutes`` as "Every 5 minutes".

Only the wording lives here; times are harvestdef.times' and sizes the web UI's (webui/formatting.py).
"""

from __future__ import annotations

# The nouns whose plural is not the noun with an "s"; the others take one.
_IRREGULAR = {"entry": "entries", "day": "days", "child": "children", "index": "indexes"}


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` with thousands separators and ``noun`` in the number it needs: "1 job", "0 jobs",
    "12,345 jobs"; ``many`` is the plural where adding "s" is wrong ("1 entry", "2 entries")."""
    if count == 1:
        return f"1 {noun}"
    return f"{count:,} {many or _IRREGULAR.get(noun) or noun + 's'}"


def spaced(name: str) -> str:
    """A stored name with underscores for spaces, as NetarchiveSuite names its schedules (``Once_a_day``),
    in words: "Once a day". The name itself stays the identifier; this is only how it is shown."""
    return name.replace("_", " ")
