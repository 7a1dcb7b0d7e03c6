"""Java's regular expressions (java.util.regex, the dialect of Heritrix's crawler traps and of
NetarchiveSuite's pages) rewritten for the engines HarvestSuite runs them in: RE2 (``to_re2``) and, for the
crawl engine's budgeted matcher, the ``regex`` module (``to_backtracking``).

One pass over the pattern, character by character, with Java's rules for escapes, classes, groups and
embedded flags; the first construct the target cannot express raises PatternError naming it and its
1-based column. What is translated and what is refused is listed in harvestdef/patterns.py and, for
curators, in docs/engine.md. This module only rewrites text; compiling is harvestdef/patterns.py's.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

import re2

from harvestdef.errors import PatternError

__all__ = ["split_leading_lookahead", "to_backtracking", "to_re2"]

# RE2 is asked only which \p{...} names it knows; quietly, as an unknown name is an expected answer
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

# Java's POSIX character classes (US-ASCII only, like RE2's [[:name:]]).
_POSIX = {"Lower": "lower", "Upper": "upper", "ASCII": "ascii", "Alpha": "alpha", "Digit": "digit",
          "Alnum": "alnum", "Punct": "punct", "Graph": "graph", "Print": "print", "Blank": "blank",
          "Cntrl": "cntrl", "XDigit": "xdigit", "Space": "space"}
# java.util.regex's classes that RE2 draws otherwise, as ranges of code points: \s (Java's includes \x0B),
# \h and \v (Java 8; RE2's \v is \x0B alone)
_SPACE = ((0x09, 0x0D), (0x20, 0x20))
_HORIZONTAL_SPACE = ((0x09, 0x09), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x180E, 0x180E),
                     (0x2000, 0x200A), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
_VERTICAL_SPACE = ((0x0A, 0x0D), (0x85, 0x85), (0x2028, 0x2029))
_SPACE_CLASSES = {"s": _SPACE, "h": _HORIZONTAL_SPACE, "v": _VERTICAL_SPACE}
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\a", "e": "\x1b"}
_KEPT_ESCAPES = set("dDwW")             # the same ASCII classes in both dialects
_ANCHOR_ESCAPES = set("bBAz")           # the same assertions in both dialects
_META_OUTSIDE = set("\\.+*?()|[]{}^$")
_META_INSIDE = set("\\[]^-&")
_KEPT_FLAGS = set("ims")
_DROPPED_FLAGS = set("du")              # UNIX_LINES and UNICODE_CASE: RE2's behaviour already


class _Members(str):
    """Members of an RE2 class (a shorthand such as \\d or \\p{Lu}, or quoted text), as opposed to one
    character, which may start or end a range."""


def _ranges(ranges: tuple[tuple[int, int], ...], negated: bool = False) -> str:
    """Ranges of code points as members of an RE2 class; ``negated``: every other code point."""
    if negated:
        others, low = [], 0
        for first, last in ranges:
            if first > low:
                others.append((low, first - 1))
            low = last + 1
        ranges = (*others, (low, 0x10FFFF))
    return "".join(f"\\x{{{first:x}}}" + (f"-\\x{{{last:x}}}" if last > first else "") for first, last in ranges)


def _literal(char: str, in_class: bool) -> str:
    """One character as RE2 reads it literally, inside a class or outside."""
    code = ord(char)
    if code < 0x20 or code == 0x7F or not char.isprintable() and char != " ":
        return f"\\x{{{code:x}}}"
    if char in (_META_INSIDE if in_class else _META_OUTSIDE):
        return "\\" + char
    return char


@functools.lru_cache(maxsize=256)
def _re2_knows(item: str) -> bool:
    """Whether RE2 has the Unicode category or script ``item`` (``\\p{item}``)."""
    try:
        re2.compile(f"\\p{{{item}}}", _OPTIONS)
    except re2.error:
        return False
    return True


class _Modes(NamedTuple):
    """The embedded flags the translation itself must follow; scoped by groups, as in Java."""

    comments: bool = False    # x: whitespace and # comments are not part of the pattern
    dotall: bool = False      # s: . matches line terminators too
    unix_lines: bool = False  # d: \n is the only line terminator


class _Translator:
    """One pass over a Java pattern, writing its RE2 form; PatternError at the first construct it cannot
    translate. With ``backtracking``, lookaround, backreferences, possessive quantifiers and atomic groups
    are written as the ``regex`` module reads them instead (BacktrackingPattern)."""

    def __init__(self, pattern: str, backtracking: bool = False) -> None:
        self.pattern = pattern
        self.backtracking = backtracking
        self.captures = 0                            # capturing groups opened so far (backreferences)
        self.at = 0
        self.modes = _Modes()
        self.groups: list[tuple[int, _Modes]] = []   # (index of "(", the modes outside the group)
        self.first_group_end: int | None = None      # index of the ")" closing a group opened at index 0
        self.out: list[str] = []

    # ---------------------------------------------------------------- helpers
    def refuse(self, column: int, construct: str, reason: str) -> PatternError:
        return PatternError(self.pattern, f"{construct} at column {column + 1}: {reason}", column + 1, construct)

    def peek(self, offset: int = 0) -> str:
        index = self.at + offset
        return self.pattern[index] if index < len(self.pattern) else ""

    def skip_comment_text(self) -> bool:
        """In COMMENTS mode, step over whitespace or a # comment; True if something was skipped."""
        if not self.modes.comments:
            return False
        char = self.peek()
        if char.isspace():
            self.at += 1
            return True
        if char == "#":
            while self.at < len(self.pattern) and self.pattern[self.at] not in "\n\r\x85\u2028\u2029":
                self.at += 1
            return True
        return False

    # ---------------------------------------------------------------- the pattern
    def translate(self) -> str:
        while self.at < len(self.pattern):
            if self.skip_comment_text():
                continue
            char = self.peek()
            if char == "\\":
                self.out.append(self.escape(in_class=False))
            elif char == "[":
                negated, body = self.char_class()
                self.out.append(f"[{'^' if negated else ''}{body}]")
            elif char == "(":
                self.open_group()
            elif char == ")":
                if not self.groups:
                    raise self.refuse(self.at, "')'", "closes no group")
                start, self.modes = self.groups.pop()
                if start == 0 and not self.groups:
                    self.first_group_end = self.at
                self.out.append(")")
                self.at += 1
            elif char in "*+?":
                self.at += 1
                self.out.append(char + self.quantifier_mode())
            elif char == "{":
                self.out.append(self.repetition() + self.quantifier_mode())
            elif char == ".":
                self.out.append(self.dot())
                self.at += 1
            elif char in "^$|":
                self.out.append(char)
                self.at += 1
            else:
                self.out.append(_literal(char, in_class=False))
                self.at += 1
        if self.groups:
            raise self.refuse(self.groups[-1][0], "'('", "the group is never closed")
        return "".join(self.out)

    def quantifier_mode(self) -> str:
        """After a quantifier: lazy (``?``) kept, possessive (``+``) read as greedy (no backtracking to stop)."""
        if self.peek() == "?":
            self.at += 1
            return "?"
        if self.peek() == "+":
            self.at += 1
            return "+" if self.backtracking else ""
        return ""

    def repetition(self) -> str:
        start = self.at
        end = self.pattern.find("}", start)
        body = self.pattern[start + 1:end] if end > start else ""
        low, comma, high = body.partition(",")
        if end < 0 or not low.isdigit() or (high and not high.isdigit()):
            raise self.refuse(start, "'{'", "not a repetition {n}, {n,} or {n,m} (write \\{ for the character)")
        self.at = end + 1
        return "{" + body + "}"

    def open_group(self) -> None:
        start = self.at
        self.groups.append((start, self.modes))
        if self.peek(1) != "?":
            self.out.append("(")
            self.captures += 1
            self.at += 1
            return
        kind = self.peek(2)
        if kind == ":":
            self.out.append("(?:")
            self.at += 3
        elif kind == ">":
            self.out.append("(?>" if self.backtracking else "(?:")  # RE2 never backtracks into a group anyway
            self.at += 3
        elif kind in ("=", "!") or (kind == "<" and self.peek(3) in ("=", "!")):
            what = "lookahead" if kind in ("=", "!") else "lookbehind"
            construct = self.pattern[start:start + (3 if kind != "<" else 4)]
            if not self.backtracking:
                raise self.refuse(start, f"{what} {construct!r}", "RE2 has no lookaround")
            self.out.append(construct)
            self.at += len(construct)
        elif kind == "<":
            end = self.pattern.find(">", start + 3)
            name = self.pattern[start + 3:end] if end > 0 else ""
            if not (name[:1].isascii() and name[:1].isalpha() and name.isascii() and name.isalnum()):
                raise self.refuse(start, "'(?<'", "a group name is a letter, then letters or digits, then '>'")
            self.out.append(f"(?P<{name}>")
            self.captures += 1
            self.at = end + 1
        else:
            self.embedded_flags(start)

    def dot(self) -> str:
        """Java's ``.`` leaves out every line terminator (\\r, \\x{85}, \\x{2028}...), RE2's only \\n."""
        if self.modes.dotall or self.modes.unix_lines:
            return "."   # (?s) is passed on to RE2; (?d) is RE2's own rule
        return r"[^\n\r\x{85}\x{2028}\x{2029}]"

    def embedded_flags(self, start: int) -> None:
        index = start + 2
        turned_on, turned_off, target = [], [], None
        while index < len(self.pattern) and self.pattern[index] not in ":)":
            letter = self.pattern[index]
            if letter == "-" and target is None:
                target = turned_off
            elif letter in _KEPT_FLAGS | _DROPPED_FLAGS | {"x", "U"}:
                (turned_on if target is None else target).append(letter)
            else:
                raise self.refuse(start, repr(self.pattern[start:index + 1]), "not a group or flag Java knows")
            index += 1
        if index >= len(self.pattern):
            raise self.refuse(start, "'(?'", "the flags are never closed by ')' or ':'")
        if "U" in turned_on:
            raise self.refuse(start, "flag (?U)", "Unicode character classes (UNICODE_CHARACTER_CLASS) are not "
                              "available; use \\p{L} or \\p{Nd} for letters or digits of any script")
        modes = _Modes(*(letter in turned_on or (letter not in turned_off and current)
                         for letter, current in zip("xsd", self.modes, strict=True)))
        on = "".join(f for f in turned_on if f in _KEPT_FLAGS)
        off = "".join(f for f in turned_off if f in _KEPT_FLAGS)
        letters = on + (f"-{off}" if off else "")
        if self.pattern[index] == ")":
            self.groups.pop()          # (?i) opens no group: it holds until the enclosing group closes
            self.modes = modes
            if letters:
                self.out.append(f"(?{letters})")
        else:
            self.modes = modes   # the outer modes come back when this group closes
            self.out.append(f"(?{letters}:" if letters else "(?:")
        self.at = index + 1

    # ---------------------------------------------------------------- character classes
    def char_class(self) -> tuple[bool, str]:
        """A class at ``[``: (negated, RE2 members). Nested classes are unions, flattened into one."""
        start = self.at
        self.at += 1
        negated = self.peek() == "^"
        if negated:
            self.at += 1
        members: list[str] = []
        first = True
        while True:
            if self.at >= len(self.pattern):
                raise self.refuse(start, "'['", "the character class is never closed")
            if self.skip_comment_text():
                continue
            char = self.peek()
            if char == "]" and not first:
                self.at += 1
                return negated, "".join(members)
            first = False
            if char == "[":
                nested_at = self.at
                nested_negated, body = self.char_class()
                if nested_negated:
                    raise self.refuse(nested_at, "a negated class inside a class", "RE2 cannot join [^...] to "
                                      "other members; write the members it leaves out into one [^...]")
                members.append(body)
            elif char == "&" and self.peek(1) == "&":
                raise self.refuse(self.at, "class intersection '&&'", "RE2 has no intersection of classes; "
                                  "list the characters that remain")
            else:
                members.append(self.class_member())

    def class_member(self) -> str:
        """A character, a range or a shorthand inside a class."""
        start = self.at
        low = self.class_atom()
        if not isinstance(low, _Members) and self.peek() == "-" and self.peek(1) not in ("]", ""):
            self.at += 1
            if self.peek() == "[":
                # Java: a '-' before a nested class is the character itself (NetarchiveSuite's own
                # template has [a-zA-Z0-9_-[\\.]], which is _, - and the class [\\.])
                return _literal(low, True) + "\\-"
            high = self.class_atom()
            if isinstance(high, _Members):
                raise self.refuse(start, "a range to a class", "a range ends in one character")
            if ord(high) < ord(low):
                raise self.refuse(start, f"range {low}-{high}", "the range runs backwards")
            return f"{_literal(low, True)}-{_literal(high, True)}"
        return low if isinstance(low, _Members) else _literal(low, True)

    def class_atom(self) -> str:
        """One character, or _Members of the class (an escape such as \\d)."""
        char = self.peek()
        if char == "\\":
            return self.escape(in_class=True)
        self.at += 1
        return char

    # ---------------------------------------------------------------- escapes
    def escape(self, in_class: bool) -> str:
        """The escape at ``\\``. In a class: one character, or members of the class; outside: RE2 text."""
        start = self.at
        letter = self.peek(1)
        self.at += 2
        if letter == "":
            raise self.refuse(start, "'\\'", "the pattern ends in a lone backslash")
        if not letter.isascii() or not letter.isalnum():
            return letter if in_class else _literal(letter, False)
        if letter in _SIMPLE_ESCAPES:
            return self.character(_SIMPLE_ESCAPES[letter], in_class)
        if letter in "123456789" or (letter == "k" and self.peek() == "<"):
            if not self.backtracking or in_class:
                raise self.refuse(start, f"backreference \\{letter}", "RE2 cannot match again what a group matched")
            return self.backreference(start, letter)
        if letter == "0":
            return self.character(chr(self.number(start, 8, 1, 3, "\\0 takes one to three octal digits")), in_class)
        if letter == "x":
            if self.peek() == "{":
                end = self.pattern.find("}", self.at)
                digits = self.pattern[self.at + 1:end] if end > 0 else ""
                self.at = end + 1 if end > 0 else self.at
                return self.character(self.code_point(start, digits), in_class)
            return self.character(chr(self.number(start, 16, 2, 2, "\\x takes two hexadecimal digits")), in_class)
        if letter == "u":
            return self.character(self.utf16(start), in_class)
        if letter == "c":
            control = self.peek()
            if not control:
                raise self.refuse(start, "'\\c'", "a control character needs its letter")
            self.at += 1
            return self.character(chr(ord(control) ^ 64), in_class)
        if letter == "Q":
            end = self.pattern.find("\\E", self.at)
            quoted = self.pattern[self.at:] if end < 0 else self.pattern[self.at:end]
            self.at = len(self.pattern) if end < 0 else end + 2
            if in_class:
                return _Members("".join(_literal(c, True) for c in quoted))
            return "".join(_literal(c, False) for c in quoted)
        if letter == "E":
            raise self.refuse(start, "'\\E'", "ends a quotation that no \\Q began")
        if letter in _KEPT_ESCAPES:
            return _Members(f"\\{letter}")
        if letter in ("p", "P"):
            return self.property(start, letter == "P", in_class)
        if letter.lower() in _SPACE_CLASSES:
            ranges, negated = _SPACE_CLASSES[letter.lower()], letter.isupper()
            if in_class:
                return _Members(_ranges(ranges, negated))
            return f"[{'^' if negated else ''}{_ranges(ranges)}]"
        if letter == "R" and not in_class:
            return r"(?:\r\n|[" + _ranges(_VERTICAL_SPACE) + "])"
        if not in_class:
            if letter == "b" and self.peek() == "{":
                raise self.refuse(start, "'\\b{g}'", "RE2 has no grapheme cluster boundaries")
            if letter in _ANCHOR_ESCAPES:
                return f"\\{letter}"
            if letter == "Z":
                return r"\z"
            reasons = {"G": "RE2 has no end-of-previous-match anchor", "X": "RE2 has no grapheme clusters",
                       "N": "RE2 has no character names"}
            if letter in reasons:
                raise self.refuse(start, f"'\\{letter}'", reasons[letter])
        raise self.refuse(start, f"'\\{letter}'", "not an escape Java knows" + (" inside a class" if in_class else ""))

    def backreference(self, start: int, letter: str) -> str:
        """``\\N`` or ``\\k<name>`` as ``\\g<...>``. Java reads a further digit into the number only while
        that many groups exist at this point."""
        if letter == "k":
            end = self.pattern.find(">", self.at)
            if end < 0:
                raise self.refuse(start, "'\\k<'", "the group name is never closed by '>'")
            name = self.pattern[self.at + 1:end]
            self.at = end + 1
            return f"\\g<{name}>"
        number = letter
        while self.peek().isdigit() and int(number + self.peek()) <= self.captures:
            number += self.peek()
            self.at += 1
        return f"\\g<{number}>"

    def character(self, char: str, in_class: bool) -> str:
        return char if in_class else _literal(char, False)

    def number(self, start: int, base: int, least: int, most: int, reason: str) -> int:
        digits = ""
        valid = "01234567" if base == 8 else "0123456789abcdefABCDEF"
        while len(digits) < most and self.peek() and self.peek() in valid:
            digits += self.peek()
            self.at += 1
        # Java's \0mnn: a third octal digit only when the first is 0-3, keeping the value within a byte
        if base == 8 and len(digits) == 3 and digits[0] > "3":
            digits = digits[:2]
            self.at -= 1
        if len(digits) < least:
            raise self.refuse(start, repr(self.pattern[start:self.at + 1]), reason)
        return int(digits, base)

    def code_point(self, start: int, digits: str) -> str:
        try:
            value = int(digits, 16)
            return chr(value)
        except (ValueError, OverflowError):
            raise self.refuse(start, "'\\x{...}'", "not a hexadecimal code point") from None

    def utf16(self, start: int) -> str:
        """``\\uXXXX``, joining a surrogate pair written as two escapes into one character."""
        value = self.number(start, 16, 4, 4, "\\u takes four hexadecimal digits")
        if 0xD800 <= value < 0xDC00 and self.peek() == "\\" and self.peek(1) == "u":
            saved = self.at
            self.at += 2
            low = self.number(saved, 16, 4, 4, "\\u takes four hexadecimal digits")
            if 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00))
            self.at = saved
        if 0xD800 <= value < 0xE000:
            raise self.refuse(start, f"'\\u{value:04x}'", "half a surrogate pair is no character")
        return chr(value)

    def property(self, start: int, negated: bool, in_class: bool) -> str:
        """``\\p{...}``/``\\pL``: POSIX classes, general categories and scripts; blocks and the rest refused."""
        if self.peek() == "{":
            end = self.pattern.find("}", self.at)
            if end < 0:
                raise self.refuse(start, "'\\p{'", "the property name is never closed by '}'")
            name = self.pattern[self.at + 1:end]
            self.at = end + 1
        else:
            name = self.peek()
            self.at += 1
        construct = f"'{self.pattern[start:self.at]}'"
        key, equals, value = name.partition("=")
        if name in _POSIX:
            posix = _POSIX[name]
            if in_class:
                return _Members(f"[:{'^' if negated else ''}{posix}:]")
            return f"[{'^' if negated else ''}[:{posix}:]]"
        if equals and key.lower() in ("gc", "general_category"):
            target = value
        elif equals and key.lower() in ("sc", "script"):
            target = "_".join(part.capitalize() for part in value.split("_"))
        elif (equals and key.lower() in ("blk", "block")) or name.startswith("In"):
            raise self.refuse(start, construct, "RE2 has no Unicode blocks; use a range such as [\\x{370}-\\x{3ff}]")
        elif name.startswith("java"):
            raise self.refuse(start, construct, "java.lang.Character properties are not available; use a "
                              "category such as \\p{Ll}")
        elif name.startswith("Is") and len(name) <= 4:
            target = name[2:]                                   # \p{IsL}, \p{IsLu}: a category
        elif name.startswith("Is"):
            target = "_".join(part.capitalize() for part in name[2:].split("_"))  # \p{IsLatin}: a script
        else:
            target = name
        if not target or not _re2_knows(target):
            raise self.refuse(start, construct, "not a Unicode category or script RE2 knows (binary properties "
                              "such as Alphabetic are not available either)")
        escape = f"\\{'P' if negated else 'p'}{{{target}}}"
        return _Members(escape) if in_class else escape


