"""Who may import whom (docs/architecture.md, Packages and who imports whom): read from the source with ast, so
a new module is checked too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# package -> module prefixes it must never import
FORBIDDEN = {
    "harvestdef": ("scheduler", "harvester", "webui"),
    "scheduler": ("harvester", "webui"),
    # harvester nodes never connect to the harvest database: nothing of it, not even its schema
    "harvester": ("scheduler", "webui", "harvestdef.db", "harvestdef.repositories", "sqlalchemy", "psycopg"),
    "webui": ("scheduler", "harvester"),
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_only_what_the_design_allows(package):
    offences = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in imported_modules(path):
            if any(module == banned or module.startswith(banned + ".") for banned in FORBIDDEN[package]):
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offences, "\n".join(offences)


def test_heritrix_protocol_room_imports_nothing_else_of_harvester():
    """harvester/heritrix3/ is Heritrix 3's protocol that the client and the bundled engine both import: it
    must not import either of them (nor anything else of harvester), or the two would no longer share it."""
    offences = []
    for path in sorted((ROOT / "harvester" / "heritrix3").rglob("*.py")):
        for line, module in imported_modules(path):
            if module.startswith("harvester") and not module.startswith("harvester.heritrix3"):
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offences, "\n".join(offences)


def test_a_harvester_process_loads_nothing_of_the_harvest_database_even_through_harvestdef():
    """The rule above reads each module's own imports; a harvestdef module that harvester may import could still
    import a repository. A fresh interpreter that loads the controller, its commands and the engine must hold no
    module of harvestdef.db or harvestdef.repositories afterwards."""
    import subprocess
    import sys

    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, harvester.controller, harvester.commands, harvester.engine.cli; "
                               "print('\\n'.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    assert [name for name in loaded if name.startswith(("harvestdef.db", "harvestdef.repositories"))] == []


def test_every_package_of_the_source_is_installed():
    """pyproject.toml lists the packages setuptools installs; a package missing there imports in a checkout
    and is absent from a wheel (the deployment test installs one)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for package in FORBIDDEN for init in (ROOT / package).rglob("__init__.py")}
    assert found - listed == set()
