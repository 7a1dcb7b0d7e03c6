"""One seed rule at every entry point of seeds and domain names, on SQLite and PostgreSQL.

One table of bad lines is fed to the seed-list page and API (create and update), event seeds (a new event
harvest and seeds added to a harvest, page, uploaded file and API), configuration edits choosing a seed
list stored before the rule, domain creation (one name, a list, a file; page and API) and the import
command. Each must refuse every bad line with its number, the line as given and the same reason in words,
and store nothing: the rows of every definition table are counted before and after.
"""

from __future__ import annotations

import html
import io
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import Engine, func, insert, select

from harvestdef.db import schema as s
from harvestdef.errors import shown
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from tests.webui.conftest import database_with_users

pytestmark = pytest.mark.database("users")

LONG = "http://kb.dk/" + "x" * 2100
# (line, the reason every entry point gives for it)
BAD_LINES = [
    ("this is not a url", "not a URL: it contains a space (write a space in a URL as %20)"),
    ("ftp://ftp.kb.dk/pub/", "not an http or https URL (its scheme is ftp)"),
    ("mailto:webmaster@kb.dk", "not an http or https URL (its scheme is mailto)"),
    ("http:///index.html", "not a URL: no host"),
    ("http://kb.dk/\x07bell", "contains the control character \\x07"),
    ("http://kb\u200b.dk/", "contains the control character \\u200b"),
    (LONG, f"is {len(LONG)} characters long; a URL has at most 2083"),
    ("http://kb.dk:99999/", "not a URL: its port '99999' is not a number from 1 to 65535"),
    ("http://exa_mple.kb.dk/", "the host 'exa_mple.kb.dk' contains '_', which a host name cannot hold "
                               "(letters, digits, hyphens and dots only)"),
    ("http://co.uk/", "the host 'co.uk' is a public suffix, not a domain that can be registered"),
    ("http://www", "the host 'www' has no top-level domain (a domain needs at least two labels)"),
]
# A seed list is of one domain: another domain's URL is refused there (and only there).
FOREIGN = ("http://example.org/page", "belongs to domain example.org, not kb.dk")
GOOD = "http://www.kb.dk/"
TABLES = ("domains", "seedlists", "configurations", "config_seedlists", "harvestdefinitions", "partialharvests",
          "harvest_configs", "audit_log")


def expected(bad_lines: list[tuple[str, str]], first_line: int = 2) -> list[tuple[int, str, str]]:
    return [(number, shown(line), reason) for number, (line, reason) in enumerate(bad_lines, start=first_line)]


def counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {table: conn.scalar(select(func.count()).select_from(s.metadata.tables[table])) or 0
                for table in TABLES}


def page_refusals(page: str) -> list[tuple[int, str, str]]:
    """The refused lines a page lists (definitions/refused_lines.html)."""
    rows = re.findall(r'<tr><td class="number">(\d+)</td><td><code>(.*?)</code></td>'
                      r'<td class="error-message">(.*?)</td></tr>', page, re.S)
    return [(int(number), html.unescape(text), html.unescape(reason)) for number, text, reason in rows]


def api_refusals(response: Any) -> list[tuple[int, str, str]]:
    assert response.status_code == 400, response.get_json()
    error = response.get_json()["error"]
    assert error["code"] == "invalid" and error["refused"] == len(error["lines"])
    return [(line["line"], line["text"], line["reason"]) for line in error["lines"]]


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    """The web UI's database on SQLite and on PostgreSQL, with kb.dk and a selective harvest."""
    for engine in database_with_users(database_url):
        with engine.begin() as conn:
            DomainRepository(conn).create("kb.dk")
            HarvestRepository(conn).create_selective("sel", "Once_a_day")
        yield engine


def form(client: Any, **fields: str) -> dict[str, str]:
    return {"csrf_token": client.csrf, **fields}


