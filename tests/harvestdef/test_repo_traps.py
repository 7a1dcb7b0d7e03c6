"""Global crawler trap lists and the trap validation shared with domains and harvests. Both databases."""

from __future__ import annotations

import pytest

from harvestdef.errors import ConflictError, NotFoundError
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository
from harvestdef.traps import MAX_EXPRESSION_LENGTH, CrawlerTrapError, validate_trap_expressions
from tests.harvestdef.factories import make_trap_list


def test_validation_drops_blanks_and_duplicates_in_order():
    assert validate_trap_expressions(["b.*", "", "a.*\n  b.*  ", "c.*"]) == ("b.*", "a.*", "c.*")


@pytest.mark.parametrize("expression, reason", [
    ("*.pdf", "no argument for repetition operator: \\*"),
    (".*[a-", "the character class is never closed"),
    ("(?<=a+)b", "lookbehind '\\(\\?<=' at column 1: RE2 has no lookaround"),
    (r".*(/[^/]+)\1{3,}.*", r"backreference \\1 at column 11"),
])
def test_refused_with_line_and_reason(expression, reason):
    with pytest.raises(CrawlerTrapError, match=f"line 2 .*{reason}") as caught:
        validate_trap_expressions(f"ok\n{expression}\n")
    assert caught.value.line == 2 and caught.value.expression == expression


def test_create_lists_and_activate_one(engine):
    """The lists as the traps page shows them; what a job receives of the active ones is job generation's
    (tests/scheduler/test_generate_global_traps.py)."""
    with engine.begin() as conn:
        make_trap_list(conn, "calendars", [".*/calendar/.*", ".*/kalender/.*"])
        make_trap_list(conn, "inactive", [".*/never/.*"], active=False)
        make_trap_list(conn, "sessions", [".*;jsessionid=.*", ".*/calendar/.*"])
        repository = GlobalCrawlerTrapRepository(conn)
        assert [(t.name, t.isactive, t.expressions) for t in repository.all_lists()] == [
            ("calendars", True, (".*/calendar/.*", ".*/kalender/.*")),
            ("inactive", False, (".*/never/.*",)),
            ("sessions", True, (".*;jsessionid=.*", ".*/calendar/.*"))]
        activated = repository.set_active("inactive", True)
        assert activated.isactive and repository.get("inactive").expressions == (".*/never/.*",)


def test_bad_expression_or_too_long_is_refused_and_nothing_stored(engine):
    with engine.begin() as conn:
        repository = GlobalCrawlerTrapRepository(conn)
        with pytest.raises(CrawlerTrapError, match="line 3"):
            repository.create("bad", "a\nb\n(c")
        with pytest.raises(CrawlerTrapError, match="at most 1000"):
            repository.create("long", ["x" * (MAX_EXPRESSION_LENGTH + 1)])
        with pytest.raises(NotFoundError):
            repository.get("bad")


def test_update_rename_delete_and_audit(engine):
    with engine.begin() as conn:
        trap_list = make_trap_list(conn, "old", ["a.*"])
        make_trap_list(conn, "other")
    with engine.begin() as conn, pytest.raises(ConflictError, match="other"):
        GlobalCrawlerTrapRepository(conn, "alice").update("old", new_name="other")
    with engine.begin() as conn:
        repository = GlobalCrawlerTrapRepository(conn, "alice")
        updated = repository.update("old", new_name="new", expressions="b.*\nc.*", description="why")
        assert (updated.name, updated.expressions, updated.description) == ("new", ("b.*", "c.*"), "why")
        repository.delete("new")
        with pytest.raises(NotFoundError):
            repository.get("new")
        changes = AuditRepository(conn).changes_of("global_crawler_trap_lists", trap_list.list_id)
    assert [c.action for c in changes] == ["delete", "update", "insert"]
    assert changes[1].before["expressions"] == ["a.*"] and changes[1].after["expressions"] == ["b.*", "c.*"]
