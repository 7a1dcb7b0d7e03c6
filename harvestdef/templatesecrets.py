"""The secrets a crawl template holds, and the copy of a template with them masked.

A crawl template may carry what logs a crawl into a site: the credential store's HttpAuthenticationCredential
(formerly Rfc2617Credential) passwords, its HtmlFormCredential form items (user name and password of a
login form), and cookie values (the properties of a cookie store bean, a ``Cookie:`` or ``Authorization:``
header among FetchHTTP's ``acceptHeaders``, and such keys of a PropertyOverrideConfigurer's ``properties``).
The crawler needs the real values, so the template stored in the database and the one sent to the harvester
in a job keep them; every copy made for someone to read (the web UI's pages, API and downloads for every role
but admin, the metadata WARC's copy of the job's crawler-beans.cxml) is ``masked_template``'s.

What is masked is the value, never the structure: a credential's bean, its domain, realm, login and login URI
and a form item's key stay readable, so a reader still sees which sites the crawl logs into and how. Each
masked value becomes ``MASK``. NetarchiveSuite's Heritrix 1 order.xml (a migrated site's old jobs) is masked
the same way: the ``password`` and the ``form-items`` of every credential.

A document that is not well-formed XML cannot be searched for its secrets, so ``masked_template`` gives the
``WITHHELD`` notice instead of it. This module does no I/O and never logs a template.
"""

from __future__ import annotations

import re

from lxml import etree

from harvestdef.crawltemplate import template_parser

#: What a masked value reads.
MASK = "[masked]"
#: What stands for a document that is not XML, whose secrets cannot be found.
WITHHELD = ("<!-- withheld: this crawl template is not well-formed XML, so its credential values could not be "
            "found and masked; only admins see it -->\n")

CREDENTIAL_CLASSES = ("HttpAuthenticationCredential", "Rfc2617Credential", "HtmlFormCredential")
COOKIE_STORE_CLASSES = ("BdbCookieStore", "SimpleCookieStore")
# the properties of a credential bean that hold a secret; domain, realm, login and loginUri do not
SECRET_PROPERTIES = frozenset({"password", "formItems"})
SPRING_P = "http://www.springframework.org/schema/p"
# a header that carries a secret, wherever a template lists headers to send
SECRET_HEADER = re.compile(r"^(\s*(?:cookie|authorization|proxy-authorization)\s*:\s*).*$", re.IGNORECASE | re.DOTALL)
# a PropertyOverrideConfigurer line ``bean.property=value`` whose value is a secret
_OVERRIDE_LINE = re.compile(r"^(\s*([^=:\s]+)\s*[=:]\s*)(.*)$")


def _short_class(element: etree._Element) -> str:
    return str(element.get("class", "")).rsplit(".", 1)[-1]


