"""The script contract of live changes: the text POSTed to ``/engine/job/NAME/script`` to change a running
crawl, as NetarchiveSuite's "H3 remote access" changes a running Heritrix 3.

A script is ``LIBRARY`` (Groovy function definitions a real Heritrix 3 runs against its beans) followed by
call lines, one change each::

    initials = "ABC"
    addRejectRule('.*/calendar/.*')

The harvest controller builds scripts with the ``*_script`` builders and sends the same text to a real
Heritrix 3 and to the bundled engine. The engine runs no Groovy: ``parse_script`` reads the call lines (after
the byte-identical ``LIBRARY``, or with nothing before them) and the engine carries each out its own way
(harvester/engine/live/livechanges.py). Anything else in a script is refused (``ScriptRefused``), naming the line;
nothing is ever evaluated.

The operations (a regex is Java's dialect, matched against the whole URI as Heritrix's ``matches()``):

- ``addRejectRule(String regex)``: URIs matching it are rejected from then on, queued ones included;
- ``removeRejectRule(String regex)``: takes back a reject rule; fails if there is none;
- ``setDomainBudget(String domain, long maxObjects, long maxKb)``: the domain's group budgets (-2: leave as it
  is, -1: unlimited); a retired domain whose budget now allows more comes back;
- ``deleteQueued(String regex)``: queued URIs matching it are dropped, never fetched;
- ``addUris(List uris)``: URIs scheduled as the action directory's ``.schedule`` does (the scope decides);
- ``showRejectRules()``: prints the reject rules, one per line;
- ``beginChange(long version)``: prints ``change VERSION:`` and changes nothing. A script of many live
  changes (``batch_script``) puts one before each change's call, so the printed text says which change each
  line of output belongs to and, when the script fails, which change it failed on (the last one begun): one
  script carries hundreds of changes, each still answered on its own.

This module only writes and reads the text; it changes no crawl and imports no part of the engine.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harvestdef.domainnames import to_punycode
from harvestdef.errors import DomainNameError, ValidationError

ADD_REJECT_RULE = "addRejectRule"
REMOVE_REJECT_RULE = "removeRejectRule"
SET_DOMAIN_BUDGET = "setDomainBudget"
DELETE_QUEUED = "deleteQueued"
ADD_URIS = "addUris"
SHOW_REJECT_RULES = "showRejectRules"
BEGIN_CHANGE = "beginChange"
# Each operation's signature as the library declares it, in the order the refusals list them.
SIGNATURES = {
    ADD_REJECT_RULE: "addRejectRule(String regex)",
    REMOVE_REJECT_RULE: "removeRejectRule(String regex)",
    SET_DOMAIN_BUDGET: "setDomainBudget(String domain, long maxObjects, long maxKb)",
    DELETE_QUEUED: "deleteQueued(String regex)",
    ADD_URIS: "addUris(List uris)",
    SHOW_REJECT_RULES: "showRejectRules()",
    BEGIN_CHANGE: "beginChange(long version)",
}
# The argument kinds of each operation: "s" a string, "n" a whole number, "l" a list of strings.
_ARGUMENT_KINDS = {ADD_REJECT_RULE: "s", REMOVE_REJECT_RULE: "s", SET_DOMAIN_BUDGET: "snn", DELETE_QUEUED: "s",
                   ADD_URIS: "l", SHOW_REJECT_RULES: "", BEGIN_CHANGE: "n"}
UNCHANGED = -2   # setDomainBudget: leave this budget as it is
UNLIMITED = -1   # Heritrix's "no limit"
SCRIPTING_EVENTS_LOG = "scripting_events"   # logs/scripting_events.log, as NetarchiveSuite's library names it

LIBRARY = """\
// HarvestSuite's live changes to a running Heritrix 3 crawl. The definitions below are followed by call
// lines, one change each, after `initials = "..."` naming who asked for it; each change is one line of
// logs/scripting_events.log. HarvestSuite's bundled engine reads the call lines and runs no Groovy.
import java.util.logging.Logger
import java.util.regex.Pattern
import org.archive.modules.CrawlURI
import org.archive.modules.deciderules.DecideResult
import org.archive.modules.deciderules.MatchesListRegexDecideRule
import org.archive.net.UURIFactory

String changeAuthor() {
    return binding.hasVariable('initials') ? String.valueOf(binding.getVariable('initials')) : 'unknown'
}

