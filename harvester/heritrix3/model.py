"""Heritrix 3's REST representations, in one place for the client (harvester/heritrix.py) and the bundled
engine's REST view (harvester/engine/rest/status.py): the job resource with its nested reports, the engine's job
list, the script console's and the bean browser's answers
(https://heritrix.readthedocs.io/en/latest/api.html).

Each element is a frozen dataclass whose fields are in Heritrix's order; a field's key in the XML or JSON is
its name in camelCase (``downloaded_uri_count`` -> ``downloadedUriCount``) unless its metadata names another
(``currentKiBPerSec``). ``parse_*`` reads an answer into them, whether XML (``Accept: application/xml``,
parsed from bytes with lxml so an XML declaration with an encoding is fine) or JSON; ``report_model`` gives
a report back as the mapping the engine writes. A key the reader does not know is ignored and a missing one
keeps its default, as a client of a newer or older Heritrix needs.
"""

from __future__ import annotations

import functools
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from lxml import etree

from harvester.heritrix3.states import ControllerState

XML = "application/xml"
JSON = "application/json"

_SNAKE = re.compile(r"_([a-z0-9])")


def _convert(value: Any, hint: Any) -> Any:
    """Convert a parsed value (XML text, or JSON) to the dataclass field's type."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        arguments = [argument for argument in typing.get_args(hint) if argument is not type(None)]
        if value is None or value == "":
            return None
        return _convert(value, arguments[0])
    if origin is tuple:
        (item_hint, *_rest) = typing.get_args(hint)
        items = value if isinstance(value, list) else ([] if value in (None, "") else [value])
        return tuple(_convert(item, item_hint) for item in items)
    if isinstance(hint, type) and hasattr(hint, "__dataclass_fields__"):
        return _build(hint, value if isinstance(value, Mapping) else {})
    if hint is bool:
        return value if isinstance(value, bool) else str(value).strip().lower() == "true"
    if hint is int:
        return int(float(value)) if value not in (None, "") else 0
    if hint is float:
        return float(value) if value not in (None, "") else 0.0
    if hint is str:
        return "" if value is None else str(value)
    return value


_T = typing.TypeVar("_T")


@functools.cache
def _keyed_fields(cls: type) -> tuple[tuple[str, str, Any], ...]:
    """(camelCase key, field name, type) of each field of a representation, worked out once per class: a
    status poll reads a dozen of them."""
    hints = typing.get_type_hints(cls)
    return tuple((camel_key(item), item.name, hints[item.name]) for item in fields(cls))


def _build(cls: type[_T], model: Mapping[str, Any]) -> _T:
    """A report dataclass from a model with Heritrix's camelCase keys (``camel_key``, the names the engine
    writes too); missing keys keep their default."""
    return cls(**{name: _convert(model[key], hint) for key, name, hint in _keyed_fields(cls) if key in model})


@dataclass(frozen=True)
class UriTotalsReport:
    downloaded_uri_count: int = 0
    queued_uri_count: int = 0
    total_uri_count: int = 0
    future_uri_count: int = 0


@dataclass(frozen=True)
class SizeTotalsReport:
    dup_by_hash: int = 0
    dup_by_hash_count: int = 0
    not_modified: int = 0
    not_modified_count: int = 0
    novel: int = 0
    novel_count: int = 0
    total: int = 0
    total_count: int = 0
    warc_novel_content_bytes: int = 0
    warc_novel_urls: int = 0
    size_on_disk: int = 0


@dataclass(frozen=True)
class RateReport:
    current_docs_per_second: float = 0.0
    average_docs_per_second: float = 0.0
    current_kib_per_sec: float = field(default=0.0, metadata={"key": "currentKiBPerSec"})
    average_kib_per_sec: float = field(default=0.0, metadata={"key": "averageKiBPerSec"})


@dataclass(frozen=True)
class LoadReport:
    busy_threads: int = 0
    total_threads: int = 0
    congestion_ratio: float = 0.0
    average_queue_depth: float = 0.0
    deepest_queue_depth: int = 0


@dataclass(frozen=True)
class ElapsedReport:
    elapsed_milliseconds: int = 0
    elapsed_pretty: str = ""


@dataclass(frozen=True)
class ThreadReport:
    toe_count: int = 0


@dataclass(frozen=True)
class FrontierCounts:
    """The job resource's frontierReport element: how many queues are in each state. The queues themselves
    come from the FrontierSummaryReport (harvester.frontierqueues)."""

    total_queues: int = 0
    in_process_queues: int = 0
    ready_queues: int = 0
    snoozed_queues: int = 0
    active_queues: int = 0
    inactive_queues: int = 0
    ineligible_queues: int = 0
    retired_queues: int = 0
    exhausted_queues: int = 0
    last_reached_state: str = ""


@dataclass(frozen=True)
class HeapReport:
    used_bytes: int = 0
    total_bytes: int = 0
    max_bytes: int = 0


@dataclass(frozen=True)
class JobResource:
    """GET /engine/job/NAME, as Heritrix's JobResource represents a job: its job status fields (reports None
    where the engine gave none). Not the harvest database's JobStatus, which is the job's
    place in NetarchiveSuite's life cycle (harvestdef.model.status)."""

    short_name: str = ""
    crawl_controller_state: str | None = None
    crawl_exit_status: str | None = None
    status_description: str = ""
    available_actions: tuple[str, ...] = ()
    launch_count: int = 0
    last_launch: str | None = None
    is_profile: bool = False
    is_running: bool = False
    is_launchable: bool = False
    has_application_context: bool = False
    alert_count: int = 0
    primary_config: str | None = None
    url: str | None = None
    job_log_tail: tuple[str, ...] = ()
    crawl_log_tail: tuple[str, ...] = ()
    checkpoint_files: tuple[str, ...] = ()
    checkpoint_name: str | None = None
    crawl_log_file_path: str | None = None
    alert_log_file_path: str | None = None
    uri_totals_report: UriTotalsReport | None = None
    size_totals_report: SizeTotalsReport | None = None
    rate_report: RateReport | None = None
    load_report: LoadReport | None = None
    elapsed_report: ElapsedReport | None = None
    thread_report: ThreadReport | None = None
    frontier_report: FrontierCounts | None = None
    heap_report: HeapReport | None = None

    @property
    def is_unbuilt(self) -> bool:
        return self.status_description == "Unbuilt"

    @property
    def is_ready(self) -> bool:
        return self.status_description == "Ready"

    @property
    def is_finished(self) -> bool:
        # NetarchiveSuite's test of a finished job: the controller says FINISHED, or the description does.
        return (self.crawl_controller_state == ControllerState.FINISHED
                or self.status_description.startswith("Finished"))


