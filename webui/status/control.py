"""The job page's forms that steer a running job: its control buttons and its change forms.

Each form posts here and goes through the API's own functions (webui/api/changes.py: request_control,
request_change), so a page and an API call are judged alike. A form's fields are text: this module only
turns them into the JSON the API takes (a number typed as digits becomes a number; anything else is passed
on as it was typed, for harvestdef/livechanges.py to refuse naming the field). A stored change is flashed
and the page loaded again; a refused one shows the page again with the error at the top and beside the
field it names (webui/status/templates/status/_steer.html), what was typed still in it, nothing stored.
"""

from __future__ import annotations

import re
from typing import Any

from flask import flash, redirect, request, url_for
from flask_babel import gettext as _

from harvestdef.errors import HarvestSuiteError
from harvestdef.livechanges import ADD_URIS, BUDGET, DELETE_QUEUED, POLITENESS, REJECT, UNREJECT
from webui.api.changes import request_change, request_control
from webui.api.errors import ApiError, is_client_error, translate
from webui.auth import OPERATE, require
from webui.refusal_words import words
from webui.status import blueprint
from webui.status.jobs import job_page

# The fields each change form sends, and which of them are numbers.
FORM_FIELDS: dict[str, tuple[str, ...]] = {
    REJECT: ("regex", "domain"), UNREJECT: ("regex", "domain"), BUDGET: ("domain", "max_objects", "max_bytes"),
    DELETE_QUEUED: ("regex",), ADD_URIS: ("uris",),
    POLITENESS: ("delay_factor", "min_delay_ms", "max_delay_ms", "max_per_host"),
}
_NUMBERS = frozenset({"max_objects", "max_bytes", "delay_factor", "min_delay_ms", "max_delay_ms", "max_per_host"})
_INTEGER = re.compile(r"[+-]?\d{1,30}")
_DECIMAL = re.compile(r"[+-]?(\d{1,30}(\.\d{0,30})?|\.\d{1,30})")
_URI_INDEX = re.compile(r"uris\[(\d+)\]")


@blueprint.post("/jobs/<int:job_id>/control")
@require(OPERATE)
def control(job_id: int) -> Any:
    """A control button: pause, resume, checkpoint, stop or fail the job."""
    action = request.form.get("action", "")
    try:
        change = request_control(job_id, action, {})
    except (ApiError, HarvestSuiteError) as exc:
        return _refused(job_id, "control", exc, {"action": action})
    flash(_("Change %(version)s (%(kind)s) is pending: the job's controller carries it out shortly.",
            version=change["version"], kind=change["kind"]), "info")
    return redirect(url_for("status.job", job_id=job_id, _anchor="steer"))


@blueprint.post("/jobs/<int:job_id>/changes")
@require(OPERATE)
def change(job_id: int) -> Any:
    """A change form: reject or unreject URIs, a domain's budget, delete queued URIs, add URIs, politeness."""
    kind = request.form.get("kind", "")
    typed = {name: request.form.get(name, "") for name in FORM_FIELDS.get(kind, ())}
    lines: list[int] = []
    fields: dict[str, Any] = {"kind": kind}
    for name, text in typed.items():
        if name == "uris":
            numbered = [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1)
                        if line.strip()]
            lines = [number for number, _ in numbered]
            fields["uris"] = [line for _, line in numbered]
        elif text.strip():
            fields[name] = _number(text.strip()) if name in _NUMBERS else text
    try:
        made = request_change(job_id, fields)
    except (ApiError, HarvestSuiteError) as exc:
        return _refused(job_id, kind, exc, typed, lines)
    flash(_("Change %(version)s (%(summary)s) is pending: the job's controller applies it shortly.",
            version=made["version"], summary=made["summary"]), "info")
    return redirect(url_for("status.job", job_id=job_id, _anchor="steer"))


def _number(text: str) -> Any:
    """Digits as an integer, a decimal as a float; other text as it was typed."""
    if _INTEGER.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    return text


def _refused(job_id: int, form: str, error: Exception, typed: dict[str, str], lines: list[int] | None = None
             ) -> Any:
    """The job page again, the error beside the form that was sent; a 404 stays the error page's."""
    if not is_client_error(error):
        raise error
    answer = translate(error)
    if answer.status == 404:
        raise error
    problem, message = words(answer)
    if answer.phrase is None:
        message = answer.message  # as the API says it, which names what it is about
    index = _URI_INDEX.fullmatch(answer.field or "")
    if index is not None and lines and int(index.group(1)) < len(lines):
        # the form's user sees lines, not the API's list
        problem = problem if answer.phrase is not None else problem.split(': ', 1)[-1]
        message = _("URIs, line %(line)s: %(problem)s", line=lines[int(index.group(1))], problem=problem)
    flash(message, "error")  # the summary at the top; the page shows it beside its field too
    return job_page(job_id, {"form": form, "field": answer.field, "message": message, "typed": typed}), \
        answer.status
