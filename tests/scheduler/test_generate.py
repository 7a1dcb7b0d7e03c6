"""Whole runs against the real databases: job rows, filled templates, seeds, traps, job ids, numevents and
nextdate, rollback and deactivation on error, and a preview that writes nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from harvestdef.crawltemplate import check_orderxml
from harvestdef.db import schema as s
from harvestdef.errors import JobGenerationError
from harvestdef.model.status import JobStatus, StopReason
from scheduler.jobgen.building import domain_scoped_trap
from scheduler.jobgen.generate import GenerationOptions, generate_jobs, preview
from scheduler.jobgen.packing import PackingRules
from tests.scheduler.factories import (
    T0,
    add_global_traps,
    add_history,
    make_domain,
    make_selective,
    make_snapshot,
    set_attribute,
    template_id,
)

NOW = T0 + timedelta(days=3, hours=5)


def jobs_of(conn, harvest_id):
    return conn.execute(select(s.jobs).where(s.jobs.c.harvest_id == harvest_id).order_by(s.jobs.c.job_id)
                        ).mappings().all()


def numevents(conn, harvest_id):
    return conn.scalar(select(s.harvestdefinitions.c.numevents).where(s.harvestdefinitions.c.harvest_id == harvest_id))


def test_snapshot_jobs_are_built_completely(engine):
    with engine.begin() as conn:
        make_domain(conn, "kb.dk", traps=".*/calendar/.*\n\n.*\\?page=\\d{3,}")
        make_domain(conn, "københavn.dk", seeds="http://www.københavn.dk/\n# old seed\nhttp://www.københavn.dk/")
        make_domain(conn, "dr.dk", maxbytes=5_000_000)
        add_global_traps(conn, "global", [".*/cgi-bin/.*"])
        add_global_traps(conn, "inactive", [".*/never/.*"], active=False)
        make_snapshot(conn, 7, "broad", maxbytes=10_000_000, maxjobrunningtime=3600)
    result = generate_jobs(engine, "broad", GenerationOptions(next_job_id=100), NOW)
    with engine.connect() as conn:
        jobs = jobs_of(conn, 7)
        assert [job["job_id"] for job in jobs] == result.job_ids == [100, 101]
        first, second = jobs
        assert first["status"] == JobStatus.NEW and first["channel"] == "SNAPSHOT" and first["snapshot"]
        assert first["harvest_num"] == 1 and numevents(conn, 7) == 1
        assert (first["forcemaxbytes"], first["forcemaxcount"], first["forcemaxrunningtime"]) == (10_000_000, -1, 3600)
        assert second["forcemaxbytes"] == 5_000_000
        assert first["harvestname_prefix"] == "100-7" and first["orderxml"] == "default_orderxml"
        assert first["num_configs"] == 2 and first["creationdate"] == NOW
        assert first["expected_objects"] == 2 * (10_000_000 // 38_000)
        count = conn.scalar(select(func.count()).select_from(s.job_configs).where(s.job_configs.c.job_id == 100))
        assert count == 2
        seeds = first["seedlist"].splitlines()
        assert "http://www.xn--kbenhavn-54a.dk/" in seeds and "http://www.københavn.dk/" in seeds
        assert seeds.count("http://www.københavn.dk/") == 1 and "# old seed" not in seeds
        assert "http://www.kb.dk" in seeds and "https://kb.dk" in seeds
        document = first["orderxmldoc"]
        assert check_orderxml(document) == "beans"
        assert re.findall(r"%\{(\w+)\}", document) == ["DEDUPLICATION_INDEX_LOCATION_PLACEHOLDER"]
        assert 'name="groupMaxAllKb" value="9766"' in document  # 10,000,000 / 1024 + 1
        assert 'name="groupMaxFetchSuccesses" value="-1"' in document
        assert 'name="maxTimeSeconds" value="3600"' in document
        assert 'name="maxHops" value="20"' in document and 'value="ignore"' in document
        assert '<entry key="harvestInfo.jobId" value="100"/>' in document
        assert '<property name="prefix" value="100-7"/>' in document
        assert '<ref bean="warcWriter"/>' in document
        assert "<value>.*/cgi-bin/.*</value>" in document and "never" not in document
        assert domain_scoped_trap("kb.dk", ".*/calendar/.*").replace("\\", "\\") in _unescape(document)


def _unescape(document: str) -> str:
    return document.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def test_domain_trap_only_matches_its_own_domain():
    trap = re.compile(domain_scoped_trap("kb.dk", ".*/calendar/.*"))
    assert trap.fullmatch("http://kb.dk/calendar/2020")
    assert trap.fullmatch("https://www.kb.dk:8443/x/calendar/1?x=1")
    assert not trap.fullmatch("http://dr.dk/calendar/2020")
    assert not trap.fullmatch("http://notkb.dk/calendar/2020")
    assert not trap.fullmatch("http://kb.dk.evil.org/calendar/2020")
    assert not trap.fullmatch("http://kb.dk/news")
    idn = re.compile(domain_scoped_trap("københavn.dk", ".*/x"))
    assert idn.fullmatch("http://www.xn--kbenhavn-54a.dk/x")


def test_selective_run_uses_its_channel_traps_attributes_and_moves_nextdate(engine):
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk", maxbytes=-1)
        _, dr = make_domain(conn, "dr.dk", maxbytes=-1)
        set_attribute(conn, dr, "HONOR_ROBOTS_DOT_TXT", 1)
        set_attribute(conn, dr, "EXTRACT_JAVASCRIPT", 0)
        make_selective(conn, 3, "news", [kb, dr], nextdate=T0, traps=".*/print/.*", numevents=4)
    result = generate_jobs(engine, "news", GenerationOptions(), NOW)
    with engine.connect() as conn:
        jobs = jobs_of(conn, 3)
        assert len(jobs) == 2  # different crawl attributes never share a job
        assert {job["channel"] for job in jobs} == {"FOCUSED"} and not jobs[0]["snapshot"]
        assert {job["harvest_num"] for job in jobs} == {5} and numevents(conn, 3) == 5
        assert all("<value>.*/print/.*</value>" in job["orderxmldoc"] for job in jobs)
        obeying = [job for job in jobs if 'name="robotsPolicyName" value="obey"' in job["orderxmldoc"]]
        assert len(obeying) == 1 and 'name="extractJavascript" value="false"' in obeying[0]["orderxmldoc"]
        assert "dr.dk" in obeying[0]["seedlist"]
        nextdate = conn.scalar(select(s.partialharvests.c.nextdate).where(s.partialharvests.c.harvest_id == 3))
    # Once_a_day from T0: T0+1d, +2d, +3d are before NOW and skipped; T0+4d is the next run
    assert nextdate == result.next_date == T0 + timedelta(days=4)


def test_selective_schedule_that_ends_leaves_no_next_date(engine):
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk")
        make_selective(conn, 3, "once", [kb], schedule="Once", nextdate=T0)
    result = generate_jobs(engine, "once", GenerationOptions(), NOW)
    assert result.next_date is None
    with engine.connect() as conn:
        assert conn.scalar(select(s.partialharvests.c.nextdate)) is None
        assert len(jobs_of(conn, 3)) == 1


def test_job_ids_continue_after_existing_jobs_and_collection_naming(engine):
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
        make_snapshot(conn, 1, "first")
        make_snapshot(conn, 2, "second")
    generate_jobs(engine, "first", GenerationOptions(), NOW)
    options = GenerationOptions(naming_convention="CollectionPrefixNamingConvention", collection_name="kb")
    second = generate_jobs(engine, 2, options, NOW)
    assert second.job_ids == [2]
    with engine.connect() as conn:
        assert jobs_of(conn, 2)[0]["harvestname_prefix"] == "kb-2-2"
        assert jobs_of(conn, 1)[0]["job_id"] == 1


def test_continuation_step_generates_from_previous_history(engine):
    with engine.begin() as conn:
        _, kb = make_domain(conn, "kb.dk")
        _, dr = make_domain(conn, "dr.dk")
        make_snapshot(conn, 1, "step1", maxbytes=10_000_000)
        make_snapshot(conn, 2, "step2", maxbytes=-1, previous=1)
        add_history(conn, kb, 1, 263, 10_000_000, StopReason.SIZE_LIMIT)
        add_history(conn, dr, 1, 20, 100_000, StopReason.DOWNLOAD_COMPLETE)
    result = generate_jobs(engine, "step2", GenerationOptions(), NOW)
    with engine.connect() as conn:
        config_ids = conn.scalars(select(s.job_configs.c.config_id).where(
            s.job_configs.c.job_id.in_(result.job_ids))).all()
    assert config_ids == [kb]


def test_failed_run_writes_nothing_and_deactivates_the_harvest(engine, caplog):
    with engine.begin() as conn:
        template_id(conn, "broken", "<beans>%{NO_SUCH_PLACEHOLDER}</beans>")
        make_domain(conn, "kb.dk", template="broken")
        make_domain(conn, "dr.dk")
        make_snapshot(conn, 1, "broad")
    with pytest.raises(JobGenerationError, match=r"'broad' \(id 1\).*NO_SUCH_PLACEHOLDER"):
        generate_jobs(engine, "broad", GenerationOptions(), NOW)
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.jobs)) == 0
        assert conn.scalar(select(func.count()).select_from(s.job_configs)) == 0
        assert numevents(conn, 1) == 0
        assert conn.scalar(select(s.harvestdefinitions.c.isactive)) is False
    assert "deactivating" in caplog.text


def test_preview_writes_nothing(engine):
    with engine.begin() as conn:
        for i in range(5):
            make_domain(conn, f"d{i}.dk")
        make_snapshot(conn, 1, "broad", maxbytes=10_000_000)
    options = GenerationOptions(rules=PackingRules(fixed_domain_count_snapshot=2))
    harvest, candidates, jobs = preview(engine, "broad", options, NOW)
    assert (len(candidates), [len(job) for job in jobs]) == (5, [2, 2, 1])
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.jobs)) == 0
        assert numevents(conn, 1) == 0


def test_database_row_order_does_not_change_the_jobs(engine):
    names = [f"site{i:02}.dk" for i in range(30)]

    def run(order, harvest_id):
        with engine.begin() as conn:
            for name in order:
                make_domain(conn, name if harvest_id == 1 else f"b-{name}", maxbytes=[-1, 5_000_000][len(name) % 2])
            make_snapshot(conn, harvest_id, f"h{harvest_id}", maxbytes=10_000_000)
            if harvest_id == 2:
                conn.execute(update(s.domains).where(~s.domains.c.name.like("b-%")).values(defaultconfig=None))
        options = GenerationOptions(rules=PackingRules(fixed_domain_count_snapshot=4))
        generate_jobs(engine, harvest_id, options, NOW)
        with engine.connect() as conn:
            rows = conn.execute(select(s.job_configs.c.job_id, s.domains.c.name)
                                .join(s.configurations, s.configurations.c.config_id == s.job_configs.c.config_id)
                                .join(s.domains, s.domains.c.domain_id == s.configurations.c.domain_id)
                                .join(s.jobs, s.jobs.c.job_id == s.job_configs.c.job_id)
                                .where(s.jobs.c.harvest_id == harvest_id)).all()
        grouped: dict[int, list[str]] = {}
        for job_id, name in rows:
            grouped.setdefault(job_id, []).append(name.removeprefix("b-"))
        return sorted(sorted(group) for group in grouped.values())

    first = run(names, 1)
    second = run(list(reversed(names)), 2)
    assert first == second and len(first) > 1


def test_preview_command_prints_the_jobs(engine, database_url, tmp_path):
    with engine.begin() as conn:
        make_domain(conn, "kb.dk")
        make_snapshot(conn, 1, "broad", maxbytes=10_000_000)
    done = subprocess.run([sys.executable, "-m", "harvestdef", "--set", f"harvestsuite.database.url={database_url}",
                           "jobgen", "preview", "broad"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    summary, header, job = done.stdout.splitlines()
    assert summary == "harvest broad (snapshot, run 1): 1 configuration in 1 job, expected objects 263, " \
                      "expected bytes 9,994,000"
    assert header.split()[:4] == ["JOB", "TEMPLATE", "CONFIGURATIONS", "EXPECTED"]
    assert job.split()[:4] == ["1", "default_orderxml", "1", "263"]
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.jobs)) == 0
