"""Every page in Danish: with the demo's definitions, a running job (reported through the scheduler's intake),
a finished job with its history, QA report and thumbnails, a stopped one and a failed one, every GET rule of
the web UI is fetched with Danish chosen, and its visible text is searched for English the catalogue does not
say in Danish.

A text counts as English when most of its words are English: an English stop word, or a word of the
catalogue's English (its msgids) that its Danish (the msgstrs) never uses. What the test made itself (names,
comments, seeds) and what is English on purpose (URLs, codes, the quoted errors of a reason) is left out
first, and a text that is a Danish msgstr is Danish whatever its words. Every finding is printed with the
page it is on, and a GET rule that is neither fetched nor skipped with its reason fails the test."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from babel.messages.pofile import read_po
from flask import Flask
from lxml import html as lxml_html
from sqlalchemy import Engine, select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.demo import definitions
from harvestdef.livechanges import APPLIED, STOP
from harvestdef.messages import CrawlStatus
from harvestdef.model.definitions import ExtendedFieldDatatype, ExtendedFieldType
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.queues import open_transport
from harvestdef.repositories.extendedfields import ExtendedFieldRepository
from harvestdef.repositories.history import rebuild_summaries
from harvestdef.repositories.jobchanges import JobChangeRepository
from harvestdef.repositories.thumbnails import ThumbnailRepository, ThumbnailState, thumbnail_name
from harvestdef.settings import QueueSettings, load_settings
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from harvester.postprocess.qa import build_qa_report
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.notify import Notifier
from tests.scheduler.factories import add_config
from tests.scheduler.test_intake import NAMES, claim, ready, register
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_job_thumbnails import png
from tests.webui.test_live_job import CONTROLLER, Crawl, queue
from webui import create_app
from webui.language import COOKIE, TRANSLATIONS

SITE_PORT = 8123
REPLAY = "http://replay.example.org:8090"
WEBHOOK = "Driftskanalen"

# Rules not fetched, each with its reason. Every rule of the JSON API (endpoints "api.…") is skipped too: the
# API stays English, it is read by programs (README.md, Languages).
SKIPPED = {
    "static": "static files: scripts and style sheets, no page",
    "apidocs.asset": "Swagger UI's own files, served as they are",
    "definitions.download_template": "a download: the crawl template's XML",
    "definitions.download_traps": "a download: the crawler traps as text",
    "history.harvest_csv": "a download: the harvest's statistics as CSV",
    "status.job_file": "a download: one of the job's files from the archive store",
    "status.thumbnail": "a picture (PNG) of a seed",
    "status.jobs_prefix": "a redirect to the job list, which is fetched",
}

# English function words that Danish never writes as words of its own ("at", "for", "i", "under", "over",
# "her", "man", "by", "to", "so" are Danish words too, and left out)
STOP_WORDS = frozenset((
    "a", "about", "after", "again", "against", "all", "also", "an", "and", "any", "are", "as", "be", "because",
    "been", "before", "being", "both", "but", "can", "cannot", "could", "did", "do", "does", "doing", "done", "each",
    "every", "few", "from", "had", "has", "have", "having", "how", "if", "into", "is", "it", "its", "itself", "just",
    "may", "might", "more", "most", "must", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or",
    "other", "our", "out", "own", "same", "shall", "she", "should", "since", "some", "such", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "through", "too", "until", "up", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "within",
    "without", "would", "yet", "you", "your",
))

WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# what is English on purpose or not words: URLs, paths and MIME types, host and domain names, file names,
# codes in capitals (DONE, FOCUSED, UTC), crawler wake times (1s250ms), placeholders left for a script
NOT_WORDS = re.compile(r"""(?x)
    \S*/\S* | \b[\w-]+(?:\.[\w-]+)+\b | \b[A-Z][A-Z0-9_]+\b
    | %\(\w+\)s | \b\d+[a-z]+\b
