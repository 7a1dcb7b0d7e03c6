"""A job's entries kept per domain, and a job's own index read from the partitions of its domains alone."""

from __future__ import annotations

import base64
import hashlib

import pytest

from harvestdef.archive import ArchiveStore
from harvestdef.dedup import DedupIndex, entries_name, read_entry_fields, write_entries
from harvestdef.dedup.entries import DedupEntry
from harvestdef.dedup.jobindex import build_job_index
from harvestdef.dedup.partitions import (
    MEMBER_BYTES,
    SHARED,
    directory_name,
    domain_of_entry_url,
    parse_directory,
    read_segment,
    write_partitioned,
)
from harvestdef.errors import DedupFormatError


def digest(text: str) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(text.encode()).digest()).decode("ascii")


LOGO = digest("the shared logo")


def fields(url: str, payload: str, date: str = "20260101120000", offset: int = 0):
    return (digest(payload), url, date, f"<urn:uuid:{hashlib.md5(url.encode()).hexdigest()}>", "a.warc.gz", offset)


def job_entries(run: int, domains: list[str], per_domain: int = 3) -> list[tuple]:
    date = f"2026010{run}120000"
    items = []
    for domain in domains:
        for n in range(per_domain):
            items.append(fields(f"http://www.{domain}/img/{n}.png", f"{domain} {n}", date, n))
        items.append(fields(f"https://{domain}/logo.png", "the shared logo", date))
    return items


def store_job(store: ArchiveStore, tmp_path, harvest_id: int, job_id: int, items: list[tuple],
              own: list[str], partitioned: bool = True) -> None:
    work = tmp_path / f"work-{job_id}"
    work.mkdir()
    data, directory = work / f"{job_id}.gz", work / f"{job_id}.domains"
    if partitioned:
        write_partitioned(items, data, directory, own)
        store.store(directory, harvest_id, job_id, directory_name(job_id))
    else:
        write_entries(data, (DedupEntry(*item) for item in items))
    store.store(data, harvest_id, job_id, entries_name(job_id))
    store.write_checksums(harvest_id, job_id)


def test_a_domain_of_a_url():
    assert domain_of_entry_url("http://www.bbc.co.uk/news?x=1") == "bbc.co.uk"
    assert domain_of_entry_url("https://user@Sub.KB.dk:8443/a#b") == "kb.dk"
    assert domain_of_entry_url("http://10.0.0.7:8080/") == "10.0.0.7"
    assert domain_of_entry_url("http://[::1]/x") == "::1"
    assert domain_of_entry_url("http://xn--bcher-kva.dk/") == "bücher.dk"


def test_entries_in_domain_order_with_a_directory_that_reads_each_domain_alone(tmp_path):
    domains = [f"site{n:03d}.dk" for n in range(120)]
    items = job_entries(1, domains, per_domain=20) + [fields("http://cdn.example.net/x.js", "script")]
    data, directory_path = tmp_path / "7.gz", tmp_path / "7.domains"
    summary = write_partitioned(items, data, directory_path, domains)
    assert summary.entries == len(items) and summary.domains == 121 and summary.shared == 1

    # every reader of entries files still reads it whole: a series of gzip members is one gzip file
    assert sorted(read_entry_fields(data)) == sorted(items + [fields("https://site000.dk/logo.png",
                                                                     "the shared logo", "20260101120000")])
    directory = parse_directory(directory_path.read_text(), directory_path)
    assert directory.data_name == "7.gz"
    assert directory.segments["example.net"].own is False and directory.segments["site007.dk"].own is True
    raw = data.read_bytes()
    members = {(segment.offset, segment.length) for segment in directory.segments.values()}
    assert len(members) > 2, "small domains share members, and the file has more than one"
    assert all(length < len(raw) for _, length in members)
    for domain in ("site000.dk", "site077.dk", "example.net"):
        segment = directory.segments[domain]
        got = list(read_segment(raw[segment.offset:segment.offset + segment.length], segment, data))
        assert sorted(got) == sorted(item for item in items if domain_of_entry_url(item[1]) == domain)
    # the shared partition: the logo, captured under 120 domains, once, with its earliest capture
    shared = directory.segments[SHARED]
    (logo,) = read_segment(raw[shared.offset:shared.offset + shared.length], shared, data)
    assert logo[0] == LOGO and logo[1] == "https://site000.dk/logo.png"
    assert sum(len(line) for line in data.read_bytes().split(b"\n")) > 0 and MEMBER_BYTES == 65536
    assert sorted(p.name for p in tmp_path.iterdir()) == ["7.domains", "7.gz"]


def test_a_cut_member_is_named(tmp_path):
    data, directory_path = tmp_path / "7.gz", tmp_path / "7.domains"
    write_partitioned(job_entries(1, ["kb.dk"]), data, directory_path, ["kb.dk"])
    segment = parse_directory(directory_path.read_text(), directory_path).segments["kb.dk"]
    member = data.read_bytes()[segment.offset:segment.offset + segment.length]
    with pytest.raises(DedupFormatError, match="unreadable"):
        list(read_segment(member[:-9], segment, data))
    with pytest.raises(DedupFormatError, match="not a deduplication partition directory"):
        parse_directory("kb.dk\t0\t1\t0\t1\t1\n", directory_path)