void recordChange(String change) {
    def loggerModule = job.crawlController.loggerModule
    Logger changes = loggerModule.fileHandlers.keySet().find { it.name.startsWith('scripting_events') }
    if (changes == null) {
        changes = loggerModule.setupSimpleLog('scripting_events')
    }
    changes.info('Action from user ' + changeAuthor() + ': ' + change)
}

// The scope's first REJECT list of regexes: operators' reject rules join it (a new one is appended to
// the scope when the template has none). Lists are replaced whole, never changed in place, because the
// toe threads read them meanwhile.
MatchesListRegexDecideRule rejectList(boolean create) {
    def scope = appCtx.getBean('scope')
    def found = scope.rules.find { it instanceof MatchesListRegexDecideRule && it.decision == DecideResult.REJECT }
    if (found == null && create) {
        found = new MatchesListRegexDecideRule()
        found.decision = DecideResult.REJECT
        found.regexList = new ArrayList<Pattern>()
        List rules = new ArrayList(scope.rules)
        rules.add(found)
        scope.rules = rules
    }
    return found
}

void addRejectRule(String regex) {
    Pattern pattern = Pattern.compile(regex)
    MatchesListRegexDecideRule rule = rejectList(true)
    List patterns = new ArrayList(rule.regexList)
    patterns.add(pattern)
    rule.regexList = patterns
    recordChange("Added a reject rule matching regex '" + regex + "'")
    rawOut.println('reject rule added: ' + regex)
}

void removeRejectRule(String regex) {
    MatchesListRegexDecideRule rule = rejectList(false)
    List kept = rule == null ? [] : rule.regexList.findAll { it.pattern() != regex }
    if (rule == null || kept.size() == rule.regexList.size()) {
        throw new IllegalArgumentException('no reject rule ' + regex + ' in the scope')
    }
    rule.regexList = new ArrayList(kept)
    recordChange("Removed the reject rule matching regex '" + regex + "'")
    rawOut.println('reject rule removed: ' + regex)
}

// A budget is a sheet overlay on the quota enforcer, one sheet per domain, property and value, tied to the
// domain's SURT prefixes; the domain's earlier sheet for that property is untied first, so the newest
// value is the one in force.
void setDomainBudget(String domain, long maxObjects, long maxKb) {
    def overlays = appCtx.getBean('sheetOverlaysManager')
    String name = domain.toLowerCase()
    String authority = name.tokenize('.').reverse().join(',') + ','
    List prefixes = ['http://(' + authority, 'https://(' + authority]
    Map budgets = ['groupMaxFetchSuccesses': maxObjects, 'groupMaxAllKb': maxKb]
    budgets.each { String property, Long value ->
        if (value == -2L) {
            return
        }
        String stem = 'harvestsuite-budget-' + property + '-' + name + '-'
        String sheet = stem + value
        if (!overlays.sheetsByName.containsKey(sheet)) {
            overlays.putSheetOverlay(sheet, 'quotaenforcer.' + property, value)
        }
        prefixes.each { String prefix ->
            List tied = overlays.sheetsNamesBySurt.get(prefix)
            if (tied != null) {
                tied.removeAll { it.startsWith(stem) }
            }
            overlays.addSurtAssociation(prefix, sheet)
        }
        recordChange('Changed ' + property + ' of ' + name + ' to ' + value)
        rawOut.println(property + ' of ' + name + ' set to ' + value)
    }
    appCtx.getBean('frontier').reconsiderRetiredQueues()
}

void deleteQueued(String regex) {
    Pattern.compile(regex)
    long count = job.crawlController.frontier.deleteURIs('.*', regex)
    recordChange('Deleted ' + count + " queued URIs matching regex '" + regex + "'")
    rawOut.println(count + ' queued URIs deleted')
}

// As the action directory's .s.schedule: the scope decides, and the frontier skips what it has already.
void addUris(List uris) {
    def scope = appCtx.getBean('scope')
    def frontier = job.crawlController.frontier
    int scheduled = 0
    int refused = 0
    for (String uri : uris) {
        CrawlURI curi = new CrawlURI(UURIFactory.getInstance(uri))
        if (scope.decisionFor(curi) == DecideResult.ACCEPT) {
            frontier.schedule(curi)
            scheduled++
        } else {
            refused++
        }
    }
    recordChange('Added ' + scheduled + ' URIs (' + refused + ' out of scope)')
    rawOut.println(scheduled + ' URIs scheduled, ' + refused + ' not added')
}

