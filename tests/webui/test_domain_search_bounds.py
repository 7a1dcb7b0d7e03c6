"""The domain search's * patterns (SQL LIKE) are bounded in length and wildcards: the API, the export and
the Find domains page answer 400 naming ``q``; a run of * counts as one."""

from __future__ import annotations

from harvestdef.repositories.domains import DomainRepository


def test_a_search_too_long_or_with_too_many_wildcards_is_refused_naming_q(api, login, webui_engine):
    with webui_engine.begin() as conn:
        for name in ("kulturarv.dk", "kb.dk"):
            DomainRepository(conn).create(name)
    found = api("archivist", "get", "/api/v1/domains?q=*****kultur***")
    assert found.status_code == 200 and [d["name"] for d in found.get_json()["items"]] == ["kulturarv.dk"]
    for query, reason in (("a" * 257, "257 characters long (at most 256)"),
                          ("*a" * 9, "9 wildcards * (at most 8)")):
        for path in (f"/api/v1/domains?q={query}", f"/api/v1/domains?field=comments&q={query}",
                     f"/api/v1/export/domains.csv?q={query}"):
            refused = api("archivist", "get", path)
            assert refused.status_code == 400, path
            assert refused.get_json()["error"]["field"] == "q" and reason in refused.get_json()["error"]["message"]
        page = login("archivist").get(f"/definitions/domains?q={query}")
        assert page.status_code == 400 and reason in page.get_data(as_text=True)
