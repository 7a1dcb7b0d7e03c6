"""A job's text files viewed in the page a range of lines at a time, through Flask's test client: stored files
(a CDXJ index, SHA256SUMS, the gzip deduplication entries), the records of the metadata WARC (crawl.log, a
report, the crawler-beans.cxml), a 200,000-line crawl.log paged without being read whole, WARCs download-only,
and every bad request answered with what is wrong."""

from __future__ import annotations

import gzip
import hashlib
import re
from html import unescape
from pathlib import Path

import pytest

from harvestdef.model.status import JobStatus
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from tests.webui.test_jobs import seed
from webui.textlines import LineReader, read_page

INFO = MetadataInfo(job_id=1, harvest_id=1, harvest_num=1, organization="netarkivet.dk", heritrix_version="3.4.0",
                    software_version="test", hostname="h", ip="127.0.0.1")


def job_directory(tmp_path: Path) -> Path:
    directory = tmp_path / "archive" / "1" / "1"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def crawl_log_line(number: int) -> str:
    """A crawl.log line whose URL and digest name its number, so a line shows where it came from and the file
    does not compress to nothing."""
    digest = hashlib.sha1(str(number).encode()).hexdigest()
    return (f"2026-03-01T10:00:00.000Z   200   {number:>8} http://www.alpha.dk/page/{number} L "
            f"http://www.alpha.dk/ text/html #{number % 50:03d} 20260301100000000+12 sha1:{digest} - -")


def shown_lines(html: str) -> list[tuple[int, str]]:
    """The numbered lines of a viewer page, as (number, text)."""
    body = re.search(r'<pre class="crawl-log file-lines">(.*?)</pre>', html, re.S).group(1)
    return [(int(number), unescape(text)) for number, text in
            re.findall(r'<span class="line-number" data-line="(\d+)">\d+</span>([^\n]*)', body)]


def bytes_read() -> int:
    """What this process has read through read(2) so far (/proc/self/io's rchar): a real measure of how much
    of a file a request read, with no hook in the code under test."""
    with open("/proc/self/io") as io:
        return int(next(line for line in io if line.startswith("rchar:")).split()[1])


# ---------------------------------------------------------------- the reading itself
@pytest.mark.parametrize("chunk", [1, 3, 7, 1024])
def test_line_reader_counts_lines_across_chunks_and_cuts_long_lines(chunk):
    import io
    text = b"one\r\ntwo\n\nfour" + b"x" * 20 + b"\nfive"
    reader = LineReader(io.BytesIO(text), max_line_bytes=10, chunk_bytes=chunk)
    assert reader.skip(2) == 2
    assert reader.next_line() == (b"", False)
    assert reader.next_line() == (b"fourxxxxxx", True)
    assert reader.next_line() == (b"five", False)
    assert reader.next_line() is None and not reader.has_more()
    page = read_page(io.BytesIO(text), 1, 2)
    assert [line.text for line in page.lines] == ["one", "two"] and page.has_more and page.total is None
    assert read_page(io.BytesIO(text), 4, 10).total == 5
    assert read_page(io.BytesIO(text), 9, 1).is_beyond_end
    assert LineReader(io.BytesIO(text), chunk_bytes=chunk).skip(100) == 5
    assert LineReader(io.BytesIO(b"a\nb\n"), chunk_bytes=chunk).skip(100) == 2
    assert not read_page(io.BytesIO(b""), 1, 5).is_beyond_end


