"""Every form of the web UI in Debian's chromium gives back what was typed when it refuses.

Each case fills in one form as a person would, with exactly one field wrong, and sends it past the
browser's own checks (``noValidate``: the server is what refuses here). The page that comes back holds in
every other field what was typed, and the refusal stands right beside the wrong field, with its summary
at the top. Then the wrong field alone is mended and the form sent again: what is saved (read back through
the API) holds every value typed, so nothing was silently reset to its default on the way. One web UI and
one browser serve the whole module; each case uses names of its own.
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from harvestdef.db.engine import open_engine
from harvestdef.queues import open_transport
from harvestdef.settings import QueueSettings
from tests.webui.browser import ServedWebui, log_in, screenshot
from tests.webui.conftest import PASSWORD
from tests.webui.test_harvests import make_domains
from tests.webui.test_live_job import start_crawl

pytestmark = pytest.mark.timeout(300)


@dataclass(frozen=True)
class Field:
    """A form field by its name; ``kind`` says how a person sets it: text (typed), select, many (a multiple
    select or check boxes of one name: the values ticked), radio (the button of ``value``), check (a box
    ticked). ``kept`` false: the field is left empty when the form comes back (a password)."""

    name: str
    value: Any
    kind: str = "text"
    kept: bool = True


@dataclass(frozen=True)
class Case:
    """One form: the page it is on, the form (a CSS selector), the fields typed right, the one typed wrong
    (``bad``, typed as ``wrong``, then mended to ``good``), words of its refusal, and a check of what was
    saved. ``bad_kept`` false: the wrong field comes back empty (a password)."""

    path: str
    form: str
    fields: tuple[Field, ...]
    bad: str
    wrong: str
    good: str
    refusal: str
    saved: Callable[[Any], None]
    bad_kind: str = "text"
    bad_kept: bool = True


class Served:
    """The web UI of the module, with an API caller of the admin's token and the running job's id."""

    def __init__(self, webui: ServedWebui, token: str, job_id: int) -> None:
        self.webui = webui
        self.token = token
        self.job_id = job_id

    def get(self, path: str) -> Any:
        request = urllib.request.Request(f"{self.webui.url}/api/v1{path}",
                                         headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(f"{self.webui.url}/api/v1{path}", data=json.dumps(body).encode(),
                                         method="POST", headers={"Authorization": f"Bearer {self.token}",
                                                                 "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("forms")
    with ServedWebui(directory, users=("admin", "curator")) as webui:
        engine = open_engine(f"sqlite:///{directory / 'harvest.db'}")
        transport = open_transport(QueueSettings(url=f"sqlite:///{directory / 'queue.db'}", environmentName="UNIT"))
        try:
            make_domains(engine, "kb.dk", "kunst.dk", "kbshop.dk")
            crawl = start_crawl(engine, transport)
            token = webui.harvestsuite("users", "token", "admin").strip().splitlines()[-1].split()[-1]
            here = Served(webui, token, crawl.job_id)
            here.post("/harvests", {"type": "selective", "name": "edited", "schedule": "Once_a_day",
                                    "configurations": [{"domain": "kb.dk"}]})
            yield here
        finally:
            transport.close()
            engine.dispose()


@pytest.fixture(scope="module")
def admin_page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=served.webui.url)
    context.set_default_timeout(15_000)
    page = context.new_page()
    log_in(page, served.webui.url, "admin")
    yield page
    context.close()


# ------------------------------------------------------------------ what each form saved
def schedule_saved(served: Served) -> None:
    schedule = served.get("/schedules/nightly")
    assert {key: schedule[key] for key in ("timeunit", "numtimeunits", "anytime", "onhour", "onminute",
                                           "startdate", "enddate", "maxrepeats", "comments")} == {
        "timeunit": "DAILY", "numtimeunits": 1, "anytime": False, "onhour": 2, "onminute": 0,
        "startdate": "2026-12-01T00:00:00Z", "enddate": None, "maxrepeats": 10, "comments": "at two at night"}


def schedule_edit_saved(served: Served) -> None:
    schedule = served.get("/schedules/Once_a_week")
    assert {key: schedule[key] for key in ("timeunit", "numtimeunits", "anytime", "ondayofweek", "onhour",
                                           "onminute", "startdate", "enddate", "maxrepeats")} == {
        "timeunit": "WEEKLY", "numtimeunits": 2, "anytime": False, "ondayofweek": 2, "onhour": 3, "onminute": 15,
        "startdate": None, "enddate": "2027-01-01T00:00:00Z", "maxrepeats": None}


def selective_saved(served: Served) -> None:
    harvest = served.get("/harvests/culture")
    assert (harvest["comments"], harvest["audience"], harvest["schedule"], harvest["active"]) == (
        "museums", "researchers", "Once_a_week", True)
    assert [entry["domain"] for entry in harvest["configurations"]] == ["kb.dk", "kunst.dk"]


def event_saved(served: Served) -> None:
    harvest = served.get("/harvests/flood")
    assert (harvest["comments"], harvest["schedule"], harvest["event"]) == ("the flood", "Once_a_month", True)
    [entry] = harvest["configurations"]
    configuration = next(c for c in served.get(f"/domains/{entry['domain']}/configurations")["items"]
                         if c["name"] == entry["configuration"])
    assert (configuration["max_objects"], configuration["max_bytes"]) == (500, 2000000)
    assert configuration["crawl_attributes"]["max_hops"] == 3


def snapshot_saved(served: Served) -> None:
    harvest = served.get("/harvests/snap")
    assert (harvest["comments"], harvest["max_objects"], harvest["max_bytes"], harvest["max_running_time"]) == (
        "the whole web", 100, 1000000, 3600)
    assert harvest["crawl_attributes"]["max_hops"] == 5


def edit_saved(served: Served) -> None:
    harvest = served.get("/harvests/edited")
    assert (harvest["comments"], harvest["audience"], harvest["schedule"], harvest["crawlertraps"]) == (
        "changed", "public", "Once_a_month", [".*/calendar/.*"])
    assert [entry["domain"] for entry in harvest["configurations"]] == ["kb.dk", "kunst.dk"]


def domains_saved(served: Served) -> None:
    assert served.get("/domains/arkiv.dk")["name"] == "arkiv.dk"
    assert served.get("/domains/museum.dk")["name"] == "museum.dk"


def domain_saved(served: Served) -> None:
    domain = served.get("/domains/kunst.dk")
    assert (domain["comments"], domain["crawler_traps"], domain["alias"]) == ("the art site", [".*/print/.*"], None)


def alias_saved(served: Served) -> None:
    domain = served.get("/domains/kbshop.dk")
    assert (domain["comments"], domain["crawler_traps"], domain["alias"]) == ("the library's shop", [], "kb.dk")


def configuration_saved(served: Served) -> None:
    deep = next(c for c in served.get("/domains/kb.dk/configurations")["items"] if c["name"] == "deep")
    assert (deep["comments"], deep["template"], deep["max_objects"], deep["max_bytes"], deep["seedlists"]) == (
        "deeper", "default_orderxml", 300, 5000, ["defaultseeds"])
    assert deep["crawl_attributes"] == {"max_hops": 7, "honor_robots_dot_txt": False, "extract_javascript": False}


def seedlist_saved(served: Served) -> None:
    news = next(s for s in served.get("/domains/kb.dk/seedlists")["items"] if s["name"] == "news")
    assert (news["comments"], news["seeds"]) == ("front pages", ["http://www.kb.dk/news"])


def template_saved(served: Served) -> None:
    template = served.get("/templates/copied")
    assert template["description"] == "a copy"


def traps_saved(served: Served) -> None:
    traps = served.get("/traps/calendars")
    assert (traps["description"], traps["active"], traps["expressions"]) == ("endless", True, [".*/calendar/.*"])


def webhook_saved(served: Served) -> None:
    [hook] = [hook for hook in served.get("/webhooks")["items"] if hook["name"] == "alerts"]
    assert (hook["url"], sorted(hook["events"]), hook["active"]) == (
        "https://receiver.example.org/hook", ["controller_lost", "job_failed"], False)


def password_saved(served: Served) -> None:
    """The curator logs in with the password the mended form set, and no longer with the old one."""
    def logs_in(password: str) -> bool:
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with opener.open(f"{served.webui.url}/login", timeout=10) as response:
            token = re.search(r'name="csrf_token" value="([^"]+)"', response.read().decode()).group(1)
        form = urllib.parse.urlencode({"name": "curator", "password": password, "csrf_token": token}).encode()
        try:
            with opener.open(f"{served.webui.url}/login", data=form, timeout=10) as response:
                return not response.url.endswith("/login")
        except urllib.error.HTTPError as refused:
            assert refused.code == 401, refused
            return False
    assert logs_in("a-long-enough-password") and not logs_in(PASSWORD)


def user_saved(served: Served) -> None:
    """The user is added, active, with the role and the full name typed before the refusal."""
    [user] = [user for user in served.get("/users")["items"] if user["name"] == "ida"]
    assert (user["role"], user["fullname"], user["active"]) == ("archivist", "Ida Jensen", True)


def budget_saved(served: Served) -> None:
    [change] = served.get(f"/jobs/{served.job_id}/changes")["items"]
    assert change["kind"] == "budget"
    assert change["payload"] == {"domain": "a.dk", "max_objects": 500, "max_bytes": 1000}


DEFAULT_CXML = "default_orderxml"  # the template whose XML the upload case sends, read through the API
CASES = {
    "schedule": Case(
        "/definitions/schedules", "form[action$='/definitions/schedules']",
        (Field("name", "nightly"), Field("comments", "at two at night"), Field("numtimeunits", "1"),
         Field("timeunit", "DAILY", "select"), Field("when", "at", "radio"), Field("attime", "02:00"),
         Field("begin", "at", "radio"), Field("end", "repeats", "radio"), Field("maxrepeats", "10")),
        "startdate", "", "2026-12-01T00:00", "give a begin time", schedule_saved),
    "schedule edit": Case(
        "/definitions/schedules/Once_a_week", "form[action$='/definitions/schedules/Once_a_week']",
        (Field("numtimeunits", "2"), Field("timeunit", "WEEKLY", "select"), Field("when", "at", "radio"),
         Field("attime", "03:15"), Field("ondayofweek", "2", "select"), Field("begin", "asap", "radio"),
         Field("end", "until", "radio")),
        "enddate", "", "2027-01-01T00:00", "give an end time", schedule_edit_saved),
    "selective harvest": Case(
        "/definitions/harvests/new/selective", "form[action$='/harvests/new/selective']",
        (Field("name", "culture"), Field("comments", "museums"), Field("schedule", "Once_a_week", "select"),
         Field("audience", "researchers"), Field("active", "1", "check")),
        "configurations", "kb.dk\nnosuch.dk", "kb.dk\nkunst.dk", "1 line refused", selective_saved),
    "event harvest": Case(
        "/definitions/harvests/new/event", "form[action$='/harvests/new/event']",
        (Field("name", "flood"), Field("comments", "the flood"), Field("schedule", "Once_a_month", "select"),
         Field("seeds", "http://www.kb.dk/flood"), Field("template", "default_orderxml", "select"),
         Field("max_bytes", "2000000"), Field("max_hops", "3")),
        "max_objects", "-5", "500", "must be -1 (unlimited) or at least 0", event_saved),
    "snapshot harvest": Case(
        "/definitions/harvests/new/snapshot", "form[action$='/harvests/new/snapshot']",
        (Field("name", "snap"), Field("comments", "the whole web"), Field("max_objects", "100"),
         Field("max_running_time", "3600"), Field("max_hops", "5")),
        "max_bytes", "-5", "1000000", "must be -1 (unlimited) or at least 0", snapshot_saved),
    "harvest edit": Case(
        "/definitions/harvests/edited", "form[action$='/definitions/harvests/edited']",
        (Field("comments", "changed"), Field("audience", "public"), Field("schedule", "Once_a_month", "select"),
         Field("crawlertraps", ".*/calendar/.*")),
        "configurations", "nosuch.dk", "kunst.dk", "1 line refused", edit_saved),
    "new domains": Case(
        "/definitions/domains/new", "form[action$='/definitions/domains/new']", (),
        "names", "arkiv.dk\nnot a domain!", "arkiv.dk\nmuseum.dk", "1 line refused", domains_saved),
    "domain edit": Case(
        "/definitions/domains/kunst.dk", "form[action$='/definitions/domains/kunst.dk']",
        (Field("comments", "the art site"), Field("alias", "")),
        "crawlertraps", "(unclosed", ".*/print/.*", "the group is never closed", domain_saved),
    "domain alias": Case(
        "/definitions/domains/kbshop.dk", "form[action$='/definitions/domains/kbshop.dk']",
        (Field("comments", "the library's shop"), Field("crawlertraps", "")),
        "alias", "nosuch.dk", "kb.dk", "no domain 'nosuch.dk'", alias_saved),
    "configuration": Case(
        "/definitions/domains/kb.dk/new-configuration", "form[action$='/new-configuration']",
        (Field("name", "deep"), Field("comments", "deeper"), Field("template", "default_orderxml", "select"),
         Field("max_bytes", "5000"), Field("seedlists", ["defaultseeds"], "many"), Field("max_hops", "7"),
         Field("honor_robots_dot_txt", "ignore", "select"), Field("extract_javascript", "false", "select")),
        "max_objects", "lots", "300", "must be a whole number", configuration_saved),
    "seed list": Case(
        "/definitions/domains/kb.dk/new-seedlist", "form[action$='/new-seedlist']",
        (Field("name", "news"), Field("comments", "front pages")),
        "seeds", "ftp://kb.dk/x", "http://www.kb.dk/news", "1 line refused", seedlist_saved),
    "crawl template": Case(
        "/definitions/templates", "form[action$='/definitions/templates']",
        (Field("name", "copied"), Field("description", "a copy")),
        "cxml", "<beans><unclosed></beans>", DEFAULT_CXML, "is not well-formed XML", template_saved),
    "crawler traps": Case(
        "/definitions/traps", "form[action$='/definitions/traps']",
        (Field("name", "calendars"), Field("description", "endless"), Field("active", "1", "check")),
        "expressions", "(unclosed", ".*/calendar/.*", "the group is never closed", traps_saved),
    "webhook": Case(
        "/system/webhooks", "form[action$='/system/webhooks']",
        (Field("name", "alerts"), Field("events", ["job_failed", "controller_lost"], "many"),
         Field("secret", "a-secret-of-twenty-four"), Field("active", "", "check")),
        "url", "ftp://receiver.example.org/hook", "https://receiver.example.org/hook",
        "must start with http:// or https://", webhook_saved),
    "user's password": Case(
        "/system/users", "tr[data-user='curator'] form[action$='/password']",
        (Field("new_password", "a-long-enough-password", kept=False),),
        "repeated_password", "a-long-enough-passw0rd", "a-long-enough-password", "its repetition differ",
        password_saved, bad_kept=False),
    "new user": Case(
        "/system/users", "#add-user form",
        (Field("name", "ida"), Field("fullname", "Ida Jensen"), Field("role", "archivist", "select"),
         Field("password", "a-long-enough-password", kept=False)),
        "repeated_password", "a-long-enough-passw0rd", "a-long-enough-password", "its repetition differ",
        user_saved, bad_kept=False),
    "live change": Case(
        "/status/jobs/{job}", "form[data-form='budget']",
        (Field("domain", "a.dk", "select"), Field("max_bytes", "1000")),
        "max_objects", "many", "500", "must be a whole number", budget_saved),
}


def _set(form: Any, name: str, kind: str, value: Any) -> None:
    if kind == "radio":
        form.locator(f'[name="{name}"][value="{value}"]').check()
    elif kind == "check":
        box = form.locator(f'[name="{name}"]')
        box.check() if value else box.uncheck()
    elif kind == "select":
        form.locator(f'[name="{name}"]').select_option(value)
    elif kind == "many":
        boxes = form.locator(f'input[name="{name}"]')
        if boxes.count():
            for index in range(boxes.count()):
                box = boxes.nth(index)
                box.check() if box.get_attribute("value") in value else box.uncheck()
        else:
            form.locator(f'[name="{name}"]').select_option(value)
    else:
        form.locator(f'[name="{name}"]').fill(value)


def _value(form: Any, name: str, kind: str, value: Any) -> Any:
    """What the field holds now, in the terms it was set in."""
    if kind == "radio":
        return value if form.locator(f'[name="{name}"][value="{value}"]').is_checked() else None
    if kind == "check":
        return form.locator(f'[name="{name}"]').is_checked()
    if kind == "many":
        return sorted(form.locator(f'[name="{name}"]').evaluate_all(
            "nodes => nodes.flatMap(n => n.tagName === 'SELECT' ? [...n.selectedOptions].map(o => o.value)"
            " : (n.checked ? [n.value] : []))"))
    return form.locator(f'[name="{name}"]').input_value()


def _expected(item: Field) -> Any:
    if not item.kept:
        return ""
    if item.kind == "check":
        return bool(item.value)
    if item.kind == "many":
        return sorted(item.value)
    return item.value


def _send(page: Any, form: Any) -> Any:
    """Submit ``form`` past the browser's own checks; the answer's status."""
    form.evaluate("f => f.noValidate = true")
    with page.expect_navigation() as navigation:
        form.locator("button[type=submit]").first.click()
    return navigation.value.status


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_refused_form_keeps_what_was_typed_and_says_why_beside_the_field(admin_page, served, case, tmp_path):
    page = admin_page
    page.goto(case.path.format(job=served.job_id))
    good = case.good
    if good == DEFAULT_CXML:
        good = served.get(f"/templates/{DEFAULT_CXML}")["cxml"]
    form = page.locator(case.form)
    for item in case.fields:
        _set(form, item.name, item.kind, item.value)
    _set(form, case.bad, case.bad_kind, case.wrong)
    assert _send(page, form) in (400, 404, 409), "the server refuses the one wrong field"

    form = page.locator(case.form)
    kept = {item.name: _value(form, item.name, item.kind, item.value) for item in case.fields}
    assert kept == {item.name: _expected(item) for item in case.fields}, "every other field holds what was typed"
    assert _value(form, case.bad, case.bad_kind, case.wrong) == (case.wrong if case.bad_kept else ""), \
        "and so does the wrong one (a password is never sent back)"
    beside = form.locator(f'[name="{case.bad}"] ~ .refusal')
    assert beside.count() == 1 and case.refusal in beside.inner_text(), "the refusal stands beside its field"
    summary = page.locator(".flash.error")
    assert summary.count() == 1 and case.refusal in summary.inner_text(), "and is summed up at the top"
    screenshot(page, tmp_path, "form-refused-" + case.path.strip("/").replace("/", "-").replace("{job}", "job"))

    for item in case.fields:
        if not item.kept:  # typed again
            _set(form, item.name, item.kind, item.value)
    _set(form, case.bad, case.bad_kind, good)
    assert _send(page, form) == 200, "mended, the form is taken"
    assert page.locator(".flash.error").count() == 0, page.locator(".flash.error").all_inner_texts()
    case.saved(served)


def test_the_schedule_form_groups_its_choices_under_labelled_fieldsets(admin_page, served):
    page = admin_page
    page.goto("/definitions/schedules")
    form = page.locator(CASES["schedule"].form)
    legends = form.locator("fieldset > legend").all_inner_texts()
    assert legends == ["Time of day", "Begins", "Ends"]
    assert form.locator('[name="attime"]').get_attribute("type") == "time"
    assert {form.locator(f'[name="{name}"]').get_attribute("type") for name in ("startdate", "enddate")} == {
        "datetime-local"}

