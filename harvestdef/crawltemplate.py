"""Crawl templates: their placeholders, the one way to parse them, and the check before one is stored.

A crawl template is a Heritrix 3 crawler-beans .cxml with NetarchiveSuite's %{...} placeholders
(docs/jobgen.md, Template placeholders). A template that does not parse would only fail at the start of
every job built from it, on a harvester, hours later; so it is refused here, with the line and column lxml
reports, while the curator is still looking at it. The placeholders are plain text to XML, so they need no special care.
For the same reason the regexes of its MatchesListRegexDecideRule and MatchesRegexDecideRule beans must be
ones the bundled crawl engine can run (harvestdef.patterns.compile_crawl_pattern); a value holding a
placeholder is filled in later and checked then, by the engine.

Every place that parses a crawl template (this check, job generation's reading back of the warcinfo map,
the harvester's DeDuplicator switch, the bundled engine's bean reader) uses ``template_parser``: it never
resolves entities, loads a DTD or touches the network, so a template cannot make a harvester read its
files or call out while it is parsed. This module never touches the database.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import escape

from lxml import etree

from harvestdef.errors import PatternError, TemplateError
from harvestdef.patterns import compile_crawl_pattern
from harvestdef.phrases import N_, phrase
from harvestdef.politeness import PolitenessBounds

# ordertemplates.orderxml: NetarchiveSuite allows templates up to 64 MiB
MAX_TEMPLATE_BYTES = 64 * 1024 * 1024
REGEX_RULES = ("MatchesListRegexDecideRule", "MatchesRegexDecideRule")

#: A NetarchiveSuite placeholder, ``%{NAME}``; group 1 is the name.
PLACEHOLDER = re.compile(r"%\{([A-Za-z0-9_]+)\}")
#: The one placeholder job generation leaves: a path on the harvester, filled there
#: (docs/jobgen.md, Template placeholders).
DEDUPLICATION_INDEX_LOCATION = "DEDUPLICATION_INDEX_LOCATION_PLACEHOLDER"
#: Where job generation puts the warcinfo map (harvestInfo.*) of the WARC writer bean.
METADATA_ITEMS = "METADATA_ITEMS_PLACEHOLDER"


def placeholder(name: str) -> str:
    """The placeholder ``name`` as it is written in a template: ``%{NAME}``."""
    return f"%{{{name}}}"


def template_parser(remove_comments: bool = False) -> etree.XMLParser:
    """A new parser for crawl templates; lxml parsers must not be shared between threads, so one per parse.

    No entity expansion, no DTD and no network: a template is data from a person, not a document to
    resolve. huge_tree because templates may be as large as NetarchiveSuite allows (MAX_TEMPLATE_BYTES), and
    a template stored here must parse the same way on the harvester. ``remove_comments`` drops comments
    for readers that walk elements only.
    """
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True,
                           remove_comments=remove_comments)


def warcinfo_items(document: str) -> dict[str, str] | None:
    """The ``metadataItems`` map of a filled template's WARC writer bean (key -> value, in order), or None
    when the document holds none: a template without %{METADATA_ITEMS_PLACEHOLDER}, one not filled by job
    generation, or one that is not XML at all (the crawler refuses that one at the job's start).
    """
    if "metadataItems" not in document:
        return None
    try:
        root = etree.fromstring(document.encode("utf-8"), parser=template_parser(remove_comments=True))
    except etree.XMLSyntaxError:
        return None
    for prop in root.iter("{*}property"):
        if prop.get("name") == "metadataItems":
            return {str(entry.get("key")): str(entry.get("value", "")) for entry in prop.iter("{*}entry")}
    return None


def renumbered(document: str, old_prefix: str, new_prefix: str, job_id: int, submit_date: str) -> str:
    """A filled template of one job made the template of its resubmitted copy: the WARC writer's file
    prefix ``old_prefix`` becomes ``new_prefix``, and the warcinfo map names job ``job_id``, that prefix and
    ``submit_date`` (the copy's creation).

    Job generation fills both in once per job; a copy that kept them would write WARCs named after, and
    describing, the job it replaces. The values are replaced in the text, so the rest of the document stays
    byte for byte what the original job ran; a template that spells them in a shape the text replacement
    misses is rewritten through lxml instead. A document that is not XML is returned as it is: the crawler
    refuses it at the job's start, as it would have refused the original.
    """
    items = {"harvestInfo.jobId": str(job_id), "harvestInfo.harvestFilenamePrefix": new_prefix,
             "harvestInfo.jobSubmitDate": submit_date}
    text = re.sub(r"""(<property\s+name=(["'])prefix\2\s+value=)(["'])""" + re.escape(escape(old_prefix)) + r"\3",
                  lambda m: f"{m.group(1)}{m.group(3)}{escape(new_prefix)}{m.group(3)}", document)
    for key, value in items.items():
        text = re.sub(r"""(<entry\s+key=(["'])""" + re.escape(key) + r"""\2\s+value=)(["'])[^"'<>]*\3""",
                      lambda m, value=value: f"{m.group(1)}{m.group(3)}{escape(value)}{m.group(3)}", text)
    try:
        root = etree.fromstring(text.encode("utf-8"), parser=template_parser())
    except etree.XMLSyntaxError:
        return document
    if _names_the_copy(root, old_prefix, items):
        return text
    for prop in root.iter("{*}property"):
        if prop.get("name") == "prefix" and prop.get("value") == old_prefix:
            prop.set("value", new_prefix)
        elif prop.get("name") == "metadataItems":
            for entry in prop.iter("{*}entry"):
                if entry.get("key") in items:
                    entry.set("value", items[str(entry.get("key"))])
    declared = document.lstrip().startswith("<?xml")
    return etree.tostring(root.getroottree(), encoding="UTF-8", xml_declaration=declared).decode("utf-8")


def _names_the_copy(root: etree._Element, old_prefix: str, items: dict[str, str]) -> bool:
    for prop in root.iter("{*}property"):
        if prop.get("name") == "prefix" and prop.get("value") == old_prefix:
            return False
        if prop.get("name") == "metadataItems":
            for entry in prop.iter("{*}entry"):
                key = entry.get("key")
                if key in items and entry.get("value") != items[str(key)]:
                    return False
    return True


def check_orderxml(orderxml: str, name: str = "template", politeness: PolitenessBounds | None = None) -> str:
    """Return the root element's local name if ``orderxml`` is well-formed; else raise TemplateError.

    The error carries ``line`` and ``column`` (1-based, as lxml reports them). With ``politeness`` (the
    site's floors, harvestdef/politeness.py), a template giving a politeness value out of its bounds is
    refused too, naming the property, its line and the bound.
    """
    if not orderxml.strip():
        raise TemplateError(phrase(N_("%(name)s: the template is empty"), name=name), None, None)
    data = orderxml.encode("utf-8")
    if len(data) > MAX_TEMPLATE_BYTES:
        raise TemplateError(phrase(N_("%(name)s: the template is %(size)s bytes, more than %(limit)s"), name=name,
                                   size=len(data), limit=MAX_TEMPLATE_BYTES))
    try:
        root = etree.fromstring(data, parser=template_parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (None, None)
        # lxml's own reason stays as it is: quoted, not translated
        raise TemplateError(phrase(N_("%(name)s is not well-formed XML: line %(line)s, column %(column)s: "
                                      "%(reason)s"), name=name, line=str(line), column=str(column), reason=exc.msg),
                            line, column) from exc
    _check_regexes(root, name)
    if politeness is not None:
        politeness.check_template(root, name)
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
                    raise TemplateError(phrase(N_("%(name)s: the regex on line %(line)s cannot be used: %(error)s"),
                                               name=name, line=line, error=str(exc)), line, None) from exc
