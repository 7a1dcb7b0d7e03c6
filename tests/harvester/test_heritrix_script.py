"""The script contract of live changes (harvester/heritrix3/scripting.py): what the builders write, what
parse_script reads back, the literals' escaping, refusals, and the domain-scoped reject regex."""

from __future__ import annotations

import re

import pytest

from harvestdef.patterns import CrawlPatterns
from harvester.heritrix3.scripting import (
    LIBRARY,
    SIGNATURES,
    ScriptCall,
    ScriptRefused,
    add_uris_script,
    budget_script,
    delete_queued_script,
    domain_reject_regex,
    parse_script,
    reject_script,
    show_reject_rules_script,
    unreject_script,
)

LIBRARY_LINES = LIBRARY.count("\n")


def only_call(script: str) -> ScriptCall:
    calls = parse_script(script)
    assert len(calls) == 1
    return calls[0]


@pytest.mark.parametrize(("script", "operation", "arguments"), [
    (reject_script(r".*/calendar/\d+/.*", "ABC"), "addRejectRule", (r".*/calendar/\d+/.*",)),
    (unreject_script(".*/x/.*", "ABC"), "removeRejectRule", (".*/x/.*",)),
    (budget_script("kb.dk", 100, None, "ABC"), "setDomainBudget", ("kb.dk", 100, -2)),
    (budget_script("kb.dk", None, -1, "ABC"), "setDomainBudget", ("kb.dk", -2, -1)),
    (delete_queued_script(".*\\.pdf", "ABC"), "deleteQueued", (".*\\.pdf",)),
    (add_uris_script(["http://kb.dk/a", "https://kb.dk/b?c=d"], "ABC"), "addUris",
     (("http://kb.dk/a", "https://kb.dk/b?c=d"),)),
])
def test_each_builder_reads_back_as_its_one_call(script, operation, arguments) -> None:
    assert script.startswith(LIBRARY + '\ninitials = "ABC"\n')
    call = only_call(script)
    assert (call.operation, call.arguments, call.initials) == (operation, arguments, "ABC")
    # the call's line number counts the library's lines, as an operator reading the script would
    assert call.line == LIBRARY_LINES + 3
    assert script.endswith(call.render() + "\n")


def test_show_reject_rules_has_no_author() -> None:
    call = only_call(show_reject_rules_script())
    assert (call.operation, call.arguments, call.initials) == ("showRejectRules", (), "")


@pytest.mark.parametrize("text", ["it's", "back\\slash", "\\'", "'", "\\", "end\\", "ø and 日本", "a\\Qb\\E'c"])
def test_quotes_and_backslashes_round_trip(text: str) -> None:
    assert only_call(reject_script(text, "A")).arguments == (text,)
    assert only_call(add_uris_script([text, text + "2"], "A")).arguments == ((text, text + "2"),)


@pytest.mark.parametrize("author", ['Anne "A" B', "back\\slash", "${System.exit(1)}", "$x", "Åse"])
def test_initials_are_escaped_for_groovy_double_quotes(author: str) -> None:
    script = reject_script("x", author)
    assert only_call(script).initials == author
    initials_line = script[len(LIBRARY):].splitlines()[1]
    # no interpolation is left for Groovy: every $ is escaped
    assert re.search(r"(?<!\\)\$", initials_line) is None


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "tab\there", "nul\x00", "del\x7f", "sep\u2028"])
def test_a_control_character_is_refused_by_the_builders(bad: str) -> None:
    with pytest.raises(ValueError, match="control character"):
        reject_script(bad, "A")
    with pytest.raises(ValueError, match="control character"):
        add_uris_script(["http://kb.dk/", bad], "A")
    with pytest.raises(ValueError, match="control character"):
        reject_script("ok", bad)
    with pytest.raises(ValueError, match="control character"):
        domain_reject_regex("kb.dk", bad)


def test_builders_refuse_what_no_call_means() -> None:
    with pytest.raises(ValueError):
        budget_script("kb.dk", -3, None, "A")
    with pytest.raises(ValueError):
        budget_script("kb.dk", True, None, "A")
    with pytest.raises(ValueError, match="no URIs"):
        add_uris_script([], "A")


def test_calls_without_the_library_and_in_the_other_literal_forms() -> None:
    script = ("// a comment\n\ninitials = \"XY\";\naddRejectRule '.*a.*'\r\n"
              "setDomainBudget('kb.dk', 5, -1);\naddUris([ 'http://kb.dk/' , ])\nshowRejectRules()\n")
    calls = parse_script(script)
    assert [(c.operation, c.arguments, c.initials, c.line) for c in calls] == [
        ("addRejectRule", (".*a.*",), "XY", 4),
        ("setDomainBudget", ("kb.dk", 5, -1), "XY", 5),
        ("addUris", (("http://kb.dk/",),), "XY", 6),
        ("showRejectRules", (), "XY", 7),
    ]
    # a browser's CRLF line ends: the library is still the library
    assert only_call(reject_script("x", "A").replace("\n", "\r\n")).arguments == ("x",)


