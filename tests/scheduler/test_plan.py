"""The offline planner: `harvestsuite jobgen plan FILE.json`, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harvestdef.errors import PlanInputError
from scheduler.jobgen.plan import plan


def run_plan(tmp_path: Path, document: object) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "harvestdef", "jobgen", "plan", str(path)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})


def config(domain, max_bytes=1_000_000_000, history=None, name="defaultconfig", template="default_orderxml"):
    item = {"domain": domain, "name": name, "template": template, "max_objects": -1, "max_bytes": max_bytes}
    if history is not None:
        item["history"] = history
    return item


def test_plan_output_format_and_figures(tmp_path):
    document = {
        "harvest": {"type": "snapshot", "max_objects": -1, "max_bytes": 100_000_000},
        "settings": {"maxRelativeSizeDifference": 100},
        "configs": [
            config("kb.dk", history=[{"objects": 100, "bytes": 1, "stop_reason": "DOWNLOAD_COMPLETE",
                                      "date": "1980-01-01T00:00:00Z"}]),
            config("dr.dk"),
            config("tv2.dk", max_bytes=50_000_000),
        ],
    }
    done = run_plan(tmp_path, document)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    # kb.dk: 1 byte per object trusted (100 objects), maximum 100,000,000, completed: 100 + (1e8 - 100) / 10
    kb = {"domain": "kb.dk", "name": "defaultconfig", "expected_objects": 100 + (100_000_000 - 100) // 10}
    assert answer["jobs"][0] == {"template": "default_orderxml", "max_objects_per_domain": -1,
                                 "max_bytes_per_domain": 100_000_000, "expected_total": kb["expected_objects"],
                                 "configs": [kb]}
    # dr.dk (100 MB / 38,000 = 2631) cannot join kb.dk's job (over maxTotalSize); tv2.dk has a lower limit
    assert answer["jobs"][1]["configs"] == [{"domain": "dr.dk", "name": "defaultconfig", "expected_objects": 2631}]
    assert answer["jobs"][2]["max_bytes_per_domain"] == 50_000_000
    assert answer["jobs"][2]["configs"][0]["expected_objects"] == 50_000_000 // 38_000
    assert len(answer["jobs"]) == 3


def test_plan_settings_change_the_packing():
    configs = [config(f"d{i}.dk") for i in range(5)]
    base = {"harvest": {"type": "snapshot", "max_objects": -1, "max_bytes": 10_000_000}, "configs": configs}
    assert len(plan(base)["jobs"]) == 1
    assert len(plan({**base, "settings": {"fixedDomainCountSnapshot": 2}})["jobs"]) == 3
    assert len(plan({**base, "settings": {"class": "FixedDomainConfigurationCountJobGenerator",
                                          "fixedDomainCountSnapshot": 4}})["jobs"]) == 2


def test_plan_ties_keep_input_order_and_selective_limits_are_per_configuration():
    document = {"harvest": {"type": "selective"},
                "configs": [config("b.dk", 5_000_000), config("a.dk", 5_000_000), config("c.dk", 7_000_000)]}
    jobs = plan(document)["jobs"]
    assert [[c["domain"] for c in job["configs"]] for job in jobs] == [["c.dk"], ["b.dk", "a.dk"]]
    assert [job["max_bytes_per_domain"] for job in jobs] == [7_000_000, 5_000_000]


def test_plan_history_order_uses_dates_not_input_order():
    older = {"objects": 900, "bytes": 900 * 38_000, "stop_reason": "SIZE_LIMIT", "date": "2020-01-01T00:00:00Z"}
    newer = {"objects": 10, "bytes": 10 * 38_000, "stop_reason": "DOWNLOAD_COMPLETE", "date": "2024-01-01T00:00:00Z"}
    document = {"harvest": {"type": "snapshot", "max_objects": -1, "max_bytes": -1},
                "configs": [config("a.dk", -1, [older, newer])]}
    # the newest row is complete, so the walk stops there: best = 10 objects, 10 + (5000 - 10) / 10
    assert plan(document)["jobs"][0]["configs"][0]["expected_objects"] == 10 + 4990 // 10


def test_plan_reports_every_error_with_its_json_path(tmp_path):
    document = {
        "harvest": {"type": "broad", "max_objects": "many", "max_bytes": 5},
        "settings": {"maxTotalSize": 10, "noSuchSetting": 1, "splitByObjectLimit": 3},
        "configs": [config("a.dk"), {"domain": "b.dk", "name": "x", "template": "t", "max_objects": -1},
                    config("c.dk"), config("d.dk", history=[{"objects": 1, "bytes": 2, "date": "2020-01-01",
                                                             "stop_reason": "FINISHED"}])],
    }
    done = run_plan(tmp_path, document)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    for path in ("harvest.type", "harvest.max_objects", "settings.noSuchSetting", "settings.splitByObjectLimit",
                 "configs[1].max_bytes", "configs[3].history[0].stop_reason"):
        assert f"{path}:" in done.stderr, path
    assert "settings.maxTotalSize" not in done.stderr
    with pytest.raises(PlanInputError) as caught:
        plan(document)
    assert [path for path, _ in caught.value.errors] == [
        "harvest.type", "harvest.max_objects", "settings.noSuchSetting", "settings.splitByObjectLimit",
        "configs[1].max_bytes", "configs[3].history[0].stop_reason"]


def test_plan_rejects_malformed_json_and_wrong_types(tmp_path):
    done = run_plan(tmp_path, "{not json")
    assert done.returncode == 2 and "not valid JSON" in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(PlanInputError) as caught:
        plan({"harvest": {"type": "snapshot", "max_objects": True, "max_bytes": -7}, "configs": {}})
    assert caught.value.errors == [("harvest.max_objects", "expected an integer, got a boolean"),
                                   ("harvest.max_bytes", "must be -1 (unlimited) or at least 0, got -7"),
                                   ("configs", "expected a list, got an object")]
