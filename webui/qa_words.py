"""The words of a job's QA report, and of why a configuration got nothing, in the page's language.

Post-processing (harvester/postprocess/qa.py) writes the report into the job's metadata WARC in English: why
a seed was not captured, why an embedded resource is missing and the crawl.log status of each, in
harvester/postprocess/crawllog.py's words ("DNS lookup failed (-6)", "HTTP 404"). The domain report
(harvester/postprocess/domainreport.py) says in the same words why a configuration got nothing, which the
scheduler keeps in harvest_findings. The API gives them as stored; the pages say them again from their
parts, matched here, and keep what they do not know, and the URLs and figures inside, as they were. webui
does not import the harvester, so the English words are repeated here, by code; tests/webui/test_qa_words.py
fails when the harvester's words and these part.
"""

from __future__ import annotations

import re

from flask import Flask
from flask_babel import gettext as _
from flask_babel import ngettext

from webui.api.phrases import N_

# harvester/postprocess/crawllog.py's FETCH_STATUS_WORDS: a crawl.log status below 100 in words
FETCH_STATUS_WORDS: dict[int, str] = {
    0: N_("never tried"),
    -1: N_("DNS lookup failed"),
    -2: N_("connection refused"),
    -3: N_("connection broken"),
    -4: N_("timed out"),
    -5: N_("runtime exception"),
    -6: N_("DNS lookup failed"),
    -7: N_("illegal URI"),
    -8: N_("retries exhausted"),
    -50: N_("prerequisite failed"),
    -60: N_("DNS prerequisite failed"),
    -61: N_("robots.txt prerequisite failed"),
    -62: N_("other prerequisite failed"),
    -63: N_("prerequisite unscheduled"),
    -404: N_("empty response"),
    -3000: N_("severe error"),
    -4000: N_("crawler trap"),
    -4001: N_("too many hops"),
    -4002: N_("too many transitive hops"),
    -5000: N_("out of scope"),
    -5001: N_("blocked by user"),
    -5002: N_("blocked by processor"),
    -5003: N_("over quota"),
    -5004: N_("runtime limit reached"),
    -5005: N_("destination refused"),
    -6000: N_("deleted by operator"),
    -7000: N_("thread killed"),
    -8000: N_("the browser could not load the page"),
    -9998: N_("robots.txt precluded"),
}

# harvester/postprocess/qa.py's REASONS: why embedded resources are missing, by the report's reason code
MISSING_REASONS: dict[str, str] = {
    "out_of_scope": N_("out of scope"),
    "robots": N_("precluded by robots.txt"),
    "budget": N_("budget reached"),
    "destination_refused": N_("refused destination: not a public address"),
    "http_error": N_("HTTP error"),
    "network_error": N_("network error"),
    "never_reached": N_("never reached: the crawl ended before it got to them"),
}

_STATUS_IN_WORDS = re.compile(r"(?P<words>.+) \((?P<code>-?\d+)\)")
_SEED_REASONS = (
    (re.compile(r"not in crawl\.log: the crawl ended before it"),
     lambda m: _("not in crawl.log: the crawl ended before it")),
    (re.compile(r"redirected to (?P<url>\S+), which is not in crawl\.log: the crawl ended before it"),
     lambda m: _("redirected to %(url)s, which is not in crawl.log: the crawl ended before it", url=m["url"])),
    (re.compile(r"(?P<status>.+): a redirect the crawl did not follow"),
     lambda m: _("%(status)s: a redirect the crawl did not follow", status=fetch_status(m["status"]))),
    (re.compile(r"(?P<status>.+) after redirects, at (?P<url>\S+)"),
     lambda m: _("%(status)s after redirects, at %(url)s", status=fetch_status(m["status"]), url=m["url"])),
)
_DETAILS = (
    (re.compile(r"not in crawl\.log"), lambda m: _("not in crawl.log")),
    (re.compile(r"not in crawl\.log: not a domain of the job"),
     lambda m: _("not in crawl.log: not a domain of the job")),
    # a quota the resource hit is the crawler's own annotation, kept as it is
    (re.compile(r"(?P<status>.+?) (?P<quota>\(Q:[^()]*\))"),
     lambda m: f"{fetch_status(m['status'])} {m['quota']}"),
)


def fetch_status(text: str) -> str:
    """A crawl.log status in words ("DNS lookup failed (-6)", "HTTP 404", "fetch status 7") in the page's
    language; a text of other words as it was."""
    found = _STATUS_IN_WORDS.fullmatch(text)
    if found and FETCH_STATUS_WORDS.get(int(found["code"])) == found["words"]:
        return f"{_(found['words'])} ({found['code']})"
    if found and found["words"] == "DNS answered":
        return _("DNS answered (%(code)s)", code=found["code"])
    number = re.fullmatch(r"fetch status (?P<code>-?\d+)", text)
    if number:
        return _("fetch status %(code)s", code=number["code"])
    return text  # "HTTP 404" reads the same in every language


def seed_reason(text: str | None) -> str:
    """Why a seed was not captured, in the page's language."""
    if not text:
        return ""
    for pattern, said in _SEED_REASONS:
        found = pattern.fullmatch(text)
        if found:
            return said(found)
    return fetch_status(text)


def missing_words(reason: str, english: str) -> str:
    """The words of a reason embedded resources are missing (its code ``reason``), in the page's language;
    ``english`` as the report has it for a code not known here."""
    known = MISSING_REASONS.get(reason)
    return _(known) if known == english else english


def missing_detail(text: str) -> str:
    """A missing resource's detail (its crawl.log status, or that crawl.log has none) in the page's language."""
    for pattern, said in _DETAILS:
        found = pattern.fullmatch(text)
        if found:
            return said(found)
    return fetch_status(text)


_NOTHING_HARVESTED = re.compile(r"(?P<status>.+) for (?P<seed>\S+)(?: \(and (?P<others>\d+) other seeds? failed\))?")


def nothing_harvested(text: str | None) -> str:
    """Why a configuration got nothing ("DNS lookup failed (-6) for http://dead.example/ (and 2 other seeds
    failed)"), in the page's language."""
    if not text:
        return ""
    if text == "no object harvested: no seed of the domain is in crawl.log":
        return _("no object harvested: no seed of the domain is in crawl.log")
    found = _NOTHING_HARVESTED.fullmatch(text)
    if found is None:
        return text
    said = _("%(status)s for %(seed)s", status=fetch_status(found["status"]), seed=found["seed"])
    if found["others"]:
        others = int(found["others"])
        said += " " + ngettext("(and %(num)s other seed failed)", "(and %(num)s other seeds failed)", others)
    return said


def init_app(app: Flask) -> None:
    app.jinja_env.filters.update(seed_reason=seed_reason, missing_detail=missing_detail,
                                 nothing_harvested=nothing_harvested)
    app.jinja_env.globals["missing_words"] = missing_words