@pytest.mark.parametrize(("script", "line", "reason"), [
    ('Runtime.getRuntime().exec("ls")', 1, "not a call of an operation"),
    ("addRejectRule('x')\nnew File('/tmp/x').delete()", 2, "not a call of an operation"),
    ("addRejectRule('x' + 'y')", 1, "expected ','"),
    ("addRejectRule(\"x\")", 1, "no literal"),
    ("addRejectRule('x\\d')", 1, "escape \\d"),
    ("addRejectRule('x'", 1, "do not end with ')'"),
    ("addRejectRule('unclosed)", 1, "not closed"),
    ("removeRejectRule()", 1, "takes removeRejectRule(String regex)"),
    ("setDomainBudget('kb.dk', 'a', 1)", 1, "takes setDomainBudget"),
    ("setDomainBudget('kb.dk', -3, 1)", 1, "a budget is"),
    ("addUris('http://kb.dk/')", 1, "takes addUris(List uris)"),
    ("showRejectRules", 1, "needs ()"),
    ("showRejectRules.x()", 1, "not a call"),
    ('initials = "${evil()}"', 1, "interpolation"),
    ("addRejectRule('a\tb')", 1, "control character U+0009"),
    ("addRejectRule('x'); deleteQueued('y')", 1, "expected ','"),
])
def test_anything_else_is_refused_naming_the_line(script: str, line: int, reason: str) -> None:
    with pytest.raises(ScriptRefused) as refused:
        parse_script(script)
    message = str(refused.value)
    assert message.startswith(f"line {line}: ")
    assert reason in message
    for signature in SIGNATURES.values():
        assert signature in message


def test_a_changed_library_is_refused_at_its_first_line() -> None:
    changed = LIBRARY.replace("void deleteQueued(String regex) {",
                              "void deleteQueued(String regex) {\n    Runtime.getRuntime().exec('ls')")
    first_code_line = next(number for number, line in enumerate(LIBRARY.splitlines(), start=1)
                           if line and not line.startswith("//"))
    with pytest.raises(ScriptRefused, match=rf"^line {first_code_line}: 'import "):
        parse_script(changed + "\ndeleteQueued('x')\n")


def test_no_calls_is_an_empty_script() -> None:
    assert parse_script(LIBRARY) == []
    assert parse_script("") == []


# -- the domain-scoped reject regex ---------------------------------------------------------------------------

SCOPED_CASES = [
    ("http://example.dk/calendar/2020", True),
    ("https://example.dk/calendar/2020", True),
    ("http://www.example.dk/calendar/1", True),
    ("https://a.b.example.dk:8443/calendar/1", True),
    ("http://user@example.dk/calendar/1", True),
    ("HTTP://example.dk/calendar/1", True),
    ("http://example.dk/other/1", False),               # the regex itself does not match
    ("http://example.dk.evil.com/calendar/1", False),   # a look-alike host
    ("http://notexample.dk/calendar/1", False),
    ("http://evil.com/example.dk/calendar/1", False),
    ("http://evil.com/?u=http://example.dk/calendar/1", False),
    ("http://example.dk@evil.com/calendar/1", False),
]


@pytest.mark.parametrize(("url", "matches"), SCOPED_CASES)
def test_domain_reject_regex_matches_only_the_domain_in_python_and_in_the_engine(url: str, matches: bool) -> None:
    regex = domain_reject_regex("Example.DK", r".*/calendar/.*")
    assert (re.fullmatch(regex, url) is not None) is matches
    # the engine reads it as Java's dialect and runs it in RE2 (its leading lookahead split off)
    assert CrawlPatterns((regex,), 0.05).fullmatch_any(url) is matches


def test_domain_reject_regex_keeps_the_regexs_own_groups_and_alternatives() -> None:
    regex = domain_reject_regex("kb.dk", r"(.*)/a|.*/b")
    assert re.fullmatch(regex, "http://kb.dk/x/b")
    assert not re.fullmatch(regex, "http://other.dk/x/b")
    # a backreference in the regex still names its own first group
    backreference = domain_reject_regex("kb.dk", r".*/(\w+)/\1/.*")
    assert re.fullmatch(backreference, "http://kb.dk/a/a/x")
    assert not re.fullmatch(backreference, "http://kb.dk/a/b/x")


def test_domain_reject_regex_of_an_idn_and_of_an_address() -> None:
    assert re.fullmatch(domain_reject_regex("økologi.dk", ".*"), "http://www.xn--kologi-9xa.dk/")
    address = domain_reject_regex("127.0.0.1", ".*")
    assert re.fullmatch(address, "http://127.0.0.1:8080/x")
    assert not re.fullmatch(address, "http://127.0.0.10/x")
    with pytest.raises(ValueError, match="not a domain name"):
        domain_reject_regex("not a domain", ".*")


def test_a_batch_script_reads_back_as_each_changes_mark_and_call_with_its_authors_initials() -> None:
    from harvester.heritrix3.scripting import BEGIN_CHANGE, batch_output, batch_script, budget_call, reject_call
    script = batch_script([(7, "ABC", reject_call(".*/a/.*")), (9, "D$E", budget_call("kb.dk", 5, None))])
    calls = parse_script(script)
    assert [(call.operation, call.arguments, call.initials) for call in calls] == [
        (BEGIN_CHANGE, (7,), "ABC"), ("addRejectRule", (".*/a/.*",), "ABC"),
        (BEGIN_CHANGE, (9,), "D$E"), ("setDomainBudget", ("kb.dk", 5, -2), "D$E")]
    # the output of each change is told apart by its mark; one that never began is not in it
    assert batch_output("change 7:\nreject rule added: .*/a/.*\nchange 9:\n") == {7: "reject rule added: .*/a/.*",
                                                                                   9: ""}
    assert batch_output("change 7:\nreject rule added: x\n") == {7: "reject rule added: x"}
    with pytest.raises(ValueError, match="no changes"):
        batch_script([])