# ---------------------------------------------------------------- stored files
def test_a_stored_text_file_is_viewed_in_pages_escaped_and_downloadable(login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE])
    directory = job_directory(tmp_path)
    (directory / "cdxj").mkdir()
    lines = [f"dk,alpha)/page/{n} 20260301100000 {{\"url\": \"http://www.alpha.dk/page/{n}\"}}" for n in range(1, 251)]
    lines[119] = "<script>alert('not run')</script> & <b>not bold</b>"
    (directory / "cdxj" / "1-1-20260301-00000.warc.gz.cdxj").write_text("\n".join(lines) + "\n")
    (directory / "1-1-20260301-00000.warc.gz").write_bytes(b"WARC/1.1 stands in for a crawl WARC")
    (directory / "dedup").mkdir()
    with gzip.open(directory / "dedup" / "1.gz", "wt") as dedup:
        dedup.writelines(f"sha1:DIGEST{n}\thttp://www.alpha.dk/{n}\t20260301100000\n" for n in range(1, 31))
    client = login("archivist")

    job_page = client.get("/status/jobs/1").get_data(as_text=True)
    assert 'href="/status/jobs/1/view/cdxj/1-1-20260301-00000.warc.gz.cdxj">view</a>' in job_page
    assert 'href="/status/jobs/1/view/dedup/1.gz">view</a>' in job_page
    assert "/status/jobs/1/view/1-1-20260301-00000.warc.gz" not in job_page, "a WARC is download-only"

    first = client.get("/status/jobs/1/view/cdxj/1-1-20260301-00000.warc.gz.cdxj")
    assert first.status_code == 200
    html = first.get_data(as_text=True)
    assert shown_lines(html) == [(n, lines[n - 1]) for n in range(1, 101)]
    assert "Lines 1–100; more follow." in html and 'rel="next"' in html and 'rel="prev"' not in html

    second = client.get("/status/jobs/1/view/cdxj/1-1-20260301-00000.warc.gz.cdxj?from=101&lines=50")
    html = second.get_data(as_text=True)
    assert shown_lines(html) == [(n, lines[n - 1]) for n in range(101, 151)]
    # escaped: the markup is text on the page, never an element
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#39;not run&#39;)&lt;/script&gt;" in html
    assert "<b>not bold</b>" not in html

    by_page = client.get("/status/jobs/1/view/cdxj/1-1-20260301-00000.warc.gz.cdxj?page=3").get_data(as_text=True)
    assert shown_lines(by_page) == [(n, lines[n - 1]) for n in range(201, 251)]
    assert "Lines 201–250 of 250." in by_page and 'rel="next"' not in by_page and 'rel="first"' in by_page
    last = client.get("/status/jobs/1/view/cdxj/1-1-20260301-00000.warc.gz.cdxj?last=1&lines=30")
    assert [n for n, _ in shown_lines(last.get_data(as_text=True))] == list(range(221, 251))

    dedup = client.get("/status/jobs/1/view/dedup/1.gz?from=29").get_data(as_text=True)
    assert shown_lines(dedup) == [(29, "sha1:DIGEST29\thttp://www.alpha.dk/29\t20260301100000"),
                                  (30, "sha1:DIGEST30\thttp://www.alpha.dk/30\t20260301100000")]
    download = client.get("/status/jobs/1/files/cdxj/1-1-20260301-00000.warc.gz.cdxj")
    assert download.status_code == 200 and download.data.decode().splitlines() == lines
    assert download.headers["Content-Disposition"].startswith("attachment")


