"""The scheduler's /metrics (scheduler/metrics.py, docs/metrics.md), scraped from the real scheduler role
(``run_scheduler``, what ``harvestsuite scheduler run`` and the demo run) while it ticks, generates a
harvest's jobs and dispatches one to a controller that claims it, and read by the System page's reader of
it; the endpoint is closed when it stops."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.messages import HarvesterStatus, encode
from harvestdef.metrics import serving
from harvestdef.queues import QueueNames, open_transport
from scheduler.commands import run_scheduler
from scheduler.service import SchedulerService
from tests.metricscrape import free_port, refuses_connections, scrape_until, value
from tests.scheduler.factories import make_domain, make_selective
from tests.scheduler.simcontroller import SimController
from webui.schedulerfigures import read_figures

TICKS = "harvestsuite_scheduler_ticks_total"


def ticks(samples) -> float:
    return value(samples, TICKS, outcome="completed") or 0


def test_the_scheduler_serves_its_ticks_generation_dispatch_and_queues(engine, make_settings, open_queue,
                                                                       environment_name):
    with engine.begin() as conn:
        make_selective(conn, 1, "daily", [make_domain(conn, "metrics.dk")[1]],
                       nextdate=utcnow() - timedelta(minutes=1))
    port = free_port()
    settings = make_settings(**{"harvestsuite.metrics.schedulerPort": port,
                                "harvester.scheduler.jobGen.config.postponeUnregisteredChannel": False})
    url = f"http://127.0.0.1:{port}/metrics"
    stop = threading.Event()
    scheduler = threading.Thread(target=run_scheduler, args=(settings, stop), name="scheduler", daemon=True)
    scheduler.start()
    controller_stop = threading.Event()
    try:
        first = scrape_until(url, lambda got: ticks(got) >= 1 and value(got, "harvestsuite_scheduler_leader") == 1,
                             60, "leading and ticking")
        assert value(first, "harvestsuite_scheduler_leadership_terms_total") == 1
        # the tick counter grows with the ticks, one a second, and the last tick's time with it
        later = scrape_until(url, lambda got: ticks(got) >= ticks(first) + 2, 30, "two ticks further")
        assert value(later, "harvestsuite_scheduler_last_tick_timestamp_seconds") > \
            value(first, "harvestsuite_scheduler_last_tick_timestamp_seconds")
        assert value(later, "harvestsuite_scheduler_tick_duration_seconds_count") >= 3
        assert value(later, TICKS, outcome="failed") in (None, 0)

        # the harvest's one run was generated: one job, one generation timed
        with engine.connect() as conn:
            assert len(conn.scalars(select(s.jobs.c.job_id)).all()) == 1
        assert value(later, "harvestsuite_scheduler_jobs_generated_total") == 1
        assert value(later, "harvestsuite_scheduler_job_generation_duration_seconds_count") == 1
        names = QueueNames(environment_name)
        # measured after each tick: the NEW job is in no queue yet, and every channel's queue is counted
        assert value(later, "harvestsuite_scheduler_queue_messages", queue=names.jobs("FOCUSED")) == 0
        assert value(later, "harvestsuite_scheduler_queue_messages", queue=names.jobs("SNAPSHOT")) == 0
        assert value(later, "harvestsuite_scheduler_queue_messages", queue=names.scheduler) is not None

        controller = SimController(open_queue(), names, "ctl-1", ["FOCUSED"])
        threading.Thread(target=controller.run, args=(controller_stop, 1), name="controller", daemon=True).start()
        done = scrape_until(url, lambda got: value(got, "harvestsuite_scheduler_claims_total", outcome="granted") == 1,
                            60, "the job granted")
        assert value(done, "harvestsuite_scheduler_jobs_dispatched_total", channel="FOCUSED") == 1
        assert value(done, "harvestsuite_scheduler_claims_total", outcome="refused") in (None, 0)
        # the registration, the heartbeat and the ready message that released the job were handled before the
        # claim was sent, all from the scheduler's queue
        assert value(done, "harvestsuite_scheduler_messages_handled_total", queue=names.scheduler) >= 3

        # the System page reads the same endpoint by the same names (webui/schedulerfigures.py)
        figures = read_figures(url, 5.0)
        assert figures.error is None and figures.leader is True and figures.ticks_completed >= 3
        assert figures.jobs_generated == 1 and figures.dispatched == {"FOCUSED": 1} and figures.claims_granted == 1
        assert figures.last_tick_at is not None and figures.average_tick_seconds is not None
        assert figures.queues[names.jobs("FOCUSED")] >= 0 and figures.messages_handled >= 3
    finally:
        controller_stop.set()
        stop.set()
        scheduler.join(timeout=30)
    assert not scheduler.is_alive()
    assert refuses_connections(port), "the endpoint outlived the scheduler"


def test_a_scheduler_waiting_to_lead_serves_leader_0_until_it_takes_over(engine, make_settings):
    ports = [free_port(), free_port()]
    stops = [threading.Event(), threading.Event()]
    threads = [threading.Thread(target=run_scheduler, args=(
        make_settings(**{"harvestsuite.metrics.schedulerPort": port}), stop), daemon=True)
        for port, stop in zip(ports, stops, strict=True)]
    urls = [f"http://127.0.0.1:{port}/metrics" for port in ports]
    try:
        threads[0].start()
        scrape_until(urls[0], lambda got: ticks(got) >= 1, 60, "leading and ticking")
        threads[1].start()
        waiting = scrape_until(urls[1], lambda got: value(got, "harvestsuite_scheduler_leader") == 0, 60,
                               "serving while it waits")
        assert ticks(waiting) == 0 and value(waiting, "harvestsuite_scheduler_leadership_terms_total") == 0
        assert value(scrape_until(urls[0], lambda got: True, 10, "answering"), "harvestsuite_scheduler_leader") == 1

        stops[0].set()  # the leader stops and releases its lock; the other takes over and ticks
        threads[0].join(timeout=30)
        took_over = scrape_until(urls[1], lambda got: value(got, "harvestsuite_scheduler_leader") == 1 and
                                 ticks(got) >= 1, 60, "leading after the first stopped")
        assert value(took_over, "harvestsuite_scheduler_leadership_terms_total") == 1
        assert refuses_connections(ports[0])
    finally:
        for stop in stops:
            stop.set()
        for thread in threads:
            if thread.ident is not None:  # started
                thread.join(timeout=30)


def test_the_leader_serves_what_its_intake_processes_counted(engine, make_settings, open_queue, environment_name):
    """With intakeProcesses 2 the scheduler's queue is read by a second process too; the leader's /metrics
    counts the messages both handled (the intake process sends the growth of its counters every second).
    Heartbeats go out in waves until the intake process has handled some of them: until the leader process
    handled fewer than were sent."""
    port = free_port()
    settings = make_settings(**{"harvestsuite.metrics.schedulerPort": port,
                                "harvestsuite.scheduler.intakeProcesses": 2})
    url = f"http://127.0.0.1:{port}/metrics"
    names = QueueNames(environment_name)
    stop = threading.Event()
    with open_transport(settings.queue) as transport:
        service = SchedulerService.from_settings(settings, engine, transport)
        with serving("127.0.0.1", port, service.metrics.registry, "the scheduler"):
            leading = threading.Thread(target=service.run, args=(stop,), name="scheduler", daemon=True)
            leading.start()
            try:
                scrape_until(url, lambda got: value(got, "harvestsuite_scheduler_leader") == 1, 60, "leading")
                sender = open_queue()
                sent = 0

                def recorded() -> int:
                    with engine.connect() as conn:
                        return conn.scalar(select(func.count()).select_from(s.harvesters))

                deadline = time.monotonic() + 90
                while True:
                    sender.publish_many([(names.scheduler, encode(heartbeat_of(f"ctl-{number}")))
                                         for number in range(sent, sent + 20)])
                    sent += 20
                    # served: the leader process's own count and what the intake process sent of its own
                    scrape_until(url, lambda got, total=sent: value(
                        got, "harvestsuite_scheduler_messages_handled_total", queue=names.scheduler) == total, 30,
                        f"the {sent} messages of both processes counted")
                    assert recorded() == sent  # each recorded once
                    if service.handled < sent:
                        break  # the intake process handled some of them
                    assert time.monotonic() < deadline, "the intake process handled no message in 90 s"
            finally:
                stop.set()
                leading.join(timeout=60)
    assert not leading.is_alive()


def heartbeat_of(controller: str) -> HarvesterStatus:
    return HarvesterStatus(controller_id=controller, host="h", pid=1, version="t", channels=["FOCUSED"],
                           free_disk_bytes=1, load_average=0.0, memory_rss_bytes=1, paused=False, current_job_id=None,
                           current_attempt_id=None, heartbeat_interval=10.0)