""")


def _words(text: str) -> list[str]:
    return WORD.findall(NOT_WORDS.sub(" ", text))


def _catalogue() -> Any:
    with (TRANSLATIONS / "da" / "LC_MESSAGES" / "messages.po").open("rb") as source:
        return read_po(source, locale="da")


def _forms(value: str | tuple[str, ...] | None) -> tuple[str, ...]:
    return tuple(form for form in (value if isinstance(value, tuple) else (value,)) if form)


class Language:
    """What the Danish catalogue says: the words only its English uses, and each msgstr as a pattern."""

    def __init__(self) -> None:
        english, danish, patterns = set(), set(), []
        for message in _catalogue():
            if not message.id:
                continue
            english |= {word.lower() for text in _forms(message.id) for word in _words(text)}
            for form in _forms(message.string):
                danish |= {word.lower() for word in _words(form)}
                pieces = re.split(r"%\(\w+\)s|%s", " ".join(form.split()))
                if WORD.search("".join(pieces)):  # "%(name)s: %(value)s" would take any text for Danish
                    patterns.append(re.compile(".+?".join(map(re.escape, pieces)), re.S))
        self.english = (english - danish) | STOP_WORDS
        self.patterns = patterns

    def is_english(self, text: str) -> bool:
        words = [word.lower() for word in _words(text)]
        english = [word for word in words if word in self.english]
        if not english or len(english) * 2 < len(words):
            return False
        return not any(pattern.fullmatch(text) for pattern in self.patterns)


def visible_texts(page: str) -> Iterator[str]:
    """The text a reader sees: text runs of the page's elements, and the titles, placeholders, alternative
    texts and button labels; not scripts, styles, code, preformatted text or form values of user data."""
    root = lxml_html.fromstring(page)
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        for name in ("title", "placeholder", "alt", "aria-label"):
            if element.get(name):
                yield element.get(name)
        if element.tag == "input" and element.get("type") in ("submit", "button") and element.get("value"):
            yield element.get("value")
    for element in root.iter("script", "style", "code", "pre", "textarea"):
        element.drop_tree()
    yield from root.itertext()


@pytest.fixture
def world(webui_engine: Engine, tmp_path: Path) -> dict[str, Any]:
    """The demo's definitions with jobs of every kind; the ids and names the pages' paths take."""
    settings = load_settings(environ={}, overrides={"harvester.datamodel.domain.defaultOrderxml": definitions.TEMPLATE})
    definitions.create_definitions(webui_engine, settings, SITE_PORT)
    with webui_engine.begin() as conn:
        harvest_ids = dict(conn.execute(select(s.harvestdefinitions.c.name, s.harvestdefinitions.c.harvest_id)).all())
    now = utcnow()
    generated = {name: generate_jobs(webui_engine, harvest_ids[name], GenerationOptions()).job_ids
                 for name in (definitions.SELECTIVE, definitions.EVENT, definitions.SNAPSHOT_STEP_1)}
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
    try:
        running = _running_job(webui_engine, transport, now)
    finally:
        transport.close()
    # the selective harvest's second run, five minutes on, fails
    (failed,) = generate_jobs(webui_engine, harvest_ids[definitions.SELECTIVE], GenerationOptions(),
                              now=now + timedelta(minutes=6)).job_ids
    (done, *_), (stopped, *_) = generated[definitions.SNAPSHOT_STEP_1], generated[definitions.EVENT]
    archive = tmp_path / "archive"
    with webui_engine.begin() as conn:
        for job_id, status in ((done, JobStatus.DONE), (stopped, JobStatus.DONE), (failed, JobStatus.FAILED)):
            conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(
                status=int(status), startdate=now - timedelta(minutes=10), enddate=now - timedelta(minutes=1),
                harvest_errors="Crawl ended abnormally: the crawler stopped answering" if status == JobStatus.FAILED
                else None))
            _history(conn, job_id, now)
        change = JobChangeRepository(conn).add(stopped, STOP, {"reason": "ferdig"}, "operator",
                                               now - timedelta(minutes=5))
        conn.execute(update(s.job_changes).where(s.job_changes.c.job_id == stopped,
                                                 s.job_changes.c.version == change.version)
                     .values(state=APPLIED, applied=now - timedelta(minutes=4), attempt_id="a-1"))
        rebuild_summaries(conn)
        _thumbnails(conn, done, archive)
        done_harvest = conn.scalar(select(s.jobs.c.harvest_id).where(s.jobs.c.job_id == done))
        # a second configuration of a harvested domain: the harvest's page offers to change to it
        add_config(conn, conn.scalar(select(s.domains.c.domain_id).where(s.domains.c.name == "nordposten.dk")),
                   "ekstra")
        ExtendedFieldRepository(conn, "admin").define(ExtendedFieldType.DOMAINS, "Ejer", ExtendedFieldDatatype.STRING,
                                                      maxlen=40, sequencenr=1)
    metadata = _qa_report(tmp_path, done, done_harvest)
    return {"harvest_ids": harvest_ids, "running": running, "done": done, "failed": failed, "stopped": stopped,
            "metadata": metadata, "archive": archive}


def _running_job(engine: Engine, transport: Any, now: Any) -> int:
    """The oldest NEW job of channel FOCUSED, dispatched, claimed, STARTED and reporting, its queues snoozed."""
    handlers = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()),
                               StatusIntake(Notifier(), history_sample_rate=1))
    handle = handlers.carry_out_one
    register(handle, CONTROLLER)
    job_id = ready(handle, CONTROLLER)
    with engine.connect() as conn:
        attempt = conn.scalar(select(s.jobs.c.attempt_id).where(s.jobs.c.job_id == job_id))
    assert claim(handle, job_id, attempt, CONTROLLER).granted
    assert handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, status=JobStatus.STARTED))
    crawl = Crawl(job_id, attempt, handle)
    crawl.heartbeat(now)
    crawl.progress(now - timedelta(seconds=30), downloaded_files=10)
    crawl.progress(now, downloaded_files=40, active_queues=1)
    crawl.frontier(now, queue("www.nordposten.dk", 30, wake="1s250ms"))
    return job_id


def _history(conn: Any, job_id: int, now: Any) -> None:
    """Each configuration's figures of the job; its first got nothing, a dead seed and another with it."""
    configs = list(conn.scalars(select(s.job_configs.c.config_id).where(s.job_configs.c.job_id == job_id)))
    harvest_id, harvest_num = conn.execute(select(s.jobs.c.harvest_id, s.jobs.c.harvest_num)
                                           .where(s.jobs.c.job_id == job_id)).one()
    for index, config in enumerate(configs):
        row = conn.execute(s.historyinfo.insert().values(
            stopreason=int(StopReason.OBJECT_LIMIT if index % 2 else StopReason.DOWNLOAD_COMPLETE),
            objectcount=0 if index == 0 else 40 + index, bytecount=0 if index == 0 else 100_000 * (index + 1),
            duplicate_objects=index, config_id=config, harvest_id=harvest_id, job_id=job_id, harvest_time=now))
        if index == 0:
            seed = f"http://www.nordposten.dk:{SITE_PORT}/"
            conn.execute(s.harvest_findings.insert().values(
                historyinfo_id=row.inserted_primary_key[0], job_id=job_id, config_id=config, harvest_id=harvest_id,
                harvest_num=harvest_num, reason=f"DNS lookup failed (-6) for {seed} (and 1 other seed failed)",
                fetch_status=-6, seed=seed, other_seeds_failed=1))


