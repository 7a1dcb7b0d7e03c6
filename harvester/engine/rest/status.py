"""The representations of ``/engine`` and ``/engine/job/NAME``: XML and JSON shaped like Heritrix 3's.

A representation is built in two steps: ``engine_model``/``job_model`` turn the registry's snapshots into a
plain ordered model (dicts, lists, scalars, None for an absent field) with Heritrix's field names (Heritrix
3's REST API documentation, https://heritrix.readthedocs.io/en/latest/api.html; the nested reports are
written from the representations the client reads, harvester/heritrix3/model.py), and ``to_xml``/``to_json``/
``to_html`` serialise any model. The XML follows Heritrix's marshaller: the root element is ``<engine>`` or
``<job>``, a field is a child element of that name, a nested report is an element with one child per key, a
list is an element with one ``<value>`` child per item, and a field whose value is None is left out. JSON
carries the same structure (root fields at the top level).

This module formats only; it never changes a job.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lxml import etree

from harvester.engine.reporting.reports import REPORT_FILES
from harvester.engine.reporting.stats import format_duration
from harvester.heritrix3.layout import ALERTS_LOG, CRAWL_LOG, LOGS_DIR
from harvester.heritrix3.model import ElapsedReport, HeapReport, ThreadReport, report_model

if TYPE_CHECKING:
    from harvester.engine.rest.jobregistry import EngineSnapshot, JobSnapshot

ENGINE_VERSION = "HarvestSuite crawl engine 0.1.0 (Heritrix 3 REST API subset)"
XML_DECLARATION = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'

REPORTS = tuple((class_name, class_name.removesuffix("Report")) for class_name in REPORT_FILES)


def heap_report() -> dict[str, int]:
    """Memory of this process in the shape of Heritrix's heapReport (resident set size, no JVM heap here)."""
    page_size = os.sysconf("SC_PAGE_SIZE")
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            size_pages, resident_pages = (int(field) for field in statm.read().split()[:2])
    except OSError:
        size_pages = resident_pages = 0
    return report_model(HeapReport(used_bytes=resident_pages * page_size, total_bytes=size_pages * page_size,
                                   max_bytes=size_pages * page_size))


def elapsed_pretty(milliseconds: int) -> str:
    """elapsedPretty: Heritrix's ArchiveUtils.formatMillisecondsToConventional (``41s968ms``)."""
    return format_duration(milliseconds)


def job_model(job: JobSnapshot, base_url: str) -> dict[str, Any]:
    """The model of GET /engine/job/NAME."""
    url = f"{base_url}/engine/job/{job.name}"
    crawl = job.launch_status
    model: dict[str, Any] = {
        "shortName": job.name,
        "crawlControllerState": job.controller_state,
        "crawlExitStatus": job.exit_status,
        "statusDescription": job.status_description,
        "availableActions": list(job.available_actions),
        "launchCount": job.launch_count,
        "lastLaunch": job.last_launch,
        "isProfile": job.is_profile,
        "isRunning": job.is_running,
        "isLaunchable": job.is_launchable,
        "hasApplicationContext": job.has_application_context,
        "isLaunchInfoPartial": False,
        "alertCount": crawl.alert_count if crawl else 0,
        "primaryConfig": str(job.primary_config),
        "primaryConfigUrl": f"{url}/jobdir/{job.primary_config.name}",
        "url": url,
        "jobLogTail": list(job.job_log_tail),
        "crawlLogTail": list(crawl.crawl_log_tail) if crawl else [],
        "configFiles": [{"name": job.primary_config.name, "path": str(job.primary_config)}],
        "checkpointFiles": list(job.checkpoints),
        "heapReport": heap_report(),
    }
    if crawl is not None:
        launch_logs = job.launch_dir / LOGS_DIR if job.launch_dir else None
        model.update({
            "checkpointName": job.resumed_checkpoint,
            "uriTotalsReport": report_model(crawl.figures.uri_totals),
            "sizeTotalsReport": report_model(crawl.figures.size_totals),
            "rateReport": report_model(crawl.figures.rates),
            "loadReport": report_model(crawl.figures.load),
            "elapsedReport": report_model(ElapsedReport(crawl.elapsed_ms, elapsed_pretty(crawl.elapsed_ms))),
            "threadReport": report_model(ThreadReport(crawl.toe_count)),
            "frontierReport": report_model(crawl.figures.frontier),
            "crawlLogFilePath": str(launch_logs / CRAWL_LOG) if launch_logs else None,
            "alertLogFilePath": str(launch_logs / ALERTS_LOG) if launch_logs else None,
            "reports": [{"className": class_name, "shortName": short_name,
                         "url": f"{url}/report/{class_name}"} for class_name, short_name in REPORTS],
        })
    return model


def engine_model(engine: EngineSnapshot, base_url: str) -> dict[str, Any]:
    """The model of GET /engine."""
    return {
        "heritrixVersion": ENGINE_VERSION,
        "heapReport": heap_report(),
        "jobsDir": str(engine.jobs_dir),
        "jobsDirUrl": f"{base_url}/engine/jobsdir/",
        "availableActions": ["rescan", "add", "create"],
        "jobs": [
            {"shortName": job.name, "url": f"{base_url}/engine/job/{job.name}", "isProfile": job.is_profile,
             "launchCount": job.launch_count, "lastLaunch": job.last_launch,
             "hasApplicationContext": job.has_application_context, "statusDescription": job.status_description,
             "isLaunchInfoPartial": False, "primaryConfig": str(job.primary_config),
             "primaryConfigUrl": f"{base_url}/engine/job/{job.name}/jobdir/{job.primary_config.name}",
             "key": job.name}
            for job in engine.jobs
        ],
        "profiles": [{"shortName": engine.profile_name, "isProfile": True}],
    }


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _append(parent: etree._Element, name: str, value: Any) -> None:
    if value is None:
        return
    element = etree.SubElement(parent, name)
    if isinstance(value, Mapping):
        for key, item in value.items():
            _append(element, key, item)
    elif isinstance(value, list | tuple):
        for item in value:
            _append(element, "value", item)
    else:
        element.text = _scalar_text(value)


def to_xml(root_name: str, model: Mapping[str, Any]) -> bytes:
    root = etree.Element(root_name)
    for key, value in model.items():
        _append(root, key, value)
    return XML_DECLARATION + etree.tostring(root, encoding="UTF-8", pretty_print=True, xml_declaration=False)


def to_json(model: Mapping[str, Any]) -> bytes:
    return json.dumps(model, indent=1, ensure_ascii=False).encode("utf-8")


def to_html(title: str, model: Mapping[str, Any]) -> bytes:
    """A plain page for a person with a browser; machines ask for XML or JSON."""
    body = html.escape(to_json(model).decode("utf-8"))
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>"
            f"<body><h1>{html.escape(title)}</h1><pre>{body}</pre></body></html>").encode()