def to_re2(pattern: str) -> str:
    """The RE2 form of the Java regular expression ``pattern``; PatternError names what cannot be translated."""
    return _Translator(pattern).translate()


# An escape pair of the translation: \x{HEX} and \z are written otherwise for the regex module.
_ESCAPE_PAIR = re.compile(r"\\(x\{([0-9a-f]+)\}|.)", re.DOTALL)


def _regex_module_escape(match: re.Match[str]) -> str:
    if match.group(2) is not None:
        code = int(match.group(2), 16)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    return r"\Z" if match.group(1) == "z" else match.group(0)


def split_leading_lookahead(pattern: str) -> tuple[bool, str, str] | None:
    """``(?=A)B`` or ``(?!A)B`` as (negative, A, B) when the pattern opens with a lookahead; else None.
    PatternError if the pattern is not one Java would compile (as to_backtracking reads it).

    Matched against a whole text, as Heritrix matches, such a pattern holds when A matches a prefix of the
    text (or, negative, none) and B the whole text: two patterns RE2 may well run where their join cannot.
    harvest jobs write every domain's crawler trap so (scheduler/jobgen/building.py, domain_scoped_trap).
    """
    if not pattern.startswith(("(?=", "(?!")):
        return None
    translator = _Translator(pattern, backtracking=True)
    translator.translate()
    end = translator.first_group_end
    assert end is not None  # translate() refuses a group that is never closed
    return pattern[2] == "!", pattern[3:end], pattern[end + 1:]


def to_backtracking(pattern: str) -> str:
    """The ``regex`` module's form (VERSION1) of the Java regular expression ``pattern``, lookaround,
    backreferences, possessive quantifiers and atomic groups included; PatternError for the rest."""
    return _ESCAPE_PAIR.sub(_regex_module_escape, _Translator(pattern, backtracking=True).translate())
