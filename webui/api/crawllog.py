"""API route ``/api/v1/jobs/{id}/crawllog``: the crawl-log search of the job page, as pages of lines.

The job page (webui/status/jobs.py) and this route check the search's input and find the job's files here,
and run the search on the same workers (webui/crawllogsearch.py), so both take the same ``domain`` and ``regex``
and refuse the same patterns. The page shows the first MAX_CRAWL_LOG_MATCHES matches; the API answers a
page of ``limit`` lines and a cursor, the place in the crawl.log the page ended (a line number and the bytes
before it), from which the next page reads on. Each request is bounded by the search deadline
(harvestsuite.webui.crawlLogSearchTimeoutMs): a page that reaches it answers with what it found and a cursor
from the line it reached.

A crawl.log is read from the job's metadata WARC in the archive store, so a job's search finds lines once
its files are stored (after post-processing); a running job's newest lines are in its live view.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from harvestdef.archive import ArchiveStore
from harvestdef.errors import PatternError
from harvestdef.patterns import CompiledPattern, compile_pattern
from harvestdef.repositories.jobs import JobRepository
from webui.api.core import PAGED, blueprint, decode_cursor, encode_cursor, limit
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query, takes
from webui.api.shapes import BOOLEAN, COUNT, STRING, answers, described, nullable, page_of, shape
from webui.auth import READ, require
from webui.context import database, settings
from webui.crawllogsearch import CRAWL_LOG_START, CrawlLogPosition, CrawlLogSearchResult, crawl_log_searcher
from webui.qa import metadata_warcs

MAX_PATTERN_LENGTH = 200
CRAWL_LOG_DOMAIN = QueryParameter("domain", "string", "only lines whose URL is on this domain or a subdomain of it")
CRAWL_LOG_REGEX = QueryParameter("regex", "string", f"only lines this regular expression finds something in "
                                                    f"(Java's syntax, run by RE2: no lookaround or backreferences; "
                                                    f"at most {MAX_PATTERN_LENGTH} characters)")

CRAWL_LOG_PAGE = page_of(
    shape({"line": described({"type": "integer", "minimum": 1}, "its number in the crawl.log, from 1"),
           "text": described(STRING, "the crawl.log line: 12 space-separated fields (Heritrix 3)")}),
    scanned=described(COUNT, "crawl.log lines read, from its first line to where this page stopped"),
    seconds=described({"type": "number", "minimum": 0}, "how long the search took"),
    timed_out=described(BOOLEAN, "the page stopped at the search deadline: next goes on from where it did"),
    error=nullable(STRING, "why the search stopped early on a file it could not read"))


def search_domain(text: str | None) -> str:
    """The search's domain as lines are matched against it: stripped, lower case; "" for any."""
    return (text or "").strip().lower()


def search_pattern(text: str | None) -> CompiledPattern | None:
    """The search's regular expression compiled by RE2 (None when not given), or an invalid error naming the
    regex field and what RE2 could not take."""
    if not text:
        return None
    try:
        return compile_pattern(text, MAX_PATTERN_LENGTH)
    except PatternError as exc:
        raise ApiError("invalid", f"not a regular expression the search can run: {exc.reason}", "regex") from None


def search_job_crawl_log(conn: Connection, job_id: int, domain: str, regex: CompiledPattern | None,
                         max_matches: int, start: CrawlLogPosition = CRAWL_LOG_START) -> CrawlLogSearchResult:
    """The job's crawl.log lines on ``domain`` that ``regex`` finds something in, from ``start`` on,
    searched by a worker within the search deadline. A not-found error when the job or its metadata WARC is
    not there (the job has not ended, or its files are not stored yet)."""
    job = JobRepository(conn).get(job_id)
    warcs = metadata_warcs(ArchiveStore.from_settings(settings()), job.harvest_id, job.job_id)
    if not warcs:
        raise ApiError("not_found", f"job {job_id} has no metadata WARC in the archive store: its crawl.log is "
                                    f"stored there once the job has ended and its files are uploaded")
    return crawl_log_searcher().search(warcs, domain, regex, max_matches, start)


def _start() -> CrawlLogPosition:
    """Where ``?after=`` says the page starts: the place the previous page ended."""
    key = decode_cursor(query("after"))
    if key is None:
        return CRAWL_LOG_START
    if len(key) != 2 or not all(isinstance(part, int) and not isinstance(part, bool) and part >= 0 for part in key):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    return CrawlLogPosition(key[0], key[1])


@blueprint.get("/jobs/<int:job_id>/crawllog")
@takes(CRAWL_LOG_DOMAIN, CRAWL_LOG_REGEX, *PAGED)
@answers(CRAWL_LOG_PAGE)
@require(READ)
def search_crawl_log(job_id: int) -> Any:
    """Search a job's crawl.log, as its page does: lines on ``domain`` matching ``regex``, a page at a time.

    Each item is a line and its number in the crawl.log. ``next`` is null once the crawl.log has been read
    to its end. A page stopped by the search deadline (``timed_out``) may hold fewer than ``limit`` lines;
    its ``next`` goes on from the line it reached. ``error`` says why a search stopped early on a file it
    could not read. 404 until the job's metadata WARC is in the archive store; 503 when every search worker
    is busy, or the search read no line within its deadline (search again in a moment)."""
    size = limit()
    domain, regex, start = search_domain(query("domain")), search_pattern(query("regex")), _start()
    with database().connect() as conn:
        found = search_job_crawl_log(conn, job_id, domain, regex, size, start)
    if found.is_busy:
        raise ApiError("unavailable", found.error or "every crawl-log search worker is busy; search again")
    if found.is_timed_out and found.resume_at == start:
        # no progress: a "next" equal to this page's own cursor would send a client round in a circle
        raise ApiError("unavailable", f"the search read no line of the crawl.log after line {start.line} within "
                                      f"its deadline of {settings().webui.crawlLogSearchTimeoutMs / 1000:g} s; "
                                      f"search again in a moment")
    following = encode_cursor([found.resume_at.line, found.resume_at.offset]) if found.resume_at else None
    return {"items": [{"line": line.number, "text": line.text} for line in found.lines], "next": following,
            "scanned": found.scanned, "seconds": round(found.seconds, 3), "timed_out": found.is_timed_out,
            "error": found.error}