void showRejectRules() {
    MatchesListRegexDecideRule rule = rejectList(false)
    (rule == null ? [] : rule.regexList).each { rawOut.println(it.pattern()) }
}

// Marks where the output of one change of a script of many begins (and, if the script fails, on which).
void beginChange(long version) {
    rawOut.println('change ' + version + ':')
}
"""
_LIBRARY_LINES = LIBRARY.count("\n")


class ScriptRefused(ValidationError, ValueError):
    """A script this engine does not run; the message names the line and lists what it runs."""


@dataclass(frozen=True)
class ScriptCall:
    """One call line of a script: the operation, its arguments (str, int, or a tuple of str for a list), who
    asked for it (the script's last ``initials`` before it, "" if none) and its line number."""

    operation: str
    arguments: tuple[str | int | tuple[str, ...], ...]
    initials: str = ""
    line: int = 0

    def render(self) -> str:
        """The call line as the builders write it."""
        return f"{self.operation}({', '.join(_literal(argument) for argument in self.arguments)})"


# -- builders ------------------------------------------------------------------------------------------------

def reject_call(regex: str) -> ScriptCall:
    """The call that adds the reject rule ``regex``."""
    return ScriptCall(ADD_REJECT_RULE, (regex,))


def unreject_call(regex: str) -> ScriptCall:
    """The call that takes back the reject rule ``regex`` (it fails where there is none)."""
    return ScriptCall(REMOVE_REJECT_RULE, (regex,))


def budget_call(domain: str, max_objects: int | None, max_kb: int | None) -> ScriptCall:
    """The call that sets the group budgets of ``domain`` (None: leave it as it is; -1: unlimited)."""
    values = tuple(UNCHANGED if value is None else value for value in (max_objects, max_kb))
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < UNCHANGED:
            raise ValueError(f"a budget is a whole number, -1 (unlimited) or more, or None; not {value!r}")
    return ScriptCall(SET_DOMAIN_BUDGET, (domain, *values))


def delete_queued_call(regex: str) -> ScriptCall:
    """The call that deletes the queued URIs matching ``regex``."""
    return ScriptCall(DELETE_QUEUED, (regex,))


def add_uris_call(uris: Iterable[str]) -> ScriptCall:
    """The call that schedules ``uris`` (the scope decides, as for the action directory's ``.s.schedule``)."""
    listed = tuple(uris)
    if not listed:
        raise ValueError("no URIs to add")
    return ScriptCall(ADD_URIS, (listed,))


def reject_script(regex: str, author: str) -> str:
    """A script that adds the reject rule ``regex``."""
    return _script(author, reject_call(regex))


def unreject_script(regex: str, author: str) -> str:
    """A script that takes back the reject rule ``regex`` (it fails where there is none)."""
    return _script(author, unreject_call(regex))


def budget_script(domain: str, max_objects: int | None, max_kb: int | None, author: str) -> str:
    """A script that sets the group budgets of ``domain`` (None: leave it as it is; -1: unlimited)."""
    return _script(author, budget_call(domain, max_objects, max_kb))


def delete_queued_script(regex: str, author: str) -> str:
    """A script that deletes the queued URIs matching ``regex``."""
    return _script(author, delete_queued_call(regex))


def add_uris_script(uris: Iterable[str], author: str) -> str:
    """A script that schedules ``uris`` (the scope decides, as for the action directory's ``.s.schedule``)."""
    return _script(author, add_uris_call(uris))


def batch_script(changes: Sequence[tuple[int, str, ScriptCall]]) -> str:
    """A script of many live changes, each ``(version, author, call)``, in the order given: each change's
    call after its author's initials and ``beginChange(version)``, so ``batch_output`` can tell the
    changes' outputs apart (and, for a failed script, the change it failed on)."""
    if not changes:
        raise ValueError("no changes to script")
    lines = [LIBRARY]
    for version, author, call in changes:
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"a change's version is a whole number from 1 on, not {version!r}")
        lines += [f'initials = "{_double_quoted(author)}"', ScriptCall(BEGIN_CHANGE, (version,)).render(),
                  call.render()]
    return "\n".join(lines) + "\n"


_CHANGE_MARK = re.compile(r"^change (\d+):$")


