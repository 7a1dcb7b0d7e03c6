"""System: the home page, harvesters, queue depths per channel, scheduler liveness, users, webhooks."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, render_template

blueprint = Blueprint("system", __name__, template_folder="templates")


@blueprint.route("/")
def home() -> Any:
    """The start page: the sections and what needs attention."""
    return render_template("system/home.html")


# The other pages join the blueprint when their module is imported.
from webui.system import users, views, webhooks  # noqa: E402, F401
