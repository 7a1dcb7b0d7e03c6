"""A crawl of the test site: WARC records equal to what the server sent, crawl.log columns, robots, traps,
redirects, chunked payload digests and revisits within the job."""

from __future__ import annotations

import hashlib
from base64 import b32encode

from tests.engine.site import DUP_BODY


def _sha1(data: bytes) -> str:
    return "sha1:" + b32encode(hashlib.sha1(data).digest()).decode()


HTTP11 = {"fetchHttp.useHTTP11": "true", "fetchHttp.sendConnectionClose": "false"}


def test_response_records_are_the_bytes_the_server_sent(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/")])
    status = run.controller.status()
    assert status.controller_state == "FINISHED" and status.exit_status == "FINISHED"
    responses = {uri: block for kind, uri, _, block in run.warc_records() if kind == "response"}
    page = test_site.url("www.kulturarv.dk", "/page/1")
    assert responses[page] == test_site.responses_for("www.kulturarv.dk", "/page/1")[0]
    chunked = test_site.url("www.kulturarv.dk", "/chunked.html")
    sent = test_site.responses_for("www.kulturarv.dk", "/chunked.html")[0]
    assert responses[chunked] == sent and b"Transfer-Encoding" not in sent  # HTTP/1.0: never chunked
    requests = {uri: block for kind, uri, _, block in run.warc_records() if kind == "request"}
    # Heritrix's defaults: HTTP/1.0, Connection: close, Referer, its Accept header, no Accept-Encoding.
    assert requests[page].startswith(b"GET /page/1 HTTP/1.0\r\nHost: www.kulturarv.dk:")
    assert b"\r\nConnection: close\r\n" in requests[page]
    assert f"\r\nReferer: {test_site.url('www.kulturarv.dk', '/')}\r\n".encode() in requests[page]
    assert b"\r\nAccept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n" in requests[page]
    assert b"Accept-Encoding" not in requests[page]
    robots = requests[test_site.url("www.kulturarv.dk", "/robots.txt")]
    assert b"Referer" not in robots  # a prerequisite carries none


def test_http11_compression_and_no_referer_when_configured(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/")],
                overrides={**HTTP11, "fetchHttp.acceptCompression": "true", "fetchHttp.sendReferer": "false"})
    requests = {uri: block for kind, uri, _, block in run.warc_records() if kind == "request"}
    page = requests[test_site.url("www.kulturarv.dk", "/page/1")]
    assert page.startswith(b"GET /page/1 HTTP/1.1\r\n") and b"\r\nAccept-Encoding: gzip,deflate\r\n" in page
    assert b"Referer" not in page and b"Connection: close" not in page
    sent = test_site.responses_for("www.kulturarv.dk", "/chunked.html")[0]
    assert b"Transfer-Encoding: chunked" in sent


def test_payload_digest_is_over_the_dechunked_body(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/chunked.html")], overrides=HTTP11)
    record = next(r for r in run.warc_records() if r[0] == "response" and r[1].endswith("/chunked.html"))
    sent = test_site.responses_for("www.kulturarv.dk", "/chunked.html")[0]
    chunked_body = sent.split(b"\r\n\r\n", 1)[1]
    body, rest = b"", chunked_body
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            break
        body, rest = body + rest[:size], rest[size + 2:]
    assert record[2].get_header("WARC-Payload-Digest") == _sha1(body)
    assert record[2].get_header("WARC-Block-Digest") == _sha1(sent)
    assert record[2].protocol == "WARC/1.1"


def test_every_warc_file_opens_with_warcinfo_carrying_the_metadata_items(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/")])
    records = run.warc_records()
    assert records[0][0] == "warcinfo"
    assert b"harvestInfo.jobId: 7" in records[0][3]


def test_crawl_log_has_twelve_columns_with_dns_robots_and_seed_source(crawl, test_site):
    seed = test_site.url("www.kulturarv.dk", "/")
    run = crawl([seed])
    lines = run.crawl_log()
    assert all(len(fields) == 12 for fields in lines)
    dns = run.lines_for("dns:www.kulturarv.dk")[0]
    assert dns[1] == "1" and dns[4] == "P" and dns[6] == "text/dns" and dns[10] == seed
    robots = run.lines_for(test_site.url("www.kulturarv.dk", "/robots.txt"))[0]
    assert robots[1] == "200" and robots[4] == "P"
    page = run.lines_for(test_site.url("www.kulturarv.dk", "/page/1"))[0]
    assert page[1] == "200" and page[4] == "L" and page[5] == seed and page[9].startswith("sha1:")
    # Column 3 is the body's size, content-size the headers plus body (Heritrix's getContentSize).
    sent = test_site.responses_for("www.kulturarv.dk", "/page/1")[0]
    assert page[2] == str(len(sent.split(b"\r\n\r\n", 1)[1])) and f"content-size:{len(sent)}" in page[11]
    image = run.lines_for(test_site.url("www.kulturarv.dk", "/img/70.png"))[0]
    assert image[4] == "E" and image[6] == "image/png"


def test_robots_and_trap_are_honoured(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/")])
    private = run.lines_for(test_site.url("www.kulturarv.dk", "/private/secret.html"))
    assert [fields[1] for fields in private] == ["-9998"]
    assert test_site.request_count("www.kulturarv.dk", "/private/secret.html") == 0
    assert test_site.request_count("www.kulturarv.dk", "/trap/1/") == 0
    assert not [fields for fields in run.crawl_log() if "/trap/" in fields[3]]


def test_redirect_is_followed_with_hop_r(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/redir/3")])
    assert run.lines_for(test_site.url("www.kulturarv.dk", "/redir/3"))[0][1] == "301"
    target = run.lines_for(test_site.url("www.kulturarv.dk", "/page/3"))[0]
    assert target[1] == "200" and target[4] == "R"


def test_identical_binaries_in_one_job_become_revisits(crawl, test_site):
    hosts = ["www.kulturarv.dk", "www.bibliotek.no", "www.økologi.dk"]
    run = crawl([test_site.url(host, "/dup.bin") for host in hosts])
    records = [r for r in run.warc_records() if r[1] and r[1].endswith("/dup.bin") and r[0] in ("response", "revisit")]
    kinds = sorted(r[0] for r in records)
    assert kinds == ["response", "revisit", "revisit"]
    original = next(r for r in records if r[0] == "response")
    for _, uri, headers, block in records:
        if headers.get_header("WARC-Type") != "revisit":
            continue
        assert headers.get_header("WARC-Profile").endswith("/revisit/identical-payload-digest")
        assert headers.get_header("WARC-Refers-To-Target-URI") == original[1]
        assert headers.get_header("WARC-Refers-To") == original[2].get_header("WARC-Record-ID")
        assert headers.get_header("WARC-Payload-Digest") == _sha1(DUP_BODY)
        assert block.startswith(b"HTTP/1.1 200 OK") and block.endswith(b"\r\n\r\n")
        assert "duplicate:digest" in run.lines_for(uri)[0][11]
    assert run.controller.status().figures.size_totals.dup_by_hash_count == 2


def test_out_of_scope_hosts_are_not_fetched(crawl, test_site):
    run = crawl([test_site.url("www.bibliotek.no", "/")])
    fetched_hosts = {fields[3].split("/")[2].split(":")[0] for fields in run.crawl_log()
                     if fields[3].startswith("http")}
    assert fetched_hosts == {"www.bibliotek.no"}
