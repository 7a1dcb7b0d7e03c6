"""The politeness a crawl may be given, bounded by the site's settings (harvestsuite.liveChanges.*): a live
politeness change (harvestdef/livechanges.py) and a crawl template stored through the web UI or the API
(harvestdef/repositories/templates.py) below a floor are refused, naming the value, the floor and its
setting. A crawler hammering a site it harvests is the archive's fault, whoever typed the numbers.

The values are Heritrix's: ``disposition.delayFactor`` (a queue rests this many times its last fetch's
duration), ``disposition.minDelayMs`` and ``disposition.maxDelayMs`` (the least and the longest rest), and
``queueAssignmentPolicy.parallelQueues`` (the URIs of one host fetched at once; the live change's
``max_per_host``), which is bounded above. A template gives them as PropertyOverrideConfigurer overrides
(``disposition.delayFactor=5.0`` in a ``properties`` text or a ``<prop key=...>``) or as properties of the
``disposition`` and ``queueAssignmentPolicy`` beans; an override wins, as in Spring, and a value holding a
NetarchiveSuite placeholder is filled in later and not judged here. A value a template leaves out is the
crawler's default, which the floors do not judge either.

This module only reads values: it never touches the database, and reads templates with
harvestdef.crawltemplate's safe parser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lxml import etree

from harvestdef.errors import FieldError, TemplateError
from harvestdef.phrases import N_, Phrase, phrase

if TYPE_CHECKING:
    from harvestdef.settings import LiveChangeSettings

__all__ = ["POLITENESS_PROPERTIES", "PolitenessBounds", "template_politeness"]

# the live change's field -> the crawler's bean property
POLITENESS_PROPERTIES: Mapping[str, str] = {
    "delay_factor": "disposition.delayFactor",
    "min_delay_ms": "disposition.minDelayMs",
    "max_delay_ms": "disposition.maxDelayMs",
    "max_per_host": "queueAssignmentPolicy.parallelQueues",
}
_OVERRIDE_CLASS = "org.springframework.beans.factory.config.PropertyOverrideConfigurer"
_PROPERTY_LINE = re.compile(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$")


@dataclass(frozen=True)
class PolitenessBounds:
    """The floors (and the one ceiling) of politeness, with the settings that give them."""

    min_delay_factor: float = 0.0
    min_delay_ms: int = 0
    min_max_delay_ms: int = 0
    max_per_host: int = 100

    @classmethod
    def from_settings(cls, settings: LiveChangeSettings) -> PolitenessBounds:
        """The bounds of harvestsuite.liveChanges.minDelayFactor, minDelayMs, minMaxDelayMs and maxPerHost."""
        return cls(min_delay_factor=settings.minDelayFactor, min_delay_ms=settings.minDelayMs,
                   min_max_delay_ms=settings.minMaxDelayMs, max_per_host=settings.maxPerHost)

    def problem(self, field: str, value: float) -> Phrase | None:
        """Why ``value`` of ``field`` (a live change's name) is out of bounds, in words; None if it is not."""
        least = N_("must be at least %(bound)s (%(setting)s), not %(value)s")
        if field == "delay_factor" and value < self.min_delay_factor:
            return phrase(least, bound=f"{self.min_delay_factor:g}", setting="harvestsuite.liveChanges.minDelayFactor",
                          value=f"{value:g}")
        if field == "min_delay_ms" and value < self.min_delay_ms:
            return phrase(least, bound=self.min_delay_ms, setting="harvestsuite.liveChanges.minDelayMs",
                          value=f"{value:g}")
        if field == "max_delay_ms" and value < self.min_max_delay_ms:
            return phrase(least, bound=self.min_max_delay_ms, setting="harvestsuite.liveChanges.minMaxDelayMs",
                          value=f"{value:g}")
        if field == "max_per_host" and value > self.max_per_host:
            return phrase(N_("must be at most %(bound)s (%(setting)s), not %(value)s"), bound=self.max_per_host,
                          setting="harvestsuite.liveChanges.maxPerHost", value=f"{value:g}")
        return None

    def check_change(self, payload: Mapping[str, float]) -> None:
        """FieldError naming the first field of a politeness change's payload that is out of bounds."""
        for field in POLITENESS_PROPERTIES:
            if field in payload:
                problem = self.problem(field, payload[field])
                if problem is not None:
                    raise FieldError(field, problem)

    def check_template(self, root: etree._Element, name: str) -> None:
        """TemplateError naming the property, its value and the bound, for a template (its parsed root) that
        gives a politeness value out of bounds."""
        given = template_politeness(root)
        for field, path in POLITENESS_PROPERTIES.items():
            if path not in given:
                continue
            text, line = given[path]
            try:
                value = float(text)
            except ValueError:
                raise TemplateError(f"{name}: {path} on line {line} must be a number, not {text!r}", line,
                                    None) from None
            problem = self.problem(field, value)
            if problem is not None:
                raise TemplateError(f"{name}: {path} on line {line} {problem}", line, None)


def template_politeness(root: etree._Element) -> dict[str, tuple[str, int | None]]:
    """The politeness properties a template gives, each as (its text, its line), overrides winning over the
    beans' own properties; those holding a placeholder left out."""
    paths = set(POLITENESS_PROPERTIES.values())
    found: dict[str, tuple[str, int | None]] = {}
    for bean in root.iter("{*}bean"):
        for prop in bean.iterfind("{*}property"):
            path = f"{bean.get('id')}.{prop.get('name')}"
            if path in paths and prop.get("value") is not None:
                found[path] = (str(prop.get("value")).strip(), prop.sourceline)
    for key, value, line in _overrides(root):
        if key in paths:
            found[key] = (value, line)
    return {path: (text, line) for path, (text, line) in found.items() if "%{" not in text}


def _overrides(root: etree._Element) -> Iterator[tuple[str, str, int | None]]:
    """Every override of the template's PropertyOverrideConfigurers, in document order (a later one wins)."""
    for bean in root.iter("{*}bean"):
        if bean.get("class") != _OVERRIDE_CLASS:
            continue
        for prop in bean.iterfind("{*}property"):
            if prop.get("name") != "properties":
                continue
            for value in prop.iterfind("{*}value"):
                start = value.sourceline or 0
                for offset, raw in enumerate((value.text or "").splitlines()):
                    match = _PROPERTY_LINE.match(raw.strip())
                    if match and raw.strip()[0] not in "#!":
                        yield match.group(1), match.group(2).strip(), start + offset if start else None
            for item in prop.iter("{*}prop"):
                key = item.get("key")
                if key:
                    yield key, (item.text or "").strip(), item.sourceline
