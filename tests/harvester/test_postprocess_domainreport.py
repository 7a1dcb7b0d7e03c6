"""The per-domain report from crawl.log and progress-statistics.log, by NetarchiveSuite's HarvestReportGenerator
rules (docs/harvester.md, Post-processing, step 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvestdef.model.status import StopReason
from harvester.postprocess.domainreport import build_domain_report, stop_reason_from_progress_log

JOB = {"kulturarv.dk": "default_orderxml", "bibliotek.no": "small", "økologi.dk": "idn", "tom.dk": "empty"}


def line(status: int, url: str, seed: str = "-", annotations: str = "-", size: str = "-") -> str:
    return (f"2026-01-01T10:00:00.000Z {status:>5} {size:>10} {url} L http://via.example/ text/html #001 "
            f"20260101100000000+1 sha1:QRI6RVZXWNEZI7UVZYBN7YSNL2IOF5II {seed} {annotations}")


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(text + "\n" for text in lines), encoding="utf-8")
    return path


def progress(path: Path, last: str) -> Path:
    return write(path, "timestamp  discovered  queued  downloaded",
                 "2026-01-01T10:00:00.000Z          58       0          29 0.00(568.63) 0(881)", last)


def rows(result) -> dict[str, tuple]:
    return {stats.domain: (stats.objects, stats.bytes, stats.stop_reason) for stats in result.report.domains}


@pytest.mark.parametrize(("last_line", "expected"), [
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Finished", StopReason.DOWNLOAD_COMPLETE),
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Ended by operator", StopReason.DOWNLOAD_UNFINISHED),
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Timelimit hit", StopReason.TIME_LIMIT),
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Maximum amount of data downloaded", StopReason.DOWNLOAD_COMPLETE),
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Maximum number of documents downloaded", StopReason.DOWNLOAD_COMPLETE),
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Exited abnormally", StopReason.DOWNLOAD_UNFINISHED),
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Finished - Abnormal exit from crawling", StopReason.DOWNLOAD_UNFINISHED),
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Finished - Ended by operator", StopReason.DOWNLOAD_UNFINISHED),
    ("2026-01-01T10:00:00.412Z CRAWL ENDED - Finished - Timelimit hit", StopReason.TIME_LIMIT),
    ("2026-01-01T10:00:01.000Z          60       2          31 1.00(500.00) 1(800)", StopReason.DOWNLOAD_UNFINISHED),
])
def test_default_stop_reason_from_the_last_line(tmp_path, last_line, expected):
    assert stop_reason_from_progress_log(progress(tmp_path / "progress-statistics.log", last_line)) == expected


def test_default_stop_reason_without_a_progress_log_is_unfinished(tmp_path):
    assert stop_reason_from_progress_log(tmp_path / "missing.log") == StopReason.DOWNLOAD_UNFINISHED
    assert stop_reason_from_progress_log(None) == StopReason.DOWNLOAD_UNFINISHED
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert stop_reason_from_progress_log(empty) == StopReason.DOWNLOAD_UNFINISHED


def test_only_the_last_non_blank_line_of_a_long_progress_log_counts(tmp_path):
    path = tmp_path / "progress-statistics.log"
    body = "2026-01-01T10:00:00.000Z CRAWL ENDED - Timelimit hit\n" + "x" * 100 + "\n"
    path.write_text(body * 500 + "2026-01-01T11:00:00.000Z CRAWL ENDED - Finished\n\n  \n")
    assert stop_reason_from_progress_log(path) == StopReason.DOWNLOAD_COMPLETE


def test_objects_bytes_and_duplicates_from_content_size_annotations(tmp_path):
    log = write(tmp_path / "crawl.log",
                line(1, "dns:www.kulturarv.dk", annotations="content-size:53", size="53"),
                line(200, "http://www.kulturarv.dk/", annotations="content-size:700", size="700"),
                line(200, "http://www.kulturarv.dk/dup.bin", annotations="duplicate:digest,content-size:32000"),
                line(200, "http://www.kulturarv.dk/img/1.png", annotations="3t,duplicate:digest,content-size:10"),
                line(404, "http://www.kulturarv.dk/missing", annotations="content-size:5,3t"),
                line(200, "http://www.kulturarv.dk/no-annotation", size="999"),
                line(-6, "http://www.kulturarv.dk/unresolvable"),
                line(-9998, "http://www.kulturarv.dk/private/"))
    [stats] = [s for s in build_domain_report(log, None, JOB).report.domains if s.domain == "kulturarv.dk"]
    assert (stats.objects, stats.bytes) == (6, 53 + 700 + 32000 + 10 + 5)  # column 3 is never used
    assert (stats.duplicate_objects, stats.duplicate_bytes) == (2, 32010)
    assert (stats.novel_objects, stats.novel_bytes) == (4, 758)
    assert stats.configuration == "default_orderxml"


def test_every_domain_of_the_job_gets_a_row_and_others_are_counted_apart(tmp_path):
    log = write(tmp_path / "crawl.log",
                line(200, "http://www.kulturarv.dk/", annotations="content-size:7"),
                line(200, "http://cdn.elsewhere.com/a.js", annotations="content-size:9"),
                line(200, "http://www.elsewhere.com/b.js", annotations="content-size:9"),
                line(200, "http://third.org/", annotations="content-size:9"))
    progress_log = progress(tmp_path / "progress-statistics.log", "2026-01-01T10:00:00Z CRAWL ENDED - Finished")
    result = build_domain_report(log, progress_log, JOB)
    assert rows(result) == {
        "kulturarv.dk": (1, 7, StopReason.DOWNLOAD_COMPLETE), "bibliotek.no": (0, 0, StopReason.DOWNLOAD_COMPLETE),
        "økologi.dk": (0, 0, StopReason.DOWNLOAD_COMPLETE), "tom.dk": (0, 0, StopReason.DOWNLOAD_COMPLETE)}
    assert [s.configuration for s in result.report.domains] == ["small", "default_orderxml", "empty", "idn"]
    assert result.domains_outside_job == 2
    assert result.outside_examples == ("elsewhere.com", "third.org")
    assert result.report.default_stop_reason == StopReason.DOWNLOAD_COMPLETE


def test_lines_belong_to_the_domain_of_their_seed_unless_disregarded(tmp_path):
    seed = "http://www.kulturarv.dk/"
    log = write(tmp_path / "crawl.log",
                line(1, "dns:www.xn--kologi-9xa.dk", seed=seed, annotations="content-size:58"),
                line(200, "http://www.xn--kologi-9xa.dk/", seed=seed, annotations="content-size:100"),
                line(200, "http://www.bibliotek.no/", seed="-", annotations="content-size:40"),
                line(200, "http://images.bibliotek.no/1.png", seed="http://www.bibliotek.no/",
                     annotations="content-size:60"))
    by_seed = rows(build_domain_report(log, None, JOB))
    assert by_seed["kulturarv.dk"][:2] == (2, 158)
    assert by_seed["økologi.dk"][:2] == (0, 0)
    assert by_seed["bibliotek.no"][:2] == (2, 100)
    by_uri = rows(build_domain_report(log, None, JOB, disregard_seed_url_info=True))
    assert by_uri["kulturarv.dk"][:2] == (0, 0)
    assert by_uri["økologi.dk"][:2] == (2, 158)  # punycode hosts and dns: lines reach the Unicode domain
    assert by_uri["bibliotek.no"][:2] == (2, 100)


@pytest.mark.parametrize(("annotation", "reason"), [
    ("Q:groupMaxAllKb", StopReason.SIZE_LIMIT), ("Q:groupMaxFetchSuccesses", StopReason.OBJECT_LIMIT)])
def test_a_quota_block_sets_the_limit_reason(tmp_path, annotation, reason):
    log = write(tmp_path / "crawl.log", line(200, "http://www.bibliotek.no/", annotations="content-size:1"),
                line(-5003, "http://www.bibliotek.no/page/2", annotations=annotation))
    progress_log = progress(tmp_path / "progress-statistics.log", "2026-01-01T10:00:00Z CRAWL ENDED - Finished")
    result = rows(build_domain_report(log, progress_log, JOB))
    assert result["bibliotek.no"] == (1, 1, reason)  # a blocked URI is not an object
    assert result["kulturarv.dk"][2] == StopReason.DOWNLOAD_COMPLETE


def test_the_first_quota_hit_wins(tmp_path):
    log = write(tmp_path / "crawl.log",
                line(-5003, "http://www.bibliotek.no/1", annotations="Q:groupMaxAllKb"),
                line(-5003, "http://www.bibliotek.no/2", annotations="Q:groupMaxFetchSuccesses"),
                line(-5003, "http://www.kulturarv.dk/1", annotations="Q:groupMaxFetchSuccesses"),
                line(-5003, "http://www.kulturarv.dk/2", annotations="Q:groupMaxAllKb"),
                line(-5003, "http://www.xn--kologi-9xa.dk/1", annotations="Q:somethingElse"),
                line(-404, "http://tom.dk/", annotations="Q:groupMaxAllKb"))
    result = rows(build_domain_report(log, None, JOB))
    assert result["bibliotek.no"][2] == StopReason.SIZE_LIMIT
    assert result["kulturarv.dk"][2] == StopReason.OBJECT_LIMIT
    assert result["økologi.dk"][2] == StopReason.DOWNLOAD_UNFINISHED  # the default: no progress log given
    assert result["tom.dk"][2] == StopReason.DOWNLOAD_UNFINISHED      # only -5003 is a quota block


def test_a_quota_overrides_a_time_limit_default(tmp_path):
    log = write(tmp_path / "crawl.log", line(-5003, "http://www.bibliotek.no/1", annotations="Q:groupMaxAllKb"))
    progress_log = progress(tmp_path / "progress-statistics.log", "2026-01-01T10:00:00Z CRAWL ENDED - Timelimit hit")
    result = build_domain_report(log, progress_log, JOB)
    assert rows(result)["bibliotek.no"][2] == StopReason.SIZE_LIMIT
    assert rows(result)["kulturarv.dk"][2] == StopReason.TIME_LIMIT


def test_a_forced_stop_reason_marks_unfinished_domains_and_keeps_quota_reasons(tmp_path):
    log = write(tmp_path / "crawl.log", line(200, "http://www.kulturarv.dk/", annotations="content-size:3"),
                line(-5003, "http://www.bibliotek.no/1", annotations="Q:groupMaxFetchSuccesses"))
    progress_log = progress(tmp_path / "progress-statistics.log", "2026-01-01T10:00:00Z CRAWL ENDED - Finished")
    result = build_domain_report(log, progress_log, JOB, forced_stop_reason=StopReason.DOWNLOAD_UNFINISHED)
    assert result.report.default_stop_reason == StopReason.DOWNLOAD_UNFINISHED
    assert {domain: reason for domain, (_, _, reason) in rows(result).items()} == {
        "kulturarv.dk": StopReason.DOWNLOAD_UNFINISHED, "bibliotek.no": StopReason.OBJECT_LIMIT,
        "økologi.dk": StopReason.DOWNLOAD_UNFINISHED, "tom.dk": StopReason.DOWNLOAD_UNFINISHED}


def test_without_a_crawl_log_every_domain_has_nothing(tmp_path):
    for crawl_log in (None, tmp_path / "never-written.log"):
        result = build_domain_report(crawl_log, None, JOB)
        assert {values for values in rows(result).values()} == {(0, 0, StopReason.DOWNLOAD_UNFINISHED)}
        assert len(result.report.domains) == len(JOB)


def test_invalid_and_unattributable_lines_are_skipped_and_counted(tmp_path):
    log = write(tmp_path / "crawl.log", line(200, "http://www.kulturarv.dk/", annotations="content-size:3"),
                "2026-01-01T10:00:00.000Z 200 3 http://www.kulturarv.dk/cut",
                line(200, "http://co.uk/", annotations="content-size:3"),
                line(200, "http://bad_host!/", annotations="content-size:3"))
    result = build_domain_report(log, None, JOB)
    assert rows(result)["kulturarv.dk"][:2] == (1, 3)
    assert (result.lines_read, result.invalid_lines, result.unattributed_lines) == (4, 1, 2)
    assert result.invalid_examples[0].number == 2


def test_the_logs_of_several_launches_add_up(tmp_path):
    first = write(tmp_path / "first.log", line(200, "http://www.kulturarv.dk/", annotations="content-size:3"))
    second = write(tmp_path / "second.log", line(200, "http://www.kulturarv.dk/2", annotations="content-size:4"),
                   line(-5003, "http://www.kulturarv.dk/3", annotations="Q:groupMaxAllKb"))
    result = rows(build_domain_report([first, second], None, JOB))
    assert result["kulturarv.dk"] == (2, 7, StopReason.SIZE_LIMIT)
