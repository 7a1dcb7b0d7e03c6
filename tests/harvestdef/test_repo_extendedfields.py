"""Extended fields on domains and harvest definitions, and their values. Both databases."""

from __future__ import annotations

import pytest

from harvestdef.errors import ConflictError, NotFoundError, ValidationError
from harvestdef.model.definitions import ExtendedFieldDatatype as D
from harvestdef.model.definitions import ExtendedFieldType as T
from harvestdef.repositories.extendedfields import ExtendedFieldRepository
from tests.harvestdef.factories import make_domain, make_selective_harvest


def test_define_and_set_values_for_domains_and_harvests(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        harvest = make_selective_harvest(conn, "sel")
        repository = ExtendedFieldRepository(conn, "alice")
        owner = repository.define(T.DOMAINS, "Owner", D.STRING, maxlen=20, sequencenr=1)
        public = repository.define(T.DOMAINS, "Public", D.BOOLEAN, defaultvalue="false", sequencenr=2)
        topic = repository.define(T.HARVESTDEFINITIONS, "Topic", D.SELECT, options=("news", "culture"))
        repository.set_value(owner.field_id, domain.domain_id, "  Royal Library ")
        repository.set_value(owner.field_id, domain.domain_id, "KB")
        repository.set_value(topic.field_id, harvest.harvest_id, "news")
        assert repository.values_of(T.DOMAINS, domain.domain_id) == {"Owner": "KB", "Public": "false"}
        assert repository.values_of(T.HARVESTDEFINITIONS, harvest.harvest_id) == {"Topic": "news"}
        assert [f.name for f in repository.fields_of(T.DOMAINS)] == ["Owner", "Public"]
        assert public.defaultvalue == "false" and topic.options == ("news", "culture")


@pytest.mark.parametrize("datatype, options, content, reason", [
    (D.BOOLEAN, (), "yes", "true or false"),
    (D.NUMBER, (), "12a", "a number"),
    (D.TIMESTAMP, (), "31/01/2026", "a date"),
    (D.SELECT, ("a", "b"), "c", "one of a, b"),
    (D.STRING, (), "x" * 11, "at most 10 characters"),
])
def test_values_are_checked_against_the_field(engine, datatype, options, content, reason):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        repository = ExtendedFieldRepository(conn)
        field = repository.define(T.DOMAINS, "f", datatype, options=options, maxlen=10)
        with pytest.raises(ValidationError, match=reason):
            repository.set_value(field.field_id, domain.domain_id, content)


def test_mandatory_duplicate_unknown_instance_and_delete(engine):
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        repository = ExtendedFieldRepository(conn)
        field = repository.define(T.DOMAINS, "Owner", D.STRING, mandatory=True)
        with pytest.raises(ValidationError, match="mandatory"):
            repository.set_value(field.field_id, domain.domain_id, "  ")
        with pytest.raises(NotFoundError, match="domain 4242"):
            repository.set_value(field.field_id, 4242, "x")
        with pytest.raises(ConflictError, match="domains/Owner"):
            repository.define(T.DOMAINS, "Owner", D.NOTE)
        assert repository.define(T.HARVESTDEFINITIONS, "Owner", D.NOTE).name == "Owner"
        with pytest.raises(ValidationError, match="needs options"):
            repository.define(T.DOMAINS, "Pick", D.SELECT)
        repository.set_value(field.field_id, domain.domain_id, "KB")
        repository.delete(field.field_id)
        assert repository.values_of(T.DOMAINS, domain.domain_id) == {}
        with pytest.raises(NotFoundError):
            repository.get(field.field_id)


def test_set_values_checks_every_value_first_and_writes_only_changes(engine):
    from harvestdef.repositories.audit import AuditRepository
    with engine.begin() as conn:
        domain = make_domain(conn, "kb.dk")
        repository = ExtendedFieldRepository(conn, "alice")
        repository.define(T.DOMAINS, "Owner", D.STRING, maxlen=20)
        repository.define(T.DOMAINS, "Public", D.BOOLEAN, defaultvalue="false")
        repository.define(T.HARVESTDEFINITIONS, "Topic", D.STRING)
        with pytest.raises(ValidationError, match="'Public' is true or false"):
            repository.set_values(T.DOMAINS, domain.domain_id, {"Owner": "KB", "Public": "maybe"})
        assert repository.value_ids_of(T.DOMAINS, domain.domain_id) == [], "nothing written"
        with pytest.raises(ValidationError, match="no domains extended field named 'Topic'"):
            repository.set_values(T.DOMAINS, domain.domain_id, {"Topic": "x"})
        assert repository.set_values(T.DOMAINS, domain.domain_id, {"Owner": "KB", "Public": "false"}) == ["Owner"]
        assert repository.set_values(T.DOMAINS, domain.domain_id, {"Owner": " KB ", "Public": "true"}) == ["Public"]
        value_ids = repository.value_ids_of(T.DOMAINS, domain.domain_id)
        assert repository.values_of(T.DOMAINS, domain.domain_id) == {"Owner": "KB", "Public": "true"}
        changes = [AuditRepository(conn).changes_of("extendedfieldvalue", value_id) for value_id in value_ids]
    assert [[(c.actor, c.action, c.after["content"]) for c in trail] for trail in changes] == [
        [("alice", "insert", "KB")], [("alice", "insert", "true")]]
