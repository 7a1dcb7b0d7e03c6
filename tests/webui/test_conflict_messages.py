"""Conflicts said for people, on SQLite and on PostgreSQL: a name taken is answered with which name is
taken where ("a seed list named news already exists on domain kb.dk"), never with the database's text, and
a stale edition names the object by its name and says who made the newer edition: "somebody else" only
when it was somebody else, and "you, in another tab or request" when it was the same user."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, UniqueConstraint

from harvestdef.db import schema as s
from harvestdef.db.uniqueness import UNIQUE_KEYS
from harvestdef.repositories.domains import DomainRepository
from tests.webui.conftest import database_with_users

pytestmark = pytest.mark.database("users")

CXML = '<?xml version="1.0"?>\n<beans>\n  <bean id="x"/>\n</beans>\n'
DATABASE_WORDS = ("UNIQUE", "constraint", "duplicate key", "domain_id", "_key")


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    """The web UI's database with the domain kb.dk."""
    for engine in database_with_users(database_url):
        with engine.begin() as conn:
            DomainRepository(conn).create("kb.dk")
        yield engine


def conflict(response) -> dict:
    error = response.get_json()["error"]
    assert response.status_code == 409 and error["code"] == "conflict", error
    assert not any(word in error["message"] for word in DATABASE_WORDS), error["message"]
    return error


def test_a_name_taken_is_said_with_its_name_and_where(api):
    seeds = {"name": "news", "seeds": ["http://kb.dk/news"]}
    assert api("curator", "post", "/api/v1/domains/kb.dk/seedlists", json=seeds).status_code == 201
    error = conflict(api("curator", "post", "/api/v1/domains/kb.dk/seedlists", json=seeds))
    assert error["message"] == "a seed list named news already exists on domain kb.dk"
    assert error["field"] == "name"

    configuration = {"name": "defaultconfig", "template": "default_orderxml", "seedlists": ["news"]}
    error = conflict(api("curator", "post", "/api/v1/domains/kb.dk/configurations", json=configuration))
    assert error["message"] == "a configuration named defaultconfig already exists on domain kb.dk"

    error = conflict(api("curator", "post", "/api/v1/schedules", json={"name": "Once_a_day", "timeunit": "DAILY"}))
    assert error["message"] == "a schedule named Once_a_day already exists" and error["field"] == "name"

    error = conflict(api("admin", "post", "/api/v1/templates", json={"name": "default_orderxml", "cxml": CXML}))
    assert error["message"] == "a crawl template named default_orderxml already exists"

    for name in ("culture", "news"):
        made = api("curator", "post", "/api/v1/harvests", json={"type": "selective", "name": name,
                                                                 "schedule": "Once_a_day"})
        assert made.status_code == 201, made.get_json()
    again = api("curator", "post", "/api/v1/harvests", json={"type": "selective", "name": "news",
                                                              "schedule": "Once_a_day"})
    assert conflict(again)["message"] == "a harvest definition named news already exists"
    edition = api("curator", "get", "/api/v1/harvests/culture").get_json()["edition"]
    renamed = api("curator", "patch", "/api/v1/harvests/culture", json={"edition": edition, "name": "news"})
    assert conflict(renamed)["message"] == "a harvest definition named news already exists"


def test_the_seed_list_page_says_the_name_is_taken(login):
    curator = login("curator")
    form = {"csrf_token": curator.csrf, "edition": "1", "name": "defaultseeds", "seeds": "http://kb.dk/"}
    page = curator.post("/definitions/domains/kb.dk/new-seedlist", data=form, follow_redirects=True)
    text = page.get_data(as_text=True)
    assert "a seed list named defaultseeds already exists on domain kb.dk" in text
    assert "UNIQUE" not in text and "duplicate key" not in text


def test_every_unique_key_of_the_definitions_has_a_sentence():
    written = {"domains", "configurations", "seedlists", "passwords", "ordertemplates", "harvestchannel",
               "schedules", "harvestdefinitions", "global_crawler_trap_lists", "users", "webhooks",
               "harvest_configs", "harvest_run_requests", "harvest_previews"}
    said = {(key.table, frozenset(key.columns)) for key in UNIQUE_KEYS}
    for table in s.metadata.sorted_tables:
        if table.name not in written:
            continue
        keys = [frozenset(c.name for c in constraint.columns) for constraint in table.constraints
                if isinstance(constraint, UniqueConstraint)]
        keys += [frozenset([column.name]) for column in table.columns if column.unique]
        primary = list(table.primary_key.columns)
        if not (len(primary) == 1 and primary[0].autoincrement is True):  # an id the database draws is not taken
            keys.append(frozenset(column.name for column in primary))
        for columns in keys:
            assert (table.name, columns) in said, (table.name, sorted(columns))


def test_a_stale_edition_names_the_object_and_who_changed_it(api):
    domain = api("curator", "get", "/api/v1/domains/kb.dk").get_json()
    assert api("admin", "patch", "/api/v1/domains/kb.dk", json={"edition": domain["edition"],
                                                                   "comments": "admin's"}).status_code == 200
    error = conflict(api("curator", "patch", "/api/v1/domains/kb.dk", json={"edition": domain["edition"],
                                                                             "comments": "curator's"}))
    assert error["message"].startswith("domain kb.dk was changed by somebody else (admin at ")
    assert error["message"].endswith(f"you edited edition {domain['edition']}, it is now at edition "
                                     f"{domain['edition'] + 1}; reload and apply your change again")

    # a seed list's change moves its domain on: the domain is named, not its id
    now = domain["edition"] + 1
    assert api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds",
               json={"edition": now, "seeds": ["http://kb.dk/a"]}).status_code == 200
    error = conflict(api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds",
                         json={"edition": now, "seeds": ["http://kb.dk/b"]}))
    assert error["message"].startswith("domain kb.dk was changed by you (curator) in another tab or request at ")
    assert ", since this page was loaded: you edited edition" in error["message"]
    assert "somebody else" not in error["message"]
