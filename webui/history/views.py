"""Pages of the history section: harvests and a domain search, a domain's harvest history, a harvest's
statistics with charts, the configurations of a run that got nothing, and the CSV export of the statistics.

Charts are inline SVG drawn on the server from the summary tables (no JavaScript library): ``bar_chart``
turns labelled values into bar geometry, and the template macro in history/_charts.html draws it.

The one direct query lists the harvest definitions' names for the index page, read-only. The runs that
captured something, which get links to the replay service, come from webui/history/captures.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flask import redirect, render_template, request, url_for
from flask_babel import gettext
from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.model.status import StopReason
from webui.api.exports import harvest_statistics_csv
from webui.api.history import (
    domain_history,
    harvest_id_of,
    harvest_runs,
    largest_domains,
    newest_run_with_figures,
    nothing_harvested,
    render_run,
)
from webui.auth import EXPORT, READ, require
from webui.context import database, settings
from webui.history import blueprint
from webui.history.captures import Run, captured_runs, latest_captured_run
from webui.qa import run_qa_sums
from webui.thumbnails import MAX_RUN_THUMBNAILS, run_thumbnails

CHART_RUNS = 30
CHART_ROW = 26  # SVG units per bar of a horizontal chart
CHART_LABEL_WIDTH = 270  # room for a stop reason's or a domain's name left of its bar
CHART_VALUE_WIDTH = 90  # room for the total right of the longest bar


def bar_chart(labels: Sequence[str], series: Sequence[Sequence[int]], names: Sequence[str], unit: str = "count",
              horizontal: bool = False, width: int = 640, height: int = 200) -> dict[str, Any]:
    """Stacked bars: one bar per label, one segment per series; geometry in SVG user units. Runs stand
    side by side (``horizontal`` False); named categories (stop reasons, domains) lie one under the other,
    their names readable on the left and the total on the right. ``unit`` ("bytes" or "count") says how
    the template writes the values."""
    totals = [sum(values[i] for values in series) for i in range(len(labels))]
    top = max(totals, default=0) or 1
    bars = []
    if horizontal:
        row = CHART_ROW
        height = row * max(len(labels), 1)
        for i, label in enumerate(labels):
            x = float(CHART_LABEL_WIDTH)
            segments = []
            for index, values in enumerate(series):
                w = values[i] / top * (width - CHART_LABEL_WIDTH - CHART_VALUE_WIDTH)
                segments.append({"x": round(x, 1), "width": round(w, 1), "value": values[i], "series": index,
                                 "name": names[index]})
                x += w
            bars.append({"y": round(i * row + row * 0.15, 1), "height": round(row * 0.7, 1), "label": label,
                         "total": totals[i], "end": round(x, 1), "segments": segments})
    else:
        slot = width / max(len(labels), 1)
        for i, label in enumerate(labels):
            y = float(height)
            segments = []
            for index, values in enumerate(series):
                h = values[i] / top * height
                y -= h
                segments.append({"y": round(y, 1), "height": round(h, 1), "value": values[i], "series": index,
                                 "name": names[index]})
            bars.append({"x": round(i * slot + slot * 0.1, 1), "width": round(slot * 0.8, 1), "label": label,
                         "total": totals[i], "segments": segments})
    return {"width": width, "height": height, "bars": bars, "names": list(names), "max": max(totals, default=0),
            "unit": unit, "horizontal": horizontal}


@blueprint.get("/")
@require(READ)
def index() -> Any:
    """Harvest definitions (with links to their statistics) and a domain search."""
    domain = (request.args.get("domain") or "").strip()
    if domain:
        return redirect(url_for("history.domain", name=domain.lower()))
    hd = s.harvestdefinitions
    with database().connect() as conn:
        harvests = list(conn.execute(select(hd.c.name, hd.c.isactive, hd.c.comments).order_by(hd.c.name)))
    return render_template("history/index.html", harvests=harvests)


@blueprint.get("/domains/<name>")
@require(READ)
def domain(name: str) -> Any:
    """A domain's harvest history, newest first, paged."""
    size = settings().webui.pageSize
    cursor = request.args.get("after", type=int)
    latest, captures = None, {}
    with database().connect() as conn:
        rows = domain_history(conn, name, size, cursor)
        if settings().replay.url:  # without a replay service there is nothing to link to
            latest = latest_captured_run(conn, name)
            runs = [Run(name, row.configuration, row.job_id, row.objectcount) for row in rows[:size]]
            captures = captured_runs(conn, runs + ([latest] if latest else []))
    following = rows[size - 1].historyinfo_id if len(rows) > size else None
    latest_capture = captures.get((name, latest.configuration, latest.job_id)) if latest else None
    return render_template("history/domain.html", name=name, rows=rows[:size], StopReason=StopReason,
                           captures=captures, latest=latest, latest_capture=latest_capture,
                           next_url=url_for("history.domain", name=name, after=following) if following else None)