def test_bad_view_requests_are_answered_with_what_is_wrong(login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    directory = job_directory(tmp_path)
    (directory / "SHA256SUMS").write_text("".join(f"{n:064x}  file-{n}\n" for n in range(1, 11)))
    (directory / "1-1-20260301-00000.warc.gz").write_bytes(b"WARC")
    (directory / "thumbnails").mkdir()
    (directory / "thumbnails" / "ab.png").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "archive" / "1" / "2").mkdir()
    (tmp_path / "archive" / "1" / "2" / "SHA256SUMS").write_text("another job's\n")
    log = tmp_path / "crawl.log"
    log.write_text(crawl_log_line(1) + "\n")
    write_metadata_warc(directory / "1-metadata-1.warc.gz", INFO, [], [], [log], [])
    client = login("archivist")
    view = "/status/jobs/1/view/SHA256SUMS"

    def refused(path: str, status: int, message: str) -> None:
        answer = client.get(path, follow_redirects=True)  # a doubled slash is merged by a redirect first
        assert answer.status_code == status, (path, answer.status_code)
        assert message in unescape(answer.get_data(as_text=True)), (path, answer.get_data(as_text=True))

    refused(f"{view}?from=11", 404, "SHA256SUMS has 10 lines: line 11 is beyond its end")
    refused(f"{view}?page=3", 404, "line 201 is beyond its end")
    refused(f"{view}?from=-5", 400, "from must be 1 or more, not -5")
    refused(f"{view}?from=0", 400, "from must be 1 or more, not 0")
    refused(f"{view}?from=ten", 400, "from must be a whole number, not 'ten'")
    refused(f"{view}?page=1.5", 400, "page must be a whole number, not '1.5'")
    refused(f"{view}?lines=0", 400, "lines must be between 1 and 2000, not 0")
    refused(f"{view}?lines=5000", 400, "lines must be between 1 and 2000, not 5000")
    refused(f"{view}?from=2&page=2", 400, "give one of from, page and last, not from and page")
    refused(f"{view}?at=x&from=1", 400, "at must be a whole number")
    refused("/status/jobs/1/view/../2/SHA256SUMS", 404, "no file '../2/SHA256SUMS' of job 1")
    refused("/status/jobs/1/view/cdxj/../../2/SHA256SUMS", 404, "of job 1")
    refused("/status/jobs/1/view/%2Fetc%2Fpasswd", 404, "of job 1")
    refused("/status/jobs/1/view/nothing.txt", 404, "no file 'nothing.txt' of job 1")
    refused("/status/jobs/99/view/SHA256SUMS", 404, "no job 99")
    refused("/status/jobs/1/view/1-1-20260301-00000.warc.gz", 400, "is a WARC file: it is downloaded, not read as text")
    refused("/status/jobs/1/view/thumbnails/ab.png", 400, "is a picture: it is downloaded, not read as text")
    refused(f"{view}?record=logs/crawl.log", 400, "SHA256SUMS is not a metadata WARC")
    refused("/status/jobs/1/view/1-metadata-1.warc.gz?record=logs/nothing.log", 404, "has no record 'logs/nothing.log'")
    refused("/status/jobs/1/records/SHA256SUMS", 400, "only a metadata WARC's records are listed")
    refused("/status/jobs/1/view/1-metadata-1.warc.gz?record=logs/crawl.log&from=3", 404,
            "logs/crawl.log in 1-metadata-1.warc.gz has 1 line: line 3 is beyond its end")
    # the link of a record with a wrong offset still finds the record, by reading from the start
    moved = client.get("/status/jobs/1/view/1-metadata-1.warc.gz?record=logs/crawl.log&at=7")
    assert moved.status_code == 200 and shown_lines(moved.get_data(as_text=True)) == [(1, crawl_log_line(1))]
    # the other job's file is served under its own job only
    assert client.get("/status/jobs/2/view/SHA256SUMS").status_code == 200


def test_the_api_returns_the_same_lines_and_records_with_errors_naming_the_parameter(api, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE])
    directory = job_directory(tmp_path)
    (directory / "SHA256SUMS").write_text("".join(f"{n:064x}  file-{n}\n" for n in range(1, 11)))
    log = tmp_path / "crawl.log"
    log.write_text("".join(crawl_log_line(n) + "\n" for n in range(1, 8)))
    write_metadata_warc(directory / "1-metadata-1.warc.gz", INFO, [], [], [log], [])
    lines = api("archivist", "get", "/api/v1/jobs/1/lines/SHA256SUMS?from=9&lines=5")
    assert lines.status_code == 200
    assert lines.json == {"job_id": 1, "name": "SHA256SUMS", "record": None, "first": 9, "has_more": False,
                          "total": 10, "lines": [{"number": 9, "text": f"{9:064x}  file-9", "cut": False},
                                                 {"number": 10, "text": f"{10:064x}  file-10", "cut": False}]}
    records = api("archivist", "get", "/api/v1/jobs/1/records/1-metadata-1.warc.gz").json["items"]
    crawl_log = next(r for r in records if r["name"] == "logs/crawl.log")
    assert crawl_log["uri"].startswith("metadata://netarkivet.dk/crawl/logs/crawl.log?")
    record = api("archivist", "get", "/api/v1/jobs/1/lines/1-metadata-1.warc.gz",
                 query_string={"record": crawl_log["uri"], "at": crawl_log["offset"], "page": 2, "lines": 3}).json
    assert [line["text"] for line in record["lines"]] == [crawl_log_line(n) for n in (4, 5, 6)] and record["has_more"]

    for path, status, field in [("/api/v1/jobs/1/lines/SHA256SUMS?from=11", 404, "from"),
                                ("/api/v1/jobs/1/lines/SHA256SUMS?from=-1", 400, "from"),
                                ("/api/v1/jobs/1/lines/SHA256SUMS?from=x", 400, "from"),
                                ("/api/v1/jobs/1/lines/SHA256SUMS?lines=9999", 400, "lines"),
                                ("/api/v1/jobs/1/lines/SHA256SUMS?page=1&last=1", 400, "last"),
                                ("/api/v1/jobs/1/lines/../1/SHA256SUMS", 404, "name"),
                                ("/api/v1/jobs/1/lines/1-metadata-1.warc.gz", 400, "name"),
                                ("/api/v1/jobs/1/lines/1-metadata-1.warc.gz?record=logs/none", 404, "record"),
                                ("/api/v1/jobs/1/records/SHA256SUMS", 400, "name")]:
        answer = api("archivist", "get", path)
        assert (answer.status_code, answer.json["error"]["field"]) == (status, field), (path, answer.json)
    described = api("archivist", "get", "/api/v1/openapi.json").json["paths"]["/jobs/{job_id}/lines/{name}"]["get"]
    assert [p["name"] for p in described["parameters"] if p["in"] == "query"] == [
        "record", "at", "from", "page", "last", "lines"]