def batch_output(raw_output: str) -> dict[int, str]:
    """The output of a ``batch_script`` by change version, in the order the changes began: a change that
    began is in it (with "" when it printed nothing), one that did not is not."""
    outputs: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in raw_output.splitlines():
        mark = _CHANGE_MARK.match(line.strip())
        if mark is not None:
            current = outputs.setdefault(int(mark.group(1)), [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return {version: "\n".join(lines) for version, lines in outputs.items()}


def show_reject_rules_script() -> str:
    """A script that prints the reject rules, one per line."""
    return f"{LIBRARY}\n{ScriptCall(SHOW_REJECT_RULES, ()).render()}\n"


def _script(author: str, call: ScriptCall) -> str:
    return f'{LIBRARY}\ninitials = "{_double_quoted(author)}"\n{call.render()}\n'


def _refuse_control(text: str, what: str) -> None:
    # A regex or URI holding a newline or another control character is not a change anyone means, and a
    # line break would end the call line in the middle of its literal.
    for index, char in enumerate(text):
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            raise ValueError(f"{what} {text!r} holds the control character U+{ord(char):04X} at {index}")


def _single_quoted(text: str) -> str:
    _refuse_control(text, "a string")
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _double_quoted(text: str) -> str:
    # A Groovy double-quoted string interpolates ${...}: a dollar is escaped with the rest.
    _refuse_control(text, "initials")
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


def _literal(value: str | int | Sequence[str]) -> str:
    if isinstance(value, bool):
        raise ValueError(f"not a script argument: {value!r}")
    if isinstance(value, str):
        return _single_quoted(value)
    if isinstance(value, int):
        return f"{value}L"
    return "[" + ", ".join(_single_quoted(item) for item in value) + "]"


# -- domain-scoped reject rules ------------------------------------------------------------------------------

_DOMAIN = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def host_name(domain: str) -> str:
    """``domain`` as the crawl names hosts: lower case, punycode, no final dot (an IPv4 address as it is);
    ValueError for what is not a host name."""
    name = domain.strip().lower().rstrip(".")
    if _IPV4.match(name):
        return name
    try:
        name = to_punycode(name)
    except DomainNameError as exc:
        raise ValueError(f"{domain!r} is not a domain name: {exc}") from exc
    if not _DOMAIN.match(name):
        raise ValueError(f"{domain!r} is not a domain name")
    return name


def domain_reject_regex(domain: str, regex: str) -> str:
    """A regex (Java's and Python's alike) that fully matches what ``regex`` fully matches, but only URIs
    whose host is ``domain`` or one of its subdomains (any scheme, user info and port).

    The lookahead holds at the URI's start: scheme, optional ``user@``, any subdomain labels, the domain,
    optional port, then the end of the authority. Its groups do not capture, so a backreference in
    ``regex`` still counts its own groups. ValueError for a domain that is not a host name."""
    _refuse_control(regex, "a regex")
    name = host_name(domain)
    host = re.escape(name) if _IPV4.match(name) else r"(?:[^/?#@:]*\.)?" + name.replace(".", r"\.")
    return rf"(?=[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^/?#@]*@)?{host}(?::\d+)?(?:[/?#]|$))(?:{regex})"


# -- reading a script ----------------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_]\w*")
_INITIALS = re.compile(r'^initials\s*=\s*"((?:[^"\\]|\\.)*)"\s*;?$')
_NUMBER = re.compile(r"-?\d+[lL]?")


def parse_script(text: str) -> list[ScriptCall]:
    """The calls of a script, in order; ScriptRefused for anything else (the first offending line).

    Accepted: the byte-identical LIBRARY or nothing before the call lines (a browser's CRLF line ends are
    read as LF); then ``initials = "..."`` lines, calls of the operations with their literal arguments (with
    or without parentheses, an optional ``;``), blank lines and ``//`` comments."""
    text = text.replace("\r\n", "\n")
    first_line = 1
    if text.startswith(LIBRARY):
        text = text[len(LIBRARY):]
        first_line += _LIBRARY_LINES
    calls: list[ScriptCall] = []
    initials = ""
    for number, raw in enumerate(text.split("\n"), start=first_line):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        assigned = _INITIALS.match(line)
        if assigned:
            initials = _unescape(assigned.group(1), number, double=True)
            continue
        calls.append(_call(line, number, initials))
    return calls


def _refusal(number: int, reason: str) -> ScriptRefused:
    operations = ", ".join(SIGNATURES.values())
    return ScriptRefused(f"line {number}: {reason}; this engine runs no Groovy, only call lines of these "
                         f"operations (after HarvestSuite's library or nothing): {operations}")


def _call(line: str, number: int, initials: str) -> ScriptCall:
    name = _NAME.match(line)
    if name is None or name.group(0) not in SIGNATURES:
        shown = line if len(line) <= 80 else line[:77] + "..."
        raise _refusal(number, f"{shown!r} is not a call of an operation this engine runs")
    operation = name.group(0)
    rest = line[name.end():].strip()
    if rest.endswith(";"):
        rest = rest[:-1].rstrip()
    if rest.startswith("("):
        if not rest.endswith(")"):
            raise _refusal(number, f"the arguments of {operation} do not end with ')'")
        rest = rest[1:-1].strip()
    elif not rest:
        # Groovy reads a bare name as a property, not a call
        raise _refusal(number, f"a call of {operation} without arguments needs ()")
    elif not line[name.end()].isspace():
        raise _refusal(number, f"{line!r} is not a call of an operation this engine runs")
    arguments = tuple(_Arguments(rest, number).read())
    kinds = "".join("l" if isinstance(a, tuple) else "n" if isinstance(a, int) else "s" for a in arguments)
    if kinds != _ARGUMENT_KINDS[operation]:
        raise _refusal(number, f"{operation} takes {SIGNATURES[operation]}, not these arguments")
    if operation == SET_DOMAIN_BUDGET and any(value < UNCHANGED for value in arguments[1:]):  # type: ignore[operator]
        raise _refusal(number, "a budget is -2 (unchanged), -1 (unlimited) or a limit of 0 or more")
    return ScriptCall(operation, arguments, initials, number)


class _Arguments:
    """The comma-separated literals of one call: single-quoted strings, whole numbers, lists of strings."""

    def __init__(self, text: str, number: int) -> None:
        self.text = text
        self.number = number
        self.at = 0

    def read(self) -> list[str | int | tuple[str, ...]]:
        values: list[str | int | tuple[str, ...]] = []
        self._space()
        if self.at == len(self.text):
            return values
        while True:
            values.append(self._value())
            self._space()
            if self.at == len(self.text):
                return values
            self._expect(",")

    def _space(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in " \t":
            self.at += 1

    def _expect(self, char: str) -> None:
        if self.at >= len(self.text) or self.text[self.at] != char:
            found = repr(self.text[self.at]) if self.at < len(self.text) else "the end of the line"
            raise _refusal(self.number, f"expected {char!r} at column {self.at + 1} of the arguments, "
                                        f"found {found}")
        self.at += 1
        self._space()

    def _value(self) -> str | int | tuple[str, ...]:
        char = self.text[self.at] if self.at < len(self.text) else ""
        if char == "'":
            return self._string()
        if char == "[":
            self.at += 1
            self._space()
            items: list[str] = []
            while self.at < len(self.text) and self.text[self.at] != "]":
                items.append(self._string())
                self._space()
                if self.at < len(self.text) and self.text[self.at] != "]":
                    self._expect(",")
            self._expect("]")
            return tuple(items)
        number = _NUMBER.match(self.text, self.at)
        if number is None:
            raise _refusal(self.number, f"column {self.at + 1} of the arguments holds no literal this engine "
                                        "reads (a '...' string, a whole number or a list of strings)")
        self.at = number.end()
        return int(number.group(0).rstrip("lL"))

    def _string(self) -> str:
        if self.at >= len(self.text) or self.text[self.at] != "'":
            raise _refusal(self.number, f"expected a '...' string at column {self.at + 1} of the arguments")
        end = self.at + 1
        while end < len(self.text) and self.text[end] != "'":
            end += 2 if self.text[end] == "\\" else 1
        if end >= len(self.text):
            raise _refusal(self.number, "a string is not closed")
        value = _unescape(self.text[self.at + 1:end], self.number, double=False)
        self.at = end + 1
        return value


def _unescape(body: str, number: int, *, double: bool) -> str:
    """The value of a quoted literal's body: only the escapes the builders write are read."""
    allowed = {"\\": "\\", '"': '"', "$": "$"} if double else {"\\": "\\", "'": "'"}
    value: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            escaped = body[index + 1] if index + 1 < len(body) else ""
            if escaped not in allowed:
                raise _refusal(number, f"the escape \\{escaped} is not one this engine reads (only "
                                       f"{', '.join(chr(92) + key for key in allowed)})")
            value.append(allowed[escaped])
            index += 2
            continue
        if double and char == "$":
            raise _refusal(number, "an unescaped $ in a double-quoted string is Groovy interpolation")
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            raise _refusal(number, f"a string holds the control character U+{ord(char):04X}")
        value.append(char)
        index += 1
    return "".join(value)
