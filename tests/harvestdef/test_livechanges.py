"""What a change to a running job may say (harvestdef/livechanges.py): every kind's payload normalised as it is
stored, and every refusal naming its field."""

from __future__ import annotations

from typing import Any

import pytest

from harvestdef.errors import FieldError, ValidationError
from harvestdef.livechanges import (
    CONTROL_ACTIONS,
    MAX_ADDED_URIS,
    MAX_DELAY_MS,
    MAX_REASON_LENGTH,
    MAX_REGEX_LENGTH,
    validate_change,
)

DOMAINS = frozenset({"a.dk", "københavn.dk", "127.0.0.1"})


def refused(kind: str, body: dict[str, Any], domains: frozenset[str] = DOMAINS) -> FieldError:
    with pytest.raises(FieldError) as caught:
        validate_change(kind, body, domains)
    assert isinstance(caught.value, ValidationError)
    return caught.value


# ---------------------------------------------------------------- control actions
@pytest.mark.parametrize("action", CONTROL_ACTIONS)
def test_a_control_action_takes_nothing_but_a_reason(action):
    assert validate_change(action, {}, DOMAINS) == {}
    assert validate_change(action, {"reason": "  disk nearly full "}, DOMAINS) == {"reason": "disk nearly full"}
    assert validate_change(action, {"reason": "   "}, DOMAINS) == {}
    assert validate_change(action, {"reason": None}, DOMAINS) == {}
    assert validate_change(action, {"kind": action}, DOMAINS) == {}
    error = refused(action, {"regex": "x"})
    assert error.field == "regex" and f"not a field of a {action} change" in str(error) and "reason" in str(error)


def test_a_reason_is_one_line_of_at_most_500_characters():
    assert validate_change("pause", {"reason": "x" * MAX_REASON_LENGTH}, DOMAINS) == {"reason": "x" * 500}
    error = refused("pause", {"reason": "x" * (MAX_REASON_LENGTH + 1)})
    assert error.field == "reason" and "at most 500 characters, not 501" in str(error)
    assert "U+000A" in str(refused("stop", {"reason": "one\ntwo"}))
    assert refused("stop", {"reason": 5}).problem == "must be text, not the number 5"


def test_an_unknown_kind_or_a_kind_that_disagrees_is_refused_naming_kind():
    error = refused("shutdown", {})
    assert error.field == "kind" and "pause, resume, checkpoint, stop, fail, reject" in str(error)
    assert refused("reject", {"kind": "budget", "regex": "x"}).field == "kind"


def test_unknown_fields_are_refused_naming_them_all():
    error = refused("reject", {"regex": "x", "colour": "red", "size": 1})
    assert error.field == "colour"
    assert error.problem == "is not a field of a reject change, nor is size; it takes regex, domain"
    three = refused("politeness", {"a": 1, "b": 2, "c": 3})
    assert three.field == "a" and "nor are b, c" in three.problem


# ---------------------------------------------------------------- reject, unreject, delete_queued
@pytest.mark.parametrize("kind", ["reject", "unreject"])
def test_a_rule_is_a_regex_with_an_optional_domain_of_the_job(kind):
    assert validate_change(kind, {"regex": r" .*\.pdf$ "}, DOMAINS) == {"regex": r".*\.pdf$"}
    assert validate_change(kind, {"regex": "x", "domain": None}, DOMAINS) == {"regex": "x"}
    # punycode or Unicode: stored as the job has it
    assert validate_change(kind, {"regex": "x", "domain": "XN--KBENHAVN-54A.DK"}, DOMAINS) == \
        {"regex": "x", "domain": "københavn.dk"}
    assert validate_change(kind, {"regex": "x", "domain": "a.dk"}, DOMAINS)["domain"] == "a.dk"
    assert refused(kind, {"domain": "a.dk"}).field == "regex"


def test_a_domain_must_be_one_of_the_jobs_own():
    error = refused("reject", {"regex": "x", "domain": "b.dk"})
    assert error.field == "domain" and error.problem.startswith("b.dk is not one of the job's domains (127.0.0.1")
    host = refused("reject", {"regex": "x", "domain": "www.a.dk"})
    assert host.field == "domain" and "its domain is 'a.dk'" in host.problem
    assert refused("reject", {"regex": "x", "domain": "not a name"}).field == "domain"
    assert refused("reject", {"regex": "x", "domain": 7}).problem == "must be a domain name, not the number 7"
    many = frozenset(f"d{number}.dk" for number in range(40))
    assert "and 35 more" in refused("reject", {"regex": "x", "domain": "b.dk"}, many).problem


