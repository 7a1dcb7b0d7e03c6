"""A wheel of HarvestSuite installed where no source checkout is has every file it reads at run time.

The wheel is built from a copy of the working tree (so build/ and *.egg-info never appear in the checkout)
with this interpreter's setuptools and no build isolation, so nothing is downloaded. It is installed into a
fresh virtual environment whose own site-packages holds only the wheel; the dependencies come from this
interpreter's site-packages through a .pth file (a venv made with ``--system-site-packages`` from inside a
venv would see the base interpreter's packages, not ours). The test then runs that environment's
``harvestsuite db init`` outside the checkout.

Without the setuptools that pyproject.toml's build-system asks for, the test skips saying so; with
CI=true it fails instead.
"""

from __future__ import annotations

import os
import shutil
import site
import sqlite3
import subprocess
import sys
import tomllib
import zipfile
from contextlib import closing
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.servers import in_ci

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = ("harvestdef", "harvester", "scheduler", "webui")
# What a working tree holds that no build reads: version control, environments, caches and run output.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
                                    ".pytest_cache", ".ruff_cache", "*.db", "*.db-wal", "*.db-shm",
                                    "harvestsuite-data", "out")


def build_tool_problem() -> str | None:
    """Why this interpreter cannot build the wheel offline (a build-system requirement it lacks), or None."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    for text in requires:
        requirement = Requirement(text)
        try:
            installed = version(requirement.name)
        except PackageNotFoundError:
            return f"{requirement.name} is not installed in {sys.prefix} (pyproject.toml's build-system: {text})"
        if not requirement.specifier.contains(installed, prereleases=True):
            return f"{requirement.name} {installed} in {sys.prefix} does not satisfy {text} (run scripts/setup.sh)"
    return None


def run(command: list[str | Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    # Nothing may lead the installed environment back to the checkout or to a developer's settings.
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("HARVESTSUITE") and key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    result = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{command} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    problem = build_tool_problem()
    if problem is not None:
        if in_ci():
            pytest.fail(f"cannot build the wheel: {problem}; CI=true, so this is a failure, not a skip")
        pytest.skip(f"cannot build the wheel: {problem}")
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE, symlinks=True)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "-q", "-w", work / "dist", source], cwd=work)
    (built,) = (work / "dist").glob("harvestsuite-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed; returns its bin directory."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    run([sys.executable, "-m", "venv", venv], cwd=venv.parent)
    bin_dir = venv / "bin"
    purelib = run([bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                  cwd=venv.parent).stdout.strip()
    Path(purelib, "harvestsuite-test-dependencies.pth").write_text(
        "".join(f"{directory}\n" for directory in site.getsitepackages()), encoding="utf-8")
    run([bin_dir / "python", "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check",
         "-q", wheel], cwd=venv.parent)
    return bin_dir


def source_files() -> set[str]:
    """The files of the packages' source trees, as paths inside the wheel."""
    found = {f"harvestdef/crawl_templates/{path.name}" for path in (ROOT / "templates").glob("*.cxml")}
    for package in PACKAGE_DIRS:
        for path in (ROOT / package).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found.add(path.relative_to(ROOT).as_posix())
    return found


def test_wheel_holds_every_module_and_data_file_of_the_source_tree(wheel):
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
    missing = sorted(source_files() - in_wheel)
    assert not missing, (
        "the wheel lacks these files; a new package directory goes into [tool.setuptools] packages and a new kind "
        f"of data file into [tool.setuptools.package-data] in pyproject.toml: {missing}")


def test_installed_wheel_runs_db_init_with_the_default_crawl_templates(installed, tmp_path):
    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    location = run([installed / "python", "-c",
                    "import harvestdef, harvestdef.db.defaults as d; print(harvestdef.__file__); "
                    "print(d.default_template_files()[0])"], cwd=elsewhere).stdout.splitlines()
    venv = installed.parent
    assert Path(location[0]).is_relative_to(venv), f"harvestdef was imported from {location[0]}, not the wheel"
    assert Path(location[1]).is_relative_to(venv), f"the crawl templates were read from {location[1]}"

    database = tmp_path / "harvest.db"
    result = run([installed / "harvestsuite", "--set", f"harvestsuite.database.url=sqlite:///{database}",
                  "db", "init"], cwd=elsewhere)
    assert "created" in result.stdout

    expected = {path.stem: path.read_text(encoding="utf-8") for path in (ROOT / "templates").glob("*.cxml")}
    assert expected, "templates/ holds no crawl template"
    with closing(sqlite3.connect(database)) as conn:
        stored = dict(conn.execute("SELECT name, orderxml FROM ordertemplates"))
    assert stored == expected
