"""``harvestsuite demo``: watch a harvest being scheduled, split, crawled, indexed and reported."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=Path("harvestsuite-demo"), show_default=True,
              help="Working directory: database, queue, archive store and settings; a rerun continues in it.")
@click.option("--port", type=click.IntRange(1, 65534), default=8080, show_default=True,
              help="Port of the web UI on 127.0.0.1; the replay service takes the next one.")
@click.option("--pywb-venv", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="pywb's virtual environment for replay (default: .venv-pywb beside the environment "
                   "HarvestSuite runs from, where scripts/setup.sh builds it).")
def demo(directory: Path, port: int, pywb_venv: Path | None) -> None:
    """Run the scheduler, a harvest controller with the bundled crawl engine and the web UI in one process,
    on SQLite and the embedded queue in DIR, harvesting a generated demo website, until Ctrl-C. pywb
    replays what it harvested on the port after the web UI's (without pywb, the demo runs without replay).

    It reads none of the usual settings: its own are written to DIR/settings.toml at every start, so
    `harvestsuite --config DIR/settings.toml jobs list` and the other commands work on the demo's data.
    """
    from harvestdef.demo.runner import Demo

    code = Demo(directory, port, pywb_venv).run()
    if code:
        raise SystemExit(code)
