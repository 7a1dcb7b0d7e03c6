"""Every benchmark script starts: it imports what it uses and answers --help, so a change elsewhere that
takes away something a benchmark imports fails here rather than on the day someone measures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize("script", sorted(path.name for path in BENCH.glob("*.py")))
def test_the_benchmark_script_starts(script):
    result = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True,
                            timeout=60, cwd=BENCH.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:")
