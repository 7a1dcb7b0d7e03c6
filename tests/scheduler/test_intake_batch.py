"""Several messages of the scheduler queue recorded in one transaction (scheduler.batch): the same outcome
as one by one, a controller's ready messages counted once, acks after the commit, and every message
handled again on its own when the transaction fails."""

from __future__ import annotations

import logging

from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine, write_transaction
from harvestdef.db.init import init_database
from harvestdef.db.types import utcnow
from harvestdef.errors import DatabaseError
from harvestdef.messages import ClaimAnswer, ClaimRequest, CrawlStatus, HarvesterReady, decode_with_time, encode
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.jobs import JobRepository, allocate_job_ids, new_job_row
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.service import SchedulerService, ServiceOptions
from tests.dblocks import writers_held
from tests.scheduler.test_intake import (  # noqa: F401 - fixtures
    NAMES,
    handlers,
    job,
    notifier,
    one_job,
    register,
    report,
    transport,
)


def service_of(engine, transport, handlers) -> SchedulerService:  # noqa: F811
    return SchedulerService(engine, transport, NAMES, None, handlers, ServiceOptions())  # type: ignore[arg-type]


def send_and_take(transport, *messages):  # noqa: F811
    for message in messages:
        transport.publish(NAMES.scheduler, encode(message))
    deliveries = []
    while (delivery := transport.get(NAMES.scheduler)) is not None:
        deliveries.append(delivery)
    assert len(deliveries) == len(messages)
    return deliveries


def two_new_jobs(engine):
    first, _ = one_job(engine)
    with write_transaction(engine) as conn:
        (second,) = allocate_job_ids(conn, 1)
        JobRepository(conn).insert([new_job_row(job_id=second, harvest_id=1, channel="FOCUSED", snapshot=False,
                                                orderxml="default_orderxml", harvest_num=1, creationdate=utcnow())])
    return first, second


def audit_rows(engine, job_id: int) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).where(s.audit_log.c.tablename == "jobs",
                                                      s.audit_log.c.row_key == str(job_id)))


def test_a_batch_records_the_whole_cycle_of_two_controllers(engine, transport, handlers):  # noqa: F811
    service = service_of(engine, transport, handlers)
    handle = handlers.carry_out_one
    first, second = two_new_jobs(engine)
    register(handle, "ctl-1")
    register(handle, "ctl-2")
    for controller in ("ctl-1", "ctl-2"):
        transport.purge(NAMES.controller(controller))  # the registration answers
    ready_1 = HarvesterReady(controller_id="ctl-1", host="h", channels=["FOCUSED"])
    ready_2 = HarvesterReady(controller_id="ctl-2", host="h", channels=["FOCUSED"])
    service.handle_batch(send_and_take(transport, ready_1, ready_1, ready_2, ready_1))
    # three ready messages of ctl-1 release one job for it, not three
    assert transport.message_count(NAMES.jobs("FOCUSED")) == 2
    assert transport.message_count(NAMES.scheduler) == 0, "every message acknowledged after the commit"
    jobs = {job(engine, job_id).job_id: job(engine, job_id) for job_id in (first, second)}
    assert {j.status for j in jobs.values()} == {JobStatus.SUBMITTED}
    claims = [ClaimRequest(job_id=j.job_id, attempt_id=j.attempt_id, controller_id=controller,
                           reply_queue=NAMES.controller(controller))
              for j, controller in zip(jobs.values(), ("ctl-1", "ctl-2"), strict=True)]
    service.handle_batch(send_and_take(transport, *claims))
    for claim in claims:  # the answers go out once the batch has committed
        delivery = transport.get(NAMES.controller(claim.controller_id))
        assert delivery is not None
        answer, _ = decode_with_time(delivery.body, (ClaimAnswer,))
        assert isinstance(answer, ClaimAnswer) and answer.granted
    statuses = []
    for claim in claims:
        statuses.append(CrawlStatus(job_id=claim.job_id, attempt_id=claim.attempt_id,
                                    controller_id=claim.controller_id, status=JobStatus.STARTED))
        statuses.append(CrawlStatus(job_id=claim.job_id, attempt_id=claim.attempt_id,
                                    controller_id=claim.controller_id, status=JobStatus.DONE,
                                    domain_report=report(("a.dk", 10, 1000, StopReason.DOWNLOAD_COMPLETE))))
    service.handle_batch(send_and_take(transport, *statuses))
    for job_id in (first, second):
        row = job(engine, job_id)
        assert row.status == JobStatus.DONE
        assert row.submitteddate <= row.startdate <= row.enddate
        # NEW -> SUBMITTED, the grant, STARTED, DONE: each change audited
        assert audit_rows(engine, job_id) >= 4
    with engine.connect() as conn:
        summary = conn.execute(select(s.harvest_run_summary)).one()
        history = conn.scalar(select(func.count()).select_from(s.historyinfo))
    assert summary.jobs_done == 2
    assert history == 2, "one row per configuration of the first job (a.dk, b.dk), none for the second"
    assert transport.message_count(NAMES.scheduler) == 0


