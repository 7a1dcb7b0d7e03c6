"""Selection's rows come from the database unsorted; ordering.ArrivingRows puts them into tie-break order
(domain name, configuration name, seed list id, code-point order) and folds each configuration's seed lists
into one. Checked against Python's own sort of the same rows, with the cases the numpy prefix sort must
hand to the slow path: names longer than the prefix sharing it, a name that is another's prefix, names of
exactly the prefix's length, non-ASCII names, several seed lists and several configurations of a domain."""

from __future__ import annotations

import random

import numpy as np

from scheduler.jobgen.expectation import ExpectationParams
from scheduler.jobgen.memberseeds import MemberSeeds
from scheduler.jobgen.ordering import COLUMNS, PREFIX_BYTES, ArrivingRows
from scheduler.jobgen.packing import Candidates, HarvestLimits


def _domain_names(draw: random.Random) -> list[str]:
    shared = "kommune-" * 3  # longer than the prefix
    names = [f"{draw.choice('abcdefgh')}{draw.randrange(10**6)}.dk" for _ in range(150)]
    names += [f"{shared}{draw.randrange(1000)}.dk" for _ in range(40)]
    names += ["a" * PREFIX_BYTES, "a" * (PREFIX_BYTES - 1), "a" * (PREFIX_BYTES + 1), "a" * PREFIX_BYTES + "b"]
    names += ["æblegrød.dk", "ærø.dk", "øresund.dk", "åbenhed.dk", "中文网站.cn", "zz.dk", "ÿ.dk", "z" * 40 + "ø.dk",
              "z" * 40 + "a.dk", "bücher.de"]
    return sorted(set(names))


def _rows(draw: random.Random) -> list[dict]:
    """One row per (configuration, seed list), as the summary query yields them."""
    rows, config_id, seedlist_id = [], 0, 0
    for domain_id, domain in enumerate(_domain_names(draw), start=1):
        traps = ".*/x/.*" if draw.random() < 0.1 else None
        for config_name in draw.sample(["defaultconfig", "deep", "Deep", "ærlig", "a"], draw.choice([1, 1, 1, 2, 3])):
            config_id += 1
            configuration = {"config_id": config_id, "domain": domain_id, "config_name": config_name,
                             "domain_name": domain, "traps": traps, "max_objects": draw.choice([-1, 0, 100]),
                             "max_bytes": draw.choice([-1, 10**6, 10**9]), "best_objects": draw.randrange(500),
                             "best_bytes": draw.randrange(10**8), "best_stop": draw.choice([-1, 0, 1, 2])}
            for _ in range(draw.choice([1, 1, 1, 2, 3])):
                seedlist_id += draw.randrange(1, 5)
                rows.append(configuration | {"seedlist_id": seedlist_id, "text": f"http://{domain}/{seedlist_id}"})
    return rows


def _arrive(rows: list[dict], candidates: Candidates, batch: int) -> ArrivingRows:
    arriving = ArrivingRows()
    for start in range(0, len(rows), batch):
        part = rows[start:start + batch]
        columns = {name: np.array([row[name] for row in part], dtype=np.int64) for name in COLUMNS
                   if name not in ("group", "name")}
        columns["group"] = np.zeros(len(part), dtype=np.int64)
        columns["name"] = np.array(candidates.name_numbers([row["config_name"] for row in part]), dtype=np.int64)
        arriving.add(columns, [row["domain_name"] for row in part], [row["traps"] for row in part],
                     [row["text"] for row in part])
    return arriving


def test_rows_in_any_order_come_out_in_tie_break_order_with_their_seed_lists_folded():
    draw = random.Random(7)
    rows = _rows(draw)
    expected_order: list[int] = []
    expected_texts: dict[int, list[str]] = {}
    for row in sorted(rows, key=lambda row: (row["domain_name"], row["config_name"], row["seedlist_id"])):
        if row["config_id"] not in expected_texts:
            expected_order.append(row["config_id"])
        expected_texts.setdefault(row["config_id"], []).append(row["text"])
    by_config = {row["config_id"]: row for row in rows}
    for batch in (1, 7, 1000):
        shuffled = rows[:]
        draw.shuffle(shuffled)
        candidates = Candidates(HarvestLimits(True, -1, 10**7), ExpectationParams())
        candidates.group_number("default_orderxml", (0,))
        seeds = MemberSeeds()
        _arrive(shuffled, candidates, batch).into(candidates, seeds)
        assert list(candidates.config_id) == expected_order
        assert [seeds.text([index]) for index in range(len(seeds))] == [
            "\n".join(expected_texts[config_id]) for config_id in expected_order]
        assert {index: trap for index, trap in seeds.traps.items()} == {
            index: (by_config[config_id]["domain_name"], by_config[config_id]["traps"])
            for index, config_id in enumerate(expected_order) if by_config[config_id]["traps"]}
        for column in ("domain", "max_objects", "max_bytes", "best_objects", "best_bytes", "best_stop"):
            assert list(getattr(candidates, column)) == [by_config[config_id][column] for config_id in expected_order]
        assert [candidates.names[number] for number in candidates.name] == [
            by_config[config_id]["config_name"] for config_id in expected_order]


def test_candidates_added_after_earlier_ones_keep_their_indexes():
    """into() appends: candidates and seeds already there keep their indexes, and traps count from them."""
    draw = random.Random(3)
    rows = _rows(draw)
    candidates = Candidates(HarvestLimits(True, -1, 10**7), ExpectationParams())
    candidates.group_number("default_orderxml", (0,))
    seeds = MemberSeeds()
    candidates.add_flat(10**6, 10**6, "default_orderxml", (0,), "defaultconfig", -1, -1, 0, 0, -1)
    seeds.add("http://first.dk/", "first.dk", ".*/y/.*")
    _arrive(rows, candidates, 50).into(candidates, seeds)
    assert candidates.config_id[0] == 10**6 and seeds.text([0]) == "http://first.dk/"
    assert seeds.traps[0] == ("first.dk", ".*/y/.*")
    assert len(candidates) == len(seeds) == 1 + len({row["config_id"] for row in rows})
    assert all(index >= 1 for index in seeds.traps if index != 0)


def test_no_rows_add_nothing():
    candidates = Candidates(HarvestLimits(True), ExpectationParams())
    seeds = MemberSeeds()
    ArrivingRows().into(candidates, seeds)
    assert len(candidates) == len(seeds) == 0
