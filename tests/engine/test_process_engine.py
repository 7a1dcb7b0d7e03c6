"""The engine process without a crawl: HTTPS with digest auth, create/add/rescan, build of good and broken
templates, the job state table as the client sees it, the 303s, and the XML and JSON representations.

Each test starts ``harvestsuite engine`` as a subprocess on a free port and talks to it over HTTPS.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from lxml import etree

from harvestdef.errors import HeritrixError
from harvester.digestauth import digest_response, parse_auth_params
from harvester.heritrix import HeritrixClient
from harvester.heritrix3.model import JSON, parse_job_resource
from tests.engine.engine_process import USER, EngineProcess, crawler_beans, write_job


@pytest.fixture
def engine_process(tmp_path: Path) -> Iterator[EngineProcess]:
    with EngineProcess(tmp_path / "jobs") as process:
        yield process


def raw_request(process: EngineProcess, method: str, path: str, form: str | None = None,
                accept: str = "application/xml") -> http.client.HTTPResponse:
    """One request without redirect following, digest-authenticated by hand: to see 303s and headers."""
    context = ssl.create_default_context(cafile=str(process.cert_file))
    host, port = process.base_url.removeprefix("https://").rsplit(":", 1)
    headers = {"Accept": accept}
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
    connection.request(method, path, body=form, headers=headers)
    challenge = connection.getresponse()
    challenge.read()
    assert challenge.status == 401
    params = parse_auth_params(challenge.headers["WWW-Authenticate"])[1]
    cnonce = hashlib.md5(os.urandom(8)).hexdigest()
    response = digest_response(user=USER, realm=params["realm"], password=process.password, method=method,
                               uri=path, nonce=params["nonce"], nc="00000001", cnonce=cnonce, qop="auth")
    headers["Authorization"] = (f'Digest username="{USER}", realm="{params["realm"]}", nonce="{params["nonce"]}", '
                                f'uri="{path}", qop=auth, nc=00000001, cnonce="{cnonce}", response="{response}", '
                                f'opaque="{params["opaque"]}", algorithm=MD5')
    connection.request(method, path, body=form, headers=headers)
    answer = connection.getresponse()
    answer.body = answer.read()  # type: ignore[attr-defined]
    connection.close()
    return answer


def test_engine_prints_its_url_and_certificate_fingerprint(engine_process: EngineProcess) -> None:
    fingerprint = (engine_process.jobs_dir / "engine-cert.sha256").read_text(encoding="ascii").strip()
    assert any(fingerprint in line for line in engine_process.output)
    assert engine_process.base_url.startswith("https://127.0.0.1:")
    status = engine_process.client().engine_status()
    assert status.jobs_dir == str(engine_process.jobs_dir.resolve())
    assert set(status.available_actions) == {"rescan", "add", "create"}


def test_every_resource_needs_digest_credentials(engine_process: EngineProcess) -> None:
    context = ssl.create_default_context(cafile=str(engine_process.cert_file))
    host, port = engine_process.base_url.removeprefix("https://").rsplit(":", 1)
    for path in ("/", "/engine", "/engine/job/nosuchjob"):
        connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
        connection.request("GET", path)
        answer = connection.getresponse()
        answer.read()
        connection.close()
        assert answer.status == 401
        scheme, params = parse_auth_params(answer.headers["WWW-Authenticate"])
        assert scheme == "Digest" and params["qop"] == "auth" and params["algorithm"] == "MD5" and params["nonce"]


def test_wrong_password_is_a_heritrix_error(engine_process: EngineProcess) -> None:
    with pytest.raises(HeritrixError, match="wrong user or password"):
        engine_process.client(password="guessed").engine_status()
    # The right password still works once the failure penalty has passed.
    assert engine_process.client().engine_status().heritrix_version


def test_root_redirects_to_engine_and_posts_answer_303(engine_process: EngineProcess) -> None:
    root = raw_request(engine_process, "GET", "/")
    assert root.status == 303 and root.headers["Location"].endswith("/engine")
    created = raw_request(engine_process, "POST", "/engine", form="action=create&createpath=viaform")
    assert created.status == 303 and created.headers["Location"] == f"{engine_process.base_url}/engine"
    built = raw_request(engine_process, "POST", "/engine/job/viaform", form="action=build")
    assert built.status == 303 and built.headers["Location"] == f"{engine_process.base_url}/engine/job/viaform"


def test_create_makes_a_job_from_the_default_profile_that_builds(engine_process: EngineProcess) -> None:
    client = engine_process.client()
    engine = client.create_job("profiled")
    assert "profiled" in engine.job_names()
    job_dir = engine_process.jobs_dir / "profiled"
    assert (job_dir / "crawler-beans.cxml").is_file() and (job_dir / "seeds.txt").is_file()
    status = client.build("profiled")
    assert status.status_description == "Ready", status.job_log_tail
    # Heritrix answers a create of an existing job 303 and leaves the job as it was; the reason is in job.log.
    again = raw_request(engine_process, "POST", "/engine", form="action=create&createpath=profiled")
    assert again.status == 303 and b"exists already" in again.body
    assert "profiled" in client.create_job("profiled").job_names()
    assert any("Job exists: profiled" in line for line in client.job_status("profiled").job_log_tail)


def test_add_and_rescan_register_existing_job_directories(engine_process: EngineProcess, tmp_path: Path) -> None:
    client = engine_process.client()
    outside = write_job(tmp_path / "elsewhere" / "addedjob", ["http://www.kulturarv.dk/"])
    assert "addedjob" in client.add_job(outside).job_names()
    assert client.job_status("addedjob").status_description == "Unbuilt"
    write_job(engine_process.jobs_dir / "dropped", ["http://www.kulturarv.dk/"])
    assert "dropped" not in client.engine_status().job_names()
    assert "dropped" in client.rescan().job_names()
    with pytest.raises(HeritrixError, match="did not carry it out: .*holds no crawler-beans.cxml"):
        client.add_job(tmp_path)
    before = client.engine_status().job_names()
    refused = raw_request(engine_process, "POST", "/engine", form="action=add")
    assert refused.status == 303 and refused.body.strip() == b"Cannot add null path"
    assert client.engine_status().job_names() == before  # not the engine's working directory


def test_added_job_is_found_again_after_an_engine_restart(tmp_path: Path) -> None:
    outside = write_job(tmp_path / "elsewhere" / "kept", ["http://www.kulturarv.dk/"])
    with EngineProcess(tmp_path / "jobs") as first:
        first.client().add_job(outside)
    with EngineProcess(tmp_path / "jobs") as second:
        assert "kept" in second.client().engine_status().job_names()


def test_broken_template_stays_unbuilt_with_the_parse_error_in_job_log(engine_process: EngineProcess) -> None:
    client = engine_process.client()
    broken = crawler_beans().replace("</bean>\n  <bean id=\"seeds\"", "\n  <bean id=\"seeds\"", 1)
    write_job(engine_process.jobs_dir / "broken", ["http://www.kulturarv.dk/"], cxml=broken)
    client.rescan()
    with pytest.raises(HeritrixError, match="not done, the job is 'Unbuilt'.*build failed"):
        client.build("broken")
    status = client.job_status("broken")
    assert status.status_description == "Unbuilt"
    assert status.available_actions == ("build",)
    job_log = (engine_process.jobs_dir / "broken" / "job.log").read_text(encoding="utf-8")
    assert "Build failed" in job_log and "line " in job_log and "column " in job_log
    assert any("Build failed" in line for line in status.job_log_tail)


def test_job_state_table_as_seen_through_the_api(engine_process: EngineProcess) -> None:
    client = engine_process.client()
    write_job(engine_process.jobs_dir / "states", ["http://www.kulturarv.dk/"])
    client.rescan()
    unbuilt = client.job_status("states")
    assert (unbuilt.status_description, unbuilt.available_actions) == ("Unbuilt", ("build",))
    assert not unbuilt.has_application_context and unbuilt.crawl_controller_state is None
    for refused in ("launch", "pause"):
        with pytest.raises(HeritrixError, match=f"'{refused}' is not available while Unbuilt"):
            getattr(client, refused)("states")
    # Teardown of an unbuilt job has nothing to do: answered 303, judged by the state, which is the wanted one.
    assert client.teardown("states").status_description == "Unbuilt"
    assert "'teardown' is not available while Unbuilt" in client.job_status("states").job_log_tail[0]
    ready = client.build("states")
    assert ready.status_description == "Ready" and ready.is_launchable
    assert set(ready.available_actions) == {"launch", "teardown"}
    assert ready.crawl_controller_state == "NASCENT"
    assert client.build("states").status_description == "Ready"  # nothing to do, no error
    assert "'build' is not available while Ready" in client.job_status("states").job_log_tail[0]
    back = client.teardown("states")
    assert back.status_description == "Unbuilt" and back.launch_count == 0


def test_unknown_job_is_a_404_heritrix_error(engine_process: EngineProcess) -> None:
    with pytest.raises(HeritrixError, match="no job 'ghost'.*404"):
        engine_process.client().job_status("ghost")
    with pytest.raises(HeritrixError, match="404"):
        engine_process.client().build("ghost")


def test_xml_representation_looks_like_heritrix_and_json_has_the_same_structure(
        engine_process: EngineProcess) -> None:
    client = engine_process.client()
    write_job(engine_process.jobs_dir / "shapes", ["http://www.kulturarv.dk/"])
    client.rescan()
    client.build("shapes")
    xml = raw_request(engine_process, "GET", "/engine/job/shapes", accept="application/xml")
    assert xml.body.startswith(b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>')
    root = etree.fromstring(xml.body)
    assert root.tag == "job"
    assert [value.text for value in root.find("availableActions")] == ["launch", "teardown"]
    assert root.findtext("statusDescription") == "Ready"
    as_json = raw_request(engine_process, "GET", "/engine/job/shapes", accept="application/json")
    assert as_json.headers["Content-Type"].startswith("application/json")
    model = json.loads(as_json.body)
    assert model["availableActions"] == ["launch", "teardown"] and model["shortName"] == "shapes"
    # The two answers come from two requests, so the heap figures may differ between them; all else agrees.
    from_json, from_xml = parse_job_resource(as_json.body, JSON), parse_job_resource(xml.body)
    assert from_json.heap_report.max_bytes > 0 and from_xml.heap_report.max_bytes > 0
    assert replace(from_json, heap_report=None) == replace(from_xml, heap_report=None)
    json_client = engine_process.client(representation=JSON)
    assert json_client.job_status("shapes").status_description == "Ready"
    engine_xml = etree.fromstring(raw_request(engine_process, "GET", "/engine").body)
    assert engine_xml.tag == "engine"
    assert "shapes" in [job.findtext("shortName") for job in engine_xml.find("jobs")]


def test_the_engine_takes_port_credentials_and_hosts_from_the_settings(tmp_path):
    """``harvestsuite engine`` reads the settings the harvest controller reads; its options override them."""
    hosts = tmp_path / "hosts"
    hosts.write_text("www.kulturarv.dk 127.0.0.1\n")
    settings = tmp_path / "settings.toml"
    settings.write_text('[harvester.harvesting.heritrix]\nadminName = "operator"\nadminPassword = "from-settings"\n'
                        'guiPort = 0\n[harvestsuite.crawler]\nbind = "127.0.0.1"\n'
                        f'hostsFile = "{hosts}"\n')
    process = subprocess.Popen([sys.executable, "-m", "harvestdef", "--config", str(settings), "engine",
                                "--jobs-dir", str(tmp_path / "jobs")], stdout=subprocess.PIPE, text=True)
    try:
        url = None
        assert process.stdout is not None
        for line in process.stdout:
            match = re.search(r"Engine listening at (https://\S+)/engine", line)
            if match:
                url = match.group(1)
                break
        assert url is not None and url.startswith("https://127.0.0.1:")
        status = HeritrixClient(url, "operator", "from-settings", verify=False).engine_status()
        assert status.jobs_dir == str((tmp_path / "jobs").resolve())
        with pytest.raises(HeritrixError, match="401"):
            HeritrixClient(url, "admin", "admin", verify=False).engine_status()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