def test_a_failed_batch_is_handled_again_message_by_message(engine, transport, handlers, monkeypatch):  # noqa: F811
    service = service_of(engine, transport, handlers)
    handle = handlers.carry_out_one
    first, second = two_new_jobs(engine)
    register(handle, "ctl-1")
    register(handle, "ctl-2")
    audited = {job_id: audit_rows(engine, job_id) for job_id in (first, second)}
    calls = []
    original = handlers.table[HarvesterReady]

    def ready_failing_once(batch, ready, sent_at):
        calls.append(ready.controller_id)
        if len(calls) == 2:  # the batch's second message: its whole transaction is rolled back
            raise DatabaseError("the database went away")
        return original(batch, ready, sent_at)

    monkeypatch.setitem(handlers.table, HarvesterReady, ready_failing_once)
    service.handle_batch(send_and_take(
        transport, HarvesterReady(controller_id="ctl-1", host="h", channels=["FOCUSED"]),
        HarvesterReady(controller_id="ctl-2", host="h", channels=["FOCUSED"])))
    # handled again one by one: both released, once each, and nothing left of the rolled-back batch
    assert {job(engine, job_id).status for job_id in (first, second)} == {JobStatus.SUBMITTED}
    assert transport.message_count(NAMES.jobs("FOCUSED")) == 2
    assert transport.message_count(NAMES.scheduler) == 0
    assert {job_id: audit_rows(engine, job_id) - audited[job_id] for job_id in audited} == {first: 1, second: 1}


def test_an_answer_that_cannot_be_sent_returns_only_its_message(engine, transport, handlers):  # noqa: F811
    """The batch's answers go out together after the commit; the one that fails puts its own message back
    in the queue, and the others are answered and acknowledged."""
    service = service_of(engine, transport, handlers)
    handle = handlers.carry_out_one
    first, second = two_new_jobs(engine)
    register(handle, "ctl-1")
    register(handle, "ctl-2")
    for controller in ("ctl-1", "ctl-2"):
        transport.purge(NAMES.controller(controller))
    service.handle_batch(send_and_take(transport, HarvesterReady(controller_id="ctl-1", host="h", channels=["FOCUSED"]),
                                       HarvesterReady(controller_id="ctl-2", host="h", channels=["FOCUSED"])))
    one, two = job(engine, first), job(engine, second)
    good = ClaimRequest(job_id=one.job_id, attempt_id=one.attempt_id, controller_id="ctl-1",
                        reply_queue=NAMES.controller("ctl-1"))
    # no transport can keep a queue of this name: its answer fails at the publish
    bad = ClaimRequest(job_id=two.job_id, attempt_id=two.attempt_id, controller_id="ctl-2", reply_queue="q" * 300)
    service.handle_batch(send_and_take(transport, good, bad))
    delivery = transport.get(NAMES.controller("ctl-1"))
    assert delivery is not None
    answer, _ = decode_with_time(delivery.body, (ClaimAnswer,))
    assert isinstance(answer, ClaimAnswer) and answer.granted and answer.job_id == one.job_id
    # both grants are committed; the claim whose answer was lost waits in the queue, redelivered
    assert (job(engine, first).controller, job(engine, second).controller) == ("ctl-1", "ctl-2")
    returned = transport.get(NAMES.scheduler)
    assert returned is not None and returned.redelivered
    claim, _ = decode_with_time(returned.body, (ClaimRequest,))
    assert claim == bad
    assert transport.get(NAMES.scheduler) is None


def test_messages_that_wait_for_a_held_database_are_told_once_and_once_more_when_it_answers(
        database_url, transport, notifier, caplog):  # noqa: F811
    engine = open_engine(database_url, lock_timeout=1)
    try:
        init_database(engine)
        held_handlers = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()),
                                        StatusIntake(notifier))
        service = service_of(engine, transport, held_handlers)
        register(held_handlers.carry_out_one, "ctl-1")
        transport.purge(NAMES.controller("ctl-1"))
        transport.publish(NAMES.scheduler, encode(HarvesterReady(controller_id="ctl-1", host="h",
                                                                 channels=["FOCUSED"])))
        with caplog.at_level(logging.INFO, logger="scheduler.service"):
            with writers_held(engine, *(table.name for table in s.metadata.sorted_tables)):
                for _ in range(3):  # the message comes back each time, the database still held
                    delivery = transport.get(NAMES.scheduler)
                    assert delivery is not None, "the message was returned to its queue"
                    service.handle_batch([delivery])
            delivery = transport.get(NAMES.scheduler)
            assert delivery is not None
            service.handle_batch([delivery])
        assert transport.message_count(NAMES.scheduler) == 0, "handled once the database answered"
        said = [record.getMessage() for record in caplog.records if record.name == "scheduler.service"]
        waiting = [line for line in said if "wait in their queues while the harvest database does not answer" in line]
        assert len(waiting) == 1, said
        assert sum("answers again" in line for line in said) == 1, said
        assert not any("could not be handled now" in line for line in said), said
    finally:
        engine.dispose()
