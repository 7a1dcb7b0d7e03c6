"""``/api/v1/openapi.json``: the API's description, made from the routes themselves.

Paths, methods, summaries (the view's docstring's first paragraph), a tag per path's first segment (the
groups of the API page), descriptions (the roles that may call the route, and the docstring's other
paragraphs), path parameters (``<int:...>`` as 64-bit
ids), query parameters (their ``@takes`` declarations, webui/api/parameters.py) and the shape of a success
answer (its ``@answers`` declaration, webui/api/shapes.py, or SUCCESS_CONTENT below) come from the routes of
the API's blueprint; request bodies come from REQUEST_BODIES below, one JSON Schema per route that reads a
body, and responses follow the error boundary's rule (webui/api/errors.py): the route's success status, and
every 4xx it may answer with the one error object. No 5xx is described: a 500 is a bug, never an answer
(tests/webui/test_api_fuzz.py fuzzes every operation from this description and fails on one).

The schema is read only for column lengths, which the request schemas state as limits.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from flask import current_app, jsonify

from harvestdef.crawlattributes import MAX_HOPS_LIMIT
from harvestdef.db import schema as s
from harvestdef.livechanges import (
    CONTROL_ACTIONS,
    KINDS,
    MAX_ADDED_URIS,
    MAX_DELAY_FACTOR,
    MAX_DELAY_MS,
    MAX_PER_HOST,
    MAX_REASON_LENGTH,
    MAX_REGEX_LENGTH,
    STATES,
)
from harvestdef.model.definitions import Role
from harvestdef.model.webhooks import MAX_SECRET_LENGTH, MAX_URL_LENGTH, MIN_SECRET_LENGTH, WebhookEvent
from harvestdef.repositories.users import MAX_TOKEN_LABEL_LENGTH, MIN_PASSWORD_LENGTH
from harvestdef.validation import INT64, column_length
from webui.api.core import MAX_LIMIT, blueprint
from webui.api.errors import STATUS_OF_CODE
from webui.api.live import LIVE_SCHEMA
from webui.api.parameters import declared
from webui.api.shapes import answer_schema
from webui.auth import PERMISSIONS

_PARAMETER = re.compile(r"<(?:([^:<>()]+)(?:\([^<>]*\))?:)?([^<>]+)>")

INT64_RANGE = INT64
NAME_LENGTH = column_length(s.schedules.c.name)
TEXT_LENGTH = column_length(s.schedules.c.comments)
_STRING_LIST = {"type": "array", "items": {"type": "string"}}
_NAME = {"type": "string", "minLength": 1, "maxLength": NAME_LENGTH}
_TEXT = {"type": "string", "maxLength": TEXT_LENGTH}
_INT64 = {"type": "integer", "minimum": INT64_RANGE[0], "maximum": INT64_RANGE[1]}
_LIMIT = {"type": "integer", "minimum": -1, "maximum": INT64_RANGE[1], "description": "-1: unlimited"}
_EDITION = {**_INT64, "description": "the edition the change is based on (409 if it is not the current one)"}
_TIME = {"type": ["string", "null"], "description": "ISO 8601 (UTC when no zone is given)"}
_SCHEDULE = {
    "name": _NAME, "comments": _TEXT, "anytime": {"type": "boolean"},
    "timeunit": {"type": ["string", "integer"], "description": "MINUTE, HOURLY, DAILY, WEEKLY, MONTHLY or 1-5"},
    "numtimeunits": {"type": "integer", "minimum": 1}, "onminute": {"type": ["integer", "null"]},
    "onhour": {"type": ["integer", "null"]}, "ondayofweek": {"type": ["integer", "null"]},
    "ondayofmonth": {"type": ["integer", "null"]}, "maxrepeats": {"type": ["integer", "null"]},
    "startdate": _TIME, "enddate": _TIME,
}
# harvestdef.crawlattributes: NetarchiveSuite's EAV crawl attributes
_HOPS = {"type": "integer", "minimum": 0, "maximum": MAX_HOPS_LIMIT, "description": "link hops from a seed"}
_CRAWL_ATTRIBUTES = {"type": "object", "additionalProperties": False, "required": [], "properties": {
    "max_hops": _HOPS,
    "honor_robots_dot_txt": {"type": "boolean", "description": "true: obey robots.txt; false: ignore it"},
    "extract_javascript": {"type": "boolean", "description": "extract links from JavaScript"}}}
_SNAPSHOT_ATTRIBUTES = {
    "type": "object", "additionalProperties": False, "required": [],
    "description": "the snapshot's own values, which replace its configurations'; null (or left out on creation): "
                   "each configuration's own",
    "properties": {"max_hops": {**_HOPS, "type": ["integer", "null"]},
                   "honor_robots_dot_txt": {"type": ["boolean", "null"]},
                   "extract_javascript": {"type": ["boolean", "null"]}}}
_CONFIGURATION = {"name": _NAME, "template": _NAME, "seedlists": _STRING_LIST, "max_objects": _LIMIT,
                  "max_bytes": _LIMIT, "max_rate": {"type": ["integer", "null"]}, "comments": _TEXT,
                  "crawl_attributes": _CRAWL_ATTRIBUTES}
_EXTENDED_FIELDS = {"edition": _EDITION, "values": {"type": "object", "additionalProperties": {"type": "string"}}}


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def _closed(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """An object that takes no other fields (harvestdef/livechanges.py refuses them, naming them)."""
    return {**_object(properties, *required), "additionalProperties": False}


_WEBHOOK = {
    "name": {"type": "string", "minLength": 1, "maxLength": column_length(s.webhooks.c.name)},
    "url": {"type": "string", "minLength": 1, "maxLength": MAX_URL_LENGTH,
            "description": "http:// or https:// with a host; no user name or password, no #fragment"},
    "events": {"type": "array", "minItems": 1, "items": {"enum": [event.value for event in WebhookEvent]}},
    "secret": {"type": "string", "minLength": MIN_SECRET_LENGTH, "maxLength": MAX_SECRET_LENGTH,
               "description": "signs every delivery (X-HarvestSuite-Signature: sha256=HMAC-SHA256 of the body); "
                              "never shown again"},
    "active": {"type": "boolean"},
}

# A running job's changes (harvestdef/livechanges.py has the rules these describe).
_REGEX = {"type": "string", "minLength": 1, "maxLength": MAX_REGEX_LENGTH,
          "description": "a regular expression in Java's syntax, as Heritrix reads it and crawler traps are written "
                         "(no lookaround or backreferences: it is run by RE2)"}
_JOB_DOMAIN = {"type": "string", "description": "one of the job's domains, in Unicode or punycode"}
_BUDGET_LIMIT = {"type": "integer", "minimum": -1, "maximum": INT64[1], "description": "-1: unlimited"}
_DELAY = {"type": "integer", "minimum": 0, "maximum": MAX_DELAY_MS}
CONTROL_BODY = _closed({"action": {"enum": list(CONTROL_ACTIONS)},
                        "reason": {"type": "string", "maxLength": MAX_REASON_LENGTH,
                                   "description": "why, in one line (kept with the change)"}}, "action")
CHANGE_BODY = {"oneOf": [
    _closed({"kind": {"enum": ["reject", "unreject"]}, "regex": _REGEX, "domain": _JOB_DOMAIN}, "kind", "regex"),
    _closed({"kind": {"const": "budget"}, "domain": _JOB_DOMAIN, "max_objects": _BUDGET_LIMIT,
             "max_bytes": _BUDGET_LIMIT}, "kind", "domain"),
    _closed({"kind": {"const": "delete_queued"}, "regex": _REGEX}, "kind", "regex"),
    _closed({"kind": {"const": "add_uris"},
             "uris": {"type": "array", "minItems": 1, "maxItems": MAX_ADDED_URIS, "items": {"type": "string"},
                      "description": "http or https URIs on the job's domains or their subdomains"}},
            "kind", "uris"),
    _closed({"kind": {"const": "politeness"},
             "delay_factor": {"type": "number", "minimum": 0, "maximum": MAX_DELAY_FACTOR},
             "min_delay_ms": _DELAY, "max_delay_ms": _DELAY,
             "max_per_host": {"type": "integer", "minimum": 1, "maximum": MAX_PER_HOST}}, "kind"),
]}
CHANGE = _object({
    "version": {"type": "integer", "description": "the change's number in the job, 1, 2, ... in the order made"},
    "kind": {"enum": list(KINDS)}, "payload": {"type": "object", "description": "what it says, as stored"},
    "author": {"type": "string"}, "created": {"type": "string"},
    "state": {"enum": list(STATES), "description": "pending until the job's controller applies or refuses it"},
    "applied": {"type": ["string", "null"], "description": "when the controller applied or refused it"},
    "reason": {"type": ["string", "null"], "description": "why it was refused"},
    "summary": {"type": "string", "description": "what it does, in words"},
    "summary_phrase": {"type": ["object", "null"],
                       "description": "the summary's words as {code, values}, for a page in another language; "
                                      "null for a kind the server does not describe"},
}, "version", "kind", "payload", "author", "created", "state", "applied", "reason", "summary", "summary_phrase")


# The JSON body of each route that reads one, by endpoint.
REQUEST_BODIES: dict[str, dict[str, Any]] = {
    "api.create_domains": _object({"names": {**_STRING_LIST, "maxItems": 10_000}}, "names"),
    "api.patch_domain": _object({"edition": _EDITION, "comments": _TEXT, "crawler_traps": _STRING_LIST,
                                 "alias": {"type": ["string", "null"]}, "active": {"type": "boolean"}}, "edition"),
    "api.create_seedlist": _object({"name": _NAME, "seeds": _STRING_LIST, "comments": _TEXT, "edition": _EDITION},
                                   "name", "seeds"),
    "api.update_seedlist": _object({"edition": _EDITION, "seeds": _STRING_LIST, "comments": _TEXT}, "edition"),
    "api.create_configuration": _object({**_CONFIGURATION, "edition": _EDITION}, "name", "template", "seedlists"),
    "api.update_configuration": _object({**_CONFIGURATION, "edition": _EDITION, "default": {"type": "boolean"}},
                                        "edition"),
    "api.patch_domain_fields": _object(_EXTENDED_FIELDS, "edition", "values"),
    "api.patch_harvest_fields": _object(_EXTENDED_FIELDS, "edition", "values"),
    "api.create_harvest": _object({
        "type": {"enum": ["selective", "event", "snapshot"]}, "name": _NAME, "comments": _TEXT,
        "audience": {"type": ["string", "null"]}, "active": {"type": "boolean"}, "channel": {"type": "string"},
        "schedule": {"type": "string", "description": "selective and event harvests"},
        "configurations": {"type": "array", "items": _object({"domain": {"type": "string"},
                                                              "configuration": {"type": ["string", "null"]}},
                                                             "domain")},
        "seeds": {"type": ["array", "string"], "items": {"type": "string"}, "description": "event harvests"},
        "template": {"type": "string", "description": "event harvests"},
        "previous": {"type": "string", "description": "snapshot harvests: the step this one continues"},
        "max_objects": _LIMIT, "max_bytes": _LIMIT, "max_running_time": {"type": "integer", "minimum": 0},
        "crawl_attributes": {"oneOf": [
            {**_CRAWL_ATTRIBUTES, "description": "event harvests: every configuration its seeds make"},
            _SNAPSHOT_ATTRIBUTES]}},
        "type", "name"),
    "api.update_harvest": _object({
        "edition": _EDITION, "name": _NAME, "comments": _TEXT, "audience": {"type": ["string", "null"]},
        "channel": {"type": ["string", "null"], "description": "a channel of the harvest's kind; null or \"\": "
                                                              "the default channel"},
        "crawl_attributes": _SNAPSHOT_ATTRIBUTES,
        "schedule": {"type": "string"}, "crawlertraps": {"type": "string"},
        "configurations": {"type": "array", "items": _object({"domain": {"type": "string"},
                                                              "configuration": {"type": ["string", "null"]}},
                                                             "domain")},
        "max_objects": _LIMIT, "max_bytes": _LIMIT, "max_running_time": {"type": "integer", "minimum": 0}},
        "edition"),
    "api.add_harvest_seeds": _object({
        "edition": _EDITION, "seeds": {"type": ["array", "string"], "items": {"type": "string"}},
        "template": {"type": "string"}, "max_objects": _LIMIT, "max_bytes": _LIMIT,
        "crawl_attributes": _CRAWL_ATTRIBUTES}, "edition", "seeds", "template"),
    "api.remove_harvest_configuration": _object({"edition": _EDITION}, "edition"),
    "api.change_harvest_configuration": _object({"edition": _EDITION, "configuration": _NAME},
                                                "edition", "configuration"),
    "api.activate_harvest": _object({"edition": _EDITION}),
    "api.deactivate_harvest": _object({"edition": _EDITION}),
    "api.create_schedule": _object(_SCHEDULE, "name", "timeunit"),
    "api.update_schedule": _object({**_SCHEDULE, "edition": _EDITION}, "edition"),
    "api.create_template": _object({"name": _NAME, "cxml": {"type": "string"}, "description": _TEXT,
                                    "active": {"type": "boolean"}}, "name", "cxml"),
    "api.update_template": _object({"edition": _EDITION, "cxml": {"type": "string"}, "description": _TEXT,
                                    "active": {"type": "boolean"}}, "edition"),
    "api.update_user": _closed({"edition": _EDITION, "role": {"enum": [role.value for role in Role]},
                                "active": {"type": "boolean"}}, "edition"),
    "api.create_user": _closed({"name": {"type": "string", "minLength": 1,
                                         "maxLength": column_length(s.users.c.name)},
                                "role": {"enum": [role.value for role in Role]},
                                "password": {"type": "string", "minLength": MIN_PASSWORD_LENGTH},
                                "fullname": {"type": "string", "maxLength": column_length(s.users.c.fullname)}},
                               "name", "role", "password"),
    "api.create_token": _closed({"label": {"type": "string", "minLength": 1, "maxLength": MAX_TOKEN_LABEL_LENGTH}},
                                "label"),
    "api.reset_password": _closed({"edition": _EDITION, "password": {"type": "string", "minLength": 1}},
                                  "edition", "password"),
    "api.create_webhook": _object(_WEBHOOK, "name", "url", "events", "secret"),
    "api.update_webhook": _object({**_WEBHOOK, "edition": _EDITION}, "edition"),
    "api.control_job": CONTROL_BODY,
    "api.add_job_change": CHANGE_BODY,
}
# Bodies that may be left out (the edition of an activation is optional).
OPTIONAL_BODIES = frozenset({"api.activate_harvest", "api.deactivate_harvest"})
# Success statuses other than 200, by endpoint.
SUCCESS_STATUSES: dict[str, tuple[int, ...]] = {
    "api.create_domains": (200, 201), "api.create_seedlist": (201,), "api.create_configuration": (201,),
    "api.create_harvest": (201,), "api.add_harvest_seeds": (201,), "api.create_schedule": (201,),
    "api.create_template": (201,), "api.create_webhook": (201,), "api.create_user": (201,),
    "api.create_token": (201,),
    "api.restart": (201,),
    "api.control_job": (202,), "api.add_job_change": (202,),
    "api.request_harvest_run": (202,), "api.request_harvest_preview": (202,),
}
_COUNT = {"type": "integer", "minimum": 0}
QA_SCHEMA = _object({
    "job_id": _INT64, "harvest_id": _INT64, "harvest_num": {"type": "integer"},
    "report": _object({
        "seeds": {"type": "array", "items": _object({
            "seed": {"type": "string"}, "status": {"type": ["integer", "null"], "description": "its crawl.log "
                                                   "status; null when it is not in crawl.log"},
            "final_url": {"type": "string"}, "final_status": {"type": ["integer", "null"]},
            "captured": {"type": "boolean"}, "reason": {"type": ["string", "null"], "description": "why not"}})},
        "seeds_total": _COUNT, "seeds_not_captured": _COUNT,
        "missing": {"type": "array", "description": "by reason: out_of_scope, robots, budget, "
                    "destination_refused, http_error, network_error, never_reached", "items": {"type": "object"}},
        "missing_resources": _COUNT, "pages_with_missing_resources": _COUNT,
        "hosts": {"type": "array", "items": {"type": "object"}}, "hosts_total": _COUNT,
        "failing_hosts": {"type": "array", "items": {"type": "object"}},
    }, "seeds", "missing", "hosts", "failing_hosts"),
    "change_threshold": {"type": "integer", "description": "harvestsuite.webui.qaChangeThreshold, percent"},
    "domain_changes": {"type": "array", "items": _object({
        "domain": {"type": "string"}, "configuration": {"type": "string"}, "objects": _COUNT, "bytes": _COUNT,
        "previous_objects": {"type": ["integer", "null"], "description": "null: not in the previous run"},
        "previous_bytes": {"type": ["integer", "null"]},
        "objects_change": {"type": ["number", "null"], "description": "percent"},
        "bytes_change": {"type": ["number", "null"], "description": "percent"},
        "flagged": {"type": "boolean", "description": "objects or bytes moved by more than change_threshold "
                                                      "percent (the counts compared, not the rounded changes), "
                                                      "or it fell to nothing"},
        "objects_beyond": {"type": "boolean", "description": "objects moved by more than change_threshold percent"},
        "bytes_beyond": {"type": "boolean", "description": "bytes moved by more than change_threshold percent"},
        "fell_to_nothing": {"type": "boolean"}})},
}, "job_id", "report", "domain_changes", "change_threshold")
# A harvest's job-generation preview (scheduler/previews.py makes it, webui/api/harvests.py answers it).
PREVIEW = _object({
    "state": {"enum": ["none", "waiting", "made", "failed"],
              "description": "waiting: the scheduler makes it at its next tick"},
    "requested_at": {"type": ["string", "null"]}, "requested_by": {"type": ["string", "null"]},
    "computed_at": {"type": ["string", "null"]}, "error": {"type": ["string", "null"]},
    "preview": {"type": ["object", "null"], "properties": {
        "harvest": {"type": "string"}, "type": {"enum": ["selective", "snapshot"]},
        "run": {"type": "integer", "description": "the run it previews"}, "configurations": _COUNT,
        "expected_objects": _COUNT, "expected_bytes": _COUNT,
        "jobs": {"type": "array", "items": _object({
            "job": {"type": "integer"}, "template": {"type": "string"}, "crawl_attributes": _CRAWL_ATTRIBUTES,
            "configurations": _COUNT,
            "sample": {**_STRING_LIST, "description": "the first few configurations, as domain/configuration"},
            "max_objects_per_domain": _LIMIT, "max_bytes_per_domain": _LIMIT, "max_running_time": _COUNT,
            "expected_objects": _COUNT,
            "expected_bytes": {**_COUNT, "description": "expected objects times bytes per object of each "
                                                        "configuration's best history row, else "
                                                        "expectedAverageBytesPerObject"}})}}}},
    "state", "requested_at", "requested_by", "computed_at", "preview", "error")
# What a success answers other than a JSON object, by endpoint.
SUCCESS_CONTENT: dict[str, dict[str, Any]] = {
    "api.export_domains": {"text/csv": {"schema": {"type": "string"}}},
    "api.export_jobs": {"text/csv": {"schema": {"type": "string"}}},
    "api.export_harvest_statistics": {"text/csv": {"schema": {"type": "string"}}},
    "api.get_template": {"application/json": {"schema": {"type": "object"}},
                         "application/xml": {"schema": {"type": "string"}}},
    # each field with its meaning, and for those left null or [] the reason
    "api.job_live_view": {"application/json": {"schema": LIVE_SCHEMA}},
    "api.get_job_qa": {"application/json": {"schema": QA_SCHEMA}},
    "api.control_job": {"application/json": {"schema": CHANGE}},
    "api.add_job_change": {"application/json": {"schema": CHANGE}},
    "api.get_harvest_preview": {"application/json": {"schema": PREVIEW}},
    "api.request_harvest_preview": {"application/json": {"schema": PREVIEW}},
    "api.list_job_changes": {"application/json": {"schema": _object({
        "items": {"type": "array", "items": CHANGE},
        "next": {"type": ["string", "null"], "description": "the cursor of the next page: pass it as ?after=; null "
                                                            "on the last"},
        "previous_before": {"type": ["integer", "null"], "description": "the version the page before this one ends "
                                                                        "before: pass it as ?before=; null on the "
                                                                        "first"},
        "total": {"type": "integer", "minimum": 0, "description": "the job's changes, on every page"},
        "pending": {"type": "integer", "minimum": 0, "description": "how many of them are pending"},
    }, "items", "next", "previous_before", "total", "pending")}},
}

ERROR = _object({"error": _object({
    "code": {"enum": list(STATUS_OF_CODE)}, "message": {"type": "string"},
    "field": {"type": ["string", "null"], "description": "the input that is wrong, where there is one"},
    "id": {"type": "string", "description": "an internal error's id, under which the log has the details"},
}, "code", "message", "field")}, "error")
PAGE = _object({"items": {"type": "array", "items": {"type": "object"}}, "next": {"type": ["string", "null"]}},
               "items", "next")
_ERROR_DESCRIPTIONS = {400: "the input is wrong: error.field names it", 401: "not logged in",
                       403: "the user's role may not do this", 404: "no such thing",
                       405: "the path has no such method", 409: "changed meanwhile, or the state forbids it",
                       413: "the body is too large", 415: "the body is not JSON",
                       429: "a bound of the site's settings is reached; the message names it"}
# The answers some operations give beside the usual errors.
EXTRA_ERRORS: dict[str, tuple[int, ...]] = {"api.add_job_change": (429,)}


def _path_parameter(name: str, converter: str | None) -> dict[str, Any]:
    schema = {"type": "integer", "minimum": 0, "maximum": INT64_RANGE[1]} if converter == "int" else \
        {"type": "string", "minLength": 1}
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _operation(endpoint: str, view: Any, method: str, rule: Any) -> dict[str, Any]:
    converters = {name: converter for converter, name in _PARAMETER.findall(rule.rule)}
    parameters = [_path_parameter(name, converters.get(name) or None) for name in rule.arguments]
    parameters += [parameter.describe() for parameter in declared(view)]
    statuses = SUCCESS_STATUSES.get(endpoint, (200,))
    schema = answer_schema(view) or (PAGE if any(p.name == "limit" for p in declared(view)) else {"type": "object"})
    success_content = SUCCESS_CONTENT.get(endpoint) or {"application/json": {"schema": schema}}
    responses: dict[str, Any] = {str(status): {"description": "done", "content": success_content}
                                 for status in statuses}
    errors = [400, 401, 403, 404, 405]
    if method != "get":
        errors.append(409)
    if endpoint in REQUEST_BODIES:
        errors += [413, 415]
    errors += EXTRA_ERRORS.get(endpoint, ())
    for status in errors:
        responses[str(status)] = {"description": _ERROR_DESCRIPTIONS[status],
                                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    operation: dict[str, Any] = {
        "summary": _summary_of(view), "operationId": f"{endpoint}.{method}", "tags": [_tag_of(rule)],
        **_description_of(view),
        "parameters": parameters, "responses": responses, "security": [{"bearer": []}, {"session": []}],
        **_permission_of(view)}
    if endpoint in REQUEST_BODIES:
        operation["requestBody"] = {"required": endpoint not in OPTIONAL_BODIES,
                                    "content": {"application/json": {"schema": REQUEST_BODIES[endpoint]}}}
    return operation


def _summary_of(view: Any) -> str:
    """The view's docstring's first paragraph on one line, as plain text (without reST's ``code`` marks)."""
    first = inspect.cleandoc(view.__doc__ or "").partition("\n\n")[0]
    return " ".join(first.split()).replace("``", "")


def _description_of(view: Any) -> dict[str, Any]:
    """Who may call the route, and the view's docstring after its first paragraph (the summary), in Markdown
    (reST's ``code`` is Markdown's code too)."""
    parts = []
    permission = getattr(view, "permission", None)
    if permission is not None:
        roles = ", ".join(sorted(role.value for role in PERMISSIONS[permission]))
        parts.append(f"**Roles:** {roles} (the {permission} permission).")
    rest = inspect.cleandoc(view.__doc__ or "").partition("\n\n")[2].strip()
    if rest:
        parts.append(rest)
    return {"description": "\n\n".join(parts)} if parts else {}


# The groups of the API page, by a path's first segment after /api/v1, in the order of the web UI's sections;
# a segment not named here is a group of its own.
TAGS = {"": "API", "openapi.json": "API",
        "domains": "Domains", "aliases": "Domains", "tlds": "Domains", "unused": "Domains",
        "harvests": "Harvest definitions", "schedules": "Harvest definitions", "templates": "Harvest definitions",
        "channels": "Harvest definitions", "channel-mapping": "Harvest definitions", "traps": "Harvest definitions",
        "jobs": "Harvest status", "running-jobs": "Harvest status", "waiting-harvests": "Harvest status",
        "export": "Exports", "harvesters": "System", "users": "System"}


def _tag_of(rule: Any) -> str:
    """The group of a route on the API page (TAGS)."""
    segment = rule.rule[len(blueprint.url_prefix or ""):].strip("/").split("/")[0]
    return TAGS.get(segment, segment)


def _permission_of(view: Any) -> dict[str, Any]:
    """The route's permission of webui.auth.PERMISSIONS and the roles that have it (every logged-in user
    may read this description itself)."""
    permission = getattr(view, "permission", None)
    if permission is None:
        return {}
    return {"x-permission": permission, "x-roles": sorted(role.value for role in PERMISSIONS[permission])}


@blueprint.route("/openapi.json")
def openapi() -> Any:
    """This description: every route of the API with its parameters, request body and responses."""
    paths: dict[str, dict[str, Any]] = {}
    prefix = blueprint.url_prefix or ""
    for rule in current_app.url_map.iter_rules():
        # the API's routes: not the API page (webui/api/docs.py), a page of the UI under the same prefix
        if not rule.rule.startswith(prefix) or not rule.endpoint.startswith(f"{blueprint.name}."):
            continue
        view = current_app.view_functions[rule.endpoint]
        path = _PARAMETER.sub(r"{\2}", rule.rule[len(prefix):])
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            paths.setdefault(path, {})[method.lower()] = _operation(rule.endpoint, view, method.lower(), rule)
    return jsonify({
        "openapi": "3.1.0",
        "tags": [{"name": name} for name in dict.fromkeys(TAGS.values())],
        "info": {"title": "HarvestSuite API", "version": "1",
                 "description": f"Lists are pages of at most {MAX_LIMIT} items: {{\"items\", \"next\"}}."},
        "servers": [{"url": prefix}],
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"},
                                           "session": {"type": "apiKey", "in": "cookie", "name": "session"}},
                       "schemas": {"Error": ERROR}},
        "paths": paths,
    })
