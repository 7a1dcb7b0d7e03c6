"""Revisits from a deduplication index of an earlier harvest (identical-payload-digest profile)."""

from __future__ import annotations

import hashlib
from base64 import b32encode

from harvestdef.dedup import DedupIndexWriter
from tests.engine.site import DUP_BODY


def test_payload_in_the_index_becomes_a_revisit_of_the_original(crawl, test_site, tmp_path):
    digest = "sha1:" + b32encode(hashlib.sha1(DUP_BODY).digest()).decode()
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    with DedupIndexWriter(job_dir / "dedup.sqlite") as writer:
        writer.add(digest, "http://old.kulturarv.dk/dup.bin", "20250102030405", "<urn:uuid:original>")
    run = crawl([test_site.url("www.kulturarv.dk", "/dup.bin"), test_site.url("www.kulturarv.dk", "/img/1.png")],
                replace={'<property name="indexLocation" value=""/>':
                         '<property name="indexLocation" value="dedup.sqlite"/>'})
    revisit = next(r for r in run.warc_records() if r[1] and r[1].endswith("/dup.bin") and r[0] == "revisit")
    headers = revisit[2]
    assert headers.get_header("WARC-Refers-To-Target-URI") == "http://old.kulturarv.dk/dup.bin"
    assert headers.get_header("WARC-Refers-To-Date") == "2025-01-02T03:04:05Z"
    assert headers.get_header("WARC-Refers-To") == "<urn:uuid:original>"
    assert "duplicate:digest" in run.lines_for(test_site.url("www.kulturarv.dk", "/dup.bin"))[0][11]
    image = [r[0] for r in run.warc_records() if r[1] and r[1].endswith("/img/1.png")]
    assert image == ["response", "request"]


def test_text_payloads_are_never_deduplicated(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/redir/1"), test_site.url("www.bibliotek.no", "/redir/1")])
    kinds = [r[0] for r in run.warc_records() if r[1] and r[1].endswith("/redir/1")]
    assert "revisit" not in kinds


def test_matching_by_url_takes_only_the_same_urls_earlier_capture(crawl, test_site, tmp_path):
    """NetarchiveSuite's templates match by URL: the payload seen under another URL is no revisit."""
    digest = "sha1:" + b32encode(hashlib.sha1(DUP_BODY).digest()).decode()
    seen, unseen = test_site.url("www.kulturarv.dk", "/dup.bin"), test_site.url("www.bibliotek.no", "/dup.bin")
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    with DedupIndexWriter(job_dir / "dedup.sqlite") as writer:
        writer.add(digest, "http://old.kulturarv.dk/dup.bin", "20250102030405", "<urn:uuid:other-url>")
        writer.add(digest, seen, "20250601000000", "<urn:uuid:same-url>")
    run = crawl([seen, unseen],
                replace={'<property name="indexLocation" value=""/>':
                         '<property name="indexLocation" value="dedup.sqlite"/>'
                         '<property name="matchingMethod" value="URL"/>'})
    records = {(r[1], r[0]): r[2] for r in run.warc_records() if r[1] in (seen, unseen)}
    assert records[(seen, "revisit")].get_header("WARC-Refers-To") == "<urn:uuid:same-url>"
    assert records[(seen, "revisit")].get_header("WARC-Refers-To-Target-URI") == seen
    assert (unseen, "response") in records and (unseen, "revisit") not in records
