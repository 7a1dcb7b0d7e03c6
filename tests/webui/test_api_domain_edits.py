"""PATCH of a domain's seed lists and configurations through the JSON API: what the domain pages can do,
under the domain's edition, audited, and refused with the reason when the input or the edition is wrong."""

from __future__ import annotations

from sqlalchemy import select

from harvestdef.db import schema as s


def domain_edition(api, name: str) -> int:
    return api("curator", "get", f"/api/v1/domains/{name}").get_json()["edition"]


def test_a_seed_list_is_replaced_under_the_domain_edition(api, webui_engine):
    assert api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk"]}).status_code in (200, 201)
    edition = domain_edition(api, "kb.dk")
    response = api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds",
                   json={"edition": edition, "seeds": ["http://www.kb.dk:8123/", "http://kb.dk/news"],
                         "comments": "the local test site"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == {"name": "defaultseeds", "comments": "the local test site",
                                   "seeds": ["http://www.kb.dk:8123/", "http://kb.dk/news"]}
    assert domain_edition(api, "kb.dk") == edition + 1
    # the same edition again is stale: the first change moved the domain on
    stale = api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds",
                json={"edition": edition, "seeds": ["http://kb.dk/"]})
    assert stale.status_code == 409
    bad = api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds",
              json={"edition": edition + 1, "seeds": "http://kb.dk/"})
    assert bad.status_code == 400 and "seeds" in bad.get_data(as_text=True)
    not_strings = api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds",
                      json={"edition": edition + 1, "seeds": [1, 2]})
    assert not_strings.status_code == 400 and "list of strings" in not_strings.get_json()["error"]["message"]
    assert api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/nosuch",
               json={"edition": edition + 1, "seeds": ["http://kb.dk/"]}).status_code == 404
    assert api("archivist", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds",
               json={"edition": edition + 1, "seeds": ["http://kb.dk/"]}).status_code == 403
    with webui_engine.connect() as conn:
        stored = conn.scalar(select(s.seedlists.c.seeds).where(s.seedlists.c.name == "defaultseeds"))
        audited = conn.scalar(select(s.audit_log.c.actor).where(s.audit_log.c.tablename == "seedlists")
                              .order_by(s.audit_log.c.audit_id.desc()).limit(1))
    assert stored == "http://www.kb.dk:8123/\nhttp://kb.dk/news"
    assert audited == "curator"


def test_a_configuration_is_changed_and_made_the_default(api):
    api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk"]})
    assert api("curator", "post", "/api/v1/domains/kb.dk/seedlists",
               json={"name": "news", "seeds": ["http://kb.dk/news"]}).status_code == 201
    assert api("curator", "post", "/api/v1/domains/kb.dk/configurations",
               json={"name": "deep", "template": "default_orderxml", "seedlists": ["news"]}).status_code == 201
    edition = domain_edition(api, "kb.dk")
    response = api("curator", "patch", "/api/v1/domains/kb.dk/configurations/deep",
                   json={"edition": edition, "max_objects": 700, "max_bytes": -1,
                         "seedlists": ["news", "defaultseeds"], "default": True})
    assert response.status_code == 200, response.get_json()
    changed = response.get_json()
    assert (changed["max_objects"], changed["max_bytes"], changed["default"]) == (700, -1, True)
    assert sorted(changed["seedlists"]) == ["defaultseeds", "news"]
    listed = {item["name"]: item["default"] for item in
              api("curator", "get", "/api/v1/domains/kb.dk/configurations").get_json()["items"]}
    assert listed == {"deep": True, "defaultconfig": False}
    fresh = domain_edition(api, "kb.dk")
    for payload, status in (({"edition": fresh, "max_objects": -7}, 400),
                            ({"edition": fresh, "seedlists": "news"}, 400),
                            ({"edition": fresh, "seedlists": [3]}, 400),
                            ({"edition": fresh, "template": "nosuch"}, 404),
                            ({"edition": fresh, "default": "yes"}, 400),
                            ({"max_objects": 5}, 400),
                            ({"edition": edition, "max_objects": 5}, 409)):
        response = api("curator", "patch", "/api/v1/domains/kb.dk/configurations/deep", json=payload)
        assert response.status_code == status, (payload, response.get_json())
    assert domain_edition(api, "kb.dk") == fresh  # nothing refused changed the domain
    assert api("curator", "patch", "/api/v1/domains/kb.dk/configurations/nosuch",
               json={"edition": fresh, "max_objects": 5}).status_code == 404
