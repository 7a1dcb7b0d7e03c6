"""The ``webui`` role of the ``harvestsuite.roles`` entry points: the web UI, which ``harvestsuite demo``
serves in a thread beside the other roles (harvestdef/demo/runner.py).

Loading the entry point imports every module of the web UI and its server, in the thread that loads it: the
demo loads all its roles before it starts their threads (harvester/role.py says why). The web UI imports
its sections as it makes its app (webui/__init__.py), so that ``import webui.commands``, which every
``harvestsuite webui`` command does, stays quick.
"""

from __future__ import annotations

import importlib
import pkgutil

import jinja2.ext  # noqa: F401 - the i18n extension flask-babel adds, which Jinja imports by its name
import waitress  # noqa: F401
import waitress.wasyncore  # noqa: F401

import harvestdef.db.engine  # noqa: F401
import harvestdef.db.guard  # noqa: F401 - imported by create_app
import harvestdef.metrics  # noqa: F401 - the role's metrics endpoint
import webui
from webui.commands import serve

for _module in pkgutil.walk_packages(webui.__path__, "webui."):
    importlib.import_module(_module.name)

__all__ = ["serve"]
