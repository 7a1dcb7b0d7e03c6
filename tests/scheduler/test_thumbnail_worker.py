"""The QA worker's bookkeeping on SQLite and PostgreSQL, without a crawl: which DONE jobs wait for thumbnails,
the note a job gets when no picture can be made (no chromium, no replay URL, a replay service that does not
answer) while it stays DONE, a note that stays when nothing changed, a seed's row written once, and the
previous run's picture of a seed. tests/harvester/test_thumbnails_run.py makes real pictures."""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select, update

from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus
from harvestdef.repositories.thumbnails import ThumbnailRepository, ThumbnailState, thumbnail_name
from scheduler.camera import Camera
from scheduler.thumbnails import NO_REPLAY_URL, ThumbnailWorker
from tests.webui.browser import CHROMIUM
from tests.webui.test_jobs import seed

SEEDS = ("http://www.alpha.dk", "https://beta.dk")


def ended(engine, job_id: int, seconds_ago: float) -> None:  # noqa: ANN001
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id)
                     .values(enddate=utcnow() - timedelta(seconds=seconds_ago)))


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def worker(engine, tmp_path: Path, chromium: str, replay_url: str) -> ThumbnailWorker:  # noqa: ANN001
    return ThumbnailWorker(engine, ArchiveStore(tmp_path / "archive"), Camera(Path(chromium), 320, 5.0), replay_url,
                           interval=0.1, delay=60, max_seeds=-1, jobs_per_pass=10, lookup_timeout=2)


def states(engine) -> dict[int, tuple[str, str | None]]:  # noqa: ANN001
    with engine.connect() as conn:
        return {row.job_id: (row.state, row.note) for row in conn.execute(select(s.job_thumbnails))}


def test_jobs_without_pictures_get_the_reason_as_a_note_and_stay_done(engine, tmp_path):
    seed(engine, [JobStatus.DONE, JobStatus.FAILED, JobStatus.DONE, JobStatus.DONE])
    ended(engine, 1, 3600)
    ended(engine, 3, 1)  # ended within the delay: the replay service may not have found its files yet
    ended(engine, 4, 120)

    missing = tmp_path / "no" / "chromium"
    result = worker(engine, tmp_path, str(missing), "http://127.0.0.1:1").run_once()
    assert (result.jobs_skipped, result.jobs_made, result.note) == (
        2, 0, f"no chromium at {missing} (harvestsuite.qa.chromium)")
    assert states(engine) == {1: ("SKIPPED", result.note), 4: ("SKIPPED", result.note)}
    with engine.connect() as conn:
        assert [JobStatus(status) for status in conn.scalars(select(s.jobs.c.status).order_by(s.jobs.c.job_id))] == [
            JobStatus.DONE, JobStatus.FAILED, JobStatus.DONE, JobStatus.DONE]

    # another reason later does not overwrite the note of a job already skipped: nothing was tried
    assert worker(engine, tmp_path, CHROMIUM, "").run_once().note == NO_REPLAY_URL
    ended(engine, 3, 120)
    down = worker(engine, tmp_path, CHROMIUM, f"http://127.0.0.1:{closed_port()}").run_once()
    assert down.jobs_skipped == 1 and "does not answer" in down.note
    assert states(engine) == {1: ("SKIPPED", result.note), 3: ("SKIPPED", down.note), 4: ("SKIPPED", result.note)}


def test_waiting_jobs_are_the_done_ones_without_a_made_pass_newest_and_untried_first(engine):
    seed(engine, [JobStatus.DONE, JobStatus.DONE, JobStatus.DONE, JobStatus.STARTED])
    later = utcnow() + timedelta(seconds=1)
    with engine.begin() as conn:
        repository = ThumbnailRepository(conn)
        jobs = {job.job_id: job for job in repository.jobs_waiting(10, later, retry_skipped=True)}
        assert list(jobs) == [3, 2, 1]
        assert jobs[1].seeds == SEEDS and (jobs[1].harvest_id, jobs[1].harvest_num) == (1, 1)
        repository.finish(jobs[3], ThumbnailState.SKIPPED, "no chromium")
        repository.finish(jobs[2], ThumbnailState.MADE)
        assert [job.job_id for job in repository.jobs_waiting(10, later, retry_skipped=True)] == [1, 3]
        assert [job.job_id for job in repository.jobs_waiting(10, later, retry_skipped=False)] == [1]
        assert [job.job_id for job in repository.jobs_waiting(1, later, retry_skipped=True)] == [1]

        # a skipped job made later is MADE without the note; a MADE pass never changes
        repository.finish(jobs[3], ThumbnailState.MADE)
        repository.finish(jobs[3], ThumbnailState.SKIPPED, "no chromium")
        assert repository.of_job(3).state == ThumbnailState.MADE and repository.of_job(3).note is None
        assert repository.jobs_waiting(10, later, retry_skipped=True)[0].job_id == 1


def test_a_seeds_row_is_written_once_and_found_again_in_the_next_run(engine):
    seed(engine, [JobStatus.DONE, JobStatus.DONE])
    later = utcnow() + timedelta(seconds=1)
    with engine.begin() as conn:
        repository = ThumbnailRepository(conn)
        second, first = repository.jobs_waiting(10, later, retry_skipped=True)
        assert (first.harvest_num, second.harvest_num) == (1, 2)
        assert repository.record_seed(first, SEEDS[0], name=thumbnail_name(SEEDS[0]), capture_time="20260301100000")
        assert not repository.record_seed(first, SEEDS[0], note="a second worker's outcome")
        assert repository.record_seed(first, SEEDS[1], note="not captured by this job")
        assert repository.seeds_done(1)[SEEDS[0]].name == thumbnail_name(SEEDS[0])

        previous = repository.previous_run(1, 2, SEEDS)
        assert list(previous) == [SEEDS[0]]  # a seed without a picture has none to show beside
        assert (previous[SEEDS[0]].job_id, previous[SEEDS[0]].capture_time) == (1, "20260301100000")
        assert repository.previous_run(1, 1, SEEDS) == {}
        assert [row.seed for row in repository.of_run(1, 1, 10)] == [SEEDS[0]]
        assert repository.of_job(2).state is None and repository.of_job(2).seeds == ()
