"""Spring bean definitions of a crawler-beans.cxml, read with lxml, and PropertyOverrideConfigurer.

This module knows Spring's XML shapes (bean, property, value, list, map, props, ref) and nothing of what
the beans mean: harvester/engine/config.py gives them meaning. Overrides are applied here, before the
configuration is interpreted, as Spring does before it instantiates beans (dotted and indexed paths such
as ``scope.rules[2].maxHops`` or ``seeds.textSource.value``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

from harvestdef.crawltemplate import template_parser
from harvestdef.errors import ValidationError

SPRING_NS = "{http://www.springframework.org/schema/beans}"
OVERRIDE_CLASS = "org.springframework.beans.factory.config.PropertyOverrideConfigurer"
_PATH_SEGMENT = re.compile(r"^(?P<name>[A-Za-z_][\w]*)(?:\[(?P<index>\d+)\])?$")


@dataclass
class Ref:
    """``<ref bean="..."/>``: resolved lazily, as beans may be declared after their use."""
    bean_id: str


@dataclass
class Bean:
    class_name: str
    bean_id: str | None = None
    properties: dict[str, object] = field(default_factory=dict)
    line: int | None = None

    @property
    def short_class(self) -> str:
        return self.class_name.rsplit(".", 1)[-1]


class BeanError(ValidationError):
    """A crawler-beans file that is not well-formed or not in the expected form; XML errors carry line and column."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column


def _local(tag: object) -> str:
    return tag.split("}", 1)[-1] if isinstance(tag, str) else ""


def _value_of(element: etree._Element) -> object:
    """A property's value: attribute value/ref, or its single child element."""
    if element.get("value") is not None:
        return element.get("value")
    if element.get("ref") is not None:
        return Ref(element.get("ref"))
    children = [child for child in element if isinstance(child.tag, str)]
    if not children:
        return (element.text or "").strip()
    return _element_value(children[0])


def _element_value(element: etree._Element) -> object:
    tag = _local(element.tag)
    if tag == "value":
        return element.text or ""
    if tag == "ref":
        return Ref(element.get("bean") or element.get("local") or "")
    if tag == "bean":
        return _bean(element)
    if tag in ("list", "set"):
        return [_element_value(child) for child in element if isinstance(child.tag, str)]
    if tag == "map":
        result: dict[str, object] = {}
        for entry in element:
            if _local(entry.tag) != "entry":
                continue
            if entry.get("value") is not None:
                result[entry.get("key")] = entry.get("value")
            elif entry.get("value-ref") is not None:
                result[entry.get("key")] = Ref(entry.get("value-ref"))
            else:
                result[entry.get("key")] = _value_of(entry)
        return result
    if tag == "props":
        return {prop.get("key"): (prop.text or "").strip() for prop in element if _local(prop.tag) == "prop"}
    if tag == "null":
        return None
    return (element.text or "").strip()


def _bean(element: etree._Element) -> Bean:
    bean = Bean(class_name=element.get("class") or "", bean_id=element.get("id") or element.get("name"),
                line=element.sourceline)
    for child in element:
        if _local(child.tag) == "property":
            bean.properties[child.get("name")] = _value_of(child)
    return bean


def parse_beans(data: bytes) -> list[Bean]:
    """Top-level beans in document order. Raises BeanError with line and column for malformed XML."""
    parser = template_parser(remove_comments=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line, column = (exc.position if exc.position else (None, None))
        raise BeanError(f"crawler-beans.cxml is not well-formed: {exc.msg} (line {line}, column {column})",
                        line, column) from exc
    if _local(root.tag) != "beans":
        raise BeanError(f"root element is <{_local(root.tag)}>, not <beans>", root.sourceline, None)
    return [_bean(child) for child in root if _local(child.tag) == "bean"]


def parse_properties_text(text: str) -> dict[str, str]:
    """Java ``Properties`` text (key=value lines, '#' and '!' comments, trailing-backslash continuations)."""
    result: dict[str, str] = {}
    pending = ""
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match:
            result[match.group(1)] = match.group(2)
        elif line:
            result[line] = ""
    return result


class BeanSet:
    """All named beans of a cxml, with PropertyOverrideConfigurer overrides applied."""

    def __init__(self, beans: list[Bean]):
        self.beans = beans
        self.by_id = {bean.bean_id: bean for bean in beans if bean.bean_id}
        self.warnings: list[str] = []

    def resolve(self, value: object) -> object:
        """Follow a Ref to its bean (one level)."""
        if isinstance(value, Ref):
            target = self.by_id.get(value.bean_id)
            if target is None:
                self.warnings.append(f"reference to undefined bean {value.bean_id!r} ignored")
            return target
        return value

    def apply_overrides(self) -> None:
        """Apply every PropertyOverrideConfigurer in document order (a later one wins, as in Spring)."""
        for bean in self.beans:
            if bean.class_name != OVERRIDE_CLASS:
                continue
            properties = bean.properties.get("properties")
            if isinstance(properties, str):
                properties = parse_properties_text(properties)
            if not isinstance(properties, dict):
                continue
            for key, value in properties.items():
                self._override(key, value)

    def _override(self, key: str, value: object) -> None:
        bean_id, _, path = key.partition(".")
        target: object = self.by_id.get(bean_id)
        if target is None or not path:
            self.warnings.append(f"override {key} ignored: no bean {bean_id!r}")
            return
        segments = path.split(".")
        for position, segment in enumerate(segments):
            match = _PATH_SEGMENT.match(segment)
            target = self.resolve(target)
            if match is None or not isinstance(target, Bean):
                self.warnings.append(f"override {key} ignored: cannot follow {segment!r}")
                return
            name, index = match.group("name"), match.group("index")
            last = position == len(segments) - 1
            if index is not None:
                items = target.properties.get(name)
                if not isinstance(items, list) or int(index) >= len(items):
                    self.warnings.append(f"override {key} ignored: {bean_id}.{name} has no element {index}")
                    return
                if last:
                    items[int(index)] = value
                    return
                target = items[int(index)]
            elif last:
                target.properties[name] = value
                return
            else:
                nested = target.properties.get(name)
                if nested is None:
                    self.warnings.append(f"override {key} ignored: {name!r} is not set on {bean_id!r}")
                    return
                target = nested