@blueprint.get("/harvests/<name>")
@require(READ)
def harvest(name: str) -> Any:
    """A harvest's statistics: its newest runs as charts and a table, and the largest domains of one run
    (``?run=N``; by default the newest run with figures)."""
    cursor = request.args.get("after", type=int)
    chosen = request.args.get("run", type=int)
    with database().connect() as conn:
        harvest_id = harvest_id_of(conn, name)
        rows = harvest_runs(conn, harvest_id, CHART_RUNS, cursor)
        largest_run = chosen if chosen is not None else newest_run_with_figures(conn, harvest_id)
        largest = largest_domains(conn, harvest_id, largest_run)
        qa_sums = run_qa_sums(conn, harvest_id)
        # the newest run with pictures, each seed beside its picture of the run before
        newest, thumbnails = run_thumbnails(conn, harvest_id)
        captures = captured_runs(conn, [Run(d["domain"], d["configuration"], d["job_id"], d["objects"])
                                        for d in largest]) if settings().replay.url else {}
    runs = [{**render_run(row), "qa": qa_sums.get(row.harvest_num)} for row in rows[:CHART_RUNS]]
    following = runs[-1]["harvest_num"] if len(rows) > CHART_RUNS else None
    oldest_first = list(reversed(runs))
    labels = [str(run["harvest_num"]) for run in oldest_first]
    stops = {reason.name: sum(run["stop_reasons"][reason.name] for run in runs) for reason in StopReason}
    # only the reasons that occur, in the chart and as the table's columns: seven long names side by side
    # cannot be read, and the table would not fit the page
    stops = {name: total for name, total in stops.items() if total} or stops
    # the series' names are the charts' legends and tooltips, in the page's language
    charts = {
        "bytes": bar_chart(labels, [[run["bytes"] for run in oldest_first]], [gettext("bytes")], unit="bytes"),
        "objects": bar_chart(labels, [[run["objects"] for run in oldest_first]], [gettext("objects")]),
        "novelty": bar_chart(labels, [[run["novel_bytes"] for run in oldest_first],
                                      [run["duplicate_bytes"] for run in oldest_first]],
                             [gettext("novel bytes"), gettext("duplicate bytes")], unit="bytes"),
        "stops": bar_chart(list(stops), [list(stops.values())], [gettext("configurations")], horizontal=True),
        "largest": bar_chart([d["domain"] for d in largest], [[d["bytes"] for d in largest]], [gettext("bytes")],
                             unit="bytes", horizontal=True),
    }
    return render_template("history/harvest.html", name=name, harvest_id=harvest_id, runs=runs, charts=charts,
                           largest=largest, largest_run=largest_run, thumbnails=thumbnails, thumbnails_run=newest,
                           max_thumbnails=MAX_RUN_THUMBNAILS, captures=captures,
                           stop_names=list(stops), all_stops=len(stops) == len(StopReason),
                           next_url=url_for("history.harvest", name=name, after=following)
                           if following is not None else None)


@blueprint.get("/harvests/<name>/runs/<int:harvest_num>/nothing-harvested", endpoint="nothing_harvested")
@require(READ)
def nothing_harvested_page(name: str, harvest_num: int) -> Any:
    """The configurations of one run that got nothing, with the reason from crawl.log, paged."""
    size = settings().webui.pageSize
    cursor = request.args.get("after", type=int)
    with database().connect() as conn:
        rows = nothing_harvested(conn, harvest_id_of(conn, name), harvest_num, size, cursor)
    following = rows[size - 1].historyinfo_id if len(rows) > size else None
    return render_template("history/nothing_harvested.html", name=name, harvest_num=harvest_num, rows=rows[:size],
                           next_url=url_for("history.nothing_harvested", name=name, harvest_num=harvest_num,
                                            after=following) if following else None)


@blueprint.get("/harvests/<name>/statistics.csv")
@require(EXPORT)
def harvest_csv(name: str) -> Any:
    """Every run of the harvest as CSV: one row per harvest_num, oldest first, streamed."""
    return harvest_statistics_csv(name)
