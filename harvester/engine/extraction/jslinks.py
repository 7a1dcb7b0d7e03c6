"""Links in scripts, as Heritrix's ExtractorJS finds them: string literals that look like URLs.

A script is not run. Every quoted string of it (between paired ``'`` or ``"``, possibly backslash-escaped,
or written ``\\u0022``/``\\u0027``) is a candidate; each is unescaped as JavaScript escapes it, fixed up
(``&amp;`` undone, an encoded ``http%3A...`` decoded, a scheme-less ``www.example.dk/x`` given ``http://``
when its last label is a top-level domain) and kept only when it is "very likely" a URL: an absolute
http(s) URL, a protocol-relative one, or a relative path of word characters with at most a file name,
a simple query and a fragment. The false-positive guards are Heritrix's (heritrix3 commons/src/main/java/
org/archive/util/UriUtils.java, isVeryLikelyUri): a file name with two dots needs a known extension
(``jquery.min.js`` passes, ``a.b.c`` does not), white space only with a known extension, and MIME types
(``text/html``, ``image/png``), decimal numbers (``3.5.0``) and CSS selectors (``div.menu``) are refused.

NetarchiveSuite's IcelandicExtractorJS (Heritrix's ConfigurableExtractorJS) adds ``strict`` (absolute
URLs only), ``maximumCandidateLength`` and ``rejectRelativeMatchingRegexList`` (relative candidates a
regex of the list matches, case-insensitively, are refused); ``JsRules`` holds them.

Found links are speculative (hop ``X``). A search stops when the document's extraction budget
(harvester/engine/fetching/bounds.py) says its time is up: a file of nothing but string literals is otherwise slow to
read. This module does no I/O and knows nothing of scope or frontier.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote, urlsplit

from harvestdef.domainnames import public_suffixes
from harvestdef.patterns import CompiledPattern, compile_pattern
from harvester.engine.fetching.bounds import ExtractionBudget

SPECULATIVE_HOP = "X"
# Heritrix's UURI.MAX_URL_LENGTH: a string literal longer than this is not a URL.
MAX_URL_LENGTH = 2083
# The script text read in one piece, and what is carried into the next: a literal (at most MAX_URL_LENGTH
# and its quotes) cut at a piece boundary is found whole in the next piece.
SCRIPT_PIECE = 256 * 1024
SCRIPT_OVERLAP = MAX_URL_LENGTH + 32
# How many string literals a search finds between looks at the document's extraction budget: a clock read
# per literal would cost more than the match, and a few hundred take well under a millisecond.
BUDGET_CHECK = 256

# A string literal: opening quote (with up to 8 backslashes before it, or the \u0022 / \u0027 escape),
# then anything but quotes, then the same opening again (ExtractorJS.JAVASCRIPT_STRING_EXTRACTOR).
_STRING = re.compile(r"""(\\{0,8}+(?:['"]|u002[27]))([^'"]{0,""" + str(MAX_URL_LENGTH) + r"""})(?:\1)""")
# isPossibleUri: no angle brackets, a dot or a slash somewhere.
_POSSIBLE = re.compile(r"[^<>]*[./][^<>]*")
_ABSOLUTE = re.compile(r"(?i)https?://[^<>\s/]+\.[^<>\s/]+(?:/[^<>\s]*)?")
_PROTOCOL_RELATIVE = re.compile(r"//[^<>\s/]+\.[^<>\s/]+(?:/[^<>\s]*)?")
_QUERY_PAIR = r"[a-zA-Z_]+=(?:[\w/.-]|%[0-9a-fA-F]{2})*"
# A relative or server-relative path: optional ./ or /, directories (or ..), a file name with an optional
# extension (group 1, the extension alone group 2), a name=value query, a fragment. \w is ASCII, as Java's.
_RELATIVE = re.compile(
    r"(?:\.?/)?(?:(?:[\s\w-]+|\.\.)/)*"
    r"([\s\w-]+(?:\.[\w-]+)??(\.[a-zA-Z0-9]{2,5})?)?"
    rf"(?:\?(?:{_QUERY_PAIR})(?:&(?:{_QUERY_PAIR}))*)?"
    r"(?:#[\w-]+)?", re.ASCII)
_WHITESPACE = re.compile(r"\s")
_MIME_TYPE = re.compile(r"(?i)(?:text|application|audio|video|image|font|model)/[\w.+-]+")
_DECIMAL = re.compile(r"\d+(?:\.\d+)*")
_SELECTOR = re.compile(r"([^./]+)\.([^./]+)")
_SCHEMELESS = re.compile(r"(?:[^./]+\.)+([^./]+)(?:/.*)?", re.DOTALL)
_ENCODED_ABSOLUTE = re.compile(r"(?i)https?%3A")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}

# File extensions that vouch for a name with two dots or with white space (UriUtils.KNOWN_GOOD_FILE_EXTENSIONS).
KNOWN_EXTENSIONS = frozenset((".jpg", ".jpeg", ".js", ".css", ".png", ".gif", ".swf", ".flv", ".mp4", ".mp3",
                              ".html", ".pdf"))
# Element names: "div.menu" is a CSS selector, not a file (UriUtils.HTML_TAGS, HTML5's elements).
HTML_ELEMENTS = frozenset(("a", "abbr", "acronym", "address", "applet", "area", "article", "aside", "audio", "b",
    "base", "basefont", "bdi", "bdo", "big", "blockquote", "body", "br", "button", "canvas", "caption", "center",
    "cite", "code", "col", "colgroup", "command", "datalist", "dd", "del", "details", "dfn", "dir", "div", "dl",
    "dt", "em", "embed", "fieldset", "figcaption", "figure", "font", "footer", "form", "frame", "frameset", "h1",
    "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html", "i", "iframe", "img", "input", "ins",
    "kbd", "keygen", "label", "legend", "li", "link", "map", "mark", "menu", "meta", "meter", "nav", "noframes",
    "noscript", "object", "ol", "optgroup", "option", "output", "p", "param", "pre", "progress", "q", "rp", "rt",
    "ruby", "s", "samp", "script", "section", "select", "small", "source", "span", "strike", "strong", "style",
    "sub", "summary", "sup", "table", "tbody", "td", "textarea", "tfoot", "th", "thead", "time", "title", "tr",
    "track", "tt", "u", "ul", "var", "video", "wbr"))

@lru_cache(maxsize=4096)
def is_top_level_domain(label: str) -> bool:
    """Whether ``label`` is a top-level domain (the public-suffix list's single labels). Unknown labels are
    none here: the list's default "*" rule would make every label one."""
    return "." not in label and bool(label) and public_suffixes(accept_unknown=False).is_public(label.lower())


@dataclass(frozen=True)
class JsRules:
    """The optional rules of IcelandicExtractorJS / ConfigurableExtractorJS (all off for ExtractorJS)."""

    strict: bool = False                          # only absolute http(s) URLs
    max_candidate_length: int = -1                # maximumCandidateLength; 0 or less: no bound
    reject_relative: tuple[str, ...] = ()         # rejectRelativeMatchingRegexList (Java's dialect)
    _rejects: tuple[CompiledPattern, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Heritrix compiles them CASE_INSENSITIVE; RE2 runs them (harvestdef.patterns), so a crawl cannot be
        # held up by one. config.py compiled each already, naming the one that cannot be run.
        object.__setattr__(self, "_rejects", tuple(compile_pattern("(?i)" + p) for p in self.reject_relative))

    def allows(self, candidate: str) -> bool:
        """ConfigurableExtractorJS.shouldAddUri's own tests (the likely-URI test comes on top)."""
        if 0 < self.max_candidate_length < len(candidate):
            return False
        absolute = candidate.startswith(("http://", "https://"))
        if self.strict and not absolute:
            return False
        return absolute or not any(pattern.fullmatch(candidate) for pattern in self._rejects)


def unescape_script_string(text: str) -> str:
    """A JavaScript string literal's escapes undone (``\\u0041``, ``\\x41``, ``\\101``, ``\\n``, ``\\/``...)."""
    if "\\" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] in "ux" and len(escape) > 1:
            return chr(int(escape[1:], 16))
        if escape[0].isdigit() and escape[0] in "01234567":
            return chr(int(escape, 8))
        return _SIMPLE_ESCAPES.get(escape, escape)

    return _ESCAPE.sub(replace, text)


def speculative_fixup(candidate: str, base_url: str) -> str:
    """UriUtils.speculativeFixup: ``&amp;`` undone, an encoded absolute URL decoded, and a scheme-less URL
    whose first segment ends in a top-level domain made absolute (with the base's scheme on its own host)."""
    fixed = candidate.replace("&amp;", "&")
    if _ENCODED_ABSOLUTE.match(fixed):
        fixed = unquote(fixed)
    match = _SCHEMELESS.fullmatch(fixed)
    if match and is_top_level_domain(match.group(1)):
        base = urlsplit(base_url)
        scheme = base.scheme if base.hostname and fixed.startswith(base.hostname) else "http"
        fixed = f"{scheme}://{fixed}"
    return fixed


def is_very_likely_url(candidate: str) -> bool:
    """UriUtils.isVeryLikelyUri: Heritrix's test of a script string, with its false-positive guards."""
    if not _POSSIBLE.fullmatch(candidate):
        return False
    if _ABSOLUTE.fullmatch(candidate) or _PROTOCOL_RELATIVE.fullmatch(candidate):
        return True
    match = _RELATIVE.fullmatch(candidate)
    if match is None:
        return False
    filename, extension = match.group(1), match.group(2)
    if filename and extension and filename.count(".") > 1 and extension not in KNOWN_EXTENSIONS:
        return False
    if _WHITESPACE.search(candidate) and extension not in KNOWN_EXTENSIONS:
        return False
    if _MIME_TYPE.fullmatch(candidate) or _DECIMAL.fullmatch(candidate):
        return False
    selector = _SELECTOR.fullmatch(candidate)
    return not (selector and selector.group(1).lower() in HTML_ELEMENTS)


def script_strings(text: str, budget: ExtractionBudget | None = None) -> Iterator[str]:
    """The string literals of script text that could be URLs (isPossibleUri), as written. The search goes
    on just after each opening quote, so the text between two literals is a candidate too, as in Heritrix.
    With a ``budget`` the search ends once its time is up (looked at every BUDGET_CHECK literals)."""
    search = _STRING.search
    position = 0
    count = 0
    while True:
        match = search(text, position)
        if match is None:
            return
        count += 1
        if budget is not None and count % BUDGET_CHECK == 0 and budget.is_time_up():
            return
        literal = match.group(2)
        if _POSSIBLE.fullmatch(literal):
            yield literal
        position = match.end(1)


def script_links(text: str, base_url: str, rules: JsRules, budget: ExtractionBudget | None = None) -> list[str]:
    """The URLs (as written, after the fix-ups; relative ones stay relative) that script ``text`` holds, as
    far as the ``budget``'s time lets the search go."""
    found = []
    for literal in script_strings(text, budget):
        candidate = speculative_fixup(unescape_script_string(literal), base_url)
        if rules.allows(candidate) and is_very_likely_url(candidate):
            found.append(candidate)
    return found


def script_pieces_links(pieces: Iterable[bytes], base_url: str, rules: JsRules,
                        budget: ExtractionBudget | None = None) -> list[str]:
    """The links of a script file read piece by piece (decoded as UTF-8, bad bytes replaced). Each piece is
    searched with the tail of the one before, at most SCRIPT_OVERLAP characters, so a literal across a
    boundary is found; a literal found twice that way is kept once. The ``budget`` (one document's) ends the
    search once its time is up."""
    found: list[str] = []
    seen: set[str] = set()
    carried = ""
    buffered = b""
    for piece in pieces:
        buffered += piece
        if len(buffered) < SCRIPT_PIECE:
            continue
        carried = _scan(carried + buffered.decode("utf-8", "replace"), base_url, rules, found, seen, budget)
        buffered = b""
        if budget is not None and budget.is_time_up():
            return found
    if (buffered or carried) and not (budget is not None and budget.is_time_up()):
        _scan(carried + buffered.decode("utf-8", "replace"), base_url, rules, found, seen, budget)
    return found


def _scan(text: str, base_url: str, rules: JsRules, found: list[str], seen: set[str],
          budget: ExtractionBudget | None) -> str:
    for link in script_links(text, base_url, rules, budget):
        if link not in seen:
            seen.add(link)
            found.append(link)
    return text[-SCRIPT_OVERLAP:]


def is_script_type(content_type: str, url: str) -> bool:
    """Whether ExtractorJS reads a response as a script file: a JavaScript, JScript, ECMAScript or JSON
    type, or a URL ending in ``.js`` (ExtractorJS.shouldExtract)."""
    mime = content_type.lower()
    if "javascript" in mime or "jscript" in mime or "ecmascript" in mime or mime.startswith("application/json"):
        return True
    return urlsplit(url).path.lower().endswith(".js")