def _thumbnails(conn: Any, job_id: int, archive: Path) -> None:
    repository = ThumbnailRepository(conn)
    (job,) = [waiting for waiting in repository.jobs_waiting(10, utcnow() + timedelta(days=1), retry_skipped=True)
              if waiting.job_id == job_id]
    first, *others = job.seeds
    repository.record_seed(job, first, name=thumbnail_name(first), capture_time="20261201100000")
    for seed in others:
        repository.record_seed(job, seed, note="not captured by this job")
    repository.finish(job, ThumbnailState.MADE)
    stored = archive / str(job.harvest_id) / str(job_id) / thumbnail_name(first)
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(png(320, 200))


def _qa_report(tmp_path: Path, job_id: int, harvest_id: int) -> str:
    """The job's metadata WARC with a QA report of one seed captured and one not; returns its name."""
    site = f"http://www.nordposten.dk:{SITE_PORT}"
    log = tmp_path / "crawl.log"
    log.write_text(f"2026-12-01T10:00:00.000Z   200 10 {site}/ - - text/html #001 - - {site}/ -\n"
                   f"2026-12-01T10:00:01.000Z   404 10 {site}/mangler.css E {site}/ text/css #001 - - {site}/ -\n",
                   encoding="utf-8")
    report = build_qa_report(job_id, harvest_id, [f"{site}/", "http://www.byhistorie.dk/"], [log], [],
                             ["nordposten.dk", "byhistorie.dk"])
    qa_file = tmp_path / "qa-report.json"
    qa_file.write_text(report.to_json(), encoding="utf-8")
    info = MetadataInfo(job_id=job_id, harvest_id=harvest_id, harvest_num=1, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="test", hostname="h", ip="127.0.0.1",
                        qa_report=qa_file)
    name = f"{job_id}-metadata-1.warc.gz"
    write_metadata_warc(tmp_path / "archive" / str(harvest_id) / str(job_id) / name, info, [log], [], [], [])
    return name


