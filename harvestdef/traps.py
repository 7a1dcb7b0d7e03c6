"""Crawler traps: regular expressions of URLs a crawl must not follow, checked before they are stored.

Traps live in three places: a domain's list (domains.crawlertraps), a
harvest's list (partialharvests.crawlertraps), both newline-separated, and the global lists. Heritrix
compiles them as Java regexes, and so does harvestdef.patterns, into RE2's dialect: an expression it
cannot translate or RE2 cannot compile, or one longer than MAX_EXPRESSION_LENGTH, is refused with its line
number and the reason, so that a crawl never fails at its start on a harvester for a trap that was taken.
A trap that would backtrack catastrophically in Java (``(.|.)*X``) is taken: the bundled engine runs it
with RE2, in time linear in the URL.

This module only validates and normalises text; it never reads or writes the database.
"""

from __future__ import annotations

from collections.abc import Iterable

from harvestdef.errors import CrawlerTrapError, LineRefusal, PatternError
from harvestdef.patterns import compile_pattern
from harvestdef.phrases import N_, phrase

__all__ = ["MAX_EXPRESSION_LENGTH", "CrawlerTrapError", "parse_stored_traps", "split_lines", "traps_text",
           "validate_trap_expressions"]

# global_crawler_trap_expressions.trap_expression is varchar(1000), as in NetarchiveSuite's DDL
MAX_EXPRESSION_LENGTH = 1000


def split_lines(text: str | Iterable[str]) -> list[str]:
    if isinstance(text, str):
        return text.splitlines()
    return [line for item in text for line in str(item).splitlines() or [""]]


def validate_trap_expressions(text: str | Iterable[str], max_length: int = MAX_EXPRESSION_LENGTH
                              ) -> tuple[str, ...]:
    """The traps of ``text`` (one per line), stripped, blank lines dropped, duplicates removed in order.

    Raises CrawlerTrapError naming every line (1-based) whose expression is longer than ``max_length`` or
    cannot be used (harvestdef.patterns says why), the first of them as its ``line``.
    """
    seen: dict[str, None] = {}
    refused: list[tuple[LineRefusal, str]] = []
    for number, raw in enumerate(split_lines(text), start=1):
        expression = raw.strip()
        if not expression:
            continue
        if len(expression) > max_length:
            refused.append((LineRefusal.of(number, expression, phrase(
                N_("%(length)s characters long (at most %(limit)s)"), length=len(expression), limit=max_length)),
                            phrase(N_("crawler trap on line %(line)s is %(length)s characters long (at most "
                                      "%(limit)s)"), line=number, length=len(expression), limit=max_length)))
            continue
        try:
            compile_pattern(expression)
        except PatternError as exc:
            # the pattern and RE2's reason stay as they are: quoted, not translated
            refused.append((LineRefusal.of(number, expression, phrase(N_("cannot be used: %(error)s"), error=str(exc))),
                            phrase(N_("crawler trap on line %(line)s cannot be used: %(error)s"), line=number,
                                   error=str(exc))))
            continue
        seen.setdefault(expression, None)
    if refused:
        first = refused[0][0]
        messages = [message for _refusal, message in refused]
        # every line's sentence, joined as the English joins them: a template of placeholders only, no words
        said = phrase("; ".join(f"%(line{index})s" for index in range(len(messages))),
                      **{f"line{index}": message for index, message in enumerate(messages)})
        raise CrawlerTrapError(said, first.line, split_lines(text)[first.line - 1].strip(),
                               [refusal for refusal, _message in refused])
    return tuple(seen)


def traps_text(traps: Iterable[str]) -> str:
    """The stored form: one expression per line."""
    return "\n".join(traps)


def parse_stored_traps(stored: str | None) -> tuple[str, ...]:
    """Stored traps back into a tuple; tolerant of blank lines left by older data."""
    if not stored:
        return ()
    return tuple(line.strip() for line in stored.splitlines() if line.strip())
