"""write_partitioned_sorted: input already in domain order gives write_partitioned's files, byte for byte."""

from __future__ import annotations

import base64
import hashlib

import pytest

from harvestdef.dedup.partitions import (
    MEMBER_BYTES,
    domain_of_entry_url,
    write_partitioned,
    write_partitioned_sorted,
)


def digest(text: str) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(text.encode()).digest()).decode("ascii")


def entries() -> list[tuple]:
    """Several domains over www./cdn./bare hosts, a logo and a pixel under many of them, a pair captured
    twice, and enough text for several gzip members."""
    items = []
    for number in range(400):
        domain = f"site{number:07d}.dk"
        for slot in range(6):
            host = ("www.", "cdn.", "")[slot % 3] + domain
            items.append((digest(f"{domain} {slot}"), f"https://{host}/img/{slot}.png",
                          f"2026010{1 + slot % 3}12{number % 60:02d}00", f"<urn:uuid:{number}-{slot}>",
                          f"1-{number % 7}-x.warc.gz", number * 100 + slot))
        if number % 3 == 0:
            items.append((digest("logo"), f"https://cdn.{domain}/logo.png", f"202601{10 + number % 9:02d}120000",
                          None, None, None))
        if number % 5 == 0:
            # the same pixel under another URL each time, sometimes on the same second
            items.append((digest("pixel"), f"http://{domain}/p.gif?{number}", "20260102120000", "<urn:uuid:p>",
                          "p.warc.gz", number))
        if number % 11 == 0:
            first = items[-1]
            items.append((first[0], first[1], "20251231235959", "<urn:uuid:earlier>", "e.warc.gz", 1))
    items.append((digest("bare ip"), "http://192.0.2.7/x", "20260101000000", None, None, None))
    return items


def in_domain_order(items: list[tuple]) -> list[tuple[str, list[tuple]]]:
    """(domain, its entries) in domain order, each domain's entries by digest, URL and date."""
    grouped: dict[str, list[tuple]] = {}
    for item in items:
        grouped.setdefault(domain_of_entry_url(item[1]), []).append(item)
    return [(domain, sorted(grouped[domain], key=lambda item: item[:3])) for domain in sorted(grouped)]


def test_sorted_input_gives_the_same_bytes_as_write_partitioned(tmp_path) -> None:
    items = entries()
    own = [f"site{number:07d}.dk" for number in range(0, 400, 2)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    expected = write_partitioned(reversed(items), tmp_path / "a" / "7.gz", tmp_path / "a" / "7.domains", own)
    summary = write_partitioned_sorted(iter(in_domain_order(items)), tmp_path / "b" / "7.gz",
                                       tmp_path / "b" / "7.domains", own)
    assert summary == expected
    assert summary.shared == 2 and summary.text_bytes > 2 * MEMBER_BYTES
    for name in ("7.gz", "7.domains"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
    assert sorted(path.name for path in (tmp_path / "b").iterdir()) == ["7.domains", "7.gz"]


def test_no_entries_gives_the_same_bytes(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write_partitioned([], tmp_path / "a" / "1.gz", tmp_path / "a" / "1.domains", [])
    write_partitioned_sorted([], tmp_path / "b" / "1.gz", tmp_path / "b" / "1.domains", [])
    for name in ("1.gz", "1.domains"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()


def test_domains_out_of_order_are_refused_and_leave_nothing(tmp_path) -> None:
    partitions = in_domain_order(entries())
    partitions[10], partitions[30] = partitions[30], partitions[10]
    with pytest.raises(ValueError, match=f"domain '{partitions[11][0]}' is out of order"):
        write_partitioned_sorted(partitions, tmp_path / "1.gz", tmp_path / "1.domains", [])
    assert list(tmp_path.iterdir()) == []


def test_entries_out_of_order_are_refused(tmp_path) -> None:
    partitions = in_domain_order(entries())
    domain, items = partitions[5]
    partitions[5] = (domain, list(reversed(items)))
    with pytest.raises(ValueError, match="out of order"):
        write_partitioned_sorted(partitions, tmp_path / "1.gz", tmp_path / "1.domains", [])
    assert list(tmp_path.iterdir()) == []


def test_a_url_outside_its_domain_is_refused(tmp_path) -> None:
    partitions = in_domain_order(entries())
    partitions[3] = (partitions[3][0], partitions[5][1])
    with pytest.raises(ValueError, match=f"not under the domain '{partitions[3][0]}'"):
        write_partitioned_sorted(partitions, tmp_path / "1.gz", tmp_path / "1.domains", [])
    assert list(tmp_path.iterdir()) == []


def test_a_refused_entry_leaves_nothing(tmp_path) -> None:
    partitions = in_domain_order(entries())
    partitions.append(("zzz.dk", [("sha1:NOT-BASE32", "https://zzz.dk/", "20260101000000", None, None, None)]))
    with pytest.raises(ValueError, match="sha1:BASE32"):
        write_partitioned_sorted(partitions, tmp_path / "1.gz", tmp_path / "1.domains", [])
    assert list(tmp_path.iterdir()) == []


def test_a_domain_without_entries_has_no_segment(tmp_path) -> None:
    partitions = in_domain_order(entries())
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write_partitioned_sorted(partitions, tmp_path / "a" / "1.gz", tmp_path / "a" / "1.domains", [])
    write_partitioned_sorted(partitions[:2] + [("site0000001.dk-empty", [])] + partitions[2:],
                             tmp_path / "b" / "1.gz", tmp_path / "b" / "1.domains", [])
    for name in ("1.gz", "1.domains"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