# ---------------------------------------------------------------- records of the metadata WARC
def test_the_metadata_warc_lists_its_records_and_each_is_viewed_and_downloaded(login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE])
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "crawler-beans.cxml").write_text('<beans>\n  <bean id="simpleOverrides"/>\n</beans>\n')
    (sources / "crawl-report.txt").write_text("crawl name: 1\ncrawl status: Finished\n")
    (sources / "crawl.log").write_text("".join(crawl_log_line(n) + "\n" for n in range(1, 6)))
    write_metadata_warc(job_directory(tmp_path) / "1-metadata-1.warc.gz", INFO, [sources / "crawler-beans.cxml"],
                        [sources / "crawl-report.txt"], [sources / "crawl.log"], [])
    client = login("archivist")
    job_page = client.get("/status/jobs/1").get_data(as_text=True)
    assert 'href="/status/jobs/1/records/1-metadata-1.warc.gz">records</a>' in job_page
    records = client.get("/status/jobs/1/records/1-metadata-1.warc.gz").get_data(as_text=True)
    links = dict(re.findall(r'<a href="([^"]*)" title="[^"]*">([^<]*)</a>', records))
    names = {name: unescape(link) for link, name in links.items()}
    assert set(names) >= {"setup/crawler-beans.cxml", "reports/crawl-report.txt", "logs/crawl.log"}

    beans = client.get(names["setup/crawler-beans.cxml"]).get_data(as_text=True)
    assert shown_lines(beans) == [(1, "<beans>"), (2, '  <bean id="simpleOverrides"/>'), (3, "</beans>")]
    assert "Lines 1–3 of 3." in beans and "<bean id" not in beans  # escaped XML, not markup
    report = client.get(names["reports/crawl-report.txt"] + "&from=2").get_data(as_text=True)
    assert shown_lines(report) == [(2, "crawl status: Finished")]
    log = client.get(names["logs/crawl.log"] + "&lines=2&from=3").get_data(as_text=True)
    assert shown_lines(log) == [(3, crawl_log_line(3)), (4, crawl_log_line(4))]
    by_name = client.get("/status/jobs/1/view/1-metadata-1.warc.gz?record=logs/crawl.log&last=1&lines=2")
    assert shown_lines(by_name.get_data(as_text=True)) == [(4, crawl_log_line(4)), (5, crawl_log_line(5))]
    download_link = unescape(re.search(r'<a href="([^"]*download=1[^"]*)">Download</a>', log).group(1))
    download = client.get(download_link)
    assert download.status_code == 200 and download.data == (sources / "crawl.log").read_bytes()
    assert 'filename="crawl.log"' in download.headers["Content-Disposition"]