@pytest.mark.parametrize("kind", ["reject", "unreject", "delete_queued"])
@pytest.mark.parametrize("regex, problem", [
    ("", "must be 1 to 1000 characters, not 0"),
    ("   ", "must be 1 to 1000 characters, not 0"),
    ("a" * (MAX_REGEX_LENGTH + 1), "must be 1 to 1000 characters, not 1001"),
    ("a\tb", "must not contain control characters or line breaks: it has U+0009"),
    ("a\x85b", "must not contain control characters or line breaks: it has U+0085"),
    ("a\u2028b", "must not contain control characters or line breaks: it has U+2028"),
    ("(a", "is not a regular expression the crawler can run: '(' at column 1: the group is never closed"),
    ("x{", "is not a regular expression the crawler can run: '{' at column 2"),
    (r"(a)\1", "is not a regular expression the crawler can run: "),
    ("a(?=b)", "RE2 has no lookaround"),
    (["x"], "must be text, not a list"),
])
def test_a_regex_must_compile_in_javas_syntax(kind, regex, problem):
    error = refused(kind, {"regex": regex})
    assert error.field == "regex" and problem in error.problem


def test_javas_own_constructs_are_taken():
    for regex in (r"\Qa.b\E", r"\p{Lower}+", r"(?i)PDF", r"[a-c[x-z]]", "a" * MAX_REGEX_LENGTH):
        assert validate_change("delete_queued", {"regex": regex}, DOMAINS) == {"regex": regex}


def test_delete_queued_has_no_domain():
    assert refused("delete_queued", {"regex": "x", "domain": "a.dk"}).field == "domain"


# ---------------------------------------------------------------- budget
def test_a_budget_is_for_a_domain_of_the_job_with_at_least_one_limit():
    assert validate_change("budget", {"domain": "a.dk", "max_objects": -1}, DOMAINS) == \
        {"domain": "a.dk", "max_objects": -1}
    assert validate_change("budget", {"domain": "københavn.dk", "max_objects": 0, "max_bytes": 2**40}, DOMAINS) == \
        {"domain": "københavn.dk", "max_objects": 0, "max_bytes": 2**40}
    assert validate_change("budget", {"domain": "a.dk", "max_bytes": 5, "max_objects": None}, DOMAINS) == \
        {"domain": "a.dk", "max_bytes": 5}
    assert refused("budget", {"max_objects": 5}).field == "domain"
    assert refused("budget", {"domain": None, "max_objects": 5}).field == "domain"
    assert refused("budget", {"domain": "b.dk", "max_objects": 5}).field == "domain"
    missing = refused("budget", {"domain": "a.dk"})
    assert missing.field == "max_objects" and "max_objects or max_bytes" in missing.problem


@pytest.mark.parametrize("field", ["max_objects", "max_bytes"])
@pytest.mark.parametrize("value, problem", [
    (-2, "must be -1 (unlimited) or more, not -2"),
    (True, "must be a whole number, not a boolean"),
    (False, "must be a whole number, not a boolean"),
    (1.5, "must be a whole number, not the number 1.5"),
    (10.0, "must be a whole number, not the number 10.0"),
    ("10", "must be a whole number, not the text '10'"),
    (2**63, "must be -1 (unlimited) or more, not"),
])
def test_a_budget_limit_is_a_whole_number_from_minus_one(field, value, problem):
    error = refused("budget", {"domain": "a.dk", field: value})
    assert error.field == field and error.problem.startswith(problem)


# ---------------------------------------------------------------- add_uris
def test_added_uris_are_normalised_as_seeds_and_kept_once():
    payload = validate_change("add_uris", {"uris": [
        "http://a.dk/", " https://WWW.københavn.dk/side ", "www.a.dk/x", "http://a.dk/", "http://127.0.0.1:8080/"]},
        DOMAINS)
    assert payload == {"uris": ["http://a.dk/", "https://www.xn--kbenhavn-54a.dk/side", "http://www.a.dk/x",
                                "http://127.0.0.1:8080/"]}
    assert validate_change("add_uris", {"uris": ["http://deep.sub.a.dk/"]}, DOMAINS) == \
        {"uris": ["http://deep.sub.a.dk/"]}


