"""Harvest status: jobs, running jobs with their progress, job detail, why a harvest waits."""

from __future__ import annotations

from flask import Blueprint

blueprint = Blueprint("status", __name__, url_prefix="/status", template_folder="templates")

# The pages join the blueprint when their modules are imported.
from webui.status import control, files, jobs  # noqa: E402, F401
