"""Credential values of a crawl template masked for reading (harvestdef/templatesecrets.py): passwords,
form items and cookie values in each way a Spring crawler-beans (or a Heritrix 1 order.xml) can spell them,
while what is not a secret stays readable, and a template without secrets stays byte for byte; and the audit
log of a template's changes, on SQLite and PostgreSQL, without them."""

from __future__ import annotations

import json
from pathlib import Path

from lxml import etree
from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.repositories.templates import TemplateRepository
from harvestdef.templatesecrets import MASK, WITHHELD, has_secrets, masked_template

SECRET_TEMPLATE_PATH = Path(__file__).parent.parent / "data" / "secret-template.cxml"
SECRET_TEMPLATE = SECRET_TEMPLATE_PATH.read_text(encoding="utf-8")
# every secret value of tests/data/secret-template.cxml, in each of its spellings
SECRETS = ("s3cret-basic", "s3cret-form", "s3cret-p", "session=abc123", "s3cret-override", "s3cret-over2")
DEFAULT_TEMPLATE = Path(__file__).parent.parent.parent / "templates" / "default_orderxml.cxml"

HERITRIX1_ORDER = """<?xml version="1.0" encoding="UTF-8"?>
<crawl-order><controller><map name="credential-store"><map name="credentials">
  <newObject name="intranet" class="org.archive.crawler.datamodel.credential.Rfc2617Credential">
    <string name="credential-domain">www.site.dk</string><string name="login">harvester</string>
    <string name="password">h1-secret</string></newObject>
  <newObject name="members" class="org.archive.crawler.datamodel.credential.HtmlFormCredential">
    <string name="login-uri">http://www.site.dk/login</string>
    <map name="form-items"><string name="user">h1-user</string><string name="pw">h1-form</string></map>
  </newObject>
</map></map></controller></crawl-order>
"""


def test_every_secret_is_masked_and_the_rest_is_kept():
    for secret in SECRETS:
        assert secret in SECRET_TEMPLATE  # the sample holds it, so its absence below means something
    masked = masked_template(SECRET_TEMPLATE)
    for secret in SECRETS:
        assert secret not in masked, secret
    root = etree.fromstring(masked.encode("utf-8"))
    values = {element.get("name"): element.get("value") for element in root.iter("{*}property")}
    # who logs in where stays readable: domain, login, login URI, form item keys, other beans' values
    assert values["domain"] == "www.site.dk" and values["login"] == "harvester"
    assert values["loginUri"] == "http://www.site.dk/login" and values["password"] == MASK
    assert values["dir"] == "state", "the cookie store's BdbModule is not a secret"
    keys = [entry.get("key") for entry in root.iter("{*}entry")]
    assert {"user", "pw", "basic", "form"} <= set(keys)
    assert "Accept: text/html" in masked and f"Cookie: {MASK}" in masked
    assert "metadata.operatorContactUrl=http://www.kb.dk" in masked
    assert masked.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    assert has_secrets(SECRET_TEMPLATE) and not has_secrets(masked)
    assert masked_template(masked) == masked, "masking twice changes nothing more"


def test_a_template_without_secrets_is_unchanged_to_the_byte():
    document = DEFAULT_TEMPLATE.read_text(encoding="utf-8")
    assert masked_template(document) is document
    assert not has_secrets(document)


def test_a_heritrix1_order_is_masked_too():
    masked = masked_template(HERITRIX1_ORDER)
    for secret in ("h1-secret", "h1-user", "h1-form"):
        assert secret not in masked, secret
    assert "www.site.dk" in masked and ">harvester<" in masked


def test_a_document_that_is_not_xml_is_withheld_whole():
    broken = "<beans><bean class='HttpAuthenticationCredential'><property name='password' value='x'/>"
    assert masked_template(broken) == WITHHELD
    assert "not well-formed XML" in WITHHELD and "x'" not in WITHHELD


def test_the_audit_log_keeps_a_templates_changes_without_its_credential_values(engine):
    with engine.begin() as conn:
        templates = TemplateRepository(conn, "admin")
        templates.create("members", SECRET_TEMPLATE)
        templates.replace("members", SECRET_TEMPLATE.replace("s3cret-basic", "s3cret-basic-2"), 1)
        templates.replace("members", DEFAULT_TEMPLATE.read_text(encoding="utf-8"), 2)
    with engine.connect() as conn:
        rows = conn.execute(select(s.audit_log.c.action, s.audit_log.c.before, s.audit_log.c.after)
                            .where(s.audit_log.c.tablename == "ordertemplates")
                            .order_by(s.audit_log.c.audit_id)).all()
        stored = conn.scalar(select(s.ordertemplates.c.orderxml).where(s.ordertemplates.c.name == "members"))
    assert [row.action for row in rows] == ["insert", "update", "update"]
    for row in rows:
        for side in (row.before, row.after):
            assert side is None or not [secret for secret in SECRETS if secret in side], side
    assert MASK in json.loads(rows[0].after)["orderxml"]
    assert json.loads(rows[2].after)["orderxml"] == DEFAULT_TEMPLATE.read_text(encoding="utf-8")
    assert stored == DEFAULT_TEMPLATE.read_text(encoding="utf-8")
    with engine.connect() as conn:
        assert TemplateRepository(conn).get("members").edition == 3