def test_a_jobs_index_holds_its_own_domains_from_the_newest_source_that_has_each(tmp_path):
    store = ArchiveStore(tmp_path / "store")
    store.root.mkdir()
    big = [f"big{n:04d}.dk" for n in range(400)]
    store_job(store, tmp_path, 1, 10, job_entries(1, big + ["small.dk", "moved.dk"], per_domain=10),
              big + ["small.dk", "moved.dk"])
    # run 2: small.dk harvested again by another job; moved.dk not harvested in run 2 at all
    store_job(store, tmp_path, 1, 20, job_entries(2, ["small.dk"]), ["small.dk"])

    built = build_job_index(store, [(1, 20), (1, 10)], ["small.dk", "moved.dk", "new.dk"], tmp_path / "index.sqlite")
    assert (built.domains, built.domains_found) == (3, 2)
    assert built.source_job_ids == (10, 20) and built.unreadable_job_ids == () and built.whole_job_ids == ()
    # what was read: each source's directory, and the members holding small.dk, moved.dk and the shared logo
    def members_of(job: int, names: tuple[str, ...]) -> set[tuple[int, int, int]]:
        path = store.job_path(1, job) / directory_name(job)
        segments = parse_directory(path.read_text(), path).segments
        return {(job, segments[name].offset, segments[name].length) for name in names}

    members = members_of(10, ("moved.dk", SHARED)) | members_of(20, ("small.dk", SHARED))
    directories = sum((store.job_path(1, job) / directory_name(job)).stat().st_size for job in (10, 20))
    assert built.bytes_read == directories + sum(length for _, _, length in members)
    stored_bytes = sum((store.job_path(1, job) / entries_name(job)).stat().st_size for job in (10, 20))
    assert built.bytes_read - directories < stored_bytes / 4, "only the members of its own domains are read"
    with DedupIndex(built.path) as index:
        # small.dk from job 20 (run 2), the newest source holding it
        found = index.lookup(digest("small.dk 1"), "http://www.small.dk/img/1.png")
        assert found is not None and found.date == "20260102120000"
        # moved.dk from job 10, since no newer source holds it
        assert index.lookup(digest("moved.dk 4"), "http://www.moved.dk/img/4.png").date == "20260101120000"
        # nothing of the 400 other domains, but their shared logo for matching by digest
        assert index.lookup(digest("big0001.dk 1"), "http://www.big0001.dk/img/1.png") is None
        assert index.lookup(digest("big0001.dk 1")) is None
        assert index.lookup(LOGO).url == "https://big0000.dk/logo.png"
        assert index.job_ids == (10, 20)
        # moved.dk and its logo, job 10's shared logo, small.dk and its logo (job 20 has no shared partition)
        assert len(index) == built.pairs == 10 + 1 + 1 + 3 + 1


def test_an_unreadable_source_is_left_out_and_an_older_one_gives_its_domains(tmp_path):
    store = ArchiveStore(tmp_path / "store")
    store.root.mkdir()
    store_job(store, tmp_path, 1, 10, job_entries(1, ["kb.dk"]), ["kb.dk"])
    store_job(store, tmp_path, 1, 20, job_entries(2, ["kb.dk"]), ["kb.dk"])
    broken = store.job_path(1, 20) / entries_name(20)
    broken.chmod(0o644)
    broken.write_bytes(broken.read_bytes()[:40])  # the member cut short (a store gone wrong)

    built = build_job_index(store, [(1, 20), (1, 10)], ["kb.dk"], tmp_path / "index.sqlite")
    assert built.unreadable_job_ids == (20,) and built.source_job_ids == (10,) and built.domains_found == 1
    with DedupIndex(built.path) as index:
        assert index.lookup(digest("kb.dk 0"), "http://www.kb.dk/img/0.png").date == "20260101120000"
        assert index.missing_job_ids == (20,)


def test_a_source_stored_before_partitions_is_read_whole_and_filtered(tmp_path):
    store = ArchiveStore(tmp_path / "store")
    store.root.mkdir()
    store_job(store, tmp_path, 1, 10, job_entries(1, ["kb.dk", "other.dk"]), ["kb.dk", "other.dk"],
              partitioned=False)
    built = build_job_index(store, [(1, 10)], ["kb.dk", "absent.dk"], tmp_path / "index.sqlite")
    assert built.whole_job_ids == (10,) and built.domains_found == 1
    with DedupIndex(built.path) as index:
        assert index.lookup(digest("kb.dk 2"), "http://www.kb.dk/img/2.png") is not None
        assert index.lookup(digest("other.dk 2"), "http://www.other.dk/img/2.png") is None
