"""Fetch failures and truncation: a stall mid-body, a response h11 rejects, length and time truncation,
retries of network errors."""

from __future__ import annotations

import hashlib
from base64 import b32encode

from tests.engine.site import BIG_SIZE, STALL_ANNOUNCED


def test_a_stall_mid_body_is_a_lost_connection_retried_and_never_kept_truncated(crawl, test_site):
    # Heritrix's FetchHTTP counts a read that times out mid-body as a lost connection (-3): a page cut short
    # by a stalled network is not archived as if it were the page
    run = crawl([test_site.url("www.kulturarv.dk", "/stall.bin")],
                overrides={"fetchHttp.soTimeoutMs": 300, "fetchHttp.timeoutSeconds": 20,
                           "frontier.retryDelaySeconds": 0.05, "frontier.maxRetries": 1})
    (line,) = run.lines_for(test_site.url("www.kulturarv.dk", "/stall.bin"))
    assert line[1] == "-3" and line[11] == "2t"
    assert test_site.request_count("www.kulturarv.dk", "/stall.bin") == 2
    assert not [r for r in run.warc_records() if (r[1] or "").endswith("/stall.bin")]
    assert run.controller.status().elapsed_ms < 10_000


def test_a_page_that_stalled_once_is_archived_whole_from_its_retry(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/stall-once.bin")],
                overrides={"fetchHttp.soTimeoutMs": 300, "frontier.retryDelaySeconds": 0.05})
    (line,) = run.lines_for(test_site.url("www.kulturarv.dk", "/stall-once.bin"))
    assert line[1] == "200" and line[2] == str(STALL_ANNOUNCED) and line[11].startswith("1t"), line
    assert "Trunc" not in line[11]
    (record,) = [r for r in run.warc_records() if r[0] == "response" and r[1].endswith("/stall-once.bin")]
    assert record[2].get_header("WARC-Truncated") is None
    assert record[3] == test_site.responses_for("www.kulturarv.dk", "/stall-once.bin")[1]


def test_total_fetch_time_truncates_with_time_trunc(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/stall.bin")],
                overrides={"fetchHttp.soTimeoutMs": 5000, "fetchHttp.timeoutSeconds": 1})
    line = run.lines_for(test_site.url("www.kulturarv.dk", "/stall.bin"))[0]
    assert "timeTrunc" in line[11]


def test_length_truncation(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/big.bin")], overrides={"fetchHttp.maxLengthBytes": 100000})
    line = run.lines_for(test_site.url("www.kulturarv.dk", "/big.bin"))[0]
    assert line[2] == "100000" and "lenTrunc" in line[11]
    record = next(r for r in run.warc_records() if r[0] == "response" and r[1].endswith("/big.bin"))
    assert record[2].get_header("WARC-Truncated") == "length"
    assert len(record[3]) < BIG_SIZE
    # The payload digest is over the payload as kept, the first maxLengthBytes bytes (Heritrix's lenTrunc).
    whole = bytes(range(256)) * (BIG_SIZE // 256) + b"x" * (BIG_SIZE % 256)
    kept = "sha1:" + b32encode(hashlib.sha1(whole[:100000]).digest()).decode("ascii")
    assert record[2].get_header("WARC-Payload-Digest") == kept and line[9] == kept


def test_malformed_response_is_recorded_as_received(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/malformed")])
    line = run.lines_for(test_site.url("www.kulturarv.dk", "/malformed"))[0]
    assert line[1] == "200"
    assert line[6] == "text/html", "the MIME of the head's Content-Type, the bad line among them skipped"
    record = next(r for r in run.warc_records() if r[0] == "response" and r[1].endswith("/malformed"))
    assert record[3] == test_site.responses_for("www.kulturarv.dk", "/malformed")[0]
    assert run.controller.status().exit_status == "FINISHED"


def test_network_errors_are_retried_then_succeed(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/hop/flaky")], overrides={"frontier.retryDelaySeconds": 0.05})
    line = run.lines_for(test_site.url("www.kulturarv.dk", "/hop/flaky"))[0]
    assert line[1] == "200" and line[11].startswith("2t")
    assert test_site.request_count("www.kulturarv.dk", "/hop/flaky") == 3


def test_retries_exhausted_log_the_network_error(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/hop/flaky")],
                overrides={"frontier.retryDelaySeconds": 0.05, "frontier.maxRetries": 1})
    line = run.lines_for(test_site.url("www.kulturarv.dk", "/hop/flaky"))[0]
    assert line[1] == "-3" and line[11] == "2t"


def test_unknown_host_is_a_dns_failure(crawl, test_site):
    run = crawl(["http://not-in-hosts.invalid/"])
    assert run.lines_for("dns:not-in-hosts.invalid")[0][1] == "-1"
    assert run.lines_for("http://not-in-hosts.invalid/")[0][1] == "-6"
