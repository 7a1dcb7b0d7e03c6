"""/api/v1/openapi.json describes every route's query parameters from the declarations the routes read
them through (webui/api/parameters.py): a route cannot read one it does not describe."""

from __future__ import annotations

import ast
from pathlib import Path

from flask import Flask

from webui.api.parameters import QueryParameter, UndeclaredQueryParameter, query, takes

API_DIR = Path(__file__).resolve().parents[2] / "webui" / "api"


def describe(app: Flask, api, path: str, method: str = "get") -> dict:
    document = api("archivist", "get", "/api/v1/openapi.json").get_json()
    return document["paths"][path][method]


def test_query_parameters_are_described_with_name_type_required_and_description(app, api):
    jobs = {p["name"]: p for p in describe(app, api, "/jobs")["parameters"] if p["in"] == "query"}
    assert list(jobs) == ["harvest", "run", "status", "from_id", "to_id", "since", "until", "domain", "limit", "after"]
    assert jobs["from_id"]["schema"] == {"type": "integer"} and jobs["from_id"]["required"] is False
    assert "FAILED" in jobs["status"]["description"]
    domains = {p["name"]: p for p in describe(app, api, "/domains")["parameters"] if p["in"] == "query"}
    assert domains["field"]["schema"] == {"type": "string", "enum": ["name", "crawlertraps", "comments"]}
    history = describe(app, api, "/domains/{name}/history")["parameters"]
    assert [(p["name"], p["in"], p["required"]) for p in history] == [
        ("name", "path", True), ("limit", "query", False), ("after", "query", False)]
    assert all(p["description"] for p in history if p["in"] == "query")
    assert not [p for p in describe(app, api, "/domains", "post")["parameters"] if p["in"] == "query"]


def test_every_described_query_parameter_is_one_the_route_reads(app, api):
    """Each GET route called with each parameter it describes set to a bad value answers 4xx naming it
    (or, for free text, 200/404): the description is of parameters the route really reads."""
    document = api("admin", "get", "/api/v1/openapi.json").get_json()
    described = {(path, p["name"]) for path, methods in document["paths"].items()
                 for p in methods.get("get", {}).get("parameters", []) if p["in"] == "query"}
    assert ("/jobs", "status") in described and ("/tlds", "after") in described
    for path, name in sorted(described):
        if "{" in path:
            continue
        response = api("admin", "get", f"/api/v1{path}?{name}=%21not-valid%21")
        assert response.status_code in (200, 400, 404), (path, name, response.status_code)
        if response.status_code == 400:
            assert response.get_json()["error"]["field"] == name, (path, name)


def test_reading_an_undeclared_query_parameter_is_refused(app, tokens, caplog):
    """A programming error, never the client's: a 500 with an error id, the reason only in the log."""
    @takes(QueryParameter("shown", "string", "a declared one"))
    def view() -> str:
        return (query("shown") or "") + (query("secret") or "")

    app.add_url_rule("/api/v1/_undeclared", "undeclared", view)
    response = app.test_client().get("/api/v1/_undeclared?shown=1&secret=1",
                                     headers={"Authorization": f"Bearer {tokens['archivist']}"})
    assert response.status_code == 500
    error = response.get_json()["error"]
    assert error["code"] == "internal" and "secret" not in error["message"] and error["id"] in error["message"]
    logged = [r for r in caplog.records if error["id"] in r.getMessage()]
    assert logged and logged[0].exc_info[0] is UndeclaredQueryParameter and "'secret'" in logged[0].getMessage()


def test_the_api_modules_read_query_parameters_only_through_their_declarations():
    offenders = []
    for module in sorted(API_DIR.glob("*.py")):
        if module.name == "parameters.py":
            continue
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "args" and isinstance(node.value, ast.Name) \
                    and node.value.id == "request":
                offenders.append(f"{module.name}:{node.lineno}")
    assert offenders == []


def test_every_route_that_reads_a_body_describes_it_and_every_operation_its_answers(app, api):
    """A view that reads a JSON body (``body()``, ``request.get_json``) has a requestBody in the description,
    so the fuzzing of tests/webui/test_api_fuzz.py sends it one; every operation lists its success status
    and the error object of its 4xx, and no 5xx."""
    from webui.api.openapi import REQUEST_BODIES

    document = api("admin", "get", "/api/v1/openapi.json").get_json()
    operations = {op["operationId"].rsplit(".", 1)[0]: op for methods in document["paths"].values()
                  for op in methods.values()}
    assert set(REQUEST_BODIES) <= set(operations)
    for module in sorted(API_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef) or f"api.{node.name}" not in operations:
                continue
            reads = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(node)
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)}
            called = {f"api.{name}" for name in reads} & {"api._patch_body", "api._set_active"}
            if {"body", "get_json"} & reads or called:
                assert "requestBody" in operations[f"api.{node.name}"], node.name
    for endpoint, operation in operations.items():
        statuses = set(operation["responses"])
        assert statuses & {"200", "201", "202"} and {"400", "401", "403", "404"} <= statuses, endpoint
        assert not [status for status in statuses if status.startswith("5")], endpoint
    assert document["components"]["schemas"]["Error"]["required"] == ["error"]