def test_a_200000_line_crawl_log_is_paged_without_being_read_whole(login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE])
    log = tmp_path / "crawl.log"
    with open(log, "w") as out:
        out.writelines(crawl_log_line(n) + "\n" for n in range(1, 200_001))
    warc = write_metadata_warc(job_directory(tmp_path) / "1-metadata-1.warc.gz", INFO, [], [], [log], [])
    plain = job_directory(tmp_path) / "crawl.log.txt"
    plain.write_bytes(log.read_bytes())
    client = login("archivist")

    before = bytes_read()
    page = client.get("/status/jobs/1/view/1-metadata-1.warc.gz?record=logs/crawl.log&page=1000&lines=100")
    read = bytes_read() - before
    assert page.status_code == 200
    assert shown_lines(page.get_data(as_text=True)) == [(n, crawl_log_line(n)) for n in range(99_901, 100_001)]
    # page 1000 of 2000 ends in the middle: about half of the compressed WARC is read, never all of it
    assert read < 0.65 * warc.stat().st_size, (read, warc.stat().st_size)
    before = bytes_read()
    whole = client.get("/status/jobs/1/view/1-metadata-1.warc.gz?record=logs/crawl.log&last=1&lines=1")
    read_for_last = bytes_read() - before
    assert shown_lines(whole.get_data(as_text=True)) == [(200_000, crawl_log_line(200_000))]
    # the measure sees a whole read: the last page counts every line (reading the WARC twice)
    assert read_for_last > 1.5 * warc.stat().st_size, (read_for_last, warc.stat().st_size)

    before = bytes_read()
    first = client.get("/status/jobs/1/view/crawl.log.txt?from=1001&lines=20")
    read = bytes_read() - before
    assert shown_lines(first.get_data(as_text=True)) == [(n, crawl_log_line(n)) for n in range(1001, 1021)]
    assert read < 4 * 1024 * 1024 < plain.stat().st_size // 5, (read, plain.stat().st_size)

    last = client.get("/status/jobs/1/view/crawl.log.txt?last=1&lines=3").get_data(as_text=True)
    assert shown_lines(last) == [(n, crawl_log_line(n)) for n in range(199_998, 200_001)]
    assert "Lines 199,998–200,000 of 200,000." in last


# ---------------------------------------------------------------- in a browser
@pytest.mark.timeout(300)
def test_a_crawl_log_viewed_in_pages_in_the_browser(browser, tmp_path):
    from harvestdef.db.engine import open_engine
    from tests.webui.browser import ServedWebui, log_in, screenshot

    with ServedWebui(tmp_path, users=("archivist",)) as webui:
        engine = open_engine(f"sqlite:///{tmp_path / 'harvest.db'}")
        try:
            seed(engine, [JobStatus.DONE])
        finally:
            engine.dispose()
        log = tmp_path / "crawl.log"
        log.write_text("".join(crawl_log_line(n) + "\n" for n in range(1, 1001))
                       + "<img src=x onerror=alert(1)> is text\n")
        write_metadata_warc(tmp_path / "archive" / "1" / "1" / "1-metadata-1.warc.gz", INFO, [], [], [log], [])
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=webui.url)
        context.set_default_timeout(15_000)
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        try:
            log_in(page, webui.url, "archivist")
            page.goto("/status/jobs/1")
            page.get_by_role("link", name="records").click()
            page.get_by_role("link", name="logs/crawl.log").click()
            position = page.locator(".file-position")
            assert position.inner_text() == "Lines 1–100; more follow."
            numbers = page.locator("pre.file-lines .line-number")
            assert numbers.first.inner_text() == "1" and numbers.count() == 100
            page.get_by_role("link", name="Next").first.click()
            assert position.inner_text() == "Lines 101–200; more follow."
            assert page.locator("pre.file-lines").inner_text().splitlines()[0].endswith(crawl_log_line(101))

            page.get_by_label("From line").fill("950")
            page.get_by_label("Lines per page").fill("25")
            page.get_by_role("button", name="Show").click()
            assert position.inner_text() == "Lines 950–974; more follow."
            page.get_by_role("link", name="Last").first.click()
            assert position.inner_text() == "Lines 977–1,001 of 1,001."
            last_line = page.locator("pre.file-lines").inner_text().splitlines()[-1]
            assert last_line.endswith("<img src=x onerror=alert(1)> is text"), "shown as text"
            assert page.locator("pre.file-lines img").count() == 0 and dialogs == [], "never rendered as HTML"
            screenshot(page, tmp_path, "job-file-viewer")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 1280, f"the viewer is {width} px wide: long lines scroll inside their box"
            page.get_by_role("link", name="Previous").first.click()
            assert position.inner_text() == "Lines 952–976; more follow."
            page.get_by_role("link", name="First").first.click()
            assert position.inner_text() == "Lines 1–25; more follow."
        finally:
            context.close()
