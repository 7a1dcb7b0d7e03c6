"""Crawl template validation: a template must be well-formed XML before it is stored.

A crawl template is a Heritrix 3 crawler-beans .cxml with NetarchiveSuite's %{...} placeholders
(reference §1.4). A template that does not parse would only fail at the start of every job built from it,
on a harvester, hours later; so it is refused here, with the line and column lxml reports, while the
curator is still looking at it. The placeholders are plain text to XML, so they need no special care.
For the same reason the regexes of its MatchesListRegexDecideRule and MatchesRegexDecideRule beans must be
ones the bundled crawl engine can run (harvestdef.patterns.compile_crawl_pattern); a value holding a
placeholder is filled in later and checked then, by the engine.

This module parses text only: it never resolves entities or fetches DTDs, and never touches the database.
"""

from __future__ import annotations

from lxml import etree

from harvestdef.errors import PatternError, TemplateError
from harvestdef.patterns import compile_crawl_pattern

# ordertemplates.orderxml: NetarchiveSuite allows templates up to 64 MiB (reference §1.4)
MAX_TEMPLATE_BYTES = 64 * 1024 * 1024
REGEX_RULES = ("MatchesListRegexDecideRule", "MatchesRegexDecideRule")


def _parser() -> etree.XMLParser:
    # No entity expansion and no network: a template is data from a person, not a document to resolve.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)


def check_orderxml(orderxml: str, name: str = "template") -> str:
    """Return the root element's local name if ``orderxml`` is well-formed; else raise TemplateError.

    The error carries ``line`` and ``column`` (1-based, as lxml reports them).
    """
    if not orderxml.strip():
        raise TemplateError(f"{name}: the template is empty", None, None)
    data = orderxml.encode("utf-8")
    if len(data) > MAX_TEMPLATE_BYTES:
        raise TemplateError(f"{name}: the template is {len(data)} bytes, more than {MAX_TEMPLATE_BYTES}")
    try:
        root = etree.fromstring(data, parser=_parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (None, None)
        raise TemplateError(f"{name} is not well-formed XML: line {line}, column {column}: {exc.msg}",
                            line, column) from exc
    _check_regexes(root, name)
    return etree.QName(root).localname


def _check_regexes(root: etree._Element, name: str) -> None:
    for bean in root.iter("{*}bean"):
        if not str(bean.get("class", "")).endswith(REGEX_RULES):
            continue
        for prop in bean.iterfind("{*}property"):
            if prop.get("name") == "regex":
                values = [(prop.get("value", prop.text or ""), prop.sourceline)]
            elif prop.get("name") == "regexList":
                values = [(value.text or "", value.sourceline) for value in prop.iter("{*}value")]
            else:
                continue
            for text, line in values:
                if "%{" in text or not text.strip():
                    continue
                try:
                    compile_crawl_pattern(text.strip(), 1.0)
                except PatternError as exc:
                    raise TemplateError(f"{name}: the regex on line {line} cannot be used: {exc}", line,
                                        None) from exc
