"""Definitions: domains, configurations, seed lists, crawl templates, schedules, harvests, crawler traps,
extended fields, harvest channels."""

from __future__ import annotations

from flask import Blueprint

blueprint = Blueprint("definitions", __name__, url_prefix="/definitions", template_folder="templates")

# The pages join the blueprint when their modules are imported.
from webui.definitions import (  # noqa: E402, F401
    channels,
    crawltemplates,
    domains,
    extendedfields,
    harvests,
    schedules,
    summaries,
    traps,
)