@dataclass(frozen=True)
class EngineJob:
    """One entry of /engine's jobs list."""

    short_name: str = ""
    url: str | None = None
    is_profile: bool = False
    launch_count: int = 0
    last_launch: str | None = None
    has_application_context: bool = False
    status_description: str = ""
    primary_config: str | None = None


@dataclass(frozen=True)
class EngineStatus:
    heritrix_version: str = ""
    jobs_dir: str | None = None
    available_actions: tuple[str, ...] = ()
    jobs: tuple[EngineJob, ...] = ()
    heap_report: HeapReport | None = None

    def job_names(self) -> list[str]:
        return [job.short_name for job in self.jobs]


def _element_model(element: etree._Element) -> Any:
    """Heritrix's XML as a model: children all named ``value`` are a list, other children a mapping."""
    children = [child for child in element if isinstance(child.tag, str)]
    if not children:
        return (element.text or "").strip()
    if all(child.tag == "value" for child in children):
        return [_element_model(child) for child in children]
    return {child.tag: _element_model(child) for child in children}


def parse_representation(body: bytes, content_type: str, root_name: str) -> Mapping[str, Any]:
    """The model of an XML or JSON status document whose root is ``root_name``; ValueError if it is not one."""
    if "json" in content_type:
        model = json.loads(body.decode("utf-8"))
        if isinstance(model, dict) and set(model) == {root_name} and isinstance(model[root_name], dict):
            model = model[root_name]
        if not isinstance(model, dict):
            raise ValueError("JSON status is not an object")
        return model
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    # Bytes, not str: lxml refuses a str that carries an encoding declaration.
    root = etree.fromstring(body, parser=parser)
    if root.tag != root_name:
        raise ValueError(f"root element is <{root.tag}>, expected <{root_name}>")
    model = _element_model(root)
    return model if isinstance(model, dict) else {}


@dataclass(frozen=True)
class ScriptResult:
    """What the script console answered to a script (Heritrix's ScriptModel): whether it failed and why
    (``exception``, Heritrix's text of the script's exception), what it printed, how many lines ran."""

    failure: bool
    exception: str
    raw_output: str
    lines_executed: int


def parse_script_result(body: bytes, content_type: str = XML) -> ScriptResult:
    model = parse_representation(body, content_type, "script")
    exception = _convert(model.get("exception") or model.get("stackTrace") or "", str)
    # An older ScriptModel has no ``failure``: an exception is the failure there.
    failure = _convert(model["failure"], bool) if "failure" in model else bool(exception)
    return ScriptResult(failure=failure, exception=exception,
                        raw_output=_convert(model.get("rawOutput") or "", str),
                        lines_executed=_convert(model.get("linesExecuted") or 0, int))


def parse_bean_value(body: bytes, content_type: str = XML) -> str:
    """The value of one bean property from the bean browser's answer (Heritrix's BeansModel)."""
    model = parse_representation(body, content_type, "beans")
    if model.get("problem"):
        raise ValueError(f"the engine could not read the property: {model['problem']}")
    bean = model.get("bean")
    value = bean.get("propValue") if isinstance(bean, Mapping) else model.get("target")
    if value is None or isinstance(value, Mapping | list):
        raise ValueError("the answer holds no single property value")
    return _convert(value, str)


def parse_job_resource(body: bytes, content_type: str = XML) -> JobResource:
    return _build(JobResource, parse_representation(body, content_type, "job"))


def parse_engine_status(body: bytes, content_type: str = XML) -> EngineStatus:
    return _build(EngineStatus, parse_representation(body, content_type, "engine"))


def camel_key(item: Any) -> str:
    """The XML and JSON key of a representation's dataclass field."""
    return item.metadata.get("key") or _SNAKE.sub(lambda found: found[1].upper(), item.name)


def report_model(report: Any) -> dict[str, Any]:
    """A report dataclass as the mapping of its camelCase keys, in field order, as the engine writes it."""
    return {camel_key(item): getattr(report, item.name) for item in fields(report)}

