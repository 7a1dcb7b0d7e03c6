"""Crawl templates: well-formedness with line and column, replace/activate under editions, deletion rules.
Both databases."""

from __future__ import annotations

import pytest

from harvestdef.errors import ConflictError, NotFoundError, StaleEditionError, TemplateError, ValidationError
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.templates import TemplateRepository
from tests.harvestdef.factories import SMALL_TEMPLATE, make_configuration, make_template

# The closing tag on line 4 does not match; lxml reports the error at line 4, column 9.
BROKEN = """<?xml version="1.0" encoding="UTF-8"?>
<beans>
  <bean id="x">
  </bea>
</beans>
"""


def test_real_netarchivesuite_template_is_accepted(engine, shared_dir):
    orderxml = (shared_dir / "fixtures" / "heritrix3" / "netarchivesuite-default_orderxml.cxml").read_text("utf-8")
    with engine.begin() as conn:
        template = TemplateRepository(conn, "alice").create("nas_default", orderxml, description="from NAS 8.1")
        again = TemplateRepository(conn).get("nas_default")
    assert again == template and template.orderxml == orderxml and template.isactive and template.edition == 1


def test_parse_error_carries_line_and_column(engine):
    with engine.begin() as conn:
        with pytest.raises(TemplateError) as caught:
            TemplateRepository(conn).create("broken", BROKEN)
        assert (caught.value.line, caught.value.column) == (4, 9)
        assert "line 4, column 9" in str(caught.value) and "mismatch" in str(caught.value)
        with pytest.raises(NotFoundError):
            TemplateRepository(conn).get("broken")


def test_empty_template_is_refused(engine):
    with engine.begin() as conn, pytest.raises(TemplateError, match="empty"):
        TemplateRepository(conn).create("empty", "  \n")


def test_replace_checks_xml_and_edition(engine):
    with engine.begin() as conn:
        template = make_template(conn, "small")
        repository = TemplateRepository(conn)
        with pytest.raises(TemplateError):
            repository.replace("small", "<beans>", template.edition)
        replaced = repository.replace("small", SMALL_TEMPLATE.replace("JOB_NAME", "JOB"), template.edition)
    assert replaced.edition == template.edition + 1 and "%{JOB}" in replaced.orderxml
    with engine.begin() as conn, pytest.raises(StaleEditionError, match="template"):
        TemplateRepository(conn).replace("small", SMALL_TEMPLATE, template.edition)
    with engine.connect() as conn:
        assert TemplateRepository(conn).get("small") == replaced


def test_activate_deactivate_and_listing(engine):
    with engine.begin() as conn:
        template = make_template(conn, "zz_small")
        repository = TemplateRepository(conn)
        hidden = repository.deactivate("zz_small", template.edition)
        assert "zz_small" not in repository.names(active_only=True)
        assert "zz_small" in repository.names()
        assert [t.name for t in repository.page(None, 1000) if t.name == "zz_small"] == ["zz_small"]
        shown = repository.activate("zz_small", hidden.edition)
        assert shown.isactive and "zz_small" in repository.names(active_only=True)


def test_duplicate_name_is_a_conflict(engine):
    with engine.begin() as conn:
        make_template(conn, "small")
    with engine.begin() as conn, pytest.raises(ConflictError, match="small"):
        make_template(conn, "small")


def test_template_in_use_cannot_be_deleted_unused_can(engine):
    with engine.begin() as conn:
        template = make_template(conn, "used")
        config = make_configuration(conn, template="used")
        unused = make_template(conn, "unused")
        repository = TemplateRepository(conn, "alice")
        with pytest.raises(ValidationError, match=f"used by 1 configuration.*{config.domain_name}/{config.name}"):
            repository.delete("used", template.edition)
        with pytest.raises(StaleEditionError):
            repository.delete("unused", unused.edition + 1)
        repository.delete("unused", unused.edition)
        assert "unused" not in repository.names()
        changes = AuditRepository(conn).changes_of("ordertemplates", unused.template_id)
    assert [(c.action, c.actor) for c in changes] == [("delete", "alice"), ("insert", "system")]