@pytest.mark.parametrize("uris, field, problem", [
    (None, "uris", "is required"),
    ([], "uris", "must hold 1 to 1000 URIs, not 0"),
    (["http://a.dk/"] * (MAX_ADDED_URIS + 1), "uris", "must hold 1 to 1000 URIs, not 1001"),
    ("http://a.dk/", "uris", "must be a list of URIs, not the text"),
    (["http://a.dk/", 5], "uris[1]", "must be a URI, not the number 5"),
    (["http://a.dk/", "ftp://a.dk/x"], "uris[1]", "'ftp://a.dk/x' is not an http or https URL (its scheme is ftp)"),
    (["http://a.dk/", "", "x"], "uris[1]", "is empty"),
    (["http://b.dk/"], "uris[0]", "'http://b.dk/' is on b.dk, which is in none of the job's domains"),
    (["http://xa.dk/"], "uris[0]", "is on xa.dk, which is in none"),
    (["http://a.dk.evil.org/"], "uris[0]", "which is in none"),
    (["http://127.0.0.2/"], "uris[0]", "which is in none"),
    (["http://a.dk/a b"], "uris[0]", "it contains a space"),
])
def test_an_added_uri_is_an_http_uri_on_the_jobs_domains_refused_by_its_index(uris, field, problem):
    error = refused("add_uris", {"uris": uris})
    assert error.field == field and problem in error.problem


def test_added_uris_match_the_sites_seed_pattern():
    with pytest.raises(FieldError) as caught:
        validate_change("add_uris", {"uris": ["https://a.dk/", "http://a.dk/"]}, DOMAINS,
                        valid_seed_regex=r"https://.*")
    assert caught.value.field == "uris[1]" and "validSeedRegex" in caught.value.problem


# ---------------------------------------------------------------- politeness
def test_politeness_takes_any_of_its_four_settings():
    assert validate_change("politeness", {"delay_factor": 2}, DOMAINS) == {"delay_factor": 2.0}
    assert validate_change("politeness", {"delay_factor": 0.5, "min_delay_ms": 0, "max_delay_ms": MAX_DELAY_MS,
                                          "max_per_host": 1}, DOMAINS) == \
        {"delay_factor": 0.5, "min_delay_ms": 0, "max_delay_ms": 3_600_000, "max_per_host": 1}
    assert validate_change("politeness", {"min_delay_ms": 500, "max_delay_ms": 500}, DOMAINS) == \
        {"min_delay_ms": 500, "max_delay_ms": 500}
    assert validate_change("politeness", {"max_per_host": 100}, DOMAINS) == {"max_per_host": 100}
    none = refused("politeness", {})
    assert "at least one of delay_factor, min_delay_ms, max_delay_ms, max_per_host" in none.problem
    assert refused("politeness", {"delay_factor": None}).field == "delay_factor"


@pytest.mark.parametrize("body, field, problem", [
    ({"delay_factor": -0.1}, "delay_factor", "must be between 0 and 100, not -0.1"),
    ({"delay_factor": 100.5}, "delay_factor", "must be between 0 and 100, not 100.5"),
    ({"delay_factor": True}, "delay_factor", "must be a number, not a boolean"),
    ({"delay_factor": "2"}, "delay_factor", "must be a number, not the text '2'"),
    ({"delay_factor": float("nan")}, "delay_factor", "must be a number, not the number nan"),
    ({"delay_factor": float("inf")}, "delay_factor", "must be a number, not the number inf"),
    ({"min_delay_ms": -1}, "min_delay_ms", "must be between 0 and 3600000, not -1"),
    ({"max_delay_ms": MAX_DELAY_MS + 1}, "max_delay_ms", "must be between 0 and 3600000, not 3600001"),
    ({"min_delay_ms": 1.0}, "min_delay_ms", "must be a whole number, not the number 1.0"),
    ({"max_delay_ms": True}, "max_delay_ms", "must be a whole number, not a boolean"),
    ({"min_delay_ms": 3000, "max_delay_ms": 2000}, "min_delay_ms", "must not be more than max_delay_ms (3000 > 2000)"),
    ({"max_per_host": 0}, "max_per_host", "must be between 1 and 100, not 0"),
    ({"max_per_host": 101}, "max_per_host", "must be between 1 and 100, not 101"),
    ({"max_per_host": "3"}, "max_per_host", "must be a whole number, not the text '3'"),
])
def test_each_politeness_setting_has_its_range(body, field, problem):
    error = refused("politeness", body)
    assert error.field == field and error.problem == problem
