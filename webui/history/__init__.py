"""History: per-domain harvest history and per-harvest statistics, with CSV export."""

from __future__ import annotations

from flask import Blueprint

blueprint = Blueprint("history", __name__, url_prefix="/history", template_folder="templates")

# The pages join the blueprint when their modules are imported.
from webui.history import views  # noqa: E402, F401
