"""Live changes to a running crawl through the engine process's REST API, as the harvest controller sends
them (HeritrixClient.run_script with scripts of harvester/heritrix3/scripting.py, and the bean browser): a
reject rule stops matching URIs already queued, a domain budget retires or brings back a domain, queued URIs
are deleted unfetched, URIs are added, a script of anything else is refused, bean properties are read and
set, and the changes survive a checkpoint and a resume.

The crawls are slow (150 ms between fetches of a host, the trap in scope), so they are still running when
the changes come; a test that needs to know what was fetched before a change pauses the crawl first.
One engine and one test site serve the whole module, each test with jobs of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestdef.errors import HeritrixError
from harvester.engine.frontier.frontier import DONE, QUEUED, CrawlUri, Frontier
from harvester.engine.frontier.quota import DomainBudget, QuotaEnforcer, QuotaRules
from harvester.engine.frontier.urlstore import UrlStore
from harvester.heritrix import HeritrixClient
from harvester.heritrix3.scripting import (
    LIBRARY,
    add_uris_script,
    budget_script,
    delete_queued_script,
    reject_script,
    show_reject_rules_script,
    unreject_script,
)
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import TestSite, wait_for

HOST = "www.kulturarv.dk"
OTHER_HOST = "www.bibliotek.no"
SLOW = crawler_beans(max_hops=25, min_delay_ms=150, reject_regex="^nothing-matches-this$")


@pytest.fixture(scope="module")
def site() -> Iterator[TestSite]:
    with TestSite() as test_site:
        yield test_site


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, site: TestSite) -> Iterator[EngineProcess]:
    directory = tmp_path_factory.mktemp("live")
    hosts_file = site.write_hosts_file(directory / "hosts.txt")
    with EngineProcess(directory / "jobs", hosts_file=hosts_file) as process:
        yield process


def launch(engine: EngineProcess, name: str, seeds: list[str], cxml: str = SLOW,
           running: bool = True) -> tuple[HeritrixClient, Path]:
    """A built and launched job; unpaused and RUNNING unless ``running`` is False (then PAUSED at start)."""
    client = engine.client()
    job_dir = write_job(engine.jobs_dir / name, seeds, cxml=cxml)
    client.rescan()
    client.build(name)
    client.launch(name)
    if running:
        client.unpause(name)
        client.wait_for(name, lambda status: status.crawl_controller_state == "RUNNING", timeout=30,
                        poll_interval=0.05)
    else:
        client.wait_for(name, lambda status: status.crawl_controller_state == "PAUSED", timeout=30,
                        poll_interval=0.05)
    return client, job_dir


def crawled(job_dir: Path) -> list[tuple[int, str, str]]:
    """(status, URI, annotations) of every crawl.log line of the latest launch."""
    path = job_dir / "latest" / "logs" / "crawl.log"
    if not path.is_file():
        return []
    return [(int(fields[1]), fields[3], fields[11]) for fields in
            (line.split() for line in path.read_text(encoding="utf-8").splitlines()) if len(fields) >= 12]


def pause(client: HeritrixClient, name: str) -> None:
    client.pause(name)
    client.wait_for(name, lambda status: status.crawl_controller_state == "PAUSED", timeout=30, poll_interval=0.05)


def stop(client: HeritrixClient, name: str) -> None:
    status = client.job_status(name)
    if not status.is_finished:
        client.terminate(name)
    client.wait_for(name, lambda status: status.is_finished, timeout=60, poll_interval=0.05)


def response_targets(job_dir: Path) -> set[str]:
    targets = set()
    for path in (job_dir / "latest" / "warcs").glob("*.warc.gz"):
        with path.open("rb") as handle:
            targets.update(record.rec_headers.get_header("WARC-Target-URI") for record in ArchiveIterator(handle)
                           if record.rec_type == "response")
    return targets


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def test_a_reject_rule_stops_queued_uris_from_being_fetched(engine: EngineProcess, site: TestSite) -> None:
    client, job_dir = launch(engine, "rejecting", [site.url(HOST, "/")])
    assert wait_for(lambda: any(uri == site.url(HOST, "/") for _, uri, _ in crawled(job_dir)), timeout=20)
    pause(client, "rejecting")
    before = len(crawled(job_dir))
    result = client.run_script("rejecting", reject_script(r".*/img/\d+\.png", "T.E."))
    assert (result.failure, result.exception) == (False, "")
    assert result.raw_output.strip() == r"reject rule added: .*/img/\d+\.png"
    assert result.lines_executed > LIBRARY.count("\n")
    client.unpause("rejecting")
    # the seed page's images were queued before the rule: they end -5000 unfetched
    assert wait_for(lambda: any(status == -5000 for status, _, _ in crawled(job_dir)), timeout=20)
    stop(client, "rejecting")
    after = crawled(job_dir)[before:]
    images = [(status, uri) for status, uri, _ in after if "/img/" in uri]
    assert images and all(status == -5000 for status, _ in images), images
    fetched_before = {uri for status, uri, _ in crawled(job_dir)[:before] if status > 0}
    assert not {uri for uri in response_targets(job_dir) if "/img/" in uri} - fetched_before
    assert "Action from user T.E.: Added a reject rule matching regex" in read(
        job_dir / "latest" / "logs" / "scripting_events.log")
    assert "Script carried out: 1 calls, 1 changes (Added a reject rule" in read(job_dir / "job.log")
    shown = client.run_script("rejecting", show_reject_rules_script())
    assert shown.failure and "cannot run a script while FINISHED" in shown.exception   # the crawl has ended


def test_rules_are_shown_and_taken_back_and_a_failing_call_says_why(engine: EngineProcess, site: TestSite) -> None:
    client, job_dir = launch(engine, "unrejecting", [site.url(HOST, "/")], running=False)
    for regex in (".*/a/.*", "it's \\ here"):
        assert not client.run_script("unrejecting", reject_script(regex, "AB")).failure
    assert client.run_script("unrejecting", show_reject_rules_script()).raw_output == ".*/a/.*\nit's \\ here"
    assert not client.run_script("unrejecting", unreject_script(".*/a/.*", "AB")).failure
    assert client.run_script("unrejecting", show_reject_rules_script()).raw_output == "it's \\ here"
    missing = client.run_script("unrejecting", unreject_script(".*/a/.*", "AB"))
    assert missing.failure and missing.lines_executed == 0
    assert "removeRejectRule: no reject rule .*/a/.* in the scope" in missing.exception
    bad = client.run_script("unrejecting", reject_script("(unclosed", "AB"))
    assert bad.failure and "addRejectRule: the regex '(unclosed' cannot be used" in bad.exception
    log = read(job_dir / "job.log")
    assert "WARNING Script failed: line" in log and "no reject rule .*/a/.* in the scope" in log
    stop(client, "unrejecting")


def test_a_script_of_anything_else_is_refused_and_changes_nothing(engine: EngineProcess, site: TestSite) -> None:
    client, job_dir = launch(engine, "refusing", [site.url(HOST, "/")], running=False)
    for script in ('Runtime.getRuntime().exec("ls")',
                   reject_script(".*", "A") + 'new File("/tmp/x").delete()\n',
                   LIBRARY.replace("rawOut.println", "System.exit(0); rawOut.println") + "\naddRejectRule('.*')\n"):
        result = client.run_script("refusing", script)
        assert result.failure and result.raw_output == ""
        assert "script refused: line " in result.exception and "addRejectRule(String regex)" in result.exception
    nashorn = client.run_script("refusing", reject_script(".*", "A"), engine="nashorn")
    assert nashorn.failure and "no script engine 'nashorn'" in nashorn.exception
    assert client.run_script("refusing", show_reject_rules_script()).raw_output == ""
    assert not (job_dir / "latest" / "logs" / "scripting_events.log").exists()
    assert read(job_dir / "job.log").count("WARNING Script refused: line") == 3
    with pytest.raises(HeritrixError, match="no job 'ghost'.*404"):
        client.run_script("ghost", show_reject_rules_script())
    stop(client, "refusing")
    assert client.job_status("refusing").crawl_exit_status == "ABORTED"


def test_a_lowered_domain_budget_ends_the_domain_on_its_limit(engine: EngineProcess, site: TestSite) -> None:
    client, job_dir = launch(engine, "lowered", [site.url(HOST, "/")])
    assert wait_for(lambda: any(uri == site.url(HOST, "/") for _, uri, _ in crawled(job_dir)), timeout=20)
    pause(client, "lowered")
    # The quota counts what Heritrix's QuotaEnforcer counts: DNS lookups and 2xx fetches, robots.txt too.
    successes = sum(1 for status, _, _ in crawled(job_dir) if status == 1 or 200 <= status < 300)
    result = client.run_script("lowered", budget_script("kulturarv.dk", successes + 2, None, "QA"))
    assert not result.failure
    assert result.raw_output == f"groupMaxFetchSuccesses of kulturarv.dk set to {successes + 2}"
    client.unpause("lowered")
    # the domain's queue is retired with its URIs in it: the crawl then ends by itself
    status = client.wait_for("lowered", lambda status: status.is_finished, timeout=30, poll_interval=0.05)
    assert status.crawl_exit_status == "FINISHED"
    lines = crawled(job_dir)
    assert sum(1 for status, _, _ in lines if status == 1 or 200 <= status < 300) == successes + 2
    blocked = [(status, annotations) for status, _, annotations in lines if status == -5003]
    assert blocked == [(-5003, "Q:groupMaxFetchSuccesses")]
    assert "RETIRED" in client.job_report("lowered", "FrontierSummaryReport")


def test_a_raised_domain_budget_brings_the_domain_back(engine: EngineProcess, site: TestSite) -> None:
    # the other host's trap (25 hops, 150 ms apart) keeps the crawl going while the first host waits retired
    client, job_dir = launch(engine, "raised", [site.url(HOST, "/"), site.url(OTHER_HOST, "/trap/")],
                             running=False)
    assert not client.run_script("raised", budget_script("kulturarv.dk", 4, None, "QA")).failure
    client.unpause("raised")
    assert wait_for(lambda: any(status == -5003 and HOST in uri for status, uri, _ in crawled(job_dir)), timeout=20)
    result = client.run_script("raised", budget_script("kulturarv.dk", -1, None, "QA"))
    assert not result.failure, result
    assert result.raw_output == "groupMaxFetchSuccesses of kulturarv.dk set to -1\n1 retired queues brought back"

    def fetched_after_block() -> bool:
        lines = crawled(job_dir)
        block = next(index for index, (status, uri, _) in enumerate(lines) if status == -5003 and HOST in uri)
        return any(status == 200 and HOST in uri for status, uri, _ in lines[block + 1:])

    assert wait_for(fetched_after_block, timeout=20)
    stop(client, "raised")
    assert not any(status == -5003 and OTHER_HOST in uri for status, uri, _ in crawled(job_dir))


def test_deleted_queued_uris_are_never_fetched(engine: EngineProcess, site: TestSite) -> None:
    client, job_dir = launch(engine, "deleting", [site.url(HOST, "/")])
    assert wait_for(lambda: any(uri == site.url(HOST, "/") for _, uri, _ in crawled(job_dir)), timeout=20)
    pause(client, "deleting")
    before = {uri for _, uri, _ in crawled(job_dir)}
    # links found on the seed page only, so none comes back by another page: some in the queue's head in
    # memory, the later ones (chunked, dup, gzip, the style sheet, the srcset images) waiting on disk
    only_on_seed = r".*/(img/(0|70|71)\.png|trap/1/|missing/1|redir/3|dup\.bin|gzip\.html|chunked\.html|style\.css)"
    result = client.run_script("deleting", delete_queued_script(only_on_seed, "QA"))
    match = re.fullmatch(r"(\d+) queued URIs deleted", result.raw_output)
    assert not result.failure and match and int(match.group(1)) >= 6, result
    client.unpause("deleting")
    status = client.wait_for("deleting", lambda status: status.is_finished, timeout=30, poll_interval=0.05)
    assert status.crawl_exit_status == "FINISHED"
    after = [(status, uri) for status, uri, _ in crawled(job_dir) if uri not in before]
    # nothing of them is fetched, nor written to crawl.log (Heritrix writes no line for a deleted URI)
    assert after and not [uri for _, uri in after if re.fullmatch(only_on_seed, uri)], after
    assert f"Deleted {match.group(1)} queued URIs" in read(job_dir / "latest" / "logs" / "scripting_events.log")


def test_added_uris_are_fetched_when_the_scope_takes_them(engine: EngineProcess, site: TestSite) -> None:
    client, job_dir = launch(engine, "adding", [site.url(HOST, "/")])
    added = site.url(HOST, "/page/5?added=1")
    result = client.run_script("adding", add_uris_script([added, site.url(OTHER_HOST, "/"), "ftp://x/"], "QA"))
    assert not result.failure and result.raw_output == "1 URIs scheduled, 2 not added"
    assert wait_for(lambda: (200, added) in {(status, uri) for status, uri, _ in crawled(job_dir)}, timeout=20)
    stop(client, "adding")
    assert added in response_targets(job_dir)
    assert not any(OTHER_HOST in uri for _, uri, _ in crawled(job_dir))


def test_bean_properties_are_read_and_set_and_bad_values_refused(engine: EngineProcess, site: TestSite) -> None:
    client, job_dir = launch(engine, "beans", [site.url(HOST, "/")], running=False)
    assert client.bean_property("beans", "disposition.minDelayMs") == "150"
    assert client.bean_property("beans", "quotaenforcer.groupMaxFetchSuccesses") == "-1"
    assert client.set_bean_property("beans", "disposition.delayFactor", 2) == "2.0"
    assert client.set_bean_property("beans", "disposition.maxDelayMs", 400) == "400"
    assert client.set_bean_property("beans", "disposition.minDelayMs", "300") == "300"
    assert client.set_bean_property("beans", "queueAssignmentPolicy.parallelQueues", 2) == "2"
    assert client.set_bean_property("beans", "quotaenforcer.groupMaxAllKb", 5000) == "5000"
    for path, value, reason in (("disposition.minDelayMs", -1, "at least 0"),
                                ("disposition.minDelayMs", 500, "more than disposition.maxDelayMs 400"),
                                ("disposition.maxDelayMs", 100, "less than disposition.minDelayMs 300"),
                                ("queueAssignmentPolicy.parallelQueues", 0, "at least 1"),
                                ("disposition.delayFactor", "fast", "takes a number"),
                                ("quotaenforcer.groupMaxFetchSuccesses", "1.5", "takes a whole number"),
                                ("quotaenforcer.groupMaxFetchSuccesses", -2, "at least -1")):
        with pytest.raises(HeritrixError, match=f"400.*{re.escape(reason)}"):
            client.set_bean_property("beans", path, value)
    with pytest.raises(HeritrixError, match="no bean property 'scope.rules'.*disposition.delayFactor.*404"):
        client.set_bean_property("beans", "scope.rules", 1)
    with pytest.raises(HeritrixError, match="no bean property 'fetchHttp.timeoutSeconds'.*404"):
        client.bean_property("beans", "fetchHttp.timeoutSeconds")
    assert client.bean_property("beans", "disposition.minDelayMs") == "300"   # the refusals changed nothing
    log = read(job_dir / "job.log")
    assert "Bean property disposition.minDelayMs set to 300 (was 150)" in log
    assert "Bean property disposition.minDelayMs not set: disposition.minDelayMs must be at least 0" in log
    stop(client, "beans")
    assert client.bean_property("beans", "disposition.minDelayMs") == "300"  # read after the end too
    with pytest.raises(HeritrixError, match="409.*cannot set disposition.minDelayMs while FINISHED"):
        client.set_bean_property("beans", "disposition.minDelayMs", 10)
    client.teardown("beans")
    with pytest.raises(HeritrixError, match="no launched crawl.*404"):
        client.bean_property("beans", "disposition.minDelayMs")


def test_changes_are_kept_over_a_checkpoint_and_resume(engine: EngineProcess, site: TestSite) -> None:
    client, job_dir = launch(engine, "resumed", [site.url(HOST, "/")], running=False)
    assert not client.run_script("resumed", reject_script(r".*/img/\d+\.png", "CP")).failure
    assert not client.run_script("resumed", budget_script("bibliotek.no", 7, 100, "CP")).failure
    client.set_bean_property("resumed", "disposition.minDelayMs", 40)
    client.set_bean_property("resumed", "queueAssignmentPolicy.parallelQueues", 2)
    client.unpause("resumed")
    assert wait_for(lambda: len(crawled(job_dir)) >= 6, timeout=20)
    pause(client, "resumed")
    client.checkpoint("resumed")
    stop(client, "resumed")
    client.teardown("resumed")
    client.build("resumed")
    client.launch("resumed", checkpoint="latest")
    client.wait_for("resumed", lambda status: status.crawl_controller_state == "PAUSED", timeout=30,
                    poll_interval=0.05)
    assert client.run_script("resumed", show_reject_rules_script()).raw_output == r".*/img/\d+\.png"
    assert client.bean_property("resumed", "disposition.minDelayMs") == "40"
    assert client.bean_property("resumed", "queueAssignmentPolicy.parallelQueues") == "2"
    assert "live changes kept: 1 reject rules, 1 domain budgets, 2 properties" in read(job_dir / "job.log")
    client.unpause("resumed")
    status = client.wait_for("resumed", lambda status: status.is_finished, timeout=60, poll_interval=0.05)
    assert status.crawl_exit_status == "FINISHED"
    # the resumed launch rejects what the rule rejects: no image is ever fetched
    first_launch = sorted(path for path in job_dir.iterdir() if re.fullmatch(r"\d{14}", path.name))[0]
    lines = read(first_launch / "logs" / "crawl.log").splitlines() + read(job_dir / "latest" / "logs" /
                                                                        "crawl.log").splitlines()
    assert len(lines) > 6 and not [line for line in lines if "/img/" in line.split()[3]]


def test_deleting_reaches_the_uris_waiting_on_disk(tmp_path: Path) -> None:
    frontier = Frontier(UrlStore(tmp_path / "store.sqlite"), head_size=2)
    for number in range(10):
        for host in ("a.dk", "b.dk"):
            url = f"http://{host}/{'drop' if number % 2 else 'keep'}/{number}"
            frontier.schedule(host, CrawlUri(url, "L", "", ""))
    assert frontier.queued_count == 20 and frontier.queues["a.dk"].on_disk == 8
    frontier.retire("b.dk", "Q:groupMaxFetchSuccesses")
    assert frontier.queued_count == 10
    assert frontier.delete_matching(lambda url: "/drop/" in url) == 10
    assert frontier.queued_count == 5
    assert frontier.state.get("http://a.dk/drop/9") == DONE and frontier.state.get("http://a.dk/keep/8") == QUEUED
    frontier.retire("b.dk", None)
    taken = []
    while (next_uri := frontier.next_ready(0.0)) is not None and not isinstance(next_uri, float):
        queue, uri = next_uri
        taken.append(uri.url)
        frontier.release(queue, 0.0)
    assert sorted(taken) == sorted(f"http://{host}/keep/{n}" for host in ("a.dk", "b.dk") for n in range(0, 10, 2))
    assert frontier.is_empty()


def test_a_domain_budget_covers_its_queues_whatever_policy_named_them(tmp_path: Path) -> None:
    frontier = Frontier(UrlStore(tmp_path / "store.sqlite"))
    quota = QuotaEnforcer(QuotaRules(10, -1, True), frontier)
    quota.set_domain_budget("kulturarv.dk", DomainBudget(max_fetch_successes=3))
    quota.set_domain_budget("images.kulturarv.dk", DomainBudget(max_all_kb=7))
    for key in ("kulturarv.dk", "www.kulturarv.dk", "www.kulturarv.dk#8080", "dk,kulturarv,www,",
                "dk,kulturarv,www,#443"):
        assert quota.limits(key) == (3, -1), key
    assert quota.limits("dk,kulturarv,images,") == (3, 7)   # the subdomain's own, over its domain's
    for key in ("notkulturarv.dk", "kulturarv.dk.evil.com", "dk,kulturarvx,", "bibliotek.no"):
        assert quota.limits(key) == (10, -1), key
    for _ in range(3):
        quota.count("www.kulturarv.dk", True, 100, False)
    frontier.schedule("www.kulturarv.dk", CrawlUri("http://www.kulturarv.dk/x", "L", "", ""))
    assert quota.reason_to_block("www.kulturarv.dk") == "Q:groupMaxFetchSuccesses"
    assert frontier.queued_count == 0 and frontier.retired_reason("www.kulturarv.dk")
    assert quota.set_domain_budget("kulturarv.dk", DomainBudget(max_fetch_successes=4)) == 1
    assert frontier.queued_count == 1 and frontier.retired_reason("www.kulturarv.dk") is None