class _Masker:
    """One pass over a parsed template; ``changed`` says whether it masked anything."""

    def __init__(self, root: etree._Element) -> None:
        self.root = root
        self.changed = False
        self.by_id = {str(element.get("id")): element for element in root.iter() if element.get("id")}
        self.secret_bean_ids: set[str] = set()  # the credential and cookie store beans' ids
        self.followed: set[str] = set()  # ids of what a secret refers to, masked once

    def mask_value(self, element: etree._Element, follow_references: bool = True) -> None:
        """Every literal value inside ``element`` (keys kept), and with ``follow_references`` inside the beans,
        maps and lists it refers to (a password or form items kept in a bean of their own)."""
        for inner in element.iter():
            if not isinstance(inner.tag, str):
                continue  # a comment or processing instruction
            if inner.get("value") is not None and inner.get("value") != MASK:
                inner.set("value", MASK)
                self.changed = True
            local = etree.QName(inner).localname
            if local in ("value", "prop") and len(inner) == 0 and (inner.text or "").strip() and inner.text != MASK:
                inner.text = MASK
                self.changed = True
            if not follow_references:
                continue
            reference = inner.get("value-ref") or inner.get("ref") or inner.get("bean")
            target = self.by_id.get(str(reference)) if reference else None
            if target is not None and target is not element and str(reference) not in self.followed:
                self.followed.add(str(reference))
                self.mask_value(target)

    def mask_secret_bean(self, bean: etree._Element, properties: frozenset[str] | None) -> None:
        """The secret properties of a credential bean, or (``properties`` None) every value of a cookie store
        bean, whose references (its BdbModule) are not secrets."""
        follow = properties is not None
        for prop in bean.iterfind("{*}property"):
            if properties is None or prop.get("name") in properties:
                self.mask_value(prop, follow)
        for name, value in bean.attrib.items():
            qname = etree.QName(name)
            if qname.namespace != SPRING_P or value == MASK:
                continue
            is_reference = qname.localname.endswith("-ref")
            if properties is not None and qname.localname.removesuffix("-ref") not in properties:
                continue
            if not is_reference:
                bean.set(name, MASK)
                self.changed = True
            elif follow and value in self.by_id and value not in self.followed:
                self.followed.add(value)
                self.mask_value(self.by_id[value])

    def mask_headers(self, prop: etree._Element) -> None:
        for value in prop.iter("{*}value"):
            masked = SECRET_HEADER.sub(lambda m: m.group(1) + MASK, value.text or "")
            if masked != (value.text or ""):
                value.text = masked
                self.changed = True

    def mask_overrides(self, prop: etree._Element) -> None:
        """PropertyOverrideConfigurer's ``properties``: ``beanId.property=value`` lines (a ``value``
        attribute or ``<value>`` text), or ``<prop key="beanId.property">value</prop>`` entries."""
        if prop.get("value") is not None:
            prop.set("value", self._masked_lines(str(prop.get("value"))))
        for value in prop.iter("{*}value"):
            if value.text:
                value.text = self._masked_lines(value.text)
        for entry in prop.iter("{*}prop"):
            key = str(entry.get("key", ""))
            masked = self._masked_setting(key, entry.text or "")
            if masked != (entry.text or ""):
                entry.text = masked
                self.changed = True

    def _masked_lines(self, text: str) -> str:
        lines = []
        for line in text.split("\n"):
            found = _OVERRIDE_LINE.match(line)
            if found is not None:
                masked = self._masked_setting(found.group(2), found.group(3))
                if masked != found.group(3):
                    line = found.group(1) + masked
                    self.changed = True
            lines.append(line)
        return "\n".join(lines)

    def _masked_setting(self, key: str, value: str) -> str:
        """The value of the override ``key``, masked when it is a secret."""
        parts = key.split(".")
        if parts[-1] == "acceptHeaders" or "acceptHeaders" in parts:
            return SECRET_HEADER.sub(lambda m: m.group(1) + MASK, value)
        if not value.strip() or value.strip() == MASK:
            return value
        if parts[-1] in SECRET_PROPERTIES or "formItems" in parts or parts[0] in self.secret_bean_ids:
            return MASK
        return value

    def run(self) -> None:
        for bean in self.root.iter("{*}bean"):
            short = _short_class(bean)
            if short in CREDENTIAL_CLASSES or short in COOKIE_STORE_CLASSES:
                if bean.get("id"):
                    self.secret_bean_ids.add(str(bean.get("id")))
                self.mask_secret_bean(bean, SECRET_PROPERTIES if short in CREDENTIAL_CLASSES else None)
        for prop in self.root.iter("{*}property"):
            if prop.get("name") == "acceptHeaders":
                self.mask_headers(prop)
        for bean in self.root.iter("{*}bean"):
            if _short_class(bean) == "PropertyOverrideConfigurer":
                for prop in bean.iterfind("{*}property"):
                    if prop.get("name") == "properties":
                        self.mask_overrides(prop)
        self._mask_heritrix1()

    def _mask_heritrix1(self) -> None:
        """Heritrix 1's order.xml: ``<newObject class="...Rfc2617Credential">`` (or HtmlFormCredential) holds
        ``<string name="password">`` and ``<map name="form-items">``."""
        for credential in self.root.iter("{*}newObject"):
            if _short_class(credential) not in CREDENTIAL_CLASSES:
                continue
            for inner in credential.iter():
                if not isinstance(inner.tag, str):
                    continue
                named = inner.get("name")
                inside_items = any(parent.get("name") == "form-items" for parent in inner.iterancestors())
                if (named == "password" or inside_items) and len(inner) == 0 and (inner.text or "").strip() \
                        and inner.text != MASK:
                    inner.text = MASK
                    self.changed = True


def masked_template(document: str) -> str:
    """``document`` with every credential value replaced by MASK (module docstring); the document itself,
    unchanged to the byte, when it holds none (an empty one too); WITHHELD when it is not well-formed XML."""
    if not document.strip():
        return document
    try:
        root = etree.fromstring(document.encode("utf-8"), parser=template_parser())
    except (etree.XMLSyntaxError, ValueError):
        return WITHHELD
    masker = _Masker(root)
    masker.run()
    if not masker.changed:
        return document
    # the document's own declaration, as it was written; lxml would rewrite its quotes
    text = document.lstrip()
    declaration = text[:text.index("?>") + 2] + "\n" if text.startswith("<?xml") and "?>" in text else ""
    return declaration + etree.tostring(root.getroottree(), encoding="unicode")


def has_secrets(document: str) -> bool:
    """True when ``masked_template`` would change ``document``: it holds a credential value, or is not XML."""
    return masked_template(document) != document
