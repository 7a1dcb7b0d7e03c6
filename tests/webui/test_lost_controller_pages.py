"""A lost controller on the job page and in the job's API answer: while its job waits (silent since when, for
how long, resubmitted when unless it comes back), and once the job was resubmitted (as which job, when),
with the job's events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, insert, update

from harvestdef.db import schema as s
from harvestdef.model.controllers import Hearing
from harvestdef.model.status import JobStatus
from harvestdef.repositories.hearing import write_hearing
from harvestdef.repositories.jobevents import JobEventRepository
from harvestdef.times import utc_text
from tests.webui.test_jobs import seed


def lose_the_controller(engine: Engine) -> datetime:
    """Job 1 STARTED on ctl-1, silent for four minutes and marked; job 2 resubmitted as job 3 after its
    controller was silent ten minutes. Returns the last heartbeat."""
    now = datetime.now(UTC).replace(microsecond=0)
    last = now - timedelta(minutes=4)
    seed(engine, [JobStatus.STARTED, JobStatus.RESUBMITTED, JobStatus.NEW])
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 1).values(
            controller="ctl-1", attempt_id="a1", startdate=last - timedelta(hours=1), interrupted=True))
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 2).values(
            controller="ctl-1", attempt_id="a2", startdate=last - timedelta(hours=3), resubmitted_as_job=3))
        conn.execute(insert(s.harvesters).values(
            controller_id="ctl-1", host="crawler1", channels="FOCUSED", accepted=True, current_job_id=1,
            current_attempt_id="a1", last_heartbeat=last, heartbeat_interval=20.0))
        events = JobEventRepository(conn)
        events.record(job_id=1, attempt_id="a1", controller_id="ctl-1", kind="lost", checkpoint="",
                      happened_at=last, received_at=now)
        events.record(job_id=2, attempt_id="a2", controller_id="ctl-1", kind="lost", checkpoint="",
                      happened_at=last - timedelta(hours=2), received_at=last - timedelta(minutes=116))
        events.record(job_id=2, attempt_id="a2", controller_id="ctl-1", kind="resubmitted", checkpoint="",
                      happened_at=last - timedelta(hours=1), received_at=last - timedelta(hours=1))
    return last


def test_the_job_api_says_the_controller_is_lost_and_when_the_job_is_resubmitted(api, webui_engine):
    last = lose_the_controller(webui_engine)
    lost = api("archivist", "get", "/api/v1/jobs/1").json["interruption"]
    assert lost["state"] == "lost" and lost["controller"] == "ctl-1"
    assert lost["silent_since"] == last.isoformat().replace("+00:00", "Z")
    assert 235 <= lost["silent_seconds"] <= 300
    # resubmitLostAfter (3600 s by default) after the last heartbeat
    assert lost["resubmits_at"] == (last + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert lost["text"].startswith(f"controller ctl-1 silent since {utc_text(last)}, 4 min; resubmitted at "
                                   f"{utc_text(last + timedelta(hours=1))} unless it reports again")
    gone = api("archivist", "get", "/api/v1/jobs/2").json
    assert gone["interruption"]["state"] == "resubmitted" and gone["interruption"]["resubmitted_as_job"] == 3
    assert gone["interruption"]["text"] == (f"controller ctl-1 silent since {utc_text(last - timedelta(hours=2))}, "
                                            f"1 h; resubmitted as job 3 at {utc_text(last - timedelta(hours=1))}")
    assert [event["kind"] for event in gone["events"]] == ["lost", "resubmitted"]
    assert api("archivist", "get", "/api/v1/jobs/3").json["interruption"] is None


def test_the_job_page_says_it_in_words_and_lists_the_events(login, webui_engine):
    last = lose_the_controller(webui_engine)
    client = login("curator")
    page = client.get("/status/jobs/1").get_data(as_text=True)
    assert "Controller lost:" in page and f"controller ctl-1 silent since {utc_text(last)}, 4 min" in page
    assert "controller lost: silent since then" in page
    page = client.get("/status/jobs/2").get_data(as_text=True)
    assert "Resubmitted: controller lost:" in page and "resubmitted as job 3 at" in page
    assert 'as job <a href="/status/jobs/3">3</a>' in page and "this attempt is never granted again" in page
    running = client.get("/status/running").get_data(as_text=True)
    assert ">lost</span>" in running


def test_while_the_scheduler_is_deaf_no_page_counts_a_controller_lost_and_each_says_why(api, login, webui_engine):
    """The scheduler's broker connection is down (scheduler_hearing): no heartbeat can reach it, so it counts
    no controller lost and resubmits nothing; the System page, the API and the job's pages say so instead of
    calling a controller lost that the scheduler does not."""
    last = lose_the_controller(webui_engine)
    deaf_since = last + timedelta(minutes=1)
    with webui_engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 1).values(interrupted=False))
        write_hearing(conn, Hearing(deaf_since=deaf_since), "sched1:1", deaf_since)
    (ctl1,) = api("operator", "get", "/api/v1/harvesters").json["items"]
    assert ctl1["is_lost"] is False and ctl1["silence_counted_from"] is None
    system = login("curator").get("/system/").get_data(as_text=True)
    assert 'id="scheduler-deaf"' in system and "no controller is counted lost until it does" in system
    assert ">lost</span>" not in system
    live = api("operator", "get", "/api/v1/jobs/1/live").json
    reasons = {reason["reason"]: reason["text"] for reason in live["holding_back"]}
    assert "controller_lost" not in reasons and "controller_silent" not in reasons
    assert reasons["scheduler_deaf"].startswith(
        f"The scheduler has not reached the broker since {utc_text(deaf_since)}")
    assert f"controller ctl-1 (silent since {utc_text(last)}, 4 min) is not counted lost" in reasons["scheduler_deaf"]
    # a job marked before the outage keeps its mark, and says it waits for the scheduler's hearing
    with webui_engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 1).values(interrupted=True))
    lost = api("archivist", "get", "/api/v1/jobs/1").json["interruption"]
    assert lost["resubmits_at"] is None
    assert lost["text"].endswith(f"not resubmitted while the scheduler does not reach the broker (since "
                                 f"{utc_text(deaf_since)}): no heartbeat can reach it meanwhile")


def test_after_the_scheduler_heard_again_silence_is_counted_from_then(api, login, webui_engine):
    last = lose_the_controller(webui_engine)
    back = last + timedelta(minutes=3)  # a minute ago: the four minutes of silence count as one
    with webui_engine.begin() as conn:
        write_hearing(conn, Hearing(hearing_since=back), "sched1:1", back)
    (ctl1,) = api("operator", "get", "/api/v1/harvesters").json["items"]
    assert ctl1["silence_counted_from"] == back.isoformat().replace("+00:00", "Z")
    assert ctl1["is_lost"] is False  # 20 s a heartbeat, lost after 10 of them: 200 s
    lost = api("archivist", "get", "/api/v1/jobs/1").json["interruption"]
    assert lost["resubmits_at"] == (back + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    system = login("curator").get("/system/").get_data(as_text=True)
    assert 'id="scheduler-heard-again"' in system and 'id="scheduler-deaf"' not in system