def user_data(engine: Engine) -> list[str]:
    """What the test (and the demo's definitions) wrote, which a page shows as it was written: longest first."""
    # the harvest channels' comments too: the database's first rows, which an admin rewrites as any other
    columns = [s.harvestdefinitions.c.name, s.harvestdefinitions.c.comments, s.domains.c.name,
               s.harvestchannel.c.comments,
               s.configurations.c.name, s.seedlists.c.name, s.ordertemplates.c.name,
               s.ordertemplates.c.description, s.schedules.c.name, s.schedules.c.comments, s.users.c.name,
               s.users.c.fullname, s.jobs.c.harvest_errors]
    found = {WEBHOOK, "ferdig", "Ejer", "not captured by this job"}
    with engine.connect() as conn:
        for column in columns:
            found |= {value for value in conn.scalars(select(column)) if value}
    # a schedule's name is shown with spaces for its underscores
    found |= {value.replace("_", " ") for value in found}
    return sorted(found, key=len, reverse=True)


def paths(app: Flask, world: dict[str, Any], engine: Engine) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The path(s) fetched for each GET rule, and the rules skipped with their reasons."""
    domain = "nordposten.dk"
    with engine.connect() as conn:
        config = conn.scalar(select(s.configurations.c.name).join(
            s.domains, s.domains.c.domain_id == s.configurations.c.domain_id).where(s.domains.c.name == domain))
        seedlist = conn.scalar(select(s.seedlists.c.name).join(
            s.domains, s.domains.c.domain_id == s.seedlists.c.domain_id).where(s.domains.c.name == domain))
        webhook = conn.scalar(select(s.webhooks.c.webhook_id))
    done, running, metadata = world["done"], world["running"], world["metadata"]
    fetched = {
        "system.home": ["/"], "definitions.index": ["/definitions/"],
        "definitions.aliases": ["/definitions/aliases"], "definitions.channels": ["/definitions/channels"],
        "definitions.domains": ["/definitions/domains"], "definitions.domain": [f"/definitions/domains/{domain}"],
        "definitions.configuration": [f"/definitions/domains/{domain}/configurations/{config}"],
        "definitions.configuration_new": [f"/definitions/domains/{domain}/new-configuration"],
        "definitions.seedlist_new": [f"/definitions/domains/{domain}/new-seedlist"],
        "definitions.seedlist": [f"/definitions/domains/{domain}/seedlists/{seedlist}"],
        "definitions.domains_new": ["/definitions/domains/new"],
        "definitions.extended_fields": ["/definitions/extendedfields"],
        "definitions.harvests": ["/definitions/harvests"],
        "definitions.harvest": [f"/definitions/harvests/{name}" for name in world["harvest_ids"]],
        "definitions.new_harvest": [f"/definitions/harvests/new/{kind}" for kind in ("selective", "event",
                                                                                     "snapshot")],
        "definitions.schedules": ["/definitions/schedules"],
        "definitions.schedule": [f"/definitions/schedules/{definitions.SCHEDULE}"],
        "definitions.templates": ["/definitions/templates"], "definitions.tlds": ["/definitions/tlds"],
        "definitions.global_traps": ["/definitions/traps"],
        "definitions.unused": ["/definitions/unused/configurations", "/definitions/unused/seedlists"],
        "history.index": ["/history/"], "history.domain": [f"/history/domains/{domain}"],
        "history.harvest": [f"/history/harvests/{name}" for name in world["harvest_ids"]],
        "history.nothing_harvested": [f"/history/harvests/{definitions.SNAPSHOT_STEP_1}/runs/1/nothing-harvested"],
        "status.index": ["/status/"],
        "status.job": [f"/status/jobs/{job}" for job in (running, done, world["failed"], world["stopped"])],
        "status.warc_records": [f"/status/jobs/{done}/records/{metadata}"],
        "status.running": ["/status/running"], "status.waiting": ["/status/waiting"],
        "system.index": ["/system"], "system.users": ["/system/users"],
        "system.tokens": ["/system/users/admin/tokens"], "system.webhooks": ["/system/webhooks"],
        "system.webhook": [f"/system/webhooks/{webhook}"],
        "auth.login": ["/login"], "auth.password": ["/password"], "apidocs.page": ["/api/v1/docs"],
    }
    skipped = dict(SKIPPED)
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("api.") and "GET" in (rule.methods or ()):
            skipped[rule.endpoint] = "the JSON API, which stays English (README.md, Languages)"
    return fetched, skipped


def test_every_page_speaks_danish(webui_engine: Engine, world: dict[str, Any], tmp_path: Path):
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(world["archive"]),
                                                    "harvestsuite.replay.url": REPLAY})
    app = create_app(settings, webui_engine, {"TESTING": True})
    client = app.test_client()
    assert client.post("/login", data={"name": "admin", "password": PASSWORD,
                                       "csrf_token": csrf_of(client)}).status_code == 302
    headers = {"X-CSRF-Token": csrf_of(client, "/")}
    answer = client.post("/api/v1/webhooks", headers=headers, json={
        "name": WEBHOOK, "url": "https://chat.example.org/hooks/T000", "events": ["job_failed"],
        "secret": "s" * 24})
    assert answer.status_code == 201, answer.get_data(as_text=True)
    client.set_cookie(COOKIE, "da")

    fetched, skipped = paths(app, world, webui_engine)
    # a record of the metadata WARC, as its records page links it
    records = client.get(fetched["status.warc_records"][0]).get_data(as_text=True)
    viewed = re.search(r'href="(/status/jobs/\d+/view/[^"]+)"', records)
    assert viewed, records
    fetched["status.view_file"] = [lxml_html.fromstring(f'<a href="{viewed.group(1)}"></a>').get("href")]
    rules = {rule.endpoint for rule in app.url_map.iter_rules() if "GET" in (rule.methods or ())}
    assert rules - set(fetched) - set(skipped) == set(), "GET rules neither fetched nor skipped with a reason"
    assert set(fetched) - rules == set(), "paths for rules the web UI no longer has"

    language, data = Language(), user_data(webui_engine)
    findings, seen = [], {}
    for endpoint, pages in sorted(fetched.items()):
        for path in pages:
            answer = client.get(path)
            assert answer.status_code == 200, f"{path} ({endpoint}): {answer.status_code}"
            page = seen[path] = answer.get_data(as_text=True)
            assert 'lang="da"' in page, f"{path} is not in Danish"
            for text in visible_texts(page):
                said = " ".join(text.split())
                for written in data:
                    said = said.replace(written, " ")
                if language.is_english(said):
                    findings.append(f"{path}: {said!r}")
    # the login page as somebody not logged in sees it
    stranger = app.test_client()
    stranger.set_cookie(COOKIE, "da")
    login_page = stranger.get("/login")
    assert login_page.status_code == 200 and 'name="password"' in login_page.get_data(as_text=True)
    for text in visible_texts(login_page.get_data(as_text=True)):
        if language.is_english(" ".join(text.split())):
            findings.append(f"/login (not logged in): {text!r}")
    for finding in findings:
        print(finding)
    # the pages showed what the data holds: the running crawl's reason, the QA report, thumbnails, charts
    assert "Venter mellem hentninger, som høflighedsreglerne kræver" in seen[f"/status/jobs/{world['running']}"]
    done = seen[f"/status/jobs/{world['done']}"]
    assert "ikke i crawl.log: høstningen sluttede, før den nåede dertil" in done
    assert "/thumbnails/" in done and "HTTP 404" in done
    assert "HTTP-fejl: 1 ressource" in done, "a reason's words as they are written, not lowered after the first letter"
    assert "nye bytes" in seen[f"/history/harvests/{definitions.SNAPSHOT_STEP_1}"]
    assert f"DNS-opslag fejlede (-6) for http://www.nordposten.dk:{SITE_PORT}/ (og 1 andet seed fejlede)" in \
        seen[f"/history/harvests/{definitions.SNAPSHOT_STEP_1}/runs/1/nothing-harvested"]
    assert "Ændr</button>" in seen[f"/definitions/harvests/{definitions.SELECTIVE}"]
    assert not findings, f"{len(findings)} English texts on the Danish pages:\n" + "\n".join(findings)

