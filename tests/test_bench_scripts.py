"""Every benchmark script starts: it imports what it uses and answers --help, so a change elsewhere that
takes away something a benchmark imports fails here rather than on the day someone measures. bench/qa.py
also runs at a small size, its job crawled for real."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import in_ci

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize("script", sorted(path.name for path in BENCH.glob("*.py")))
def test_the_benchmark_script_starts(script):
    result = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True,
                            timeout=60, cwd=BENCH.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:")


def test_the_qa_benchmark_times_post_processing_of_a_small_crawled_job():
    """bench/qa.py at a small size: a real crawl by the bundled engine, then post-processing each way."""
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        reason = "nginx is missing (scripts/setup.sh installs nginx-light)"
        if in_ci():
            pytest.fail(f"{reason}; CI=true, so this is a failure, not a skip")
        pytest.skip(reason)
    result = subprocess.run([sys.executable, str(BENCH / "qa.py"), "--pages", "20", "--hosts", "2", "--runs", "1"],
                            capture_output=True, text=True, timeout=300, cwd=BENCH.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "20 of 20 pages captured" in result.stdout
    qa = re.search(r"the QA step \(timed inside\) +([\d.]+) s = ([\d.]+) ms per page = (\d+)% of post-processing",
                   result.stdout)
    assert qa and float(qa.group(1)) > 0 and float(qa.group(2)) > 0, result.stdout
    assert "post-processing without the QA step" in result.stdout and "machine: " in result.stdout


def test_the_browser_benchmark_crawls_a_small_site_both_ways():
    """bench/browser.py at a small size: the engine and the browser crawler each capture every page."""
    from tests.webui.browser import require_browser

    require_browser()
    result = subprocess.run([sys.executable, str(BENCH / "browser.py"), "--pages", "5"], capture_output=True,
                            text=True, timeout=300, cwd=BENCH.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {fields[0]: fields for fields in (line.split() for line in result.stdout.splitlines())
            if fields[:1] in (["engine"], ["browser"]) and fields[1].isdigit()}
    assert rows["engine"][1] == rows["browser"][1] == "5", result.stdout
    # the script-made content of every page is in the browser's WARC and in none of the engine's
    assert rows["browser"][5:8] == ["5", "of", "5"] and rows["engine"][5:8] == ["0", "of", "5"], result.stdout
    assert float(rows["browser"][3]) > 0 and "machine: " in result.stdout
