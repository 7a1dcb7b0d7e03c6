"""Pages of the system section: views."""

from __future__ import annotations

from webui.system import blueprint  # noqa: F401 - routes are added to the section's blueprint
