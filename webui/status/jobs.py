"""Pages of the status section: jobs."""

from __future__ import annotations

from webui.status import blueprint  # noqa: F401 - routes are added to the section's blueprint
