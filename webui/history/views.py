"""Pages of the history section: views."""

from __future__ import annotations

from webui.history import blueprint  # noqa: F401 - routes are added to the section's blueprint
