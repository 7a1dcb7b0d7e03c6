"""crawl.log parsing (Heritrix 3's 12 columns, https://heritrix.readthedocs.io/en/latest/operating.html#crawl-log;
fewer than 11 make a line invalid, as in NetarchiveSuite): columns, "-" values, invalid lines counted and
skipped."""

from __future__ import annotations

from pathlib import Path

from harvester.postprocess.crawllogreader import MAX_EXAMPLES, CrawlLogLine, CrawlLogReader, iter_crawl_log

FULL = ("2026-01-01T10:00:00.123Z   200       1288 http://www.kulturarv.dk/img/1.png E http://www.kulturarv.dk/ "
        "image/png #003 20260101100000100+23 sha1:QRI6RVZXWNEZI7UVZYBN7YSNL2IOF5II http://www.kulturarv.dk/ "
        "duplicate:digest,content-size:1288")
QUOTA = ("2026-01-01T10:00:01.000Z -5003          - http://www.kulturarv.dk/page/9 LL http://www.kulturarv.dk/page/8 "
         "unknown #001 - - http://www.kulturarv.dk/ Q:groupMaxFetchSuccesses")
ELEVEN = ("2026-01-01T10:00:02.000Z     1         53 dns:www.kulturarv.dk P http://www.kulturarv.dk/ text/dns #002 "
          "20260101100002000+1 sha1:N3RSZDQ25YLMVKE5N7QBUDI73X7WVAW5 -")


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_full_line_is_parsed_column_by_column(tmp_path):
    [line] = list(iter_crawl_log(write(tmp_path / "crawl.log", FULL)))
    assert line == CrawlLogLine(
        timestamp="2026-01-01T10:00:00.123Z", status=200, size=1288, url="http://www.kulturarv.dk/img/1.png",
        discovery_path="E", via="http://www.kulturarv.dk/", mime="image/png", thread="#003",
        fetch_timestamp="20260101100000100+23", digest="sha1:QRI6RVZXWNEZI7UVZYBN7YSNL2IOF5II",
        source_tag="http://www.kulturarv.dk/", annotations=("duplicate:digest", "content-size:1288"))
    assert line.content_size == 1288
    assert line.is_duplicate


def test_dashes_become_none_and_negative_statuses_are_kept(tmp_path):
    [line] = list(iter_crawl_log(write(tmp_path / "crawl.log", QUOTA)))
    assert line.status == -5003
    assert line.size is None and line.digest is None and line.fetch_timestamp is None
    assert line.annotations == ("Q:groupMaxFetchSuccesses",)
    assert line.content_size is None and not line.is_duplicate


def test_eleven_columns_are_valid_without_annotations(tmp_path):
    reader = CrawlLogReader(write(tmp_path / "crawl.log", ELEVEN))
    [line] = list(reader)
    assert line.url == "dns:www.kulturarv.dk" and line.source_tag is None and line.annotations == ()
    assert reader.invalid_lines == 0 and reader.lines_read == 1


def test_short_lines_are_counted_with_their_numbers_and_skipped(tmp_path):
    path = write(tmp_path / "crawl.log", FULL, "2026-01-01T10:00:00.123Z 200 1288 http://cut.dk/", "", QUOTA,
                 "2026-01-01T10:00:00.123Z abc 1 http://x.dk/ - - text/html #1 - - - -",
                 "2026-01-01T10:00:03.000Z   200     50 http://www.kulturarv.dk/page/1 L")
    reader = CrawlLogReader(path)
    urls = [line.url for line in reader.lines()]
    assert urls == ["http://www.kulturarv.dk/img/1.png", "http://www.kulturarv.dk/page/9"]
    assert reader.lines_read == 5  # the blank line is not a line of the log
    assert reader.invalid_lines == 3
    assert [(example.number, example.reason.split(",")[0]) for example in reader.invalid_examples] == [
        (2, "4 fields"), (5, "status 'abc' is not an integer"), (6, "5 fields")]
    assert reader.invalid_examples[0].text == "2026-01-01T10:00:00.123Z 200 1288 http://cut.dk/"


def test_a_cut_last_line_and_bad_bytes_never_raise(tmp_path):
    path = tmp_path / "crawl.log"
    path.write_bytes((FULL + "\n").encode() + FULL.replace("kulturarv", "k\xf8b").encode("latin-1") + b"\n"
                     + FULL[:60].encode())
    reader = CrawlLogReader(path)
    lines = list(reader)
    assert len(lines) == 2
    assert lines[1].url == "http://www.k\ufffdb.dk/img/1.png"
    assert reader.invalid_lines == 1 and reader.invalid_examples[0].number == 3


def test_only_the_first_invalid_lines_are_kept_as_examples(tmp_path):
    path = write(tmp_path / "crawl.log", *(["short line"] * (MAX_EXAMPLES + 5)), FULL)
    reader = CrawlLogReader(path)
    assert len(list(reader)) == 1
    assert reader.invalid_lines == MAX_EXAMPLES + 5
    assert len(reader.invalid_examples) == MAX_EXAMPLES


def test_the_engines_own_crawl_log_parses_without_invalid_lines(tmp_path):
    # The column layout the bundled engine writes (harvester/engine/reporting/launchlogs.py), padding and all.
    from harvester.engine.reporting.launchlogs import CrawlLogs

    with CrawlLogs(tmp_path / "logs") as logs:
        logs.crawl(200, 722, "http://www.kulturarv.dk/", "", "", "text/html", 1, 1767261600.5, 12,
                   "sha1:MA6S2ZXD6SXH5HJEPGUMQAD7WBINNSIN", "http://www.kulturarv.dk/", ["content-size:722"])
        logs.crawl(-5003, None, "http://www.kulturarv.dk/x", "L", "http://www.kulturarv.dk/", "unknown", 2, 0, 0,
                   None, None, ["Q:groupMaxAllKb"])
    reader = CrawlLogReader(tmp_path / "logs" / "crawl.log")
    first, second = list(reader)
    assert reader.invalid_lines == 0
    assert (first.status, first.size, first.discovery_path, first.via, first.content_size) == (200, 722, "", None, 722)
    assert first.fetch_timestamp.startswith("20260101") and first.fetch_timestamp.endswith("+12")
    assert (second.status, second.source_tag, second.annotations) == (-5003, None, ("Q:groupMaxAllKb",))
