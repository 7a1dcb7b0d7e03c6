"""Pages of the definitions section: domains."""

from __future__ import annotations

from webui.definitions import blueprint  # noqa: F401 - routes are added to the section's blueprint