def edition_of(engine: Engine, harvest: str | None = None) -> int:
    with engine.connect() as conn:
        if harvest is not None:
            return HarvestRepository(conn).get(harvest).edition
        return DomainRepository(conn).get("kb.dk").edition


# Each entry point takes the lines and returns the refusals it answered, as (line, text, reason).
EntryPoint = Callable[[Any, Engine, list[str]], list[tuple[int, str, str]]]


def seedlist_page_create(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    client = env.login("curator")
    response = client.post("/definitions/domains/kb.dk/new-seedlist", data=form(
        client, edition=str(edition_of(engine)), name="news", seeds="\n".join(lines)))
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert html.escape(lines[1]) in page  # what was typed is still in the form
    return page_refusals(page)


def seedlist_page_update(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    client = env.login("curator")
    response = client.post("/definitions/domains/kb.dk/seedlists/defaultseeds", data=form(
        client, edition=str(edition_of(engine)), seeds="\n".join(lines)))
    assert response.status_code == 400
    return page_refusals(response.get_data(as_text=True))


def seedlist_api_create(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    response = env.api("curator", "post", "/api/v1/domains/kb.dk/seedlists", json={"name": "news", "seeds": lines})
    assert response.get_json()["error"]["field"] == "seeds"
    return api_refusals(response)


def seedlist_api_update(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    return api_refusals(env.api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds",
                                json={"edition": edition_of(engine), "seeds": lines}))


def event_page_new(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    client = env.login("curator")
    response = client.post("/definitions/harvests/new/event", data=form(
        client, name="ev", schedule="Once", template="default_orderxml", seeds="\n".join(lines)))
    assert response.status_code == 400
    return page_refusals(response.get_data(as_text=True))


def event_page_add(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    client = env.login("curator")
    response = client.post("/definitions/harvests/sel/seeds", data=form(
        client, edition=str(edition_of(engine, "sel")), template="default_orderxml", seeds="\n".join(lines)))
    assert response.status_code == 400
    return page_refusals(response.get_data(as_text=True))


def event_page_file(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    """NetarchiveSuite's event form takes the seeds as an uploaded file too."""
    client = env.login("curator")
    content = "".join(line + "\n" for line in lines).encode()
    both = client.post("/definitions/harvests/sel/seeds", content_type="multipart/form-data", data=form(
        client, edition=str(edition_of(engine, "sel")), template="default_orderxml", seeds=GOOD,
        seedsfile=(io.BytesIO(content), "seeds.txt")))
    assert both.status_code == 400 and "not both" in both.get_data(as_text=True)
    response = client.post("/definitions/harvests/sel/seeds", content_type="multipart/form-data", data=form(
        client, edition=str(edition_of(engine, "sel")), template="default_orderxml",
        seedsfile=(io.BytesIO(content), "seeds.txt")))
    assert response.status_code == 400
    return page_refusals(response.get_data(as_text=True))


def event_api_new(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    return api_refusals(env.api("curator", "post", "/api/v1/harvests", json={
        "type": "event", "name": "ev", "schedule": "Once", "template": "default_orderxml", "seeds": lines}))


def event_api_add(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    return api_refusals(env.api("curator", "post", "/api/v1/harvests/sel/seeds", json={
        "edition": edition_of(engine, "sel"), "template": "default_orderxml", "seeds": "\n".join(lines)}))


def store_legacy_seedlist(engine: Engine, lines: list[str]) -> None:
    """A seed list of kb.dk stored before the seed rule: written past the repositories, as an older version
    or a migration from NetarchiveSuite did."""
    with engine.begin() as conn:
        conn.execute(insert(s.seedlists).values(name="legacy", comments="", seeds="\n".join(lines),
                                                domain_id=DomainRepository(conn).get("kb.dk").domain_id))


def configuration_page(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    client = env.login("curator")
    response = client.post("/definitions/domains/kb.dk/new-configuration", data=form(
        client, edition=str(edition_of(engine)), name="deep", template="default_orderxml", seedlists="legacy"))
    assert response.status_code == 400
    return page_refusals(response.get_data(as_text=True))


def configuration_api(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    response = env.api("curator", "patch", "/api/v1/domains/kb.dk/configurations/defaultconfig", json={
        "edition": edition_of(engine), "seedlists": ["defaultseeds", "legacy"]})
    assert response.get_json()["error"]["field"] == "seedlists"
    return api_refusals(response)


def domains_page_one(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    """The single-name field takes one line: each bad line alone is line 1."""
    client = env.login("curator")
    found = []
    for number, line in enumerate(lines[1:], start=2):
        response = client.post("/definitions/domains/new", data=form(client, name=line))
        assert response.status_code == 400
        [(one, text, reason)] = page_refusals(response.get_data(as_text=True))
        assert one == 1
        found.append((number, text, reason))
    return found


def domains_page_list(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    client = env.login("curator")
    response = client.post("/definitions/domains/new", data=form(client, names="\n".join(lines)))
    assert response.status_code == 400
    return page_refusals(response.get_data(as_text=True))


def domains_page_file(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    client = env.login("curator")
    content = "".join(line + "\n" for line in lines).encode()
    response = client.post("/definitions/domains/new", content_type="multipart/form-data", data=form(
        client, file=(io.BytesIO(content), "names.txt")))
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert "file names.txt:" in page
    return page_refusals(page)


def domains_api(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    return api_refusals(env.api("curator", "post", "/api/v1/domains", json={"names": lines}))


def import_command(env: Any, engine: Engine, lines: list[str]) -> list[tuple[int, str, str]]:
    path = env.tmp_path / "names.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    script = shutil.which("harvestsuite") or str(Path(sys.executable).with_name("harvestsuite"))
    result = subprocess.run([script, "--set", f"harvestsuite.database.url={env.database_url}", "domains", "import",
                             str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1
    assert f"{path}: {len(lines) - 1} bad line(s), reported above; nothing was imported" in result.stderr
    found = []
    for output in result.stderr.splitlines():
        match = re.match(rf"{re.escape(str(path))}:(\d+): (.*)$", output)
        if match is not None:
            number, rest = int(match.group(1)), match.group(2)
            text = shown(lines[number - 1])
            assert rest.startswith(text + ": "), output
            found.append((number, text, rest[len(text) + 2:]))
    return found


SEED_LIST_ENTRY_POINTS = [seedlist_page_create, seedlist_page_update, seedlist_api_create, seedlist_api_update,
                          configuration_page, configuration_api]
OTHER_ENTRY_POINTS = [event_page_new, event_page_add, event_page_file, event_api_new, event_api_add, domains_page_one,
                      domains_page_list, domains_page_file, domains_api, import_command]


@pytest.fixture
def env(api: Any, login: Any, database_url: str, tmp_path: Path) -> SimpleNamespace:
    """What the entry points need: API calls, logged-in clients, the database URL (the import command)."""
    return SimpleNamespace(api=api, login=login, database_url=database_url, tmp_path=tmp_path)


@pytest.mark.parametrize("entry_point", SEED_LIST_ENTRY_POINTS + OTHER_ENTRY_POINTS,
                         ids=lambda entry_point: entry_point.__name__)
def test_every_entry_point_refuses_the_same_lines_with_the_same_words_and_stores_nothing(
        entry_point: EntryPoint, env: SimpleNamespace, webui_engine: Engine) -> None:
    bad_lines = BAD_LINES + ([FOREIGN] if entry_point in SEED_LIST_ENTRY_POINTS else [])
    lines = [GOOD, *(line for line, _ in bad_lines)]
    if entry_point in (configuration_page, configuration_api):
        store_legacy_seedlist(webui_engine, lines)  # the configuration edit chooses this list
    before = counts(webui_engine)
    refusals = entry_point(env, webui_engine, lines)
    assert refusals == expected(bad_lines)
    assert counts(webui_engine) == before
    with webui_engine.connect() as conn:
        assert not DomainRepository(conn).exists("example.org")
        assert {h.name for h in HarvestRepository(conn).all_harvests()} == {"sel"}


def test_without_the_bad_lines_the_same_entry_points_store_the_seeds_as_the_crawler_uses_them(
        env: SimpleNamespace, webui_engine: Engine) -> None:
    lines = ["www.kb.dk/nyheder", "HTTP://KB.DK:8080/a?b=1", "http://www.xn--kbenhavn-54a.dk/x"]
    response = env.api("curator", "post", "/api/v1/domains/kb.dk/seedlists",
                       json={"name": "news", "seeds": [*lines[:2], "# a comment", "http://kb.dk/"]})
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["seeds"] == ["http://www.kb.dk/nyheder", "http://kb.dk:8080/a?b=1", "http://kb.dk/"]
    response = env.api("curator", "post", "/api/v1/harvests/sel/seeds", json={
        "edition": edition_of(webui_engine, "sel"), "template": "default_orderxml",
        "seeds": "\n".join([*lines, "// a comment, as NetarchiveSuite's event form reads it", "http://www.dr.dk/"])})
    assert response.status_code == 201, response.get_json()
    assert {(added["domain"]) for added in response.get_json()["added"]} == {"kb.dk", "københavn.dk", "dr.dk"}
    with webui_engine.connect() as conn:
        seeds = {row.name: row.seeds for row in conn.execute(
            select(s.domains.c.name, s.seedlists.c.seeds).join(s.seedlists, s.seedlists.c.domain_id ==
                                                               s.domains.c.domain_id)
            .where(s.seedlists.c.name.like("sel_%")))}
    assert seeds == {"kb.dk": "http://www.kb.dk/nyheder\nhttp://kb.dk:8080/a?b=1",
                     "københavn.dk": "http://www.xn--kbenhavn-54a.dk/x", "dr.dk": "http://www.dr.dk/"}
    response = env.api("curator", "post", "/api/v1/domains",
                       json={"names": ["http://www.bbc.co.uk/news", "www.dr.dk", "xn--kbenhavn-54a.dk", "kb.dk"]})
    assert response.status_code == 201
    assert response.get_json() == {
        "created": ["bbc.co.uk"], "existing": ["dr.dk", "københavn.dk", "kb.dk"],
        "notes": ["http://www.bbc.co.uk/news was taken as bbc.co.uk", "www.dr.dk was taken as dr.dk"]}


# Seeds naming an address harvesting does not connect to (harvestdef/destinations.py): refused where seeds are
# saved, before any lookup, with the line and the reason, as every other bad line.
UNLESS = "which harvesting does not connect to unless harvestsuite.network.allowDestinations allows it"
DESTINATION_LINES = [
    ("http://169.254.169.254/latest/meta-data/", f"169.254.169.254 is a link-local address, {UNLESS}"),
    ("http://10.0.0.1/", f"10.0.0.1 is a private address, {UNLESS}"),
    ("http://[::1]:8080/", f"::1 is a loopback address, {UNLESS}"),
    ("http://localhost:5432/", f"localhost is a loopback name, {UNLESS}"),
]
DESTINATION_ENTRY_POINTS = [seedlist_page_create, seedlist_page_update, seedlist_api_create, seedlist_api_update,
                            event_page_new, event_page_add, event_page_file, event_api_new, event_api_add]


@pytest.mark.parametrize("entry_point", DESTINATION_ENTRY_POINTS, ids=lambda entry_point: entry_point.__name__)
def test_every_seed_entry_point_refuses_internal_destinations_naming_the_line(
        entry_point: EntryPoint, env: SimpleNamespace, webui_engine: Engine) -> None:
    lines = [GOOD, *(line for line, _ in DESTINATION_LINES)]
    before = counts(webui_engine)
    assert entry_point(env, webui_engine, lines) == expected(DESTINATION_LINES)
    assert counts(webui_engine) == before
