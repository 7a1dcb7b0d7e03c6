"""API routes: domains."""

from __future__ import annotations

from webui.api.core import blueprint  # noqa: F401 - routes are added to the one API blueprint
